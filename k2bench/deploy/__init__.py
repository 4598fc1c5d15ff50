"""Where each process of a run goes. The orchestrator asks a Deployment for the hosts of the
servers, clients and RTT probes and for the topology the servers run with; the local
deployment puts everything on this machine (one server JVM for all servers, or one per
datacenter or server as server.processes says; emulated WAN),
the remote one follows an inventory (k2bench/deploy/inventory.py) over SSH.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .hosts import Host


class Deployment(Protocol):
    kind: str
    listen_host: str | None
    # What the trial may choose on it (capabilities, not the class, decide):
    # server.processes splits the servers into JVMs (else the layout decides: one per host),
    splits_servers: bool
    # and clients.processes may run the clients inside a server JVM.
    in_server_clients: bool

    def hosts(self) -> list[Host]: ...

    def describe(self) -> dict: ...

    def topology(self, doc: dict, servers_per_dc: int) -> dict:
        """The topology the servers run with: the experiment's, with their addresses."""

    def servers(self, dcs: list[str], servers_per_dc: int, processes: str = "per_dc") -> list["ServerSlot"]:
        """Where each server process runs; ``processes`` (per_host, per_dc, per_server) is
        the split where the layout leaves a choice (locally)."""

    def clients(self, dc: str) -> list["ClientSlot"]: ...

    def pingers(self, dcs: list[str]) -> list["Pinger"]: ...

    def close(self) -> None: ...


ALL_DCS = "*"  # the dc of a server slot that runs every datacenter's servers (per_host)


@dataclass(frozen=True)
class ServerSlot:
    host: Host
    dc: str              # or ALL_DCS
    name: str            # process name, e.g. servers, server-VA or server-VA-1
    select: tuple        # which servers the JVM runs: ("--dc", "VA") or ("--server", "VA:1")


@dataclass(frozen=True)
class ClientSlot:
    host: Host
    dc: str
    name: str            # process name, e.g. client-VA or client-VA-1
    index: int           # among the datacenter's client slots
    count: int           # client slots of the datacenter (experiment.client_shares splits the load)


@dataclass(frozen=True)
class Pinger:
    host: Host
    from_dc: str | None  # None: one process measures every pair (embedded emulation)


def client_processes(dep: Deployment, dcs: list[str]) -> dict[str, int]:
    """How many YCSB client processes each datacenter runs (its client slots)."""
    return {dc: len(dep.clients(dc)) for dc in dcs}


from .local import LocalDeployment, local  # noqa: E402  (they use the slots above)
from .remote import RemoteDeployment, check_shape  # noqa: E402

__all__ = ["ALL_DCS", "ClientSlot", "Deployment", "LocalDeployment", "Pinger", "RemoteDeployment", "ServerSlot",
           "check_shape", "client_processes", "local"]
