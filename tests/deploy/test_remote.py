"""The remote path end to end on this machine (make deploy-test): four test hosts in network
namespaces with their own sshd, shaped like the default cloud cluster (two server hosts and
a client host per datacenter), reached as a non-root user with sudo and verified by their
host keys; one of them answers SSH slowly. ansible/site.yml is applied to them, the smoke
experiment runs through the Fabric backend into runs/, and the harness's own faults are
shown: a host that stops answering mid-run and a start file that arrives late. Files reach
a host whole over SFTP, and its lease stays fresh behind a long command on it."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testhosts import USER, TestHosts

ROOT = Path(__file__).resolve().parents[2]

K2BENCH = [sys.executable, "-m", "k2bench.cli"]
DCS = ["VA", "CA", "SP", "LDN", "TYO", "SG"]
FAULTS = Path(__file__).resolve().parent / "remote-faults.yaml"
SLOW = "k2bh4"  # SSH reaches it through a proxy that holds its banner back
SLOW_S = 3.0
LEASE_S = 20  # short for the test; the default is 60 s


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    with TestHosts(4, tmp_path_factory.mktemp("hosts"), slow={SLOW: SLOW_S}) as h:
        yield h


def deploy(hosts, *extra):
    return subprocess.run(K2BENCH + ["deploy", "--inventory", str(hosts.inventory_file),
                                     "--known-hosts", str(hosts.known_hosts), *extra,
                                     # the test hosts share this machine's kernel: leave it alone
                                     "--extra-var", "k2bench_manage_kernel=false",
                                     # this machine's pyenv shims shadow the system Python
                                     "--extra-var", "ansible_python_interpreter=/usr/bin/python3",
                                     "--workdir", str(hosts.workdir / "deploy")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def recap(output: str) -> dict[str, dict[str, int]]:
    """Ansible's PLAY RECAP: host -> {ok, changed, unreachable, failed, ...}."""
    out = {}
    for line in output.splitlines():
        m = re.match(r"^(\S+)\s+:\s+(.*)$", line)
        if m and "ok=" in m.group(2):
            out[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return out


@pytest.fixture(scope="module")
def deployed(hosts):
    first = deploy(hosts, "--experiment", "smoke")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    return first


def test_the_cluster_is_shaped_like_the_default_one(hosts):
    inv = json.loads(hosts.inventory_file.read_text())
    assert inv["ssh"]["user"] == USER != "root" and inv["ssh"]["known_hosts"] == "known_hosts"
    for dc, d in inv["datacenters"].items():
        servers = [h["name"] for h in d["hosts"] if h["role"] == "server"]
        clients = [h["name"] for h in d["hosts"] if h["role"] == "client"]
        assert len(set(servers)) == 2 and len(clients) == 1 and clients[0] not in servers, dc
    # the user has sudo without a password, as on a cloud image
    r = subprocess.run(["sudo", "-u", USER, "sudo", "-n", "true"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_shape_mismatch_stops_deploy_and_run_with_one_line_before_anything(hosts):
    r = deploy(hosts, "--experiment", "smoke", "--servers-per-dc", "3")
    assert r.returncode == 2 and "PLAY" not in r.stdout, "Ansible never ran"
    assert r.stderr.strip() == (
        f"k2bench: servers_per_dc: experiment smoke has 3 servers per datacenter, inventory {hosts.inventory_file} "
        "has 2 server hosts in VA: run with SERVERS_PER_DC=2 (or --servers-per-dc 2), or recreate the cluster with "
        "TF_VAR_servers_per_dc=3")
    r = subprocess.run(K2BENCH + ["run", "smoke", "--inventory", str(hosts.inventory_file), "--servers-per-dc", "4",
                                  "--runs", str(hosts.workdir / "runs-shape")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "experiment smoke has 4 servers per datacenter" in r.stderr
    assert not (hosts.workdir / "runs-shape").exists(), "no run directory: nothing started"


def test_site_yml_prepares_every_test_host_and_is_idempotent(hosts, deployed):
    r = recap(deployed.stdout)
    assert set(r) == set(hosts.names), deployed.stdout[-2000:]
    assert all(v["failed"] == 0 and v["unreachable"] == 0 for v in r.values()), r
    for name in hosts.names:
        remote = hosts.remote_dir(name)
        assert remote.is_dir(), f"the role made {name}'s run directory"
        assert remote.stat().st_uid != 0, "owned by the SSH user, who runs the processes"
    assert (ROOT / "system/launcher/target/k2bench.jar").read_bytes() == \
        open("/opt/k2bench/k2bench.jar", "rb").read(), "the jar the servers run is this build's"
    again = deploy(hosts, "--experiment", "smoke")
    assert again.returncode == 0, again.stdout[-4000:]
    assert all(v["changed"] == 0 for v in recap(again.stdout).values()), \
        f"a second apply changes nothing: {recap(again.stdout)}"


def test_a_long_command_on_a_host_lets_neither_its_files_nor_its_lease_wait(hosts, deployed, tmp_path):
    """A file goes to a host whole over SFTP (a command's stdin took it at 100 bytes a
    second), and the lease is touched beside a long command on the same host: its
    processes live on under a lease far shorter than the command."""
    from k2bench.deploy.ssh import LeaseKeeper, SshHost

    m = hosts.machine(0)
    h = SshHost(m["name"], m.get("ssh_host", m["public_ip"]), m["ssh_port"], USER, str(hosts.key), m["remote_dir"],
                known_hosts=str(hosts.known_hosts), command_timeout=30, lease_s=4)
    run = tmp_path / "20261126T000000Z_lease"
    p = None
    try:
        h.bind_run(run)
        text = "".join(f"k2bench.line{i}={'x' * 90}\n" for i in range(3000))  # 300 KB
        h.put_text("a/b/c.properties", text)
        assert (hosts.remote_dir(m["name"]) / "runs" / run.name / "a/b/c.properties").read_text() == text
        assert h.read_text("a/b/c.properties") == text
        p = h.start("sleeper", ["sleep", "120"], "logs/sleeper.out", "logs/sleeper.err")
        with LeaseKeeper([h], 1.0):
            h._run("sleep 12", "a long command")  # three times the lease, holding the host's command lock
            assert h.poll(p) is None, "the lease lapsed behind the long command"
    finally:
        if p is not None:
            h.stop(p)
        h.close()
    logs = hosts.remote_dir(m["name"]) / "runs" / run.name / "logs"
    assert p.returncode == 143 and not (logs / "sleeper.out.lease-expired").exists(), "stopped by the test alone"


def test_smoke_runs_through_the_fabric_backend_into_runs(hosts, deployed):
    began = time.time()
    # strict host keys from the inventory's ssh.known_hosts (no --known-hosts here)
    r = subprocess.run(K2BENCH + ["run", "smoke", "--inventory", str(hosts.inventory_file), "--runs", str(ROOT / "runs")],
                       cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    run = (ROOT / "runs" / "latest").resolve()
    assert run.name.endswith("_smoke")
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "completed"
    assert m["deployment"]["kind"] == "remote" and m["hosts"] == hosts.names
    assert m["deployment"]["known_hosts"] == str(hosts.known_hosts)
    assert json.loads((run / "inventory.json").read_text())["provider"] == "test"
    assert set(m["measured_rtt_ms"]) == set(DCS), "the measured RTT matrix is stored with the run"
    assert len(m["rtt_check"]) == 30 and m["rtt_check"]["VA->CA"]["configured_ms"] == 60
    assert all(abs(c["measured_ms"] - c["configured_ms"]) < 15 for c in m["rtt_check"].values()), m["rtt_check"]
    inv = json.loads(hosts.inventory_file.read_text())
    for system in ("k2", "rad", "paris-star"):
        d = run / system
        s = json.loads((d / "summary.json").read_text())
        assert s["ops"]["rot"]["count"] > 0 and s["errors"] == 0, (system, s["ops"]["rot"])
        # every client's first operation, and its skew from the common start, under the bound
        start = s["start"]
        assert set(start["clients"]) == {f"client-{dc}" for dc in DCS}
        assert all(c["first_op_ms"] and abs(c["skew_s"]) <= 1.0 + c["pacing_spread_s"]
                   for c in start["clients"].values()), start
        assert start["lead_s"] >= 1.0 and not start["written_late"]
        # Fetched over SFTP from the machine that ran each process.
        for dc in DCS:
            assert (d / "clients" / f"client-{dc}.hlog").stat().st_size > 0
            for i in range(2):
                assert (d / "servers" / f"stats-server-{dc}-{i}.json").exists()
        records = {p.stem: json.loads(p.read_text()) for p in (d / "processes").glob("*.json")}
        assert {rec["host"] for rec in records.values()} == set(hosts.names), "the slow host took part too"
        for dc in DCS:
            placed = [h["name"] for h in inv["datacenters"][dc]["hosts"]]
            assert [records[f"server-{dc}-0"]["host"], records[f"server-{dc}-1"]["host"],
                    records[f"client-{dc}"]["host"]] == placed, "one server per server host"
        assert all(rec["exit_code"] in (0, 143) for rec in records.values()), records
    assert hosts.stray_pids() == {}, "no process of the run is left on any test host"
    print(f"smoke through Fabric: {time.time() - began:.0f} s")


def _wait_for(pred, timeout_s, what):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if (v := pred()):
            return v
        time.sleep(0.5)
    raise AssertionError(f"{what} within {timeout_s} s")


def _run_faults(hosts, runs: Path, env=None) -> subprocess.Popen:
    return subprocess.Popen(K2BENCH + ["run", str(FAULTS), "--inventory", str(hosts.inventory_file),
                                       "--runs", str(runs), "--lease-s", str(LEASE_S), "--ssh-timeout", "15"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))


def test_a_late_start_file_fails_the_trial_with_the_skew(hosts, deployed, tmp_path):
    late = "k2bh2"
    p = _run_faults(hosts, tmp_path, {"K2BENCH_TESTING_START_FILE_DELAY": f"{late}=4"})
    out, err = p.communicate(timeout=600)
    assert p.returncode == 1, out[-3000:] + err[-3000:]
    m = json.loads(((tmp_path / "latest").resolve() / "manifest.json").read_text())
    assert m["status"] == "failed" and "\n" not in m["reason"]
    assert re.match(rf"start skew: client-\w+ on {late} issued (its first operation \+\d\.\d\d s|no operation)",
                    m["reason"]), m["reason"]
    start = json.loads(((tmp_path / "latest").resolve() / "k2" / "start.json").read_text())
    on_time = [c for c in start["clients"].values() if c["host"] != late]
    assert on_time and all(abs(c["skew_s"]) < 1.0 + c["pacing_spread_s"] for c in on_time), start
    _wait_for(lambda: hosts.stray_pids() == {}, 30, "no process left after the failed trial")


def test_a_host_that_stops_answering_fails_the_run_cleanly(hosts, deployed, tmp_path):
    dead = "k2bh3"
    p = _run_faults(hosts, tmp_path)
    try:
        run = _wait_for(lambda: (tmp_path / "latest").exists() and (tmp_path / "latest").resolve(), 120, "a run dir")
        # the clients are running: the start skew was checked (start.json) a few seconds after the start
        _wait_for(lambda: (run / "k2" / "start.json").exists(), 400, "the clients start")
        time.sleep(3)
        assert p.poll() is None, "the run was still going when the host went away"
        hosts.link(dead, up=False)
        cut = time.time()
        out, err = p.communicate(timeout=300)
        took = time.time() - cut
        assert p.returncode == 1, out[-3000:] + err[-3000:]
        m = json.loads((run / "manifest.json").read_text())
        assert m["status"] == "failed" and "\n" not in m["reason"]
        assert m["reason"].startswith(f"{dead}: ") and "does not answer" in m["reason"], m["reason"]
        assert took < 120, f"failed {took:.0f} s after the host went away: bounded by the SSH timeouts"
        # the other hosts' logs were fetched; the dead one is noted
        assert [f["host"] for f in m["fetch_failures"]] == [dead], m.get("fetch_failures")
        assert dead in m["unreachable_hosts"]
        records = {q.stem: json.loads(q.read_text()) for q in (run / "k2" / "processes").glob("*.json")}
        elsewhere = [n for n, rec in records.items() if rec["host"] != dead]
        assert elsewhere and all((run / "k2" / "logs" / f"{n}.out").exists() for n in elsewhere), elsewhere
        assert all(records[n]["exit_code"] is not None for n in elsewhere), "stopped by the orchestrator"
        # the dead host's processes stop on their own once their lease is stale, though
        # nothing can reach them: their watchdogs leave a note (the hosts share this disk)
        _wait_for(lambda: hosts.stray_pids() == {}, LEASE_S + 30, "the lease stops every process")
        on_dead = [n for n, rec in records.items() if rec["host"] == dead and rec["exit_code"] is None]
        logs = hosts.remote_dir(dead) / "runs" / run.name / "k2" / "logs"
        assert on_dead and all((logs / f"{n}.out.lease-expired").exists() for n in on_dead), \
            (on_dead, sorted(q.name for q in logs.iterdir()))
        print(f"the run failed {took:.0f} s after the cut; the lease cleared {dead} {time.time() - cut:.0f} s after it")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        hosts.link(dead, up=True)
