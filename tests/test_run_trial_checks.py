"""Orchestrator.run_trial's checks of its clients, wired as a real run uses them: every
process it starts is a small Python stand-in (no JVM), so a trial gets to its clients in
about a second. A client that stops before the trial's end, a YCSB worker thread that died
in a client that ran to the end, and a pacing split YCSB cannot keep on the deployment's
client processes each fail the trial with their own message."""
import json
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

from k2bench import experiment
from k2bench.deploy import ClientSlot, LocalDeployment
from k2bench.errors import ConfigError, RunFailed
from k2bench.deploy.hosts import LocalHost
from k2bench.env import Env
from k2bench.orchestrator import Orchestrator
from k2bench.trial import Trial
from k2bench.trial.clients import CLIENT_START_TIMEOUT_S, CLIENTS_READY
from k2bench.trial.load import load_timeout_s

from conftest import ORPHAN_GUARD, ROOT, SYSTEMS

# Stands in for every process: a server reads its spec, prints its ready line and waits to
# be stopped; a loader writes its report; a client says it is ready, waits for the start
# file and then does what STUB_CLIENT says.
STUB = ORPHAN_GUARD + textwrap.dedent(f'''
    import json, os, sys, time
    argv = sys.argv[1:]
    # what every JVM not run as root prints first (the orchestrator's priority flags)
    print("OpenJDK 64-Bit Server VM warning: -XX:ThreadPriorityPolicy=1 may require system level permission, "
          "e.g., being the root user. If the necessary permission is not possessed, changes to priority will be "
          "silently ignored.", file=sys.stderr, flush=True)
    if "serve" in argv:
        spec = json.load(open(argv[argv.index("--spec") + 1]))  # as the launcher: all it runs is in there
        print(f"ready: stub {{spec['system']['name']}}", flush=True)
        while True:
            time.sleep(1)
    props = {{}}
    for line in open(argv[argv.index("-P") + 1]):
        key, _, value = line.rstrip("\\n").partition("=")
        props[key] = value
    spec = json.load(open(props["k2bench.spec"]))  # as K2BenchDB and TxnWorkload: what they run is in there
    if "-load" in argv:
        if os.environ["STUB_CLIENT"] == "load-init-fails":  # YCSB's threads died: no report, exit 0
            print("site.ycsb.DBException: servers.SG[0]: server 127.0.0.1:7005 did not answer a ping within "
                  "60000 ms", file=sys.stderr, flush=True)
            sys.exit(0)
        if os.environ["STUB_CLIENT"] in ("slow-load", "client-dies-in-load", "init-fails-in-load"):
            time.sleep(1.5 if os.environ["STUB_CLIENT"] == "slow-load" else 60)  # the clients start meanwhile
        keys = int(props["insertcount"]) if props["k2bench.dc"] == "VA" else 0
        json.dump({{"loaded": keys, "failed": 0}}, open(props["k2bench.load_report"], "w"))
        sys.exit(0)
    if os.environ["STUB_CLIENT"] in ("init-fails", "init-fails-in-load"):
        # what YCSB prints when DB.init throws: the thread ends, the process lives on idle
        print("site.ycsb.DBException: servers.VA[0]: server 127.0.0.1:7000 did not answer a ping within 3000 ms",
              file=sys.stderr, flush=True)
        print("\tat site.ycsb.ClientThread.run(ClientThread.java:91)", file=sys.stderr, flush=True)
        while True:
            time.sleep(1)
    if os.environ["STUB_CLIENT"] == "client-dies-in-load":
        sys.exit(3)
    print({CLIENTS_READY!r}, flush=True)
    while not (os.path.exists(props["k2bench.start_file"]) and open(props["k2bench.start_file"]).read().strip()):
        time.sleep(0.05)
    start = int(open(props["k2bench.start_file"]).read()) / 1000
    end = start + float(props["k2bench.run_s"])
    mode = os.environ["STUB_CLIENT"]
    if mode == "slow-load":  # a client that runs: its first operation on time (start.py)
        time.sleep(max(0, start - time.time()))
        print(f"k2bench: first operation at {{int(time.time() * 1000)}}", flush=True)
    time.sleep(max(0, (start if mode == "early" else end) - time.time()))
    if mode == "dead-worker":
        print('Exception in thread "Thread-3" java.lang.IllegalArgumentException: bound must be positive',
              file=sys.stderr)
        print("\\tat java.base/java.util.Random.nextInt(Random.java:322)", file=sys.stderr)
        print("\\tat site.ycsb.ClientThread.run(ClientThread.java:113)", file=sys.stderr)
        print("\\tat java.base/java.lang.Thread.run(Thread.java:840)", file=sys.stderr)
''')


