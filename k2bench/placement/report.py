"""Predicted beside measured read latency for runs of latency-aware placement (the
``placement`` experiment; ``k2bench placement-report RUN``): for every trial, the latency
model of k2bench.placement evaluated on the trial's own placement (its table, or for a hash
placement the table the launcher writes of it) and the experiment's expected demand, with
K2's cache as a trial fills it and, under a failure, the redirected clients as K2's client
library serves them (``failure_stats``, where it departs from the solver's paper form), beside
the single-key read-only transactions the trial's clients measured, per window (``windows``):
normal operation (warm-up end to the kill; with its first and last WINDOW_S apart as "cold",
K2's cache still filling, and "warm": warmer, not yet the steady state, which at the
experiment's rate takes far longer than a trial) and after the experiment's kill (from the fail-over's
settling to the end). Latency counts from each read's intended start, as summary.json does,
and failed reads are counted as such. A kill with ``clients: redirect`` (the paper's failure)
keeps the killed datacenter's clients in every window, as the model keeps its readers; with
``clients: fail`` they are left out of both sides.

Over trials (``groups``): per system, placement and window (and killed datacenter) the
reads of every trial in one merged histogram, and the trials' spread; ``comparisons`` set
BA against hash and N-1C against BA, "within noise" where the trials' ranges overlap.
Written to ``placement.json`` in the run directory, with per-bucket figures for table
placements, and its tables in Markdown to ``placement.md``."""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from hdrh.histogram import HdrHistogram

from .. import placement, systems
from ..rundir import read_manifest
from ..experiment import axis_set, for_system
from ..verdicts import versus

REPORT_FILE = "placement.json"
TABLE_FILE = "placement.md"  # the same tables in Markdown, for docs and papers (width-independent)
FIGURE_FILE = "placement.png"
BUCKETS_FIGURE_FILE = "placement-buckets.png"
# The percentiles reported per phase: p50 and p90 in the table, all of them for the CDFs drawn.
PERCENTILES = (1, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 85, 90, 95, 97, 99, 99.9)
# A system whose client runs a read-only transaction's second round itself (its descriptor's
# client_second_round; K2 §V-C, Fig. 5: a first round to its datacenter's servers, then one
# to them for the keys without a value, which they fetch remotely): a client redirected to a
# datacenter rtt(k, c) away pays that hop twice on such a read; the placement model (the
# paper's, one coordinator hop) counts it once. (K2's clients never change datacenter, §VI-B;
# the experiment's redirect does, and pays for it so.)
# Normal operation at least twice this long is also reported as its first WINDOW_S ("cold":
# K2's cache filling from empty) and its last ("warm": warmer; a trial never reaches the
# cache's steady state at the experiment's rate).
WINDOW_S = 25.0
# After the fail-over timeout, the failure window waits this long for client threads that
# waited it out to work off their backlog (run 20261202T213511Z, hash, VA killed: K2's last
# late start 5 s after the kill, PaRiS*'s, whose threads have less slack, 10 s).
DRAIN_S = 10.0
# A read that started this far behind its intended start is counted as a late start: in the
# failure window, a backlog the settling time did not drain.
LATE_MS = 100.0
NORMAL_PHASES = ("normal", "cold", "warm")
# BA against hash (the paper's Fig. 6), N-1C against BA (its Fig. 7/8): (a, b) pairs.
PAIRS = (("BA", "hash"), ("N-1C", "BA"))


