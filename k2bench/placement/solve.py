"""The program: key buckets, the cache term, and the mixed-integer program (BA or N-1C) HiGHS
solves through scipy's milp."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..errors import ConfigError
from .predict import failure_hits, redirect_dc, set_latency
from .topology import MODELS, Topology

FORMULATIONS = ("sets", "xyz")  # solve's two equivalent programs (see there)
N1C_NORMAL_WEIGHT = 0.01  # N-1C's tie-break: this x the BA objective is added to the failure objective


@dataclass
class Bucketing:
    """How keys are bucketed (see the module docstring): ``hot`` most-read keys one bucket
    each; the others by their read vector's shares rounded to multiples of 1/``levels``;
    groups cut into chunks of at most ``chunk`` keys (None: ceil(N / (4 D)))."""
    hot: int = 256
    levels: int = 4
    chunk: int | None = None

    @classmethod
    def parse(cls, spec: str | None) -> "Bucketing":
        """``hot=256,levels=4,chunk=40000`` (any subset)."""
        b = cls()
        for part in (spec or "").split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or name not in ("hot", "levels", "chunk"):
                raise ConfigError("--buckets", f"{part.strip()!r}: give hot=N, levels=N and/or chunk=N, comma-separated")
            try:
                v = int(value)
            except ValueError:
                raise ConfigError("--buckets", f"{name} must be an integer, got {value.strip()!r}") from None
            if v < (0 if name == "hot" else 1):
                raise ConfigError("--buckets", f"{name} must be >= {0 if name == 'hot' else 1}, got {v}")
            setattr(b, name, v)
        return b


def bucketize(reads: np.ndarray, bucketing: Bucketing | None = None) -> np.ndarray:
    """The bucket label of every key id of ``reads`` ([N, D]); labels 0.. from the most read
    bucket down (see the module docstring)."""
    b = bucketing or Bucketing()
    n, d = reads.shape
    if (b.levels + 1) ** d >= 2 ** 62:
        raise ConfigError("--buckets", f"levels={b.levels} is too fine for {d} datacenters")
    total = reads.sum(axis=1)
    read = total > 0
    ids = np.arange(n, dtype=np.int64)
    group = np.full(n, -1, dtype=np.int64)  # -1: no reads
    share = reads[read] / total[read, None]
    q = np.rint(share * b.levels).astype(np.int64)
    group[read] = q @ ((b.levels + 1) ** np.arange(d, dtype=np.int64))
    n_hot = min(b.hot, int(read.sum()))
    if n_hot:
        hottest = np.lexsort((ids, -total))[:n_hot]
        group[hottest] = (b.levels + 1) ** d + np.arange(n_hot)  # a group of its own each
    chunk = b.chunk or max(1, math.ceil(n / (4 * d)))
    order = np.lexsort((ids, -total, group))  # by group, in it from the most read down
    g_sorted = group[order]
    first = np.flatnonzero(np.concatenate(([True], g_sorted[1:] != g_sorted[:-1])))
    group_no = np.cumsum(np.concatenate(([True], g_sorted[1:] != g_sorted[:-1]))) - 1
    pos = np.arange(n) - first[group_no]
    raw = np.empty(n, dtype=np.int64)
    raw[order] = group_no * (n // chunk + 2) + pos // chunk
    _, label = np.unique(raw, return_inverse=True)
    label = label.ravel()
    # number the buckets from the most read down (ties: the smallest id first)
    nb = int(label.max()) + 1
    mass = np.bincount(label, weights=total, minlength=nb)
    smallest = np.full(nb, n, dtype=np.int64)
    np.minimum.at(smallest, label, ids)
    rank = np.empty(nb, dtype=np.int64)
    rank[np.lexsort((smallest, -mass))] = np.arange(nb)
    return rank[label]


# ------------------------------------------------------------------ the program

@dataclass
class Solved:
    sets: list[tuple[int, ...]]  # per bucket: its replica datacenters (indexes, ascending)
    objective: float             # the solver's objective value
    seconds: float
    status: str
    gap: float | None
    variables: int
    constraints: int
    threshold_ms: float | None = None  # a percentile objective's optimum (the percentile's latency)


def check_args(topo: Topology, model: str, balance: float, one_per_group: bool, keys: int) -> None:
    """The model, bound and groups fit the topology (else a ConfigError naming the flag)."""
    d, f = topo.d, topo.f
    if model not in MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {model!r}")
    if model == "n-1c" and f < 2:
        raise ConfigError("--model", "n-1c plans for a datacenter failure, so a key needs a second replica: "
                          f"replication_factor must be >= 2, got {f}")
    if one_per_group and d % f:
        raise ConfigError("--one-per-group", f"the groups (datacenter index modulo f) need f ({f}) to divide the "
                          f"{d} datacenters")
    if not balance >= 1:
        raise ConfigError("--balance", f"must be >= 1 (1: every datacenter holds f N / D keys), got {balance}")
    cap = capacity(keys, f, d, balance)
    if cap * d < f * keys:
        raise ConfigError("--balance", f"{balance}: {d} datacenters of at most {cap} keys cannot hold {f} replicas "
                          f"of {keys} keys; raise it")


def capacity(keys: int, f: int, d: int, balance: float) -> int:
    """The most keys a datacenter may hold: ceil(balance f N / D)."""
    return math.ceil(balance * f * keys / d - 1e-9)


def che_time(rates: np.ndarray, capacity: float) -> float:
    """The characteristic time T of Che's approximation of an LRU cache of ``capacity`` keys
    under independent requests at ``rates``: sum_k (1 - exp(-rate_k T)) = capacity (by
    bisection); inf when every requested key fits, 0 without a cache."""
    live = rates > 0
    if capacity <= 0 or not live.any():
        return 0.0
    if capacity >= live.sum():
        return math.inf
    lo, hi = 0.0, 1.0
    while (1 - np.exp(-rates * hi)).sum() < capacity:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (1 - np.exp(-rates * mid)).sum() < capacity else (lo, mid)
    return hi


def lru_hits(rates: np.ndarray, capacity: float) -> np.ndarray:
    """Che's approximation: key k is in an LRU cache of ``capacity`` keys with probability
    1 - exp(-rate_k T) (``che_time``). All ones (for keys requested) when every key fits."""
    return _in_cache(rates, che_time(rates, capacity))


def _in_cache(rates: np.ndarray, t: float) -> np.ndarray:
    if t == math.inf:
        return (rates > 0).astype(float)
    return 1 - np.exp(-rates * t)


def in_cache_filling(rates: np.ndarray, t: float, a: float, b: float) -> np.ndarray:
    """LRU's share of Che's approximation over [a, b] s from an empty cache at 0, ``rates``
    per second and ``t`` Che's time in seconds: an empty cache has touched as many distinct
    keys as it holds, in expectation, at t itself, so it evicts nothing before t (the
    freshness term already says whether a key was touched) and holds a key with
    probability 1 - exp(-rate t) after it."""
    if t == math.inf or b <= t:
        return np.ones_like(rates, dtype=np.float64)
    before = max(0.0, t - a) / (b - a)
    return before + (1 - before) * _in_cache(rates, t)


def cache_hits(reads: np.ndarray, writes: np.ndarray, local: np.ndarray, capacity: float,
               window: tuple[float, float, float] | None = None, filling: bool = False) -> np.ndarray:
    """[key, dc]: in steady state, the probability that a read of key k in datacenter i hits
    i's cache (K2 §III-A: non-replica values are cached after a fetch, and local clients'
    writes of non-replica keys; LRU of ``capacity`` keys): i read or wrote k since another
    datacenter last wrote it, (r + w_i) / (r + w_i + w_others) with Poisson reads and
    writes at the demand's rates, times the probability that LRU holds k among i's non-local
    keys (``lru_hits``). Given for every key as if i held no replica of it (a read of a local
    key costs 0 either way): ``local`` says only which keys compete for i's cache, so a key the
    next solve moves away from i is not charged as if i could not cache it.

    ``window = (per_s, a, b)``: not in steady state but from an empty cache at time 0, averaged
    over the measurement window [a, b] s, the counts times ``per_s`` being rates per second:
    the first term becomes (r + w_i) / c x (1 - exp(-c t)) with c = r + w_i + w_others, whose
    mean over [a, b] is 1 - (exp(-c a) - exp(-c b)) / (c (b - a)) (what a trial measures).
    With ``filling`` too, LRU is not at its steady state either (``in_cache_filling``; the
    placement report's prediction: a trial's caches evicted nothing in run 20261202T213511Z;
    the solver's cache term keeps the steady state)."""
    hit = np.zeros_like(reads, dtype=np.float64)
    w_all = writes.sum(axis=1)
    for i in range(reads.shape[1]):
        mine = reads[:, i] + writes[:, i]
        c = mine + (w_all - writes[:, i])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            fresh = np.where(c > 0, mine / c, 0.0)
            if window is not None:
                per_s, a, b = window
                cs = c * per_s
                fresh = fresh * np.where(cs > 0, 1 - (np.exp(-cs * a) - np.exp(-cs * b)) / (cs * (b - a)), 0.0)
        t = che_time(mine[~local[:, i]], capacity)
        if filling and window is not None:
            per_s, a, b = window
            hit[:, i] = fresh * in_cache_filling(mine * per_s, t / per_s, a, b)
        else:
            hit[:, i] = fresh * _in_cache(mine, t)
    return hit


def objective_quantile(objective: str) -> float | None:
    """The quantile a percentile objective names (``p90``: 0.9), None for ``mean``; else a
    ConfigError naming --objective."""
    if objective == "mean":
        return None
    try:
        q = float(objective[1:]) / 100 if objective[:1] == "p" else None
    except ValueError:
        q = None
    if q is None or not 0 < q < 1:
        raise ConfigError("--objective", f"must be mean or a percentile p1..p99.9 (e.g. p90), got {objective!r}")
    return q


def _coverage_groups(reads_b: np.ndarray, hits_b: np.ndarray, candidates: list[tuple[int, ...]], topo: Topology,
                     model: str):
    """What a percentile objective bounds, per population of reads: (misses' weights, [set, i]
    latency, the share of cache hits), weights and hits as shares of the population's reads.
    BA: every read in normal operation. N-1C: for each datacenter k, every read under k's
    failure (k's own readers redirected, ``set_latency``)."""
    out = []
    total = reads_b.sum()
    if total <= 0:
        return out
    for k in ([None] if model == "ba" else range(topo.d)):
        hits = hits_b if k is None else failure_hits(hits_b, k)
        out.append(((reads_b - hits) / total, set_latency(candidates, topo.rtt, k), float(hits.sum() / total)))
    return out


def _solve_xyz(w: np.ndarray, sizes: np.ndarray, topo: Topology, model: str, cap: int, one_per_group: bool,
               time_limit_s: float, mip_rel_gap: float):
    """The program as the paper states it (``formulation="xyz"``; weights ``w``: each bucket's
    reads per datacenter / all reads). x[b, j] binary: bucket b has a replica at j;
    sum_j x[b, j] = f. y[b, i, j] in [0, 1] (for the datacenters i that read b): i reads b
    from j; sum_j y = 1, y <= x. BA minimises sum_b sum_i w[b, i] sum_j rtt(i, j) y[b, i, j].
    Storage: sum_b size_b x[b, j] <= cap. one_per_group: sum_{j = g mod f} x[b, j] = 1.
    N-1C: z[b, k, i, j] (j != k) routes i's reads to a survivor of k's failure (sum_j z = 1,
    z <= x), t_b >= sum_i w[b, i] sum_{j != k} lat_k(i, j) z[b, k, i, j] for every k, where
    lat_k(i, j) = rtt(i, j), and for k's own readers, sent to c = redirect_dc(k),
    rtt(k, c) + rtt(c, j),
    and the objective is sum_b t_b + N1C_NORMAL_WEIGHT x the BA objective. Same optimum as
    the set form; its LP relaxation is weak under N-1C (fractional x shrink the worst failure),
    so HiGHS branches long: a few hundred buckets of N-1C ran past 15 minutes here."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    d, f, rtt = topo.d, topo.f, topo.rtt
    B = len(sizes)
    pb, pi = np.nonzero(w > 0)  # (bucket, reader) pairs
    P = len(pb)
    nx, ny = B * d, P * d
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    nrow = 0

    def add(r, c, v, low, high, count):
        nonlocal nrow
        rows.append(np.asarray(r, dtype=np.int64) + nrow)
        cols.append(np.asarray(c, dtype=np.int64))
        vals.append(np.broadcast_to(np.asarray(v, dtype=np.float64), np.shape(c)).ravel())
        lo.append(np.full(count, float(low)))
        hi.append(np.full(count, float(high)))
        nrow += count

    jj = np.arange(d)
    xcol = (np.arange(B)[:, None] * d + jj).ravel()
    add(np.repeat(np.arange(B), d), xcol, 1.0, f, f, B)                      # sum_j x = f
    ycol = nx + np.arange(ny)
    add(np.repeat(np.arange(P), d), ycol, 1.0, 1, 1, P)                      # sum_j y = 1
    ry = np.arange(ny)
    add(np.concatenate([ry, ry]), np.concatenate([ycol, np.repeat(pb, d) * d + np.tile(jj, P)]),
        np.concatenate([np.ones(ny), -np.ones(ny)]), -np.inf, 0, ny)        # y <= x
    add(np.tile(jj, B), xcol, np.repeat(sizes.astype(np.float64), d), -np.inf, cap, d)  # storage
    if one_per_group:
        add(np.repeat(np.arange(B), d) * f + np.tile(jj % f, B), xcol, 1.0, 1, 1, B * f)
    c = np.zeros(nx + ny)
    c[nx:] = (N1C_NORMAL_WEIGHT if model == "n-1c" else 1.0) * (w[pb, pi][:, None] * rtt[pi, :]).ravel()
    n_vars = nx + ny
    tcols = None
    if model == "n-1c":
        qp = np.repeat(np.arange(P), d)  # q = (pair p, failed k): z over the survivors j != k
        qk = np.tile(jj, P)
        Q = len(qp)
        jsurv = np.tile(np.arange(d - 1), Q).reshape(Q, d - 1)
        jsurv = jsurv + (jsurv >= qk[:, None])
        zcol = n_vars + np.arange(Q * (d - 1))
        n_vars += Q * (d - 1)
        tcols = n_vars + np.arange(B)
        n_vars += B
        add(np.repeat(np.arange(Q), d - 1), zcol, 1.0, 1, 1, Q)              # sum_j z = 1
        rz = np.arange(Q * (d - 1))
        qb = pb[qp]
        add(np.concatenate([rz, rz]), np.concatenate([zcol, np.repeat(qb, d - 1) * d + jsurv.ravel()]),
            np.concatenate([np.ones(len(rz)), -np.ones(len(rz))]), -np.inf, 0, len(rz))  # z <= x
        redirect = np.array([redirect_dc(rtt, k) for k in range(d)])
        own = pi[qp] == qk  # k's own readers, sent to redirect[k]
        via = np.where(own, redirect[qk], pi[qp])
        hop = np.where(own, rtt[qk, redirect[qk]], 0.0)
        coef = (w[qb, pi[qp]][:, None] * (hop[:, None] + rtt[via[:, None], jsurv])).ravel()
        add(np.concatenate([np.repeat(qb * d + qk, d - 1), np.arange(B * d)]),
            np.concatenate([zcol, np.repeat(tcols, d)]),
            np.concatenate([coef, -np.ones(B * d)]), -np.inf, 0, B * d)      # t_b >= failure latency
        c = np.concatenate([c, np.zeros(Q * (d - 1)), np.ones(B)])
    A = csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nrow, n_vars))
    integrality = np.zeros(n_vars)
    integrality[:nx] = 1
    upper = np.ones(n_vars)
    if tcols is not None:
        upper[tcols] = np.inf
    res = milp(c, constraints=LinearConstraint(A, np.concatenate(lo), np.concatenate(hi)),
               integrality=integrality, bounds=Bounds(np.zeros(n_vars), upper),
               options={"time_limit": float(time_limit_s), "mip_rel_gap": float(mip_rel_gap), "disp": False})
    sets = None
    if res.x is not None:
        x = res.x[:nx].reshape(B, d) > 0.5
        sets = [tuple(int(j) for j in np.flatnonzero(x[b])) for b in range(B)]
    return res, sets, n_vars, nrow


def solve(reads_b: np.ndarray, sizes: np.ndarray, topo: Topology, model: str, balance: float,
          one_per_group: bool, keys: int, time_limit_s: float = 600.0, mip_rel_gap: float = 1e-4,
          formulation: str = "sets", objective: str = "mean", hits_b: np.ndarray | None = None) -> Solved:
    """The MILP over buckets and candidate replica sets (weights: each bucket's reads per
    datacenter / all reads, so the BA objective is the mean read latency in ms).

    u[b, s] binary: bucket b is placed on the replica set s, one of the C(D, f) sets of f
    datacenters (with one_per_group only those with one datacenter of each group, by index
    modulo f); sum_s u[b, s] = 1. Storage: sum_b size_b sum_{s contains j} u[b, s] <=
    ceil(balance f N / D) for every j. The objective is sum_{b,s} cost[b, s] u[b, s], where
    a bucket's cost on a set is fixed by the set alone: BA, sum_i w[b, i] rtt(i, nearest
    member of s); N-1C, max over failed k of sum_i w[b, i] lat(i, nearest member of s other
    than k), the failed datacenter's own readers redirected (``set_latency``; the paper's
    per-key worst case), plus N1C_NORMAL_WEIGHT x the BA cost. Choosing a set per bucket is the same program as choosing x[b, j] with
    routing variables (nearest-replica routing and the per-bucket worst failure are functions
    of the chosen set), with B x C(D, f) binaries instead of B x D x (D - 1)^2 routes: a
    million keys' N-1C solves in seconds, not past a 10-minute limit. ``formulation="xyz"``
    solves the paper's own x/y/z program instead (``_solve_xyz``), as a cross-check (tests).

    ``objective="pNN"`` minimises a percentile of read latency instead of the mean: BA's over
    every read, N-1C's the worst over single-datacenter failures of every read.
    The p-th percentile is at most T exactly when reads served within T weigh at least p,
    and that weight is linear in u (a bucket's reads within T on a set are fixed by the
    set), so for a threshold T the program above with a coverage row per population
    (sum_{b,s} within_T[b, s] u[b, s] >= p) is feasible exactly when T is reachable. The
    latencies take only the topology's RTTs (and 0), so a binary search over those finds
    the least reachable T in a few solves; the last one also minimises the mean objective
    among the placements that reach it.

    ``hits_b`` (the set form only): each bucket's reads per datacenter that its cache serves
    (``cache_hits``); those cost 0 whatever the set, so only the misses are weighted by
    latency and a percentile's reads within T count the hits as given."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    if model not in MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {model!r}")
    d, f, rtt = topo.d, topo.f, topo.rtt
    B = len(sizes)
    check_args(topo, model, balance, one_per_group, keys)
    cap = capacity(keys, f, d, balance)
    if B and sizes.max() > cap:
        raise ConfigError("--buckets", f"a bucket of {int(sizes.max())} keys exceeds a datacenter's bound of {cap} "
                          "keys; give a smaller chunk")
    if formulation not in FORMULATIONS:
        raise ConfigError("--formulation", f"must be one of {', '.join(FORMULATIONS)}, got {formulation!r}")
    q = objective_quantile(objective)
    if formulation == "xyz" and q is not None:
        raise ConfigError("--objective", "a percentile objective is solved on the set formulation only")
    if formulation == "xyz" and hits_b is not None:
        raise ConfigError("--cache-keys", "the cache term is solved on the set formulation only")
    hits_b = np.zeros_like(reads_b, dtype=np.float64) if hits_b is None else hits_b
    threshold = None
    if formulation == "xyz":
        total = reads_b.sum()
        w = reads_b / total if total > 0 else np.zeros_like(reads_b)
        start = time.monotonic()
        res, sets, n_vars, n_rows = _solve_xyz(w, sizes, topo, model, cap, one_per_group, time_limit_s, mip_rel_gap)
        seconds = time.monotonic() - start
    else:
        res, sets, n_vars, n_rows, seconds = None, None, 0, 0, 0.0
    unproven = False
    if formulation == "sets":
        candidates = [c for c in combinations(range(d), f)
                      if not one_per_group or sorted(j % f for j in c) == list(range(f))]
        S = len(candidates)
        total = reads_b.sum()
        w = (reads_b - hits_b) / total if total > 0 else np.zeros_like(reads_b)  # misses, as shares of all reads
        cost = w @ set_latency(candidates, rtt).T               # [B, S]
        if model == "n-1c":
            worst = np.zeros((B, S))
            for k in range(d):
                wk = ((reads_b - failure_hits(hits_b, k)) / total  # k's readers redirected, as misses
                      if total > 0 else np.zeros_like(reads_b))
                worst = np.maximum(worst, wk @ set_latency(candidates, rtt, failed=k).T)
            cost = worst + N1C_NORMAL_WEIGHT * cost
        member = np.array([[j in c for j in range(d)] for c in candidates], dtype=np.float64)  # [S, D]
        n_vars, n_rows = B * S, B + d
        one = csr_matrix((np.ones(n_vars), (np.repeat(np.arange(B), S), np.arange(n_vars))), shape=(B, n_vars))
        # storage row j: sum_b size_b sum_s member[s, j] u[b, s]
        store = csr_matrix((np.outer(sizes.astype(np.float64), member.T.ravel()).reshape(B, d, S)
                            .transpose(1, 0, 2).reshape(d, n_vars)))
        start = time.monotonic()
        base = [LinearConstraint(one, 1, 1), LinearConstraint(store, -np.inf, cap)]

        def run(extra=()):
            left = max(1.0, time_limit_s - (time.monotonic() - start))
            return milp(cost.ravel(), constraints=[*base, *extra], integrality=np.ones(n_vars), bounds=Bounds(0, 1),
                        options={"time_limit": float(left), "mip_rel_gap": float(mip_rel_gap), "disp": False})
        if q is None:
            res = run()
        else:
            groups = _coverage_groups(reads_b, hits_b, candidates, topo, model)
            levels = sorted({0.0} | {float(x) for _, lat, _ in groups for x in np.unique(lat[np.isfinite(lat)])})

            def within(level):  # one coverage row per population: reads served within ``level`` ms
                rows = np.vstack([(wg @ (lat <= level + 1e-9).T).ravel() for wg, lat, _ in groups])
                return [LinearConstraint(csr_matrix(rows), np.array([q - hit - 1e-9 for _, _, hit in groups]),
                                         np.inf)]
            lo, hi = 0, len(levels) - 1
            res = run(within(levels[hi]))
            unproven = False
            while lo < hi and res.x is not None:  # the least reachable level; res: the last feasible solve
                mid = (lo + hi) // 2
                attempt = run(within(levels[mid]))
                if attempt.x is not None:
                    hi, res = mid, attempt
                elif attempt.status == 2:  # infeasible: the percentile is above this level
                    lo = mid + 1
                else:  # out of time (or the solver gave up) on this level: keep the last feasible one
                    unproven = True
                    break
            threshold = levels[hi]
            n_rows += len(groups)
        seconds = time.monotonic() - start
        if res.x is not None:
            sets = [candidates[c] for c in res.x.reshape(B, S).argmax(axis=1)]
    if res.x is None:
        hint = ("no placement within the time limit; raise --time-limit or coarsen --buckets" if res.status == 1
                else f"no placement satisfies the constraints ({res.message.strip()}); raise --balance"
                + (" or drop --one-per-group" if one_per_group else ""))
        raise ConfigError("--balance" if res.status != 1 else "--time-limit", hint)
    bad = [b for b, c in enumerate(sets) if len(c) != f]
    if bad:  # cannot happen with an integral solution; guards against rounding surprises
        raise RuntimeError(f"the solver gave bucket {bad[0]} {len(sets[bad[0]])} replicas, not {f}")
    gap = getattr(res, "mip_gap", None)
    status = res.message.strip()
    if q is not None and formulation == "sets" and unproven:
        status += f" (the time limit ended the search: {objective} at most {threshold} ms, not proven least)"
    return Solved(sets, float(res.fun), seconds, status, None if gap is None else float(gap),
                  n_vars, n_rows, threshold)


