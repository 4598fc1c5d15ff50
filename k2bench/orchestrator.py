"""Runs an experiment: for every sweep point, system and trial, start the server JVM(s)
(server.processes: one for the machine by default), wait until they listen, measure the RTT matrix, load the keys, run the
clients through warm-up, measurement and cool-down, stop everything by pid, and derive the
summary from the clients' raw logs. Writes the run directory (docs/running.md, "The run directory").

Teardown is guaranteed (ExitStack): on Ctrl-C, SIGTERM, a crashed process or any error,
every started process is stopped, the manifest says how the run ended, and the caller
exits non-zero.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import functools
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import rundir
from .errors import ConfigError, RunFailed
from . import checker, cpu
from .experiment import (check_pacing, server_jvm_args, client_shares, dist_min, pacing_interval_ms,
                         IDS_PER_PROCESS, axis_get, for_system, points, system_points)
from .deploy import ALL_DCS, Deployment, LocalDeployment
from .faults import FAULTS_FILE, FaultInjector, fault_windows, paused_ms, unavailability
from .hosts import Host, InServerHost, LocalHost, Proc
from .ssh import LeaseKeeper
from .spec.trial import SPEC_FILE, TrialSpec
from .systems import Systems
from .summary import replication_pending_at_end, ring_invalidations, server_totals_hit_rate, summarize

CLIENT_ID_BASE = 4096
# Printed by every client process once its threads are connected (TxnWorkload.READY_LINE).
CLIENTS_READY = "k2bench: clients ready"
CLIENT_START_TIMEOUT_S = 300
CLIENT_EARLY_EXIT_S = 5  # a client that stops this long before the trial's end failed (clock skew below it)
STATUS_RE = re.compile(r"(\d+) sec: (\d+) operations; ([\d.]+) current ops/sec")
# Printed by every client process when it issues its first operation after the start
# barrier (TxnWorkload.FIRST_OP_LINE), with its wall time in epoch ms.
FIRST_OP_RE = re.compile(r"^k2bench: first operation at (\d+)\s*$", re.M)
# For tests of the start skew check only: "<host name>=<seconds>" delays the write of the
# start file to that host, as a slow host would.
TEST_START_DELAY_ENV = "K2BENCH_TESTING_START_FILE_DELAY"
FETCH_TIMEOUT_S = 300  # per host and trial


@dataclass
class Env:
    """Where things are: the repository, the local jar and Java binary (to check inputs),
    and the deployment whose hosts run the processes."""
    repo: Path
    jar: Path
    deployment: Deployment
    java: str = "java"
    # Topologies the launcher resolved, by their document: validation and the run ask once.
    topologies: dict = field(default_factory=dict, repr=False)
    # Placement tables topology.place computed (placed_table), by their inputs' hash.
    placed: dict = field(default_factory=dict, repr=False)

    @property
    def place_dir(self) -> Path:
        return self.repo / "runs" / ".placements"

    @property
    def workloads(self) -> Path:
        return self.repo / "workloads"

    def launcher(self, *args: str) -> list[str]:
        """A launcher command on this machine (input checks, the echo benchmark)."""
        return [self.java, "-jar", str(self.jar), *args]

    def check_output(self, *args: str) -> str:
        """Runs a short launcher command; a ConfigError carries its one-line complaint."""
        if not self.jar.exists():
            raise ConfigError("jar", f"{self.jar} is missing; run `make build`")
        p = subprocess.run(self.launcher(*args), capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            line = (p.stderr.strip().splitlines() or ["failed"])[-1]
            raise ConfigError(line.split(": ", 2)[1] if line.count(": ") >= 2 else "launcher",
                              line.split(": ", 2)[-1])
        return p.stdout

    def systems(self) -> Systems:
        return self.system_info

    @functools.cached_property
    def system_info(self) -> Systems:
        """The bundled systems by name, each with its descriptor (k2bench/systems.py)."""
        return Systems.from_json(json.loads(self.check_output("systems", "--json")))


# Who waits when processes share the cores (docs/architecture.md has the whole policy): the
# WAN emulation's dispatchers and the JVMs' own threads at nice 0 (the network takes no CPU
# from anyone), server protocol threads (Java priority 4) at nice 2, clients (priority 1, or
# every thread of a client JVM) at nice 4. Only lowering is used: it needs no privilege.
CLIENT_NICE, SERVER_NICE = 4, 2
PRIORITY_JVM_ARGS = ("-XX:ThreadPriorityPolicy=1", f"-XX:JavaPriority1_To_OSPriority={CLIENT_NICE}",
                     *(f"-XX:JavaPriority{p}_To_OSPriority={SERVER_NICE if p == 4 else 0}" for p in range(2, 11)))
CLIENT_JVM_ARGS = (*PRIORITY_JVM_ARGS, f"-XX:JavaPriority5_To_OSPriority={CLIENT_NICE}")


def _jvm(heap_mb: int, props: dict | None, jvm_args: list[str], priorities=PRIORITY_JVM_ARGS) -> list[str]:
    return ["java", *priorities, *jvm_args, f"-Xmx{heap_mb}m", *(f"-D{k}={v}" for k, v in (props or {}).items())]


def java(host: Host, heap_mb: int, *args: str, props: dict | None = None,
         jvm_args: list[str]) -> list[str]:
    """The launcher (k2bench-server) on a host, with JVM options and system properties."""
    return [*_jvm(heap_mb, props, jvm_args), "-jar", host.jar(), *args]


def ycsb(host: Host, heap_mb: int, *args: str, props: dict | None = None,
         jvm_args: list[str]) -> list[str]:
    """YCSB's client, with the bundled binding and workload, on a host: every thread at
    the client nice (CLIENT_JVM_ARGS)."""
    return [*_jvm(heap_mb, props, jvm_args, CLIENT_JVM_ARGS), "-cp", host.jar(), "site.ycsb.Client", *args]


def jvm_props(host: Host, t: "Trial") -> dict:
    """System properties every process of a trial gets: the faults file its transport
    watches, and a test-only mutant."""
    props = {"k2bench.faults_file": host.path(f"{t.rel}/{FAULTS_FILE}")}
    if t.cfg["testing"]["mutant"]:
        props["k2bench.mutant"] = t.cfg["testing"]["mutant"]
    return props


# ------------------------------------------------------------------ topology of a run

def topology_doc(env: Env, cfg: dict) -> dict:
    """The experiment's topology: its file with the experiment's overrides applied."""
    t = cfg["topology"]
    path = env.workloads / t["file"]
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError("topology.file", f"{path} does not exist") from None
    if not isinstance(doc, dict):
        raise ConfigError("topology.file", f"{path} is not a topology mapping")
    for key in ("servers_per_dc", "replication_factor", "intra_dc_delay_ms", "jitter_ms", "placement", "partitions"):
        if t[key] is not None:
            doc[key] = t[key]
    doc["rtt_scale"] = float(doc.get("rtt_scale", 1.0)) * t["rtt_scale"]
    if t["placement"] is not None and t["placement"] != "partitions":
        doc.pop("partitions", None)  # the file's partition count applies only to partitions
    if t["placement"] is not None and t["placement"] != "table":
        doc.pop("placement_table", None)
    if t.get("place", "none") != "none":
        if t["placement"] not in (None, "table") or t.get("placement_table"):
            raise ConfigError("topology.place", "computes the placement table itself; remove topology.placement "
                              "and topology.placement_table, or set place: none")
        doc["placement"] = "table"
        doc.pop("partitions", None)
        doc.pop("rings", None)
        doc["placement_table"] = str(placed_table(env, cfg, doc))
    elif t.get("placement_table"):  # the experiment's table: relative to the workloads directory
        doc["placement_table"] = str((env.workloads / t["placement_table"]).resolve())
    elif isinstance(doc.get("placement_table"), str):  # the topology file's: relative to that file
        doc["placement_table"] = str((path.parent / doc["placement_table"]).resolve())
    return doc


TABLE_FILE = "placement.csv"  # a trial's copy of its placement table, beside its topology.yaml
PREDICTIONS_FILE = "placement-predictions.json"  # beside it: what the model predicts for it


def placed_table(env: Env, cfg: dict, doc: dict) -> Path:
    """The table ``topology.place`` computes for a point (k2bench.placement), once per
    distinct input: kept in ``runs/.placements`` by a hash of everything it depends on (the
    topology, the workload's key choice, the demand, the model and bound, and the optimiser's
    own code and solver version), so a run, its resume and its validation solve once."""
    from . import placement
    t, w = cfg["topology"], cfg["workload"]
    inputs = {"topology": {k: doc.get(k) for k in ("datacenters", "rtt_ms", "rtt_scale", "replication_factor")},
              "model": t["place"], "balance": t["place_balance"], "demand": t["place_demand"],
              "objective": t["place_objective"], "cache_keys": placement.place_cache_keys(cfg),
              "cache_window": placement.place_cache_window(cfg),
              "keys": w["keys"], "zipf": w["zipf"], "locality": w["locality"], "write_fraction": w["write_fraction"],
              "version": placement.MODEL_VERSION, "code": placement.code_fingerprint()}
    if t["place_demand"] != "expected":
        path = env.workloads / t["place_demand"]
        if not path.exists():
            raise ConfigError("topology.place_demand", f"{path} does not exist; give expected or a parquet "
                              "from k2bench demand RUN")
        inputs["demand"] = hashlib.sha256(path.read_bytes()).hexdigest()
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]
    out = env.place_dir / f"{t['place']}-{key}.csv"
    if key not in env.placed and not out.exists():
        env.place_dir.mkdir(parents=True, exist_ok=True)
        placement.place_for_experiment(doc, cfg, out, env.workloads)
    env.placed[key] = out
    return out


def table_on_hosts(doc: dict) -> tuple[dict, str | None]:
    """The topology as hosts get it, and the table's text to put beside it (None without a
    table): hosts do not share the controller's paths, so the table travels with the trial."""
    if not doc.get("placement_table"):
        return doc, None
    text = Path(doc["placement_table"]).read_text()
    return {**doc, "placement_table": TABLE_FILE}, text


