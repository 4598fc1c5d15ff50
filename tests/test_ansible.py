"""Ansible: the inventory conversion (k2bench/deploy/ansible.py) against a golden file and
Ansible's own reading of it, how `k2bench deploy` calls ansible-playbook (forks, strict host
keys), lint and syntax of ansible/, SSH and apt settings, and roles run for real on this
machine: the readiness wait against a stand-in cloud-init, the jar shipped between local
"machines" of one group with its checksum checked, and the netem role: its kernel check
fails here (no netem), its apply step is idempotent, its verification pings and judges RTTs
and records them on the controller, its reset removes and forgets."""
import configparser
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from k2bench.deploy import inventory
from k2bench import cli
from k2bench.deploy.ansible import MAX_FORKS, forks, known_hosts, playbook_argv, to_ansible
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
    playbooks = sorted({*(FIXTURES / "ansible").glob("netem-*.yml"), *(FIXTURES / "ansible").glob("*-role.yml")})
    assert len(playbooks) == 4
    p = run(YAMLLINT, "--strict", ".", *playbooks)
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


def verified(tmp_path_factory, rtt_ms, **extra):
    """One verify run, whose output two tests read (each a playbook run of ~7 CPU s)."""
    d = tmp_path_factory.mktemp(f"verify-{rtt_ms}")
    expect(d, rtt_ms)
    return d, parts(d, "packages", "verify", **extra)


@pytest.fixture(scope="module")
def verified_within(tmp_path_factory):
    return verified(tmp_path_factory, 0, k2bench_experiment_id="k2b-x")  # loopback: within max(2 ms, 5%) of 0


@pytest.fixture(scope="module")
def verified_off(tmp_path_factory):
    return verified(tmp_path_factory, 100)


def test_netem_verify_passes_and_stores_the_measured_row(verified_within):
    d, p = verified_within
    assert p.returncode == 0, p.stdout + p.stderr
    row = json.loads((d / "remote" / "rtt-measured.json").read_text())
    assert row["host"] == "localhost" and row["dc"] == "VA"
    [peer] = row["peers"]
    assert peer["peer_dc"] == "CA" and peer["expected_rtt_ms"] == 0 and 0 <= peer["measured_rtt_ms"] < 2


def test_netem_verify_fails_when_an_rtt_is_off(verified_off):
    d, p = verified_off
    assert p.returncode != 0
    assert re.search(r"localhost -> CA \(127\.0\.0\.1\): measured [0-9.]+ ms, expected 100 ms "
                     r"\(within max\(2 ms, 5\.0%\)\)", p.stdout + p.stderr), p.stdout + p.stderr
    # The measurement is kept even though the check failed.
    assert json.loads((d / "remote" / "rtt-measured.json").read_text())["peers"][0]["expected_rtt_ms"] == 100


def test_verify_stores_every_pair_on_the_controller(verified_within):
    d, p = verified_within
    assert p.returncode == 0, p.stdout + p.stderr
    v = json.loads((d / "tc" / "verify.json").read_text())
    assert v["schema"] == "k2bench-tc-verify/1" and v["experiment_id"] == "k2b-x" and v["ok"] is True
    assert v["tolerance"] == {"ms": 2, "fraction": 0.05} and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
                                                                          v["measured_at"])
    [pair] = v["pairs"]
    assert {k: pair[k] for k in ("host", "dc", "peer_dc", "peer_ip", "configured_rtt_ms", "ok")} == {
        "host": "localhost", "dc": "VA", "peer_dc": "CA", "peer_ip": "127.0.0.1", "configured_rtt_ms": 0, "ok": True}
    assert 0 <= pair["measured_rtt_ms"] < 2


def test_verify_stores_the_failing_pair_on_the_controller_too(verified_off):
    d, p = verified_off
    assert p.returncode != 0
    v = json.loads((d / "tc" / "verify.json").read_text())
    assert v["ok"] is False and v["pairs"][0]["configured_rtt_ms"] == 100 and v["pairs"][0]["ok"] is False


# ---------------------------------------------------------------- netem reset

