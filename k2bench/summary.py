"""summary.json from the raw HdrHistogram logs of a run's clients and servers.

Every client process writes one log of tagged interval histograms (one interval per
second; see system/core IntervalLog): latencies in microseconds (``rot``, ``wot``,
``write``), the wide-area rounds of each read-only transaction (``rot_rounds``, value =
rounds), the staleness of each key read (``staleness``, microseconds), the snapshot lag of
each read-only transaction (``snapshot_lag``, microseconds; K2 and PaRiS*), failed
operations (``<op>_error``), how late each paced operation started against YCSB's schedule
(``schedule_lag``, microseconds) and, per key read that is not replicated in the reader's
datacenter, whether it was fetched from another datacenter (``cache_miss``: 1) or served
by a cache (0). Every server process writes one too: the replication lag from a write's
commit in its origin datacenter to its visibility in another
(``replication_lag:<origin>><here>``, microseconds). Both record the emulation's lateness
per delivered message (``lateness:<wan|local>:<path>``, microseconds). Distributions are merged interval by
interval and process by process, never by averaging percentiles; warm-up and cool-down are
trimmed by keeping the intervals whose midpoint lies in the measurement window.
"""
from __future__ import annotations

import json
import math
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from .histograms import bucket_counts, mean_value, new_histogram, percentile_index, value_at_percentile

BASE_OPS = ("rot", "wot", "write")  # what every system runs
OPS = BASE_OPS + ("rwt",)  # rwt: interactive read-write transactions (systems that have them)
ERRORS = ("rot_error", "wot_error", "write_error", "rwt_error")


@dataclass
class Interval:
    tag: str
    start_ms: float
    end_ms: float
    histogram: HdrHistogram

    @property
    def midpoint_ms(self) -> float:
        return (self.start_ms + self.end_ms) / 2


def read_log(path: pathlib.Path, tolerant: bool = False) -> list[Interval]:
    """Every interval histogram of one log, with absolute timestamps. ``tolerant``: a log
    whose process was killed may end in a half-written line; keep what precedes it."""
    return list(iter_log(path, tolerant))


def iter_log(path: pathlib.Path, tolerant: bool = False) -> Iterator[Interval]:
    """read_log one interval at a time (a decoded histogram is ~180 KB: a caller that keeps
    less of each need not hold them all)."""
    reader = HistogramLogReader(str(path), new_histogram())
    while True:
        try:
            h = reader.get_next_interval_histogram(absolute=True)
        except Exception:  # noqa: BLE001 - hdrh raises several kinds on a torn line
            if tolerant:
                return
            raise
        if h is None:
            return
        yield Interval(h.get_tag(), h.get_start_time_stamp(), h.get_end_time_stamp(), h)


def server_totals_hit_rate(stats: dict) -> dict | None:
    """The DC cache hit rate from the servers' counters at shutdown (K2; PaRiS*: its private
    caches), for server_stats: non-replica key reads served without a remote fetch / all
    non-replica key reads over the whole run, warm-up included, failed reads counted as hits.
    The summary's ``cache`` is ``cache_hit_rate`` (the clients' measured window)."""
    reads = stats.get("nonreplica_key_reads")
    if not reads:
        return None
    fetches = stats.get("remote_fetches", 0)
    return {"hit_rate": round(1 - fetches / reads, 6), "nonreplica_key_reads": reads, "remote_fetches": fetches}


def merge(intervals: list[Interval], tag: str, window: tuple[float, float] | None) -> HdrHistogram:
    """One histogram of everything recorded under ``tag`` inside ``window`` (ms, [start, end))."""
    out = new_histogram()
    for iv in selected(intervals, tag, window):
        out.add(iv.histogram)
    return out


def selected(intervals: list[Interval], tag: str, window: tuple[float, float] | None) -> Iterator[Interval]:
    """The intervals of ``tag`` whose midpoint is inside ``window`` (ms, [start, end); None: all)."""
    return (iv for iv in intervals if iv.tag == tag and (window is None or window[0] <= iv.midpoint_ms < window[1]))


def _ms(us: float | None) -> float | None:
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return None
    return round(us / 1000.0, 3)


