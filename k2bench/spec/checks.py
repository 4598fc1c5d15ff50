"""Checks across fields of a resolved experiment: timeouts, redirected clients' session ids, the
key distribution."""
from __future__ import annotations

from ..errors import ConfigError
from .points import _point_field, _swept_field, system_points

# K2's failure detector ticks with its server (every 100 ms) and needs a few heartbeats per
# fail-over timeout; a server stopped for a quarter of it must not be taken for the others'
# silence.
MIN_FAILOVER_TIMEOUT_MS = 300


def _check_timeouts(exp: dict) -> None:
    """A remote read fails over after server.failover_timeout_ms, within the RPC timeout
    (clients.rpc_timeout_ms, which the servers read from the trial's spec too): at or above
    it, the read times out before it can fail over."""
    for _, _, cfg in system_points(exp):
        failover, rpc = cfg["server"]["failover_timeout_ms"], cfg["clients"]["rpc_timeout_ms"]
        if failover < MIN_FAILOVER_TIMEOUT_MS:
            field = _swept_field(exp, cfg, ("server.failover_timeout_ms",), "server.failover_timeout_ms")
            raise ConfigError(field, f"{failover} ms is too short to tell a dead datacenter from a slow one: servers "
                              f"tick every 100 ms and send several heartbeats per fail-over timeout; use at least "
                              f"{MIN_FAILOVER_TIMEOUT_MS} (and above the largest round trip of the topology)")
        if failover >= rpc:
            field = _swept_field(exp, cfg, ("server.failover_timeout_ms", "clients.rpc_timeout_ms"),
                                 "server.failover_timeout_ms")
            raise ConfigError(field, f"the fail-over timeout ({failover} ms) is not below the RPC timeout of "
                              f"clients and servers (clients.rpc_timeout_ms, {rpc} ms): a remote read would time out "
                              f"before it fails over to the next replica; set server.failover_timeout_ms below {rpc} "
                              f"or clients.rpc_timeout_ms above {failover}")


def _check_retention(exp: dict, known_systems) -> None:
    """For systems whose servers fetch, in a read-only transaction's second round, the exact
    version round one chose (``client_second_round``: K2 §V-C, Fig. 5): round one offers a
    superseded version for server.gc_window_ms after the reader's datacenter applied it,
    round two may ask for it up to server.txn_timeout_ms later, and a replica that does not
    answer passes the fetch to the next after server.failover_timeout_ms (one fail-over
    counted: the paper's f = 2; each further replica down adds one); the replica, which
    may have applied and superseded the version earlier, must still hold it (K2 §IV-B: data
    stays "available for remote reads ... for as long as necessary"). The retention's surplus
    over that sum is how much later a datacenter may apply a write than its replicas; a
    shorter retention fails such reads as garbage-collected. Other systems' servers do not
    keep versions for remote reads (the field does not apply to them)."""
    for _, system, cfg in system_points(exp):
        if not known_systems.info(system).client_second_round:
            continue
        s = cfg["server"]
        need = s["gc_window_ms"] + s["txn_timeout_ms"] + s["failover_timeout_ms"]
        if s["replica_retention_ms"] < need:
            field = _point_field(exp, cfg, system, ("server.replica_retention_ms", "server.gc_window_ms",
                                                    "server.txn_timeout_ms", "server.failover_timeout_ms"),
                                 "server.replica_retention_ms")
            raise ConfigError(field, f"{system}'s replicas keep superseded versions {s['replica_retention_ms']} ms, "
                              f"less than a reader elsewhere may still fetch one in: the GC window (its datacenter "
                              f"offers one that long), the transaction timeout and a fail-over ({s['gc_window_ms']} + "
                              f"{s['txn_timeout_ms']} + {s['failover_timeout_ms']} ms); set "
                              f"server.replica_retention_ms to at least {need}")


# The session ids of one client process: its threads', a warm-up's and, with a redirecting
# kill, one more per thread for every datacenter kill (each may re-point the redirect).
IDS_PER_PROCESS = 1000


def _check_redirects(exp: dict) -> None:
    for _, _, cfg in system_points(exp):
        faults = cfg["faults"]
        if not any(f.get("clients") == "redirect" for f in faults):
            continue
        kills = sum(1 for f in faults if f["kind"] == "kill" and "dc" in f)
        most = (IDS_PER_PROCESS - 2) // (1 + kills)
        if cfg["clients"]["threads_per_dc"] > most:
            field = _swept_field(exp, cfg, ("clients.threads_per_dc",), "clients.threads_per_dc")
            raise ConfigError(field, f"{cfg['clients']['threads_per_dc']} threads: a kill with clients: redirect opens "
                              f"a session per thread for each of the {kills} datacenter kill(s), at most {most} "
                              "threads per datacenter fit; use fewer threads or clients: fail")


def _check_key_distribution(exp: dict) -> None:
    """workload.key_distribution: ycsb_scrambled is YCSB's generator as it is: at its constant,
    over the whole key space, one popularity order for every datacenter; and topology.place's
    expected demand (placement.expected_demand) models the exact Zipf only."""
    for _, system, cfg in system_points(exp):
        w, t = cfg["workload"], cfg["topology"]
        if w["key_distribution"] != "ycsb_scrambled":
            continue
        # 0.99 is the one constant YCSB has zeta precomputed for; any other takes hours over its 10^10 items
        if w["zipf"] != 0.99:
            other, problem = ("workload.zipf",), ("ycsb_scrambled is YCSB's generator at its constant 0.99; "
                                                  "set workload.zipf: 0.99 or use key_distribution: zipf")
        elif w["locality"] > 0:
            other, problem = ("workload.locality",), ("ycsb_scrambled has no per-datacenter hot sets; "
                                                      "set workload.locality: 0 or use key_distribution: zipf")
        elif w["partitions_per_op"] > 0:
            other, problem = ("workload.partitions_per_op",), (
                "ycsb_scrambled draws over the whole key space, not the PaRiS key choice; "
                "set workload.partitions_per_op: 0 or use key_distribution: zipf")
        elif t["place"] != "none" and t["place_demand"] == "expected":
            other, problem = ("topology.place", "topology.place_demand"), (
                "topology.place's expected demand models the exact Zipf, not ycsb_scrambled; give "
                "topology.place_demand a parquet of k2bench demand, set topology.place: none or use "
                "key_distribution: zipf")
        else:
            continue
        raise ConfigError(_point_field(exp, cfg, system, ("workload.key_distribution", *other),
                                       "workload.key_distribution"), problem)