def test_netem_reset_removes_once_and_forgets_the_applied_script(tmp_path):
    (tmp_path / "tc").mkdir()
    (tmp_path / "host").mkdir()
    marker = tmp_path / "qdiscs"
    marker.write_text("k2bench's\n")
    # A stand-in for the generated reset script: removes the "qdiscs" once.
    (tmp_path / "tc" / "localhost.reset.sh").write_text(
        f"#!/bin/sh\nif [ -e {marker} ]; then rm {marker}; echo 'k2bench tc: removed from lo'; "
        "else echo 'k2bench tc: nothing to remove on lo'; fi\n")
    applied = tmp_path / "host" / "applied"
    applied.write_text("abc\n")
    first = parts(tmp_path, "reset")
    assert first.returncode == 0, first.stdout + first.stderr
    assert recap(first)["changed"] == 2 and not marker.exists() and not applied.exists()
    again = parts(tmp_path, "reset")
    assert again.returncode == 0 and recap(again)["changed"] == 0, again.stdout


def test_netem_reset_without_a_script_names_the_dir(tmp_path):
    (tmp_path / "tc").mkdir()
    p = parts(tmp_path, "reset")
    assert p.returncode != 0
    assert f"k2bench_tc_dir: {tmp_path / 'tc'} has no localhost.reset.sh" in p.stdout + p.stderr


