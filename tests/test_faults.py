"""Faults in experiment files: validation with one-line errors, the injector's
schedule (signals, the network faults file, the timeline) and the unavailability report."""
import json
import signal
import time
from dataclasses import dataclass

import pytest

from k2bench import experiment
from k2bench.deploy import ServerSlot
from k2bench.errors import ConfigError
from k2bench.trial.faults import FaultInjector, fault_windows, unavailability
from k2bench.spec.validate import check_fault_targets

from conftest import SYSTEMS

DURATION = {"duration": {"warmup_s": 5, "measure_s": 20, "cooldown_s": 5}}


def resolve(faults, **extra):
    return experiment.resolve({**DURATION, "faults": faults, **extra}, "t", SYSTEMS)


def field_of(faults, **extra) -> str:
    with pytest.raises(ConfigError) as e:
        resolve(faults, **extra)
    assert "\n" not in str(e.value)
    return e.value.field


def test_every_kind_of_fault_resolves():
    f = resolve([{"kind": "kill", "dc": "TYO", "at_s": 10},
                 {"kind": "pause", "server": "SP:1", "at_s": 3, "for_s": 2},
                 {"kind": "partition", "dcs": ["VA", "CA"], "at_s": 4, "for_s": 5},
                 {"kind": "delay", "dcs": ["LDN", "SG"], "extra_ms": 300, "at_s": 1, "for_s": 1}])["faults"]
    assert [x["kind"] for x in f] == ["kill", "pause", "partition", "delay"]
    assert f[2]["mode"] == "hold", "a partition holds messages unless told to drop them"
    assert resolve(None)["faults"] == [] and resolve(None)["check"] is True


@pytest.mark.parametrize("faults, field", [
    ("kill TYO", "faults"),
    ([{"kind": "explode", "at_s": 1}], "faults[0].kind"),
    ([{"kind": "kill", "dc": "TYO"}], "faults[0].at_s"),
    ([{"kind": "kill", "dc": "TYO", "at_s": 1, "for_s": 2}], "faults[0].for_s"),
    ([{"kind": "kill", "at_s": 1}], "faults[0]"),
    ([{"kind": "kill", "dc": "TYO", "server": "TYO:0", "at_s": 1}], "faults[0]"),
    ([{"kind": "pause", "dc": "SP", "at_s": 1, "for_s": 0}], "faults[0].for_s"),
    ([{"kind": "pause", "dc": "SP", "at_s": "soon", "for_s": 1}], "faults[0].at_s"),
    ([{"kind": "kill", "dc": "SP", "at_s": 31}], "faults[0].at_s"),
    ([{"kind": "partition", "dcs": ["VA"], "at_s": 1, "for_s": 1}], "faults[0].dcs"),
    ([{"kind": "partition", "dcs": ["VA", "VA"], "at_s": 1, "for_s": 1}], "faults[0].dcs"),
    ([{"kind": "partition", "dcs": ["VA", "CA"], "at_s": 1, "for_s": 1, "mode": "lose"}], "faults[0].mode"),
    ([{"kind": "delay", "dcs": ["VA", "CA"], "at_s": 1, "for_s": 1}], "faults[0].extra_ms"),
    ([{"kind": "kill", "dc": "VA", "at_s": 1, "clients": "move"}], "faults[0].clients"),
    ([{"kind": "kill", "server": "VA:0", "at_s": 1, "clients": "redirect"}], "faults[0].clients"),
    ([{"kind": "pause", "dc": "VA", "at_s": 1, "for_s": 1, "clients": "redirect"}], "faults[0].clients"),
])
def test_bad_faults_are_named_in_one_line(faults, field):
    assert field_of(faults) == field


def test_a_kill_keeps_its_clients_failing_unless_told_to_redirect_them():
    f = resolve([{"kind": "kill", "dc": "VA", "at_s": 1}, {"kind": "kill", "dc": "CA", "at_s": 2, "clients": "redirect"},
                 {"kind": "kill", "server": "SP:0", "at_s": 3}])["faults"]
    assert [x["clients"] for x in f] == ["fail", "redirect", "fail"]