def cache_hits(local: np.ndarray, draws: np.ndarray, capacity: float, ops_per_s: float, write_fraction: float,
               window_s: tuple[float, float], failed: int | None = None, redirected_to: int | None = None
               ) -> np.ndarray:
    """[key, dc]: the probability that a read of a non-local key hits K2's datacenter cache
    (K2 §III-A: non-replica values cached after a fetch and for writes of non-replica keys
    from local clients, LRU, ``capacity`` keys per datacenter). A read of key k in datacenter
    i at time t hits when, since k's last write by another datacenter, i read or wrote k
    itself (its own write is cached), and LRU still holds k: with i's reads r and writes w_i of
    k and the others' writes w_o (Poisson; ``draws`` per datacenter and key, ``ops_per_s`` per
    datacenter split by ``write_fraction``; the ``failed`` datacenter writes nothing, or with
    its clients redirected its writes go through ``redirected_to``),
    P = (r + w_i) / (r + w_i + w_o) (1 - exp(-(r + w_i + w_o) t)) from an empty cache at the
    start, averaged over the measurement ``window_s``, times the probability that LRU holds k
    (``placement.lru_hits``, Che's approximation, at steady state)."""
    writes = write_fraction * ops_per_s * draws                  # [key, dc] writes per second
    if failed is not None:
        if redirected_to is not None:
            writes[:, redirected_to] += writes[:, failed]
        writes[:, failed] = 0
    reads = (1 - write_fraction) * ops_per_s * draws
    hit = placement.cache_hits(reads, writes, local, capacity, (1.0, *window_s), filling=True)
    return np.where(local, 0.0, hit)


def stats(lat: np.ndarray, weight: np.ndarray, hit: np.ndarray | None, hit_lat: np.ndarray | None = None,
          wan: np.ndarray | None = None) -> dict:
    """Read latency statistics: with a cache, each (key, datacenter) pair's reads split into
    hits (``hit_lat``, 0 ms unless given; weight x hit) and misses (``lat``, weight x (1 - hit)),
    so percentiles are of reads, not of expected values. ``remote_share``: the misses whose
    serving datacenter reads across the wide area (``wan`` > 0, its latency to the replica;
    ``lat`` unless given), as the clients' ``rounds`` count them."""
    hits = None if hit is None else weight * hit
    miss = weight if hits is None else weight - hits
    total = weight.sum()
    wan = lat if wan is None else wan
    remote = {"remote_share": round(float(miss[np.isfinite(wan) & (wan > 0)].sum() / total), 4) if total > 0 else None}
    if hit_lat is None or hits is None:
        return placement.read_stats(lat, weight, hits, PERCENTILES) | remote
    return placement.weighted_stats(np.concatenate([hit_lat.ravel(), lat.ravel()]),
                                    np.concatenate([hits.ravel(), miss.ravel()]), PERCENTILES) | remote


def redirected_hits(draws: np.ndarray, local: np.ndarray, capacity: float, ops_per_s: float, write_fraction: float,
                    failed: int, to: int, kill_s: float, window_s: tuple[float, float]) -> np.ndarray:
    """[key]: the probability that a read at ``to`` hits its cache once ``failed``'s clients are
    redirected there at ``kill_s``: from then on both datacenters' reads and writes go through
    ``to``'s servers and fill one cache (``cache_hits``' terms, with its rates before the kill
    and the sum after: the last event on a key is "mine" with probability m/(m + o) per
    piece), averaged over ``window_s``; LRU filling from empty (``in_cache_filling``) under
    the summed rates, as if they had held from the start (a cache fuller than it is: at most
    an early eviction)."""
    reads = (1 - write_fraction) * ops_per_s * draws
    writes = write_fraction * ops_per_s * draws
    w_all = writes.sum(axis=1)
    m1 = reads[:, to] + writes[:, to]
    m2 = m1 + reads[:, failed] + writes[:, failed]
    s1, s2 = m1 + w_all - writes[:, to], w_all + reads[:, to] + reads[:, failed]  # mine + the others' writes
    a, b = window_s[0] - kill_s, window_s[1] - kill_s
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        before = np.where(s1 > 0, m1 / s1 * (1 - np.exp(-s1 * kill_s)), 0.0)  # at the kill, from empty at 0
        after = np.where(s2 > 0, m2 / s2, 0.0)
        stay = np.where(s2 > 0, (np.exp(-s2 * a) - np.exp(-s2 * b)) / (s2 * (b - a)), 1.0)  # no event since the kill
    fresh = after * (1 - stay) + before * stay
    held = placement.in_cache_filling(m2, placement.che_time(m2[~local[:, to]], capacity), *window_s)
    return np.where(local[:, to], 0.0, fresh * held)


