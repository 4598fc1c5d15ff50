"""Runs into tidy pandas frames.

Everything here is derived from the trials' raw logs (load.py): latency distributions are
merged interval by interval and client by client (never by averaging percentiles), and
warm-up and cool-down are trimmed with the durations in the run's manifest, counted from
the trial's common client start.

Frames are tidy: one row per observation, with the identifying columns ``run``,
``experiment``, ``point`` (sweep point id, "" without a sweep), ``trial``, ``system`` and,
where it applies, ``dc`` ("all" for every datacenter together) and ``op``.
"""
from __future__ import annotations

import pandas as pd
from hdrh.histogram import HdrHistogram

from k2bench.histograms import new_histogram, recorded
from k2bench.summary import BASE_OPS, OPS, latency

from .load import ALL, PERCENTILES, Trial, _dcs, merge, trials_of


def latency_frame(runs, ops=OPS, per_dc: bool = True) -> pd.DataFrame:
    """Latency per (run, point, trial, system, dc, op): count, mean and percentiles in ms
    of the merged histogram, which is kept in column ``histogram`` for further merging
    (see ``merge_rows``). Read-write transactions (``rwt``) have rows only where they ran."""
    rows = []
    for t in trials_of(runs):
        for dc in (_dcs(t) if per_dc else [ALL]):
            for op in ops:
                h = t.merged(op, dc)
                if op in OPS and op not in BASE_OPS and not h.get_total_count():
                    continue
                stats = latency(h, PERCENTILES)
                rows.append(t.ids() | {"dc": dc, "op": op, "count": h.get_total_count(),
                                       **{("mean_ms" if k == "mean" else f"{k}_ms"): v for k, v in stats.items()},
                                       "histogram": h})
    return pd.DataFrame(rows)


