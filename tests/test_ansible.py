"""Ansible: the inventory conversion (k2bench/ansible_inventory.py) against a golden file and
Ansible's own reading of it, lint and syntax of ansible/, and the netem role run for real on
this machine: its kernel check fails here (no netem), its apply step is idempotent, its
verification pings and judges RTTs."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from k2bench import inventory
from k2bench.ansible_inventory import to_ansible
from k2bench.errors import ConfigError

ANSIBLE = ROOT / "ansible"
FIXTURES = ROOT / "tests" / "fixtures"
# The tools: ansible-core in the main venv, the linters in a tools venv; K2BENCH_* override.
ANSIBLE_PLAYBOOK = Path(os.environ.get("K2BENCH_ANSIBLE_PLAYBOOK", ROOT / ".venv/bin/ansible-playbook"))
ANSIBLE_INVENTORY = ANSIBLE_PLAYBOOK.with_name("ansible-inventory")
ANSIBLE_LINT = Path(os.environ.get("K2BENCH_ANSIBLE_LINT", ROOT / ".venv-lint/bin/ansible-lint"))
YAMLLINT = Path(os.environ.get("K2BENCH_YAMLLINT", ROOT / ".venv-lint/bin/yamllint"))
# The system Python runs modules on localhost: it has python3-apt, and a pyenv shim found
# by interpreter discovery may point at a Python that is not installed.
LOCAL = ["-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=/usr/bin/python3"]


def inv(name):
    return inventory.load(FIXTURES / "inventory" / f"{name}.json")


def run(tool: Path, *args, cwd=ANSIBLE, timeout=300) -> subprocess.CompletedProcess:
    assert tool.exists(), f"{tool} is missing: install ansible-core / ansible-lint / yamllint there"
    env = {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "NO_COLOR": "1", "PATH": f"{tool.parent}:{os.environ['PATH']}"}
    return subprocess.run([str(tool), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def recap(p) -> dict[str, int]:
    m = re.search(r"^localhost\s*:\s*(.*)$", p.stdout, re.M)
    assert m, p.stdout + p.stderr
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}


# ---------------------------------------------------------------- inventory conversion

def dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def test_ec2_inventory_matches_golden():
    assert dump(to_ansible(inv("ec2-6dc"))) == (FIXTURES / "ansible" / "ec2-6dc.inventory.yml").read_text()


def test_ec2_inventory_as_ansible_reads_it(tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(dump(to_ansible(inv("ec2-6dc"))))
    p = run(ANSIBLE_INVENTORY, "-i", path, "--list")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert len(got["_meta"]["hostvars"]) == 24
    assert got["servers"]["hosts"] == [f"{dc}-server-{n}" for dc in ("va", "ca", "sp", "ldn", "tyo", "sg")
                                       for n in (0, 1)]
    assert got["dc_SG"]["hosts"] == ["sg-server-0", "sg-server-1", "sg-client-0", "sg-client-1"]
    v = got["_meta"]["hostvars"]["ldn-client-1"]
    assert v["ansible_host"] == "203.0.113.25" and v["ansible_port"] == 22 and v["ansible_user"] == "ubuntu"
    assert v["ansible_ssh_private_key_file"] == "~/.ssh/k2bench_ed25519"
    assert v["k2bench_private_ip"] == "10.3.1.13" and v["k2bench_dcs"] == ["LDN"] and v["k2bench_roles"] == ["client"]
    assert v["k2bench_latency"] == "real" and v["k2bench_experiment_id"] == "k2b-golden"


def test_test_inventory_three_machines_serve_six_dcs():
    doc = to_ansible(inv("test-3machines"), {"k2bench_home": "/tmp/k2b/home"})
    hosts = doc["all"]["hosts"]
    assert list(hosts) == ["node-0", "node-1", "node-2"]
    n0 = hosts["node-0"]
    assert (n0["ansible_host"], n0["ansible_port"], n0["ansible_user"]) == ("127.0.0.1", 2201, "root")
    assert n0["k2bench_dcs"] == ["VA", "SP", "LDN", "SG"]
    assert n0["k2bench_roles"] == ["server", "client"] and n0["k2bench_server_dcs"] == ["VA", "LDN"]
    assert n0["k2bench_remote_dir"] == "/tmp/k2bench-test/remote"
    groups = {g: list(v["hosts"]) for g, v in doc["all"]["children"].items()}
    assert groups["servers"] == ["node-0", "node-1", "node-2"]
    assert sorted(groups["clients"]) == ["node-0", "node-1", "node-2"]
    assert groups["dc_VA"] == ["node-0", "node-1"] and groups["dc_SG"] == ["node-2", "node-0"]
    assert set(groups) == {"servers", "clients"} | {f"dc_{d}" for d in ("VA", "CA", "SP", "LDN", "TYO", "SG")}
    # Test hosts share this machine's kernel: never tuned. extra_vars are added.
    assert doc["all"]["vars"] == {"k2bench_latency": "embedded", "k2bench_experiment_id": "k2b-test",
                                  "k2bench_manage_kernel": False, "k2bench_home": "/tmp/k2b/home"}


def test_bad_dc_name_for_an_ansible_group():
    doc = json.loads((FIXTURES / "inventory" / "frac-3dc.json").read_text())
    doc["datacenters"]["us-east"] = doc["datacenters"].pop("east")
    with pytest.raises(ConfigError) as e:
        to_ansible(inventory.parse(doc))
    assert e.value.field == "inventory.datacenters.us-east" and "dc_us-east" in e.value.problem


# ---------------------------------------------------------------- lint and syntax

def test_site_syntax(tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(dump(to_ansible(inv("ec2-6dc"))))
    p = run(ANSIBLE_PLAYBOOK, "--syntax-check", "-i", path, "site.yml")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "playbook: site.yml" in p.stdout and "WARNING" not in p.stderr


def test_yamllint_clean():
    p = run(YAMLLINT, "--strict", ".", *sorted((FIXTURES / "ansible").glob("netem-*.yml")))
    assert p.returncode == 0, p.stdout + p.stderr


def test_ansible_lint_clean():
    p = run(ANSIBLE_LINT, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Profile 'production' was required, and it passed" in p.stdout + p.stderr


# ---------------------------------------------------------------- the netem role, on this machine

def test_netem_role_fails_clearly_without_netem():
    # This machine's kernel has no sch_netem : the role must stop at its check.
    p = run(ANSIBLE_PLAYBOOK, *LOCAL, FIXTURES / "ansible" / "netem-role.yml")
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert ("the kernel of localhost has no netem (sch_netem): use latency embedded, or a kernel with netem"
            in out), out
    assert "TASK [netem : Copy the tc script]" not in out  # nothing applied after the check
    assert recap(p)["failed"] == 1


def test_netem_role_does_nothing_unless_latency_is_netem():
    p = run(ANSIBLE_PLAYBOOK, *LOCAL, "-e", "k2bench_latency=embedded", FIXTURES / "ansible" / "netem-role.yml")
    assert p.returncode == 0, p.stdout + p.stderr
    r = recap(p)
    assert r["ok"] == 0 and r["changed"] == 0 and r["skipped"] >= 1


def parts(tmp_path, *names, **extra):
    ev = {"netem_parts": list(names), "k2bench_tc_dir": str(tmp_path / "tc"),
          "k2bench_remote_dir": str(tmp_path / "remote"), "netem_script": str(tmp_path / "host" / "tc.sh"),
          "netem_applied": str(tmp_path / "host" / "applied"), **extra}
    return run(ANSIBLE_PLAYBOOK, *LOCAL, "-e", json.dumps(ev), FIXTURES / "ansible" / "netem-parts.yml")


def test_netem_apply_runs_the_script_only_when_it_changed(tmp_path):
    (tmp_path / "tc").mkdir()
    script = tmp_path / "tc" / "localhost.sh"
    ran = tmp_path / "ran"
    script.write_text(f"#!/bin/sh\necho one >> {ran}\n")
    first = parts(tmp_path, "apply")
    assert first.returncode == 0, first.stdout + first.stderr
    assert recap(first)["changed"] >= 3 and ran.read_text() == "one\n"
    again = parts(tmp_path, "apply")
    assert again.returncode == 0 and recap(again)["changed"] == 0 and ran.read_text() == "one\n"
    script.write_text(f"#!/bin/sh\necho two >> {ran}\n")
    changed = parts(tmp_path, "apply")
    assert changed.returncode == 0 and recap(changed)["changed"] >= 1 and ran.read_text() == "one\ntwo\n"


def test_netem_apply_without_a_script_names_the_dir(tmp_path):
    (tmp_path / "tc").mkdir()
    p = parts(tmp_path, "apply")
    assert p.returncode != 0
    assert f"k2bench_tc_dir: {tmp_path / 'tc'} has no localhost.sh" in p.stdout + p.stderr


def expect(tmp_path, rtt_ms):
    (tmp_path / "tc").mkdir()
    (tmp_path / "tc" / "localhost.expect.json").write_text(json.dumps(
        {"host": "localhost", "dc": "VA", "peers": [{"peer_dc": "CA", "peer_ip": "127.0.0.1", "rtt_ms": rtt_ms}]}))


def test_netem_verify_passes_and_stores_the_measured_row(tmp_path):
    expect(tmp_path, 0)  # loopback: well within max(2 ms, 5%) of 0
    p = parts(tmp_path, "packages", "verify")
    assert p.returncode == 0, p.stdout + p.stderr
    row = json.loads((tmp_path / "remote" / "rtt-measured.json").read_text())
    assert row["host"] == "localhost" and row["dc"] == "VA"
    [peer] = row["peers"]
    assert peer["peer_dc"] == "CA" and peer["expected_rtt_ms"] == 0 and 0 <= peer["measured_rtt_ms"] < 2


def test_netem_verify_fails_when_an_rtt_is_off(tmp_path):
    expect(tmp_path, 100)
    p = parts(tmp_path, "packages", "verify")
    assert p.returncode != 0
    assert re.search(r"localhost -> CA \(127\.0\.0\.1\): measured [0-9.]+ ms, expected 100 ms "
                     r"\(within max\(2 ms, 5\.0%\)\)", p.stdout + p.stderr), p.stdout + p.stderr
    # The measurement is kept even though the check failed.
    assert json.loads((tmp_path / "remote" / "rtt-measured.json").read_text())["peers"][0]["expected_rtt_ms"] == 100
