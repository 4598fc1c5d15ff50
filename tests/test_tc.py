"""k2bench/deploy/tc.py: the per-host tc scripts against golden files, the RTT/2
arithmetic, and the scripts themselves run against stand-ins for `ip` and `tc`."""
import json
import re
import subprocess
from decimal import Decimal

import pytest
import yaml

from conftest import ROOT, SYSTEMS
from k2bench.deploy import inventory, tc
from k2bench.errors import ConfigError

FIXTURES = ROOT / "tests" / "fixtures"
GOLDEN = FIXTURES / "tc"
PAPER = ROOT / "workloads" / "topologies" / "paper-local.yaml"
FRAC = GOLDEN / "frac-3dc.rtt.yaml"
DCS = ["VA", "CA", "SP", "LDN", "TYO", "SG"]
# The K2 paper's Fig. 6, the full symmetric table (paper-local.yaml gives each pair once).
SPEC_TABLE = [[0, 60, 146, 76, 162, 243], [60, 0, 194, 136, 110, 178], [146, 194, 0, 214, 269, 333],
              [76, 136, 214, 0, 233, 163], [162, 110, 269, 233, 0, 68], [243, 178, 333, 163, 68, 0]]


def inv(name):
    return inventory.load(FIXTURES / "inventory" / f"{name}.json")


def rtt(path):
    return yaml.safe_load(path.read_text())["rtt_ms"]


def host(i, name):
    return next(h for h in i.hosts() if h.name == name)


CASES = [("emulab-6dc", PAPER, "va-server"), ("emulab-6dc", PAPER, "sp-client"),
         ("frac-3dc", FRAC, "east-server"), ("frac-3dc", FRAC, "eu-client")]


@pytest.mark.parametrize("inv_name,rtt_file,name", CASES)
def test_golden(tmp_path, inv_name, rtt_file, name):
    i, m = inv(inv_name), rtt(rtt_file)
    assert tc.script(i, m, host(i, name)) == (GOLDEN / f"{inv_name}.{name}.sh").read_text()
    tc.write_scripts(i, m, tmp_path)
    for ext in (".sh", ".expect.json"):
        assert (tmp_path / f"{name}{ext}").read_text() == (GOLDEN / f"{inv_name}.{name}{ext}").read_text()


def delays(script):
    """peer DC -> the netem delay string of its class."""
    return dict(re.findall(r"^# (\S+): RTT .*\n.*\n.*netem delay (\S+)ms", script, re.M))


def test_full_matrix_gives_the_same_scripts_as_each_pair_once():
    i = inv("emulab-6dc")
    full = {a: {b: SPEC_TABLE[x][y] for y, b in enumerate(DCS)} for x, a in enumerate(DCS)}
    for h in i.hosts():
        assert tc.script(i, full, h) == tc.script(i, rtt(PAPER), h)


def test_half_rtt_is_exact_in_fractional_ms():
    i = inv("frac-3dc")
    assert delays(tc.script(i, rtt(FRAC), host(i, "east-server"))) == {"west": "7.3", "eu": "38.15"}
    assert delays(tc.script(i, rtt(FRAC), host(i, "eu-client"))) == {"east": "38.15", "west": "66.665"}
    i = inv("emulab-6dc")
    sp = delays(tc.script(i, rtt(PAPER), host(i, "sp-client")))
    assert sp["SG"] == "166.5" and sp["TYO"] == "134.5" and sp["VA"] == "73"
    # Every pair of the paper: twice the delay is the RTT, exactly.
    for x, a in enumerate(DCS):
        d = delays(tc.script(i, rtt(PAPER), i.hosts(a, "server")[0]))
        assert set(d) == set(DCS) - {a}
        for y, b in enumerate(DCS):
            if a != b:
                assert Decimal(d[b]) * 2 == SPEC_TABLE[x][y]