def with_ports(doc: dict, ports: list[int]) -> dict:
    """The topology with every server on 127.0.0.1 at the given ports (local runs)."""
    doc = copy.deepcopy(doc)
    dcs, s = doc.get("datacenters", []), doc.get("servers_per_dc", 0)
    if not isinstance(dcs, list) or not isinstance(s, int) or len(ports) < len(dcs) * s:
        return doc  # malformed: the launcher's check names the field
    it = iter(ports)
    doc["servers"] = {dc: [f"127.0.0.1:{next(it)}" for _ in range(s)] for dc in dcs}
    for k in ("base_port", "host"):
        doc.pop(k, None)
    return doc


def check_topology(env: Env, doc: dict, source: str = "the topology") -> dict:
    """Validates a topology with the servers' own loader; returns it resolved. The loader
    reads a temporary copy (the file with the experiment's overrides); a complaint names
    ``source``, the user's file, instead of that copy."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(doc, f)
        tmp = Path(f.name)
    try:
        return json.loads(env.check_output("topology", str(tmp)))
    except ConfigError as e:
        mine = lambda text: text.replace(str(tmp), source).replace(tmp.name, source)  # noqa: E731
        field, problem = mine(e.field), mine(e.problem)
        if field == source and ": " in problem:  # the loader's "<file>: <field>: <problem>"
            field, problem = problem.split(": ", 1)
        raise ConfigError(f"topology {source} ({field})", problem) from None
    finally:
        tmp.unlink()


def resolve_topology(env: Env, cfg: dict) -> dict:
    """A point's topology as the servers' own loader resolves it (``check_topology``, with
    placeholder ports), once per distinct topology and Env (a launcher JVM each)."""
    doc = topology_doc(env, cfg)
    key = json.dumps(doc, sort_keys=True, default=str)
    if key not in env.topologies:
        n = len(doc.get("datacenters") or []) * int(doc.get("servers_per_dc") or 0)
        env.topologies[key] = check_topology(env, with_ports(doc, list(range(20000, 20000 + n))),
                                             cfg["topology"]["file"])
    return env.topologies[key]


def placement_of(resolved: dict) -> dict:
    """What a trial records of its placement (manifest ``trials[].placement``)."""
    out = {k: resolved[k] for k in ("placement", "partitions", "first_replica_dcs")}
    if "rings" in resolved:
        out["rings"] = resolved["rings"]
    if "placement_table" in resolved:  # file, sha256, keys, replica_sets, keys_per_dc
        out["table"] = resolved["placement_table"]
    return out


def placements(env: Env, exp: dict) -> dict[tuple[str, str], dict]:
    """(point id, system) -> the placement its trials record: each system's own topology
    (``per_system``) at each point (a sweep may change it)."""
    return {(pid, system): placement_of(resolve_topology(env, cfg)) for pid, system, cfg in system_points(exp)}


def check_system_options(env: Env, cfg: dict) -> None:
    """A point's ``server.options`` against what each system declares (``systems --json``):
    a system that is not bundled, an option it does not have, or a value of the wrong type
    or out of its range is named with the fix. The launcher checks the same again when it
    starts."""
    for system, opts in cfg["server"]["options"].items():
        field = f"server.options.{system}"
        if system not in env.system_info:
            raise ConfigError(field, f"no system {system!r}; bundled: {', '.join(sorted(env.system_info))}")
        declared = {o["name"]: o for o in env.system_info[system].options}
        for name, value in opts.items():
            o = declared.get(name)
            if o is None:
                have = ", ".join(sorted(declared)) if declared else "none"
                raise ConfigError(f"{field}.{name}", f"{system} has no such option; its options: {have}")
            if o["type"] == "boolean":
                if not isinstance(value, bool):
                    raise ConfigError(f"{field}.{name}", f"must be true or false, got {value!r}")
                continue
            if o["type"] == "choice":
                if value not in o["choices"]:
                    raise ConfigError(f"{field}.{name}", f"must be one of {', '.join(o['choices'])}, got {value!r}")
                continue
            if isinstance(value, (bool, str)) or not math.isfinite(value) or (o["type"] == "integer" and value != int(value)):
                raise ConfigError(f"{field}.{name}", f"must be {'a whole number' if o['type'] == 'integer' else 'a number'}, "
                                  f"got {value!r}")
            if not float(o["min"]) <= float(value) <= float(o["max"]):
                raise ConfigError(f"{field}.{name}", f"must be in [{o['min']}, {o['max']}], got {value!r}")


def validate(env: Env, exp: dict) -> dict:
    """Everything that can be checked before a process starts; returns the first point's
    resolved topology (of the first system). Every point's topology is checked (a sweep may
    change it), and every system against its placement and workload, as it runs them (its
    ``per_system`` overrides)."""
    first = None
    datacenters = None
    for _, point in points(exp):
        by_system = {system: for_system(point, system) for system in exp["systems"]}

        def named(systems: list[str], section: str, field: str) -> str:
            """The field a problem of these systems' configuration names: the per_system
            override of the first that has one, else the experiment's."""
            mine = [s for s in systems if field in exp.get("per_system", {}).get(s, {}).get(section, {})]
            return f"per_system.{mine[0]}.{section}.{field}" if mine else f"{section}.{field}"

        def lacking(wanted, claim: str) -> list[str]:
            return [s for s, c in by_system.items() if wanted(c) and not getattr(env.system_info.info(s), claim)]

        def they(systems: list[str], verb: str) -> str:
            return f"{', '.join(systems)} {verb if len(systems) > 1 else verb.replace('have', 'has')}"

        for cfg in by_system.values():
            check_system_options(env, cfg)  # per point: a sweep may change them
        no_rw = lacking(lambda c: c["workload"]["rw_fraction"] > 0, "read_write_transactions")
        if no_rw:
            raise ConfigError(named(no_rw, "workload", "rw_fraction"), f"{they(no_rw, 'have')} no read-write "
                              "transactions; set it to 0 or run systems that have them")
        for system, cfg in by_system.items():
            w = cfg["workload"]
            if w["locality"] > 0 and w["partitions_per_op"] > 0:
                raise ConfigError(named([system], "workload", "locality"), "per-datacenter hot sets do not combine "
                                  "with workload.partitions_per_op (the PaRiS key choice has its own locality, "
                                  "local_fraction); set one of them to 0")
            if w["rw_fraction"] > 0 and dist_min(w["keys_per_op"]) <= w["rw_writes"]:
                raise ConfigError(named([system], "workload", "rw_writes"), f"{w['rw_writes']} writes leave no read in a "
                                  f"read-write transaction of {dist_min(w['keys_per_op'])} keys; make it below "
                                  "workload.keys_per_op")
        no_wot = lacking(lambda c: (c["workload"]["write_fraction"] > 0 and c["workload"]["wot_fraction"] > 0
                                    and c["workload"]["rw_fraction"] < 1), "write_only_transactions")
        if no_wot:
            raise ConfigError(named(no_wot, "workload", "wot_fraction"), f"{they(no_wot, 'have')} no write-only "
                              "transactions; set it to 0 (writes are single writes) or run systems that have them "
                              "(per_system.<system>.workload sets it for one system)")
        drops = [i for i, f in enumerate(point["faults"]) if f.get("mode") == "drop"]
        lossless = lacking(lambda c: bool(drops), "message_loss")
        if lossless:
            raise ConfigError(f"faults[{drops[0]}].mode", f"{', '.join(lossless)} assume{'s' if len(lossless) == 1 else ''} "
                              "no message is lost (reliable FIFO channels, as their paper's model); use mode: hold "
                              "(messages delivered when the partition heals) or other systems")
        cached = env.system_info.where(dc_cache=True)
        for system, cfg in by_system.items():
            if cfg["topology"]["place_cache"] and not env.system_info.info(system).dc_cache:
                own_cache = "place_cache" in exp.get("per_system", {}).get(system, {}).get("topology", {})
                raise ConfigError(f"per_system.{system}.topology.place_cache" if own_cache else "topology.place_cache",
                                  f"{system} has no datacenter cache (only {', '.join(cached) or 'none'} "
                                  f"{'have' if len(cached) > 1 else 'has'}); set it for those alone: per_system: "
                                  f"{{{cached[0] if cached else '<system>'}: {{topology: {{place_cache: true}}}}}}")
            resolved = resolve_topology(env, cfg)
            first = first or resolved
            runs_on = env.system_info.info(system).placements
            own = "topology" in exp.get("per_system", {}).get(system, {})
            if resolved["placement"] not in runs_on:
                raise ConfigError(f"per_system.{system}.topology" if own else "systems",
                                  f"{system} does not run on placement: {resolved['placement']} "
                                  f"(topology {cfg['topology']['file']}; it runs on {', '.join(runs_on) or 'nothing'}); "
                                  "choose other systems or another placement (per_system.<system>.topology gives one "
                                  "system its own)")
            table = resolved.get("placement_table")
            if table and table["keys"] != cfg["workload"]["keys"]:
                raise ConfigError(named([system], "workload", "keys"),
                                  f"{cfg['workload']['keys']} keys, but the placement table {table['file']} places "
                                  f"{table['keys']}; make them equal (k2bench place --keys)")
            if datacenters is None:
                datacenters = resolved["datacenters"]
            elif resolved["datacenters"] != datacenters:
                raise ConfigError(f"per_system.{system}.topology" if own else "topology.file",
                                  f"{system}'s topology ({cfg['topology']['file']}) has datacenters "
                                  f"{', '.join(resolved['datacenters'])}, another system's "
                                  f"{', '.join(datacenters)}: the systems of a run share its datacenters and "
                                  "clients; give every topology the same datacenters")
            doc = topology_doc(env, cfg)
            if isinstance(doc.get("datacenters"), list) and isinstance(doc.get("servers_per_dc"), int):
                env.deployment.topology(doc, doc["servers_per_dc"])  # the inventory fits the topology
                check_fault_targets(cfg["faults"], doc["datacenters"], doc["servers_per_dc"])
                check_pacing(exp, cfg, client_processes(env.deployment, doc["datacenters"]))
    if not env.jar.exists():
        raise ConfigError("jar", f"{env.jar} is missing; run `make build`")
    return first