def test_netem_reset_playbook_syntax(tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(dump(to_ansible(inv("emulab-6dc"))))
    p = run(ANSIBLE_PLAYBOOK, "--syntax-check", "-i", path, "netem-reset.yml")
    assert p.returncode == 0, p.stdout + p.stderr


# ---------------------------------------------------------------- how k2bench deploy calls Ansible

def cluster(n_per_dc: int) -> inventory.Inventory:
    doc = json.loads((FIXTURES / "inventory" / "ec2-6dc.json").read_text())
    for d, (dc, spec) in enumerate(doc["datacenters"].items()):
        proto = spec["hosts"][0]
        spec["hosts"] = [{**proto, "name": f"{dc.lower()}-{i}", "role": "server" if i == 0 else "client",
                          "public_ip": f"198.51.{d}.{i + 1}", "private_ip": f"10.{d}.2.{i + 1}"}
                         for i in range(n_per_dc)]
    return inventory.parse(doc)


def test_forks_one_per_machine_up_to_the_bound():
    assert forks(inv("ec2-6dc")) == 24
    assert forks(inv("test-3machines")) == 3  # three machines, six datacenters
    assert forks(cluster(12)) == MAX_FORKS == 50  # 72 machines
    assert forks(cluster(2)) == 12


def test_playbook_argv_golden(tmp_path):
    argv = playbook_argv(inv("ec2-6dc"), "/w/hosts.yml", "/r/ansible/site.yml", "/w/known_hosts",
                         "/v/bin/ansible-playbook")
    assert argv == ["/v/bin/ansible-playbook", "-i", "/w/hosts.yml", "--forks", "24", "--ssh-common-args",
                    "-o UserKnownHostsFile=/w/known_hosts -o GlobalKnownHostsFile=/dev/null "
                    "-o StrictHostKeyChecking=yes", "/r/ansible/site.yml"]


def test_playbook_argv_quotes_a_known_hosts_path_with_spaces():
    argv = playbook_argv(inv("ec2-6dc"), "h.yml", "site.yml", "/My Cluster/known_hosts")
    ssh_args = argv[argv.index("--ssh-common-args") + 1]
    # Ansible splits the string like a shell; ssh then reads the quoted value as one path.
    assert shlex_split(ssh_args)[:2] == ["-o", 'UserKnownHostsFile="/My Cluster/known_hosts"']


def shlex_split(s):
    import shlex
    return shlex.split(s)


def inventory_with_known_hosts(tmp_path, known_hosts_field="known_hosts", write=True):
    d = tmp_path / "cluster"
    d.mkdir(exist_ok=True)
    doc = json.loads((FIXTURES / "inventory" / "test-3machines.json").read_text())
    if known_hosts_field is not None:
        doc["ssh"]["known_hosts"] = known_hosts_field
    (d / "inventory.json").write_text(json.dumps(doc))
    if write:
        (d / "known_hosts").write_text("127.0.0.1 ssh-ed25519 AAAA\n")
    return d / "inventory.json"


def test_known_hosts_resolves_against_the_inventory_and_the_flag_overrides(tmp_path):
    path = inventory_with_known_hosts(tmp_path)
    i = inventory.load(path)
    assert known_hosts(i, path) == (tmp_path / "cluster" / "known_hosts").resolve()
    other = tmp_path / "mine"
    other.write_text("")
    assert known_hosts(i, path, str(other)) == other.resolve()
    with pytest.raises(ConfigError) as e:
        known_hosts(i, path, str(tmp_path / "absent"))
    assert e.value.field == "--known-hosts" and "does not exist" in e.value.problem


def test_known_hosts_is_required(tmp_path):
    path = inventory_with_known_hosts(tmp_path, None)
    with pytest.raises(ConfigError) as e:
        known_hosts(inventory.load(path), path)
    assert e.value.field == "ssh.known_hosts" and "pass --known-hosts FILE" in e.value.problem
    path = inventory_with_known_hosts(tmp_path, "known_hosts", write=False)
    (tmp_path / "cluster" / "known_hosts").unlink(missing_ok=True)
    with pytest.raises(ConfigError) as e:
        known_hosts(inventory.load(path), path)
    assert e.value.field == "ssh.known_hosts" and "does not exist" in e.value.problem


def captured_ansible(monkeypatch):
    calls = []

    def fake_run(cmd, env=None, **kw):
        calls.append((cmd, env))
        return subprocess.CompletedProcess(cmd, 0)
    monkeypatch.setattr(subprocess, "run", fake_run)
    return calls


@pytest.mark.parametrize("command,playbook", [("deploy", "site.yml"), ("netem-reset", "netem-reset.yml")])
def test_cli_runs_ansible_with_forks_and_strict_host_keys(tmp_path, monkeypatch, command, playbook):
    path = inventory_with_known_hosts(tmp_path)
    jar = tmp_path / "k2bench.jar"
    jar.write_bytes(b"jar")
    calls = captured_ansible(monkeypatch)
    work = tmp_path / "work"
    assert cli.main(["--jar", str(jar), command, "--inventory", str(path), "--workdir", str(work)]) == 0
    [(cmd, env)] = calls
    assert cmd == [str(Path(sys.executable).parent / "ansible-playbook"), "-i",
                   str(work / ("hosts.yml" if command == "deploy" else "hosts-reset.yml")), "--forks", "3",
                   "--ssh-common-args", f"-o UserKnownHostsFile={(tmp_path / 'cluster' / 'known_hosts').resolve()} "
                   "-o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes", str(ROOT / "ansible" / playbook)]
    assert env["ANSIBLE_CONFIG"] == str(ROOT / "ansible" / "ansible.cfg")
    if command == "netem-reset":
        assert sorted(p.name for p in (work / "tc").iterdir()) == [f"node-{i}.reset.sh" for i in range(3)]


def test_cli_stops_without_known_hosts_before_ansible(tmp_path, monkeypatch, capsys):
    path = inventory_with_known_hosts(tmp_path, None)
    jar = tmp_path / "k2bench.jar"
    jar.write_bytes(b"jar")
    calls = captured_ansible(monkeypatch)
    assert cli.main(["--jar", str(jar), "deploy", "--inventory", str(path), "--workdir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert calls == [] and len(err.strip().splitlines()) == 1 and err.startswith("k2bench: ssh.known_hosts: ")


def test_cli_deploy_of_a_netem_inventory_needs_a_matrix(tmp_path, monkeypatch, capsys):
    doc = json.loads((FIXTURES / "inventory" / "emulab-6dc.json").read_text())
    doc["ssh"]["known_hosts"] = "known_hosts"
    (tmp_path / "inventory.json").write_text(json.dumps(doc))
    (tmp_path / "known_hosts").write_text("")
    jar = tmp_path / "k2bench.jar"
    jar.write_bytes(b"jar")
    calls = captured_ansible(monkeypatch)
    argv = ["--jar", str(jar), "deploy", "--inventory", str(tmp_path / "inventory.json"),
            "--workdir", str(tmp_path / "w")]
    assert cli.main(argv) == 2
    assert calls == [] and capsys.readouterr().err.startswith("k2bench: --experiment: the inventory's latency is netem")
    (tmp_path / "w" / "tc").mkdir(parents=True)
    (tmp_path / "w" / "tc" / "verify.json").write_text("{}")  # an earlier deploy's
    assert cli.main(argv + ["--topology", str(ROOT / "workloads" / "topologies" / "paper-local.yaml")]) == 0
    assert len(calls) == 1 and (tmp_path / "w" / "tc" / "va-server.sh").exists()
    assert not (tmp_path / "w" / "tc" / "verify.json").exists()


# ---------------------------------------------------------------- SSH and apt settings

def test_ansible_reads_the_ssh_retries_and_timeouts():
    p = run(ANSIBLE_PLAYBOOK.with_name("ansible-config"), "dump", "--only-changed", "-t", "all")
    assert p.returncode == 0, p.stderr
    ssh = p.stdout.split("\nssh:\n", 1)[1]
    retries = int(re.search(r"^reconnection_retries\(.*\) = (\d+)$", ssh, re.M).group(1))
    args = re.search(r"^ssh_args\(.*\) = (.*)$", ssh, re.M).group(1)
    assert retries >= 3
    opts = dict(o.split("=", 1) for o in re.findall(r"-o (\S+)", args))
    assert int(opts["ConnectTimeout"]) <= 60
    assert int(opts["ServerAliveInterval"]) * int(opts["ServerAliveCountMax"]) <= 120  # a dead link found in 2 min
    assert opts["ControlMaster"] == "auto"  # Ansible's own defaults are kept
    cfg = configparser.ConfigParser()
    cfg.read(ANSIBLE / "ansible.cfg")
    assert cfg["ssh_connection"].getboolean("pipelining")


def tasks_of(node):
    """Every task mapping in a parsed task file, blocks included."""
    if isinstance(node, list):
        for n in node:
            yield from tasks_of(n)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            if key in node:
                yield from tasks_of(node[key])


def test_every_apt_task_waits_for_the_lock():
    apt = []
    for path in sorted(ANSIBLE.rglob("*.yml")):
        for task in tasks_of(yaml.safe_load(path.read_text())):
            for key in ("ansible.builtin.apt", "apt"):
                if key in task:
                    apt.append((path.relative_to(ANSIBLE), task[key]))
    assert len(apt) >= 3
    for path, args in apt:
        assert args.get("lock_timeout") == "{{ k2bench_apt_lock_timeout_s }}", path
    for role in ("common", "netem"):
        assert yaml.safe_load((ANSIBLE / "roles" / role / "defaults" / "main.yml").read_text())[
            "k2bench_apt_lock_timeout_s"] >= 300


def test_site_waits_for_readiness_first():
    plays = yaml.safe_load((ANSIBLE / "site.yml").read_text())
    assert plays[0]["roles"] == ["ready"] and plays[0]["hosts"] == "all" and plays[0]["gather_facts"] is False
    ready = yaml.safe_load((ANSIBLE / "roles" / "ready" / "tasks" / "main.yml").read_text())
    assert "ansible.builtin.wait_for_connection" in ready[0]


# ---------------------------------------------------------------- readiness (the ready role)

def fake_cloud_init(tmp_path, body):
    path = tmp_path / "cloud-init"
    path.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'calls'}\n{body}\n")
    path.chmod(0o755)
    return path


def ready(tmp_path, cloud_init, **extra):
    ev = {"ready_cloud_init": str(cloud_init), **extra}
    return run(ANSIBLE_PLAYBOOK, *LOCAL, "-e", json.dumps(ev), FIXTURES / "ansible" / "ready-role.yml")


@pytest.mark.parametrize("rc", [0, 2])
def test_ready_waits_for_cloud_init(tmp_path, rc):
    p = ready(tmp_path, fake_cloud_init(tmp_path, f"echo 'status: done'; exit {rc}"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "calls").read_text() == "status --wait\n"
    assert recap(p)["changed"] == 0


def test_ready_skips_cloud_init_where_there_is_none(tmp_path):
    p = ready(tmp_path, tmp_path / "no-cloud-init")
    assert p.returncode == 0, p.stdout + p.stderr
    assert recap(p)["skipped"] == 2 and not (tmp_path / "calls").exists()


def test_ready_fails_when_cloud_init_failed(tmp_path):
    p = ready(tmp_path, fake_cloud_init(tmp_path, "echo 'status: error'; exit 1"))
    assert p.returncode != 0
    assert ("localhost: cloud-init failed (exit 1): status: error; see `cloud-init status --long` on the machine"
            in p.stdout), p.stdout


def test_ready_gives_up_on_cloud_init_after_its_timeout(tmp_path):
    start = time.monotonic()
    p = ready(tmp_path, fake_cloud_init(tmp_path, "sleep 30"), ready_cloud_init_timeout_s=1)
    assert p.returncode != 0 and time.monotonic() - start < 25
    assert "localhost: cloud-init did not finish within 1 s" in p.stdout, p.stdout


# ---------------------------------------------------------------- the jar, once per group

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jar_inventory(tmp_path, homes: dict, port: int, **host_vars) -> Path:
    """Local "machines" (connection local) in one jar group, each with its own home."""
    hosts = {name: {"k2bench_home": str(home), "k2bench_remote_dir": str(tmp_path / "remote" / name),
                    **host_vars.get(name, {})} for name, home in homes.items()}
    doc = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3",
                            "k2bench_jar": str(tmp_path / "controller" / "k2bench.jar"), "k2bench_jar_port": port,
                            "k2bench_private_ip": "127.0.0.1", "k2bench_jar_group": "region-1",
                            "k2bench_jar_serve_s": 60},
                   "hosts": hosts}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))  # the first host is the seed
    return path