def failure_stats(sets_idx: list, set_per_id: np.ndarray, rtt: np.ndarray, draws: np.ndarray, readers: np.ndarray,
                  kill: "Kill", k: int, cache: float, ops: float, wf: float, window_s: tuple[float, float],
                  second_round: bool) -> dict:
    """The model's reads under ``kill`` (datacenter k's storage gone): the survivors read their
    nearest surviving replica (``set_latency``) and keep their caches, k's writes coming
    through c; with ``clients: redirect`` k's clients read through c = ``redirect_dc``: a key c
    holds or caches costs rtt(k, c), another rtt(k, c) + c's latency, plus rtt(k, c) again
    where the client runs the second round (``client_second_round``); c's readers and
    k's share c's cache from the kill on (``redirected_hits``). k's own cache is gone with its
    storage. A key with no surviving replica is unavailable to k's clients (their misses fill
    nothing; counted as misses); a survivor's cached copy of it still serves."""
    lat = placement.set_latency(sets_idx, rtt, k)[set_per_id]
    to = placement.redirect_dc(rtt, k) if kill.clients == "redirect" else None
    hit = cache_hits(lat == 0, draws, cache, ops, wf, window_s, failed=k, redirected_to=to) if cache else None
    if hit is not None:
        hit[:, k] = 0
    if to is None:
        return stats(lat, readers, hit)
    serve, hop = lat[:, to], rtt[k, to]
    if hit is None:
        hit = np.zeros_like(lat)
    else:
        hit[:, to] = redirected_hits(draws, lat == 0, cache, ops, wf, k, to, kill.at_s, window_s)
    hit[:, k] = np.where(serve == 0, 1.0, np.where(np.isfinite(serve), hit[:, to], 0.0))  # held: the hop's cost
    hit_lat = np.zeros_like(lat)
    hit_lat[:, k] = hop
    miss = lat.copy()
    miss[:, k] = serve + hop * (2 if second_round else 1)
    wan = lat.copy()
    wan[:, k] = serve
    return stats(miss, readers, hit, hit_lat, wan)


@dataclass(frozen=True)
class Kill:
    dc: str
    at_s: float
    clients: str  # redirect: the killed datacenter's clients go on elsewhere; fail: they fail


def _kill(cfg: dict) -> Kill | None:
    """The trial's datacenter kill (a kill of one server is not a datacenter failure)."""
    kills = [f for f in cfg.get("faults") or [] if f.get("kind") == "kill" and f.get("dc")]
    if not kills:
        return None
    return Kill(kills[0]["dc"], float(kills[0]["at_s"]), kills[0].get("clients", "fail"))


def windows(cfg: dict) -> dict[str, tuple[float, float]]:
    """The report's windows, in seconds since the clients' start: normal (warm-up end to the
    kill, or the end), and when it lasts 2 x WINDOW_S or more also cold (its first WINDOW_S)
    and warm (its last); failure (the fail-over's settling after the kill to the end). A read
    that started before the kill and ended after it is in no normal window (``measured``)."""
    d = cfg["duration"]
    kill = _kill(cfg)
    start, end = float(d["warmup_s"]), float(d["warmup_s"] + d["measure_s"])
    normal_end = kill.at_s if kill else end
    out = {"normal": (start, normal_end)}
    if normal_end - start >= 2 * WINDOW_S:
        out |= {"cold": (start, start + WINDOW_S), "warm": (normal_end - WINDOW_S, normal_end)}
    if kill:
        out["failure"] = (kill.at_s + settle_s(cfg), end)
    return out


def settle_s(cfg: dict) -> float:
    """After the kill, what is the fail-over's and not the placement's: the servers' fail-over
    timeout (a survivor's read of the dead datacenter waits it out once), then DRAIN_S for the
    paced client threads held up by it to catch up with their schedules. Redirected clients
    lose their calls in flight with the dead servers' connections (Endpoint.connectionLost)
    and go on at once. ``late_starts`` in the failure window says whether that sufficed."""
    return cfg["server"]["failover_timeout_ms"] / 1000 + DRAIN_S


def _encode(h: HdrHistogram) -> str:
    return h.encode().decode() if isinstance(h.encode(), bytes) else h.encode()


def _decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text.encode() if isinstance(text, str) else text)