def client_processes(dep: Deployment, dcs: list[str]) -> dict[str, int]:
    """How many YCSB client processes each datacenter runs (its client slots)."""
    return {dc: len(dep.clients(dc)) for dc in dcs}


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


def client_processes_split(cfg: dict, local: bool, server_split: str) -> str:
    """clients.processes with auto resolved: "in_server" (every client inside the one server
    JVM of its machine) for a local run whose servers are per_host, else "own"."""
    mode = cfg["clients"]["processes"]
    if mode == "in_server" and not (local and server_split == "per_host"):
        raise ConfigError("clients.processes", "in_server needs a local run with one server JVM (server.processes: "
                          f"per_host or auto without kill/pause faults), not {server_split}; use own or auto")
    if mode != "auto":
        return mode
    return "in_server" if local and server_split == "per_host" else "own"


def check_fault_targets(faults: list[dict], dcs: list[str], servers_per_dc: int) -> None:
    """Every datacenter and server a fault names exists in the topology."""
    for i, f in enumerate(faults):
        names = [(f"faults[{i}].dcs", d) for d in f.get("dcs", [])]
        if "dc" in f:
            names.append((f"faults[{i}].dc", f["dc"]))
        if "server" in f:
            dc, _, shard = f["server"].partition(":")
            names.append((f"faults[{i}].server", dc))
            if not shard.isdigit() or int(shard) >= servers_per_dc:
                raise ConfigError(f"faults[{i}].server", f"{f['server']!r} is not DC:SHARD with a shard below "
                                  f"{servers_per_dc}")
        for field_, dc in names:
            if dc not in dcs:
                raise ConfigError(field_, f"unknown datacenter {dc!r}; datacenters: {', '.join(dcs)}")


# ------------------------------------------------------------------ one trial

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
    placement: dict | None = None  # placement_of(the resolved topology)


