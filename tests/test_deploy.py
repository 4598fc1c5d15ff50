"""The inventory schema and where a remote deployment puts each process (no SSH needed:
placing processes and addresses is pure; the SSH path itself runs in tests/deploy)."""
import copy
import json
import tempfile
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from k2bench.deploy import inventory
from k2bench.deploy import ClientSlot, LocalDeployment, RemoteDeployment, check_shape
from k2bench.experiment import ClientShare, client_shares, server_jvm_args
from k2bench.trial.servers import remote_split
from k2bench.errors import ConfigError
from k2bench.deploy.hosts import LocalHost

EC2 = json.loads((ROOT / "tests/fixtures/inventory/ec2-6dc.json").read_text())
TOPO = yaml.safe_load((ROOT / "workloads/topologies/paper-local.yaml").read_text())
DCS = TOPO["datacenters"]
KNOWN_HOSTS = Path(tempfile.mkdtemp()) / "known_hosts"
KNOWN_HOSTS.write_text("")  # no SSH connection is made here; the file only has to exist


def bad(doc, field):
    with pytest.raises(ConfigError) as e:
        inventory.parse(doc)
    assert e.value.field == field and "\n" not in str(e.value), str(e.value)
    return str(e.value)


def test_the_ec2_fixture_parses_with_its_defaults():
    inv = inventory.parse(EC2)
    assert inv.provider == "ec2" and inv.latency == "real" and inv.topology_address == "public"
    assert list(inv.datacenters) == DCS
    assert len(inv.hosts("VA", "server")) == 2 and len(inv.hosts(role="client")) == 12
    assert len(inv.machines()) == len(inv.hosts()), "one machine per host entry on EC2"


def test_bad_inventories_name_the_field():
    doc = copy.deepcopy(EC2)
    doc["schema"] = "v0"
    bad(doc, "schema")
    doc = copy.deepcopy(EC2)
    doc["latency"] = "fast"
    bad(doc, "latency")
    doc = copy.deepcopy(EC2)
    doc["datacenters"]["VA"]["hosts"][0]["public_ip"] = "not-an-ip"
    assert "not an IP address" in bad(doc, "datacenters.VA.hosts[0].public_ip")
    doc = copy.deepcopy(EC2)
    doc["datacenters"]["CA"]["hosts"] = [h for h in doc["datacenters"]["CA"]["hosts"] if h["role"] == "server"]
    assert "no client host" in bad(doc, "datacenters.CA.hosts")
    doc = copy.deepcopy(EC2)
    doc["datacenters"]["SG"]["hosts"][1]["name"] = doc["datacenters"]["SG"]["hosts"][0]["name"]
    assert "two different machines" in bad(doc, "datacenters.SG.hosts[1].name")


def remote(doc=EC2, **kw):
    return RemoteDeployment(inventory.parse(doc), **({"known_hosts": str(KNOWN_HOSTS)} | kw))


def test_one_server_jvm_per_server_host_at_the_public_addresses():
    dep = remote()
    topo = dep.topology(TOPO, 2)
    va = [h for h in EC2["datacenters"]["VA"]["hosts"] if h["role"] == "server"]
    assert topo["servers"]["VA"] == [f"{va[0]['public_ip']}:17000", f"{va[1]['public_ip']}:17000"]
    assert topo["wan_emulation"] == "none", "EC2's latency is real: the transport adds none"
    assert dep.listen_host == "0.0.0.0", "a public IP behind NAT cannot be bound"
    slots = dep.servers(DCS, 2)
    assert [(s.name, s.select) for s in slots if s.dc == "VA"] == [
        ("server-VA-0", ("--server", "VA:0")), ("server-VA-1", ("--server", "VA:1"))]
    assert len({s.host.name for s in slots}) == 12
    pingers = dep.pingers(DCS)
    assert [p.from_dc for p in pingers] == DCS, "real latency: each row measured from its datacenter"