class StubHost(LocalHost):
    def __init__(self, jar, stub):
        super().__init__(jar)
        self.stub = stub

    def start(self, name, argv, stdout, stderr):
        return super().start(name, [sys.executable, str(self.stub), *argv], stdout, stderr)


class SlotsDeployment(LocalDeployment):
    """This machine, with several client processes per datacenter (as an inventory gives)."""

    def __init__(self, host, per_dc):
        super().__init__(host)
        self.per_dc = per_dc

    def clients(self, dc):
        return [ClientSlot(self.host, dc, f"client-{dc}-{i}", i, self.per_dc) for i in range(self.per_dc)]


class _Quiet:
    def update(self, **_):
        pass


def run_trial(tmp_path, monkeypatch, mode, doc, client_processes=1):
    monkeypatch.setenv("STUB_CLIENT", mode)
    stub = tmp_path / "stub.py"
    stub.write_text(STUB)
    host = StubHost(tmp_path / "k2bench.jar", stub)
    host.bind_run(tmp_path)
    dep = LocalDeployment(host) if client_processes == 1 else SlotsDeployment(host, client_processes)
    # The stand-ins are processes of their own (a stub server hosts no clients or loaders).
    dep.in_server_clients = False
    clients = {"heap_mb": 64, **doc.get("clients", {}), "processes": "own"}
    exp = experiment.resolve({"systems": ["k2"], "topology": {"servers_per_dc": 1}, "workload": {"keys": 10},
                              "server": {"heap_mb": 64}, **doc, "clients": clients}, "stub", SYSTEMS)
    env = Env(repo=ROOT, jar=tmp_path / "k2bench.jar", deployment=dep)
    env.system_info = SYSTEMS  # the real descriptors; the stub jar has none
    orch = Orchestrator(env, _Quiet())
    t = Trial("k2", "", 1, exp, tmp_path / "k2", "k2")
    manifest = {"config": exp, "measured_rtt_ms": {}}  # no RTT probe
    try:
        orch.run_trial(t, manifest)
    finally:
        assert all(p.returncode is not None for p in t.procs), "every process was stopped"
    return t


def test_a_client_that_stops_early_fails_the_trial_saying_why(tmp_path, monkeypatch):
    with pytest.raises(RunFailed) as e:
        run_trial(tmp_path, monkeypatch, "early", {
            "clients": {"threads_per_dc": 1, "target_ops_per_s_per_dc": 2, "heap_mb": 64},
            "duration": {"warmup_s": 0, "measure_s": 10, "cooldown_s": 0}})
    assert "\n" not in str(e.value)
    assert re.search(r"^client-\w+ stopped (9|10) s before the trial's end, with no thread death in its log "
                     r"\(a crash\): ", str(e.value)), str(e.value)
    assert "ThreadPriorityPolicy" not in str(e.value)  # the JVM's priority warning is not the cause


# One paced client thread per datacenter for a second: the trial fails (a stand-in's mode) or ends at once.
ONE_THREAD_ONE_SECOND = {"clients": {"threads_per_dc": 1, "target_ops_per_s_per_dc": 2, "heap_mb": 64},
                         "duration": {"warmup_s": 0, "measure_s": 1, "cooldown_s": 0}}


