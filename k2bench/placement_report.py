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
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from hdrh.histogram import HdrHistogram

from . import placement
from .errors import ConfigError
from .experiment import for_system

REPORT_FILE = "placement.json"
FIGURE_FILE = "placement.png"
BUCKETS_FIGURE_FILE = "placement-buckets.png"
# The percentiles reported per phase: p50 and p90 in the table, all of them for the CDFs drawn.
PERCENTILES = (1, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 85, 90, 95, 97, 99, 99.9)
DC_CACHE_SYSTEMS = placement.DC_CACHE_SYSTEMS


def cache_hits(local: np.ndarray, draws: np.ndarray, capacity: float, ops_per_s: float, write_fraction: float,
               window_s: tuple[float, float], failed: int | None = None) -> np.ndarray:
    """[key, dc]: the probability that a read of a non-local key hits K2's datacenter cache
    (K2 §III-A: non-replica values cached after a fetch and for writes of non-replica keys
    from local clients, LRU, ``capacity`` keys per datacenter). A read of key k in datacenter
    i at time t hits when, since k's last write by another datacenter, i read or wrote k
    itself (its own write is cached), and LRU still holds k: with i's reads r and writes w_i of
    k and the others' writes w_o (Poisson; ``draws`` per datacenter and key, ``ops_per_s`` per
    datacenter split by ``write_fraction``; the ``failed`` datacenter writes nothing),
    P = (r + w_i) / (r + w_i + w_o) (1 - exp(-(r + w_i + w_o) t)) from an empty cache at the
    start, averaged over the measurement ``window_s``, times the probability that LRU holds k
    (``placement.lru_hits``, Che's approximation, at steady state)."""
    writes = write_fraction * ops_per_s * draws                  # [key, dc] writes per second
    if failed is not None:
        writes[:, failed] = 0
    reads = (1 - write_fraction) * ops_per_s * draws
    hit = placement.cache_hits(reads, writes, local, capacity, (1.0, *window_s))
    return np.where(local, 0.0, hit)


def stats(lat: np.ndarray, weight: np.ndarray, hit: np.ndarray | None) -> dict:
    """Read latency statistics: with a cache, each (key, datacenter) pair's reads split into
    hits (0 ms, weight x hit) and misses (its latency, weight x (1 - hit)), so percentiles are
    of reads, not of expected values."""
    hits = None if hit is None else weight * hit
    miss = weight if hits is None else weight - hits
    total = weight.sum()
    # the reads that cross the wide area (neither local nor a cache hit), as the clients' rounds show
    remote = {"remote_share": round(float(miss[np.isfinite(lat) & (lat > 0)].sum() / total), 4) if total > 0 else None}
    return placement.read_stats(lat, weight, hits, PERCENTILES) | remote


def _kill(cfg: dict) -> tuple[str, float] | None:
    """The experiment's datacenter kill (a kill of one server is not a datacenter failure)."""
    kills = [f for f in cfg.get("faults") or [] if f.get("kind") == "kill" and f.get("dc")]
    if not kills:
        return None
    return kills[0]["dc"], float(kills[0]["at_s"])


def settle_s(cfg: dict) -> float:
    """After the kill: clients' fail-over (the failover timeout, then a second) is not the placement's."""
    return cfg["server"]["failover_timeout_ms"] / 1000 + 1.0


def label(cfg: dict, trial: dict) -> str:
    place = cfg["topology"].get("place", "none")
    if place not in (None, "none"):
        return place.upper() + (" +cache" if cfg["topology"].get("place_cache") else "")
    scheme = (trial.get("placement") or {}).get("placement", "groups")
    return "hash (groups)" if scheme == "groups" else scheme