def test_no_class_for_the_own_dc_and_filters_for_every_peer_address():
    i = inv("emulab-6dc")
    s = tc.script(i, rtt(PAPER), host(i, "va-server"))
    assert "# VA:" not in s and s.count("netem delay") == 5
    filtered = re.findall(r"match ip dst (\S+)/32 flowid (\S+)", s)
    own = {h.private_ip for h in i.hosts("VA")} | {h.public_ip for h in i.hosts("VA")}
    peers = {ip for d in DCS[1:] for h in i.hosts(d) for ip in (h.private_ip, h.public_ip)}
    assert {ip for ip, _ in filtered} == peers and not own & peers
    # Public == private (frac-3dc): one filter per address, not two.
    i = inv("frac-3dc")
    s = tc.script(i, rtt(FRAC), host(i, "east-server"))
    assert s.count("match ip dst") == 4


def test_delete_first_tolerating_no_qdisc():
    i = inv("frac-3dc")
    lines = tc.script(i, rtt(FRAC), host(i, "east-server")).splitlines()
    delete = next(n for n, line in enumerate(lines) if 'tc qdisc del dev "$dev" root' in line)
    add = next(n for n, line in enumerate(lines) if 'tc qdisc add dev "$dev" root handle 1: htb' in line)
    assert delete < add and lines[1:].index("set -euo pipefail") < delete
    assert '*"No such file or directory"* | *"handle of zero"*) ;;' in [line.strip() for line in lines]


# Stand-ins for ip and tc: `ip` prints addresses in iproute2's -o format; `tc` logs its
# arguments and answers `qdisc del` with $DEL_ERR (like a fresh interface) when set.
FAKE_IP = """#!/bin/sh
printf '1: lo    inet 127.0.0.1/8 scope host lo\\\\       valid_lft forever\\n'
printf '3: eth1    inet %s/24 brd 10.10.1.255 scope global eth1\\\\       valid_lft forever\\n' "$FAKE_ADDR"
"""
FAKE_TC = """#!/bin/sh
echo "$*" >> "$TC_LOG"
if [ "$1 $2" = "qdisc del" ] && [ -n "$DEL_ERR" ]; then echo "$DEL_ERR" >&2; exit 2; fi
"""


def run_script(tmp_path, script, addr, del_err="", real_ip=False):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("tc", FAKE_TC), ("ip", FAKE_IP)):
        if name == "ip" and real_ip:
            continue
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    path = tmp_path / "tc.sh"
    path.write_text(script)
    log = tmp_path / "tc.log"
    log.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin", "TC_LOG": str(log), "DEL_ERR": del_err,
           "FAKE_ADDR": addr}
    p = subprocess.run(["bash", str(path)], capture_output=True, text=True, env=env, timeout=30)
    return p, log.read_text().splitlines()


@pytest.mark.parametrize("del_err", ["", "Error: Cannot delete qdisc with handle of zero.",
                                     "RTNETLINK answers: No such file or directory"])
def test_script_runs_on_its_interface_and_again(tmp_path, del_err):
    i = inv("emulab-6dc")
    s = tc.script(i, rtt(PAPER), host(i, "va-server"))
    p, calls = run_script(tmp_path, s, "10.10.1.1", del_err)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "k2bench tc: applied on eth1"
    expected = [line[len("tc "):].replace('"$dev"', "eth1") for line in s.splitlines() if line.startswith("tc ")]
    assert calls == ["qdisc del dev eth1 root"] + expected


def test_script_fails_on_other_delete_errors(tmp_path):
    i = inv("emulab-6dc")
    s = tc.script(i, rtt(PAPER), host(i, "va-server"))
    p, calls = run_script(tmp_path, s, "10.10.1.1", "RTNETLINK answers: Operation not permitted")
    assert p.returncode == 1
    assert "deleting the root qdisc of eth1 failed: RTNETLINK answers: Operation not permitted" in p.stderr
    assert calls == ["qdisc del dev eth1 root"]


