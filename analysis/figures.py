"""One function per figure of the report: frames in, a matplotlib figure out (seaborn,
labelled axes with units). A figure without the data it needs raises ``MissingData`` with
a sentence saying what is missing, which the report shows instead of the figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from . import claims, frames, load, paper, paris, placement
from .draw import MissingData, heatmap, label as _label, panels as _panels  # noqa: F401  (MissingData: figures.MissingData)


def palette(labels=None) -> dict[str, str]:
    """Label -> colour (seaborn's ``palette``) for the systems met, and for any other label
    among ``labels`` (a system without a descriptor is named and coloured by default)."""
    known = load.systems()
    out = known.palette(known)
    for x in labels if labels is not None else ():
        out.setdefault(x, known.colour(x))
    return out


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


# ------------------------------------------------------------------ CDFs (Fig. 7/8, staleness, writes)

def _cdf_grid(data: pd.DataFrame, col: str, xlabel: str, ylabel: str, title: str, xscale: str = "log",
              style: str | None = None):
    """Step CDFs, one panel per ``col`` value, colour by system, line style by ``style``; when
    a panel holds several runs (two runs of one experiment), line style by run: runs are
    never averaged."""
    data = data.copy()
    data["run"] = data["run"].astype(str)
    several = data.groupby(col)["run"].nunique().max() > 1
    # one line per run and style value: lines that share a colour and a style never join
    data["line"] = data["run"] + (" " + data[style].astype(str) if style else "")
    grid = sns.relplot(data=data, kind="line", x="latency_ms", y="fraction", hue="System", units="line",
                       hue_order=_order(data), palette=palette(data["System"]), style="run" if several else style,
                       col=col, col_wrap=min(3, data[col].nunique()), drawstyle="steps-post",
                       estimator=None, errorbar=None, height=3.6, aspect=1.3,
                       facet_kws={"sharex": False, "sharey": True})
    if xscale == "symlog":
        grid.set(xscale="symlog", ylim=(0, 1.01))
        for ax in grid.axes.flat:
            ax.set_xscale("symlog", linthresh=1)
            ax.set_xlim(left=0)
    else:
        grid.set(xscale=xscale, ylim=(0, 1.01))
    grid.set_axis_labels(xlabel, ylabel)
    grid.set_titles("{col_name}")
    grid.figure.suptitle(title, y=1.03)
    return grid


def _smallest_rtt(runs) -> dict:
    """The smallest RTT of each workload label: its topology's smallest RTT x its
    rtt_scale (several when runs at different scales share a panel)."""
    out: dict[str, set] = {}
    for r in (runs if isinstance(runs, list) else [runs]):
        for t in r.trials:
            label = workload_label({"experiment": t.experiment, "point": t.point})
            out.setdefault(label, set()).add(round(claims.smallest_rtt_of(t, r.manifest), 3))
    return {k: sorted(v) for k, v in out.items()}


def rot_latency_cdf(runs) -> plt.Figure:
    """Read-only transaction latency CDFs, one panel per workload, one line per system (and
    run); the dotted line is the workload's smallest RTT (its topology's, x its rtt_scale)."""
    data = frames.cdf_frame(runs, "rot")
    if data.empty:
        raise MissingData("no read-only transactions were measured in these runs")
    data = _with_labels(data)
    grid = _cdf_grid(data, "workload", "read-only transaction latency (ms, log scale)",
                     "fraction of read-only transactions",
                     "Read-only transaction latency CDF (paper Fig. 7, 8); dotted: the smallest RTT")
    rtt = _smallest_rtt(runs)
    for name, ax in grid.axes_dict.items():
        for x in rtt[name]:
            ax.axvline(x, color="grey", linestyle=":", linewidth=1)
            ax.text(x, 0.02, f" {x:g} ms", color="grey", fontsize=7)
    return grid.figure


# ------------------------------------------------------------------ Fig. 9

def _order_labels(labels) -> list[str]:
    return load.systems().by_label(labels)


def fig9_table(runs) -> pd.DataFrame:
    """Peak throughput per Fig. 9 setting and system from the load sweeps among the runs
    (claims.peaks: as bench-throughput picks it), with K2/RAD and K2/PaRiS* at peak beside
    the paper's K2/RAD, each sweep's points (degraded ones in brackets) and the systems
    whose sweep ran out before a rule stopped it (its best point is not a peak)."""
    p = claims.peaks(runs)
    if p.empty:
        raise MissingData("no load sweep in these runs: Fig. 9 needs peaks (make bench-throughput, or "
                          "make local-run EXPERIMENT=fig9-load-sweep)")
    rows = []
    for (run, setting), g in p.groupby(["run", "setting"], dropna=False, sort=False):
        by = g.set_index("system")
        row = {"run": run, "setting": setting}
        for system in by.index:
            ops = by.loc[system, "ops_per_s"]
            row[f"{_label(system)} ops/s"] = None if pd.isna(ops) else round(float(ops))
            row[f"{_label(system)} at"] = by.loc[system, "point"]
        row["points (degraded)"] = ", ".join(
            f"{_label(x)} {by.loc[x, 'points']} ({by.loc[x, 'degraded_points']})" for x in by.index)
        row["not a peak"] = ", ".join(_label(x) for x in by.index if not by.loc[x, "is_peak"]) or "-"
        for mine, other in paper.FIG9_RATIOS:
            if mine in by.index and other in by.index:
                r = by.loc[mine, "ops_per_s"] / by.loc[other, "ops_per_s"]
                row[f"{_label(mine)}/{_label(other)}"] = None if pd.isna(r) else round(float(r), 2)
        theirs = paper.fig9_ratio(setting) if isinstance(setting, str) else None
        row["paper K2/RAD"] = None if theirs is None else round(theirs, 2)
        rows.append(row)
    return pd.DataFrame(rows)


def fig9_peaks(runs) -> plt.Figure:
    """Peak throughput per setting and system from load sweeps (left), the paper's Fig. 9
    (right: K txn/s with 24 servers; absolute values are not comparable, orders are)."""
    p = claims.peaks(runs)
    if p.empty:
        fig9_table(runs)  # raises the MissingData that says what to run
    p = p.assign(System=p["system"].map(_label))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.2))
    several = p["run"].nunique() > 1
    p["where"] = p["setting"] + (" - " + p["run"] if several else "")
    short = p.groupby("where")["is_peak"].transform("all")  # a system's sweep ran out: marked *
    p["where"] = p["where"] + short.map({True: "", False: " *"})
    sns.barplot(data=p, x="where", y="ops_per_s", hue="System", hue_order=_order_labels(p["System"]),
                palette=palette(p["System"]), ax=ax1, errorbar=None)
    ax1.set_xlabel("setting" + (" - run" if several else ""))
    ax1.set_ylabel("peak throughput (ops/s)")
    ax1.set_title("These runs: peak of each load sweep" + ("" if short.all() else "\n* a sweep ran out: not a peak"))
    ax1.tick_params(axis="x", rotation=20)
    ref = pd.DataFrame([{"setting": k, "System": _label(s), "ktxn": v}
                        for s, cols in paper.FIG9_KTXN_PER_S.items() for k, v in cols.items()])
    sns.barplot(data=ref, x="setting", y="ktxn", hue="System", palette=palette(ref["System"]), ax=ax2)
    ax2.set_xlabel("setting (paper)")
    ax2.set_ylabel("peak throughput (K txn/s, 24 servers)")
    ax2.set_title("Paper Fig. 9")
    ax2.tick_params(axis="x", rotation=35)
    fig.tight_layout()
    return fig


def latency_vs_throughput(runs) -> plt.Figure:
    """Each load sweep as latency against throughput, one panel per setting (and run); the
    knee is where the peak is. Points are joined in order of load (client threads, or the
    offered rate of a paced sweep), so a sweep past its peak bends back as the paper's curves do. Read-write transactions where
    a system ran them (the PaRiS paper's workloads, its Fig. 2): mean, as the paper plots,
    and p99; else read-only transactions (the K2 paper's): p50 and p99."""
    rows = []
    for w in claims.workloads(runs):
        axis = next((a for a in claims.LOAD_AXES if a in w.sweep_axes), None)
        if axis is None:
            continue
        for system, p in w.systems.items():
            op, stats = ("rwt", ("mean", "p99")) if p.get("rwt_count") else ("rot", ("p50", "p99"))
            for pct in stats:
                if p["throughput_ops_per_s"] is not None and p.get(f"{op}_{pct}_ms") is not None:
                    rows.append({"run": w.run, "setting": w.key, "System": _label(system),
                                 "percentile": f"{op.upper()} {pct}", "ops_per_s": p["throughput_ops_per_s"],
                                 "latency_ms": p[f"{op}_{pct}_ms"], "point": w.point,
                                 "load": w.point_values[axis]})
    if not rows:
        raise MissingData("no load sweep in these runs (a sweep over clients.threads_per_dc or "
                          "clients.target_ops_per_s_per_dc)")
    data = pd.DataFrame(rows).sort_values(["load", "ops_per_s"])
    several = data["run"].nunique() > 1
    data["panel"] = data["setting"] + (" - " + data["run"] if several else "")
    grid = sns.relplot(data=data, kind="line", x="ops_per_s", y="latency_ms", hue="System",
                       hue_order=_order_labels(data["System"]), palette=palette(data["System"]), style="percentile",
                       markers=True, col="panel", col_wrap=min(3, data["panel"].nunique()), sort=False,
                       estimator=None, errorbar=None, height=3.6, aspect=1.3, facet_kws={"sharex": False})
    grid.set(yscale="log")
    grid.set_axis_labels("throughput (transactions/s)", "transaction latency (ms, log)")
    grid.set_titles("{col_name}")
    grid.figure.suptitle("Latency against throughput along each load sweep", y=1.03)
    return grid.figure


def throughput_timeseries(runs) -> plt.Figure:
    """Committed operations per second over each trial, the measured window shaded."""
    data = frames.throughput_frame(runs)
    if data.empty:
        raise MissingData("no operation was committed in these runs")
    data = _with_labels(data)
    several = data.groupby("workload")["run"].nunique().max() > 1
    data["line"] = data["run"] + " trial " + data["trial"].astype(str)
    grid = sns.relplot(data=data, kind="line", x="t_s", y="ops_per_s", hue="System", hue_order=_order(data),
                       palette=palette(data["System"]), style="run" if several else None, units="line", estimator=None,
                       col="workload", col_wrap=min(3, data["workload"].nunique()), height=3.2, aspect=1.4,
                       facet_kws={"sharex": False, "sharey": False})
    for name, ax in grid.axes_dict.items():
        measure = data[(data["workload"] == name) & (data["phase"] == "measure")]["t_s"]
        if not measure.empty:
            ax.axvspan(measure.min(), measure.max() + 1, color="grey", alpha=0.15)
    grid.set_axis_labels("time since the clients started (s)", "throughput (ops/s)")
    grid.set_titles("{col_name}")
    grid.figure.suptitle("Throughput over time (shaded: measured window)", y=1.03)
    return grid.figure


# ------------------------------------------------------------------ staleness, writes, rounds

def staleness_cdf(runs) -> plt.Figure:
    data = frames.cdf_frame(runs, "staleness")
    if data.empty:
        raise MissingData("no staleness was reported in these runs")
    grid = _cdf_grid(_with_labels(data), "workload", "staleness of each key read (ms, symlog)", "fraction of keys read",
                     "Staleness: time since a newer version of the returned key was written (§VII-D)", "symlog")
    return grid.figure


def visibility_cdf(runs) -> plt.Figure:
    """Update visibility latency, the PaRiS paper's Fig. 5: PaRiS shows an update once the
    UST passes it, so later than BPR, by up to about the largest RTT (the farthest
    datacenters exchange what they installed); NoCC at once. BPR's twice: once its
    partition has installed the update, and (dashed) as its authors' code records it, when a
    read's snapshot first covers it (what their Fig. 5 plots)."""
    data = frames.visibility_frame(runs)
    if data.empty:
        raise MissingData("no server recorded visibility latency (PaRiS, BPR and NoCC do: "
                          "make local-run EXPERIMENT=paris-default)")
    grid = _cdf_grid(_with_labels(data), "workload", "from install at a server to visible there (ms, symlog)",
                     "fraction of installed transactions", "Update visibility latency (PaRiS paper Fig. 5)",
                     "symlog", style="measure")  # NoCC's are 0
    return grid.figure


def transactions_table(runs) -> pd.DataFrame:
    """Read-write transactions per trial (PaRiS paper workloads): latency, throughput,
    visibility, BPR's blocking and the UST protocol's share of the bytes sent."""
    frame = frames.transactions_frame(runs)
    if frame.empty:
        raise MissingData("no read-write transactions in these runs (the PaRiS paper's workloads: "
                          "make local-run EXPERIMENT=paris-default)")
    frame = frame.copy()
    frame["system"] = frame["system"].map(_label)
    return frame


def paris_ratios_table(runs) -> pd.DataFrame:
    """The PaRiS paper's headline ratios per point with their spread over trials
    (paris.paris_ratios_frame): BPR/PaRiS and PaRiS/NoCC latency and throughput, and the
    visibility gap; "within noise" where the systems' ranges over trials overlap."""
    frame = paris.paris_ratios_frame(runs)
    if frame.empty:
        raise MissingData("no run of PaRiS with BPR or NoCC (make local-run EXPERIMENT=paris-default)")
    return frame


def freshness_vs_write_rate(runs) -> plt.Figure:
    """Staleness and snapshot lag (left) and the all-local fraction (right) against the
    write rate of the hottest keys, one marker per run point, K2 and PaRiS*
    (docs/freshness.md)."""
    data = frames.freshness_frame(runs)
    data = data[data["hot_key_writes_per_s"].notna()] if not data.empty else data
    if data.empty:
        raise MissingData("no run of K2 or PaRiS* with snapshot lag and operation histories "
                          "(make local-run EXPERIMENT=freshness-load, freshness-writes)")
    data = data.copy()
    data["System"] = data["system"].map(_label)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for system, group in data.groupby("System"):
        g = group.sort_values("hot_key_writes_per_s")
        color = palette([system])[system]
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
    parts = [frames.cdf_frame(runs, op).assign(op=name) for op, name in
             (("write", "single writes"), ("wot", "write-only transactions"))]
    parts = [p for p in parts if not p.empty]
    if not parts:
        raise MissingData("no write or write-only transaction was measured in these runs "
                          "(a read-only workload, or too short a window)")
    data = _with_labels(pd.concat(parts, ignore_index=True))
    data["panel"] = data["op"] + " - " + data["workload"]
    notes = sorted({f"{_label(t.system)}: {t.summary['ops'][op]['not_own']}" for t in load.trials_of(runs)
                    for op in ("wot", "write") if t.summary.get("ops", {}).get(op, {}).get("not_own")})
    grid = _cdf_grid(data, "panel", "latency (ms, log scale)", "fraction of operations",
                     "Write latency (paper §VII-D)" + ("\n" + "; ".join(notes) if notes else ""))
    return grid.figure


def rounds_bars(runs) -> plt.Figure:
    """The fraction of read-only transactions by wide-area rounds; 0 rounds = all-local.
    One bar per system and run (trials merged), never several runs summed."""
    data = frames.rounds_frame(runs)
    data = data[(data["dc"] == load.ALL)]
    totals = data.groupby(["run", "point", "system"])["count"].transform("sum")
    data = data[totals > 0]
    if data.empty:
        raise MissingData("no read-only transactions were measured in these runs")
    data = _with_labels(data)
    several = data.groupby("workload")["run"].nunique().max() > 1
    data["bar"] = data["System"] + ("\n" + data["run"] if several else "")  # the whole name: unique
    agg = data.groupby(["workload", "bar", "System", "rounds"], sort=False)["count"].sum().reset_index()
    agg["fraction"] = agg["count"] / agg.groupby(["workload", "bar"])["count"].transform("sum")
    workloads = list(dict.fromkeys(agg["workload"]))
    fig, axes = _panels(len(workloads), width=4.6 * (1.6 if several else 1))
    colors = ["#4c9f38", "#f2b134", "#e06c3c", "#8e2c48"]
    rank = {s: i for i, s in enumerate(_order(data))}
    for ax, w in zip(axes, workloads):
        sub = agg[agg["workload"] == w]
        part = sub.pivot(index="bar", columns="rounds", values="fraction").fillna(0)
        system_of = dict(zip(sub["bar"], sub["System"]))
        part = part.loc[sorted(part.index, key=lambda b: (rank.get(system_of[b], 99), b))]
        bottom = pd.Series(0.0, index=part.index)
        for r in range(4):
            vals = part[r] if r in part else pd.Series(0.0, index=part.index)
            ax.bar(part.index, vals, bottom=bottom, color=colors[r], label=f"{r} round{'s' if r != 1 else ''}")
            bottom += vals
        for i, b in enumerate(part.index):
            zero = part.loc[b, 0] if 0 in part else 0.0
            ax.text(i, 1.02, f"{100 * zero:.0f}% local", ha="center", fontsize=8)
        ax.set_ylim(0, 1.12)
        ax.set_title(w)
        ax.set_xlabel("system" + (" and run" if several else ""))
        ax.set_ylabel("fraction of read-only transactions")
        ax.tick_params(axis="x", labelsize=7 if several else 9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="wide-area rounds", fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("Wide-area rounds per read-only transaction (0 = all-local)")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ overview

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
    """Mean read-only transaction latency and all-local fraction per system and workload:
    bars from the trials' merged histograms, one dot per trial (the spread), one row of
    panels per run when several runs share a workload."""
    pooled = frames.pooled_frame(runs)
    if pooled.empty or pooled["rot_count"].sum() == 0:
        raise MissingData("no read-only transactions were measured in these runs")
    pooled = _with_labels(pooled)
    pooled["all_local_pct"] = 100 * pooled["all_local_fraction"].fillna(0)
    per_trial = _with_labels(frames.summary_frame(runs))
    per_trial["all_local_pct"] = 100 * per_trial["all_local_fraction"].fillna(0)
    several = pooled.groupby("workload")["run"].nunique().max() > 1
    runs_ = list(dict.fromkeys(pooled["run"])) if several else [None]
    fig, axes = plt.subplots(len(runs_), 2, figsize=(12, 4 * len(runs_)), squeeze=False)
    order = _order(pooled)
    for row, run in zip(axes, runs_):
        mine = pooled if run is None else pooled[pooled["run"] == run]
        trials = per_trial if run is None else per_trial[per_trial["run"] == run]
        for ax, col, ylabel in ((row[0], "rot_mean_ms", "mean read-only transaction latency (ms)"),
                                (row[1], "all_local_pct", "all-local read-only transactions (%)")):
            sns.barplot(data=mine, x="workload", y=col, hue="System", hue_order=order, palette=palette(mine["System"]), ax=ax,
                        errorbar=None)
            if trials["trial"].nunique() > 1:
                sns.stripplot(data=trials, x="workload", y=col, hue="System", hue_order=order, dodge=True,
                              color="black", size=3, ax=ax, legend=False)
            ax.set_xlabel("workload")
            ax.set_ylabel(ylabel)
            ax.tick_params(axis="x", rotation=20)
            if run is not None:
                ax.set_title(run, fontsize=9)
    fig.suptitle("Overview: latency and locality of read-only transactions")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ Fig. 6

def rtt_frame(runs) -> pd.DataFrame:
    """Per run and datacenter pair: the configured RTT and the measured p50 and p99 (ms),
    from the run's ping measurement in its manifest (long form: one row per pair)."""
    rows = []
    for r in (runs if isinstance(runs, list) else [runs]):
        matrix = r.manifest.get("measured_rtt_ms") or {}
        for a, row in matrix.items():
            for b, cell in row.items():
                if isinstance(cell, dict):
                    rows.append({"run": r.name, "from": a, "to": b, "configured_ms": cell.get("configured"),
                                 "p50_ms": cell.get("p50"), "p99_ms": cell.get("p99")})
                elif a == b:
                    rows.append({"run": r.name, "from": a, "to": b, "configured_ms": 0.0, "p50_ms": 0.0,
                                 "p99_ms": 0.0})
    return pd.DataFrame(rows, columns=["run", "from", "to", "configured_ms", "p50_ms", "p99_ms"])


def rtt_heatmaps(runs) -> plt.Figure:
    """Paper Fig. 6 for each run: the RTT between datacenters as configured (the paper's
    matrix x rtt_scale, or the cloud's own) and as measured, p50 and p99."""
    data = rtt_frame(runs)
    if data.empty:
        raise MissingData("these runs have no RTT measurement in their manifest (measured_rtt_ms)")
    names = list(dict.fromkeys(data["run"]))
    fig, axes = plt.subplots(len(names), 3, figsize=(15, 4.2 * len(names)), squeeze=False)
    for row, name in zip(axes, names):
        part = data[data["run"] == name]
        order = list(dict.fromkeys(part["from"]))
        for ax, col, what in zip(row, ("configured_ms", "p50_ms", "p99_ms"), ("configured", "measured p50",
                                                                              "measured p99")):
            m = part.pivot(index="from", columns="to", values=col).reindex(index=order, columns=order)
            heatmap(ax, m)
            ax.set_title(f"{what} (ms)" + (f"\n{name}" if len(names) > 1 else ""), fontsize=10)
            ax.set_xlabel("to")
            ax.set_ylabel("from")
    fig.suptitle("Round-trip times between datacenters (paper Fig. 6): configured and measured")
    fig.tight_layout()
    return fig


def congestion(runs) -> plt.Figure:
    """The Karma paper's Fig. 7 and 8 for runs with delay faults (karma-congestion): mean
    read latency per second with each congestion event shaded, and each event's latency
    increase and throughput drop against the trial's uncongested seconds."""
    events = frames.congestion_frame(runs)
    if events.empty:
        raise MissingData("no trial of these runs has delay faults (karma-congestion has)")
    series = _with_labels(frames.latency_timeseries_frame(runs))
    events = _with_labels(events)
    order = _order(events)
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.2), gridspec_kw={"width_ratios": [2.2, 1, 1]})
    sns.lineplot(data=series, x="t_s", y="mean_ms", hue="System", hue_order=order, palette=palette(series["System"]),
                 style="run" if series["run"].nunique() > 1 else None, estimator=None, ax=axes[0])
    for t in load.trials_of(runs)[:1]:
        for at, for_s, extra in frames._delay_events(t):
            axes[0].axvspan(at, at + for_s, color="grey", alpha=0.15)
            axes[0].text(at, 1.0, f"+{extra:g} ms", transform=axes[0].get_xaxis_transform(), va="bottom",
                         fontsize=8, color="grey")
    axes[0].set(yscale="log", xlabel="time since the clients started (s)", ylabel="mean read latency (ms, log)")
    congested = events[events["event"] != "uncongested"]
    for ax, col, what in ((axes[1], "latency_increase_pct", "mean latency increase (%)"),
                          (axes[2], "throughput_drop_pct", "throughput drop (%)")):
        sns.barplot(data=congested, x="extra_ms", y=col, hue="System", hue_order=order, palette=palette(congested["System"]),
                    errorbar=None, ax=ax)
        ax.set(xlabel="added delay on every link of the congested datacenter (ms)", ylabel=what)
        ax.legend_.remove() if ax.legend_ else None
    fig.suptitle("Under congestion (Karma paper Fig. 7 and 8): shaded, the congestion events; bars, each event "
                 "against the uncongested seconds", y=1.02)
    fig.tight_layout()
    return fig


def cache_warmup(runs, paper: str | None = None) -> plt.Figure:
    """The datacenter cache's hit rate against time since the clients started, warm-up
    included, one line per trial and point; the dotted line is where the measured window
    begins. A cache still warming there makes the window's hit rate (and local access) low."""
    data = frames.cache_warmup_frame(runs)
    if paper and not data.empty:  # a paper's notebook: its systems' caches, when the runs have them
        theirs = data[data["system"].isin(load.systems().of_paper(paper))]
        data = theirs if not theirs.empty else data
    if data.empty:
        raise MissingData("no trial of these runs recorded its cache's hit rate over time (Karma and K2 do)")
    data = _with_labels(data)
    data["line"] = data["point"].astype(str) + " trial " + data["trial"].astype(str)
    fig, ax = plt.subplots(figsize=(9, 4))
    sns.lineplot(data=data, x="t_s", y="hit_rate", hue="line", style="System", estimator=None, ax=ax)
    for w in sorted(set(data["window_s"])):
        ax.axvline(w, color="grey", linestyle=":")
    ax.set(xlabel="time since the clients started (s); dotted: the measured window begins",
           ylabel="cache hit rate", ylim=(0, 1), title="Is the cache warm when the window begins?")
    fig.tight_layout()
    return fig


def _write_cdfs(runs) -> pd.DataFrame:
    return pd.concat([frames.cdf_frame(runs, op).assign(op=op) for op in ("write", "wot")], ignore_index=True)


# The data behind each figure of the report, by figure name: what report/data/<name>.csv holds.
DATA = {
    "overview": frames.pooled_frame,
    "fig6-rtt": rtt_frame,
    "fig8-rot-latency-cdf": lambda runs: frames.cdf_frame(runs, "rot"),
    "fig9-throughput": claims.peaks,
    "latency-vs-throughput": frames.pooled_frame,
    "throughput-timeseries": frames.throughput_frame,
    "staleness-cdf": lambda runs: frames.cdf_frame(runs, "staleness"),
    "visibility-cdf": frames.visibility_frame,
    "freshness": frames.freshness_frame,
    "write-latency": _write_cdfs,
    "rounds": frames.rounds_frame,
    "congestion": frames.congestion_frame,
    "cache-warmup": frames.cache_warmup_frame,
    "placement-latency": placement.placement_frame,
    "placement-buckets": placement.placement_buckets_frame,
}
