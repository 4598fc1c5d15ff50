"""k2bench/tc.py: the per-host tc scripts against golden files, the RTT/2
arithmetic, and the scripts themselves run against stand-ins for `ip` and `tc`."""
import json
import re
import subprocess
from decimal import Decimal

import pytest
import yaml

from conftest import ROOT
from k2bench import inventory, tc
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