def test_script_fails_without_the_private_ip(tmp_path):
    i = inv("emulab-6dc")
    p, calls = run_script(tmp_path, tc.script(i, rtt(PAPER), host(i, "va-server")), "10.10.1.99")
    assert p.returncode == 1 and calls == []
    assert p.stderr.strip() == ("k2bench tc: no interface of va-server holds 10.10.1.1 "
                                "(its private_ip in the inventory)")


def test_script_finds_the_interface_with_the_real_ip_command(tmp_path):
    doc = json.loads((FIXTURES / "inventory" / "frac-3dc.json").read_text())
    doc["datacenters"]["east"]["hosts"][0].update(private_ip="127.0.0.1", public_ip="127.0.0.1")
    i = inventory.parse(doc)
    p, calls = run_script(tmp_path, tc.script(i, rtt(FRAC), host(i, "east-server")), "", real_ip=True)
    assert p.returncode == 0, p.stderr
    assert calls[0] == "qdisc del dev lo root"


def test_expected_rtts_one_peer_server_per_other_dc():
    i = inv("emulab-6dc")
    assert tc.expected_rtts(i, rtt(PAPER), host(i, "sp-client")) == [
        {"peer_dc": "VA", "peer_ip": "10.10.1.1", "rtt_ms": 146},
        {"peer_dc": "CA", "peer_ip": "10.10.2.1", "rtt_ms": 194},
        {"peer_dc": "LDN", "peer_ip": "10.10.4.1", "rtt_ms": 214},
        {"peer_dc": "TYO", "peer_ip": "10.10.5.1", "rtt_ms": 269},
        {"peer_dc": "SG", "peer_ip": "10.10.6.1", "rtt_ms": 333}]
    i = inv("frac-3dc")
    assert [e["rtt_ms"] for e in tc.expected_rtts(i, rtt(FRAC), host(i, "west-client"))] == [14.6, 133.33]


def test_write_scripts_writes_every_machine(tmp_path):
    i, m = inv("emulab-6dc"), rtt(PAPER)
    paths = tc.write_scripts(i, m, tmp_path / "tc")
    assert sorted(p.name for p in paths) == sorted(f"{h.name}{ext}" for h in i.hosts()
                                                   for ext in (".sh", ".expect.json"))
    for h in i.hosts():
        sh = tmp_path / "tc" / f"{h.name}.sh"
        assert sh.read_text() == tc.script(i, m, h) and sh.stat().st_mode & 0o111
        expect = json.loads((tmp_path / "tc" / f"{h.name}.expect.json").read_text())
        assert expect == {"host": h.name, "dc": h.dc, "peers": tc.expected_rtts(i, m, h)}


def without(m, a, b):
    m = {k: dict(v) for k, v in m.items()}
    m[a].pop(b)
    return m


@pytest.mark.parametrize("case,field,problem", [
    ("missing pair", "rtt_ms.SP.SG", "missing: give the RTT between SP and SG"),
    ("unknown row", "rtt_ms.PAR", "unknown datacenter"),
    ("unknown column", "rtt_ms.VA.PAR", "unknown datacenter"),
    ("asymmetric", "rtt_ms.CA.VA", "asymmetric"),
    ("negative", "rtt_ms.VA.CA", "non-negative number"),
    ("text", "rtt_ms.VA.CA", "non-negative number"),
    ("intra-DC", "rtt_ms.VA.VA", "must be 0"),
])
def test_bad_matrix(tmp_path, case, field, problem):
    m = rtt(PAPER)
    m = {"missing pair": lambda: without(m, "SP", "SG"),
         "unknown row": lambda: {**m, "PAR": {"VA": 10}},
         "unknown column": lambda: {**m, "VA": {**m["VA"], "PAR": 10}},
         "asymmetric": lambda: {**m, "CA": {**m["CA"], "VA": 61}},
         "negative": lambda: {**m, "VA": {**m["VA"], "CA": -60}},
         "text": lambda: {**m, "VA": {**m["VA"], "CA": "60ms"}},
         "intra-DC": lambda: {**m, "VA": {**m["VA"], "VA": 1}}}[case]()
    i = inv("emulab-6dc")
    with pytest.raises(ConfigError) as e:
        tc.write_scripts(i, m, tmp_path / "out")
    assert e.value.field == field and problem in e.value.problem
    assert not (tmp_path / "out").exists()  # nothing written on bad input