def test_a_redirecting_kill_needs_room_for_a_second_session_per_thread():
    redirect = [{"kind": "kill", "dc": "VA", "at_s": 1, "clients": "redirect"}]
    assert resolve(redirect, clients={"threads_per_dc": 499})["faults"][0]["clients"] == "redirect"
    assert field_of(redirect, clients={"threads_per_dc": 500}) == "clients.threads_per_dc"
    two = redirect + [{"kind": "kill", "dc": "CA", "at_s": 2}]  # VA's clients may be re-pointed once
    assert resolve(two, clients={"threads_per_dc": 332})
    assert field_of(two, clients={"threads_per_dc": 333}) == "clients.threads_per_dc"
    swept = {"faults.0.clients": ["fail", "redirect"]}  # checked at each point, as it runs
    assert field_of([{"kind": "kill", "dc": "VA", "at_s": 1}], clients={"threads_per_dc": 600}, sweep=swept) \
        == "clients.threads_per_dc"
    assert resolve([{"kind": "kill", "dc": "VA", "at_s": 1}], clients={"threads_per_dc": 900})


def test_a_sweep_can_take_each_datacenter_down_in_turn():
    from k2bench.experiment import points
    exp = resolve([{"kind": "kill", "dc": "VA", "at_s": 5, "clients": "redirect"}],
                  sweep={"faults.0.dc": ["VA", "CA", "TYO"], "workload.zipf": [0.8, 1.2]})
    pts = points(exp)
    assert len(pts) == 6
    assert [(c["faults"][0]["dc"], c["workload"]["zipf"]) for _, c in pts][:3] == [("VA", 0.8), ("VA", 1.2), ("CA", 0.8)]
    assert pts[0][0] == "fault0_dc=VA_zipf=0.8"
    assert exp["faults"][0]["dc"] == "VA", "the experiment itself is not changed"
    for sweep, field in [({"faults.1.dc": ["VA"]}, "sweep.faults.1.dc"),
                         ({"faults.0.server": ["VA:0"]}, "sweep.faults.0.server"),
                         ({"faults.0.kind": ["pause"]}, "sweep.faults.0.kind"),
                         ({"faults.0.at_s": [5, 99]}, "sweep.faults.0.at_s[1]"),
                         ({"faults.0.clients": ["redirect", "stay"]}, "sweep.faults.0.clients[1]"),
                         ({"faults.0.dc": []}, "sweep.faults.0.dc")]:
        assert field_of([{"kind": "kill", "dc": "VA", "at_s": 5}], sweep=sweep) == field, sweep


def test_check_and_testing_switches_are_validated():
    assert resolve(None, check=False)["check"] is False
    assert resolve(None, testing={"mutant": "read-pending"})["testing"] == {"mutant": "read-pending"}
    assert field_of(None, check="yes") == "check"
    assert field_of(None, testing={"mutant": "nope"}) == "testing.mutant"
    assert field_of(None, testing={"other": 1}) == "testing"


def test_fault_targets_must_exist_in_the_topology():
    dcs = ["VA", "CA", "SP"]
    check_fault_targets([{"kind": "kill", "dc": "SP", "at_s": 1}], dcs, 2)
    for f, field in [({"kind": "kill", "dc": "TYO", "at_s": 1}, "faults[0].dc"),
                     ({"kind": "kill", "server": "VA:2", "at_s": 1}, "faults[0].server"),
                     ({"kind": "kill", "server": "XX:0", "at_s": 1}, "faults[0].server"),
                     ({"kind": "delay", "dcs": ["VA", "SG"], "extra_ms": 1, "at_s": 1, "for_s": 1}, "faults[0].dcs")]:
        with pytest.raises(ConfigError) as e:
            check_fault_targets([f], dcs, 2)
        assert e.value.field == field


# ------------------------------------------------------------------ the injector

@dataclass
class FakeProc:
    name: str
    handle_host: "FakeHost"


class FakeHost:
    def __init__(self):
        self.signals = []
        self.files = {}

    def signal(self, proc, sig):
        self.signals.append((proc.name, sig))

    def put_text(self, rel, text):
        self.files[rel] = text


def servers(host, per_server=False):
    out = []
    for dc in ("VA", "CA", "SP"):
        for i in range(2 if per_server else 1):
            slot = ServerSlot(host, dc, f"server-{dc}-{i}" if per_server else f"server-{dc}",
                              ("--server", f"{dc}:{i}") if per_server else ("--dc", dc))
            out.append((slot, FakeProc(slot.name, host)))
    return out