def test_a_worker_thread_that_died_in_a_client_that_ran_to_the_end_fails_the_trial(tmp_path, monkeypatch):
    with pytest.raises(RunFailed) as e:
        run_trial(tmp_path, monkeypatch, "dead-worker", ONE_THREAD_ONE_SECOND)
    assert "a client thread died, so its load fell short: Exception in thread \"Thread-3\"" in str(e.value)


def test_clients_are_launched_with_the_split_the_check_validated(tmp_path, monkeypatch):
    with pytest.raises(RunFailed):
        run_trial(tmp_path, monkeypatch, "dead-worker", {
            "clients": {"threads_per_dc": 7, "target_ops_per_s_per_dc": 6.6, "heap_mb": 64},
            "duration": {"warmup_s": 0, "measure_s": 1, "cooldown_s": 0}}, client_processes=3)
    argv = {json.loads(p.read_text())["name"]: json.loads(p.read_text())["argv"]
            for p in (tmp_path / "k2" / "processes").glob("client-*.json")}
    assert len(argv) == 18
    split = [(a[a.index("-threads") + 1], a[a.index("-target") + 1]) for _, a in sorted(argv.items())
             if _.startswith("client-VA-")]
    assert split == [("3", "2"), ("2", "2"), ("2", "2")]
    assert experiment.client_shares(7, 6.6, 3) == [experiment.ClientShare(int(n), int(r)) for n, r in split]


def test_pacing_the_deployments_client_processes_cannot_keep_stops_before_clients_start(tmp_path, monkeypatch):
    """10 ops/s over 20 threads passes on one host; over 3 client hosts per datacenter YCSB
    would get -target 3 -threads 7."""
    with pytest.raises(ConfigError) as e:
        run_trial(tmp_path, monkeypatch, "dead-worker", {
            "clients": {"threads_per_dc": 20, "target_ops_per_s_per_dc": 10, "heap_mb": 64},
            "duration": {"warmup_s": 0, "measure_s": 1, "cooldown_s": 0}}, client_processes=3)
    assert e.value.field == "clients.target_ops_per_s_per_dc"
    assert "3 client processes with -target 3/3/3 -threads 7/7/6" in str(e.value)
    assert not list((tmp_path / "k2" / "processes").glob("client-*.json")), "no client started"


def test_validate_checks_pacing_with_the_deployments_client_processes(jar):
    """Before anything starts: the same check as run_trial's, with the inventory's slots."""
    from k2bench.spec.validate import validate
    exp = experiment.resolve({"systems": ["k2"], "clients": {"threads_per_dc": 20, "target_ops_per_s_per_dc": 10}},
                             "t", SYSTEMS)
    validate(Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar))), exp)
    with pytest.raises(ConfigError) as e:
        validate(Env(repo=ROOT, jar=jar, deployment=SlotsDeployment(LocalHost(jar), 3)), exp)
    assert "-target 3/3/3 -threads 7/7/6" in str(e.value)


def test_a_client_whose_init_failed_fails_the_trial_at_once_saying_why(tmp_path, monkeypatch):
    with pytest.raises(RunFailed) as e:
        run_trial(tmp_path, monkeypatch, "init-fails", ONE_THREAD_ONE_SECOND)
    # not "clients not ready after 300 s": the error YCSB printed, as soon as it printed it
    assert re.search(r"^client-\w+ failed before it was ready: servers.VA\[0\]: server 127.0.0.1:7000 did not "
                     r"answer a ping within 3000 ms$", str(e.value)), str(e.value)


def test_a_loader_whose_init_failed_fails_the_trial_saying_why(tmp_path, monkeypatch):
    with pytest.raises(RunFailed) as e:
        run_trial(tmp_path, monkeypatch, "load-init-fails", ONE_THREAD_ONE_SECOND)
    # not a JSON error on the missing report: the loader, and the error YCSB printed
    assert re.search(r"^load-\w+ wrote no load report \(exited with code 0\): site.ycsb.DBException: servers.SG\[0\]: "
                     r"server 127.0.0.1:7005 did not answer a ping within 60000 ms$", str(e.value)), str(e.value)