def test_machine_in_two_dcs_is_an_error(tmp_path):
    i = inv("test-3machines")
    with pytest.raises(ConfigError) as e:
        tc.script(i, rtt(PAPER), i.hosts()[0])
    # node-1 is VA's client and CA's server (test-3machines.json).
    assert e.value.field == "inventory.datacenters.CA.hosts[0]"
    assert "'node-1'" in e.value.problem and "is also in VA" in e.value.problem
    assert "tc needs one datacenter per machine" in e.value.problem
    with pytest.raises(ConfigError):
        tc.write_scripts(i, rtt(PAPER), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_host_outside_the_inventory_is_an_error():
    other = inv("frac-3dc").hosts()[0]
    with pytest.raises(ConfigError) as e:
        tc.script(inv("emulab-6dc"), rtt(PAPER), other)
    assert e.value.field == "host" and "east-server" in e.value.problem


def test_unsafe_host_name_is_an_error():
    doc = json.loads((FIXTURES / "inventory" / "frac-3dc.json").read_text())
    doc["datacenters"]["eu"]["hosts"][1]["name"] = "../eu-client"
    i = inventory.parse(doc)
    with pytest.raises(ConfigError) as e:
        tc.script(i, rtt(FRAC), i.hosts()[0])
    assert e.value.field == "inventory.datacenters.eu.hosts[1].name"


# ---------------------------------------------------------------- reset (make netem-reset)

@pytest.mark.parametrize("inv_name,name", [("frac-3dc", "east-server"), ("emulab-6dc", "va-server")])
def test_reset_golden(tmp_path, inv_name, name):
    i = inv(inv_name)
    assert tc.reset_script(i, host(i, name)) == (GOLDEN / f"{inv_name}.{name}.reset.sh").read_text()
    paths = tc.write_reset_scripts(i, tmp_path)
    assert sorted(p.name for p in paths) == sorted(f"{h.name}.reset.sh" for h in i.machines())
    assert (tmp_path / f"{name}.reset.sh").read_text() == (GOLDEN / f"{inv_name}.{name}.reset.sh").read_text()
    assert (tmp_path / f"{name}.reset.sh").stat().st_mode & 0o111


def test_reset_scripts_for_machines_in_several_dcs(tmp_path):
    # Test hosts serve several datacenters each: they cannot carry k2bench's tc, but a
    # reset of their inventory must still work (and find nothing to remove).
    i = inv("test-3machines")
    assert [p.name for p in tc.write_reset_scripts(i, tmp_path)] == ["node-0.reset.sh", "node-1.reset.sh",
                                                                      "node-2.reset.sh"]


# A tc that keeps the qdiscs of one interface in a file, as the kernel would: `qdisc add`
# of the root HTB or of a netem leaf appends the line `tc qdisc show` prints for it, `qdisc
# del ... root` empties it, `qdisc show` prints it (the default qdisc when empty).
STATEFUL_TC = r"""#!/bin/bash
echo "$*" >> "$TC_LOG"
case "$1 $2" in
  "qdisc show")
    if [ -s "$TC_STATE" ]; then cat "$TC_STATE"; else echo "qdisc fq_codel 0: root refcnt 2 limit 10240p"; fi ;;
  "qdisc del")
    if [ -s "$TC_STATE" ]; then : > "$TC_STATE"
    else echo "Error: Cannot delete qdisc with handle of zero." >&2; exit 2; fi ;;
  "qdisc add")
    if [ "$5" = root ]; then echo "qdisc $8 1: root refcnt 2 r2q 10 default 0" >> "$TC_STATE"
    else echo "qdisc netem $8 parent $6 limit 100000 delay ${11}" >> "$TC_STATE"; fi ;;
esac
"""


def run_stateful(tmp_path, script, state):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("tc", STATEFUL_TC), ("ip", FAKE_IP)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "tc.log"
    log.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "TC_LOG": str(log), "TC_STATE": str(state), "FAKE_ADDR": "10.20.0.1"}
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=30)
    return p, log.read_text().splitlines()