class Orchestrator:
    def __init__(self, env: Env, progress):
        self.env = env
        self.progress = progress

    # -------------------------------------------------------------- processes

    def _start(self, t: Trial, stack: contextlib.ExitStack, host: Host, name: str, argv: list[str]) -> Proc:
        p = host.start(name, argv, f"{t.rel}/logs/{name}.out", f"{t.rel}/logs/{name}.err")
        p.handle_host = host
        t.procs.append(p)
        rundir.write_json(t.dir / "processes" / f"{name}.json", p.record())  # pid known while it runs
        stack.callback(self._stop_quietly, t, p)
        return p

    def _stop(self, t: Trial, p: Proc) -> None:
        p.handle_host.stop(p)
        rundir.write_json(t.dir / "processes" / f"{p.name}.json", p.record())

    def _stop_quietly(self, t: Trial, p: Proc) -> None:
        """Teardown: a process that cannot be stopped (its host stopped answering) is noted in
        its record and left to its lease; the error that ended the trial stays the one reported."""
        try:
            self._stop(t, p)
        except RunFailed as e:
            rundir.write_json(t.dir / "processes" / f"{p.name}.json", p.record() | {"stop_failed": str(e)})

    def _check_alive(self, procs: list[Proc], t: Trial | None = None) -> None:
        for p in procs:
            if t is not None and t.faults is not None and p.name in t.faults.killed:
                continue  # killed on purpose (a fault)
            rc = p.handle_host.poll(p)
            if rc is not None:
                raise RunFailed(f"{p.name} exited with code {rc} unexpectedly: {tail(p)}")

    def _wait_for_line(self, procs: list[Proc], others: list[Proc], prefix: str, timeout_s: float,
                       what: str, failed=None) -> None:
        """Waits until every process of ``procs`` printed a line starting with ``prefix``;
        ``failed(p)``, if given, says why a pending one will never get there (or None)."""
        deadline = time.time() + timeout_s
        pending = list(procs)
        while pending:
            self._check_alive(pending + others)
            for p in pending if failed else []:
                if (why := failed(p)):
                    raise RunFailed(f"{p.name} failed before it was ready: {why}")
            pending = [p for p in pending if not any(
                ln.startswith(prefix) for ln in p.handle_host.read_text(p.stdout).splitlines())]
            if pending and time.time() > deadline:
                raise RunFailed(f"{what} not ready after {timeout_s:.0f} s: {[p.name for p in pending]}")
            time.sleep(0.2)

    def _wait_exit(self, t: Trial, clients: list[Proc], servers: list[Proc], timeout_s: float,
                   phase: str, expected_s: float, ends_at: float | None = None, check_at=None) -> None:
        """Waits for ``clients`` to exit; with ``ends_at`` (epoch s), one that stops well
        before it (its threads died: YCSB then exits 0) fails the run. ``check_at`` =
        (epoch s, fn): fn() runs once at that time while they run."""
        start = time.time()
        while True:
            if check_at is not None and time.time() >= check_at[0]:
                check_at[1]()
                check_at = None
            if t.faults is not None:
                t.faults.poll()
            self._check_alive(servers, t)
            done = [p for p in clients if p.handle_host.poll(p) is not None]
            for p in done:
                if p.returncode != 0:
                    raise RunFailed(f"{p.name} exited with code {p.returncode}: {tail(p)}")
                if ends_at is not None and (why := early_exit(p, ends_at, time.time())):
                    raise RunFailed(why)
            if len(done) == len(clients):
                return
            if time.time() - start > timeout_s:
                raise RunFailed(f"{phase} did not finish within {timeout_s:.0f} s")
            self.progress.update(phase=phase, elapsed=time.time() - start, expected=expected_s,
                                 ops_per_s=current_rate(clients))
            time.sleep(0.1 if t.faults is not None and t.faults.faults else 0.5)

    # -------------------------------------------------------------- phases

    def run_trial(self, t: Trial, run_manifest: dict) -> dict:
        cfg, dep = t.cfg, self.env.deployment
        doc = topology_doc(self.env, cfg)
        topo_doc, table_text = table_on_hosts(dep.topology(doc, doc["servers_per_dc"]))
        topo_rel = f"{t.rel}/topology.yaml"
        topo_text = yaml.safe_dump(topo_doc, sort_keys=False)
        if table_text is not None:
            rundir.write_text(t.dir / TABLE_FILE, table_text)
            predictions = Path(doc["placement_table"] + ".json")  # k2bench place's sidecar
            if predictions.exists():
                rundir.write_text(t.dir / PREDICTIONS_FILE, predictions.read_text())
        rundir.write_text(t.dir / "topology.yaml", topo_text)
        # the trial's parameters as the system runs them, for its processes (k2bench/spec)
        spec_text = TrialSpec.of(cfg, t.system, t.point, point_values(run_manifest["config"], cfg), t.trial,
                                 run_manifest["config"]["trials"],
                                 TABLE_FILE if table_text is not None else None).text()
        rundir.write_text(t.dir / SPEC_FILE, spec_text)

        def put(h: Host):
            if table_text is not None:  # before the topology that names it
                h.put_text(f"{t.rel}/{TABLE_FILE}", table_text)
            h.put_text(topo_rel, topo_text)
            h.put_text(f"{t.rel}/{SPEC_FILE}", spec_text)
            h.put_text(f"{t.rel}/{FAULTS_FILE}", "{}\n")  # no network fault in force
        fan_out(dep.hosts(), put)
        t.dir.mkdir(parents=True, exist_ok=True)
        done = False
        try:
            t0, start_info, client_warnings = self._run_processes(t, run_manifest, doc, topo_rel)
            done = True
        finally:
            # Every log of every host, also when the trial failed or was interrupted (bounded
            # per host; a host that does not answer is skipped with a note in the manifest).
            self._fetch_all(t, run_manifest, strict=done)
        return self._summarize(t, run_manifest, doc, t0, start_info, client_warnings)

    def _run_processes(self, t: Trial, run_manifest: dict, doc: dict, topo_rel: str):
        cfg, dep = t.cfg, self.env.deployment
        w, srv, cl, dur = cfg["workload"], cfg["server"], cfg["clients"], cfg["duration"]
        dcs = doc["datacenters"]
        with contextlib.ExitStack() as stack:
            self.progress.update(system=t.system, point=t.point, trial=t.trial, phase="starting servers",
                                 elapsed=0, expected=None, ops_per_s=None)
            listen = ["--listen-host", dep.listen_host] if dep.listen_host else []
            local = isinstance(dep, LocalDeployment)
            slots = dep.servers(dcs, doc["servers_per_dc"], server_processes(cfg) if local else "per_server")
            # Clusters run one JVM per server host whatever server.processes says.
            t.server_processes = server_processes(cfg) if local else remote_split(slots)
            t.server_jvm_args = server_jvm_args(cfg, t.server_processes)
            t.client_split = client_processes_split(cfg, local, t.server_processes)
            in_server = t.client_split == "in_server"
            in_server_rel = f"{t.rel}/clients/in-server"
            client_slots = sum(len(dep.clients(dc)) for dc in dcs)
            servers = [self._start(t, stack, s.host, s.name, java(
                s.host, srv["heap_mb"] * (len(dcs) if s.dc == ALL_DCS else 1) + (cl["heap_mb"] * client_slots if in_server else 0),
                # the system, its topology and every shared parameter: the trial's spec
                "serve", "--spec", s.host.path(f"{t.rel}/{SPEC_FILE}"),
                *(["--clients-dir", s.host.path(in_server_rel)] if in_server else []),
                *s.select, *listen, "--stats-out", s.host.path(f"{t.rel}/servers/stats-{s.name}.json"),
                "--metrics-log", s.host.path(f"{t.rel}/servers/{s.name}.hlog"), props=jvm_props(s.host, t),
                jvm_args=t.server_jvm_args))
                for s in slots]
            for f in cfg["faults"]:
                if f["kind"] in ("kill", "pause"):
                    FaultInjector.targets(f, list(zip(slots, servers)))  # a bad target fails now
            self._wait_for_line(servers, [], "ready:", 120, "servers")

            if "measured_rtt_ms" not in run_manifest:
                # Once per run: the WAN is the same for every system and point.
                self.progress.update(phase="measuring RTT matrix", elapsed=0, expected=None)
                probes = []
                for i, pinger in enumerate(dep.pingers(dcs)):
                    row = ["--from", pinger.from_dc] if pinger.from_dc else []
                    out = f"{t.rel}/rtt-{pinger.from_dc or 'all'}.json"
                    probes.append((pinger.host, out, self._start(t, stack, pinger.host, f"ping-{pinger.from_dc or 'all'}",
                                   java(pinger.host, 512, "ping", "--topology", pinger.host.path(topo_rel), *row,
                                        "--samples", "10", "--warmup-s", "2", "--json", pinger.host.path(out),
                                        jvm_args=server_jvm_args(cfg, "per_dc")))))
                self._wait_exit(t, [p for _, _, p in probes], servers, 120, "measuring RTT matrix", None)
                matrix: dict = {}
                for host, out, _ in probes:
                    for a, row in json.loads(host.read_text(out)).items():
                        matrix.setdefault(a, {}).update(row)
                run_manifest["measured_rtt_ms"] = matrix
                run_manifest["rtt_check"] = rtt_check(doc, matrix)
                rundir.write_json(t.dir / "rtt.json", matrix)

            # Load: each datacenter's loader writes the keys it can write locally (those
            # whose first replica it is), so loading costs no wide-area round in any system.
            # Only the datacenters the placement gives first replicas run one (with groups,
            # the first group's: index modulo f = 0); loaders elsewhere would write nothing
            # and only take the CPU of a JVM start from the others (the count check below
            # catches a mismatch).
            loaders = []
            # (A trial built without its resolved placement, as tests with stand-in processes
            # do, loads from every datacenter: each writes only its first replicas, right for
            # any placement, at the cost of idle loaders.)
            first = t.placement["first_replica_dcs"] if t.placement else dcs
            for i, dc in enumerate(dcs):
                if dc not in first:
                    continue
                slot = dep.clients(dc)[0]
                props = self._client_props(t, slot.host, dc, CLIENT_ID_BASE + i * IDS_PER_PROCESS, None)
                props |= {"insertstart": 0, "insertcount": w["keys"], "operationcount": 2**31 - 1,
                          "k2bench.load_local": "true",
                          "k2bench.load_report": slot.host.path(f"{t.rel}/clients/load-{dc}.json"),
                          "k2bench.history": slot.host.path(f"{t.rel}/clients/history-load-{dc}.jsonl")}
                if in_server:
                    props["k2bench.colocated"] = "true"
                args = ["-load", "-s", "-P", self._props_file(t, slot.host, f"load-{dc}", props),
                        "-threads", str(cfg["load"]["threads_per_dc"])]
                if in_server:  # as the clients below: no JVM to start (3-5 s each), messages in process
                    loader = self._start(t, stack, InServerHost(slot.host, servers[0], in_server_rel), f"load-{dc}", args)
                else:
                    loader = self._start(t, stack, slot.host, f"load-{dc}", ycsb(
                        slot.host, cl["heap_mb"], *args, props=jvm_props(slot.host, t), jvm_args=cl["jvm_args"]))
                loaders.append((slot.host, dc, loader))
            self._wait_exit(t, [p for _, _, p in loaders], servers, max(600, w["keys"] / 20), "loading keys", None)
            reports = []  # (loader, its report)
            for h, dc, p in loaders:
                text = h.read_text(f"{t.rel}/clients/load-{dc}.json")
                if not text.strip():  # its threads died before the report (DB.init failed)
                    raise RunFailed(f"{p.name} wrote no load report (exit code {p.returncode}): {tail(p)}")
                reports.append((p, json.loads(text)))
            loaded, failed = sum(r["loaded"] for _, r in reports), sum(r["failed"] for _, r in reports)
            if loaded != w["keys"] or failed:
                worst = max(reports, key=lambda pr: pr[1]["failed"])[0]
                raise RunFailed(f"load wrote {loaded} of {w['keys']} keys ({failed} failed); {worst.name}: {tail(worst)}")

            # Clients connect, then wait at a start barrier: JVM start-up (seconds on a
            # loaded machine) must not eat into the warm-up, and every client process
            # measures the same window (see TxnWorkload).
            total = dur["warmup_s"] + dur["measure_s"] + dur["cooldown_s"]
            start_rel = f"{t.rel}/clients/start"
            clients, client_hosts, spreads = [], [], {}
            self.progress.update(phase="starting clients", elapsed=0, expected=None, ops_per_s=None)
            # Checked again with this deployment's client processes, split as launched below.
            check_pacing(run_manifest["config"], cfg, client_processes(dep, dcs))
            n = 0
            for dc in dcs:
                dc_slots = dep.clients(dc)
                for slot, load in zip(dc_slots, client_shares(cl["threads_per_dc"], cl["target_ops_per_s_per_dc"],
                                                              len(dc_slots))):
                    props = self._client_props(t, slot.host, dc, CLIENT_ID_BASE + (len(dcs) + n) * IDS_PER_PROCESS,
                                               slot.host.path(f"{t.rel}/clients/{slot.name}.hlog"))
                    n += 1
                    # a redirected thread's new session (a kill with clients: redirect) takes an id
                    # after the threads' and the warm-up's (experiment._check_redirects)
                    props["k2bench.redirect_id_base"] = props["k2bench.client_id_base"] + load.threads + 1
                    props |= {"operationcount": 2**31 - 1, "k2bench.start_file": slot.host.path(start_rel),
                              "k2bench.run_s": total,
                              "k2bench.history": slot.host.path(f"{t.rel}/clients/history-{slot.name}.jsonl"),
                              # a safety net only: the workload stops itself at start + run_s
                              "maxexecutiontime": int(total + CLIENT_START_TIMEOUT_S + 60)}
                    if in_server:
                        props["k2bench.colocated"] = "true"
                    args = ["-t", "-s", "-P", self._props_file(t, slot.host, slot.name, props),
                            "-threads", str(load.threads)]
                    if load.target is not None:
                        args += ["-target", str(load.target)]
                    if in_server:  # inside the machine's one server JVM (clients.processes)
                        host = InServerHost(slot.host, servers[0], in_server_rel)
                        clients.append(self._start(t, stack, host, slot.name, args))
                    else:
                        clients.append(self._start(t, stack, slot.host, slot.name,
                                                   ycsb(slot.host, cl["heap_mb"], *args, props=jvm_props(slot.host, t),
                                                        jvm_args=cl["jvm_args"])))
                    spreads[slot.name] = pacing_spread_s(load)
                    if slot.host not in client_hosts:
                        client_hosts.append(slot.host)
            self._wait_for_line(clients, servers, CLIENTS_READY, CLIENT_START_TIMEOUT_S, "clients",
                                failed=client_init_failure)
            t0, start_info = self._common_start(t, client_hosts, start_rel)
            bound = cl["max_start_skew_s"]

            def skew_check():
                info = start_skew(clients, t0, spreads, bound, start_info)
                rundir.write_json(t.dir / "start.json", info)
                for entry in run_manifest.get("trials", []):  # and in the run's manifest
                    if entry.get("dir") == t.rel:
                        entry["start"] = info
                for p in clients:  # into each client's process record too
                    c = info["clients"][p.name]
                    p.notes |= {"first_op_ms": c["first_op_ms"], "start_skew_s": c["skew_s"]}
                    rundir.write_json(t.dir / "processes" / f"{p.name}.json", p.record())
                if (why := skew_failure(info)):
                    raise RunFailed(why)
                return info

            t.faults = FaultInjector(cfg["faults"], round(t0 * 1000), list(zip(slots, servers)), dep.hosts(),
                                     f"{t.rel}/{FAULTS_FILE}", t.dir / "timeline.jsonl", redirect_topology(cfg, doc))
            stack.callback(t.faults.close)
            sampler = None
            if all(isinstance(p.handle_host, (LocalHost, InServerHost)) for p in servers + clients):
                sampler = cpu.WindowSampler({p.name: p.pid for p in servers + ([] if in_server else clients)},
                                            t0 + dur["warmup_s"], t0 + dur["warmup_s"] + dur["measure_s"])
                stack.callback(sampler.close)
            # The skew check runs as soon as every client should have begun, and again at the end.
            early = t0 + bound + max(spreads.values(), default=0) + 2
            self._wait_exit(t, clients, servers, total + 180, "running", total, ends_at=t0 + total,
                            check_at=(early, skew_check) if early < t0 + total else None)
            t.faults.close()
            if sampler is not None:
                t.cpu = sampler.result({p.name: "servers" for p in servers} | {p.name: "clients" for p in clients},
                                       own=self.env.system_info.info(t.system).thread_categories)
            client_warnings = check_clients_after_run(clients)
            start_info = skew_check()
            self.progress.update(phase="stopping", elapsed=0, expected=None, ops_per_s=None)
            for p in servers:
                self._stop(t, p)
            bad = [p for p in servers if p.returncode not in (0, 143, -15) and p.name not in t.faults.killed]
            if bad:
                raise RunFailed(f"{bad[0].name} exited with code {bad[0].returncode}: {tail(bad[0])}")
        return t0, start_info, client_warnings

    def _common_start(self, t: Trial, hosts: list[Host], start_rel: str) -> tuple[float, dict]:
        """Writes the clients' common start time to every client host in parallel. t0 leaves
        room for the fan-out: a parallel write of a probe file first measures how long
        writing to every host takes, and t0 is that far ahead twice, plus a margin
        (choose_t0). A start file that still arrives late shows as the clients' skew."""
        probe = fan_out(hosts, lambda h: h.put_text(f"{start_rel}.probe", "probe\n"))
        t0 = choose_t0(time.time(), probe)
        delays = test_start_delays()
        written_at = time.time()

        def write(h):
            if h.name in delays:
                time.sleep(delays[h.name])
            h.put_text(start_rel, f"{round(t0 * 1000)}\n")

        fan = fan_out(hosts, write)
        return t0, {"t0_ms": round(t0 * 1000), "probe_fan_out_s": round(probe, 3),
                    "lead_s": round(t0 - written_at, 3), "write_fan_out_s": round(fan, 3),
                    "written_late": time.time() > t0}

    def _fetch_all(self, t: Trial, run_manifest: dict, strict: bool) -> None:
        """Brings every host's files of the trial home, in parallel, each bounded. With
        ``strict`` (the trial succeeded) a failure fails the trial; otherwise it is noted in
        the manifest and the others still come."""
        errors: dict[str, str] = {}

        def one(h):
            try:
                h.fetch(t.rel, timeout=FETCH_TIMEOUT_S)
            except RunFailed as e:
                errors[h.name] = str(e)

        fan_out(self.env.deployment.hosts(), one)
        if not errors:
            return
        notes = run_manifest.setdefault("fetch_failures", [])
        notes += [{"trial": t.rel, "host": name, "error": err} for name, err in sorted(errors.items())]
        for h in self.env.deployment.hosts():
            if getattr(h, "unreachable", None):
                run_manifest.setdefault("unreachable_hosts", {})[h.name] = (
                    f"{h.unreachable}; its processes stop on their own when their lease expires "
                    f"({getattr(h, 'lease_s', 0):.0f} s after the last refresh)")
        if strict:
            name = sorted(errors)[0]
            raise RunFailed(errors[name])

    def _summarize(self, t: Trial, run_manifest: dict, doc: dict, t0: float, start_info: dict,
                   client_warnings: list[str]) -> dict:
        cfg, dep, dur = t.cfg, self.env.deployment, t.cfg["duration"]
        dcs = doc["datacenters"]
        t0 = round(t0 * 1000) / 1000  # what the clients read: their intervals start there
        window = ((t0 + dur["warmup_s"]) * 1000, (t0 + dur["warmup_s"] + dur["measure_s"]) * 1000)
        logs = client_logs(t.dir, {dc: [s.name for s in dep.clients(dc)] for dc in dcs})
        fault_ends = [f["at_s"] + f.get("for_s", 0) for f in cfg["faults"]]
        after_ms = (t0 + max(fault_ends)) * 1000 + checker.FAULT_SLACK_MS if fault_ends else None
        summary = summarize(logs, system=t.system, experiment=cfg["name"], window_ms=window,
                            origin_ms=t0 * 1000, server_logs=sorted((t.dir / "servers").glob("*.hlog")),
                            after_ms=after_ms, pacing_interval_ms=pacing_interval_ms(cfg, client_processes(dep, dcs)),
                            paused_ms=paused_ms(t.dir / "timeline.jsonl"))
        summary["warnings"] += client_warnings
        for op, why in self.env.system_info.info(t.system).not_own.items():
            if op in summary["ops"]:
                summary["ops"][op]["not_own"] = why  # e.g. PaRiS*'s writes are K2's
        summary["point"] = t.point
        summary["point_values"] = point_values(run_manifest["config"], cfg)
        summary["trial"] = t.trial
        summary["start_ms"] = t0 * 1000  # the clients' common start; the window follows from it
        summary["start"] = start_info  # each client's first operation and its skew from the start
        summary["server_stats"] = server_totals(t.dir / "servers")
        if (counted := server_totals_hit_rate(summary["server_stats"])):
            summary["server_stats"]["cache_hit_rate"] = counted["hit_rate"]  # whole run; ``cache``: the window
        if "rings" in summary and (inv := ring_invalidations(summary["server_stats"],
                                                             len((t.placement or {}).get("rings") or []) or 1)):
            summary["rings"]["invalidations"] = inv
        summary["replication_pending_at_end"] = replication_pending_at_end(t.dir / "servers", cfg["faults"])
        histories = {dc: [t.dir / "clients" / f"history-{s.name}.jsonl" for s in dep.clients(dc)] for dc in dcs}
        ops_by_dc = {dc: checker.load_history(paths) for dc, paths in histories.items()}
        summary["availability"] = unavailability(ops_by_dc, t0 * 1000)
        summary["faults"] = cfg["faults"]
        summary["cpu"] = t.cpu
        if (stolen := cpu.steal_warning(t.cpu)):
            summary["warnings"].append(stolen)
        summary["server_processes"] = {"split": t.server_processes, "jvm_args": t.server_jvm_args,
                                       "clients": t.client_split}
        if cfg["check"]:
            self.progress.update(phase="checking consistency", elapsed=0, expected=None, ops_per_s=None)
            summary["consistency"] = check_trial_dir(
                t.dir, t.system, self.env.system_info.info(t.system).max_wan_rounds, cfg["testing"]["mutant"],
                [o for ops in ops_by_dc.values() for o in ops])
        rundir.write_json(t.dir / "summary.json", summary)
        return summary

    def _client_props(self, t: Trial, host: Host, dc: str, id_base: int, hlog: str | None) -> dict:
        """A client's or loader's own properties; what it runs is the trial's spec.json on its host,
        which the harness put there with the topology (the workload, the system and its options)."""
        props = {
            "db": "org.k2bench.ycsb.K2BenchDB",
            "workload": "org.k2bench.ycsb.TxnWorkload",
            "k2bench.spec": host.path(f"{t.rel}/{SPEC_FILE}"),
            "k2bench.dc": dc,
            "k2bench.client_id_base": id_base,
            "k2bench.seed": 1_000 * t.trial + id_base,
            "status.interval": 1,
            # YCSB keeps the intended start time of paced operations only in this mode; the
            # workload measures latency from it (coordinated omission corrected).
            "measurement.interval": "intended",
        }
        if hlog is not None:
            props["k2bench.hlog"] = str(hlog)
        return props

    def _props_file(self, t: Trial, host: Host, name: str, props: dict) -> str:
        """The exact YCSB configuration of a client process, on its host and in the run."""
        rel = f"{t.rel}/clients/{name}.properties"
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        rundir.write_text(t.dir / "clients" / f"{name}.properties", text)
        host.put_text(rel, text)
        return host.path(rel)

    # -------------------------------------------------------------- experiment

    def run(self, exp: dict, run_dir: Path, resume: bool = False) -> int:
        manifest_path = run_dir / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if resume and manifest_path.exists() else {}
        dep = self.env.deployment
        manifest |= {
            "experiment": exp["name"], "config": exp, "systems": exp["systems"],
            **rundir.git_info(self.env.repo), "hosts": dep.describe()["hosts"], "deployment": dep.describe(),
            "started": manifest.get("started", rundir.iso(time.time())), "stopped": None,
            "status": "running", "jar": str(self.env.jar),
            # each system's descriptor as this jar gave it: readers label the run as it was made
            "systems_info": self.env.system_info.to_json(exp["systems"]),
        }
        rundir.write_json(manifest_path, manifest)
        if getattr(dep, "inventory", None) is not None:
            rundir.write_json(run_dir / "inventory.json", dep.inventory.doc)
        trials = [(pid, cfg, system, k) for pid, system, cfg in system_points(exp)
                  for k in range(1, exp["trials"] + 1)]
        # Every trial of the run and where it lives, so readers (analysis/) never parse
        # directory names.
        dcs = topology_doc(self.env, exp)["datacenters"]
        placement = placements(self.env, exp)
        manifest["trials"] = [
            {"system": system, "point": pid, "point_values": point_values(exp, cfg), "trial": k,
             "dir": str(trial_dir(run_dir, system, pid, k, exp["trials"]).relative_to(run_dir)),
             "client_logs": {dc: [f"clients/{s.name}.hlog" for s in dep.clients(dc)] for dc in dcs},
             "placement": placement[pid, system]}
            for pid, cfg, system, k in trials]
        self.progress.start(exp["name"], len(trials), eta_per_trial(exp))
        status, reason, code = "completed", None, 0
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        lease_keeper = None
        try:
            fan_out(dep.hosts(), lambda h: h.bind_run(run_dir))
            # Remote processes stop on their own when the lease goes stale (ssh.wrapper_script).
            lease_s = max([getattr(h, "lease_s", 0) for h in dep.hosts()] or [0])
            lease_keeper = LeaseKeeper(dep.hosts(), max(1.0, lease_s / 4)).__enter__() if lease_s else None
            for i, (pid, cfg, system, k) in enumerate(trials):
                tdir = trial_dir(run_dir, system, pid, k, exp["trials"])
                if (tdir / "summary.json").exists():
                    self.progress.skip(system, pid, k)
                    continue
                if tdir.exists():
                    shutil.rmtree(tdir)  # a trial that did not finish starts over
                self.progress.begin_trial(i, system, pid, k)
                self.run_trial(Trial(system, pid, k, cfg, tdir, str(tdir.relative_to(run_dir)),
                                     placement=placement[pid, system]), manifest)
                rundir.write_json(manifest_path, manifest)
            for pid, cfg in points(exp):
                for system in exp["systems"]:
                    point_summary(run_dir, system, pid, exp["trials"])
        except KeyboardInterrupt:
            status, reason, code = "interrupted", "interrupted by the user (Ctrl-C or SIGTERM)", 130
        except RunFailed as e:
            status, reason, code = "failed", str(e), 1
        except Exception as e:  # noqa: BLE001 - recorded, then re-raised after teardown
            status, reason, code = "failed", f"{type(e).__name__}: {e}", 1
            raise
        finally:
            if lease_keeper is not None:
                lease_keeper.__exit__(None, None, None)
            signal.signal(signal.SIGTERM, previous)
            manifest |= {"status": status, "stopped": rundir.iso(time.time())}
            if reason:
                manifest["reason"] = reason
            rundir.write_json(manifest_path, manifest)
            self.progress.finish(status, reason)
        return code


