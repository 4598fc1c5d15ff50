"""Runs into tidy pandas frames.

A run directory holds a manifest (the resolved experiment, its trials and where they
live) and, per trial, the clients' raw HdrHistogram logs. Everything here is derived from
those logs: latency distributions are merged interval by interval and client by client
(never by averaging percentiles), and warm-up and cool-down are trimmed with the
durations in the run's manifest, counted from the trial's common client start.

Frames are tidy: one row per observation, with the identifying columns ``run``,
``experiment``, ``point`` (sweep point id, "" without a sweep), ``trial``, ``system`` and,
where it applies, ``dc`` ("all" for every datacenter together) and ``op``.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram

from k2bench.experiment import axis_set, for_system
from k2bench.systems import Systems, local as local_systems
from k2bench.summary import BASE_OPS, OPS, Interval, iter_log, latency, new_histogram, selected
from k2bench.verdicts import HISTOGRAM_PRECISION, versus  # noqa: F401 - analysis's verdicts are the harness's

ALL = "all"
PERCENTILES = (1, 50, 75, 90, 99, 99.9)


class RunError(Exception):
    """A directory that is not a usable run; the message says what is missing."""


@dataclass(frozen=True)
class Buckets:
    """An interval's histogram kept as its non-zero buckets (``new_histogram``'s layout).
    A decoded HdrHistogram holds every bucket, ~180 KB at its range and precision, and a
    trial has thousands of intervals: a six-run report (make figures) held more than 24 GiB
    of them and was killed for memory; this keeps the few dozen buckets an interval uses."""
    index: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, h: HdrHistogram) -> Buckets:
        if (h.sub_bucket_count, h.unit_magnitude) != _LAYOUT:  # a log of another precision
            h = _into_layout(h)
        counts = np.ctypeslib.as_array(h.counts)  # a view: a decoded log's may be shorter than counts_len
        index = np.flatnonzero(counts)
        return cls(index, counts[index].astype(np.int64))

    def get_total_count(self) -> int:
        return int(self.count.sum())


_REFERENCE = new_histogram()
_LAYOUT = (_REFERENCE.sub_bucket_count, _REFERENCE.unit_magnitude)


def _into_layout(h: HdrHistogram) -> HdrHistogram:
    out = new_histogram()
    out.add(h)  # value by value where the layouts differ
    return out


def _read_compact(path: Path, tolerant: bool = False) -> list[Interval]:
    """A log's intervals, each compacted as soon as it is decoded."""
    return [dataclasses.replace(iv, histogram=Buckets.of(iv.histogram)) for iv in iter_log(path, tolerant)]


def merge(intervals: list[Interval], tag: str, window: tuple[float, float] | None) -> HdrHistogram:
    """One histogram of everything recorded under ``tag`` inside ``window`` (ms, [start,
    end)), from compacted intervals: bucket counts are summed, then recorded once per
    bucket at its value, which lands in the same bucket, so counts, percentiles, mean, min
    and max are those of merging the decoded histograms (k2bench.summary.merge)."""
    out = new_histogram()
    total = np.zeros(out.counts_len, np.int64)
    for iv in selected(intervals, tag, window):
        total[iv.histogram.index] += iv.histogram.count
    for i in np.flatnonzero(total):
        out.record_value(out.get_value_from_index(int(i)), int(total[i]))
    return out