def test_reset_removes_what_the_apply_script_made_and_nothing_else(tmp_path):
    i = inv("frac-3dc")
    h = host(i, "east-server")
    state = tmp_path / "qdiscs"
    p, _ = run_stateful(tmp_path, tc.script(i, rtt(FRAC), h), state)
    assert p.returncode == 0, p.stderr
    assert state.read_text().splitlines()[0].startswith("qdisc htb 1: root")
    assert sum(line.startswith("qdisc netem") for line in state.read_text().splitlines()) == 2
    reset = tc.reset_script(i, h)
    p, calls = run_stateful(tmp_path, reset, state)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "k2bench tc: removed from eth1"
    assert calls == ["qdisc show dev eth1", "qdisc del dev eth1 root"] and state.read_text() == ""
    # Again: nothing of k2bench's is left, so nothing is deleted.
    p, calls = run_stateful(tmp_path, reset, state)
    assert p.returncode == 0 and p.stdout.strip() == "k2bench tc: nothing to remove on eth1"
    assert calls == ["qdisc show dev eth1"]
    # Someone else's root qdisc (an HTB 1: without netem leaves, a tbf) is left alone.
    for other in ("qdisc htb 1: root refcnt 2 r2q 10 default 0\n", "qdisc tbf 8001: root refcnt 2 rate 1Gbit\n"):
        state.write_text(other)
        p, calls = run_stateful(tmp_path, reset, state)
        assert p.returncode == 0 and "nothing to remove" in p.stdout and calls == ["qdisc show dev eth1"]
        assert state.read_text() == other


def test_reset_fails_without_the_private_ip(tmp_path):
    i = inv("emulab-6dc")
    p, calls = run_script(tmp_path, tc.reset_script(i, host(i, "va-server")), "10.10.1.99")
    assert p.returncode == 1 and calls == []
    assert p.stderr.strip() == ("k2bench tc: no interface of va-server holds 10.10.1.1 "
                                "(its private_ip in the inventory)")


def test_reset_without_tc_has_nothing_to_remove(tmp_path):
    i = inv("emulab-6dc")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to("/bin/bash")
    (bin_dir / "grep").symlink_to("/bin/grep")
    p = subprocess.run(["/bin/bash", "-c", tc.reset_script(i, host(i, "va-server"))], capture_output=True, text=True,
                       env={"PATH": str(bin_dir)}, timeout=30)
    assert p.returncode == 0 and p.stdout.strip() == "k2bench tc: nothing to remove (no tc on this machine)"


# ---------------------------------------------------------------- the matrix is the experiment's

def test_rtt_matrix_scales_exactly():
    doc = yaml.safe_load(PAPER.read_text())
    assert tc.rtt_matrix(doc) == doc["rtt_ms"]
    scaled = tc.rtt_matrix({**doc, "rtt_scale": 0.1})
    assert scaled["VA"] == {"CA": 6, "SP": 14.6, "LDN": 7.6, "TYO": 16.2, "SG": 24.3}
    assert scaled["SP"]["SG"] == 33.3 and isinstance(scaled["VA"]["CA"], int)