def test_a_datacenter_needs_one_server_host_per_server():
    doc = copy.deepcopy(EC2)
    for d in doc["datacenters"].values():
        servers = [h for h in d["hosts"] if h["role"] == "server"]
        d["hosts"] = servers[:1] + [h for h in d["hosts"] if h["role"] == "client"]
    with pytest.raises(ConfigError) as e:
        remote(doc, base_port=18000).servers(DCS, 4)
    assert e.value.field == "servers_per_dc" and "has 1 server hosts in VA" in str(e.value)
    with pytest.raises(ConfigError) as e:
        remote().topology(TOPO, 3)
    assert e.value.field == "servers_per_dc" and "has 3 servers per datacenter" in str(e.value)


def test_the_shape_error_names_both_numbers_and_both_fixes():
    inv = inventory.parse(EC2)
    with pytest.raises(ConfigError) as e:
        check_shape(inv, 4, DCS, experiment="default", inventory_file="terraform/ec2/inventory.json")
    assert str(e.value) == (
        "servers_per_dc: experiment default has 4 servers per datacenter, inventory terraform/ec2/inventory.json "
        "has 2 server hosts in VA: run with SERVERS_PER_DC=2 (or --servers-per-dc 2), or recreate the cluster "
        "with TF_VAR_servers_per_dc=4")
    check_shape(inv, 2, DCS)  # the default cluster fits the shipped experiments


def test_known_hosts_is_relative_to_the_inventory_file(tmp_path):
    doc = copy.deepcopy(EC2)
    doc["ssh"]["known_hosts"] = "known_hosts"
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "inventory.json").write_text(json.dumps(doc))
    inv = inventory.load(tmp_path / "cluster" / "inventory.json")
    assert inv.known_hosts == str(tmp_path / "cluster" / "known_hosts")
    doc["ssh"]["known_hosts"] = "/etc/k2b/known_hosts"
    assert inventory.parse(doc).known_hosts == "/etc/k2b/known_hosts"
    doc["ssh"]["known_hosts"] = ""
    bad(doc, "ssh.known_hosts")


def test_a_remote_deployment_without_known_hosts_is_refused(tmp_path):
    with pytest.raises(ConfigError) as e:
        RemoteDeployment(inventory.parse(EC2), inventory_file="inv.json")
    assert e.value.field == "ssh.known_hosts" and "inv.json names no known_hosts file" in str(e.value)
    assert "\n" not in str(e.value)
    doc = copy.deepcopy(EC2)
    doc["ssh"]["known_hosts"] = str(tmp_path / "missing")
    with pytest.raises(ConfigError) as e:
        RemoteDeployment(inventory.parse(doc))
    assert e.value.field == "ssh.known_hosts" and "does not exist" in str(e.value)
    # --known-hosts overrides the inventory's
    dep = RemoteDeployment(inventory.parse(doc), known_hosts=str(KNOWN_HOSTS))
    assert dep.describe()["known_hosts"] == str(KNOWN_HOSTS)


def test_ssh_hosts_refuse_unknown_host_keys():
    import paramiko

    host = remote().hosts()[0]
    assert isinstance(host.conn.client._policy, paramiko.RejectPolicy), "Fabric's AutoAddPolicy is replaced"


def test_a_topology_datacenter_missing_from_the_inventory_is_named():
    doc = copy.deepcopy(EC2)
    del doc["datacenters"]["TYO"]
    with pytest.raises(ConfigError) as e:
        remote(doc).topology(TOPO, 2)
    assert e.value.field == "inventory.datacenters" and "TYO" in str(e.value)


def test_clients_share_the_datacenters_threads_and_rate():
    dep = remote()
    slots = dep.clients("SP")
    assert [s.name for s in slots] == ["client-SP-0", "client-SP-1"]
    assert client_shares(9, 20.0, len(slots)) == [ClientShare(5, 10), ClientShare(4, 10)]
    assert client_shares(9, None, len(slots)) == [ClientShare(5, None), ClientShare(4, None)]