def fan_out(hosts: list, fn) -> float:
    """Runs ``fn(host)`` for every host in parallel; returns the seconds it took for all.
    The first error (in host order) is raised once every call has ended."""
    from concurrent.futures import ThreadPoolExecutor

    began = time.time()
    if not hosts:
        return 0.0
    with ThreadPoolExecutor(max_workers=min(64, len(hosts)), thread_name_prefix="fan-out") as pool:
        futures = [pool.submit(fn, h) for h in hosts]
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e
    return time.time() - began


def choose_t0(now: float, fan_out_s: float) -> float:
    """The clients' common start (epoch s): twice the measured fan-out of a write to every
    client host plus half a second ahead, at least one second."""
    return now + max(1.0, 2 * fan_out_s + 0.5)


def test_start_delays() -> dict[str, float]:
    """The test-only delays of TEST_START_DELAY_ENV: host name -> seconds."""
    out = {}
    for item in filter(None, os.environ.get(TEST_START_DELAY_ENV, "").split(",")):
        name, _, secs = item.partition("=")
        try:
            out[name.strip()] = float(secs)
        except ValueError:
            raise ConfigError(TEST_START_DELAY_ENV, f"{item!r} is not HOST=SECONDS") from None
    return out


def pacing_spread_s(share) -> float:
    """How late YCSB 0.17 may issue a paced thread's first operation on purpose: it spreads
    the threads' starts over one pacing interval (ClientThread: a random delay below one
    interval when a thread runs at most 1000 ops/s). Unpaced threads start at once."""
    interval_ms = share.interval_ms
    return 0.0 if not interval_ms or interval_ms < 1 else interval_ms / 1000


