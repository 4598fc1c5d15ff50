"""Clients inside the server JVM (clients.processes): when the mode applies, and the host
that starts such a client by a file and learns its end from another."""

import signal
import sys

import pytest

from k2bench import experiment
from k2bench.errors import ConfigError, RunFailed
from k2bench.deploy.hosts import InServerHost, LocalHost
from k2bench.trial.servers import client_processes_split

from conftest import SYSTEMS

DURATION = {"duration": {"warmup_s": 1, "measure_s": 1, "cooldown_s": 0}}


def cfg(**clients):
    return experiment.resolve({**DURATION, "clients": clients}, "t", SYSTEMS)


def test_auto_puts_clients_in_the_server_jvm_only_where_one_jvm_hosts_every_server():
    assert client_processes_split(cfg(), True, "per_host") == "in_server"
    assert client_processes_split(cfg(), True, "per_dc") == "own"
    assert client_processes_split(cfg(), False, "per_host") == "own", "clusters keep client JVMs"
    assert client_processes_split(cfg(processes="own"), True, "per_host") == "own"
    assert client_processes_split(cfg(processes="in_server"), True, "per_host") == "in_server"


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