@pytest.mark.parametrize("change,field,problem", [
    ({"rtt_scale": 0}, "t.rtt_scale", "must be a number > 0"),
    ({"rtt_scale": "fast"}, "t.rtt_scale", "must be a number > 0"),
    ({"jitter_ms": 5}, "t.jitter_ms", "tc (latency netem) emulates the RTT matrix only"),
    ({"intra_dc_delay_ms": 0.5}, "t.intra_dc_delay_ms", "set it to 0, or use latency embedded"),
    ({"rtt_ms": None}, "t.rtt_ms", "missing"),
    ({"rtt_ms": {"VA": 60}}, "t.rtt_ms.VA", "must map datacenter"),
    ({"rtt_ms": {"VA": {"CA": -1}}}, "t.rtt_ms.VA.CA", "non-negative"),
])
def test_rtt_matrix_refuses_what_tc_cannot_emulate(change, field, problem):
    doc = {**yaml.safe_load(PAPER.read_text()), **change}
    with pytest.raises(ConfigError) as e:
        tc.rtt_matrix(doc, "t")
    assert e.value.field == field and problem in e.value.problem


def deploy_args(tmp_path, **kw):
    import argparse
    return argparse.Namespace(**{"jar": str(tmp_path / "k2bench.jar"), "java": "java", "topology": None, **kw})


@pytest.fixture
def known_systems(monkeypatch):
    from k2bench.env import Env
    from k2bench.cli import deploy
    monkeypatch.setattr(Env, "systems", lambda self: SYSTEMS)  # the jar's, not the tmp one's
    monkeypatch.setattr(deploy, "systems_local", lambda jar=None: SYSTEMS)


def experiment_file(tmp_path, text):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return str(path)


def test_tc_matrix_is_the_experiments_topology(tmp_path, known_systems):
    from k2bench.cli.deploy import _tc_rtt_ms
    exp = experiment_file(tmp_path, "topology: {file: topologies/paper-local.yaml, rtt_scale: 0.5}\n")
    m = _tc_rtt_ms(deploy_args(tmp_path, experiment=exp))
    assert m["VA"]["CA"] == 30 and m["SP"]["SG"] == 166.5
    # A shipped experiment: the paper's matrix as it is.
    assert _tc_rtt_ms(deploy_args(tmp_path, experiment="smoke")) == rtt(PAPER)


def test_tc_matrix_from_a_topology_file_without_an_experiment(tmp_path):
    from k2bench.cli.deploy import _tc_rtt_ms
    assert _tc_rtt_ms(deploy_args(tmp_path, topology=str(FRAC))) == rtt(FRAC)
    assert _tc_rtt_ms(deploy_args(tmp_path, experiment=None, topology=str(FRAC))) == rtt(FRAC)


@pytest.mark.parametrize("kw,field,problem", [
    ({}, "--experiment", "the inventory's latency is netem, so tc needs an RTT matrix: "
                         "pass --experiment NAME (its topology) or --topology FILE"),
    ({"experiment": "smoke", "topology": str(PAPER)}, "--topology", "not both"),
    ({"topology": "/nonexistent.yaml"}, "--topology", "/nonexistent.yaml does not exist"),
])
def test_tc_matrix_needs_one_source(tmp_path, known_systems, kw, field, problem):
    from k2bench.cli.deploy import _tc_rtt_ms
    with pytest.raises(ConfigError) as e:
        _tc_rtt_ms(deploy_args(tmp_path, **kw))
    assert e.value.field == field and problem in e.value.problem


def test_tc_matrix_cannot_follow_a_sweep_of_the_rtts(tmp_path, known_systems):
    from k2bench.cli.deploy import _tc_rtt_ms
    exp = experiment_file(tmp_path, "sweep: {topology.rtt_scale: [1.0, 0.5]}\n")
    with pytest.raises(ConfigError) as e:
        _tc_rtt_ms(deploy_args(tmp_path, experiment=exp))
    assert e.value.field == "--experiment" and "tc holds one matrix per deploy" in e.value.problem
    # A sweep of something else keeps one matrix.
    exp = experiment_file(tmp_path, "sweep: {topology.replication_factor: [1, 2]}\n")
    assert _tc_rtt_ms(deploy_args(tmp_path, experiment=exp)) == rtt(PAPER)
