"""Every experiment parameter, defined once: its type, its default, its check and what it
means, as frozen dataclasses (one per section of an experiment file). Dataclasses rather
than pydantic: the resolution in k2bench/experiment.py keeps its own error messages (one
line naming the field and the fix) and its sweep/per_system rules, and needs only the table
of fields these give (``table``); the resolved sections are built as these classes for a
trial's spec (k2bench/spec/trial.py)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

Check = Callable[[Any], "str | None"]  # an error text, or None when the value is fine


def _pos(v):
    return None if v > 0 else "must be > 0"


def _nonneg(v):
    return None if v >= 0 else "must be >= 0"


def _fraction(v):
    return None if 0 <= v <= 1 else "must be between 0 and 1"


def _at_least_1(v):
    return None if v >= 1 else "must be at least 1"


def _one_of(*allowed: str) -> Check:
    text = ", ".join(allowed[:-1]) + f" or {allowed[-1]}"

    def check(v):
        return None if v in allowed else f"must be {text}"
    check.choices = allowed  # a refused value is told the closest (fields._section)
    return check


def _place_objective(v: str) -> str | None:
    """topology.place_objective: mean or a percentile p1..p99.9 (as k2bench place --objective)."""
    if v == "mean":
        return None
    try:
        ok = v[:1] == "p" and 0 < float(v[1:]) < 100
    except ValueError:
        ok = False
    return None if ok else "must be mean or a percentile p1..p99.9, e.g. p90"


# JVM options of client JVMs and loaders, and of server JVMs when several share the cores
# (besides -Xmx from heap_mb): C1 only. Runs here are minutes long on 2 cores, and C2's
# compiler threads cost more CPU than they return (docs/performance.md has the figures).
DEFAULT_JVM_ARGS = ("-XX:TieredStopAtLevel=1",)
# the one server JVM of a machine (server.processes: per_host): C2, and ZGC with a collection
# at least every 5 s (experiment.server_jvm_args)
PER_HOST_SERVER_JVM_ARGS = ("-XX:+UseZGC", "-XX:ZCollectionInterval=5")


def param(kind, default, check: Check | None = None, doc: str = ""):
    """A parameter: ``kind`` is a Python type or "dist" (an integer, or a discrete
    distribution {value: probability}), "args" (a list of JVM options, or null) or
    "options" (a system's own options, {system: {option: value}})."""
    meta = {"kind": kind, "check": check, "doc": doc, "default": default}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Topology:
    file: str = param(str, "topologies/paper-local.yaml", doc="the topology file (datacenters, RTTs), relative to workloads/")
    servers_per_dc: int | None = param(int, None, _at_least_1, "servers per datacenter (null: the topology file's)")
    replication_factor: int | None = param(int, None, _at_least_1, "replicas per key (null: the topology file's)")
    rtt_scale: float = param(float, 1.0, _pos, "every RTT of the topology times this")
    intra_dc_delay_ms: float | None = param(float, None, _nonneg, "one-way delay inside a datacenter (null: the file's)")
    jitter_ms: float | None = param(float, None, _nonneg, "random extra one-way delay (null: the file's)")
    placement: str | None = param(str, None, _one_of("groups", "partitions", "rings", "table"),
                                  "how keys are placed (null: as the topology file says, groups when it says nothing)")
    partitions: int | None = param(int, None, _at_least_1, "placement partitions: their number")
    placement_table: str | None = param(str, None, None, "placement table: the table file (k2bench place writes one), "
                                        "relative to workloads/; null: the topology file's")
    place: str = param(str, "none", _one_of("none", "ba", "n-1c"),
                       "latency-aware placement computed for the point before it runs: ba (normal operation) or n-1c "
                       "(the worst single-datacenter failure); none: the topology's own placement")
    place_demand: str = param(str, "expected", None, "with place: the demand, expected (the workload's own key choice) "
                              "or a parquet from k2bench demand (relative to workloads/)")
    place_balance: float = param(float, 1.2, lambda v: None if v >= 1 else "must be >= 1 (1: perfectly even)",
                                 "with place: no datacenter holds more than this x f x keys / datacenters keys")
    place_objective: str = param(str, "mean", _place_objective,
                                 "with place: what the model minimises, mean or a percentile of read latency (p90)")
    place_cache: bool = param(bool, False, None, "with place: count the datacenter cache (server.cache_fraction of the "
                              "keys) in the objective; for a system that has one (dc_cache), so per_system")


@dataclass(frozen=True)
class Workload:
    keys: int = param(int, 1_000_000, _at_least_1, "keys in the store")
    keys_per_op: Any = param("dist", 5, _at_least_1, "keys a read-only transaction reads (or a distribution)")
    columns: Any = param("dist", 5, _at_least_1, "columns of a value")
    value_bytes: Any = param("dist", 128, _nonneg, "bytes of a column")
    zipf: float = param(float, 1.2, _pos, "the Zipf constant of key popularity")
    key_distribution: str = param(str, "zipf", _one_of("zipf", "ycsb_scrambled"),
                                  "zipf: an exact Zipf(zipf) over popularity ranks; ycsb_scrambled: YCSB's "
                                  "ScrambledZipfianGenerator (the Karma paper's), at its constant 0.99 only")
    write_fraction: float = param(float, 0.01, _fraction, "share of operations that write")
    wot_fraction: float = param(float, 0.5, _fraction, "share of writes that are write-only transactions")
    rw_fraction: float = param(float, 0.0, _fraction, "share of operations that are interactive read-write transactions")
    rw_writes: int = param(int, 1, _at_least_1, "keys a read-write transaction writes after reading the others")
    partitions_per_op: int = param(int, 0, _nonneg, "the PaRiS paper's key choice: an operation's keys from this many "
                                   "partitions (0: by Zipf over the whole keyspace)")
    local_fraction: float = param(float, 0.95, _fraction, "with partitions_per_op: share of operations whose "
                                  "partitions are all replicated in the client's datacenter")
    multi_dc_partitions: str = param(str, "alternate", _one_of("alternate", "uniform"),
                                     "where a multi-datacenter operation's partitions are")
    locality: float = param(float, 0.0, _fraction, "share of key draws from the client's datacenter's own popularity "
                            "order (per-datacenter hot sets)")


@dataclass(frozen=True)
class Server:
    processes: str = param(str, "auto", _one_of("auto", "per_host", "per_dc", "per_server"),
                           "server JVMs: one per machine, datacenter or server; auto: per_host, or per_dc when a "
                           "fault kills or pauses servers (clusters run one per server host)")
    failover_timeout_ms: int = param(int, 2000, _at_least_1, "how long a replication waits for a replica datacenter "
                                     "before another takes over (at least 300, below clients.rpc_timeout_ms)")
    cache_fraction: float = param(float, 0.05, _fraction, "the datacenter cache's capacity, as a share of the keys")
    cache_versions_per_key: int = param(int, 1, _nonneg, "versions of a key the datacenter cache keeps; 0: all")
    gc_window_ms: int = param(int, 5000, _at_least_1, "how long an old version stays readable")
    replica_retention_ms: int = param(int, 15000, _at_least_1, "how long replicas keep old versions for remote "
                                      "reads (K2, PaRiS*: at least gc_window_ms + txn_timeout_ms + "
                                      "failover_timeout_ms)")
    txn_timeout_ms: int = param(int, 5000, _at_least_1, "how long a transaction's state waits for its parts")
    heap_mb: int = param(int, 768, _at_least_1, "each server JVM's heap per datacenter it holds")
    jvm_args: Any = param("args", None, None, "server JVM options; null: C2 for one per_host JVM, C1 only when several "
                          "share the cores")
    options: Any = param("options", {}, None, "systems' own options, {system: {option: value}} (k2bench systems)")


@dataclass(frozen=True)
class Clients:
    threads_per_dc: int = param(int, 8, _at_least_1, "client threads (sessions) per datacenter")
    sessions_per_thread: int = param(int, 64, _at_least_1, "closed-loop sessions one client thread drives "
                                     "together, for systems whose clients never block, unpaced and without "
                                     "read-write transactions (else a thread per session); 1: always a thread "
                                     "per session")
    target_ops_per_s_per_dc: float | None = param(float, None, _pos, "offered load per datacenter (open loop); null: "
                                                  "closed loop")
    heap_mb: int = param(int, 512, _at_least_1, "each client JVM's heap")
    jvm_args: Any = param("args", list(DEFAULT_JVM_ARGS), None, "client and loader JVM options")
    processes: str = param(str, "auto", _one_of("auto", "own", "in_server"),
                           "in_server: clients inside the server JVM of their machine; own: a JVM per client slot; "
                           "auto: in_server where it can (a local run; with a JVM per datacenter, each in its "
                           "datacenter's, except where a kill or pause hits)")
    rpc_timeout_ms: int = param(int, 10000, _at_least_1, "how long a client waits for a reply")
    max_start_skew_s: float = param(float, 1.0, lambda v: None if 0 < v < 3600 else "must be > 0 and below 3600 seconds",
                                    "the most a client process's first operation may be off the common start")


@dataclass(frozen=True)
class Load:
    threads_per_dc: int = param(int, 8, _at_least_1, "loader threads per datacenter")


@dataclass(frozen=True)
class Duration:
    warmup_s: float = param(float, 540, _nonneg, "seconds before the measured window")
    measure_s: float = param(float, 160, _pos, "the measured window")
    cooldown_s: float = param(float, 20, _nonneg, "seconds after it")


SECTIONS: dict[str, type] = {"topology": Topology, "workload": Workload, "server": Server, "clients": Clients,
                             "load": Load, "duration": Duration}


def table() -> dict[str, dict[str, tuple]]:
    """section -> field -> (kind, default, check): the form experiment.py resolves with."""
    return {name: {f.name: (f.metadata["kind"], f.metadata["default"], f.metadata["check"])
                   for f in dataclasses.fields(cls)} for name, cls in SECTIONS.items()}


def docs() -> dict[str, dict[str, str]]:
    """section -> field -> what it means."""
    return {name: {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)} for name, cls in SECTIONS.items()}


def build(section: str, values: dict):
    """A resolved section as its frozen class (every field given: resolution filled the defaults)."""
    return SECTIONS[section](**values)
