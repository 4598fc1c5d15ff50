"""Peak throughput of the load sweeps among runs, picked as ``make bench-throughput`` picks
it (k2bench/bench.py's rules replayed on the points, or the bench's own climbs beside a
bench run): the K2 paper's Fig. 9 claim and figure read it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd


PEAK_COLUMNS = ["run", "setting", "system", "point", "ops_per_s", "rot_p50_ms", "rot_p99_ms", "points",
                "degraded_points", "is_peak", "stop"]
RETRY_DIR = re.compile(r"\.retry\d+$")


def _bench_record(run_dir: Path) -> dict | None:
    """The bench's throughput.json beside a setting's run directory (``<bench>/<setting>/``),
    read once per run; None for any other run."""
    path = run_dir.parent / "throughput.json"
    try:
        return json.loads(path.read_text()) if path.exists() else None
    except ValueError:
        return None


def _bench_climbs(run_dir: Path, record: dict | None) -> dict | None:
    """The climbs ``make bench-throughput`` recorded for the setting whose run directory
    this is, by system; None for any other run."""
    from k2bench import bench
    if record is None:
        return None
    return {c["system"]: c for c in record.get("climbs") or [] if bench.slug(c["setting"]) == run_dir.name}


def _replay(points: list[dict]) -> tuple[list[dict], str | None, bool]:
    """A load sweep's points in order of load, stopped by the bench's rules
    (k2bench.bench.stop_reason: emulation degraded, throughput fell below 95% of the best,
    ROT p99 past 5x its low-load value): the points before the stop, why it stopped (None:
    the sweep ran out first, so its best point is not a peak), and whether the point that
    stopped it was disturbed (the bench would have measured it again: not a peak either)."""
    from k2bench import bench
    passed: list[dict] = []
    for q in points:
        why = bench.stop_reason(passed + [q])
        if why:
            return passed, why, bool(q.get("disturbed"))
        passed.append(q)
    return passed, None, False


def peaks(runs, ws: list) -> pd.DataFrame:
    """Peak throughput per (run, setting, system) of the load sweeps among the runs (a sweep
    over clients.threads_per_dc), picked as ``make bench-throughput`` picks it: the points
    are taken in order of load until one breaks a rule (``_replay``), and the peak is the
    best point before it. ``is_peak`` is False when no point stopped the sweep (its best
    point is its top: throughput may go on rising), when the point that stopped it was
    disturbed by steal, and for a failed climb or an interrupted bench's unfinished one
    (those without any point are listed with no ops/s). A setting of a bench run (a run
    directory beside the bench's throughput.json) takes the bench's own climb instead, whose
    retries of disturbed points live in other directories; those ``<setting>.retry<k>``
    directories add no peak of their own. ``setting`` is the paper setting, or
    "<experiment> (<non-load values>)"."""
    runs = runs if isinstance(runs, list) else [runs]
    dirs = {r.name: Path(r.dir) for r in runs}
    records = {name: _bench_record(d) for name, d in dirs.items()}
    groups: dict[tuple, list[dict]] = {}
    for w in ws:
        if "clients.threads_per_dc" not in w.sweep_axes:
            continue
        if w.run in dirs and RETRY_DIR.search(dirs[w.run].name) and records[w.run] is not None:
            continue
        for system, p in w.systems.items():
            if p["throughput_ops_per_s"] is not None:
                groups.setdefault((w.run, w.key, system), []).append({
                    "point": w.point, "threads": w.point_values.get("clients.threads_per_dc"),
                    "ops_per_s": p["throughput_ops_per_s"], "rot_p50_ms": p["rot_p50_ms"],
                    "rot_p99_ms": p["rot_p99_ms"], "degraded": w.degraded.get(system, False),
                    "disturbed": w.disturbed.get(system, False), "lateness_p99_ms": w.lateness.get(system)})
    climbs = {name: _bench_climbs(d, records[name]) for name, d in dirs.items()}
    interrupted = {name for name, rec in records.items() if rec and rec.get("interrupted")}
    rows = []
    for (run, setting, system), points in groups.items():
        points.sort(key=lambda q: q["threads"])
        row = {"run": run, "setting": setting, "system": system, "points": len(points),
               "degraded_points": sum(bool(q["degraded"]) for q in points)}
        none = {"point": None, "ops_per_s": float("nan"), "rot_p50_ms": None, "rot_p99_ms": None, "is_peak": False}
        climb = (climbs.get(run) or {}).get(system)
        if climb is not None:
            peak = climb.get("peak")
            why = climb.get("failed") or climb.get("stop") or "the ladder ran out: not a peak"
            if not peak:
                rows.append(row | none | {"stop": why})
                continue
            # the p50 is this directory's unless the bench's peak is a retry's attempt
            here = str(peak.get("dir", "")).startswith(Path(dirs[run]).name + "/")
            mine = next((q for q in points if q["threads"] == peak["threads"]), {}) if here else {}
            rows.append(row | {"point": f"threads_per_dc={peak['threads']}", "ops_per_s": peak["ops_per_s"],
                               "rot_p50_ms": mine.get("rot_p50_ms"), "rot_p99_ms": peak.get("rot_p99_ms"),
                               "is_peak": bool(climb.get("is_peak")) and not climb.get("failed"), "stop": why})
            continue
        passed, why, shaken = _replay(points)
        if run in interrupted:
            why, shaken = "the bench was interrupted before this climb finished: not a peak", False
            ok = False
        else:
            ok = why is not None and not shaken
            why = (why + " while the hypervisor took CPU (the bench measures it again): not a peak") if shaken \
                else why or "the sweep ran out before any rule stopped it: its top point is not a peak"
        if not passed:
            rows.append(row | none | {"stop": why})
            continue
        best = max(passed, key=lambda q: q["ops_per_s"])
        rows.append(row | {k: best[k] for k in ("point", "ops_per_s", "rot_p50_ms", "rot_p99_ms")}
                    | {"is_peak": ok, "stop": why})
    return pd.DataFrame(rows, columns=PEAK_COLUMNS)
