"""The machines of an inventory, over SSH (the remote deployment)."""
from __future__ import annotations

import copy
from pathlib import Path

from ..errors import ConfigError
from . import ClientSlot, Pinger, ServerSlot
from .hosts import Host
from .inventory import Inventory
from .ssh import LEASE_S, SshHost


def check_shape(inv: Inventory, servers_per_dc: int, dcs: list[str] | None = None, experiment: str | None = None,
                inventory_file: str = "the inventory") -> None:
    """One server per server host: every datacenter of the run needs exactly
    ``servers_per_dc`` server hosts. The ConfigError names both numbers and both fixes."""
    for dc in dcs if dcs is not None else list(inv.datacenters):
        n = inv.server_hosts_per_dc().get(dc)
        if n is None or n == servers_per_dc:
            continue
        raise ConfigError("servers_per_dc", f"{f'experiment {experiment}' if experiment else 'the experiment'} has {servers_per_dc} servers per datacenter, "
                          f"inventory {inventory_file} has {n} server hosts in {dc}: run with SERVERS_PER_DC={n} "
                          f"(or --servers-per-dc {n}), or recreate the cluster with TF_VAR_servers_per_dc={servers_per_dc}")


class RemoteDeployment:
    """The machines of an inventory, over SSH: one server process per server host (a
    datacenter needs as many server hosts as servers, see check_shape), and one YCSB process
    per client host with its share of the datacenter's threads."""

    kind = "remote"
    splits_servers = False  # one server JVM per server host
    in_server_clients = False

    def __init__(self, inventory: Inventory, base_port: int = 17000, jar: str = "/opt/k2bench/k2bench.jar",
                 known_hosts: str | None = None, lease_s: float = LEASE_S, command_timeout: float = 60.0,
                 connect_timeout: float = 20.0, inventory_file: str = "the inventory"):
        self.inventory = inventory
        self.base_port = base_port
        self.inventory_file = inventory_file
        self._by_machine: dict[tuple[str, int], SshHost] = {}
        known = known_hosts or inventory.known_hosts
        if not known:
            raise ConfigError("ssh.known_hosts", f"{inventory_file} names no known_hosts file and --known-hosts is not "
                              "given: remote runs verify every host key (terraform writes known_hosts next to "
                              "inventory.json)")
        if not Path(known).is_file():
            raise ConfigError("--known-hosts" if known_hosts else "ssh.known_hosts",
                              f"{known} does not exist (the hosts' SSH keys, one line per host)")
        self._jar, self._known_hosts = jar, str(known)
        self._ssh = {"lease_s": lease_s, "command_timeout": command_timeout, "connect_timeout": connect_timeout}
        # Servers listen on every interface where their topology address is a public IP that
        # the machine cannot bind (cloud NAT).
        self.listen_host = "0.0.0.0" if inventory.topology_address == "public" else None

    def _host(self, h) -> SshHost:
        key = (h.ssh_host, h.ssh_port)
        if key not in self._by_machine:
            self._by_machine[key] = SshHost(h.name, h.ssh_host, h.ssh_port, self.inventory.ssh_user,
                                            self.inventory.private_key, h.remote_dir, self._jar,
                                            self._known_hosts, **self._ssh)
        return self._by_machine[key]

    def hosts(self) -> list[Host]:
        return [self._host(h) for h in self.inventory.machines()]

    # The netem role's ping verification of the deploy (tc/verify.json: configured vs
    # measured RTT per pair), set by `k2bench run` for netem inventories; into the manifest.
    tc_verify: dict | None = None

    def describe(self) -> dict:
        out = {"kind": self.kind, "provider": self.inventory.provider, "latency": self.inventory.latency,
               "experiment_id": self.inventory.experiment_id, "hosts": [h.name for h in self.hosts()],
               "known_hosts": self._known_hosts, "lease_s": self._ssh["lease_s"]}
        if self.inventory.latency == "netem":
            out["tc_verify"] = self.tc_verify
        return out

    def _check(self, dcs: list[str]) -> None:
        missing = [dc for dc in dcs if dc not in self.inventory.datacenters]
        if missing:
            raise ConfigError("inventory.datacenters", f"has no {', '.join(missing)}; the topology needs "
                              f"{', '.join(dcs)}")

    def _server_hosts(self, dc: str, servers_per_dc: int):
        check_shape(self.inventory, servers_per_dc, [dc], inventory_file=self.inventory_file)
        return self.inventory.hosts(dc, "server")

    def topology(self, doc: dict, servers_per_dc: int) -> dict:
        doc = copy.deepcopy(doc)
        dcs = doc["datacenters"]
        self._check(dcs)
        # Ports count up per address: machines may share one (test hosts on loopback).
        next_port: dict[str, int] = {}
        servers = {}
        for dc in dcs:
            hosts = self._server_hosts(dc, servers_per_dc)
            addrs = []
            for h in hosts:
                address = self.inventory.address(h)
                port = next_port.get(address, self.base_port)
                next_port[address] = port + 1
                addrs.append(f"{address}:{port}")
            servers[dc] = addrs
        doc["servers"] = servers
        for k in ("base_port", "host"):
            doc.pop(k, None)
        # The in-process emulation only where the network has no latency of its own.
        doc["wan_emulation"] = "embedded" if self.inventory.latency == "embedded" else "none"
        return doc

    def servers(self, dcs: list[str], servers_per_dc: int, processes: str = "per_dc") -> list[ServerSlot]:
        # The inventory decides: one process per server host (processes has no say here).
        self._check(dcs)
        out = []
        for dc in dcs:
            out += [ServerSlot(self._host(h), dc, f"server-{dc}-{i}", ("--server", f"{dc}:{i}"))
                    for i, h in enumerate(self._server_hosts(dc, servers_per_dc))]
        return out

    def clients(self, dc: str) -> list[ClientSlot]:
        hosts = self.inventory.hosts(dc, "client")
        if len(hosts) == 1:
            return [ClientSlot(self._host(hosts[0]), dc, f"client-{dc}", 0, 1)]
        return [ClientSlot(self._host(h), dc, f"client-{dc}-{i}", i, len(hosts)) for i, h in enumerate(hosts)]

    def pingers(self, dcs: list[str]) -> list[Pinger]:
        if self.inventory.latency == "embedded":
            return [Pinger(self.clients(dcs[0])[0].host, None)]
        # Real or tc latency depends on where the prober is: measure each row from its DC.
        return [Pinger(self.clients(dc)[0].host, dc) for dc in dcs]

    def close(self) -> None:
        for h in self._by_machine.values():
            h.close()