def records(tmp_path, prefix):
    return [json.loads(p.read_text()) for p in (tmp_path / "k2" / "processes").glob(f"{prefix}-*.json")]


def test_clients_start_up_while_the_keys_load_and_wait_for_it(tmp_path, monkeypatch):
    """The client processes are launched before the loaders end (their JVMs' start-up beside
    the load), and their start barrier and YCSB's time limit leave room for the whole load."""
    with pytest.raises(RunFailed, match="^client logs missing"):  # stand-ins: no latency logs to summarize
        run_trial(tmp_path, monkeypatch, "slow-load", ONE_THREAD_ONE_SECOND)
    clients, loaders = records(tmp_path, "client"), records(tmp_path, "load")
    assert len(clients) == 6 and loaders
    assert max(c["started"] for c in clients) < min(p["stopped"] for p in loaders) - 1
    argv = clients[0]["argv"]
    props = dict(line.split("=", 1) for line in Path(argv[argv.index("-P") + 1]).read_text().splitlines())
    waits_s = load_timeout_s({"keys": 10}) + CLIENT_START_TIMEOUT_S
    assert int(props["k2bench.start_timeout_ms"]) == waits_s * 1000
    assert int(props["maxexecutiontime"]) > waits_s + 1


def test_a_client_that_exits_while_the_keys_load_fails_the_trial_at_once(tmp_path, monkeypatch):
    began = time.time()
    with pytest.raises(RunFailed) as e:
        run_trial(tmp_path, monkeypatch, "client-dies-in-load", ONE_THREAD_ONE_SECOND)
    assert re.search(r"^client-\w+ exited with code 3 unexpectedly", str(e.value)), str(e.value)
    assert time.time() - began < 30, "not after the loaders' 60 s"


def test_a_client_whose_init_failed_while_the_keys_load_fails_the_trial_then(tmp_path, monkeypatch):
    began = time.time()
    with pytest.raises(RunFailed) as e:
        run_trial(tmp_path, monkeypatch, "init-fails-in-load", ONE_THREAD_ONE_SECOND)
    assert re.search(r"^client-\w+ failed before it was ready: servers.VA\[0\]: server 127.0.0.1:7000 did not "
                     r"answer a ping within 3000 ms$", str(e.value)), str(e.value)
    assert time.time() - began < 30, "not after the loaders' 60 s"

def test_validate_refuses_a_system_on_a_placement_it_does_not_run_on(jar, tmp_path):
    """Before anything starts: every point's topology goes through the servers' loader, and a
    system that does not declare the topology's placement is named with the fix."""
    from k2bench.spec.topology import placement_of, resolve_topology
    from k2bench.spec.validate import validate
    (tmp_path / "three.yaml").write_text(textwrap.dedent("""
        datacenters: [VA, CA, SP]
        rtt_ms: {VA: {CA: 60, SP: 146}, CA: {SP: 194}}
        servers_per_dc: 4
        replication_factor: 2
        placement: partitions
        partitions: 6
        base_port: 17000
        """))
    env = Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))
    exp = experiment.resolve({"systems": ["rad"], "topology": {"file": str(tmp_path / "three.yaml")}}, "t", SYSTEMS)
    with pytest.raises(ConfigError) as e:
        validate(env, exp)
    assert e.value.field == "systems"
    assert "rad does not run on placement: partitions" in str(e.value) and "it runs on groups" in str(e.value)
    # The loader places 6 partitions over 3 datacenters, 2 each: every datacenter holds a first replica.
    assert placement_of(resolve_topology(env, exp)) == {"placement": "partitions", "partitions": 6,
                                                       "first_replica_dcs": ["VA", "CA", "SP"]}
    # The shipped topology: groups, f = 2; the first group (VA, SP, TYO) loads.
    default = experiment.resolve({"systems": ["k2"]}, "t", SYSTEMS)
    assert placement_of(resolve_topology(env, default))["first_replica_dcs"] == ["VA", "SP", "TYO"]
    # A sweep point is checked too, not only the first: f = 4 does not divide six datacenters.
    sweep = experiment.resolve({"systems": ["k2"], "sweep": {"topology.replication_factor": [2, 4]}}, "t", SYSTEMS)
    with pytest.raises(ConfigError) as e:
        validate(env, sweep)
    assert e.value.field == "topology topologies/paper-local.yaml (replication_factor)"
    assert str(e.value).endswith("4 does not divide the 6 datacenters; replica groups need D/f datacenters each "
                                 "(or use placement: partitions)")


