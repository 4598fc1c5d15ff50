"""Faults injected while a trial runs, and the unavailability they cause.

An experiment's ``faults`` (see experiment.FAULT_KINDS) are scheduled from the clients'
common start: ``kill`` sends SIGKILL to the server processes of a datacenter or of one
server (for the rest of the trial: servers keep their state in memory, so a restarted one
would come back empty); ``pause`` sends SIGSTOP and, ``for_s`` later, SIGCONT; ``partition``
and ``delay`` change the links of every process through the faults file each transport
watches (system/core FaultFile). Every start and end goes into the trial's
``timeline.jsonl`` beside the operations' own times in the histories.

A ``kill`` of a datacenter with ``clients: redirect`` is the replica-placement paper's
failure (§VIII-E): the datacenter's storage stops, its application servers go on and send
their requests "to the closest DC". Its clients then use the servers of the nearest
surviving datacenter by configured RTT (``placement.redirect_dc``), through a ``redirects``
entry of the faults file (Java K2BenchDB.serving); with ``clients: fail`` (the default) they
keep asking their own, dead, servers.
"""
from __future__ import annotations

import json
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..deploy import ALL_DCS
from ..errors import ConfigError

FAULTS_FILE = "faults.json"  # per host, relative to the trial directory


@dataclass
class _Event:
    at_ms: float
    fault: dict
    phase: str  # start | end


@dataclass
class FaultInjector:
    faults: list[dict]
    t0_ms: float
    servers: list  # (ServerSlot, Proc)
    hosts: list
    faults_rel: str
    timeline: Path
    topology: object = None  # placement.Topology: where redirected clients go
    killed: set = field(default_factory=set)
    paused: set = field(default_factory=set)
    _events: list = field(default_factory=list)
    _links: list = field(default_factory=list)
    _partitions: list = field(default_factory=list)
    _redirected: list = field(default_factory=list)  # datacenters whose clients are redirected
    _down: set = field(default_factory=set)          # datacenters killed whole

    def __post_init__(self):
        for f in self.faults:
            start = self.t0_ms + 1000 * f["at_s"]
            self._events.append(_Event(start, f, "start"))
            if "for_s" in f:
                self._events.append(_Event(start + 1000 * f["for_s"], f, "end"))
        self._events.sort(key=lambda e: e.at_ms)

    @staticmethod
    def targets(fault: dict, servers: list) -> list:
        """The (slot, proc) pairs a kill or pause hits; a ConfigError if none."""
        if any(s.dc == ALL_DCS for s, _ in servers):
            raise ConfigError("server.processes", "per_host runs every datacenter's servers in one JVM, so a "
                              f"{fault['kind']} cannot hit one datacenter; set per_dc, per_server or auto")
        if "dc" in fault:
            hit = [(s, p) for s, p in servers if s.dc == fault["dc"]]
        else:
            hit = [(s, p) for s, p in servers if s.select == ("--server", fault["server"])]
            if not hit:
                raise ConfigError("faults.server", f"{fault['server']} does not run in a process of its own; "
                                  "set server.processes: per_server (or target its whole dc)")
        if not hit:
            raise ConfigError("faults.dc", f"no server process runs datacenter {fault.get('dc')}")
        return hit

    def poll(self, now_ms: float | None = None) -> None:
        """Carries out every event that is due (by now, or by ``now_ms``)."""
        now = time.time() * 1000 if now_ms is None else now_ms
        while self._events and self._events[0].at_ms <= now:
            e = self._events.pop(0)
            self._apply(e)

    def _record(self, e: _Event, note: str, processes: list[str] | None = None) -> None:
        line = {"t_ms": time.time() * 1000, "t_s": round(time.time() - self.t0_ms / 1000, 3),
                "event": f"fault-{e.phase}", **e.fault, "note": note}
        if processes is not None:  # the signalled server processes, for readers (paused_ms)
            line["processes"] = processes
        with open(self.timeline, "a") as out:
            out.write(json.dumps(line) + "\n")

    def _apply(self, e: _Event) -> None:
        f = e.fault
        if f["kind"] in ("kill", "pause"):
            sig = {("kill", "start"): signal.SIGKILL, ("pause", "start"): signal.SIGSTOP,
                   ("pause", "end"): signal.SIGCONT}[(f["kind"], e.phase)]
            hit = self.targets(f, self.servers)
            for _, p in hit:
                p.handle_host.signal(p, sig)
                if sig == signal.SIGKILL:
                    self.killed.add(p.name)
                elif sig == signal.SIGSTOP:
                    self.paused.add(p.name)
                else:
                    self.paused.discard(p.name)
            note = f"{signal.Signals(sig).name} to {', '.join(p.name for _, p in hit)}"
            if sig == signal.SIGKILL and "dc" in f:
                self._down.add(f["dc"])
                if f.get("clients") == "redirect":
                    self._redirected.append(f["dc"])
                if self._redirected:  # new ones, and old ones whose target just died
                    self._write_network()
                    note += "; clients " + ", ".join(f"{a} -> {b}" for a, b in self.redirects().items())
            self._record(e, note, [p.name for _, p in hit])
            return
        a, b = f["dcs"]
        if f["kind"] == "partition":
            entry = {"a": a, "b": b, "until_ms": round(self.t0_ms + 1000 * (f["at_s"] + f["for_s"])),
                     "mode": f["mode"]}
            target = self._partitions
        else:
            entry = [{"from": a, "to": b, "extra_ms": f["extra_ms"]}, {"from": b, "to": a, "extra_ms": f["extra_ms"]}]
            target = self._links
        if e.phase == "start":
            target.append(entry)
        else:
            target.remove(entry)
        self._write_network()
        self._record(e, "links of every process")

    def redirects(self) -> dict[str, str]:
        """Each redirected datacenter's clients' datacenter now: the nearest one still up."""
        from ..placement import redirect_dc
        if not self._redirected:
            return {}
        if self.topology is None:
            raise ConfigError("faults.clients", "redirect needs the trial's topology")
        dcs = self.topology.dcs
        down = {dcs.index(x) for x in self._down}
        return {a: dcs[redirect_dc(self.topology.rtt, dcs.index(a), down)] for a in self._redirected}

    def _write_network(self) -> None:
        doc = {"links": [x for pair in self._links for x in pair], "partitions": list(self._partitions)}
        if self._redirected:
            doc["redirects"] = [{"from": a, "to": b} for a, b in self.redirects().items()]
        for h in self.hosts:
            h.put_text(self.faults_rel, json.dumps(doc) + "\n")

    def close(self) -> None:
        """Resumes paused processes (so they can be stopped) and heals the network."""
        for s, p in self.servers:
            if p.name in self.paused:
                p.handle_host.signal(p, signal.SIGCONT)
        self.paused.clear()
        if self._links or self._partitions or self._redirected:
            self._links.clear()
            self._partitions.clear()
            self._redirected.clear()
            self._write_network()


