"""Predicted beside measured read latency for runs of latency-aware placement (the
``placement`` experiment; ``k2bench placement-report RUN``): for every trial, the latency
model of k2bench.placement evaluated on the trial's own placement (its table, or for a hash
placement the table the launcher writes of it) and the experiment's expected demand, beside
the single-key read-only transactions the trial's clients measured, in normal operation
(warm-up end to the kill) and after the experiment's kill fault (from 2 s after it to the end
of the measurement, the killed datacenter's own clients left out, as the model leaves out
its demand). Written to ``placement.json`` in the run directory, with per-bucket figures for
table placements."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from . import placement
from .errors import ConfigError

SETTLE_S = 2.0  # after the kill: clients' fail-over (K2's failover timeout) is not the placement's
REPORT_FILE = "placement.json"
DC_CACHE_SYSTEMS = ("k2",)  # systems whose reads of non-local keys a datacenter cache serves


def lru_hits(rates: np.ndarray, capacity: float) -> np.ndarray:
    """Che's approximation of an LRU cache of ``capacity`` keys under independent requests at
    ``rates``: key k is in the cache with probability 1 - exp(-rate_k T), where the
    characteristic time T fills the cache, sum_k (1 - exp(-rate_k T)) = capacity (found by
    bisection). All ones when every key fits."""
    live = rates > 0
    if capacity <= 0 or not live.any():
        return np.zeros_like(rates)
    if capacity >= live.sum():
        return live.astype(float)
    lo, hi = 0.0, 1.0
    while (1 - np.exp(-rates * hi)).sum() < capacity:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (1 - np.exp(-rates * mid)).sum() < capacity else (lo, mid)
    return 1 - np.exp(-rates * hi)


def cached_latency(lat: np.ndarray, draws: np.ndarray, local: np.ndarray, capacity: float, ops_per_s: float,
                   write_fraction: float, window_s: tuple[float, float]) -> np.ndarray:
    """K2's read path with its datacenter cache (K2 §III-A: non-replica values cached after a
    fetch, LRU, ``capacity`` keys per datacenter): a datacenter's read of a non-local key costs
    its wide-area latency only on a miss. A read of key k in datacenter i at time t hits when
    i read k since k's last write anywhere (a write makes the next read need the new version)
    and k is still cached: with i's reads of k at rate r and k's writes at rate w (Poisson;
    ``draws`` per datacenter and key, ``ops_per_s`` per datacenter split by
    ``write_fraction``), P = r / (r + w) (1 - exp(-(r + w) t)) from an empty cache at the
    start, averaged over the measurement ``window_s``, times the probability that LRU still
    holds k (``lru_hits``, Che's approximation, at steady state)."""
    out = lat.copy()
    a, b = window_s
    w = write_fraction * ops_per_s * draws.sum(axis=1)            # key k's writes per second, all DCs
    for i in range(lat.shape[1]):
        remote = ~local[:, i]
        r = (1 - write_fraction) * ops_per_s * draws[remote, i]    # i's reads of k per second
        c = r + w[remote]
        with np.errstate(divide="ignore", invalid="ignore"):
            fresh = np.where(c > 0, r / c, 0.0)
            warm = np.where(c > 0, 1 - (np.exp(-c * a) - np.exp(-c * b)) / (c * (b - a)), 0.0)
        hit = fresh * warm * lru_hits(r, capacity)
        out[remote, i] = lat[remote, i] * (1 - hit)
    return out


def _kill(cfg: dict) -> tuple[str, float] | None:
    kills = [f for f in cfg.get("faults") or [] if f.get("kind") == "kill"]
    if not kills:
        return None
    return kills[0]["dc"], float(kills[0]["at_s"])


def _label(values: dict) -> str:
    place = (values or {}).get("topology.place", "none")
    return "hash (groups)" if place in (None, "none") else place.upper()


def measured(trial_dir: Path, start_ms: float, cfg: dict, bucket_of_id: np.ndarray | None) -> dict:
    """The trial's single-key read-only transactions: latency (ms) per phase, merged in one
    histogram per phase (never averaged percentiles), and per bucket the normal-phase mean."""
    d = cfg["duration"]
    kill = _kill(cfg)
    end_s = d["warmup_s"] + d["measure_s"]
    normal_end = kill[1] if kill else end_s
    phases = {"normal": HdrHistogram(1, 3_600_000_000, 3), "failure": HdrHistogram(1, 3_600_000_000, 3)}
    sums = {"normal": 0.0, "failure": 0.0}
    per_bucket: dict[int, list[float]] = {}
    for h in sorted((trial_dir / "clients").glob("history-client-*.jsonl")):
        dc = h.stem[len("history-client-"):]
        with open(h) as lines:
            for line in lines:
                op = json.loads(line)
                if not op.get("ok") or op.get("op") != "rot" or len(op.get("r") or {}) != 1:
                    continue
                s = (op["t0"] - start_ms) / 1000
                if d["warmup_s"] <= s < normal_end:
                    phase = "normal"
                elif kill and kill[1] + SETTLE_S <= s < end_s and dc != kill[0]:
                    phase = "failure"
                else:
                    continue
                ms = op["t1"] - op["t0"]
                phases[phase].record_value(max(1, int(ms * 1000)))
                sums[phase] += ms
                if phase == "normal" and bucket_of_id is not None:
                    key = next(iter(op["r"]))
                    kid = int(key[4:])
                    if kid < len(bucket_of_id):
                        acc = per_bucket.setdefault(int(bucket_of_id[kid]), [0.0, 0])
                        acc[0] += ms
                        acc[1] += 1
    out = {}
    for phase, hist in phases.items():
        n = hist.get_total_count()
        out[phase] = {"reads": n, "mean": round(sums[phase] / n, 3) if n else None,
                      "p50": round(hist.get_value_at_percentile(50) / 1000, 3) if n else None,
                      "p90": round(hist.get_value_at_percentile(90) / 1000, 3) if n else None}
    out["buckets"] = {b: {"reads": c, "mean_ms": round(total / c, 3)} for b, (total, c) in per_bucket.items()}
    return out


def trial_table(jar_check, trial_dir: Path, keys: int) -> Path:
    """The trial's placement as a table: its own copy, or the launcher's rendering of its
    hash placement (``topology --table-out``)."""
    own = trial_dir / "placement.csv"
    if own.exists():
        return own
    out = Path(tempfile.mkdtemp(prefix="k2bench-placement-")) / "hash.csv"
    jar_check("topology", str(trial_dir / "topology.yaml"), "--table-out", str(out), "--keys", str(keys))
    return out


def report(run_dir: Path, jar_check) -> dict:
    """Per trial: the placement, the model's prediction and the measurement, normal and
    after the kill; per bucket (table placements) predicted and measured normal means."""
    run_dir = Path(run_dir).resolve()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    cfg_all = manifest["config"]
    kill = _kill(cfg_all)
    rows = []
    for t in manifest.get("trials", []):
        trial_dir = run_dir / t["dir"]
        if not (trial_dir / "summary.json").exists():
            continue
        cfg = json.loads(json.dumps(cfg_all))
        for dotted, value in (t.get("point_values") or {}).items():
            section, name = dotted.split(".", 1)
            cfg[section][name] = value
        import yaml
        topo_doc = yaml.safe_load((trial_dir / "topology.yaml").read_text())
        topo = placement.load_topology(topo_doc)
        n = int(cfg["workload"]["keys"])
        set_per_id, sets, bucket_of_id = placement.read_table(trial_table(jar_check, trial_dir, n), topo.dcs, topo.f, n)
        sets_idx = [tuple(topo.dcs.index(x) for x in s) for s in sets]
        reads = placement.draw_probabilities(n, float(cfg["workload"]["zipf"]), float(cfg["workload"]["locality"]),
                                             topo.d)
        normal = placement.set_latency(sets_idx, topo.rtt)[set_per_id]  # [key, dc]
        local = normal == 0
        cache = cfg["server"]["cache_fraction"] * n if t["system"] in DC_CACHE_SYSTEMS else 0
        d, kill_at = cfg["duration"], (kill[1] if kill else None)
        normal_window = (d["warmup_s"], kill_at if kill else d["warmup_s"] + d["measure_s"])
        fail_window = (kill_at + SETTLE_S, d["warmup_s"] + d["measure_s"]) if kill else None
        ops = float(cfg["clients"]["target_ops_per_s_per_dc"] or 0)
        wf = float(cfg["workload"]["write_fraction"])
        if cache and not ops:
            cache = 0  # a closed loop's rate is not known beforehand: the model leaves the cache out
        if cache:
            normal = cached_latency(normal, reads, local, cache, ops, wf, normal_window)
        predicted = {"normal": placement.weighted_stats(normal, reads), "cache_keys_per_dc": int(cache)}
        if cache:
            remote = reads * ~local
            hit = 1 - (normal * remote).sum() / np.maximum((placement.set_latency(sets_idx, topo.rtt)[set_per_id]
                                                            * remote).sum(), 1e-300)
            predicted["wide_area_reads_saved_by_cache"] = round(float(hit), 4)
        if kill:
            k = topo.dcs.index(kill[0])
            lat = placement.set_latency(sets_idx, topo.rtt, k)[set_per_id]
            if cache:
                lat = cached_latency(lat, reads, lat == 0, cache, ops, wf, fail_window)
            wk = reads.copy()
            wk[:, k] = 0
            predicted["failure"] = placement.weighted_stats(lat, wk)
        has_buckets = bucket_of_id is not None and len(bucket_of_id) and bucket_of_id.max() > 0
        m = measured(trial_dir, t["start"]["t0_ms"], cfg, bucket_of_id if has_buckets else None)
        buckets = []
        if has_buckets:
            nb = int(bucket_of_id.max()) + 1
            num = np.bincount(bucket_of_id, weights=(normal * reads).sum(axis=1), minlength=nb)
            den = np.bincount(bucket_of_id, weights=reads.sum(axis=1), minlength=nb)
            for b, got in sorted(m["buckets"].items()):
                buckets.append({"bucket": b, "predicted_ms": round(float(num[b] / den[b]), 3) if den[b] else None,
                                "measured_ms": got["mean_ms"], "reads": got["reads"]})
        rows.append({"system": t["system"], "placement": _label(t.get("point_values")), "dir": t["dir"],
                     "predicted": predicted, "measured": {k: v for k, v in m.items() if k != "buckets"},
                     "buckets": buckets})
    out = {"killed": {"dc": kill[0], "at_s": kill[1], "settle_s": SETTLE_S} if kill else None, "trials": rows}
    tmp = run_dir / (REPORT_FILE + ".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    tmp.replace(run_dir / REPORT_FILE)
    return out


def bucket_error(buckets: list[dict], min_reads: int = 30) -> tuple[int, float | None]:
    """Buckets with at least ``min_reads`` measured reads, and their mean |measured - predicted|."""
    good = [b for b in buckets if b["reads"] >= min_reads and b["predicted_ms"] is not None]
    if not good:
        return 0, None
    return len(good), round(sum(abs(b["measured_ms"] - b["predicted_ms"]) for b in good) / len(good), 1)


def print_report(console, rep: dict) -> None:
    from rich.table import Table
    killed = rep["killed"]
    table = Table(title="read latency, ms: model (predicted) vs measured, single-key reads")
    for col in ("system", "placement", "normal predicted mean/p90", "normal measured mean/p90 (reads)"):
        table.add_column(col, justify="left" if col in ("system", "placement") else "right")
    if killed:
        table.add_column(f"{killed['dc']} killed predicted", justify="right")
        table.add_column(f"{killed['dc']} killed measured (reads)", justify="right")
    table.add_column("per bucket |meas - pred| (buckets)", justify="right")

    def fmt(s):
        return "-" if not s or s.get("mean") is None else f"{s['mean']:.1f} / {s['p90']:.0f}"
    for r in rep["trials"]:
        cells = [r["system"], r["placement"], fmt(r["predicted"]["normal"]),
                 f"{fmt(r['measured']['normal'])} ({r['measured']['normal']['reads']})"]
        if killed:
            cells += [fmt(r["predicted"].get("failure")),
                      f"{fmt(r['measured']['failure'])} ({r['measured']['failure']['reads']})"]
        n, err = bucket_error(r["buckets"])
        cells.append("-" if err is None else f"{err} ({n})")
        table.add_row(*cells)
    console.print(table)


def has_placements(exp: dict) -> bool:
    """Whether a run sweeps or sets topology.place (the run then prints this report)."""
    return "topology.place" in (exp.get("sweep") or {}) or exp.get("topology", {}).get("place", "none") != "none"


def check_run(run_dir: Path) -> None:
    if not (Path(run_dir) / "manifest.json").exists():
        raise ConfigError("RUN", f"{run_dir} is not a run directory (no manifest.json)")
