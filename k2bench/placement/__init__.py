"""Latency-aware replica placement (``k2bench demand``, ``k2bench place``), after "Latency-aware
replica placement": per key, the f replica datacenters chosen from the key's per-datacenter
demand and the inter-datacenter delays, written as a placement table (``placement: table``).

Two models, both a mixed-integer program solved by HiGHS (``scipy.optimize.milp``):

- **BA** ("basic availability"): minimise the demand-weighted mean read latency with every
  replica up.
- **N-1C**: minimise the read latency under the worst single-datacenter failure (per bucket),
  with 0.01 x the BA objective as a tie-break (``N1C_NORMAL_WEIGHT``) so that among the
  placements equally good under failure the one best in normal operation wins.

**The latency model is K2's read path** (PaRiS*'s too). A read from datacenter i of a key
costs 0 when i holds a replica of the key, else rtt(i, j) to the nearest replica datacenter
j: K2 reads a non-local key from its nearest replica in one wide-area round. K2's datacenter
cache makes such a read a local one when it hits; with ``cache_keys`` (a datacenter's cache
capacity in keys; the ``placement`` experiment gives K2's) the objective counts it
(``cache_hits``: a read of a key hits when, since the key's last write by another datacenter,
its datacenter read or wrote it and LRU still holds it, in steady state; a key's hit
probability depends on the placement only through which keys compete for the cache, so the
program is solved with the hits of the previous solution's placement until the placement
settles). Without it the objective is the nearest replica's latency, for K2 an upper bound.
Writes are local in K2 (replicated asynchronously), so the objective counts reads only;
writes enter the cache term (they invalidate other datacenters' copies) and are reported.
**A failure** is the one the paper's experiment ran (§VIII-E): the storage of datacenter k
stops, its application servers go on and send their requests to the closest surviving
datacenter c (by RTT), whose coordinator reads the replicas; so k's readers keep reading at
rtt(k, c) + c's latency to its nearest surviving replica (``redirect_dc``, ``set_latency``;
the paper's form and the solver's objective). (Where the RTTs break the triangle
inequality, 8 pairs of the K2 paper's matrix, this is above rtt(k, nearest surviving
replica), a user-to-replica form the paper's model section may use; the excerpt we have
does not give it.) They count as cache misses, one hop from c (the paper's coordinator;
the placement report predicts K2's client instead, which shares c's cache and pays the hop
twice on a miss: ``placement_report.failure_stats``). N-1C's objective is the paper's
per-key worst case over every single-datacenter failure and every reader, displaced ones
included.

**The program** (``solve``). The paper's form chooses x[b, j] (bucket b has a replica at j)
with routing variables y (and, for N-1C, per failure z and a worst-case t_b); since the
nearest-replica routing and a bucket's worst failure are functions of its replica set alone,
the same program is solved as a choice of one of the C(D, f) replica sets per bucket, whose
cost is computed exactly beforehand. Same optimum, far tighter LP relaxation: N-1C on a few
hundred buckets solves in under a second instead of running past 15 minutes (both forms are
kept; the tests check both against brute force).

**Storage balance.** Every datacenter holds at most ceil(balance x f x N / D) keys (N: all
keys, those without demand included; D: datacenters). Without the bound every hot key would
land in the central datacenters.

**Buckets** (``bucketize``; so a million keys solve in seconds on two cores). The objective is
linear in a key's read vector, so keys whose read vectors point the same way want the same
replicas and can share one set of variables:

1. the ``hot`` most-read keys (default 256) get a bucket each;
2. every other key with reads is grouped by its *signature*, its normalised read vector
   (reads per datacenter / the key's reads) with each share rounded to a multiple of
   1/``levels`` (default 4): keys read mostly in one datacenter, or split between two, etc.,
   group together whatever their volume;
3. keys with no reads (never read, or written only) form one group of their own;
4. every group is cut into chunks of at most ``chunk`` keys (default ceil(N / (4 D))), its
   keys taken from the most read down (ties by id), so the storage bound can split a group
   over several replica sets, and the chunk holding a group's hottest keys is the one the
   optimiser gives the best set when the bound binds.

A bucket's demand is the sum of its keys'. Bucket labels are numbered from the most read
bucket down. The solve's (and the table's) granularity is the bucket, the predictions are
exact for the keys' own demand.

**Table** (``write_table``/``read_table``): the CSV file ``placement: table`` reads (Java
``PlacementTable``): ``#`` comments, the header ``ids,replicas,bucket``, then rows
``id`` or ``first-last``, the f replica datacenters joined by ``;`` (the first loads the
keys: here the replica of the bucket that reads most), the bucket label.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ConfigError
from .demand import _stderr
from .table import _atomic_write
from .topology import (  # noqa: F401 - the package's API
    MODELS,
    Topology,
    load_topology,
)
from .table import (  # noqa: F401 - the package's API
    HEADER,
    HEADERS,
    read_table,
    table_text_rows,
    write_bytes_atomic,
    write_table,
)
from .demand import (  # noqa: F401 - the package's API
    DEMAND_COLUMNS,
    PERMUTATION_MULTIPLIER,
    PERMUTATION_OFFSET,
    _history_dc,
    demand_from_run,
    demand_matrices,
    draw_probabilities,
    expected_demand,
    id_of_rank,
    permutation_multiplier,
)
from .predict import (  # noqa: F401 - the package's API
    failure_hits,
    predict,
    read_stats,
    redirect_dc,
    set_latency,
    weighted_stats,
)
from .solve import (  # noqa: F401 - the package's API
    Bucketing,
    FORMULATIONS,
    N1C_NORMAL_WEIGHT,
    Solved,
    bucketize,
    cache_hits,
    capacity,
    che_time,
    check_args,
    in_cache_filling,
    lru_hits,
    objective_of,
    objective_quantile,
    solve,
)


NOT_THE_OPTIMISER = ("report.py", "bench.py")


def code_fingerprint(package: Path | None = None) -> str:
    """What a placement's output depends on besides its inputs: the optimiser's source (this
    package but its report and bench, which compute no table) and the solver's version (part
    of the cache key of ``topology.place``'s tables, so a changed optimiser never reuses a
    table the old one wrote)."""
    import hashlib

    import scipy
    h = hashlib.sha256()
    for f in sorted((package or Path(__file__).parent).glob("*.py")):
        if f.name in NOT_THE_OPTIMISER:
            continue
        h.update(f.name.encode() + f.read_bytes())
    return h.update(scipy.__version__.encode()) or h.hexdigest()[:16]


MODEL_VERSION = 2  # bump when a table for the same inputs would come out differently
CACHE_ROUNDS = 4  # with a cache term: re-solves on the last placement's hits, at most


@dataclass
class Placement:
    """A computed placement: per key id its replica set (an index into ``sets``, tuples of
    datacenter names in replica order) and bucket; ``predictions`` (``predict``); ``info``:
    how it was made (model, keys, buckets, bound, solve time, solver status, objective)."""
    set_per_id: np.ndarray
    sets: list[tuple[str, ...]]
    bucket_per_id: np.ndarray
    predictions: dict
    info: dict = field(default_factory=dict)

    def comment_lines(self, demand_source: str) -> list[str]:
        i, o = self.info, self.predictions["overall"]
        crit = o["most_critical_dc"]
        minimises = i.get("minimises", "mean")
        return [f"k2bench place --model {i['model']}" + (f" --objective {minimises}" if minimises != "mean" else "")
                + ": latency-aware placement (HiGHS MILP, K2's read latency model)",
                f"demand: {demand_source}",
                f"{i['keys']} keys, replication factor {i['f']}, {i['buckets']} buckets, balance {i['balance']} "
                f"(at most {i['bound_per_dc']} keys per datacenter)" + (", one replica per group" if i["one_per_group"]
                                                                         else ""),
                f"predicted mean read latency: {o['normal']['mean']} ms normal"
                + (f", {o['failure'][crit]['mean']} ms with {crit} (the most critical datacenter) failed" if crit else ""),
                "rows: ids (an id or an inclusive range of the keys user<id>), replicas (the first loads the keys), "
                "bucket (the optimiser's)"]

    def sidecar(self, demand_source: str) -> dict:
        return {**self.info, "demand": demand_source, "predictions": self.predictions["overall"],
                "per_bucket": self.predictions["buckets"]}

    def write(self, path, demand_source: str) -> Path:
        """The table at ``path`` and its predictions at ``path.json``, each written whole
        (temporary file + rename; the sidecar first, so a table is never newer than its
        predictions' file). Returns the sidecar's path."""
        path = Path(path)
        side = Path(str(path) + ".json")
        doc = self.sidecar(demand_source)
        _atomic_write(side, lambda out: out.write(json.dumps(doc, indent=1) + "\n"))
        write_table(path, self.set_per_id, self.sets, self.bucket_per_id, self.comment_lines(demand_source))
        return side


def place(demand, topology, model: str = "ba", f: int | None = None, balance: float = 1.2,
          one_per_group: bool = False, buckets: Bucketing | str | None = None, keys: int | None = None,
          time_limit_s: float = 600.0, mip_rel_gap: float = 1e-4, formulation: str = "sets",
          progress: Callable[[str], None] | None = _stderr, objective: str = "mean",
          cache_keys: float = 0, cache_window: tuple[float, float, float] | None = None) -> Placement:
    """The placement of every key id 0..keys-1 (default: the largest key id of the demand + 1)
    for ``demand`` (long DataFrame: key_id, dc, reads, writes) on ``topology`` (a path or a
    document; ``f`` overrides its replication_factor) under ``model`` (ba or n-1c): buckets the
    keys, solves the MILP (``solve``), orders each set's replicas from the most read down and
    predicts the read latency. ``objective``: mean, or a percentile (``p90``; see ``solve``).
    ``cache_keys``: each datacenter's cache capacity in keys (K2's DC cache), counted in the
    objective and the predictions (``cache_hits``), 0 for none; in steady state, or with
    ``cache_window`` warming up from empty over a trial's window (``cache_hits``).
    ``progress`` gets the bucket count and "solving ..." lines."""
    progress = progress or (lambda msg: None)
    if model not in MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {model!r}")
    topo = load_topology(topology, f)
    bucketing = buckets if isinstance(buckets, Bucketing) else Bucketing.parse(buckets)
    reads, writes, n = demand_matrices(demand, topo.dcs, keys)
    if not cache_keys >= 0:
        raise ConfigError("--cache-keys", f"must be >= 0 keys per datacenter, got {cache_keys}")
    if keys is None:
        progress(f"placing {n} keys: the demand's largest key id + 1 (--keys N when the workload has more)")
    check_args(topo, model, balance, one_per_group, n)
    objective_quantile(objective)  # a bad objective is refused before the work
    t0 = time.monotonic()
    bucket = bucketize(reads, bucketing)
    n_hot = min(bucketing.hot, int((reads.sum(axis=1) > 0).sum()))
    nb = int(bucket.max()) + 1
    sizes = np.bincount(bucket, minlength=nb)
    reads_b = np.stack([np.bincount(bucket, weights=reads[:, j], minlength=nb) for j in range(topo.d)], axis=1)
    writes_b = np.stack([np.bincount(bucket, weights=writes[:, j], minlength=nb) for j in range(topo.d)], axis=1)
    progress(f"{n} keys in {nb} buckets ({n_hot} hot, chunks of at most "
             f"{bucketing.chunk or max(1, math.ceil(n / (4 * topo.d)))} keys)")
    progress(f"solving {model.upper()} for the {objective} (HiGHS, {topo.d} datacenters, f = {topo.f}, balance "
             f"{balance}" + (f", a cache of {cache_keys:g} keys per datacenter" if cache_keys else "") + ") ...")
    hits_b, rounds, seconds, settled = None, 0, 0.0, None
    q = objective_quantile(objective)
    pct = None if q is None else round(q * 100, 6)
    solved = solve(reads_b, sizes, topo, model, balance, one_per_group, n, time_limit_s, mip_rel_gap, formulation,
                   objective)
    seconds += solved.seconds

    def hits_of(sets):  # each bucket's reads per datacenter its cache serves, with ``sets`` placed
        member = np.zeros((nb, topo.d), dtype=bool)
        for b, members in enumerate(sets):
            member[b, list(members)] = True
        hit = cache_hits(reads, writes, member[bucket], cache_keys, cache_window)
        return np.stack([np.bincount(bucket, weights=reads[:, j] * hit[:, j], minlength=nb)
                         for j in range(topo.d)], axis=1)

    def score(sets, hits):  # the objective of a placement with its own hits: (percentile,) mean
        mean = objective_of(sets, reads_b, topo, model, hits)
        if q is None:
            return (mean,)
        uniq: dict[tuple[int, ...], int] = {}
        of_bucket = np.array([uniq.setdefault(tuple(x), len(uniq)) for x in sets])
        o = predict(of_bucket, list(uniq), reads_b, writes_b, sizes, topo, hits, (pct,))["overall"]
        key = "p" + (str(int(pct)) if float(pct).is_integer() else str(pct))
        worst = o["normal"][key] if model == "ba" else max(f[key] for f in o["failure"].values()
                                                             if f[key] is not None)
        return (worst, mean)
    if cache_keys:
        # The hits depend on the placement (which keys compete for the cache): solve on the
        # last placement's hits until the placement settles, and keep the best by its own.
        hits_b = hits_of(solved.sets)
        best, best_score, best_hits = solved, score(solved.sets, hits_b), hits_b
        while rounds < CACHE_ROUNDS:
            rounds += 1
            again = solve(reads_b, sizes, topo, model, balance, one_per_group, n, time_limit_s, mip_rel_gap,
                          formulation, objective, hits_b)
            seconds += again.seconds
            settled = again.sets == solved.sets
            solved = again
            if settled:
                break
            hits_b = hits_of(solved.sets)
            this = score(solved.sets, hits_b)
            if this < best_score:
                best, best_score, best_hits = solved, this, hits_b
        solved, hits_b = best, best_hits
        progress(f"cache term: {rounds} re-solve(s), {'settled' if settled else 'not settled'}; kept the best "
                 "placement by its own hits")
    del reads, writes
    # replica order: the bucket's most-read replica first (it loads the keys), ties by topology order
    index: dict[tuple[int, ...], int] = {}
    set_of_bucket = np.empty(nb, dtype=np.int64)
    for b, members in enumerate(solved.sets):
        ordered = tuple(sorted(members, key=lambda j: (-reads_b[b, j], -writes_b[b, j], j)))
        set_of_bucket[b] = index.setdefault(ordered, len(index))
    sets_idx = list(index)
    predictions = predict(set_of_bucket, sets_idx, reads_b, writes_b, sizes, topo, hits_b,
                          tuple(sorted({50, 90} | ({pct} if pct is not None else set()))))
    keys_per_dc = {dc: int(sum(sizes[b] for b in range(nb) if j in solved.sets[b])) for j, dc in enumerate(topo.dcs)}
    info = {"model": model, "model_version": MODEL_VERSION, "keys": n, "f": topo.f, "datacenters": topo.dcs,
            "balance": balance, "one_per_group": one_per_group, "buckets": nb,
            "bucketing": {"hot": bucketing.hot, "levels": bucketing.levels,
                          "chunk": bucketing.chunk or max(1, math.ceil(n / (4 * topo.d)))},
            "bound_per_dc": capacity(n, topo.f, topo.d, balance), "keys_per_dc": keys_per_dc,
            "solve_s": round(seconds, 3), "total_s": round(time.monotonic() - t0, 3),
            "cache_keys_per_dc": cache_keys, "cache_window": list(cache_window) if cache_window else None,
            "cache_rounds": rounds, "cache_settled": settled,
            "status": solved.status, "mip_gap": solved.gap, "minimises": objective,
            "threshold_ms": solved.threshold_ms, "objective": solved.objective,
            "objective_exact": objective_of(solved.sets, reads_b, topo, model, hits_b),
            "n1c_normal_weight": N1C_NORMAL_WEIGHT if model == "n-1c" else None,
            "milp": {"formulation": formulation, "variables": solved.variables, "constraints": solved.constraints}}
    return Placement(set_of_bucket[bucket], [tuple(topo.dcs[j] for j in s) for s in sets_idx], bucket,
                     predictions, info)


def place_cache_keys(cfg: dict) -> float:
    """topology.place_cache: the datacenter cache's capacity in keys the optimiser counts
    (server.cache_fraction of workload.keys per datacenter), else 0."""
    return float(cfg["server"]["cache_fraction"]) * int(cfg["workload"]["keys"]) \
        if cfg["topology"].get("place_cache") else 0.0


EXPECTED_DRAWS = 1_000_000  # the expected demand's draws per datacenter (place_for_experiment)


def place_cache_window(cfg: dict) -> tuple[float, float, float] | None:
    """With topology.place_cache on the expected demand of a paced workload: the trial's
    cache warms from empty, so the optimiser counts the hits of its normal-operation window
    (warm-up end to the first kill, or the end), as the placement report predicts them:
    (rate per expected draw per second, window start, end). None otherwise (steady state)."""
    ops = cfg["clients"].get("target_ops_per_s_per_dc")
    if not place_cache_keys(cfg) or not ops or cfg["topology"].get("place_demand", "expected") != "expected":
        return None
    d = cfg["duration"]
    kills = [f["at_s"] for f in cfg.get("faults") or [] if f.get("kind") == "kill" and f.get("dc")]
    end = min([d["warmup_s"] + d["measure_s"], *kills])
    return float(ops) / EXPECTED_DRAWS, float(d["warmup_s"]), float(end)


def place_for_experiment(doc: dict, cfg: dict, out: Path, workloads: Path) -> None:
    """An experiment point's table (``topology.place``): the point's own expected demand
    (``place_demand: expected``: ``expected_demand`` of its workload, the same number of draws
    in every datacenter, reads and writes split by its write_fraction) or a demand parquet of
    ``k2bench demand`` (relative to workloads/), placed by ``place`` and written with its
    predictions (``Placement.write``)."""
    t, w = cfg["topology"], cfg["workload"]
    topo = load_topology(doc)
    n = int(w["keys"])
    try:
        if t.get("place_demand", "expected") == "expected":
            wf = float(w.get("write_fraction", 0) or 0)
            demand = expected_demand(n, float(w["zipf"]), float(w.get("locality", 0) or 0), topo.dcs,
                                     EXPECTED_DRAWS * (1 - wf), EXPECTED_DRAWS * wf)
            source = (f"expected (the workload's key choice: {n} keys, zipf {w['zipf']}, locality "
                      f"{w.get('locality', 0)}, equal draws per datacenter)")
        else:
            import pandas as pd
            demand = pd.read_parquet(Path(workloads) / t["place_demand"])
            source = str(t["place_demand"])
        _stderr(f"placing {n} keys ({t['place']}, balance {t.get('place_balance', 1.2)}) ...")
        placed = place(demand, doc, t["place"], balance=float(t.get("place_balance", 1.2)), keys=n,
                       objective=t.get("place_objective", "mean"), cache_keys=place_cache_keys(cfg),
                       cache_window=place_cache_window(cfg))
    except ConfigError as e:
        raise ConfigError(f"topology.place ({e.field})", e.problem) from None
    placed.write(out, source)
    o = placed.predictions["overall"]
    _stderr(f"placed in {placed.info['solve_s']} s: predicted mean read latency {o['normal']['mean']} ms")