def test_system_options_are_checked_against_what_each_system_declares_and_given_to_it_only(jar, tmp_path):
    """Names, types and ranges come from the launcher's `systems --json`; the servers of the
    system and its clients get them in the trial's spec (system.options); other systems nothing."""
    from k2bench.spec.validate import check_system_options
    from k2bench.spec.trial import TrialSpec
    env = Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))

    def problem(options) -> ConfigError:
        with pytest.raises(ConfigError) as e:
            check_system_options(env, experiment.resolve({"server": {"options": options}}, "t", SYSTEMS))
        return e.value

    check_system_options(env, experiment.resolve({"server": {"options": {"paris-star": {"private_cache_ttl_ms": 100}}}},
                                                 "t", SYSTEMS))
    e = problem({"paris-star": {"private_cache_ttl": 100}})
    assert e.field == "server.options.paris-star.private_cache_ttl" and "its options: private_cache_ttl_ms" in str(e)
    e = problem({"paris-star": {"private_cache_ttl_ms": 0}})
    assert "must be in [1, 3600000], got 0" in str(e)
    e = problem({"paris-star": {"private_cache_ttl_ms": 2.5}})
    assert "whole number" in str(e)
    assert "whole number" in str(problem({"paris-star": {"private_cache_ttl_ms": float("inf")}}))
    e = problem({"k2": {"private_cache_ttl_ms": 5}})
    assert e.field == "server.options.k2.private_cache_ttl_ms" and "its options: none" in str(e)
    e = problem({"pariss": {"x": 1}})
    assert e.field == "server.options.pariss" and "bundled: bpr, cops-pr, k2, karma, nocc, paris, paris-star, rad" in str(e)
    check_system_options(env, experiment.resolve({"server": {"options": {"bpr": {"blocking": "queue"}}}}, "t", SYSTEMS))
    e = problem({"bpr": {"blocking": "spin"}})
    assert e.field == "server.options.bpr.blocking" and "must be one of thread, queue, got 'spin'" in str(e)
    assert "a whole number" in str(problem({"bpr": {"replication_interval_ms": "5"}}))

    exp = experiment.resolve({"server": {"options": {"paris-star": {"private_cache_ttl_ms": 100}}}}, "t", SYSTEMS)
    assert TrialSpec.of(exp, "paris-star", "", {}, 1, 1).to_json()["system"]["options"] == {"private_cache_ttl_ms": 100}
    assert TrialSpec.of(exp, "k2", "", {}, 1, 1).to_json()["system"]["options"] == {}


def test_a_systems_options_reach_its_servers_and_clients(tmp_path, monkeypatch):
    with pytest.raises(RunFailed):
        run_trial(tmp_path, monkeypatch, "dead-worker", {
            **ONE_THREAD_ONE_SECOND,
            "server": {"heap_mb": 64, "options": {"k2": {"gossip_ms": 5, "fast": True}, "rad": {"other": 1}}}})
    records = [json.loads(p.read_text()) for p in (tmp_path / "k2" / "processes").glob("*.json")]
    servers = [r["argv"] for r in records if "serve" in r["argv"]]
    assert servers
    trial_spec = (tmp_path / "k2" / "spec.json").read_text()  # the trial's spec, for its processes
    for argv in servers:
        serve = argv[argv.index("serve"):]
        # what the server runs is its spec; its flags say only which servers and where their files go
        assert [a for a in serve if a.startswith("--")] == ["--spec", "--all", "--stats-out", "--metrics-log"]
        given = Path(serve[serve.index("--spec") + 1])
        assert given.read_text() == trial_spec
        spec = json.loads(given.read_text())
        assert spec["system"] == {"name": "k2", "options": {"gossip_ms": 5, "fast": True}}
        assert spec["workload"]["keys"] == 10 and spec["server"]["heap_mb"] == 64
        assert spec["clients"]["threads_per_dc"] == 1 and spec["files"]["topology"] == "topology.yaml"
        assert (given.parent / "topology.yaml").exists()
    # the clients' (and loaders') too: they read the same spec, and no option as a property
    props = [p.read_text() for p in (tmp_path / "k2" / "clients").glob("*.properties")]
    assert props and all(f"k2bench.spec={given}\n" in p and "k2bench.option." not in p for p in props)