def test_embedded_latency_machines_in_several_datacenters():
    doc = json.loads((ROOT / "tests/fixtures/inventory/test-3machines.json").read_text())
    dep = remote(doc)
    topo = dep.topology(TOPO, 1)
    assert topo["wan_emulation"] == "embedded" and dep.listen_host is None
    ports = [a for dc in DCS for a in topo["servers"][dc]]
    assert len(set(ports)) == len(ports), "two datacenters on one machine get distinct ports"
    assert len(dep.hosts()) == 3 and len(dep.pingers(DCS)) == 1
    # two server JVMs per machine: more than one processor each has takes the several-JVM
    # defaults (C1), as a local per_server run; as many processors as JVMs keeps C2 and ZGC
    slots = dep.servers(DCS, 1)
    cfg = {"server": {"jvm_args": None}}
    for host in {id(s.host): s.host for s in slots}.values():
        host.cores = lambda: 1
    assert remote_split(slots) == "per_server"
    assert server_jvm_args(cfg, "per_server") == ["-XX:TieredStopAtLevel=1"]
    for s in slots:
        s.host.cores = lambda: 2
    assert remote_split(slots) == "per_host"
    ec2 = remote().servers(DCS, 2)
    for s in ec2:
        s.host.cores = lambda: 1  # one server per machine: never a reason for C1
    assert server_jvm_args(cfg, remote_split(ec2)) == ["-XX:+UseZGC", "-XX:ZCollectionInterval=5"]


def test_the_local_deployment_is_one_jvm_per_datacenter_on_loopback(tmp_path):
    dep = LocalDeployment(LocalHost(tmp_path / "k2bench.jar"))
    topo = dep.topology(TOPO, 2)
    assert all(a.startswith("127.0.0.1:") for dc in DCS for a in topo["servers"][dc])
    assert [s.select for s in dep.servers(DCS, 2)] == [("--dc", dc) for dc in DCS]
    assert dep.clients("VA") == [ClientSlot(dep.host, "VA", "client-VA", 0, 1)]


def test_deploy_checks_the_shape_before_ansible_with_one_line(tmp_path, capsys):
    from k2bench import cli

    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(EC2))
    work = tmp_path / "work"
    assert cli.main(["deploy", "--inventory", str(inv), "--experiment", "smoke", "--servers-per-dc", "4",
                     "--workdir", str(work)]) == 2
    err = capsys.readouterr().err
    assert err == (f"k2bench: servers_per_dc: experiment smoke has 4 servers per datacenter, inventory {inv} has 2 "
                   "server hosts in VA: run with SERVERS_PER_DC=2 (or --servers-per-dc 2), or recreate the cluster "
                   "with TF_VAR_servers_per_dc=4\n")
    assert not work.exists(), "nothing was written: Ansible never ran"
    assert cli.main(["deploy", "--inventory", str(inv), "--servers-per-dc", "4", "--workdir", str(work)]) == 2
    assert "--servers-per-dc: needs --experiment NAME" in capsys.readouterr().err
    four = copy.deepcopy(EC2)
    for d in four["datacenters"].values():
        servers = [h for h in d["hosts"] if h["role"] == "server"]
        d["hosts"] += [dict(h, name=h["name"] + "-b", public_ip=h["public_ip"][:-1] + "9") for h in servers]
    inv.write_text(json.dumps(four))
    assert cli.main(["deploy", "--inventory", str(inv), "--experiment", "smoke", "--workdir", str(work)]) == 2
    assert "experiment smoke has 2 servers per datacenter" in capsys.readouterr().err
    assert cli.main(["--jar", str(tmp_path / "missing.jar"), "deploy", "--inventory", str(inv), "--experiment",
                     "smoke", "--servers-per-dc", "4", "--workdir", str(work)]) == 2
    assert "k2bench: ssh.known_hosts:" in capsys.readouterr().err, "the shape fits: deploy goes on to its next check"


def test_a_netem_runs_manifest_keeps_the_deploys_ping_verification(tmp_path):
    """configured vs measured RTT per pair, as the netem role verified them after tc."""
    from k2bench import cli
    from k2bench.errors import ConfigError
    from k2bench.deploy.inventory import parse

    doc = copy.deepcopy(EC2)
    verify = {"schema": "k2bench-tc-verify/1", "ok": True,
              "pairs": [{"dc": "VA", "peer_dc": "CA", "configured_rtt_ms": 60, "measured_rtt_ms": 60.4, "ok": True}]}
    path = tmp_path / "verify.json"
    path.write_text(json.dumps(verify))
    assert cli.common.tc_verify(parse(doc), str(path)) is None, "real latency: nothing to verify"
    netem = parse(dict(doc, provider="emulab", latency="netem"))
    assert cli.common.tc_verify(netem, str(path)) == verify
    with pytest.raises(ConfigError) as e:
        cli.common.tc_verify(netem, str(tmp_path / "missing.json"))
    assert e.value.field == "--tc-verify" and "run `k2bench deploy`" in e.value.problem
    dep = RemoteDeployment(netem, known_hosts=str(KNOWN_HOSTS))
    dep.tc_verify = cli.common.tc_verify(netem, str(path))
    assert dep.describe()["tc_verify"] == verify, "into manifest.json's deployment"