def first_op_ms(stdout: str) -> int | None:
    m = FIRST_OP_RE.search(stdout)
    return int(m.group(1)) if m else None


def start_skew(clients: list[Proc], t0: float, spreads: dict[str, float], bound_s: float, info: dict) -> dict:
    """Each client's first operation (its own report, epoch ms by its host's clock) and its
    skew from the common start t0, with the bound it is held to."""
    out = dict(info) | {"bound_s": bound_s, "clients": {}}
    t0_ms = round(t0 * 1000)
    for p in clients:
        first = first_op_ms(p.handle_host.read_text(p.stdout))
        out["clients"][p.name] = {"host": p.host, "first_op_ms": first,
                                  "skew_s": None if first is None else round((first - t0_ms) / 1000, 3),
                                  "pacing_spread_s": round(spreads.get(p.name, 0.0), 3)}
    skews = [abs(c["skew_s"]) for c in out["clients"].values() if c["skew_s"] is not None]
    out["max_skew_s"] = max(skews) if skews else None
    return out


def skew_failure(info: dict) -> str | None:
    """Why the clients' start fails the trial: a client whose first operation is further
    from the common start than the bound (plus its pacing spread), or none yet."""
    bound = info["bound_s"]
    for name, c in info["clients"].items():
        allowed = bound + c["pacing_spread_s"]
        spread = f" plus {c['pacing_spread_s']:g} s of pacing spread" if c["pacing_spread_s"] else ""
        if c["first_op_ms"] is None:
            return (f"start skew: {name} on {c['host']} issued no operation within {allowed:g} s of the common start "
                    f"(clients.max_start_skew_s {bound:g} s{spread}); its start file arrived late or it hangs")
        if abs(c["skew_s"]) > allowed:
            return (f"start skew: {name} on {c['host']} issued its first operation {c['skew_s']:+.2f} s from the "
                    f"common start, beyond clients.max_start_skew_s {bound:g} s{spread} (a late start file or "
                    f"a slow start; by the host's own clock, which chrony keeps in step)")
    return None