def label(cfg: dict, trial: dict) -> str:
    place = cfg["topology"].get("place", "none")
    if place not in (None, "none"):
        return place.upper() + (" +cache" if cfg["topology"].get("place_cache") else "")
    scheme = (trial.get("placement") or {}).get("placement", "groups")
    return "hash (groups)" if scheme == "groups" else scheme


def measured(trial_dir: Path, start_ms: float, cfg: dict, dcs: list[str], bucket_of_id: np.ndarray | None) -> dict:
    """The trial's single-key read-only transactions per window (``windows``): latency (ms)
    from each read's intended start, in one histogram per window (never averaged
    percentiles, kept encoded for merging over trials), failed reads counted, reads slower
    than the failover timeout counted apart, how far behind their schedule reads started
    (``start_lag_mean_ms``; ``late_starts``: over LATE_MS), and per bucket the normal
    window's mean. The killed datacenter's clients are left out only when the kill does not redirect them. A
    read that started before the kill and ended after it is the kill's, not normal
    operation's: counted as ``cut_by_kill`` in its normal windows, not measured there."""
    kill = _kill(cfg)
    skip = kill.dc if kill and kill.clients != "redirect" else None
    kill_ms = start_ms + 1000 * kill.at_s if kill else float("inf")
    wins = windows(cfg)
    slow_ms = cfg["server"]["failover_timeout_ms"]
    acc = {p: {"hist": HdrHistogram(1, 3_600_000_000, 3), "sum": 0.0, "failed": 0, "slow": 0, "remote": 0,
               "cut": 0, "late": 0, "lag_ms": 0.0, "per_dc": {}} for p in wins}
    per_bucket: dict[int, list[float]] = {}
    for h in sorted((trial_dir / "clients").glob("history-client-*.jsonl")):
        dc = placement._history_dc(h.name, dcs)
        if dc == skip:
            continue
        with open(h) as lines:
            for line in lines:
                op = json.loads(line)
                ok = bool(op.get("ok"))
                if op.get("op") != "rot" or (ok and len(op.get("r") or {}) != 1):
                    continue  # a failed read names no keys; the experiment's reads are all single-key
                began = op.get("ti", op["t0"])  # the intended start of a paced read behind schedule
                s = (began - start_ms) / 1000
                ms = op["t1"] - began
                cut = op["t1"] >= kill_ms
                for phase, (a, b) in wins.items():
                    if not a <= s < b:
                        continue
                    x = acc[phase]
                    if cut and phase in NORMAL_PHASES:
                        x["cut"] += 1
                        continue
                    x["late"] += op["t0"] - began > LATE_MS
                    x["lag_ms"] += op["t0"] - began
                    if not ok:
                        x["failed"] += 1
                        continue
                    x["hist"].record_value(max(1, int(ms * 1000)))
                    x["sum"] += ms
                    x["slow"] += ms >= slow_ms
                    x["remote"] += (op.get("rounds") or 0) > 0
                    x["per_dc"][dc] = x["per_dc"].get(dc, 0) + 1
                if ok and not cut and wins["normal"][0] <= s < wins["normal"][1] and bucket_of_id is not None:
                    key = next(iter(op["r"]))
                    if key[4:].isdigit() and int(key[4:]) < len(bucket_of_id):
                        got = per_bucket.setdefault(int(bucket_of_id[int(key[4:])]), [0.0, 0])
                        got[0] += ms
                        got[1] += 1
    out = {}
    for phase, x in acc.items():
        hist = x["hist"]
        n = hist.get_total_count()
        out[phase] = {"reads": n, "failed_reads": x["failed"], "late_starts": x["late"],
                      "start_lag_mean_ms": round(x["lag_ms"] / (n + x["failed"]), 2) if n + x["failed"] else None,
                      **({"cut_by_kill": x["cut"]} if phase in NORMAL_PHASES and kill else {}),
                      "failed_share": round(x["failed"] / (n + x["failed"]), 4) if n + x["failed"] else None,
                      "mean": round(x["sum"] / n, 3) if n else None}
        out[phase] |= {f"p{p}": round(hist.get_value_at_percentile(p) / 1000, 3) if n else None for p in PERCENTILES}
        out[phase] |= {"remote_share": round(x["remote"] / n, 4) if n else None,
                       f"reads_over_{slow_ms}_ms": x["slow"], "reads_per_dc": x["per_dc"], "hist": _encode(hist)}
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
    """Per trial: the placement, the model's prediction and the measurement per window; per
    bucket (table placements) predicted and measured normal means; then ``groups`` and
    ``comparisons`` over trials (module doc)."""
    run_dir = Path(run_dir).resolve()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    cfg_all = manifest["config"]
    known = systems.of_run(run_dir)
    rows = []
    with tempfile.TemporaryDirectory(prefix="k2bench-placement-") as tmp_dir:
        scratch = Path(tmp_dir)  # the hash placements written as tables, gone with the report
        for t in manifest.get("trials", []):
            trial_dir = run_dir / t["dir"]
            if not (trial_dir / "summary.json").exists():
                continue
            cfg = json.loads(json.dumps(cfg_all))
            for dotted, value in (t.get("point_values") or {}).items():
                axis_set(cfg, dotted, value)
            cfg = for_system(cfg, t["system"])  # as the system ran it (per_system overrides)
            topo_doc = yaml.safe_load((trial_dir / "topology.yaml").read_text())
            topo = placement.load_topology(topo_doc)
            n = int(cfg["workload"]["keys"])
            set_per_id, sets, bucket_of_id = placement.read_table(trial_table(jar_check, trial_dir, n, scratch), topo.dcs, topo.f, n)
            sets_idx = [tuple(topo.dcs.index(x) for x in s) for s in sets]
            reads = placement.draw_probabilities(n, float(cfg["workload"]["zipf"]), float(cfg["workload"]["locality"]),
                                                 topo.d)
            normal = placement.set_latency(sets_idx, topo.rtt)[set_per_id]  # [key, dc]
            cache = cfg["server"]["cache_fraction"] * n if known.info(t["system"]).dc_cache else 0
            ops = float(cfg["clients"]["target_ops_per_s_per_dc"] or 0)
            wf = float(cfg["workload"]["write_fraction"])
            if cache and not ops:
                cache = 0  # a closed loop's rate is not known beforehand: the model leaves the cache out
            kill = _kill(cfg)
            k = topo.dcs.index(kill.dc) if kill else None
            readers = reads.copy()  # the clients every window counts: all, or without the killed ones
            if kill and kill.clients != "redirect":
                readers[:, k] = 0
            wins = windows(cfg)
            predicted = {"cache_keys_per_dc": int(cache)}
            for phase in (p for p in NORMAL_PHASES if p in wins):
                hit = cache_hits(normal == 0, reads, cache, ops, wf, wins[phase]) if cache else None
                predicted[phase] = stats(normal, readers, hit)
                if hit is not None and phase == "normal":
                    predicted["cache_hit_share_of_remote_reads"] = round(float(
                        (hit * readers * (normal > 0)).sum() / max((readers * (normal > 0)).sum(), 1e-300)), 4)
            normal_hit = cache_hits(normal == 0, reads, cache, ops, wf, wins["normal"]) if cache else None
            if kill:
                predicted["failure"] = failure_stats(sets_idx, set_per_id, topo.rtt, reads, readers, kill, k, cache,
                                                     ops, wf, wins["failure"],
                                                     known.info(t["system"]).client_second_round)
            has_buckets = bucket_of_id is not None and len(bucket_of_id) and bucket_of_id.max() > 0
            m = measured(trial_dir, trial_start_ms(trial_dir, t), cfg, topo.dcs, bucket_of_id if has_buckets else None)
            buckets = []
            if has_buckets:
                expected = normal * (1 - normal_hit) if normal_hit is not None else normal
                nb = int(bucket_of_id.max()) + 1
                num = np.bincount(bucket_of_id, weights=(expected * readers).sum(axis=1), minlength=nb)
                den = np.bincount(bucket_of_id, weights=readers.sum(axis=1), minlength=nb)
                for b, got in sorted(m["buckets"].items()):
                    buckets.append({"bucket": b, "predicted_ms": round(float(num[b] / den[b]), 3) if den[b] else None,
                                    "measured_ms": got["mean_ms"], "reads": got["reads"]})
            rows.append({"system": t["system"], "placement": label(cfg, t), "dir": t["dir"], "trial": t.get("trial", 1),
                         "killed": kill.dc if kill else None, "clients": kill.clients if kill else None,
                         "windows": {p: list(w) for p, w in wins.items()},
                         "predicted": predicted, "measured": {k: v for k, v in m.items() if k != "buckets"},
                         "buckets": buckets})
    kills = sorted({r["killed"] for r in rows if r["killed"]})
    first = _kill(cfg_all)
    killed = None
    if first:
        killed = {"dc": first.dc if len(kills) <= 1 else None, "dcs": kills or [first.dc], "at_s": first.at_s,
                  "settle_s": settle_s(cfg_all), "clients": first.clients}
    groups = pool(rows)
    out = {"killed": killed, "window_s": WINDOW_S, "trials": rows, "groups": groups,
           "comparisons": comparisons(groups)}
    for name, text in ((REPORT_FILE, json.dumps(out, indent=1) + "\n"), (TABLE_FILE, markdown(out))):
        tmp = run_dir / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(run_dir / name)
    return out


