"""Runs: a run directory's manifest, trials and raw logs, read (frames.py makes tidy
pandas frames of them).

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
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from k2bench.experiment import axis_set, for_system
from k2bench.systems import Systems, local as local_systems
from k2bench import checker
from k2bench.histograms import new_histogram
from k2bench.summary import OPS, Interval, hot_keys, iter_log, latency, selected  # noqa: F401  (OPS, latency: load.OPS)

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


# A directory where decoded logs are kept between processes (``make analyze`` sets it for its
# notebooks): each notebook is a kernel of its own, and decoding the logs again in each took
# most of a report's time outside drawing (claims.table: 3.2 of its 4.8 s).
CACHE_ENV = "K2BENCH_ANALYSIS_CACHE"


def _read_compact(path: Path, tolerant: bool = False) -> list[Interval]:
    """A log's intervals, each compacted as soon as it is decoded; kept in $K2BENCH_ANALYSIS_CACHE
    when it is set, under the log's path, size and modification time."""
    cache = os.environ.get(CACHE_ENV)
    if not cache:
        return _decode_compact(path, tolerant)
    st = Path(path).stat()
    key = hashlib.sha1(f"{Path(path).resolve()}|{st.st_size}|{st.st_mtime_ns}|{tolerant}".encode()).hexdigest()
    file = Path(cache) / f"{key[:24]}.npz"
    if file.exists():
        return _load_decoded(file)
    ivs = _decode_compact(path, tolerant)
    _save_decoded(file, ivs)
    return ivs


def _load_decoded(file: Path) -> list[Interval]:
    with np.load(file) as npz:  # each npz[name] reads the array again: once each
        z = {name: npz[name] for name in npz.files}
    bounds, index, count = z["offsets"], z["index"], z["count"]
    return [Interval(str(tag) if tagged else None, float(a), float(b), Buckets(index[lo:hi], count[lo:hi]))
            for tag, tagged, a, b, lo, hi in zip(z["tags"], z["tagged"], z["start"], z["end"], bounds[:-1], bounds[1:])]


def _save_decoded(file: Path, ivs: list[Interval]) -> None:
    def joined(part: str) -> np.ndarray:
        return np.concatenate([getattr(iv.histogram, part) for iv in ivs] or [np.zeros(0)]).astype(np.int64)

    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, tags=np.array([iv.tag or "" for iv in ivs], dtype=str),
             tagged=np.array([iv.tag is not None for iv in ivs], dtype=bool),
             start=np.array([iv.start_ms for iv in ivs], dtype=float),
             end=np.array([iv.end_ms for iv in ivs], dtype=float),
             offsets=np.cumsum([0] + [len(iv.histogram.index) for iv in ivs], dtype=np.int64),
             index=joined("index"), count=joined("count"))
    os.replace(tmp, file)  # whole or not at all: another process may read it next


def _decode_compact(path: Path, tolerant: bool) -> list[Interval]:
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
        measurement window (the summary's ``hot_keys`` for the ten hottest, else from the
        clients' operation histories; None without them). A key's version churn, which is
        what a reader at an older snapshot falls behind."""
        hot = self.summary.get("hot_keys")
        if hot and hot.get("keys") == n:
            return hot["writes_per_s"]
        paths = sorted((self.dir / "clients").glob("history-client-*.jsonl"))
        if not paths:
            return None
        return (hot_keys(checker.load_history(paths), self.window_ms, n) or {}).get("writes_per_s")


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
    """Every system analysis has met, for labels, colours, order and the papers' systems:
    this checkout's jar's descriptors, with each loaded run's own (its manifest's
    ``systems_info``) over them; where two runs describe one system differently, the run
    loaded last wins (labels are display facts, the same in every run of a jar)."""
    global _SYSTEMS
    if _SYSTEMS is None:
        _SYSTEMS = local_systems()
    return _SYSTEMS


def _met(manifest: dict, where: Path) -> None:
    global _SYSTEMS
    known = systems()
    mine = manifest.get("systems_info") or []
    unknown = [s for s in manifest.get("systems", []) if s not in known and not any(d.get("name") == s for d in mine)]
    if unknown:  # a run from before runs recorded their descriptors, and no jar to ask
        print(f"warning: {where}: nothing describes {', '.join(unknown)} (the run predates systems_info in "
              "manifests and no jar is built): labels, colours and the papers' claims need `make build`",
              file=sys.stderr)
    _SYSTEMS = known.merged(Systems.from_json(mine))


def load_run(path: str | Path, name: str | None = None) -> Run:
    """One run directory (a ``runs/latest`` link is followed); ``name``: what its trials
    are labelled with (default: the folder's name)."""
    d = run_path(path)
    name = name or d.name
    manifest_path = d / "manifest.json"
    if not manifest_path.exists():
        raise RunError(f"{path}: not a run directory (no manifest.json)")
    manifest = json.loads(manifest_path.read_text())
    _met(manifest, d)
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