def test_deploy_resolves_an_experiment_with_a_mutant_with_or_without_the_jar(tmp_path, jar):
    """deploy --experiment checks the experiment's shape: with the jar its mutant is checked as
    a run would, without one the file's own systems stand in and the mutant is left to the run."""
    import argparse

    from k2bench.cli.deploy import _deploy_experiment
    path = tmp_path / "mut.yaml"
    path.write_text("systems: [k2]\ntesting: {mutant: read-pending}\n")
    exp = _deploy_experiment(argparse.Namespace(experiment=str(path), jar=str(jar), servers_per_dc=None))
    assert exp["testing"]["mutant"] == "read-pending"
    exp = _deploy_experiment(argparse.Namespace(experiment=str(path), jar=str(tmp_path / "no.jar"), servers_per_dc=None))
    assert exp["systems"] == ["k2"] and exp["testing"]["mutant"] is None


_HOLD_LOCKS_JAVA = """
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

public class HoldLocks {
  public static void main(String[] args) throws Exception {
    List<FileChannel> open = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      FileChannel ch = FileChannel.open(Path.of(args[0], "block-" + args[i] + ".lock"),
          StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      if (ch.tryLock() == null) throw new IllegalStateException("block " + args[i] + " is locked");
      open.add(ch);
    }
    System.out.println("locked " + open.size());
    System.out.flush();
    while (System.in.read() >= 0) { }
  }
}
"""


def test_local_ports_come_from_blocks_no_other_process_holds_java_included(tmp_path, monkeypatch):
    import socket
    import subprocess
    from k2bench.deploy import hosts
    monkeypatch.setattr(hosts, "_ephemeral_range", lambda: (32_768, 60_999))
    locks = tmp_path / "locks"
    locks.mkdir()
    free = 10_000 + 7 * hosts._BLOCK
    others = [str(f) for f in range(10_000, 32_768 - hosts._BLOCK + 1, hosts._BLOCK) if f != free]
    src = tmp_path / "HoldLocks.java"
    src.write_text(_HOLD_LOCKS_JAVA)
    # a JVM holds every block but one, the way FreePorts locks them
    holder = subprocess.Popen(["java", str(src), str(locks), *others], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == f"locked {len(others)}"
        mine = hosts.PortBlocks(locks, 10_000, 32_768)
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", free))
            busy.listen()
            assert mine.take(3) == [free + 1, free + 2, free + 3], "in order, past the listened-on port"
        # a random draw would leave the free block 43 times in 44 on each of 300 ports
        ports = mine.take(300)
        assert len(set(ports)) == 300 and all(free <= p < free + hosts._BLOCK for p in ports), ports
        assert mine.held == [free]
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # the JVM exited, so the kernel dropped its locks: more than a block claims a second one
    assert len(set(mine.take(hosts._BLOCK + 1))) == hosts._BLOCK + 1 and len(mine.held) == 2


def test_local_ports_fall_back_to_the_kernels_choice_without_room_below_the_range(monkeypatch, tmp_path):
    from k2bench.deploy import hosts
    monkeypatch.setenv("K2BENCH_PORT_LOCKS", str(tmp_path))
    monkeypatch.setattr(hosts, "_process_blocks", None)
    monkeypatch.setattr(hosts, "_ephemeral_range", lambda: (32_768, 60_999))
    ports = hosts.free_loopback_ports(24)
    assert len(set(ports)) == 24 and all(10_000 <= p < 32_768 for p in ports), ports
    assert [p.name for p in tmp_path.iterdir()] == [f"block-{hosts._process_blocks.held[0]}.lock"]
    monkeypatch.setattr(hosts, "_ephemeral_range", lambda: (10_100, 60_999))
    assert all(p >= 10_100 for p in hosts.free_loopback_ports(3))