def test_k2bench_systems_lists_claims_placements_and_options(jar, capsys):
    from k2bench import cli
    assert cli.main(["--jar", str(jar), "systems"]) == 0
    out = capsys.readouterr().out
    assert "paris-star: PaRiS*:" in out and "placements: groups, table; read-only transactions: at most 1 wide-area" in out
    assert ("server.options.paris-star.private_cache_ttl_ms: integer, default 5000, 1..3600000: how long a client's "
            "private cache keeps its own writes") in out
    assert "rad: RAD" in out and "no round claim" in out
    assert "a datacenter cache; run by default; of the k2 paper's evaluation" in out  # k2's descriptor
    assert "NOT causal" in out and "mutants (testing.mutant): " in out
    assert "read-write transactions; needs reliable channels (no partition with mode: drop)" in out  # PaRiS's


def test_read_write_transactions_need_systems_that_have_them(jar):
    from k2bench.spec.validate import validate
    env = Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))
    exp = experiment.resolve({"systems": ["k2", "rad"], "workload": {"rw_fraction": 0.1}}, "t", SYSTEMS)
    with pytest.raises(ConfigError) as e:
        validate(env, exp)
    assert e.value.field == "workload.rw_fraction"
    assert str(e.value).endswith("k2, rad have no read-write transactions; set it to 0 or run systems that have them")
    assert {s for s, info in env.system_info.items() if info.read_write_transactions} == {"bpr", "nocc", "paris"}


def test_write_only_transactions_need_systems_that_have_them(jar):
    from k2bench.spec.validate import validate
    env = Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))
    exp = experiment.resolve({"systems": ["karma", "cops-pr"], "topology": {"file": "topologies/karma-rings.yaml"},
                              "workload": {"write_fraction": 0.05, "wot_fraction": 0.5}}, "t", SYSTEMS)
    with pytest.raises(ConfigError) as e:
        validate(env, exp)
    assert e.value.field == "workload.wot_fraction"
    assert "karma, cops-pr have no write-only transactions; set it to 0 (writes are single writes) or run systems " \
           "that have them (per_system.<system>.workload sets it for one system)" in str(e.value)
    assert {s for s, info in env.system_info.items() if not info.write_only_transactions} == {"karma", "cops-pr"}
    exp = experiment.resolve({"systems": ["karma", "cops-pr"], "topology": {"file": "topologies/karma-rings.yaml"},
                              "workload": {"write_fraction": 0.05, "wot_fraction": 0.0}}, "t", SYSTEMS)
    resolved = validate(env, exp)  # single puts only: accepted, on the rings the topology names
    assert resolved["placement"] == "rings" and resolved["rings"] == [["VA", "CA", "LDN"], ["TYO", "SG"], ["SP"]]


