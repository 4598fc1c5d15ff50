"""One trial: what it is (system, point, configuration, directory) and what its phases hand
each other while it runs."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..deploy import ALL_DCS, Deployment, ServerSlot
from ..deploy.hosts import Host, InServerHost, Proc

if TYPE_CHECKING:
    from ..env import Env
    from .faults import FaultInjector


@dataclass
class Trial:
    system: str
    point: str
    trial: int
    cfg: dict
    dir: Path
    rel: str  # the trial directory relative to the run directory (how hosts name its files)
    procs: list[Proc] = field(default_factory=list)
    faults: "FaultInjector | None" = None
    cpu: dict | None = None  # CPU per thread category over the measurement window (local runs)
    server_processes: str | None = None  # server.processes as run (auto resolved)
    server_jvm_args: list | None = None
    client_split: str | None = None  # clients.processes as run (auto resolved)
    own_client_dcs: list[str] = field(default_factory=list)  # datacenters whose clients have JVMs of their own
    placement: dict | None = None  # placement_of(the resolved topology)


@dataclass
class Running:
    """A trial while its processes run: the phases (k2bench/trial/*.py) read what the earlier
    ones left here. Every process started is stopped when ``stack`` closes."""
    env: Env
    progress: Any
    t: Trial
    manifest: dict  # the run's manifest, updated as the trial goes (the RTT matrix, start skew)
    doc: dict  # the trial's topology (topology_doc: the experiment's file and overrides)
    topo_rel: str  # that topology on every host, relative to the run directory
    stack: contextlib.ExitStack
    slots: list[ServerSlot] = field(default_factory=list)
    servers: list[Proc] = field(default_factory=list)
    clients: list[Proc] = field(default_factory=list)
    client_hosts: list[Host] = field(default_factory=list)
    spreads: dict[str, float] = field(default_factory=dict)  # client name -> its pacing spread (s)
    t0: float | None = None  # the clients' common start (epoch s)
    start_info: dict | None = None  # how it was written to the client hosts (start.common_start)
    skew: dict | None = None  # each client's first operation against it, at the end (start.check_skew)
    client_warnings: list[str] = field(default_factory=list)  # thread deaths that did not cut the load

    @property
    def cfg(self) -> dict:
        return self.t.cfg

    @property
    def dep(self) -> Deployment:
        return self.env.deployment

    @property
    def dcs(self) -> list[str]:
        return self.doc["datacenters"]

    def clients_dir_rel(self, slot: ServerSlot) -> str:
        """Where the server JVM of ``slot`` finds the clients and loaders it runs inside it
        (the launcher's ``--clients-dir``)."""
        return f"{self.t.rel}/clients/" + ("in-server" if slot.dc == ALL_DCS else f"in-{slot.name}")

    def _jvm_of(self, dc: str) -> ServerSlot:
        """The server JVM of ``dc``: the machine's one, the datacenter's, or its first server's."""
        return next(s for s in self.slots if s.dc in (dc, ALL_DCS))

    def client_slot(self, dc: str) -> ServerSlot | None:
        """The server JVM that runs ``dc``'s clients inside it (clients.processes as resolved:
        the machine's one, or the datacenter's), or None: JVMs of their own."""
        if self.t.client_split != "in_server" or dc in self.t.own_client_dcs:
            return None
        return self._jvm_of(dc)

    def inside(self, host: Host, jvm: ServerSlot) -> InServerHost:
        """``host`` with the processes started on it run inside the server JVM of ``jvm``."""
        return InServerHost(host, self.servers[self.slots.index(jvm)], self.clients_dir_rel(jvm))

    def loader_slot(self, dc: str) -> ServerSlot | None:
        """The server JVM that runs ``dc``'s loader inside it: its datacenter's (the first
        one's, per_server) on a local run, where starting a JVM for a few seconds of loading
        cost more than the load; None on a cluster, where each loader has its own."""
        return self._jvm_of(dc) if self.dep.in_server_clients else None