def merge_rows(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Merges the ``histogram`` column of the rows in each group (e.g. the trials of a
    point) and recomputes count, mean and percentiles from the merged histogram."""
    rows = []
    for key, group in frame.groupby(by, sort=False, dropna=False):
        h = new_histogram()
        for x in group["histogram"]:
            h.add(x)
        stats = latency(h, PERCENTILES)
        key = key if isinstance(key, tuple) else (key,)
        rows.append(dict(zip(by, key)) | {"count": h.get_total_count(),
                                          **{("mean_ms" if k == "mean" else f"{k}_ms"): v for k, v in stats.items()},
                                          "histogram": h})
    return pd.DataFrame(rows)


def cdf(h: HdrHistogram, scale: float = 1000.0) -> pd.DataFrame:
    """The empirical CDF of a histogram: one row per distinct recorded value (value / scale)."""
    total = h.get_total_count()
    if total == 0:
        return pd.DataFrame({"value": [], "fraction": []})
    values, counts = recorded(h)
    return pd.DataFrame({"value": values / scale, "fraction": counts.cumsum() / total})


def cdf_frame(runs, tag: str = "rot", dc: str = ALL, merge_trials: bool = True) -> pd.DataFrame:
    """Latency (or staleness) CDF per (run, point, system[, trial]) in ms, for plotting."""
    frame = latency_frame(runs, ops=(tag,), per_dc=dc != ALL)
    frame = frame[frame["dc"] == dc]
    by = ["run", "experiment", "point", "system"] + ([] if merge_trials else ["trial"])
    if frame.empty:
        return pd.DataFrame(columns=[*by, "latency_ms", "fraction"])
    parts = []
    for _, row in merge_rows(frame, by).iterrows():
        c = cdf(row["histogram"]).rename(columns={"value": "latency_ms"})
        for col in by:
            c[col] = row[col]
        parts.append(c)
    return pd.concat(parts, ignore_index=True)[[*by, "latency_ms", "fraction"]]


def visibility_frame(runs) -> pd.DataFrame:
    """The CDF of update visibility latency per (run, experiment, point, system), the PaRiS
    paper's Fig. 5: from a transaction's install at a server to when new transactions of
    that server's datacenter see it (propagation factored out, as the paper does), over every
    server of every datacenter and the point's trials. Only systems that record it (PaRiS,
    BPR, NoCC). The paper plots the mean over nodes of each percentile; this is the merged
    distribution of every install at every node. ``measure``: "installed" (as above), or for
    BPR also "at read": when a read's snapshot first covers the update, as its authors' code
    records it."""
    by = ["run", "experiment", "point", "system", "measure"]
    groups: dict[tuple, HdrHistogram] = {}
    for t in trials_of(runs):
        for measure, prefix in (("installed", "visibility:"), ("at read", "visibility_at_read:")):
            h = t.server_merged(prefix)
            if h.get_total_count():
                groups.setdefault((t.run, t.experiment, t.point, t.system, measure), new_histogram()).add(h)
    parts = []
    for key, h in groups.items():
        c = cdf(h).rename(columns={"value": "latency_ms"})
        for col, v in zip(by, key):
            c[col] = v
        parts.append(c)
    if not parts:
        return pd.DataFrame(columns=[*by, "latency_ms", "fraction"])
    return pd.concat(parts, ignore_index=True)[[*by, "latency_ms", "fraction"]]


# Message types of the PaRiS family by what they are for (its paper's Fig. 6): the UST
# protocol inside a datacenter (reports to the root, its announcements), between
# datacenters (the roots' exchange), and replication (updates and heartbeats).
UST_MESSAGES = {"StableReport": "UST intra-DC", "UstAnnounce": "UST intra-DC", "DcStable": "UST inter-DC",
                "Replicate": "replication", "Heartbeat": "replication"}


def transactions_frame(runs) -> pd.DataFrame:
    """One row per (run, point, trial, system) that ran read-write transactions (the PaRiS
    paper's workloads): their count, mean and percentiles (ms, from the merged logs),
    throughput, wide-area reads, visibility latency, BPR's blocking (per read slice and per
    transaction's read phase, whose mean the paper reports), and the bytes the UST protocol
    and replication sent, as shares of their sum (the paper's Fig. 6)."""
    rows = []
    for t in trials_of(runs):
        rwt = t.merged("rwt")
        if not rwt.get_total_count():
            continue
        s = t.summary
        committed = sum(t.merged(op).get_total_count() for op in OPS)
        vis = s.get("visibility_ms") or {}
        blocked = s.get("read_blocked_ms") or {}
        phase = blocked.get("per_transaction") or {}
        wan = (s.get("ops", {}).get("rwt") or {}).get("wan_rounds") or {}
        sent: dict[str, float] = {}
        for link in ("local", "wan"):
            for msg, m in ((s.get("messages") or {}).get(link) or {}).items():
                what = UST_MESSAGES.get(msg)
                if what is not None and m.get("mean_bytes") is not None:
                    sent[what] = sent.get(what, 0.0) + m["count"] * m["mean_bytes"]
        total = sum(sent.values())
        rows.append(t.ids() | t.point_values | {
            "rwt_count": rwt.get_total_count(),
            **{f"rwt_{k}_ms": v for k, v in latency(rwt, (50, 99)).items()},
            "throughput_ops_per_s": committed / t.measured_s if t.measured_s else None,
            "rwt_remote_fraction": (1 - wan.get("0", 0) / sum(wan.values())) if wan and sum(wan.values()) else None,
            "visibility_p50_ms": vis.get("p50"), "visibility_p99_ms": vis.get("p99"),
            # BPR's as its authors' code records it (a read's snapshot first covers the update)
            "visibility_at_read_p50_ms": (vis.get("at_read") or {}).get("p50"),
            "visibility_at_read_p99_ms": (vis.get("at_read") or {}).get("p99"),
            "reads_blocked_share": blocked.get("blocked_share"),
            "blocked_read_cpu_us": (blocked.get("cpu_us_per_blocked_read") or {}).get("mean"),
            "read_phase_blocked_mean_ms": phase.get("mean"), "read_phase_blocked_p99_ms": phase.get("p99"),
            **{f"bytes_share_{k.replace(' ', '_').replace('-', '_').lower()}": (v / total if total else None)
               for k, v in sorted(sent.items())},
        })
    return pd.DataFrame(rows)


def throughput_frame(runs) -> pd.DataFrame:
    """Committed operations per second over each trial's run, with the phase of each second
    (warmup, measure, cooldown) from the manifest's durations."""
    rows = []
    for t in trials_of(runs):
        d = t.config["duration"]
        bins: dict[int, int] = {}
        for ivs in t.intervals().values():
            for iv in ivs:
                if iv.tag in OPS:
                    s = t.second_of(iv)
                    bins[s] = bins.get(s, 0) + iv.histogram.get_total_count()
        for s in sorted(bins):
            phase = ("warmup" if s < d["warmup_s"] else
                     "measure" if s < d["warmup_s"] + d["measure_s"] else "cooldown")
            rows.append(t.ids() | {"t_s": s, "ops_per_s": bins[s], "phase": phase})
    return pd.DataFrame(rows, columns=["run", "experiment", "point", "trial", "system", "t_s", "ops_per_s", "phase"])


CONGESTION_COLUMNS = ["run", "experiment", "point", "trial", "system", "event", "extra_ms", "seconds", "ops_per_s",
                      "reads", "mean_ms", "p50_ms", "p99_ms", "latency_increase_pct", "throughput_drop_pct"]


def _delay_events(t: Trial) -> list[tuple[float, float, float]]:
    """A trial's congestion events: its delay faults grouped by (at_s, for_s, extra_ms),
    whatever datacenter pairs each names (the Karma paper's Fig. 7: every link of one)."""
    return sorted({(f["at_s"], f["for_s"], f["extra_ms"]) for f in t.config.get("faults") or []
                   if f["kind"] == "delay"})


def congestion_frame(runs, tag: str = "rot") -> pd.DataFrame:
    """Each congestion event of each trial against the trial's uncongested seconds (the
    measured ones before its first fault): throughput and ``tag`` latency merged over each,
    and the degradation in percent (the Karma paper's Fig. 8: latency increase and
    throughput drop, averaged over the event). Whole seconds since the clients' start; an
    interval counts where its midpoint falls."""
    rows = []
    for t in trials_of(runs):
        events = _delay_events(t)
        if not events:
            continue
        d = t.config["duration"]
        measured = range(int(d["warmup_s"]), int(d["warmup_s"] + d["measure_s"]))
        spans = [(f["at_s"], f["at_s"] + f.get("for_s", float("inf"))) for f in t.config["faults"]]
        everything = [iv for ivs in t.intervals().values() for iv in ivs]

        def figures_over(seconds: set[int]) -> dict:
            ivs = [iv for iv in everything if t.second_of(iv) in seconds]
            ops = sum(iv.histogram.get_total_count() for iv in ivs if iv.tag in OPS)
            h = merge(ivs, tag, None)
            lat = latency(h, (50, 99))
            return {"seconds": len(seconds), "ops_per_s": ops / len(seconds) if seconds else None,
                    "reads": h.get_total_count(), "mean_ms": lat["mean"], "p50_ms": lat["p50"], "p99_ms": lat["p99"]}

        # uncongested: the measured seconds before the first fault (after one, paced clients
        # work off what it held back for a while, which is not the uncongested state)
        first = min(a for a, _ in spans)
        base = figures_over({s for s in measured if s < first})
        rows.append(t.ids() | {"event": "uncongested", "extra_ms": 0.0, **base,
                               "latency_increase_pct": 0.0, "throughput_drop_pct": 0.0})
        for at, for_s, extra in events:
            e = figures_over({s for s in measured if at <= s < at + for_s})
            change = _pct(e["ops_per_s"], base["ops_per_s"])
            rows.append(t.ids() | {"event": f"+{extra:g} ms", "extra_ms": float(extra), **e,
                                   "latency_increase_pct": _pct(e["mean_ms"], base["mean_ms"]),
                                   "throughput_drop_pct": -change if change is not None else None})
    return pd.DataFrame(rows, columns=CONGESTION_COLUMNS)


def _pct(value, base) -> float | None:
    return None if value is None or not base else round(100.0 * (value / base - 1.0), 1)


def latency_timeseries_frame(runs, tag: str = "rot") -> pd.DataFrame:
    """Mean ``tag`` latency per second since the clients' start (merged over the trial's
    datacenters), for trials with faults: how a fault moves latency over time."""
    rows = []
    for t in trials_of(runs):
        if not t.config.get("faults"):
            continue
        bins: dict[int, list] = {}
        for ivs in t.intervals().values():
            for iv in ivs:
                if iv.tag == tag:
                    bins.setdefault(t.second_of(iv), []).append(iv)
        for s in sorted(bins):
            rows.append(t.ids() | {"t_s": s, "mean_ms": latency(merge(bins[s], tag, None), ())["mean"]})
    return pd.DataFrame(rows, columns=["run", "experiment", "point", "trial", "system", "t_s", "mean_ms"])


def summary_frame(runs) -> pd.DataFrame:
    """One row per (run, point, trial, system): throughput over the window, ROT mean and
    percentiles, all-local fraction, wide-area rounds, write latencies, staleness, snapshot
    lag, schedule lag (paced clients) and errors, all recomputed from the logs; the cache
    hit rate, replication lag and replication left pending at the end of the trial's
    summary; plus the point's sweep values as columns."""
    rows = []
    for t in trials_of(runs):
        rot = t.merged("rot")
        rounds = t.merged("rot_rounds")
        n = rounds.get_total_count()
        committed = sum(t.merged(op).get_total_count() for op in OPS)
        errors = sum(t.merged(f"{op}_error").get_total_count() for op in OPS)
        st = latency(t.merged("staleness"), (50, 75, 99))
        row = t.ids() | t.point_values | {
            "throughput_ops_per_s": committed / t.measured_s if t.measured_s else None,
            "rot_count": rot.get_total_count(),
            **{f"rot_{k}_ms": v for k, v in latency(rot, PERCENTILES).items()},
            "all_local_fraction": rounds.get_count_at_value(0) / n if n else None,
            **{f"rounds_{r}": (rounds.get_count_at_value(r) if n else 0) for r in range(4)},
            "staleness_p50_ms": st["p50"], "staleness_p75_ms": st["p75"], "staleness_p99_ms": st["p99"],
            **{f"snapshot_lag_{k}_ms": v for k, v in latency(t.merged("snapshot_lag"), (50, 75, 99)).items()
               if k != "mean"},
            **{f"schedule_lag_{k}_ms": v for k, v in latency(t.merged("schedule_lag"), (50, 99)).items()
               if k != "mean"},
            "cache_hit_rate": (t.summary.get("cache") or {}).get("hit_rate"),
            "replication_pending_at_end": (t.summary.get("replication_pending_at_end") or {}).get("total"),
            "replication_lag_p50_ms": (t.summary.get("replication_lag_ms") or {}).get("p50"),
            "replication_lag_p99_ms": (t.summary.get("replication_lag_ms") or {}).get("p99"),
            "errors": errors,
        }
        for op in ("wot", "write"):
            h = t.merged(op)
            s = latency(h, (50, 99))
            row |= {f"{op}_count": h.get_total_count(), f"{op}_p50_ms": s["p50"], f"{op}_p99_ms": s["p99"]}
        rows.append(row)
    return pd.DataFrame(rows)


def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame without its HdrHistogram column: plain values, ready for CSV."""
    return frame.drop(columns=[c for c in ("histogram",) if c in frame.columns])


def percentiles_long(frame: pd.DataFrame) -> pd.DataFrame:
    """A latency frame in long form: one row per statistic (mean, p1, p50 ... p99.9) with
    its value in ``ms``; the identifying columns and ``count`` repeated."""
    stats = [c for c in frame.columns if c.endswith("_ms") and (c == "mean_ms" or c[0] == "p")]
    ids = [c for c in tidy(frame).columns if c not in stats]
    out = tidy(frame).melt(id_vars=ids, value_vars=stats, var_name="statistic", value_name="ms")
    out["statistic"] = out["statistic"].str.removesuffix("_ms").map(
        lambda s: s if s == "mean" else "p" + (s[1:3] + "." + s[3:] if len(s) > 3 else s[1:]))
    return out


def merged_of(trials, tag: str, dc: str = ALL) -> HdrHistogram:
    """One histogram of ``tag`` over several trials' windows (e.g. the trials of a point)."""
    h = new_histogram()
    for t in trials:
        h.add(t.merged(tag, dc))
    return h


def trial_throughput(t: Trial) -> float | None:
    """Committed operations per second over a trial's measured window."""
    return sum(t.merged(op).get_total_count() for op in OPS) / t.measured_s if t.measured_s else None


def _ms_mean(h: HdrHistogram) -> float | None:
    return latency(h, ())["mean"]


def _two_or_more(rounds: HdrHistogram) -> float | None:
    """The share of read-only transactions with two wide-area rounds or more: Eiger's third,
    resolving a pending transaction, comes after a second (K2 §VII-C: "take two wide-area
    rounds"; a local round is not counted)."""
    n = rounds.get_total_count()
    return (n - rounds.get_count_at_value(0) - rounds.get_count_at_value(1)) / n if n else None


def _mean_of(values) -> float | None:
    """The mean, or None when any is missing (a run summarized before it was recorded)."""
    vs = list(values)
    return None if not vs or any(v is None for v in vs) else sum(vs) / len(vs)


def pooled(trials) -> dict:
    """What the paper's claims and comparisons need of one system at one workload, over
    its trials: latencies from the trials' merged histograms (never averaged percentiles),
    the all-local and two-round fractions from their merged round counts, the hot keys'
    write rate and throughput
    as the mean of the trials' with its min and max."""
    rot, rounds = merged_of(trials, "rot"), merged_of(trials, "rot_rounds")
    n = rounds.get_total_count()
    r = latency(rot, (1, 50, 99))
    st = latency(merged_of(trials, "staleness"), (50, 75, 99))
    wot, write = latency(merged_of(trials, "wot"), (50, 99)), latency(merged_of(trials, "write"), (50, 99))
    rwt = merged_of(trials, "rwt")
    rw = latency(rwt, (50, 99))
    vis, at_read = new_histogram(), new_histogram()
    for t in trials:
        if "visibility_ms" in t.summary:  # the systems that record it (their servers' logs)
            vis.add(t.server_merged("visibility:"))
            at_read.add(t.server_merged("visibility_at_read:"))
    v, va = latency(vis, (50, 99)), latency(at_read, (50, 99))
    phase = merged_of(trials, "read_phase_blocked")
    for t in trials:
        if "read_blocked_ms" in t.summary:  # BPR: clients inside the server JVM record into its log
            phase.add(t.server_merged("read_phase_blocked"))
    tps = [x for x in (trial_throughput(t) for t in trials) if x is not None]
    return {
        "trials": len(trials), "rot_count": rot.get_total_count(),
        "rot_mean_ms": r["mean"], "rot_p1_ms": r["p1"], "rot_p50_ms": r["p50"], "rot_p99_ms": r["p99"],
        "all_local_fraction": rounds.get_count_at_value(0) / n if n else None,
        "two_round_fraction": _two_or_more(rounds),
        "max_wan_rounds": rounds.get_max_value() if n else None,
        "hot_key_writes_per_s": _mean_of((t.summary.get("hot_keys") or {}).get("writes_per_s") for t in trials),
        "staleness_p50_ms": st["p50"], "staleness_p75_ms": st["p75"], "staleness_p99_ms": st["p99"],
        "wot_p50_ms": wot["p50"], "wot_p99_ms": wot["p99"], "write_p50_ms": write["p50"], "write_p99_ms": write["p99"],
        "rwt_count": rwt.get_total_count(), "rwt_mean_ms": rw["mean"], "rwt_p50_ms": rw["p50"], "rwt_p99_ms": rw["p99"],
        "visibility_p50_ms": v["p50"], "visibility_p99_ms": v["p99"],
        "visibility_at_read_p50_ms": va["p50"], "visibility_at_read_p99_ms": va["p99"],
        "read_phase_blocked_mean_ms": _ms_mean(phase),
        "throughput_ops_per_s": sum(tps) / len(tps) if tps else None,
    }


SPREAD = ("rot_mean_ms", "rot_p50_ms", "rot_p99_ms", "all_local_fraction", "throughput_ops_per_s",
          "rwt_mean_ms", "rwt_p99_ms", "visibility_p50_ms", "visibility_p99_ms", "visibility_at_read_p50_ms",
          "visibility_at_read_p99_ms", "read_phase_blocked_mean_ms")


def pooled_frame(runs) -> pd.DataFrame:
    """One row per (run, experiment, point, system): ``pooled`` over its trials, and for
    the figures in SPREAD the trials' min and max (``<figure>_min``, ``<figure>_max``): the
    spread across trials, never folded into the value."""
    groups: dict[tuple, list] = {}
    for t in trials_of(runs):
        groups.setdefault((t.run, t.experiment, t.point, t.system), []).append(t)
    rows = []
    for (run, experiment, point, system), ts in groups.items():
        row = {"run": run, "experiment": experiment, "point": point, "system": system} | pooled(ts)
        per = [pooled([t]) for t in ts] if len(ts) > 1 else [row]
        for m in SPREAD:
            vals = [x[m] for x in per if x[m] is not None]
            row[f"{m}_min"], row[f"{m}_max"] = (min(vals), max(vals)) if vals else (None, None)
        rows.append(row)
    return pd.DataFrame(rows)


def _share_of_ones(h: HdrHistogram) -> float | None:
    n = h.get_total_count()
    return h.get_count_at_value(1) / n if n else None


def _everywhere(trials, tag: str) -> HdrHistogram:
    """``tag`` in the trials' windows from the clients' logs and the servers' (the client
    library records what it sees into its process's log: the server JVM's when the clients
    run inside it)."""
    h = new_histogram()
    for t in trials:
        h.add(t.merged(tag))
        h.add(merge(t.server_intervals(), tag, t.window_ms))
    return h


# Karma and COPS-PR: the shares pooled over trials from their 0/1 counts (and given per trial)
RING_SHARES = {"local_access": "access_local", "cache_miss_ratio": "cache_miss", "restricted": "ring_restricted"}


def rings_frame(runs) -> pd.DataFrame:
    """The Karma paper's figures (Figs. 6, 10, 11 and §6.4's miss ratio) per (run, point,
    system), pooled over trials: get latency (single-key reads) and write completion from
    merged histograms; local access (key reads served in the reader's datacenter), cache miss
    ratio (gets through the datacenter cache that it did not serve) and restricted share
    (reads made under a ring restriction) from the trials' merged 0/1 counts; dependency
    checks per put (put-after dependencies, each checked in every ring); messages per
    operation by link class and type (every delivered message over committed operations);
    and throughput as the trials' mean. The shares (RING_SHARES) and throughput also give
    the trials' min and max (``<figure>_min``, ``<figure>_max``). Systems without rings are
    left out."""
    groups: dict[tuple, list] = {}
    for t in trials_of(runs):
        if t.summary.get("rings"):
            groups.setdefault((t.run, t.point, t.system), []).append(t)
    rows = []
    for (run, point, system), ts in groups.items():
        get = latency(_everywhere(ts, "rot"), (50, 99))
        completion = latency(_everywhere(ts, "write_completion"), (50, 99))
        deps = _everywhere(ts, "put_deps")
        row = {"run": run, "point": point, "system": system, "trials": len(ts),
               "get_mean_ms": get["mean"], "get_p50_ms": get["p50"], "get_p99_ms": get["p99"],
               "write_completion_p50_ms": completion["p50"], "write_completion_p99_ms": completion["p99"],
               "dependencies_per_put": deps.get_mean_value() if deps.get_total_count() else None}
        for name, tag in RING_SHARES.items():
            each = [_everywhere([t], tag) for t in ts]
            pooled_counts = new_histogram()
            for h in each:
                pooled_counts.add(h)
            row[name] = _share_of_ones(pooled_counts)
            per = [v for v in map(_share_of_ones, each) if v is not None]
            row[f"{name}_min"], row[f"{name}_max"] = (min(per), max(per)) if per else (None, None)
        tps = [v for v in (trial_throughput(t) for t in ts) if v is not None]
        row["throughput_ops_per_s"] = sum(tps) / len(tps) if tps else None
        row["throughput_ops_per_s_min"], row["throughput_ops_per_s_max"] = (min(tps), max(tps)) if tps else (None,) * 2
        ops = sum(trial_throughput(t) * t.measured_s for t in ts)  # committed, as summaries' per_op counts them
        counts: dict[str, int] = {}
        for t in ts:
            for cls, types in (t.summary.get("messages") or {}).items():
                for type_, m in types.items():
                    counts[f"{cls}:{type_}"] = counts.get(f"{cls}:{type_}", 0) + m["count"]
        for name, n in sorted(counts.items()):
            row[f"msg_per_op:{name}"] = n / ops if ops else None
        rows.append(row)
    return pd.DataFrame(rows)


def cache_warmup_frame(runs) -> pd.DataFrame:
    """The datacenter cache's hit rate over the whole of each trial, warm-up included, in the
    summaries' buckets (``cache.over_time``): whether the cache was warm when the window
    began. One row per (run, point, trial, system, bucket); ``window_s`` is the warm-up's end."""
    rows = []
    for t in trials_of(runs):
        over = (t.summary.get("cache") or {}).get("over_time")
        if not over:
            continue
        for t_s, rate, n in zip(over["t_s"], over["hit_rate"], over["reads"]):
            rows.append(t.ids() | {"t_s": t_s, "bucket_s": over["bucket_s"], "hit_rate": rate, "reads": n,
                                   "window_s": t.config["duration"]["warmup_s"]})
    return pd.DataFrame(rows)


def rounds_frame(runs) -> pd.DataFrame:
    """Read-only transactions by wide-area rounds (0 = all-local), per (run, point, trial,
    system, dc): count and fraction of that trial's transactions in that dc."""
    rows = []
    for t in trials_of(runs):
        for dc in _dcs(t):
            h = t.merged("rot_rounds", dc)
            n = h.get_total_count()
            for r in range(4):
                c = h.get_count_at_value(r) if n else 0
                rows.append(t.ids() | {"dc": dc, "rounds": r, "count": c, "fraction": c / n if n else None})
    return pd.DataFrame(rows)


def staleness_frame(runs) -> pd.DataFrame:
    """Staleness percentiles in ms per (run, point, trial, system) (time since a
    newer version of the returned key was written in the reading datacenter)."""
    frame = latency_frame(runs, ops=("staleness",), per_dc=False)
    return frame.drop(columns=["op", "dc"])


def second_rounds_frame(runs) -> pd.DataFrame:
    """Per (run, point, trial) of RAD-like systems (Eiger's reads): the hot keys' write rate,
    throughput, the share of read-only transactions by wide-area rounds, and from the
    servers' counters (whole trial) the shares of round-one key reads whose validity a
    pending transaction cut short, of keys read again, and of those that waited for a
    pending transaction (docs/reproducing.md: RAD's second rounds)."""
    rows = []
    for t in trials_of(runs):
        stats = t.summary.get("server_stats") or {}
        keys = stats.get("round1_keys")
        if not keys:
            continue
        rounds = t.merged("rot_rounds")
        n = rounds.get_total_count()
        again = stats.get("round2_keys", 0)
        rows.append(t.ids() | {
            "hot_key_writes_per_s": (t.summary.get("hot_keys") or {}).get("writes_per_s"),
            "throughput_ops_per_s": t.summary.get("throughput_ops_per_s"),
            "rot_mean_ms": latency(t.merged("rot"), ())["mean"],
            **{f"rounds_{r}_share": rounds.get_count_at_value(r) / n if n else None for r in range(4)},
            "two_round_share": _two_or_more(rounds),
            "round1_pending_share": stats.get("round1_lvt_pending", 0) / keys,
            "read_again_share": again / keys,
            "read_again_waited_share": stats.get("round2_keys_pending", 0) / again if again else None,
        })
    return pd.DataFrame(rows)


def freshness_frame(runs, hot_keys: int = 10) -> pd.DataFrame:
    """Per (run, point, trial, system) of systems that read past snapshots (K2, PaRiS*):
    the write rate of the hottest keys (``hot_key_writes_per_s``), throughput, staleness and
    snapshot lag percentiles and the all-local fraction (docs/freshness.md)."""
    frame = summary_frame(runs)
    if frame.empty:
        return frame
    frame = frame[frame["snapshot_lag_p50_ms"].notna()].copy()
    rates = {(t.run, t.point, t.trial, t.system): t.hot_key_write_rate(hot_keys) for t in trials_of(runs)}
    frame["hot_key_writes_per_s"] = [rates.get((r.run, r.point, r.trial, r.system)) for r in frame.itertuples()]
    cols = ["run", "experiment", "point", "trial", "system", "hot_key_writes_per_s", "throughput_ops_per_s",
            "staleness_p50_ms", "staleness_p75_ms", "staleness_p99_ms", "snapshot_lag_p50_ms",
            "snapshot_lag_p75_ms", "snapshot_lag_p99_ms", "all_local_fraction", "cache_hit_rate"]
    return frame[cols].sort_values(["system", "hot_key_writes_per_s"]).reset_index(drop=True)