def run_schedule(inj, until_s):
    """Polls the injector every 100 ms of its schedule, as the orchestrator does."""
    for step in range(int(until_s * 10) + 1):
        inj.poll(inj.t0_ms + step * 100)


def test_the_injector_signals_servers_rewrites_the_links_and_keeps_a_timeline(tmp_path):
    host = FakeHost()
    faults = resolve([{"kind": "pause", "server": "SP:1", "at_s": 1, "for_s": 2},
                      {"kind": "partition", "dcs": ["VA", "CA"], "at_s": 2, "for_s": 2, "mode": "drop"},
                      {"kind": "delay", "dcs": ["VA", "SP"], "extra_ms": 50, "at_s": 2.5, "for_s": 1},
                      {"kind": "kill", "dc": "CA", "at_s": 5}])["faults"]
    inj = FaultInjector(faults, time.time() * 1000, servers(host, per_server=True), [host], "t/faults.json",
                        tmp_path / "timeline.jsonl")
    run_schedule(inj, 2.6)
    assert host.signals == [("server-SP-1", signal.SIGSTOP)]
    doc = json.loads(host.files["t/faults.json"])
    assert doc["partitions"] == [{"a": "VA", "b": "CA", "until_ms": round(inj.t0_ms + 4000), "mode": "drop"}]
    assert {(x["from"], x["to"], x["extra_ms"]) for x in doc["links"]} == {("VA", "SP", 50.0), ("SP", "VA", 50.0)}
    run_schedule(inj, 6)
    assert host.signals == [("server-SP-1", signal.SIGSTOP), ("server-SP-1", signal.SIGCONT),
                            ("server-CA-0", signal.SIGKILL), ("server-CA-1", signal.SIGKILL)]
    assert json.loads(host.files["t/faults.json"]) == {"links": [], "partitions": []}, "healed"
    assert inj.killed == {"server-CA-0", "server-CA-1"} and not inj.paused
    events = [json.loads(x) for x in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert [(e["event"], e["kind"]) for e in events] == [
        ("fault-start", "pause"), ("fault-start", "partition"), ("fault-start", "delay"),
        ("fault-end", "pause"), ("fault-end", "delay"), ("fault-end", "partition"), ("fault-start", "kill")]
    windows = fault_windows(tmp_path / "timeline.jsonl")
    assert len(windows) == 4 and windows[3][1] == float("inf"), "a kill lasts to the end"
    assert all(a < b for a, b in windows)


def test_closing_resumes_paused_servers_and_heals_the_network(tmp_path):
    host = FakeHost()
    faults = resolve([{"kind": "pause", "dc": "VA", "at_s": 0, "for_s": 20},
                      {"kind": "partition", "dcs": ["VA", "CA"], "at_s": 0, "for_s": 20}])["faults"]
    inj = FaultInjector(faults, time.time() * 1000, servers(host), [host], "f.json", tmp_path / "t.jsonl")
    inj.poll()
    assert host.signals == [("server-VA", signal.SIGSTOP)] and json.loads(host.files["f.json"])["partitions"]
    inj.close()
    assert host.signals[-1] == ("server-VA", signal.SIGCONT)
    assert json.loads(host.files["f.json"]) == {"links": [], "partitions": []}


def test_a_redirecting_kill_sends_the_clients_to_the_nearest_datacenter_still_up(tmp_path):
    """VA's storage dies (its clients go to CA, the nearest: 60 ms), then CA's: VA's clients
    move on to SP (146 ms; every other datacenter is farther), CA's stay failing (fail)."""
    from k2bench.placement import load_topology
    host = FakeHost()
    topo = load_topology({"datacenters": ["VA", "CA", "SP"], "replication_factor": 2,
                          "rtt_ms": {"VA": {"CA": 60, "SP": 146}, "CA": {"SP": 194}}})
    faults = resolve([{"kind": "kill", "dc": "VA", "at_s": 1, "clients": "redirect"},
                      {"kind": "kill", "dc": "CA", "at_s": 2}])["faults"]
    inj = FaultInjector(faults, time.time() * 1000, servers(host), [host], "f.json", tmp_path / "t.jsonl", topo)
    run_schedule(inj, 1.5)
    assert json.loads(host.files["f.json"])["redirects"] == [{"from": "VA", "to": "CA"}]
    run_schedule(inj, 2.5)
    assert json.loads(host.files["f.json"])["redirects"] == [{"from": "VA", "to": "SP"}]
    notes = [json.loads(x)["note"] for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert notes[0].endswith("clients VA -> CA") and notes[1].endswith("clients VA -> SP")
    inj.close()
    assert "redirects" not in json.loads(host.files["f.json"])
    # without a topology a redirect cannot be placed: said, not guessed
    inj = FaultInjector(faults, time.time() * 1000, servers(host), [host], "g.json", tmp_path / "u.jsonl")
    with pytest.raises(ConfigError) as e:
        run_schedule(inj, 1.5)
    assert e.value.field == "faults.clients"


def test_the_pauses_of_each_process_come_from_the_timeline(tmp_path):
    from k2bench.trial.faults import paused_ms
    host = FakeHost()
    faults = resolve([{"kind": "pause", "dc": "SP", "at_s": 1, "for_s": 2},
                      {"kind": "pause", "dc": "SP", "at_s": 5, "for_s": 20},
                      {"kind": "partition", "dcs": ["VA", "CA"], "at_s": 1, "for_s": 1}])["faults"]
    inj = FaultInjector(faults, 1_000_000.0, servers(host), [host], "f.json", tmp_path / "t.jsonl")
    for at in (1_001_000.0, 1_003_000.0, 1_005_000.0):
        inj.poll(at)
    got = paused_ms(tmp_path / "t.jsonl")
    assert list(got) == ["servers/server-SP"]
    (first, second) = got["servers/server-SP"]
    assert first[1] - first[0] >= 0 and second[1] == float("inf"), "a pause the trial ends in lasts on"
    assert paused_ms(tmp_path / "missing.jsonl") == {}
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [x.get("processes") for x in lines if x["kind"] == "pause"] == [["server-SP"]] * 3
    # A run recorded before the field: the processes are read from the note.
    legacy = tmp_path / "legacy.jsonl"
    legacy.write_text("".join(json.dumps({k: v for k, v in x.items() if k != "processes"}) + "\n" for x in lines))
    assert paused_ms(legacy) == got


def test_a_fault_on_one_server_needs_one_process_per_server(tmp_path):
    host = FakeHost()
    with pytest.raises(ConfigError) as e:
        FaultInjector.targets({"kind": "kill", "server": "VA:0", "at_s": 1}, servers(host))
    assert "per_server" in str(e.value)


def test_unavailability_groups_failures_into_windows_per_datacenter():
    t0 = 1_000_000.0

    def op(t, ok=True, kind="rot"):
        return {"op": kind, "t0": t0 + t * 1000, "t1": t0 + t * 1000 + 500, "ok": ok}
    ops = {"VA": [op(1), op(5, False), op(6, False), op(7.5, False), op(20, False), op(21)],
           "CA": [op(2), op(3), op(2, False, "load")]}
    u = unavailability(ops, t0)
    assert u["failed_ops"] == 4, "loads are not part of the run"
    assert u["windows"] == [{"dc": "VA", "failed_ops": 3, "from_s": 5.0, "to_s": 8.0},
                            {"dc": "VA", "failed_ops": 1, "from_s": 20.0, "to_s": 20.5}]


def test_one_jvm_for_every_server_cannot_take_a_datacenter_fault(tmp_path):
    from k2bench.deploy import LocalDeployment
    from k2bench.deploy.hosts import LocalHost
    from k2bench.trial.servers import server_processes
    dep = LocalDeployment(LocalHost(tmp_path / "k2bench.jar"))
    [slot] = dep.servers(["VA", "CA"], 2, "per_host")
    assert slot.select == ("--all",)
    with pytest.raises(ConfigError) as e:
        FaultInjector.targets({"kind": "pause", "dc": "VA", "at_s": 1, "for_s": 1}, [(slot, FakeProc("servers", None))])
    assert e.value.field == "server.processes" and "per_dc" in str(e.value)
    # auto picks the split: one JVM without kill/pause faults, one per datacenter with them
    assert server_processes(resolve([])) == "per_host"
    assert server_processes(resolve([{"kind": "kill", "dc": "VA", "at_s": 1}])) == "per_dc"
    assert server_processes(resolve([{"kind": "delay", "dcs": ["VA", "CA"], "extra_ms": 5,
                                      "at_s": 1, "for_s": 1}])) == "per_host"
    assert server_processes(resolve([], server={"processes": "per_server"})) == "per_server"