def rtt_check(doc: dict, measured: dict) -> dict:
    """Configured (the topology's rtt_ms times its rtt_scale) against measured (the run's
    ping probes, median) round-trip time per ordered pair of datacenters, e.g.
    {"VA->CA": {"configured_ms": 60, "measured_ms": 61.2}}."""
    scale = float(doc.get("rtt_scale", 1.0))
    given = doc.get("rtt_ms") or {}
    out = {}
    for a in doc["datacenters"]:
        for b in doc["datacenters"]:
            if a == b:
                continue
            conf = (given.get(a) or {}).get(b, (given.get(b) or {}).get(a))
            m = (measured.get(a) or {}).get(b)
            value = m.get("p50") if isinstance(m, dict) else m
            out[f"{a}->{b}"] = {"configured_ms": None if conf is None else round(float(conf) * scale, 3),
                                "measured_ms": None if value is None else round(float(value), 3)}
    return out


def redirect_topology(cfg: dict, doc: dict):
    """The topology whose RTTs say where a kill's redirected clients go, if a kill redirects."""
    if not any(f.get("clients") == "redirect" for f in cfg["faults"]):
        return None
    from .placement import load_topology
    return load_topology(doc)


def point_values(exp: dict, cfg: dict) -> dict:
    """The sweep values of one point, e.g. {"workload.zipf": 1.2}; {} without a sweep."""
    return {axis: axis_get(cfg, axis) for axis in exp["sweep"]}


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def trial_dir(run_dir: Path, system: str, point: str, trial: int, trials: int) -> Path:
    d = run_dir / system
    if point:
        d = d / point
    return d / f"trial-{trial}" if trials > 1 else d


