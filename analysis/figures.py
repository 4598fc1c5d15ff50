"""One function per figure of the report: frames in, a matplotlib figure out (seaborn,
labelled axes with units). A figure without the data it needs raises ``MissingData`` with
a sentence saying what is missing, which the report shows instead of the figure."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: the report renders PNGs, never a window

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from . import load, paper  # noqa: E402

SYSTEM_ORDER = ["k2", "paris-star", "rad"]
SYSTEM_LABEL = {"k2": "K2", "paris-star": "PaRiS*", "rad": "RAD"}
PALETTE = {"K2": "#1f77b4", "PaRiS*": "#2ca02c", "RAD": "#d62728"}


class MissingData(Exception):
    """The runs lack what a figure needs; the message says what."""


def _label(system: str) -> str:
    return SYSTEM_LABEL.get(system, system)


def workload_label(row) -> str:
    """How a workload is named on a panel: the experiment, and the sweep point if any."""
    return row["experiment"] + (f" ({row['point']})" if row["point"] else "")


def _with_labels(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["workload"] = frame.apply(workload_label, axis=1)
    frame["System"] = frame["system"].map(_label)
    return frame


def _order(frame: pd.DataFrame) -> list[str]:
    return _order_labels(frame["system"].map(_label))


def _panels(n: int, width: float = 5.0, height: float = 3.6):
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


# ------------------------------------------------------------------ Fig. 7/8

def rot_latency_cdf(runs) -> plt.Figure:
    """Read-only transaction latency CDFs, one panel per workload, one line per system."""
    data = load.cdf_frame(runs, "rot")
    if data.empty:
        raise MissingData("no read-only transactions were measured in these runs")
    data = _with_labels(data)
    workloads = list(dict.fromkeys(data["workload"]))
    fig, axes = _panels(len(workloads))
    for ax, w in zip(axes, workloads):
        part = data[data["workload"] == w]
        sns.lineplot(data=part, x="latency_ms", y="fraction", hue="System", hue_order=_order(part),
                     palette=PALETTE, drawstyle="steps-post", ax=ax, errorbar=None)
        ax.set_xscale("log")
        ax.axvline(paper.SMALLEST_RTT_MS, color="grey", linestyle=":", linewidth=1)
        ax.set_title(w)
        ax.set_xlabel("read-only transaction latency (ms, log scale)")
        ax.set_ylabel("fraction of read-only transactions")
        ax.set_ylim(0, 1.01)
    fig.suptitle("Read-only transaction latency CDF (paper Fig. 7, 8); dotted: smallest RTT, 60 ms")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ Fig. 9

def fig9_setting(point_config: dict) -> str | None:
    """The Fig. 9 column a configuration corresponds to, or None."""
    defaults = {"topology.replication_factor": 2, "workload.write_fraction": 0.01,
                "workload.zipf": 1.2, "server.cache_fraction": 0.05}

    def value(axis):
        section, name = axis.split(".")
        v = point_config[section][name]
        return 2 if v is None and axis == "topology.replication_factor" else v

    for setting, changes in paper.FIG9_SETTINGS.items():
        want = defaults | changes
        if all(value(a) == v for a, v in want.items()):
            return setting
    return None


def _settings(runs, summary: pd.DataFrame) -> list:
    """The Fig. 9 setting of every row of a summary frame (None where it is none of them)."""
    by_id = {(t.run, t.point, t.trial, t.system): fig9_setting(t.config) for t in load.trials_of(runs)}
    return [by_id[(r.run, r.point, r.trial, r.system)] for r in summary.itertuples()]


def _order_labels(labels) -> list[str]:
    present = list(dict.fromkeys(labels))
    known = [SYSTEM_LABEL[s] for s in SYSTEM_ORDER if SYSTEM_LABEL[s] in present]
    return known + [x for x in present if x not in known]


def throughput_table(runs) -> pd.DataFrame:
    """Measured throughput per workload and system (median of trials), with the paper's
    Fig. 9 value for the same setting where there is one."""
    s = load.summary_frame(runs)
    if s.empty:
        raise MissingData("no trial in these runs has data")
    s["setting"] = _settings(runs, s)
    s["workload"] = s.apply(workload_label, axis=1)
    out = (s.groupby(["workload", "system", "setting"], dropna=False, sort=False)["throughput_ops_per_s"]
           .median().reset_index().rename(columns={"throughput_ops_per_s": "ops_per_s"}))
    out["paper_ktxn_per_s"] = [paper.FIG9_KTXN_PER_S.get(sys, {}).get(setting) if isinstance(setting, str) else None
                               for sys, setting in zip(out["system"], out["setting"])]
    out["System"] = out["system"].map(_label)
    return out[["workload", "setting", "System", "ops_per_s", "paper_ktxn_per_s"]]


def throughput_bars(runs) -> plt.Figure:
    """Measured throughput per workload and system, beside the paper's Fig. 9."""
    table = throughput_table(runs)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.2))
    sns.barplot(data=table, x="workload", y="ops_per_s", hue="System", hue_order=_order_labels(table["System"]),
                palette=PALETTE, ax=ax1)
    ax1.set_xlabel("workload (this run)")
    ax1.set_ylabel("throughput (committed ops/s)")
    ax1.set_title("This run: throughput over the measured window")
    ax1.tick_params(axis="x", rotation=20)
    ref = pd.DataFrame([{"setting": k, "System": _label(s), "ktxn": v}
                        for s, cols in paper.FIG9_KTXN_PER_S.items() for k, v in cols.items()])
    sns.barplot(data=ref, x="setting", y="ktxn", hue="System", palette=PALETTE, ax=ax2)
    ax2.set_xlabel("setting (paper)")
    ax2.set_ylabel("peak throughput (K txn/s, 24 servers)")
    ax2.set_title("Paper Fig. 9")
    ax2.tick_params(axis="x", rotation=35)
    fig.tight_layout()
    return fig


