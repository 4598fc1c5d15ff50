"""Everything on this machine (the local deployment)."""
from __future__ import annotations

import copy
from pathlib import Path

from . import ALL_DCS, ClientSlot, Pinger, ServerSlot
from .hosts import Host, LocalHost


class LocalDeployment:
    """Everything on this machine: the server JVM(s) as server.processes splits them, and
    one client slot per datacenter (inside the server JVM, or a JVM of its own:
    clients.processes)."""

    kind = "local"
    listen_host = None
    splits_servers = True
    in_server_clients = True

    def __init__(self, host: LocalHost):
        self.host = host

    def hosts(self) -> list[Host]:
        return [self.host]

    def describe(self) -> dict:
        return {"kind": self.kind, "hosts": [self.host.name]}

    def topology(self, doc: dict, servers_per_dc: int) -> dict:
        doc = copy.deepcopy(doc)
        dcs = doc["datacenters"]
        ports = iter(self.host.free_ports(len(dcs) * servers_per_dc))
        doc["servers"] = {dc: [f"127.0.0.1:{next(ports)}" for _ in range(servers_per_dc)] for dc in dcs}
        for k in ("base_port", "host"):
            doc.pop(k, None)
        return doc

    def servers(self, dcs: list[str], servers_per_dc: int, processes: str = "per_dc") -> list[ServerSlot]:
        if processes == "per_host":
            return [ServerSlot(self.host, ALL_DCS, "servers", ("--all",))]
        if processes == "per_server":
            return [ServerSlot(self.host, dc, f"server-{dc}-{i}", ("--server", f"{dc}:{i}"))
                    for dc in dcs for i in range(servers_per_dc)]
        return [ServerSlot(self.host, dc, f"server-{dc}", ("--dc", dc)) for dc in dcs]

    def clients(self, dc: str) -> list[ClientSlot]:
        return [ClientSlot(self.host, dc, f"client-{dc}", 0, 1)]

    def pingers(self, dcs: list[str]) -> list[Pinger]:
        return [Pinger(self.host, None)]

    def close(self) -> None:
        return None


def local(jar: Path) -> LocalDeployment:
    return LocalDeployment(LocalHost(jar))
