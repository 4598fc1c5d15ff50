"""The servers phase: how the servers fall into JVMs (server.processes, clients.processes
resolved for this deployment), starting them on their hosts and waiting until they listen;
and the stop phase at the end."""
from __future__ import annotations

import collections

from ..deploy import ALL_DCS, client_processes
from ..errors import ConfigError, RunFailed
from ..spec.fields import server_jvm_args
from ..spec.trial import SPEC_FILE
from .diagnose import tail
from .faults import FaultInjector
from .jvm import java, jvm_props
from .load import loader_dcs
from .procs import start, stop, wait_for_line
from .state import Running


def start_servers(run: Running) -> None:
    t, cfg, dep = run.t, run.cfg, run.dep
    srv, cl = cfg["server"], cfg["clients"]
    run.progress.update(system=t.system, point=t.point, trial=t.trial, phase="starting servers",
                        elapsed=0, expected=None, ops_per_s=None)
    listen = ["--listen-host", dep.listen_host] if dep.listen_host else []
    split = server_processes(cfg) if dep.splits_servers else "per_server"
    run.slots = dep.servers(run.dcs, run.doc["servers_per_dc"], split)
    # Clusters run one JVM per server host whatever server.processes says.
    t.server_processes = split if dep.splits_servers else remote_split(run.slots)
    t.server_jvm_args = server_jvm_args(cfg, t.server_processes)
    t.client_split = client_processes_split(cfg, dep.in_server_clients, t.server_processes)
    t.own_client_dcs = own_client_dcs(cfg, t.client_split, run.dcs)
    hosted = dict.fromkeys(run.slots, 0)  # the client processes each JVM runs inside it
    for dc, n in client_processes(dep, run.dcs).items():
        if (jvm := run.client_slot(dc)) is not None:
            hosted[jvm] += n
    # a local run's loaders run inside their datacenter's server JVM (Running.loader_slot)
    loading = collections.Counter(run.loader_slot(dc) for dc in loader_dcs(t, run.dcs))
    for s in run.slots:
        heap = srv["heap_mb"] * (len(run.dcs) if s.dc == ALL_DCS else 1)
        heap += cl["heap_mb"] * max(hosted[s], loading[s])  # the loaders finish before the clients begin
        run.servers.append(start(t, run.stack, s.host, s.name, java(
            s.host, heap,
            # the system, its topology and every shared parameter: the trial's spec
            "serve", "--spec", s.host.path(f"{t.rel}/{SPEC_FILE}"),
            *(["--clients-dir", s.host.path(run.clients_dir_rel(s))] if hosted[s] or loading[s] else []),
            *s.select, *listen, "--stats-out", s.host.path(f"{t.rel}/servers/stats-{s.name}.json"),
            "--metrics-log", s.host.path(f"{t.rel}/servers/{s.name}.hlog"), props=jvm_props(s.host, t),
            jvm_args=t.server_jvm_args)))
    for f in cfg["faults"]:
        if f["kind"] in ("kill", "pause"):
            FaultInjector.targets(f, list(zip(run.slots, run.servers)))  # a bad target fails now
    wait_for_line(run.servers, [], "ready:", 120, "servers")


def stop_servers(run: Running) -> None:
    """Stops every server by pid; one that exited with an error (and was not a fault's kill)
    fails the trial."""
    run.progress.update(phase="stopping", elapsed=0, expected=None, ops_per_s=None)
    for p in run.servers:
        stop(run.t, p)
    killed = run.t.faults.killed if run.t.faults is not None else set()
    bad = [p for p in run.servers if p.returncode not in (0, 143, -15) and p.name not in killed]
    if bad:
        raise RunFailed(f"{bad[0].name} {bad[0].ended()}: {tail(bad[0])}")


def check_process_split(dep, cfg: dict, dcs: list[str], servers_per_dc: int) -> None:
    """What start_servers refuses of a point before it starts a process, checked without
    starting one (validate): clients inside a server JVM that is not the only one, and a
    kill or pause whose target does not run in a process of its own."""
    split = server_processes(cfg) if dep.splits_servers else "per_server"  # clusters: one JVM per server host
    client_processes_split(cfg, dep.in_server_clients, split)
    if not dep.splits_servers:
        return
    slots = [(s, None) for s in dep.servers(dcs, servers_per_dc, split)]
    for i, f in enumerate(cfg["faults"]):
        if f["kind"] in ("kill", "pause"):
            try:
                FaultInjector.targets(f, slots)
            except ConfigError as e:  # which fault
                raise ConfigError(e.field.replace("faults.", f"faults[{i}]."), e.problem) from None


def server_processes(cfg: dict) -> str:
    """server.processes with auto resolved: one JVM for every server of the host, unless a
    fault kills or pauses servers, which needs their datacenter (or server) in a JVM of its own."""
    mode = cfg["server"]["processes"]
    if mode != "auto":
        return mode
    return "per_dc" if any(f["kind"] in ("kill", "pause") for f in cfg["faults"]) else "per_host"


def remote_split(slots: list) -> str:
    """How a cluster's server JVMs fall on its machines: "per_host" when no machine runs
    more of them than it has processors (a cloud or Emulab cluster, one per machine: C2 and
    ZGC, as for a local run's one JVM), "per_server" when one does (the local SSH test
    hosts: three server JVMs on each of four hosts that share this machine's two cores spent
    more CPU in C2's compilers than the servers did, and the emulation went late by 50-150
    ms), which takes the several-JVM defaults (C1) as a local per_server run does."""
    machines: dict[int, list] = {}
    for s in slots:
        machines.setdefault(id(s.host), []).append(s.host)
    return "per_host" if all(len(on) <= on[0].cores() for on in machines.values()) else "per_server"


def client_processes_split(cfg: dict, in_server_possible: bool, server_split: str) -> str:
    """clients.processes with auto resolved: "in_server" (clients inside the one server JVM of
    their machine or, with a JVM per datacenter, their datacenter's; own_client_dcs names the
    exceptions) where the deployment allows it, else "own"."""
    mode = cfg["clients"]["processes"]
    possible = in_server_possible and server_split == "per_host"
    if mode == "in_server" and not possible:
        raise ConfigError("clients.processes", "in_server needs a local run with one server JVM (server.processes: "
                          f"per_host or auto without kill/pause faults), not {server_split}; use own or auto")
    if mode != "auto":
        return mode
    return "in_server" if in_server_possible and server_split in ("per_host", "per_dc") else "own"


def own_client_dcs(cfg: dict, client_split: str, dcs: list[str]) -> list[str]:
    """The datacenters whose clients run in JVMs of their own: all with "own"; else those a
    kill or pause hits, whose clients must outlive their servers (a kill's redirected
    clients go on elsewhere; a paused datacenter's clients wait on calls, not frozen)."""
    if client_split == "own":
        return list(dcs)
    hit = {f["dc"] if "dc" in f else f["server"].split(":")[0] for f in cfg["faults"] if f["kind"] in ("kill", "pause")}
    return [dc for dc in dcs if dc in hit]