def throughput_timeseries(runs) -> plt.Figure:
    """Committed operations per second over each trial, the measured window shaded."""
    data = load.throughput_frame(runs)
    if data.empty:
        raise MissingData("no operation was committed in these runs")
    data = _with_labels(data)
    workloads = list(dict.fromkeys(data["workload"]))
    fig, axes = _panels(len(workloads), height=3.2)
    for ax, w in zip(axes, workloads):
        part = data[data["workload"] == w]
        sns.lineplot(data=part, x="t_s", y="ops_per_s", hue="System", hue_order=_order(part), palette=PALETTE,
                     ax=ax, errorbar=None)
        measure = part[part["phase"] == "measure"]["t_s"]
        if not measure.empty:
            ax.axvspan(measure.min(), measure.max() + 1, color="grey", alpha=0.15, label="measured")
        ax.set_title(w)
        ax.set_xlabel("time since the clients started (s)")
        ax.set_ylabel("throughput (ops/s)")
    fig.suptitle("Throughput over time (shaded: measured window)")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ staleness, writes, rounds

def staleness_cdf(runs) -> plt.Figure:
    data = load.cdf_frame(runs, "staleness")
    if data.empty:
        raise MissingData("no staleness was reported in these runs")
    data = _with_labels(data)
    workloads = list(dict.fromkeys(data["workload"]))
    fig, axes = _panels(len(workloads))
    for ax, w in zip(axes, workloads):
        part = data[data["workload"] == w]
        sns.lineplot(data=part, x="latency_ms", y="fraction", hue="System", hue_order=_order(part),
                     palette=PALETTE, drawstyle="steps-post", ax=ax, errorbar=None)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(left=0)
        ax.set_title(w)
        ax.set_xlabel("staleness of each key read (ms, symlog)")
        ax.set_ylabel("fraction of keys read")
        ax.set_ylim(0, 1.01)
    fig.suptitle("Staleness: time since a newer version of the returned key was written (§VII-D)")
    fig.tight_layout()
    return fig


