"""The remote path end to end on this machine (make deploy-test): three test hosts in
network namespaces with their own sshd, ansible/site.yml applied to them, and the smoke
experiment run through the Fabric backend, its results arriving in runs/."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testhosts import TestHosts

ROOT = Path(__file__).resolve().parents[2]

K2BENCH = [sys.executable, "-m", "k2bench.cli"]
DCS = ["VA", "CA", "SP", "LDN", "TYO", "SG"]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    with TestHosts(3, tmp_path_factory.mktemp("hosts")) as h:
        yield h


def deploy(hosts):
    return subprocess.run(K2BENCH + ["deploy", "--inventory", str(hosts.inventory_file),
                                     "--known-hosts", str(hosts.known_hosts),
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


def test_site_yml_prepares_every_test_host_and_is_idempotent(hosts):
    first = deploy(hosts)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    r = recap(first.stdout)
    assert set(r) == set(hosts.names), first.stdout[-2000:]
    assert all(v["failed"] == 0 and v["unreachable"] == 0 for v in r.values()), r
    for name in hosts.names:
        remote = hosts.workdir / "remote" / name
        assert remote.is_dir(), f"the role made {name}'s run directory"
    assert (ROOT / "system/launcher/target/k2bench.jar").read_bytes() == \
        open("/opt/k2bench/k2bench.jar", "rb").read(), "the jar the servers run is this build's"
    again = deploy(hosts)
    assert again.returncode == 0, again.stdout[-4000:]
    assert all(v["changed"] == 0 for v in recap(again.stdout).values()), \
        f"a second apply changes nothing: {recap(again.stdout)}"


def test_smoke_runs_through_the_fabric_backend_into_runs(hosts):
    assert deploy(hosts).returncode == 0
    r = subprocess.run(K2BENCH + ["run", "smoke", "--inventory", str(hosts.inventory_file),
                                  "--known-hosts", str(hosts.known_hosts), "--runs", str(ROOT / "runs")],
                       cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    run = (ROOT / "runs" / "latest").resolve()
    assert run.name.endswith("_smoke")
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "completed"
    assert m["deployment"]["kind"] == "remote" and m["hosts"] == hosts.names
    assert json.loads((run / "inventory.json").read_text())["provider"] == "test"
    assert set(m["measured_rtt_ms"]) == set(DCS), "the measured RTT matrix is stored with the run"
    for system in ("k2", "rad", "paris-star"):
        d = run / system
        s = json.loads((d / "summary.json").read_text())
        assert s["ops"]["rot"]["count"] > 0 and s["errors"] == 0, (system, s["ops"]["rot"])
        # Fetched over SFTP from the machine that ran each process.
        for dc in DCS:
            assert (d / "clients" / f"client-{dc}.hlog").stat().st_size > 0
            assert (d / "servers" / f"stats-server-{dc}.json").exists()
        records = {p.stem: json.loads(p.read_text()) for p in (d / "processes").glob("*.json")}
        assert {rec["host"] for rec in records.values()} == set(hosts.names)
        assert records["server-VA"]["host"] == "k2bh1" and records["server-CA"]["host"] == "k2bh2"
        assert all(rec["exit_code"] in (0, 143) for rec in records.values()), records
    assert hosts.stray_pids() == {}, "no process of the run is left on any test host"