def paused_ms(timeline: Path) -> dict[str, list[tuple[float, float]]]:
    """Each paused server process's pauses (epoch ms), from a trial's timeline: log name
    (``servers/<process>``) -> (SIGSTOP, SIGCONT) times; a pause the trial ended in lasts to
    infinity. Runs recorded before the timeline had ``processes`` name them in the note."""
    out: dict[str, list[list[float]]] = {}
    if not Path(timeline).exists():
        return {}
    for line in Path(timeline).read_text().splitlines():
        e = json.loads(line)
        if e.get("kind") != "pause":
            continue
        names = e.get("processes")
        if names is None:
            if " to " not in e.get("note", ""):
                continue
            names = e["note"].split(" to ", 1)[1].split("; ", 1)[0].split(", ")
        for name in names:
            spans = out.setdefault(f"servers/{name}", [])
            if e["event"] == "fault-start":
                spans.append([e["t_ms"], float("inf")])
            elif spans and spans[-1][1] == float("inf"):
                spans[-1][1] = e["t_ms"]
    return {k: [tuple(x) for x in v] for k, v in out.items()}


def unavailability(ops_by_dc: dict[str, list[dict]], t0_ms: float, gap_ms: float = 2000) -> dict:
    """Failed operations per datacenter and the windows in which they failed: failures less
    than ``gap_ms`` apart belong to one window (times in seconds since the clients' start)."""
    out = {"failed_ops": 0, "windows": []}
    for dc, ops in sorted(ops_by_dc.items()):
        failed = sorted((o for o in ops if not o.get("ok", True) and o.get("op") != "load"), key=lambda o: o["t0"])
        out["failed_ops"] += len(failed)
        window = None
        for o in failed:
            if window and o["t0"] - window["_end"] <= gap_ms:
                window["_end"] = max(window["_end"], o["t1"])
                window["failed_ops"] += 1
                continue
            if window:
                out["windows"].append(window)
            window = {"dc": dc, "_start": o["t0"], "_end": o["t1"], "failed_ops": 1}
        if window:
            out["windows"].append(window)
    for w in out["windows"]:
        w["from_s"] = round((w.pop("_start") - t0_ms) / 1000, 3)
        w["to_s"] = round((w.pop("_end") - t0_ms) / 1000, 3)
    out["windows"].sort(key=lambda w: (w["from_s"], w["dc"]))
    return out


def timeline(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


_NOT_IDENTITY = ("t_ms", "t_s", "event", "note", "processes")  # what differs between a fault's start and end


def fault_windows(path: Path) -> list[tuple[float, float]]:
    """When each fault of a trial's timeline was in force (epoch ms): from its start event to
    its end event, or for good (a kill, or a trial that ended first)."""
    events = timeline(path)
    out = []
    for n, e in enumerate(events):
        if e["event"] != "fault-start":
            continue
        ident = {k: v for k, v in e.items() if k not in _NOT_IDENTITY}
        end = next((x["t_ms"] for x in events[n + 1:] if x["event"] == "fault-end"
                    and {k: v for k, v in x.items() if k not in _NOT_IDENTITY} == ident),
                   float("inf"))
        out.append((e["t_ms"], end))
    return out