def scheme(name: str) -> str:
    """A placement label's scheme: BA, N-1C or hash ("BA +cache" is BA)."""
    head = name.split()[0]
    return head if head in ("BA", "N-1C") else "hash"


def pool(rows: list[dict]) -> list[dict]:
    """Per system, placement and window (the failure window per killed datacenter; the normal
    ones over every trial, whichever datacenter it later killed): the reads of every trial
    merged in one histogram, the trials' spread of mean, p50 and p90 (min, max), failed
    reads and late starts, and the model's prediction (the same for every trial of a group)."""
    groups: dict[tuple, list[tuple[dict, dict, dict]]] = {}
    for r in rows:
        for phase, m in r["measured"].items():
            key = (r["system"], r["placement"], phase, r["killed"] if phase == "failure" else None)
            groups.setdefault(key, []).append((r, m, r["predicted"].get(phase) or {}))
    out = []
    for (system, name, phase, killed), members in groups.items():
        merged = HdrHistogram(1, 3_600_000_000, 3)
        total_ms, reads, failed, late, lag_ms = 0.0, 0, 0, 0, 0.0
        for _, m, _ in members:
            merged.add(_decode(m["hist"]))
            reads += m["reads"]
            failed += m["failed_reads"]
            late += m["late_starts"]
            lag_ms += (m["start_lag_mean_ms"] or 0) * (m["reads"] + m["failed_reads"])
            total_ms += (m["mean"] or 0) * m["reads"]
        got = {"reads": reads, "failed_reads": failed, "late_starts": late,
               "start_lag_mean_ms": round(lag_ms / (reads + failed), 2) if reads + failed else None,
               "failed_share": round(failed / (reads + failed), 4) if reads + failed else None,
               "mean": round(total_ms / reads, 3) if reads else None}
        got |= {f"p{p}": round(merged.get_value_at_percentile(p) / 1000, 3) if reads else None for p in PERCENTILES}
        for metric in ("mean", "p50", "p90"):
            values = [m[metric] for _, m, _ in members if m.get(metric) is not None]
            got[f"{metric}_min"], got[f"{metric}_max"] = (min(values), max(values)) if values else (None, None)
        pred = members[0][2]
        out.append({"system": system, "placement": name, "scheme": scheme(name), "phase": phase, "killed": killed,
                    "trials": len(members), "measured": got,
                    "predicted": {k: pred.get(k) for k in ("mean", *(f"p{p}" for p in PERCENTILES),
                                                           "unavailable_share")}})
    order = {p: i for i, p in enumerate((*NORMAL_PHASES, "failure"))}
    return sorted(out, key=lambda g: (g["system"], order[g["phase"]], g["killed"] or "", g["placement"]))