def measured(trial_dir: Path, start_ms: float, cfg: dict, dcs: list[str], bucket_of_id: np.ndarray | None) -> dict:
    """The trial's single-key read-only transactions: latency (ms) per phase, merged in one
    histogram per phase (never averaged percentiles), reads slower than the failover timeout
    counted apart, and per bucket the normal-phase mean. With a kill, the killed datacenter's
    clients are left out of both phases, so the phases compare the same clients."""
    d = cfg["duration"]
    kill = _kill(cfg)
    end_s = d["warmup_s"] + d["measure_s"]
    normal_end = kill[1] if kill else end_s
    slow_ms = cfg["server"]["failover_timeout_ms"]
    phases = {"normal": HdrHistogram(1, 3_600_000_000, 3), "failure": HdrHistogram(1, 3_600_000_000, 3)}
    sums = {"normal": 0.0, "failure": 0.0}
    slow = {"normal": 0, "failure": 0}
    remote = {"normal": 0, "failure": 0}
    per_dc = {"normal": {}, "failure": {}}
    per_bucket: dict[int, list[float]] = {}
    for h in sorted((trial_dir / "clients").glob("history-client-*.jsonl")):
        dc = placement._history_dc(h.name, dcs)
        if kill and dc == kill[0]:
            continue
        with open(h) as lines:
            for line in lines:
                op = json.loads(line)
                if not op.get("ok") or op.get("op") != "rot" or len(op.get("r") or {}) != 1:
                    continue
                s = (op["t0"] - start_ms) / 1000
                if d["warmup_s"] <= s < normal_end:
                    phase = "normal"
                elif kill and kill[1] + settle_s(cfg) <= s < end_s:
                    phase = "failure"
                else:
                    continue
                ms = op["t1"] - op["t0"]
                phases[phase].record_value(max(1, int(ms * 1000)))
                sums[phase] += ms
                slow[phase] += ms >= slow_ms
                remote[phase] += (op.get("rounds") or 0) > 0
                per_dc[phase][dc] = per_dc[phase].get(dc, 0) + 1
                key = next(iter(op["r"]))
                if phase == "normal" and bucket_of_id is not None and key[4:].isdigit():
                    kid = int(key[4:])
                    if kid < len(bucket_of_id):
                        acc = per_bucket.setdefault(int(bucket_of_id[kid]), [0.0, 0])
                        acc[0] += ms
                        acc[1] += 1
    out = {}
    for phase, hist in phases.items():
        n = hist.get_total_count()
        out[phase] = {"reads": n, "mean": round(sums[phase] / n, 3) if n else None}
        out[phase] |= {f"p{p}": round(hist.get_value_at_percentile(p) / 1000, 3) if n else None for p in PERCENTILES}
        out[phase] |= {"remote_share": round(remote[phase] / n, 4) if n else None,
                       f"reads_over_{slow_ms}_ms": slow[phase], "reads_per_dc": per_dc[phase]}
    out["buckets"] = {b: {"reads": c, "mean_ms": round(total / c, 3)} for b, (total, c) in per_bucket.items()}
    return out


def trial_table(jar_check, trial_dir: Path, keys: int, scratch: Path) -> Path:
    """The trial's placement as a table: its own copy, or the launcher's rendering of its
    hash placement (``topology --table-out``)."""
    own = trial_dir / "placement.csv"
    if own.exists():
        return own
    out = scratch / (trial_dir.relative_to(trial_dir.parents[1]).as_posix().replace("/", "_") + ".csv")
    jar_check("topology", str(trial_dir / "topology.yaml"), "--table-out", str(out), "--keys", str(keys))
    return out


def trial_start_ms(trial_dir: Path, trial: dict) -> float:
    """The trial's common start (epoch ms): the manifest's, or its start.json (a resumed run's
    manifest lists earlier trials without it)."""
    if "start" in trial and "t0_ms" in trial["start"]:
        return trial["start"]["t0_ms"]
    return json.loads((trial_dir / "start.json").read_text())["t0_ms"]