@dataclass
class Trial:
    """One system at one sweep point, one trial: its clients' logs and its window."""
    run: str
    experiment: str
    system: str
    point: str
    point_values: dict
    trial: int
    dir: Path
    config: dict
    start_ms: float
    summary: dict
    logs: dict[str, list[Path]]  # datacenter -> its client processes' HdrHistogram logs
    _intervals: dict[str, list[Interval]] | None = field(default=None, repr=False)
    _server_intervals: list[Interval] | None = field(default=None, repr=False)
    _merged: dict = field(default_factory=dict, repr=False)

    @property
    def window_ms(self) -> tuple[float, float]:
        """The measurement window: after warm-up, before cool-down (manifest durations)."""
        d = self.config["duration"]
        begin = self.start_ms + 1000 * d["warmup_s"]
        return begin, begin + 1000 * d["measure_s"]

    @property
    def measured_s(self) -> float:
        return self.config["duration"]["measure_s"]

    # What qualifies the trial's numbers, read from its summary (report and compare both show them).
    @property
    def checked_ops(self) -> int | None:
        return (self.summary.get("consistency") or {}).get("checked_ops")

    @property
    def violations(self) -> int | None:
        """Consistency violations; None when the history was not checked."""
        return (self.summary.get("consistency") or {}).get("violations")

    @property
    def failed_ops(self) -> int:
        return self.summary.get("errors") or 0

    @property
    def lateness_p99(self) -> float | None:
        """The emulation's worst p99 lateness over DC pair classes, ms."""
        return (self.summary.get("emulation_lateness_ms") or {}).get("worst_p99")

    @property
    def degraded(self) -> bool:
        return bool((self.summary.get("emulation_lateness_ms") or {}).get("degraded"))

    @property
    def disturbed(self) -> bool:
        """The hypervisor took more than its limit of the machine's time in the window
        (k2bench.cpu.STEAL_LIMIT): a rule this trial broke says nothing of the system."""
        from k2bench import cpu
        return (cpu.steal_share(self.summary.get("cpu")) or 0.0) > cpu.STEAL_LIMIT

    def intervals(self) -> dict[str, list[Interval]]:
        """Every interval of every client log, by datacenter (read once, kept as Buckets)."""
        if self._intervals is None:
            self._intervals = {dc: [iv for p in ps for iv in _read_compact(p)]
                               for dc, ps in sorted(self.logs.items())}
        return self._intervals

    def server_intervals(self) -> list[Interval]:
        """Every interval histogram of the trial's server logs (``servers/*.hlog``: what
        servers record, e.g. visibility latency), read once; a log cut short by a stopped
        server is read up to its last whole line. Kept as Buckets."""
        if self._server_intervals is None:
            self._server_intervals = [iv for p in sorted((self.dir / "servers").glob("*.hlog"))
                                      for iv in _read_compact(p, tolerant=True)]
        return self._server_intervals

    def server_merged(self, prefix: str) -> HdrHistogram:
        """Everything the servers recorded under tags starting with ``prefix`` in the window
        (``visibility:`` merges every datacenter's)."""
        ivs = self.server_intervals()
        h = new_histogram()
        for tag in sorted({iv.tag for iv in ivs if iv.tag.startswith(prefix)}):
            h.add(merge(ivs, tag, self.window_ms))
        return h

    def merged(self, tag: str, dc: str = ALL, window: bool = True) -> HdrHistogram:
        """Everything recorded under ``tag`` (in one datacenter, or all) in the window.
        Memoized: callers must not modify the histogram (merge it into a new one)."""
        key = (tag, dc, window)
        if key not in self._merged:
            ivs = self.intervals()
            chosen = [iv for d, lst in ivs.items() if dc in (ALL, d) for iv in lst]
            self._merged[key] = merge(chosen, tag, self.window_ms if window else None)
        return self._merged[key]

    def second_of(self, iv: Interval) -> int:
        """The whole second since the clients' start in which an interval's midpoint falls."""
        return int((iv.midpoint_ms - self.start_ms) // 1000)

    def ids(self) -> dict:
        return {"run": self.run, "experiment": self.experiment, "point": self.point,
                "trial": self.trial, "system": self.system}

    def hot_key_write_rate(self, n: int = 10) -> float | None:
        """Writes per second of each of the ``n`` most written keys, on average, in the
        measurement window (from the clients' operation histories; None without them).
        A key's version churn, which is what a reader at an older snapshot falls behind."""
        paths = sorted((self.dir / "clients").glob("history-client-*.jsonl"))
        if not paths:
            return None
        begin, end = self.window_ms
        counts: dict[str, int] = {}
        for p in paths:
            with p.open() as f:
                for line in f:
                    if '"w"' not in line:
                        continue
                    o = json.loads(line)
                    if o.get("ok", True) and begin <= o["t0"] < end:
                        for k in o.get("w") or {}:
                            counts[k] = counts.get(k, 0) + 1
        if not counts:
            return 0.0
        top = sorted(counts.values(), reverse=True)[:n]
        return sum(top) / len(top) / ((end - begin) / 1000.0)


@dataclass
class Run:
    dir: Path
    manifest: dict
    trials: list[Trial]
    label: str | None = None  # the name it goes by when another run has the same folder name
    listed: int | None = None  # trials the manifest lists; ``trials`` holds those with a summary

    @property
    def name(self) -> str:
        return self.label or self.dir.name

    @property
    def experiment(self) -> str:
        return self.manifest.get("experiment", "?")

    @property
    def deployment(self) -> str:
        """local, emulab, ec2 (the provider of a remote inventory) or ssh."""
        d = self.manifest.get("deployment") or {}
        return str(d.get("provider") or d.get("kind") or "local")


def _point_config(config: dict, point_values: dict, system: str | None = None) -> dict:
    """A point's configuration (its sweep values applied), as ``system`` runs it (the
    experiment's per_system overrides) when given."""
    cfg = copy.deepcopy(config)
    for axis, value in point_values.items():
        axis_set(cfg, axis, value)
    return for_system(cfg, system) if system else cfg


REPO = Path(__file__).resolve().parent.parent


def run_path(path: str | Path) -> Path:
    """A run directory as given; a relative path that does not exist from the working
    directory is taken from the repository (``runs/latest`` from a notebook's folder)."""
    p = Path(path)
    if not p.is_absolute() and not p.exists() and (REPO / p).exists():
        p = REPO / p
    return p.resolve()


_SYSTEMS: Systems | None = None


def systems() -> Systems:
    """Every system analysis has met, for labels, colours and order: this checkout's jar's
    descriptors, each loaded run's own (its manifest's ``systems_info``) over them."""
    global _SYSTEMS
    if _SYSTEMS is None:
        _SYSTEMS = local_systems()
    return _SYSTEMS


def _met(manifest: dict) -> None:
    global _SYSTEMS
    _SYSTEMS = systems().merged(Systems.from_json(manifest.get("systems_info") or []))


def load_run(path: str | Path, name: str | None = None) -> Run:
    """One run directory (a ``runs/latest`` link is followed); ``name``: what its trials
    are labelled with (default: the folder's name)."""
    d = run_path(path)
    name = name or d.name
    manifest_path = d / "manifest.json"
    if not manifest_path.exists():
        raise RunError(f"{path}: not a run directory (no manifest.json)")
    manifest = json.loads(manifest_path.read_text())
    _met(manifest)
    config = manifest.get("config")
    if not config or "duration" not in config:
        raise RunError(f"{path}: manifest.json has no resolved config with durations")
    entries = manifest.get("trials")
    if entries is None:  # runs made before the manifest listed its trials
        entries = [{"dir": str(p.parent.relative_to(d))} for p in sorted(d.glob("**/summary.json"))
                   if (p.parent / "clients").is_dir()]
    trials, seen = [], set()
    for e in entries:
        if e["dir"] in seen:
            continue  # listed twice (manifests of benches before 2026-11-26): one trial, read once
        seen.add(e["dir"])
        tdir = d / e["dir"]
        summary_path = tdir / "summary.json"
        if not summary_path.exists():
            continue  # not run (an interrupted run): nothing to analyse
        summary = json.loads(summary_path.read_text())
        if "client_logs" in e:
            logs = {dc: [tdir / rel for rel in rels] for dc, rels in e["client_logs"].items()}
        else:  # runs made before the manifest listed its client logs: one per datacenter
            logs = {p.stem.removeprefix("client-"): [p] for p in sorted((tdir / "clients").glob("client-*.hlog"))}
        start = summary.get("start_ms", summary.get("timeseries", {}).get("origin_ms"))
        if start is None:
            raise RunError(f"{summary_path}: no start_ms; cannot place the measurement window")
        values = e.get("point_values", summary.get("point_values", {}))
        system = e.get("system", summary["system"])
        trials.append(Trial(run=name, experiment=manifest.get("experiment", "?"),
                            system=system, point=e.get("point", summary.get("point", "")),
                            point_values=values, trial=e.get("trial", summary.get("trial", 1)), dir=tdir,
                            config=_point_config(config, values, system), start_ms=float(start), summary=summary,
                            logs=logs))
    return Run(d, manifest, trials, label=None if name == d.name else name, listed=len(seen))


def load_runs(paths) -> list[Run]:
    """Several runs; a run given twice (e.g. by its name and through runs/latest) counts once.
    Runs are told apart by name everywhere (frames, figures, claims), so two folders of one
    name (a bench's ``default`` setting of two benches) are named with their parent too."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    unique = list(dict.fromkeys(run_path(p) for p in paths))
    counts: dict[str, int] = {}
    for p in unique:
        counts[p.name] = counts.get(p.name, 0) + 1
    names = [f"{p.parent.name}/{p.name}" if counts[p.name] > 1 else p.name for p in unique]
    if len(set(names)) < len(names):  # same parent name too: number them
        names = [f"{n} #{i + 1}" for i, n in enumerate(names)]
    return [load_run(p, n) for p, n in zip(unique, names)]


def trials_of(runs) -> list[Trial]:
    return [t for r in (runs if isinstance(runs, list) else [runs]) for t in r.trials]


def _pkey(p: float) -> str:
    return "p" + (str(p).replace(".", "") if p != int(p) else str(int(p)))


def _dcs(t: Trial) -> list[str]:
    return [ALL, *sorted(t.logs)]


# ------------------------------------------------------------------ frames

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
    values, fractions, seen = [], [], 0
    for item in h.get_recorded_iterator():
        seen += item.count_at_value_iterated_to
        values.append(item.value_iterated_to / scale)
        fractions.append(seen / total)
    return pd.DataFrame({"value": values, "fraction": fractions})


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


def pooled(trials) -> dict:
    """What the paper's claims and comparisons need of one system at one workload, over
    its trials: latencies from the trials' merged histograms (never averaged percentiles),
    the all-local and two-round fractions from their merged round counts, and throughput
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
        "two_round_fraction": rounds.get_count_at_value(2) / n if n else None,
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


PLACEMENT_PHASES = ("normal", "cold", "warm", "failure")


def _placement_reports(runs) -> list[tuple[Run, dict]]:
    """Each run's placement report (``placement.json``, written by ``k2bench placement-report``
    and at the end of a run that sweeps or sets topology.place), if it has one."""
    out = []
    for r in runs if isinstance(runs, list) else [runs]:
        path = r.dir / "placement.json"
        if path.exists():
            out.append((r, json.loads(path.read_text())))
    return out


def _is_percentile(name: str) -> bool:
    """p50, p99.9: a percentile's key in placement.json."""
    return name[:1] == "p" and name[1:].replace(".", "", 1).isdigit()


def placement_frame(runs) -> pd.DataFrame:
    """Per run, system, placement, window (normal, cold, warm; failure, with the killed
    datacenter) and source (measured; predicted: the latency model): mean and percentiles of
    single-key read latency (ms), the reads measured and the trials pooled (a report's
    groups: each window's reads of every trial in one histogram; an older report's trials)."""
    rows = []
    for r, rep in _placement_reports(runs):
        entries = rep.get("groups")
        if entries is None:  # before the groups: a row per trial, the kill the run's
            killed = (rep.get("killed") or {}).get("dc")
            entries = [{"system": t["system"], "placement": t["placement"], "phase": phase, "trials": 1,
                        "killed": killed if phase == "failure" else None,
                        "measured": t["measured"].get(phase), "predicted": t["predicted"].get(phase)}
                       for t in rep["trials"] for phase in ("normal", "failure")]
        for g in entries:
            for source in ("measured", "predicted"):
                s = g.get(source)
                if not s or s.get("mean") is None:
                    continue
                rows.append({"run": r.name, "system": g["system"], "placement": g["placement"], "phase": g["phase"],
                             "killed": g.get("killed"), "trials": g.get("trials", 1), "source": source,
                             "reads": s.get("reads"), "remote_share": s.get("remote_share"), "mean_ms": s["mean"],
                             **{k + "_ms": v for k, v in s.items() if _is_percentile(k)}})
    return pd.DataFrame(rows)


def placement_buckets_frame(runs) -> pd.DataFrame:
    """Per run, system, placement and key bucket of a table placement: the model's predicted
    and the measured mean single-key read latency (ms) in normal operation, and the reads."""
    rows = [{"run": r.name, "system": t["system"], "placement": t["placement"], **b}
            for r, rep in _placement_reports(runs) for t in rep["trials"] for b in t["buckets"]]
    return pd.DataFrame(rows)


def placement_killed(runs) -> str | None:
    """The datacenter(s) the placement runs killed (the first run's that killed any)."""
    for _, rep in _placement_reports(runs):
        if rep.get("killed"):
            return ", ".join(rep["killed"].get("dcs") or [rep["killed"]["dc"]])
    return None


def _of_paris(compared: dict, paris_is_b: bool = False) -> str:
    """``versus``'s verdict said of PaRiS (system a, or b with ``paris_is_b``)."""
    lower, higher = ("PaRiS higher", "PaRiS lower") if paris_is_b else ("PaRiS lower", "PaRiS higher")
    return {"a lower": lower, "a higher": higher}.get(compared["verdict"], compared["verdict"])


def paris_ratios_frame(runs) -> pd.DataFrame:
    """The PaRiS paper's headline ratios per (run, experiment, point), from the trials'
    merged histograms with their spread over trials: BPR's mean transaction latency over
    PaRiS's (Fig. 2: up to 5.91x, 20.56x), PaRiS's over NoCC's (the same), their
    throughputs, and the update visibility gap (Fig. 5), PaRiS's p50 and p99 against BPR's
    as measured here and as its authors' code records it (at read)."""
    pooled = pooled_frame(runs)
    rows = []
    if pooled.empty:
        return pd.DataFrame(rows)
    for (run, experiment, point), g in pooled.groupby(["run", "experiment", "point"], sort=False):
        by = {r["system"]: r for _, r in g.iterrows()}
        if "paris" not in by:
            continue
        paris = by["paris"]
        row = {"run": run, "experiment": experiment, "point": point, "trials": int(paris["trials"])}
        for system in ("paris", "bpr", "nocc"):
            if system in by:
                for m in ("rwt_mean_ms", "throughput_ops_per_s", "visibility_p50_ms", "visibility_p99_ms"):
                    row[f"{system}_{m}"] = by[system][m]
                    row[f"{system}_{m}_min"], row[f"{system}_{m}_max"] = by[system][f"{m}_min"], by[system][f"{m}_max"]
        if "bpr" in by:
            bpr = by["bpr"]
            v = versus(bpr, paris, "rwt_mean_ms")
            row |= {"bpr_over_paris_latency": v["ratio"], "bpr_over_paris_latency_min": v["ratio_min"],
                    "bpr_over_paris_latency_max": v["ratio_max"],
                    "latency_paris_vs_bpr": _of_paris(v, paris_is_b=True)}
            t = versus(paris, bpr, "throughput_ops_per_s")
            row |= {"paris_over_bpr_throughput": t["ratio"], "paris_over_bpr_throughput_min": t["ratio_min"],
                    "paris_over_bpr_throughput_max": t["ratio_max"],
                    "throughput_paris_vs_bpr": _of_paris(t)}
            for q in ("p50", "p99"):
                row[f"visibility_gap_{q}_ms"] = paris[f"visibility_{q}_ms"] - bpr[f"visibility_{q}_ms"] \
                    if pd.notna(paris[f"visibility_{q}_ms"]) and pd.notna(bpr[f"visibility_{q}_ms"]) else None
                at = bpr.get(f"visibility_at_read_{q}_ms")
                row[f"bpr_visibility_at_read_{q}_ms"] = at
                row[f"visibility_gap_at_read_{q}_ms"] = paris[f"visibility_{q}_ms"] - at \
                    if pd.notna(paris[f"visibility_{q}_ms"]) and at is not None and pd.notna(at) else None
        if "nocc" in by:
            v = versus(paris, by["nocc"], "rwt_mean_ms")
            row |= {"paris_over_nocc_latency": v["ratio"], "paris_over_nocc_latency_min": v["ratio_min"],
                    "paris_over_nocc_latency_max": v["ratio_max"],
                    "latency_paris_vs_nocc": _of_paris(v)}
            t = versus(paris, by["nocc"], "throughput_ops_per_s")
            row |= {"paris_over_nocc_throughput": t["ratio"],
                    "throughput_paris_vs_nocc": _of_paris(t)}
        rows.append(row)
    # The paper's throughput ratios (1.47x, 1.46x over BPR) compare peaks: each system's
    # highest pooled throughput over the sweep, with that point's spread over trials.
    for (run, experiment), g in pooled.groupby(["run", "experiment"], sort=False):
        peak = {s: r.loc[r["throughput_ops_per_s"].idxmax()] for s, r in g.groupby("system")
                if r["throughput_ops_per_s"].notna().any()}
        if "paris" not in peak or len(g["point"].unique()) < 2:
            continue
        row = {"run": run, "experiment": experiment, "point": "peak (each system's best point)",
               "trials": int(peak["paris"]["trials"])}
        for system, r in peak.items():
            row[f"{system}_peak_point"] = r["point"]
            for x in ("", "_min", "_max"):
                row[f"{system}_throughput_ops_per_s{x}"] = r[f"throughput_ops_per_s{x}"]
        for other in ("bpr", "nocc"):
            if other in peak:
                t = versus(peak["paris"], peak[other], "throughput_ops_per_s")
                row |= {f"paris_over_{other}_throughput": t["ratio"],
                        f"paris_over_{other}_throughput_min": t["ratio_min"],
                        f"paris_over_{other}_throughput_max": t["ratio_max"],
                        f"throughput_paris_vs_{other}": _of_paris(t)}
        rows.append(row)
    return pd.DataFrame(rows)