def test_systems_of_one_run_on_their_own_placements_each_through_per_system(jar):
    """partial-replication: K2, RAD, PaRiS*, PaRiS on replica groups, Karma and COPS-PR on
    rings with single puts; each system validated against its own topology and workload,
    and each trial records its own placement (the manifest's trials[].placement)."""
    from k2bench.spec.topology import placements
    from k2bench.spec.validate import validate
    env = Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))
    path = experiment.find(ROOT / "workloads", "partial-replication")
    exp = experiment.resolve(experiment.load_file(path), "partial-replication", SYSTEMS)
    assert validate(env, exp)["placement"] == "groups"
    by = placements(env, exp)
    assert {s: p["placement"] for (_, s), p in by.items()} == {
        "k2": "groups", "rad": "groups", "paris-star": "groups", "paris": "groups", "karma": "rings", "cops-pr": "rings"}
    assert by["", "karma"]["rings"] == [["VA", "CA", "LDN"], ["TYO", "SG"], ["SP"]] and "rings" not in by["", "k2"]
    # Without the override Karma would run on K2's replica groups, and with K2's workload.
    doc = experiment.load_file(path)
    del doc["per_system"]["karma"]["topology"]
    with pytest.raises(ConfigError) as e:
        validate(env, experiment.resolve(doc, "t", SYSTEMS))
    assert e.value.field == "systems" and "karma does not run on placement: groups" in str(e.value)
    doc = experiment.load_file(path)
    del doc["per_system"]["cops-pr"]
    with pytest.raises(ConfigError) as e:
        validate(env, experiment.resolve(doc, "t", SYSTEMS))
    assert e.value.field == "workload.wot_fraction" and str(e.value).startswith("workload.wot_fraction: cops-pr has no")
    # An override is named as the user wrote it: a placement the system does not run on ...
    doc = experiment.load_file(path)
    doc["per_system"]["karma"]["topology"] = {"file": "topologies/paper-local.yaml"}
    with pytest.raises(ConfigError) as e:
        validate(env, experiment.resolve(doc, "t", SYSTEMS))
    assert e.value.field == "per_system.karma.topology" and "karma does not run on placement: groups" in str(e.value)
    # ... and a topology with other datacenters: one run's systems share its clients.
    doc = experiment.load_file(path)
    doc["per_system"]["karma"]["workload"]["wot_fraction"] = 0.5
    with pytest.raises(ConfigError) as e:
        validate(env, experiment.resolve(doc, "t", SYSTEMS))
    assert e.value.field == "per_system.karma.workload.wot_fraction"
    doc = experiment.load_file(path)
    doc["per_system"]["paris"] = {"topology": {"file": "topologies/paris-5dc.yaml", "replication_factor": None,
                                               "servers_per_dc": 4}}
    with pytest.raises(ConfigError) as e:
        validate(env, experiment.resolve(doc, "t", SYSTEMS))
    assert e.value.field == "per_system.paris.topology"
    assert "the systems of a run share its datacenters" in str(e.value)


def test_systems_built_on_reliable_channels_refuse_faults_that_drop_messages(jar):
    from k2bench.spec.validate import validate
    env = Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))
    assert {s for s, info in env.system_info.items() if not info.message_loss} == {"bpr", "nocc", "paris", "rad"}
    faults = [{"kind": "delay", "at_s": 5, "for_s": 2, "dcs": ["VA", "CA"], "extra_ms": 50},
              {"kind": "partition", "at_s": 10, "for_s": 5, "dcs": ["VA", "CA"], "mode": "drop"}]
    exp = experiment.resolve({"systems": ["k2", "paris"], "faults": faults}, "t", SYSTEMS)
    with pytest.raises(ConfigError) as e:
        validate(env, exp)
    assert e.value.field == "faults[1].mode"
    assert "paris assumes no message is lost" in str(e.value) and "use mode: hold" in str(e.value)
    faults[1]["mode"] = "hold"
    validate(env, experiment.resolve({"systems": ["k2", "paris"], "faults": faults}, "t", SYSTEMS))
    # RAD: a client's sub-request lost past its timeout would leave keys prepared for good.
    with pytest.raises(ConfigError) as e:
        validate(env, experiment.resolve({"systems": ["k2", "rad"], "faults": [dict(faults[1], mode="drop")]},
                                         "t", SYSTEMS))
    assert e.value.field == "faults[0].mode" and "rad assumes no message is lost" in str(e.value)
    # K2 and PaRiS* resend until acknowledged.
    validate(env, experiment.resolve({"systems": ["k2", "paris-star"], "faults": [dict(faults[1], mode="drop")]},
                                     "t", SYSTEMS))
