"""What a placement gives: read latency per key and datacenter (normal, and with one datacenter
failed, its clients redirected), and its statistics weighted by demand."""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .topology import Topology

def redirect_dc(rtt: np.ndarray, failed: int, down: frozenset[int] | set[int] = frozenset()) -> int:
    """Where the failed datacenter's clients send their requests (the paper, §VIII-E: "to
    the closest DC"): the surviving datacenter (neither ``failed`` nor in ``down``) nearest
    it by RTT, ties to the lower index; a ConfigError when none survives."""
    others = [j for j in range(rtt.shape[0]) if j != failed and j not in down]
    if not others:
        raise ConfigError("faults", "every datacenter is killed: redirected clients have nowhere to go")
    return min(others, key=lambda j: (rtt[failed, j], j))


def set_latency(sets: list[tuple[int, ...]], rtt: np.ndarray, failed: int | None = None) -> np.ndarray:
    """[set, i]: datacenter i's read latency of a key of each set: its nearest replica; under
    the failure of ``failed`` the survivors' nearest, and for the failed datacenter's own
    clients, redirected to c = ``redirect_dc``, rtt(failed, c) + c's latency (inf when no
    replica survives)."""
    d = rtt.shape[0]
    out = np.full((len(sets), d), np.inf)
    for s, members in enumerate(sets):
        alive = [j for j in members if j != failed]
        if alive:
            out[s] = rtt[:, alive].min(axis=1)
    if failed is not None and d > 1:
        c = redirect_dc(rtt, failed)
        out[:, failed] = rtt[failed, c] + out[:, c]
    return out


def failure_hits(hits: np.ndarray | None, failed: int) -> np.ndarray | None:
    """The cache hits under ``failed``'s failure: its cache is gone with its storage, and its
    displaced readers count as misses at the datacenter they are sent to (module doc)."""
    if hits is None:
        return None
    out = hits.copy()
    out[..., failed] = 0
    return out


def weighted_stats(lat: np.ndarray, weight: np.ndarray, percentiles: tuple[int, ...] = (50, 90)) -> dict:
    """Mean and percentiles (p50 and p90 unless told) of latencies weighted by reads (the
    lower weighted quantile), over the reads that reach a replica; ``unavailable_share``: the
    reads whose key has no replica left (f = 1 under a failure)."""
    lat, weight = lat.ravel(), weight.ravel()
    keep = weight > 0
    lat, weight = lat[keep], weight[keep]
    total = weight.sum()
    ok = np.isfinite(lat)
    out = {"mean": None} | {f"p{p}": None for p in percentiles} | {"unavailable_share": 0.0}
    if total <= 0:
        return out
    out["unavailable_share"] = round(float(weight[~ok].sum() / total), 6)
    lat, weight = lat[ok], weight[ok]
    if not len(lat):
        return out
    order = np.argsort(lat, kind="stable")
    lat, weight = lat[order], weight[order]
    cum = np.cumsum(weight) / weight.sum()

    def q(p):
        return round(float(lat[min(int(np.searchsorted(cum, p - 1e-12)), len(lat) - 1)]), 3)
    out |= {"mean": round(float((lat * weight).sum() / weight.sum()), 3)} | {f"p{p}": q(p / 100) for p in percentiles}
    return out


def read_stats(lat: np.ndarray, reads: np.ndarray, hits: np.ndarray | None, percentiles=(50, 90)) -> dict:
    """weighted_stats of reads, the cache's hits (if any) at 0 ms and the misses at ``lat``."""
    percentiles = tuple(int(p) if float(p).is_integer() else p for p in percentiles)  # p90, p99.9
    if hits is None or not hits.any():
        return weighted_stats(lat, reads, percentiles)
    return weighted_stats(np.concatenate([np.zeros_like(lat).ravel(), lat.ravel()]),
                          np.concatenate([hits.ravel(), (reads - hits).ravel()]), percentiles)


def predict(set_of_bucket: np.ndarray, sets: list[tuple[int, ...]], reads_b: np.ndarray, writes_b: np.ndarray,
            sizes: np.ndarray, topo: Topology, hits_b: np.ndarray | None = None,
            percentiles: tuple = (50, 90)) -> dict:
    """The model's read latency of a placement: overall (mean, p50, p90 over every read of
    every key, weighted by reads) in normal operation and under each single datacenter's failure
    (its own readers redirected, ``set_latency``), the most critical datacenter (the worst
    mean under its failure),
    and per bucket (the demand-weighted mean, normal and under each failure). All keys of a
    bucket share their replicas, so the (bucket, reader) pairs carry the exact distribution.
    With ``hits_b`` (reads the datacenter cache serves) those count at 0 ms."""
    dcs = topo.dcs
    normal = set_latency(sets, topo.rtt)[set_of_bucket]          # [bucket, i]
    failed = {k: set_latency(sets, topo.rtt, k)[set_of_bucket] for k in range(topo.d)}
    overall = {"normal": read_stats(normal, reads_b, hits_b, percentiles), "failure": {}}
    for k, dc in enumerate(dcs):
        overall["failure"][dc] = read_stats(failed[k], reads_b, failure_hits(hits_b, k), percentiles)
    means = {dc: s["mean"] for dc, s in overall["failure"].items() if s["mean"] is not None}
    overall["most_critical_dc"] = max(means, key=lambda dc: (overall["failure"][dc]["unavailable_share"], means[dc])) \
        if means else None
    has_replica = np.zeros((len(sets), topo.d), dtype=bool)
    for s, members in enumerate(sets):
        has_replica[s, list(members)] = True
    wt = writes_b.sum()
    overall["writes"] = {"total": round(float(wt), 3),
                         "at_a_replica_share": round(float((writes_b * has_replica[set_of_bucket]).sum() / wt), 6)
                         if wt > 0 else None}
    overall["reads"] = {"total": round(float(reads_b.sum()), 3)}
    per_bucket = []
    rt = reads_b.sum()
    for b in range(len(set_of_bucket)):
        r = reads_b[b]
        rb = r.sum()
        miss = r - hits_b[b] if hits_b is not None else r
        entry = {"bucket": b, "keys": int(sizes[b]), "replicas": [dcs[j] for j in sets[set_of_bucket[b]]],
                 "read_share": round(float(rb / rt), 6) if rt > 0 else 0.0,
                 "normal_ms": round(float(miss @ normal[b] / rb), 3) if rb > 0 else None, "failure_ms": {}}
        for k, dc in enumerate(dcs):
            rk = miss.copy()
            rk[k] = r[k]  # redirected, as misses
            lat = failed[k][b]
            live = rk > 0
            entry["failure_ms"][dc] = (round(float(rk[live] @ lat[live] / rb), 3)
                                       if rb > 0 and np.isfinite(lat[live]).all() else None)
        per_bucket.append(entry)
    return {"overall": overall, "buckets": per_bucket}