def latency(h: HdrHistogram, percentiles=(1, 50, 90, 99, 99.9)) -> dict:
    """mean and percentiles in ms of a histogram recorded in microseconds; nulls if empty."""
    empty = h.get_total_count() == 0
    out = {"mean": None if empty else _ms(mean_value(h))}
    for p in percentiles:
        key = "p" + (str(p).replace(".", "") if p != int(p) else str(int(p)))
        out[key] = None if empty else _ms(value_at_percentile(h, p))
    return out


def rounds(h: HdrHistogram) -> dict:
    return {str(r): h.get_count_at_value(r) if h.get_total_count() else 0 for r in range(4)}


def _rot_block(intervals: list[Interval], window) -> dict:
    rot = merge(intervals, "rot", window)
    rr = merge(intervals, "rot_rounds", window)
    n = rr.get_total_count()
    return {
        "count": rot.get_total_count(),
        "latency_ms": latency(rot),
        "all_local_fraction": None if n == 0 else round(rr.get_count_at_value(0) / n, 6),
        "wan_rounds": rounds(rr),
    }


def _rwt_block(intervals: list[Interval], window_ms: tuple[float, float]) -> dict:
    """Read-write transactions: count, latency (start to commit) and the wide-area rounds of their reads."""
    rwt, rr = merge(intervals, "rwt", window_ms), merge(intervals, "rwt_rounds", window_ms)
    return {"count": rwt.get_total_count(), "latency_ms": latency(rwt), "wan_rounds": rounds(rr)}