def objective_of(sets: list[tuple[int, ...]], reads_b: np.ndarray, topo: Topology, model: str,
                 hits_b: np.ndarray | None = None) -> float:
    """The model's mean objective of given bucket sets, computed directly (nearest replica,
    worst failure, the cache's hits at 0): what ``solve`` minimises for the mean."""
    total = reads_b.sum()

    def misses(hits):  # as shares of all reads
        m = reads_b - hits if hits is not None else reads_b
        return m / total if total > 0 else np.zeros_like(reads_b, dtype=np.float64)
    w = misses(hits_b)
    if not len(sets):
        return 0.0
    # per distinct replica set (a few dozen), not per bucket: tens of thousands with per-key sets
    distinct = sorted(set(map(tuple, sets)))
    index = {c: i for i, c in enumerate(distinct)}
    sid = np.array([index[tuple(s)] for s in sets])
    nearest = np.stack([topo.rtt[:, list(s)].min(axis=1) for s in distinct])  # [set, reader dc]
    normal = float(np.einsum("bd,bd->", w, nearest[sid]))
    worst = 0.0
    if model == "n-1c":  # k's readers redirected, as misses (set_latency, failure_hits)
        worst_b = np.zeros(len(sets))  # per bucket, its worst failure
        for k in range(topo.d):
            fw, lat = misses(failure_hits(hits_b, k)), set_latency(distinct, topo.rtt, k)[sid]
            # no reads from where no replica is left: nothing, not 0 x inf
            worst_b = np.maximum(worst_b, np.multiply(fw, lat, out=np.zeros_like(fw), where=fw > 0).sum(axis=1))
        worst = float(worst_b.sum())
    return normal if model == "ba" else worst + N1C_NORMAL_WEIGHT * normal