def controller_jar(tmp_path) -> bytes:
    data = os.urandom(256 * 1024)
    (tmp_path / "controller").mkdir(exist_ok=True)
    (tmp_path / "controller" / "k2bench.jar").write_bytes(data)
    return data


def install(path: Path):
    return run(ANSIBLE_PLAYBOOK, "-i", path, FIXTURES / "ansible" / "install-role.yml")


def task_results(out: str, task: str) -> dict[str, str]:
    """host -> ok/changed/skipping/fatal for one task of the output."""
    section = out.split(f"TASK [k2bench_install : {task}]", 1)[1].split("\nTASK [", 1)[0].split("PLAY RECAP")[0]
    return dict((h, s) for s, h in re.findall(r"^(ok|changed|skipping|fatal): \[(\w+)\]", section, re.M))


def recaps(out: str) -> dict[str, dict[str, int]]:
    return {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
            for m in re.finditer(r"^(\w+)\s+:\s+(ok=.*)$", out, re.M)}


def serving(port: int) -> list[int]:
    """Pids of processes serving on the port (what the seed must not leave behind)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"http.server" in cmd and str(port).encode() in cmd:
                out.append(int(d.name))
    return out


def test_jar_crosses_once_per_group_and_the_others_fetch_it_checked(tmp_path):
    data = controller_jar(tmp_path)
    port = free_port()
    path = jar_inventory(tmp_path, {"seed": tmp_path / "seed", "peer1": tmp_path / "peer1",
                                    "peer2": tmp_path / "peer2"}, port)
    first = install(path)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr
    assert task_results(first.stdout, "Copy the jar from the controller to the seed") == {
        "seed": "changed", "peer1": "skipping", "peer2": "skipping"}
    assert task_results(first.stdout, "Serve the jar to the group")["seed"] == "ok"
    assert task_results(first.stdout, "Fetch the jar from the group's seed") == {
        "seed": "skipping", "peer1": "changed", "peer2": "changed"}
    for name in ("seed", "peer1", "peer2"):
        assert (tmp_path / name / "k2bench.jar").read_bytes() == data
    assert serving(port) == [], "the seed's server is stopped"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    again = install(path)
    assert again.returncode == 0, again.stdout[-4000:]
    assert all(r["changed"] == 0 for r in recaps(again.stdout).values()), recaps(again.stdout)
    assert task_results(again.stdout, "Serve the jar to the group")["seed"] == "skipping"


def test_jar_on_a_shared_home_is_not_served(tmp_path):
    # The test hosts: one filesystem, so the seed's copy is every machine's.
    data = controller_jar(tmp_path)
    port = free_port()
    path = jar_inventory(tmp_path, {"seed": tmp_path / "shared", "peer": tmp_path / "shared"}, port)
    p = install(path)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr
    assert task_results(p.stdout, "Serve the jar to the group") == {"seed": "skipping", "peer": "skipping"}
    assert (tmp_path / "shared" / "k2bench.jar").read_bytes() == data
    again = install(path)
    assert again.returncode == 0 and all(r["changed"] == 0 for r in recaps(again.stdout).values())


def test_jar_from_a_wrong_source_is_refused(tmp_path):
    controller_jar(tmp_path)
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "k2bench.jar").write_bytes(b"not the jar")
    fake_port, port = free_port(), free_port()
    fake = subprocess.Popen([sys.executable, "-m", "http.server", str(fake_port), "--bind", "127.0.0.1",
                             "--directory", str(wrong)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", fake_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        path = jar_inventory(tmp_path, {"seed": tmp_path / "seed", "peer": tmp_path / "peer"}, port,
                             peer={"k2bench_jar_url": f"http://127.0.0.1:{fake_port}/k2bench.jar"})
        p = install(path)
    finally:
        fake.terminate()
        fake.wait(10)
    assert p.returncode != 0
    out = p.stdout
    assert "peer: shipping the jar within its group (seed seed" in out and "checksum" in out.lower(), out[-4000:]
    assert not (tmp_path / "peer" / "k2bench.jar").exists()
    assert serving(port) == [], "the seed's server is stopped after a failed fetch too"