def freshness_vs_write_rate(runs) -> plt.Figure:
    """Staleness and snapshot lag (left) and the all-local fraction (right) against the
    write rate of the hottest keys, one marker per run point, K2 and PaRiS* (README
    "Freshness")."""
    data = load.freshness_frame(runs)
    data = data[data["hot_key_writes_per_s"].notna()] if not data.empty else data
    if data.empty:
        raise MissingData("no run of K2 or PaRiS* with snapshot lag and operation histories "
                          "(make local-run EXPERIMENT=freshness-load, freshness-writes)")
    data = data.copy()
    data["System"] = data["system"].map(_label)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for system, group in data.groupby("System"):
        g = group.sort_values("hot_key_writes_per_s")
        color = PALETTE.get(system)
        for col, style, name in (("staleness_p99_ms", "-", "staleness p99"),
                                 ("staleness_p75_ms", "--", "staleness p75"),
                                 ("snapshot_lag_p50_ms", ":", "snapshot lag p50")):
            left.plot(g["hot_key_writes_per_s"], g[col], style, marker="o", color=color, label=f"{system} {name}")
        right.plot(g["hot_key_writes_per_s"], 100 * g["all_local_fraction"], "-", marker="o", color=color,
                   label=system)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("writes per second of each of the 10 hottest keys (log)")
        ax.grid(True, which="both", alpha=0.3)
    left.set_ylabel("ms")
    left.set_title("Staleness and snapshot lag")
    left.axhspan(0, 105, color="grey", alpha=0.1, label="paper: p75 <= 105 ms")
    left.legend(fontsize=7)
    right.set_ylabel("all-local read-only transactions (%)")
    right.set_title("All-local fraction")
    right.axhspan(19, 83, color="grey", alpha=0.1, label="paper (K2): 19-83%")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def write_latency(runs) -> plt.Figure:
    """CDFs of single-write and write-only transaction latency."""
    parts = [load.cdf_frame(runs, op).assign(op=name) for op, name in
             (("write", "single writes"), ("wot", "write-only transactions"))]
    data = pd.concat([p for p in parts if not p.empty], ignore_index=True) if any(not p.empty for p in parts) \
        else pd.DataFrame()
    if data.empty:
        raise MissingData("no write or write-only transaction was measured in these runs "
                          "(a read-only workload, or too short a window)")
    data = _with_labels(data)
    data["panel"] = data["op"] + " - " + data["workload"]
    panels = list(dict.fromkeys(data["panel"]))
    fig, axes = _panels(len(panels))
    for ax, p in zip(axes, panels):
        part = data[data["panel"] == p]
        sns.lineplot(data=part, x="latency_ms", y="fraction", hue="System", hue_order=_order(part),
                     palette=PALETTE, drawstyle="steps-post", ax=ax, errorbar=None, marker=".")
        ax.set_xscale("log")
        ax.set_title(p)
        ax.set_xlabel("latency (ms, log scale)")
        ax.set_ylabel("fraction of operations")
        ax.set_ylim(0, 1.01)
    notes = sorted({f"{_label(t.system)}: {t.summary['ops'][op]['not_own']}" for t in load.trials_of(runs)
                    for op in ("wot", "write") if t.summary.get("ops", {}).get(op, {}).get("not_own")})
    fig.suptitle("Write latency (paper §VII-D)" + ("\n" + "; ".join(notes) if notes else ""),
                 fontsize=10 if notes else None)
    fig.tight_layout()
    return fig


def rounds_bars(runs) -> plt.Figure:
    """The fraction of read-only transactions by wide-area rounds; 0 rounds = all-local."""
    data = load.rounds_frame(runs)
    data = data[(data["dc"] == load.ALL)]
    totals = data.groupby(["run", "point", "system"])["count"].transform("sum")
    data = data[totals > 0]
    if data.empty:
        raise MissingData("no read-only transactions were measured in these runs")
    data = _with_labels(data)
    agg = data.groupby(["workload", "System", "rounds"], sort=False)["count"].sum().reset_index()
    agg["fraction"] = agg["count"] / agg.groupby(["workload", "System"])["count"].transform("sum")
    workloads = list(dict.fromkeys(agg["workload"]))
    fig, axes = _panels(len(workloads), width=4.6)
    colors = ["#4c9f38", "#f2b134", "#e06c3c", "#8e2c48"]
    for ax, w in zip(axes, workloads):
        part = agg[agg["workload"] == w].pivot(index="System", columns="rounds", values="fraction").fillna(0)
        part = part.reindex([s for s in _order(data[data["workload"] == w]) if s in part.index])
        bottom = pd.Series(0.0, index=part.index)
        for r in range(4):
            vals = part[r] if r in part else pd.Series(0.0, index=part.index)
            ax.bar(part.index, vals, bottom=bottom, color=colors[r], label=f"{r} round{'s' if r != 1 else ''}")
            bottom += vals
        for i, s in enumerate(part.index):
            zero = part.loc[s, 0] if 0 in part else 0.0
            ax.text(i, 1.02, f"{100 * zero:.0f}% local", ha="center", fontsize=8)
        ax.set_ylim(0, 1.12)
        ax.set_title(w)
        ax.set_xlabel("system")
        ax.set_ylabel("fraction of read-only transactions")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="wide-area rounds", fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("Wide-area rounds per read-only transaction (0 = all-local)")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ overview