def comparisons(groups: list[dict]) -> list[dict]:
    """BA against hash and N-1C against BA, per system and window, on the measured mean, p50
    and p90: the ratio of the pooled values, its range from the trials' spreads, and a
    verdict ("a lower", "a higher", "within noise" where the ranges overlap)."""
    out = []
    by = {(g["system"], g["phase"], g["killed"], g["scheme"]): g for g in groups}
    for (system, phase, killed, scheme), g in by.items():
        for a, b in PAIRS:
            other = by.get((system, phase, killed, b))
            if scheme != a or other is None:
                continue
            for metric in ("mean", "p50", "p90"):
                v = versus(g["measured"] | {"trials": g["trials"]}, other["measured"] | {"trials": other["trials"]},
                           metric)
                out.append({"system": system, "phase": phase, "killed": killed, "a": g["placement"],
                            "b": other["placement"], "metric": metric,
                            **{k: (round(x, 3) if isinstance(x, float) else x) for k, x in v.items()}})
    return out


def bucket_error(buckets: list[dict], min_reads: int = 30) -> tuple[int, float | None]:
    """Buckets with at least ``min_reads`` measured reads, and their mean |measured - predicted|."""
    good = [b for b in buckets if b["reads"] >= min_reads and b["predicted_ms"] is not None]
    if not good:
        return 0, None
    return len(good), round(sum(abs(b["measured_ms"] - b["predicted_ms"]) for b in good) / len(good), 1)