def report(run_dir: Path, jar_check) -> dict:
    """Per trial: the placement, the model's prediction and the measurement, normal and
    after the kill; per bucket (table placements) predicted and measured normal means."""
    run_dir = Path(run_dir).resolve()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    cfg_all = manifest["config"]
    kill = _kill(cfg_all)
    rows = []
    with tempfile.TemporaryDirectory(prefix="k2bench-placement-") as tmp_dir:
        scratch = Path(tmp_dir)  # the hash placements written as tables, gone with the report
        for t in manifest.get("trials", []):
            trial_dir = run_dir / t["dir"]
            if not (trial_dir / "summary.json").exists():
                continue
            cfg = json.loads(json.dumps(cfg_all))
            for dotted, value in (t.get("point_values") or {}).items():
                section, name = dotted.split(".", 1)
                cfg[section][name] = value
            cfg = for_system(cfg, t["system"])  # as the system ran it (per_system overrides)
            topo_doc = yaml.safe_load((trial_dir / "topology.yaml").read_text())
            topo = placement.load_topology(topo_doc)
            n = int(cfg["workload"]["keys"])
            set_per_id, sets, bucket_of_id = placement.read_table(trial_table(jar_check, trial_dir, n, scratch), topo.dcs, topo.f, n)
            sets_idx = [tuple(topo.dcs.index(x) for x in s) for s in sets]
            reads = placement.draw_probabilities(n, float(cfg["workload"]["zipf"]), float(cfg["workload"]["locality"]),
                                                 topo.d)
            normal = placement.set_latency(sets_idx, topo.rtt)[set_per_id]  # [key, dc]
            cache = cfg["server"]["cache_fraction"] * n if t["system"] in DC_CACHE_SYSTEMS else 0
            d, kill_at = cfg["duration"], (kill[1] if kill else None)
            normal_window = (d["warmup_s"], kill_at if kill else d["warmup_s"] + d["measure_s"])
            fail_window = (kill_at + settle_s(cfg), d["warmup_s"] + d["measure_s"]) if kill else None
            ops = float(cfg["clients"]["target_ops_per_s_per_dc"] or 0)
            wf = float(cfg["workload"]["write_fraction"])
            if cache and not ops:
                cache = 0  # a closed loop's rate is not known beforehand: the model leaves the cache out
            k = topo.dcs.index(kill[0]) if kill else None
            survivors = reads.copy()  # the clients both phases count (the killed datacenter's left out)
            if k is not None:
                survivors[:, k] = 0
            hit = cache_hits(normal == 0, reads, cache, ops, wf, normal_window) if cache else None
            predicted = {"normal": stats(normal, survivors, hit), "cache_keys_per_dc": int(cache)}
            if hit is not None:
                predicted["cache_hit_share_of_remote_reads"] = round(float(
                    (hit * survivors * (normal > 0)).sum() / max((survivors * (normal > 0)).sum(), 1e-300)), 4)
            if kill:
                lat = placement.set_latency(sets_idx, topo.rtt, k)[set_per_id]
                fhit = cache_hits(lat == 0, reads, cache, ops, wf, fail_window, failed=k) if cache else None
                predicted["failure"] = stats(lat, survivors, fhit)
            has_buckets = bucket_of_id is not None and len(bucket_of_id) and bucket_of_id.max() > 0
            m = measured(trial_dir, trial_start_ms(trial_dir, t), cfg, topo.dcs, bucket_of_id if has_buckets else None)
            buckets = []
            if has_buckets:
                expected = normal * (1 - hit) if hit is not None else normal
                nb = int(bucket_of_id.max()) + 1
                num = np.bincount(bucket_of_id, weights=(expected * survivors).sum(axis=1), minlength=nb)
                den = np.bincount(bucket_of_id, weights=survivors.sum(axis=1), minlength=nb)
                for b, got in sorted(m["buckets"].items()):
                    buckets.append({"bucket": b, "predicted_ms": round(float(num[b] / den[b]), 3) if den[b] else None,
                                    "measured_ms": got["mean_ms"], "reads": got["reads"]})
            rows.append({"system": t["system"], "placement": label(cfg, t), "dir": t["dir"],
                         "predicted": predicted, "measured": {k: v for k, v in m.items() if k != "buckets"},
                         "buckets": buckets})
    out = {"killed": {"dc": kill[0], "at_s": kill[1], "settle_s": settle_s(cfg_all)} if kill else None,
           "trials": rows}
    tmp = run_dir / (REPORT_FILE + ".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    tmp.replace(run_dir / REPORT_FILE)
    return out


def draw(run_dir: Path) -> list[Path]:
    """The report's figures into the run directory: ``placement.png`` (the placement paper's
    Fig. 7/8 shape: CDFs of read latency per placement, normal and after the kill, measured
    beside predicted) and ``placement-buckets.png`` (per key bucket, predicted against measured).
    Returns those drawn (none without data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from types import SimpleNamespace

    from analysis import figures

    runs = [SimpleNamespace(dir=Path(run_dir), name=Path(run_dir).name)]  # the figures read placement.json only
    out = []
    for name, draw_figure in ((FIGURE_FILE, figures.placement_latency),
                              (BUCKETS_FIGURE_FILE, figures.placement_buckets)):
        try:
            fig = draw_figure(runs)
        except figures.MissingData:
            continue
        except Exception as e:  # noqa: BLE001 - a figure that cannot be drawn must not fail the finished run
            print(f"warning: {name} not drawn ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        path = Path(run_dir) / name
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        out.append(path)
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