def _default_like(summary: pd.DataFrame, runs) -> pd.DataFrame:
    """The rows of the workloads that are the paper's default setting (else all rows)."""
    mask = [x == "default" for x in _settings(runs, summary)]
    return summary[mask] if any(mask) else summary


def overview_table(runs) -> pd.DataFrame:
    """This run's key figures next to the paper's (§VII), with where they differ."""
    s = load.summary_frame(runs)
    if s.empty:
        raise MissingData("no trial in these runs has data")
    d = _default_like(s, runs)
    by = d.groupby("system")

    def val(system, column, fn="median"):
        if system not in by.groups:
            return None
        v = getattr(by.get_group(system)[column].dropna(), fn)()
        return None if pd.isna(v) else float(v)

    rows = []

    def add(what, value, text, ok, paper_value):
        if value is None:
            rows.append({"figure": what, "this run": "not measured", "paper": paper_value, "agrees": None,
                         "note": "the runs have no data for it"})
        else:
            rows.append({"figure": what, "this run": text, "paper": paper_value, "agrees": bool(ok),
                         "note": "" if ok else "differs"})

    ref = dict(paper.REFERENCE)
    k2_local = val("k2", "all_local_fraction")
    add("K2 all-local ROTs", k2_local, f"{100 * k2_local:.1f}%" if k2_local is not None else "",
        k2_local is not None and 0.19 <= k2_local <= 0.83, ref["K2 all-local ROTs"])
    rad_p1 = val("rad", "rot_p1_ms")
    add("RAD ROT p1", rad_p1, f"{rad_p1:.1f} ms" if rad_p1 is not None else "",
        rad_p1 is not None and rad_p1 > paper.SMALLEST_RTT_MS, ref["RAD ROT p1"])
    p_local = val("paris-star", "all_local_fraction")
    add("PaRiS* all-local ROTs", p_local, f"{100 * p_local:.1f}%" if p_local is not None else "",
        p_local is not None and p_local < 0.06, ref["PaRiS* all-local ROTs"])
    for other, key in (("rad", "K2 ROT mean below RAD"), ("paris-star", "K2 ROT mean below PaRiS*")):
        a, b = val("k2", "rot_mean_ms"), val(other, "rot_mean_ms")
        gap = None if a is None or b is None else b - a
        lo, hi = (140, 297) if other == "rad" else (53, 165)
        add(key, gap, f"{gap:.0f} ms" if gap is not None else "", gap is not None and lo <= gap <= hi, ref[key])
    two = s.groupby("system")[["rounds_2", "rot_count"]].sum()
    frac2 = float(two.loc["rad", "rounds_2"] / two.loc["rad", "rot_count"]) \
        if "rad" in two.index and two.loc["rad", "rot_count"] else None
    add("RAD ROTs with 2 rounds (all workloads of these runs)", frac2,
        f"{100 * frac2:.1f}%" if frac2 is not None else "", frac2 is not None and frac2 >= 0.91,
        ref["RAD ROTs with 2 rounds (high skew, 5% writes, f=1)"])
    k2_wot = val("k2", "wot_p99_ms")
    add("K2 WOT p99", k2_wot, f"{k2_wot:.1f} ms" if k2_wot is not None else "", k2_wot is not None and k2_wot <= 23,
        ref["K2 WOT p99"])
    rad_w = val("rad", "write_p50_ms")
    add("RAD single-write p50", rad_w, f"{rad_w:.1f} ms" if rad_w is not None else "",
        rad_w is not None and rad_w > paper.SMALLEST_RTT_MS, ref["RAD single-write p50"])
    rad_wot = val("rad", "wot_p50_ms")
    add("RAD WOT p50", rad_wot, f"{rad_wot:.1f} ms" if rad_wot is not None else "",
        rad_wot is not None and rad_wot > paper.SMALLEST_RTT_MS, ref["RAD WOT p50"])
    st = [val("k2", c) for c in ("staleness_p50_ms", "staleness_p75_ms", "staleness_p99_ms")]
    add("K2 staleness p50/p75/p99", None if st[0] is None else st[0],
        "/".join(f"{x:.0f}" for x in st) + " ms" if st[0] is not None else "",
        st[0] is not None and st[0] == 0 and st[1] <= 105 and st[2] <= 1117, ref["K2 staleness"])
    k2_t, rad_t = val("k2", "throughput_ops_per_s"), val("rad", "throughput_ops_per_s")
    ratio = None if not k2_t or not rad_t else k2_t / rad_t
    add("Throughput K2 / RAD", ratio, f"{ratio:.2f}" if ratio is not None else "",
        ratio is not None and ratio > 1, "41.6 / 24.8 = 1.68 (peak; only comparable in a load sweep)")
    return pd.DataFrame(rows)