def _phase_text(phase: str, killed: str | None) -> str:
    return {"normal": "normal", "cold": f"normal, first {WINDOW_S:g} s", "warm": f"normal, last {WINDOW_S:g} s",
            "failure": f"{killed} killed"}[phase]


def print_report(console, rep: dict) -> None:
    from rich.table import Table
    if "groups" not in rep:  # a report written before the groups: written again by placement-report
        console.print("this placement.json predates the pooled tables: run k2bench placement-report RUN again")
        return
    table = Table(title="single-key read latency, ms: the model (predicted) and measured over trials "
                        "(pooled mean / p90 [min-max over trials]; latency from the intended start)")
    for col in ("system", "placement", "window", "trials", "predicted mean / p90", "measured mean / p90",
                "failed reads", f"late starts (>{LATE_MS:g} ms)", "per bucket |meas - pred| (buckets)"):
        table.add_column(col, justify="left" if col in ("system", "placement", "window") else "right")
    buckets = {}
    for r in rep["trials"]:
        buckets.setdefault((r["system"], r["placement"]), []).extend(r["buckets"])

    def fmt(s):
        return "-" if not s or s.get("mean") is None else f"{s['mean']:.1f} / {s['p90']:.0f}"

    def spread(m):
        if m["mean"] is None:
            return "-"
        text = f"{m['mean']:.1f} / {m['p90']:.0f}"
        if m["mean_min"] != m["mean_max"] or m["p90_min"] != m["p90_max"]:
            text += f" [{m['mean_min']:.0f}-{m['mean_max']:.0f} / {m['p90_min']:.0f}-{m['p90_max']:.0f}]"
        return text
    for g in rep["groups"]:
        m = g["measured"]
        n, err = bucket_error(buckets.get((g["system"], g["placement"]), [])) if g["phase"] == "normal" else (0, None)
        table.add_row(g["system"], g["placement"], _phase_text(g["phase"], g["killed"]), str(g["trials"]),
                      fmt(g["predicted"]), spread(m),
                      f"{m['failed_reads']} ({100 * (m['failed_share'] or 0):.1f}%)", str(m["late_starts"]),
                      "-" if err is None else f"{err} ({n})")
    console.print(table)
    if rep.get("comparisons"):
        cmp = Table(title="measured: a against b (ratio of pooled values [range over trials])")
        for col in ("system", "window", "a vs b", "mean", "p50", "p90"):
            cmp.add_column(col, justify="left" if col in ("system", "window", "a vs b") else "right")
        for (system, phase, killed, a, b), ms in _comparison_rows(rep).items():
            cmp.add_row(system, _phase_text(phase, killed), f"{a} vs {b}", _ratio(ms.get("mean")),
                        _ratio(ms.get("p50")), _ratio(ms.get("p90")))
        console.print(cmp)