def timeseries(intervals: list[Interval], origin_ms: float) -> dict:
    """Committed operations per second, per whole second since ``origin_ms`` (all clients summed)."""
    bins: dict[int, int] = {}
    for iv in intervals:
        if iv.tag in OPS:
            second = int((iv.midpoint_ms - origin_ms) // 1000)
            bins[second] = bins.get(second, 0) + iv.histogram.get_total_count()
    if not bins:
        return {"t_s": [], "ops_per_s": []}
    seconds = list(range(min(bins), max(bins) + 1))
    return {"t_s": seconds, "ops_per_s": [bins.get(s, 0) for s in seconds]}


def percentiles_ms(h: HdrHistogram, percentiles=(50, 75, 99)) -> dict:
    """Percentiles in ms and the count of a histogram recorded in microseconds."""
    return {k: v for k, v in latency(h, percentiles).items() if k != "mean"} | {"count": h.get_total_count()}


def spread_ms(h: HdrHistogram, percentiles=(50, 99)) -> dict:
    """percentiles_ms with the largest value (ms; null if empty)."""
    return percentiles_ms(h, percentiles) | {"max": None if h.get_total_count() == 0 else _ms(h.get_max_value())}


def replication_lag(intervals: list[Interval], window: tuple[float, float], after_ms: float | None = None) -> dict:
    """Replication lag (server logs) in the window: overall, per receiving datacenter and per
    pair; ``after`` covers only the intervals after ``after_ms`` (the last fault's end plus the
    checker's slack)."""
    tags = sorted({iv.tag for iv in intervals if iv.tag.startswith("replication_lag:")})
    if not tags:
        return {"p50": None, "p99": None, "max": None, "count": 0, "by_dc": {}, "pairs": {}}

    def block(selected, w):
        h = new_histogram()
        for t in selected:
            h.add(merge(intervals, t, w))
        return spread_ms(h)

    out = block(tags, window)
    pairs = {t.split(":", 1)[1]: t for t in tags}
    dests = sorted({p.split(">")[1] for p in pairs})
    out["by_dc"] = {d: block([t for p, t in pairs.items() if p.endswith(">" + d)], window) for d in dests}
    out["pairs"] = {p: block([t], window) for p, t in sorted(pairs.items())}
    if after_ms is not None:
        out["after"] = block(tags, (max(window[0], after_ms), window[1])) | {"from_ms": after_ms}
    return out


def visibility(intervals: list[Interval], window: tuple[float, float]) -> dict | None:
    """Visibility latency (server logs, PaRiS, BPR and NoCC: from a transaction's install at
    a server to when new transactions of its datacenter see it, the PaRiS paper's Fig. 5,
    which factors out propagation) in the window:
    overall and per datacenter; None for systems that do not record it."""
    def measured(prefix: str) -> dict | None:
        tags = sorted({iv.tag for iv in intervals if iv.tag.startswith(prefix)})
        if not tags:
            return None
        h = new_histogram()
        for t in tags:
            h.add(merge(intervals, t, window))
        return spread_ms(h) | {"by_dc": {t.split(":", 1)[1]: spread_ms(merge(intervals, t, window)) for t in tags}}

    out = measured("visibility:")
    # BPR also as its authors' code records it: when a read's snapshot first covers the update
    if out is not None and (at_read := measured("visibility_at_read:")) is not None:
        out["at_read"] = at_read
    return out


def read_blocked(intervals: list[Interval], window: tuple[float, float]) -> dict | None:
    """How long BPR's reads blocked: every read slice at its partition (server logs, 0
    included), and ``per_transaction`` the read phase of each transaction, i.e. its slowest
    slice (client logs; the PaRiS paper reports its mean, §V-B); None for systems that never
    block."""
    h = merge(intervals, "read_blocked", window)
    if not h.get_total_count():
        return None
    phase = merge(intervals, "read_phase_blocked", window)
    n, zeros = phase.get_total_count(), phase.get_count_at_value(0)
    per_txn = latency(phase, (50, 99)) | {"count": n, "max": _ms(phase.get_max_value()) if n else None,
                                          # the authors' code averages over the read phases that blocked
                                          "mean_blocked": round(mean_value(phase) * n / (n - zeros) / 1000, 3)
                                          if n > zeros else None}
    cpu = merge(intervals, "read_blocked_cpu_ns", window)  # ns, one value per blocked read
    cpu_us = None if not cpu.get_total_count() else {
        "count": cpu.get_total_count(), "mean": round(cpu.get_mean_value() / 1000, 3),
        "p50": round(cpu.get_value_at_percentile(50) / 1000, 3), "p99": round(cpu.get_value_at_percentile(99) / 1000, 3)}
    return spread_ms(h) | {"blocked_share": round(1 - h.get_count_at_value(0) / h.get_total_count(), 6),
                           "per_transaction": per_txn, "cpu_us_per_blocked_read": cpu_us}


def cache_hit_rate(intervals: list[Interval], window: tuple[float, float]) -> dict | None:
    """The cache hit rate in the window from the clients' ``cache_miss`` values (one per key
    read that is not replicated in the reader's datacenter: 1 fetched from another
    datacenter, 0 served by K2's DC cache or PaRiS*'s private cache), counted exactly: None
    where no such read was recorded (RAD has no cache)."""
    h = merge(intervals, "cache_miss", window)
    reads = h.get_total_count()
    if not reads:
        return None
    fetches = h.get_count_at_value(1)
    return {"hit_rate": round(1 - fetches / reads, 6), "nonreplica_key_reads": reads, "remote_fetches": fetches}


def cache_hit_rate_over_time(intervals: list[Interval], origin_ms: float, bucket_s: int = 10) -> dict:
    """The cache hit rate per ``bucket_s`` seconds since ``origin_ms`` over the whole trial
    (warm-up included, to show when the cache is warm): start of each bucket (s), hit rate
    and key reads through the cache in it."""
    bins: dict[int, list[int]] = {}
    for iv in intervals:
        if iv.tag == "cache_miss":
            b = bins.setdefault(int((iv.midpoint_ms - origin_ms) // (1000 * bucket_s)), [0, 0])
            b[0] += iv.histogram.get_total_count()
            b[1] += iv.histogram.get_count_at_value(1)
    keys = sorted(k for k, (n, _) in bins.items() if n)
    return {"bucket_s": bucket_s, "t_s": [k * bucket_s for k in keys],
            "hit_rate": [round(1 - bins[k][1] / bins[k][0], 4) for k in keys], "reads": [bins[k][0] for k in keys]}


def _share(h: HdrHistogram) -> float | None:
    """The share of 1s among a 0/1 measurement's values."""
    n = h.get_total_count()
    return round(h.get_count_at_value(1) / n, 6) if n else None


def rings(intervals: list[Interval], window: tuple[float, float]) -> dict | None:
    """Karma and COPS-PR (the Karma paper's Figs. 10 and 11): per key read in the window, the
    share served in the reader's datacenter (its write buffer, its datacenter's cache, or a
    replica there: ``local_access_fraction``) and by each of the first two; per read, the
    share made while the session was restricted to one ring (``restricted_fraction``); per
    write, the share made while a ring was down for the session (``down_ring_write_fraction``);
    how long writes took to complete in every ring (``write_completion_ms``); the put-after
    dependencies a put carries, each checked in every ring (``dependencies_per_put``: mean
    and p99); and how many puts a ring left unanswered (``propagation_retries``, the whole
    trial). None for systems that record none of them."""
    local = merge(intervals, "access_local", window)
    if not local.get_total_count():
        return None
    completion = merge(intervals, "write_completion", window)
    deps = merge(intervals, "put_deps", window)
    return {"key_reads": local.get_total_count(),
            "local_access_fraction": _share(local),
            "write_buffer_fraction": _share(merge(intervals, "access_wb", window)),
            "cache_fraction": _share(merge(intervals, "access_cache", window)),
            "restricted_fraction": _share(merge(intervals, "ring_restricted", window)),
            # per write: made while a ring had answered none of the session's puts for
            # dead_ring_after_timeouts RPC timeouts (down: its queue grows past the write buffer's bound)
            "down_ring_write_fraction": _share(merge(intervals, "write_ring_down", window)),
            "notify_afters": merge(intervals, "notify_after", window).get_total_count(),
            # puts a ring left unanswered for an RPC timeout (sent again), in the whole trial:
            # none in a fault-free run that keeps up
            "propagation_retries": merge(intervals, "propagation_retries", None).get_total_count(),
            "write_completion_ms": latency(completion, (50, 90, 99)) | {"count": completion.get_total_count()},
            "dependencies_per_put": {"mean": round(mean_value(deps), 3), "p99": deps.get_value_at_percentile(99)}
            if deps.get_total_count() else None}


def hot_keys(ops: list[dict], window: tuple[float, float], n: int = 10) -> dict | None:
    """How often the most written keys were written in the window, from the clients'
    histories: the average over the ``n`` most written keys and the hottest one, writes/s.
    A key's version churn, which a reader at an older snapshot falls behind and which a
    read racing a write sees (docs/freshness.md, docs/reproducing.md)."""
    begin, end = window
    if end <= begin:
        return None
    counts: dict[str, int] = {}
    for o in ops:
        if o.get("w") and o.get("ok", True) and begin <= o["t0"] < end:
            for k in o["w"]:
                counts[k] = counts.get(k, 0) + 1
    top = sorted(counts.values(), reverse=True)[:n]
    s = (end - begin) / 1000.0
    return {"keys": n, "writes_per_s": round(sum(top) / len(top) / s, 4) if top else 0.0,
            "hottest_writes_per_s": round(top[0] / s, 4) if top else 0.0}


def ring_invalidations(stats: dict, replicas: int) -> dict | None:
    """Karma's cache invalidations (§4.3) from the servers' counters at shutdown: per write
    (each write is put once in each of ``replicas`` rings) and per put."""
    puts = stats.get("puts_applied")
    if not puts:
        return None
    sent = stats.get("invalidations_sent", 0)
    return {"puts_applied": puts, "invalidations_sent": sent, "per_put": round(sent / puts, 6),
            "per_write": round(sent * replicas / puts, 6)}


def schedule_lag(intervals: list[Interval], window: tuple[float, float]) -> dict:
    """How late paced operations started against YCSB's schedule, in the window (ms)."""
    h = merge(intervals, "schedule_lag", window)
    return percentiles_ms(h, (50, 99)) | {"max": None if h.get_total_count() == 0 else _ms(h.get_max_value())}


SCHEDULE_WARNING = "clients ran behind their schedule"


def worst_class(lateness: dict) -> tuple[str, dict]:
    """The link class with the largest lateness p99 (``emulation``'s block: one has a p99)."""
    return max((c for c in lateness["classes"].items() if c[1]["p99"] is not None), key=lambda c: c[1]["p99"])


def emulation_warning(lateness: dict) -> str | None:
    if not lateness["degraded"]:
        return None
    worst = worst_class(lateness)
    by = f", the latest {PATH_WORDS[path]}" if (path := worst[1].get("late_path")) in PATH_WORDS else ""
    return (f"{EMULATION_DEGRADED}: messages reached their nodes up to {worst[1]['p99']:.1f} ms after their due "
            f"time (p99, {worst[0]} links{by}; limit {DEGRADED_P99_MS:.0f} ms): the latencies are not the configured "
            "WAN's (the machine is short of CPU: lower the load or the number of processes)")


def schedule_warning(lag: dict | None, interval_ms: float | None, faults: bool = False) -> str | None:
    """A warning when the schedule lag p99 exceeds the time between two operations of one
    client thread: latency counts from the intended start, so it then includes queueing.
    With faults in the trial, operations blocked by them are the first suspect."""
    if not lag or not lag.get("count") or interval_ms is None or lag["p99"] <= interval_ms:
        return None
    causes = "the machine could not sustain the target rate, or duration.warmup_s is too short for the start-up"
    if faults:
        causes = "operations blocked by the faults held their threads back; or " + causes
    return (f"{SCHEDULE_WARNING}: schedule lag p99 {lag['p99']:.0f} ms > the {interval_ms:.0f} ms between a "
            f"thread's operations; latencies include queueing behind earlier operations ({causes})")


LATENESS_CLASSES = ("wan", "local")
PATH_WORDS = {"dispatcher": "waiting for a WAN dispatcher", "timer": "waiting for the receiving server's thread",
              "arrival": "handed over on arrival"}  # the thread a late delivery path waited for
DEGRADED_P99_MS = 5.0
EMULATION_DEGRADED = "emulation degraded"


def messages(intervals: list[Interval], window: tuple[float, float], ops: int) -> dict:
    """What was delivered in the window, per link class and payload type (every process
    records ``msg:<local|wan>:<type>`` with the payload's size in bytes once per delivered
    message): count, per operation, and mean payload bytes; most frequent first. Empty for
    logs written before the tags existed."""
    out: dict[str, dict] = {}
    for tag in sorted({iv.tag for iv in intervals if iv.tag.startswith("msg:")}):
        h = merge(intervals, tag, window)
        n = h.get_total_count()
        if n:
            _, cls, type_ = tag.split(":", 2)
            out.setdefault(cls, {})[type_] = {"count": n, "per_op": round(n / ops, 3) if ops else None,
                                              "mean_bytes": round(mean_value(h), 1)}
    return {cls: dict(sorted(types.items(), key=lambda kv: -kv[1]["count"])) for cls, types in sorted(out.items())}


PAUSE_SETTLE_MS = 2000.0  # after SIGCONT, a paused JVM works off what queued meanwhile


def emulation(intervals: list[Interval], window: tuple[float, float]) -> dict:
    """The WAN emulation's lateness in the window: how long after its due time each message
    reached its node (``lateness:<class>:<path>``, µs: class ``wan`` or ``local``, path the
    thread it waited for, see InChannel; older logs: ``lateness:<class>``), merged over all
    processes; p50, p99, p99.9 and max in ms per class, per class and path (``paths``; each
    class's ``late_path`` holds most of its values at or above its p99) and over both
    classes, and ``degraded`` when a class's p99 exceeds DEGRADED_P99_MS: the run's latencies
    are not the configured WAN's. Every run is judged: a message a fault held back is late by
    design, recorded apart (``lateness:faulted``, reported as ``faulted``, not judged); a
    paused JVM's own deliveries are left out by the caller (``summarize``)."""
    every, classes, paths = new_histogram(), {}, {}
    tags = {iv.tag for iv in intervals if iv.tag.startswith("lateness:")}
    for c in LATENESS_CLASSES:
        h, mine = merge(intervals, f"lateness:{c}", window), {}
        for tag in sorted(t for t in tags if t.startswith(f"lateness:{c}:")):
            if (by_path := merge(intervals, tag, window)).get_total_count():
                h.add(by_path)
                mine[tag.split(":")[2]] = by_path
        every.add(h)
        paths |= {f"{c}:{k}": spread_ms(v, (50, 99, 99.9)) for k, v in mine.items()}
        classes[c] = spread_ms(h, (50, 99, 99.9)) | {"late_path": _tail_holder(h, mine)}
    out = spread_ms(every, (50, 99, 99.9)) | {"classes": classes}
    p99s = [b["p99"] for b in classes.values() if b["p99"] is not None]
    out["worst_p99"] = max(p99s) if p99s else None
    out["degraded"] = bool(p99s) and max(p99s) > DEGRADED_P99_MS
    if (faulted := merge(intervals, "lateness:faulted", window)).get_total_count():
        out["faulted"] = spread_ms(faulted, (50, 99, 99.9))
    return out | ({"paths": paths} if paths else {})


def _tail_holder(whole: HdrHistogram, parts: dict[str, HdrHistogram]) -> str | None:
    """The part holding the most of ``whole``'s values in its p99's bucket or above (one layout)."""
    i99 = percentile_index(whole, 99)
    return max(parts, key=lambda k: int(bucket_counts(parts[k])[i99:].sum())) if parts else None


def without_paused(per_process: dict[str, list[Interval]], paused_ms: dict[str, list[tuple[float, float]]] | None
                   ) -> list[Interval]:
    """Every interval of every process log, but a paused process's own (``paused_ms``: log
    name -> its pauses, epoch ms) that overlap a pause or the PAUSE_SETTLE_MS after it: its
    deliveries then are late by the fault's design, not the machine's."""
    out = []
    for name, ivs in per_process.items():
        pauses = (paused_ms or {}).get(name, ())
        out += [iv for iv in ivs
                if not any(iv.start_ms < b + PAUSE_SETTLE_MS and iv.end_ms > a for a, b in pauses)]
    return out


HEAP_LIVE, HEAP_COMMITTED, HEAP_MAX = "jvm:heap_live_mb", "jvm:heap_committed_mb", "jvm:heap_max_mb"


def _largest(h: HdrHistogram) -> int:
    """The largest value recorded, at most 0.1% low (the bottom of its bucket: values above
    2,047 share buckets, and the top of one would overstate, e.g. -Xmx 4608 as 4611)."""
    return h.get_lowest_equivalent_value(h.get_max_value()) if h.get_total_count() else 0


def jvm_memory(logs: dict[str, list[Interval]]) -> dict:
    """Each JVM's heap over the whole run, from the gauges its process log records once per
    interval (system/core IntervalLog): the largest heap in use after a collection
    (``live_mb``: what the JVM keeps, plus what that collection left), the largest
    committed heap (``committed_mb``) and the limit (``max_mb``, -Xmx), in MB. ``logs``:
    process log (``servers/<name>``, ``clients/<name>``) -> its intervals; a log without
    the gauges (a client inside the servers' JVM) is left out."""
    out = {}
    for name, ivs in sorted(logs.items()):
        live, committed = merge(ivs, HEAP_LIVE, None), merge(ivs, HEAP_COMMITTED, None)
        if live.get_total_count():
            out[name] = {"live_mb": _largest(live), "committed_mb": _largest(committed),
                         "max_mb": _largest(merge(ivs, HEAP_MAX, None)) or None}
    return out


# What a server still owes or waits for: replication and commit state (a write-only
# transaction undecided at a participant counts too), and messages being sent again
# until answered (retransmit_parked, kept for a datacenter that is down, is not: it waits
# for a datacenter that may never come back).
PENDING_GAUGES = ("pending_replicated_txns", "incoming_writes", "replicating", "waiting_remote_reads",
                  "pending_client_txns", "retransmit_pending")


def replication_pending_at_end(stats_dir: pathlib.Path, faults: list[dict] = ()) -> dict | None:
    """Replication left pending when the servers stopped, from their stats files
    (stats-<process>.json: {"DC:shard": {counter or gauge: value}}): per datacenter the sum
    of PENDING_GAUGES, and the total. Datacenters with a server killed by a fault are left
    out (``skipped_dcs``): what their survivors wait for may be the dead server. None
    without stats files."""
    files = sorted(pathlib.Path(stats_dir).glob("stats-*.json"))
    if not files:
        return None
    killed = sorted({f.get("dc") or f["server"].split(":")[0] for f in faults if f["kind"] == "kill"})
    by_dc: dict[str, int] = {}
    by_gauge = dict.fromkeys(PENDING_GAUGES, 0)
    for path in files:
        for server, values in json.loads(path.read_text()).items():
            dc = server.rsplit(":", 1)[0]
            if dc in killed:
                continue
            by_dc[dc] = by_dc.get(dc, 0) + sum(int(values.get(g, 0)) for g in PENDING_GAUGES)
            for g in PENDING_GAUGES:
                by_gauge[g] += int(values.get(g, 0))
    return {"total": sum(by_dc.values()), "by_dc": dict(sorted(by_dc.items())), "by_gauge": by_gauge,
            "skipped_dcs": killed}


def summarize(logs: dict[str, list[pathlib.Path]], *, system: str, experiment: str,
              window_ms: tuple[float, float], origin_ms: float | None = None,
              server_logs: list[pathlib.Path] = (), after_ms: float | None = None,
              pacing_interval_ms: float | None = None,
              paused_ms: dict[str, list[tuple[float, float]]] | None = None) -> dict:
    """The summary of one system's run from its clients' logs (datacenter -> its clients'
    logs) and its servers' logs; ``after_ms``: the last fault's end plus the checker's
    slack, if the trial has faults;
    ``pacing_interval_ms``: the time between two operations of one client thread on
    schedule (experiment.pacing_interval_ms), None for closed-loop clients; ``paused_ms``:
    the pauses of each paused process (log name, e.g. ``servers/server-SP``; faults.paused_ms)."""
    by_dc = {dc: {f"clients/{pathlib.Path(p).stem}": read_log(p) for p in paths} for dc, paths in sorted(logs.items())}
    per_process = {name: ivs for procs in by_dc.values() for name, ivs in procs.items()}
    per_client = {dc: [iv for ivs in procs.values() for iv in ivs] for dc, procs in by_dc.items()}
    everything = [iv for ivs in per_client.values() for iv in ivs]
    measured_s = (window_ms[1] - window_ms[0]) / 1000.0
    committed = sum(merge(everything, op, window_ms).get_total_count() for op in OPS)
    staleness = merge(everything, "staleness", window_ms)
    summary = {
        "system": system,
        "experiment": experiment,
        "measured_seconds": round(measured_s, 3),
        "throughput_ops_per_s": round(committed / measured_s, 3) if measured_s > 0 else None,
        "ops": {
            "rot": _rot_block(everything, window_ms),
            "wot": {"count": merge(everything, "wot", window_ms).get_total_count(),
                    "latency_ms": latency(merge(everything, "wot", window_ms))},
            "write": {"count": merge(everything, "write", window_ms).get_total_count(),
                      "latency_ms": latency(merge(everything, "write", window_ms))},
            # only in runs with read-write transactions, so other summaries keep their shape
            **({"rwt": _rwt_block(everything, window_ms)} if merge(everything, "rwt", window_ms).get_total_count()
               else {}),
        },
        "staleness_ms": percentiles_ms(staleness),
        "snapshot_lag_ms": percentiles_ms(merge(everything, "snapshot_lag", window_ms)),
        "errors": sum(merge(everything, e, window_ms).get_total_count() for e in ERRORS),
        "cache": cache_hit_rate(everything, window_ms),
        "schedule_lag_ms": None if pacing_interval_ms is None else
        schedule_lag(everything, window_ms) | {"interval_ms": round(pacing_interval_ms, 3)},
        "per_dc": {name: {"rot": _rot_block(ivs, window_ms),
                          "throughput_ops_per_s": round(sum(merge(ivs, op, window_ms).get_total_count()
                                                            for op in OPS) / measured_s, 3)
                          if measured_s > 0 else None}
                   for name, ivs in per_client.items()},
        "window_ms": [window_ms[0], window_ms[1]],
    }
    per_server = {f"servers/{pathlib.Path(p).stem}": read_log(p, tolerant=True) for p in server_logs if pathlib.Path(p).exists()}
    server_intervals = [iv for ivs in per_server.values() for iv in ivs]
    summary["jvm_memory_mb"] = jvm_memory(per_process | per_server)
    summary["replication_lag_ms"] = replication_lag(server_intervals, window_ms, after_ms)
    # only for systems that record them (PaRiS, BPR, NoCC), so other summaries keep their shape
    if (v := visibility(everything + server_intervals, window_ms)) is not None:
        summary["visibility_ms"] = v
    if (b := read_blocked(everything + server_intervals, window_ms)) is not None:
        summary["read_blocked_ms"] = b
    if (r := rings(everything + server_intervals, window_ms)) is not None:
        summary["rings"] = r
    summary["emulation_lateness_ms"] = emulation(without_paused(per_process | per_server, paused_ms), window_ms)
    summary["messages"] = messages(everything + server_intervals, window_ms, committed)
    origin = origin_ms if origin_ms is not None else window_ms[0]
    summary["timeseries"] = timeseries(everything, origin) | {"origin_ms": origin}
    if summary["cache"] is not None:
        summary["cache"]["over_time"] = cache_hit_rate_over_time(everything, origin)
    summary["warnings"] = [w for w in [schedule_warning(summary["schedule_lag_ms"], pacing_interval_ms,
                                                         faults=after_ms is not None),
                                        emulation_warning(summary["emulation_lateness_ms"])] if w]
    return summary