def fidelity_table(runs) -> pd.DataFrame:
    """What lets a reader judge a run's fidelity, per (run, point, system): how far the
    paced clients ran behind their schedule, the cache hit rate over the measured window,
    snapshot lag and staleness, replication lag (and after the faults, if any, with its
    sample count), replication left pending when the servers stopped, unavailability
    windows, errors and consistency violations, measurements that are not the named
    system's own, and the summary's warnings."""
    rows = []
    for t in load.trials_of(runs):
        s = t.summary

        def pct(block, *keys):
            b = s.get(block) or {}
            return "/".join("-" if b.get(k) is None else f"{b[k]:.0f}" for k in keys) if b.get("count") else "-"

        lag = s.get("replication_lag_ms") or {}
        after = lag.get("after") or {}
        avail = s.get("availability") or {}
        cons = s.get("consistency") or {}
        pending = s.get("replication_pending_at_end") or {}
        rows.append({
            "run": t.run, "point": t.point, "trial": t.trial, "system": _label(t.system),
            "schedule lag p50/p99 ms": pct("schedule_lag_ms", "p50", "p99"),
            "cache hit rate": "-" if not s.get("cache") else f"{100 * s['cache']['hit_rate']:.1f}%",
            "snapshot lag p50/p75/p99 ms": pct("snapshot_lag_ms", "p50", "p75", "p99"),
            "staleness p50/p75/p99 ms": pct("staleness_ms", "p50", "p75", "p99"),
            "replication lag p50/p99 ms": pct("replication_lag_ms", "p50", "p99"),
            "after the faults p99/max ms (n)": "-" if not after.get("count")
            else f"{after['p99']:.0f}/{after['max']:.0f} (n {after['count']})",
            "replication pending at end": "-" if not pending else str(pending["total"])
            + (f" (without killed {', '.join(pending['skipped_dcs'])})" if pending.get("skipped_dcs") else ""),
            "unavailability": ", ".join(f"{w['dc']} {w['from_s']:.0f}-{w['to_s']:.0f}s"
                                        for w in avail.get("windows", [])) or ("none" if avail else "-"),
            "errors": s.get("errors"),
            "violations": cons.get("violations", "not checked"),
            "not the system's own": "; ".join(f"{op}: {s['ops'][op]['not_own']}" for op in ("wot", "write")
                                              if s.get("ops", {}).get(op, {}).get("not_own")),
            "warnings": "; ".join(s.get("warnings") or []),
        })
    if not rows:
        raise MissingData("no trial in these runs has a summary")
    return pd.DataFrame(rows)


def overview_figure(runs) -> plt.Figure:
    """Mean read-only transaction latency and all-local fraction per system and workload."""
    s = load.summary_frame(runs)
    if s.empty or s["rot_count"].sum() == 0:
        raise MissingData("no read-only transactions were measured in these runs")
    s = _with_labels(s)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
    order = _order(s)
    sns.barplot(data=s, x="workload", y="rot_mean_ms", hue="System", hue_order=order, palette=PALETTE, ax=ax1,
                errorbar=None)
    ax1.set_xlabel("workload")
    ax1.set_ylabel("mean read-only transaction latency (ms)")
    ax1.tick_params(axis="x", rotation=20)
    sns.barplot(data=s.assign(pct=100 * s["all_local_fraction"].fillna(0)), x="workload", y="pct", hue="System",
                hue_order=order, palette=PALETTE, ax=ax2, errorbar=None)
    ax2.set_xlabel("workload")
    ax2.set_ylabel("all-local read-only transactions (%)")
    ax2.tick_params(axis="x", rotation=20)
    fig.suptitle("Overview: latency and locality of read-only transactions")
    fig.tight_layout()
    return fig