def _range(m: dict, metric: str, digits: int) -> str:
    """A pooled value with the trials' range: "11.4 [10.7-12.1]" (no range for one trial)."""
    if m.get(metric) is None:
        return "-"
    text = f"{m[metric]:.{digits}f}"
    lo, hi = m.get(f"{metric}_min"), m.get(f"{metric}_max")
    if lo is not None and lo != hi:
        text += f" [{lo:.{digits}f}-{hi:.{digits}f}]"
    return text


def markdown(rep: dict) -> str:
    """The report's two tables in Markdown (``placement.md``): read latency per system, window
    and placement, predicted beside measured with the trials' ranges; then each comparison's
    ratio, range and verdict."""
    kill = rep.get("killed") or {}
    lines = ["# Single-key read latency, ms", "",
             "Measured: every trial's reads pooled in one histogram, [min-max over trials]; latency from each "
             "read's intended start; start lag: how far behind its schedule a read started, mean (reads over "
             f"{LATE_MS:g} ms). Predicted: the placement model on the trial's own placement, K2's cache filling "
             "from empty (a local read costs 0 ms)"
             + (f"; after the kill (at {kill['at_s']:g} s, clients: {kill['clients']}, its window "
                f"{kill['settle_s']:g} s later) the redirected clients as K2's client serves them: through the "
                "nearest survivor's cache, a miss paying the hop twice (docs/placement.md)" if kill else "") + ".",
             "",
             "| system | window | placement | trials | predicted mean / p90 | measured mean | measured p50 "
             "| measured p90 | failed reads | start lag, ms |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for g in rep.get("groups", []):
        m, p = g["measured"], g["predicted"]
        pred = "-" if p.get("mean") is None else f"{p['mean']:.1f} / {p['p90']:.0f}"
        if p.get("unavailable_share"):
            pred += f", {100 * p['unavailable_share']:.1f}% unavailable"
        failed = f"{m['failed_reads']}" + (f" ({100 * m['failed_share']:.1f}%)" if m["failed_reads"] else "")
        lag = "-" if m.get("start_lag_mean_ms") is None else f"{m['start_lag_mean_ms']:.1f} ({m['late_starts']})"
        lines.append(f"| {g['system']} | {_phase_text(g['phase'], g['killed'])} | {g['placement']} | {g['trials']} "
                     f"| {pred} | {_range(m, 'mean', 1)} | {_range(m, 'p50', 1)} | {_range(m, 'p90', 0)} "
                     f"| {failed} | {lag} |")
    if rep.get("comparisons"):
        lines += ["", "# Measured: a against b", "",
                  "Ratio of the pooled values [range over trials] and the verdict (\"within noise\" where the "
                  "trials' ranges overlap).", "",
                  "| system | window | a vs b | mean | p50 | p90 |", "| --- | --- | --- | ---: | ---: | ---: |"]
        for (system, phase, killed, a, b), ms in _comparison_rows(rep).items():
            cells = [_ratio(ms.get(metric)) for metric in ("mean", "p50", "p90")]
            lines.append(f"| {system} | {_phase_text(phase, killed)} | {a} vs {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _comparison_rows(rep: dict) -> dict[tuple, dict]:
    """The comparisons a row each: (system, phase, killed, a, b) -> {metric: comparison}."""
    rows: dict[tuple, dict] = {}
    for c in rep["comparisons"]:
        rows.setdefault((c["system"], c["phase"], c["killed"], c["a"], c["b"]), {})[c["metric"]] = c
    return rows


def _ratio(c: dict | None) -> str:
    if not c or c.get("ratio") is None:
        return "-"
    rng = f" [{c['ratio_min']:.2f}-{c['ratio_max']:.2f}]" if c.get("ratio_min") is not None else ""
    return f"{c['ratio']:.2f}x{rng} {c['verdict']}"


def has_placements(exp: dict) -> bool:
    """Whether a run sweeps or sets topology.place (the run then prints this report)."""
    return "topology.place" in (exp.get("sweep") or {}) or exp.get("topology", {}).get("place", "none") != "none"


def check_run(run_dir: Path) -> None:
    read_manifest(run_dir)
