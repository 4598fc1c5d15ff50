"""Checks across the fields of a resolved experiment (k2bench/spec/checks.py): timeouts that
must fit inside one another, and how long replicas keep versions for remote reads."""
from test_experiment import error, resolve


def test_the_failover_timeout_must_be_below_the_rpc_timeout():
    resolve({"server": {"failover_timeout_ms": 9999, "replica_retention_ms": 20000}, "clients": {"rpc_timeout_ms": 10000}})
    e = error({"server": {"failover_timeout_ms": 10000}})
    assert e.field == "server.failover_timeout_ms" and "below 10000" in str(e)
    e = error({"sweep": {"clients.rpc_timeout_ms": [10000, 2000]}})
    assert e.field == "sweep.clients.rpc_timeout_ms=2000" and "the fail-over timeout (2000 ms)" in str(e)


def test_the_failover_timeout_leaves_room_for_heartbeats():
    resolve({"server": {"failover_timeout_ms": 300}})
    e = error({"server": {"failover_timeout_ms": 299}})
    assert e.field == "server.failover_timeout_ms" and "at least 300" in str(e) and "\n" not in str(e)


def test_replicas_keep_versions_as_long_as_a_reader_elsewhere_may_fetch_them():
    short = {"gc_window_ms": 1000, "txn_timeout_ms": 1000, "failover_timeout_ms": 500}
    resolve({"server": {**short, "replica_retention_ms": 2500}})
    e = error({"server": {**short, "replica_retention_ms": 2499}})
    assert e.field == "server.replica_retention_ms" and "at least 2500" in str(e)
    e = error({"sweep": {"server.gc_window_ms": [5000, 8001]}})
    assert e.field == "sweep.server.gc_window_ms=8001" and "at least 15001" in str(e)
    e = error({"systems": ["k2", "rad"], "per_system": {"k2": {"server": {"txn_timeout_ms": 20000}}}})
    assert e.field == "per_system.k2.server.txn_timeout_ms" and "(5000 + 20000 + 2000 ms)" in str(e)


def test_the_retention_is_no_rule_for_systems_whose_servers_keep_no_versions_for_remote_reads():
    """Only a second round that fetches round one's version from a replica (K2, PaRiS*) needs it."""
    resolve({"systems": ["k2", "rad"], "per_system": {"rad": {"server": {"txn_timeout_ms": 20000}}}})
    resolve({"systems": ["paris", "bpr", "nocc", "karma", "cops-pr"], "server": {"gc_window_ms": 20000}})