def point_summary(run_dir: Path, system: str, point: str, trials: int) -> None:
    """With several trials, the point's summary is its median trial by mean ROT latency (paper §VII-B)."""
    if trials == 1:
        return
    base = trial_dir(run_dir, system, point, 1, 1)
    summaries = [json.loads((trial_dir(run_dir, system, point, k, trials) / "summary.json").read_text())
                 for k in range(1, trials + 1)]
    key = lambda s: s["ops"]["rot"]["latency_ms"]["mean"] or 0.0  # noqa: E731
    median = sorted(summaries, key=key)[len(summaries) // 2]
    rundir.write_json(base / "summary.json", median | {
        "median_of_trials": trials,
        "trials": [{"trial": s["trial"], "rot_mean_ms": key(s),
                    "throughput_ops_per_s": s["throughput_ops_per_s"]} for s in summaries]})


def eta_per_trial(exp: dict) -> float:
    d = exp["duration"]
    return 25 + exp["workload"]["keys"] / 1500 + d["warmup_s"] + d["measure_s"] + d["cooldown_s"]


def server_totals(stats_dir: Path) -> dict:
    totals: dict[str, int] = {}
    for f in sorted(stats_dir.glob("stats-*.json")):
        for counters in json.loads(f.read_text()).values():
            for k, v in counters.items():
                totals[k] = totals.get(k, 0) + v
    return totals


def check_trial_dir(tdir: Path, system: str, max_wan_rounds: int | None, mutant: str | None,
                    client_ops: list[dict] | None = None) -> dict:
    """Runs the consistency checker on a trial's histories (the loaders' and the clients';
    ``client_ops`` if the caller already read the clients'), holding read-only transactions
    to the system's claimed wide-area rounds except while a fault of the trial's timeline was
    in force: writes consistency.json and the plain r/w history.txt; returns the summary's
    consistency block."""
    clients = tdir / "clients"
    loads = checker.load_history(sorted(clients.glob("history-load-*.jsonl")))
    if client_ops is None:
        client_ops = checker.load_history(sorted(p for p in clients.glob("history-*.jsonl")
                                                 if not p.name.startswith("history-load-")))
    everything = loads + client_ops
    result = checker.check(everything, max_wan_rounds=max_wan_rounds,
                           fault_windows=fault_windows(tdir / "timeline.jsonl"))
    result |= {"system": system, "mutant": mutant}
    rundir.write_json(tdir / "consistency.json", result)
    checker.export_text(everything, tdir / "history.txt")
    return {"checked_ops": result["checked"]["ops"], "violations": result["violations"]["count"],
            "by_kind": result["violations"]["by_kind"], "round_claim": result["round_claim"]}


def client_logs(trial_dir: Path, names: dict[str, list[str]]) -> dict[str, list[Path]]:
    """Each datacenter's client logs (datacenter -> the hlog of every client process there)."""
    logs = {dc: [trial_dir / "clients" / f"{n}.hlog" for n in ns] for dc, ns in names.items()}
    missing = [str(p) for ps in logs.values() for p in ps if not p.exists()]
    if missing:
        raise RunFailed(f"client logs missing: {missing}")
    return logs


# What a JVM not run as root prints once at start (PRIORITY_JVM_ARGS): not an error.
PRIORITY_WARNING = "VM warning: -XX:ThreadPriorityPolicy=1 may require system level permission"


def tail(p: Proc, lines: int = 3) -> str:
    """The last lines of a process's stderr, wherever it runs (the priority warning left out)."""
    text = [ln for ln in p.handle_host.read_text(p.stderr).splitlines()
            if ln.strip() and PRIORITY_WARNING not in ln]
    return " | ".join(text[-lines:]) or "(no output)"


# The frame every YCSB 0.17 client worker thread runs (Client starts one
# java.lang.Thread per ClientThread; they are named like any other, "Thread-<n>", as are
# its status and terminator threads, so the stack tells them apart, not the name).
YCSB_WORKER_FRAME = "site.ycsb.ClientThread.run("


def thread_deaths(stderr: str) -> list[tuple[bool, str]]:
    """Every uncaught exception of a thread in a JVM's stderr: whether the thread was one of
    YCSB's client worker threads (its stack runs ClientThread.run), and the exception's
    first two lines ("Exception in thread ..." and its first frame)."""
    lines = stderr.splitlines()
    out = []
    for i, ln in enumerate(lines):
        if ln.startswith("Exception in thread "):
            stack = []
            for x in lines[i + 1:]:
                if not (x[:1].isspace() or x.startswith("Caused by:")):
                    break
                stack.append(x)
            out.append((any(YCSB_WORKER_FRAME in x for x in stack),
                        " ".join(x.strip() for x in [ln, *stack[:1]])))
    return out


def _worker_death(deaths: list[tuple[bool, str]]) -> str | None:
    return next((text for worker, text in deaths if worker), None)


def client_init_failure(p: Proc) -> str | None:
    """The error a YCSB client thread's DB.init threw (a server it could not reach, a bad
    property), or None. YCSB prints it and lets the thread end; the process lives on with
    no load until its maximum execution time, so waiting for it would only time out."""
    for line in p.handle_host.read_text(p.stderr).splitlines():
        if line.startswith("site.ycsb.DBException"):
            return line.split(":", 1)[1].strip()
    return None


def dead_thread(p: Proc) -> str | None:
    """The first uncaught exception of a YCSB client worker thread in a client's stderr, or
    None. YCSB goes on with the other threads, so the client's load fell short."""
    return _worker_death(thread_deaths(p.handle_host.read_text(p.stderr)))


def early_exit(p: Proc, ends_at: float, now: float) -> str | None:
    """Why a client that exited at ``now`` (epoch s) fails the trial, or None: it stopped more
    than CLIENT_EARLY_EXIT_S before ``ends_at``, the trial's end by this machine's clock.
    YCSB exits 0 once its threads are gone, so an exit code says nothing."""
    early = ends_at - now
    if early <= CLIENT_EARLY_EXIT_S:
        return None
    deaths = thread_deaths(p.handle_host.read_text(p.stderr))
    if (died := _worker_death(deaths)):
        return f"{p.name} stopped {early:.0f} s before the trial's end: a client thread died: {died}"
    if deaths:
        return f"{p.name} stopped {early:.0f} s before the trial's end: a thread died: {deaths[0][1]}"
    # The client stops itself at the start time plus the trial's length by its own clock.
    cause = ("a crash" if isinstance(p.handle_host, LocalHost) else
             f"a crash, or its host clock ahead of this machine's by more than the {CLIENT_EARLY_EXIT_S} s slack")
    return (f"{p.name} stopped {early:.0f} s before the trial's end, with no thread death in its log ({cause}): "
            f"{tail(p)}")


def check_clients_after_run(clients: list[Proc]) -> list[str]:
    """After the clients ran to the end: a dead YCSB worker thread fails the trial (its
    process went on with fewer threads, so its load fell short); the deaths of other threads
    (gRPC, status) do not cut the offered load and come back as warnings for the summary."""
    warnings = []
    for p in clients:
        deaths = thread_deaths(p.handle_host.read_text(p.stderr))
        if (died := _worker_death(deaths)):
            raise RunFailed(f"{p.name}: a client thread died, so its load fell short: {died}")
        warnings += [f"{p.name}: a thread that is not a YCSB client thread died: {text}" for _, text in deaths]
    return warnings


def current_rate(clients: list[Proc]) -> float | None:
    """The clients' current throughput from YCSB's status lines (for the display only)."""
    total, seen = 0.0, False
    for p in clients:
        matches = STATUS_RE.findall(p.handle_host.read_text(p.stderr)[-2000:])
        if matches:
            total += float(matches[-1][2])
            seen = True
    return total if seen else None
