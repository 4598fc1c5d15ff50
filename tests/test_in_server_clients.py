"""Clients inside the server JVM (clients.processes): when the mode applies, and the host
that starts such a client by a file and learns its end from another."""

import signal
import sys

import pytest

from k2bench import experiment
from k2bench.errors import ConfigError, RunFailed
from k2bench.deploy.hosts import InServerHost, LocalHost
from k2bench.trial.servers import client_processes_split, own_client_dcs

from conftest import SYSTEMS

DURATION = {"duration": {"warmup_s": 1, "measure_s": 1, "cooldown_s": 0}}


def cfg(**clients):
    return experiment.resolve({**DURATION, "clients": clients}, "t", SYSTEMS)


def test_auto_puts_clients_in_the_server_jvm_of_their_machine_or_datacenter():
    assert client_processes_split(cfg(), True, "per_host") == "in_server"
    assert client_processes_split(cfg(), True, "per_dc") == "in_server", "each in its datacenter's JVM"
    assert client_processes_split(cfg(), True, "per_server") == "own"
    assert client_processes_split(cfg(), False, "per_host") == "own", "clusters keep client JVMs"
    assert client_processes_split(cfg(processes="own"), True, "per_host") == "own"
    assert client_processes_split(cfg(processes="in_server"), True, "per_host") == "in_server"


def test_the_clients_of_a_killed_or_paused_datacenter_keep_jvms_of_their_own():
    dcs = ["VA", "CA", "SP", "LDN", "TYO", "SG"]
    faults = [{"kind": "kill", "dc": "TYO", "at_s": 1, "clients": "redirect"},
              {"kind": "pause", "server": "SG:0", "at_s": 1, "for_s": 1},
              {"kind": "partition", "dcs": ["VA", "CA"], "at_s": 1, "for_s": 1},
              {"kind": "delay", "dcs": ["SP", "LDN"], "extra_ms": 5, "at_s": 1, "for_s": 1}]
    c = experiment.resolve({**DURATION, "faults": faults}, "t", SYSTEMS)
    assert own_client_dcs(c, "in_server", dcs) == ["TYO", "SG"], "they outlive their servers"
    assert own_client_dcs(c, "own", dcs) == dcs
    assert own_client_dcs(cfg(), "in_server", dcs) == []


def test_in_server_without_one_server_jvm_names_the_field_and_the_way_out():
    for local, split in ((True, "per_dc"), (True, "per_server"), (False, "per_host")):
        with pytest.raises(ConfigError) as e:
            client_processes_split(cfg(processes="in_server"), local, split)
        assert e.value.field == "clients.processes"
        assert "use own or auto" in str(e.value) and "\n" not in str(e.value)


def test_an_unknown_mode_is_a_config_error():
    with pytest.raises(ConfigError) as e:
        cfg(processes="threads")
    assert e.value.field == "clients.processes" and "auto, own or in_server" in str(e.value)


@pytest.fixture
def server(tmp_path):
    host = LocalHost(tmp_path / "k2bench.jar")
    host.bind_run(tmp_path)
    proc = host.start("servers", [sys.executable, "-c", "import time; time.sleep(60)"], "s.out", "s.err")
    yield host, proc
    host.stop(proc, grace_s=1)


def test_a_client_starts_by_its_arguments_file_and_ends_by_its_exit_file(server, tmp_path):
    host, srv = server
    h = InServerHost(host, srv, "clients/in-server")
    p = h.start("client-VA", ["-t", "-P", "a b.properties", "-threads", "4"], "ignored.out", "ignored.err")
    assert (tmp_path / "clients/in-server/client-VA.args").read_text().splitlines() == \
        ["-t", "-P", "a b.properties", "-threads", "4"], "one argument per line, spaces kept"
    assert p.pid == srv.pid, "its CPU and its life are the server JVM's"
    assert p.stdout == "clients/in-server/client-VA.stdout"
    assert h.poll(p) is None, "running while no exit code is written and the JVM lives"
    (tmp_path / "clients/in-server/client-VA.exit").write_text("3\n")
    assert h.poll(p) == 3 and p.returncode == 3 and p.stopped is not None
    assert h.stop(p) == 3


def test_a_client_ends_with_its_server_jvm(server, tmp_path):
    host, srv = server
    h = InServerHost(host, srv, "clients/in-server")
    p = h.start("client-CA", ["-t"], "o", "e")
    host.stop(srv, grace_s=1)
    assert h.poll(p) == -signal.SIGTERM and p.stopped is not None
    with pytest.raises(RunFailed) as e:
        h.signal(p, signal.SIGSTOP)
    assert "inside the server JVM" in str(e.value)


def test_validate_refuses_what_the_trial_would_refuse_when_it_starts_its_servers(jar, tmp_path, capsys):
    """`validate` passed clients.processes: in_server with server.processes: per_dc, and a
    kill of one server in a per_dc run, which the trial refused only once the run directory
    existed (the kill once the server JVMs ran)."""
    from k2bench import cli
    from k2bench.deploy import LocalDeployment
    from k2bench.env import Env
    from k2bench.spec.validate import validate

    from conftest import ROOT
    env = Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))

    def refused(doc) -> ConfigError:
        with pytest.raises(ConfigError) as e:
            validate(env, experiment.resolve({"systems": ["k2", "rad"], **DURATION, **doc}, "t", SYSTEMS))
        return e.value

    e = refused({"server": {"processes": "per_dc"}, "clients": {"processes": "in_server"}})
    assert e.field == "clients.processes" and "not per_dc; use own or auto" in e.problem
    e = refused({"per_system": {"rad": {"clients": {"processes": "in_server"}, "server": {"processes": "per_server"}}}})
    assert e.field == "per_system.rad.clients.processes"
    e = refused({"server": {"processes": "per_dc"}, "faults": [{"kind": "pause", "dc": "VA", "at_s": 0, "for_s": 1},
                                                               {"kind": "kill", "server": "CA:1", "at_s": 1}]})
    assert e.field == "faults[1].server" and "set server.processes: per_server" in e.problem
    e = refused({"server": {"processes": "per_host"}, "faults": [{"kind": "kill", "dc": "VA", "at_s": 1}]})
    assert e.field == "server.processes" and "set per_dc, per_server or auto" in e.problem
    validate(env, experiment.resolve({"systems": ["k2"], **DURATION, "clients": {"processes": "in_server"}},
                                     "t", SYSTEMS))  # auto is per_host without faults: clients fit in it
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\nserver: {processes: per_dc}\nclients: {processes: in_server}\n")
    assert cli.main(["--jar", str(jar), "validate", str(mine)]) == 2
    assert capsys.readouterr().err == (
        f"k2bench: {mine}: clients.processes: in_server needs a local run with one server JVM (server.processes: "
        "per_host or auto without kill/pause faults), not per_dc; use own or auto\n")
