"""Experiment files: a whole paper figure as one declarative YAML file.

An experiment names the systems, the topology (a file in workloads/topologies plus
overrides), the workload, the servers' and clients' settings, the durations with explicit
warm-up and cool-down, the number of trials, and optional sweep axes. ``resolve`` fills in
the paper's defaults (§VII-B), validates every field (one-line ``ConfigError`` naming it) and returns
the fully resolved configuration that is saved with the run; ``points`` expands the sweep.
"""
from __future__ import annotations

import copy
import itertools
import math
import pathlib
from dataclasses import dataclass
from typing import Any

import yaml

from .errors import ConfigError
from .spec import schema
from .spec.schema import DEFAULT_JVM_ARGS, PER_HOST_SERVER_JVM_ARGS  # noqa: F401 - used here and re-exported
from .systems import Systems

# field -> (type, default, check), from the one definition of every parameter (spec/schema.py).
SCHEMA: dict[str, dict[str, tuple]] = schema.table()
TOP_LEVEL = {"name", "description", "extends", "systems", "trials", "sweep", "check", "faults", "testing",
             "per_system", *SCHEMA}
# The sections ``per_system`` may override for one system (not duration: every system of
# a run shares its timeline and faults).
PER_SYSTEM_SECTIONS = ("topology", "workload", "server", "clients", "load")
FAULT_KINDS = {
    # kind: (required fields, optional fields)
    "kill": ({"at_s"}, {"dc", "server", "clients"}),  # kill -9, for the rest of the trial; clients: fail | redirect
    "pause": ({"at_s", "for_s"}, {"dc", "server"}),  # SIGSTOP, SIGCONT after for_s
    "partition": ({"at_s", "for_s", "dcs"}, {"mode"}),  # hold (deliver at heal) | drop
    "delay": ({"at_s", "for_s", "dcs", "extra_ms"}, set()),  # latency spike, both directions
}


def _dist(field: str, value: Any, check) -> Any:
    """An integer, or {value: probability} with probabilities summing to 1."""
    if isinstance(value, int) and not isinstance(value, bool):
        problem = check(value) if check else None
        if problem:
            raise ConfigError(field, f"{problem}, got {value!r}")
        return value
    if not isinstance(value, dict) or not value:
        raise ConfigError(field, f"must be an integer or a mapping value: probability, got {value!r}")
    total = 0.0
    for v, p in value.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise ConfigError(f"{field}.{v}", "values of a distribution must be integers")
        if check and check(v):
            raise ConfigError(f"{field}.{v}", check(v))
        if not isinstance(p, (int, float)) or isinstance(p, bool) or p < 0:
            raise ConfigError(f"{field}.{v}", f"probability must be a number >= 0, got {p!r}")
        total += p
    if abs(total - 1.0) > 1e-3:
        raise ConfigError(field, f"probabilities sum to {total:g}, not 1")
    return {int(v): float(p) for v, p in value.items()}


def dist_min(value) -> int:
    """The smallest value a ``dist`` field can take."""
    return value if isinstance(value, int) else min(value)


def dist_max(value) -> int:
    return max(value) if isinstance(value, dict) else value


def dist_text(value) -> str:
    """The form the Java workload reads: 5, or 1:0.515,2:0.1,..."""
    return ",".join(f"{v}:{p}" for v, p in value.items()) if isinstance(value, dict) else str(value)


def server_jvm_args(cfg: dict, processes: str) -> list[str]:
    """server.jvm_args, or its default for the process split: one JVM for every server
    compiles its hot code once, and C2's code cut the protocol threads' CPU by a third at
    bench-throughput's peak (K2 3,812 -> 4,299 ops/s); six or more server JVMs on two
    cores spend more in C2's compiler threads than it saves, so they run C1 only.

    The one JVM also runs ZGC: its heap holds every datacenter's store, and G1's young
    pauses there took 45-63 ms every ~2.3 s at 4,400 ops/s, so 1-2% of the messages on
    WAN links, due while the JVM stood still, were released 30-35 ms late (p99); with ZGC
    0.8-1.8 ms (bench-throughput's workload, K2).

    ZGC collects at least every 5 s (ZCollectionInterval): left alone it lets the heap grow
    towards -Xmx (7,680 MB by default) before collecting, so every page the heap takes is
    new memory the kernel zeroes on first touch, for the whole of a run. At 5% writes, K2,
    32 threads/DC (~2,000 ops/s, ~190 MB/s allocated) that zeroing (clear_page_erms under
    shmem faults, perf) took 21-32% of the machine in the measurement window; the threads
    that allocate pay it, in kernel mode (the protocol threads spent 5.4-6.4 of their
    12-13 CPU seconds there). With the timer the heap stays near 1.6-1.8 GB and reuses its
    pages: the JVM's CPU in the window fell from 23-26 s to 18.4 s (GC +1.5 s), the
    machine's idle time rose from 13-23% to 38% and lateness p99 fell from 2.1-5.4 to
    1.2 ms. How much the zeroing costs depends on the host (a virtual machine pays more
    for memory it has not backed yet), so without the timer peaks varied by machine."""
    given = cfg["server"]["jvm_args"]
    if given is not None:
        return given
    return list(PER_HOST_SERVER_JVM_ARGS) if processes == "per_host" else list(DEFAULT_JVM_ARGS)


def _jvm_args(field: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(a, str) and a for a in value):
        raise ConfigError(field, f"must be a list of JVM options like [-XX:+UseZGC], got {value!r}")
    for a in value:
        if not a.startswith("-"):
            raise ConfigError(field, f"{a!r} is not a JVM option (they start with '-')")
        if a.startswith("-Xmx"):
            raise ConfigError(field, f"{a!r}: set the heap with heap_mb instead")
    return list(value)


def _typed(field: str, value: Any, typ: type) -> Any:
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if typ is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(field, f"must be true or false, got {value!r}")
        return value
    if not isinstance(value, typ) or isinstance(value, bool):
        want = {int: "an integer", float: "a number", str: "a string"}[typ]
        raise ConfigError(field, f"must be {want}, got {value!r}")
    return value


def _system_options(field: str, value: Any) -> dict:
    """{system: {option: number, bool or a choice's name}}: the shape only; names, ranges and
    choices are the systems' (orchestrator.check_system_options)."""
    if not isinstance(value, dict):
        raise ConfigError(field, f"must be a mapping system: {{option: value}}, got {value!r}")
    out = {}
    for system, opts in value.items():
        if not isinstance(opts, dict):
            raise ConfigError(f"{field}.{system}", f"must be a mapping option: value, got {opts!r}")
        for name, v in opts.items():
            if not isinstance(v, (int, float, bool, str)):
                raise ConfigError(f"{field}.{system}.{name}", f"must be a number, true/false or a name, got {v!r}")
        out[str(system)] = {str(k): v for k, v in opts.items()}
    return out


def _section(name: str, given: Any) -> dict:
    spec = SCHEMA[name]
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ConfigError(name, f"must be a mapping, got {given!r}")
    for key in given:
        if key not in spec:
            raise ConfigError(f"{name}.{key}", f"unknown field; allowed here: {', '.join(sorted(spec))}")
    out = {}
    for key, (typ, default, check) in spec.items():
        field = f"{name}.{key}"
        value = given.get(key, default)
        if value is None and default is not None:  # null only where the default is null
            fix = "use [] for no options" if typ == "args" else "give a value or leave the field out"
            raise ConfigError(field, f"must not be null (its default is {default!r}); {fix}")
        if value is not None and typ == "dist":
            value = _dist(field, value, check)
        elif value is not None and typ == "args":
            value = _jvm_args(field, value)
        elif value is not None and typ == "options":
            value = _system_options(field, value)
        elif value is not None:
            value = _typed(field, value, typ)
            problem = check(value) if check else None
            if problem:
                raise ConfigError(field, f"{problem}, got {value!r}")
        out[key] = value
    return out


SHIPPED = pathlib.Path(__file__).resolve().parent.parent / "workloads"


def _base_file(path: pathlib.Path, base: str) -> pathlib.Path | None:
    """The file ``extends: <base>`` names: a path (with / or .yaml) relative to ``path``'s
    directory; else a name, looked up next to ``path`` first, then in workloads/."""
    if "/" in base or base.endswith((".yaml", ".yml")):
        candidate = path.parent / base
        return candidate if candidate.exists() else None
    for d in (path.parent, SHIPPED):
        if (d / f"{base}.yaml").exists():
            return d / f"{base}.yaml"
    return None


def load_file(path: pathlib.Path, _seen: tuple = ()) -> dict:
    """The experiment document; ``extends: <name>`` inherits another experiment file (next
    to this one, else one of workloads/, so a file anywhere can extend ``default``; or a
    relative path), whose fields this one overrides (sections merge field by field)."""
    path = pathlib.Path(path)
    doc = _read_yaml(path)
    base_name = doc.pop("extends", None)
    if base_name is None:
        return doc
    if not isinstance(base_name, str) or not base_name:
        raise ConfigError("extends", f"must name an experiment file, got {base_name!r}", str(path))
    base_path = _base_file(path, base_name)
    if base_path is None:
        known = sorted(f.stem for f in SHIPPED.glob("*.yaml"))
        raise ConfigError("extends", f"no experiment {base_name!r} next to {path.name} or in workloads/ "
                          f"(known there: {', '.join(known)}); give a name or a path relative to {path.name}",
                          str(path))
    seen = {p.resolve() for p in _seen + (path,)}
    if base_path.resolve() in seen:
        raise ConfigError("extends", f"{base_name} extends itself (through "
                          f"{' -> '.join(p.name for p in _seen + (path,))})", str(path))
    base = load_file(base_path, _seen + (path,))
    merged = copy.deepcopy(base)
    for key, value in doc.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key != "sweep":
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    merged.pop("name", None) if "name" not in doc else None
    return merged


def _read_yaml(path: pathlib.Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(str(path), "no such file", str(path)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(str(path), f"not valid YAML{where}", str(path)) from None
    if not isinstance(doc, dict):
        raise ConfigError(str(path), "must be a YAML mapping of experiment fields", str(path))
    return doc


def resolve(doc: dict, name: str, known_systems: Systems) -> dict:
    """The fully resolved experiment: defaults filled in, every field checked against these
    systems' descriptors (k2bench/systems.py)."""
    for key in doc:
        if key not in TOP_LEVEL:
            raise ConfigError(key, f"unknown field; allowed: {', '.join(sorted(TOP_LEVEL))}")
    out: dict[str, Any] = {"name": _typed("name", doc.get("name", name), str)}
    out["description"] = _typed("description", doc.get("description", ""), str)
    systems = doc.get("systems", known_systems.defaults())
    if "systems" not in doc and not systems:
        raise ConfigError("systems", "no bundled system runs by default; name the systems to run")
    if not isinstance(systems, list) or not systems:
        raise ConfigError("systems", f"must be a non-empty list of systems, got {systems!r}")
    for i, s in enumerate(systems):
        if s not in known_systems:
            raise ConfigError(f"systems[{i}]", f"unknown system {s!r}; available: {', '.join(sorted(known_systems))}")
    if len(set(systems)) != len(systems):
        raise ConfigError("systems", f"lists a system twice: {systems}")
    out["systems"] = list(systems)
    for section in SCHEMA:
        out[section] = _section(section, doc.get(section))
    trials = _typed("trials", doc.get("trials", 1), int)
    if trials < 1:
        raise ConfigError("trials", f"must be at least 1, got {trials}")
    out["trials"] = trials
    if dist_max(out["workload"]["keys_per_op"]) > out["workload"]["keys"]:
        raise ConfigError("workload.keys_per_op", "is larger than workload.keys")
    out["faults"] = _faults(doc.get("faults"), out["duration"])  # before the sweep: it may sweep a fault
    out["sweep"] = _sweep(doc.get("sweep"), out)
    out["per_system"] = _per_system(doc.get("per_system"), out)
    for system in out["per_system"]:
        w = for_system(out, system)["workload"]
        if dist_max(w["keys_per_op"]) > w["keys"]:
            raise ConfigError(f"per_system.{system}.workload.keys_per_op", "is larger than workload.keys")
    _check_pacing(out)
    _check_timeouts(out)
    _check_redirects(out)
    _check_key_distribution(out)
    check = doc.get("check", True)
    if not isinstance(check, bool):
        raise ConfigError("check", f"must be true or false (run the consistency checker), got {check!r}")
    out["check"] = check
    out["testing"] = _testing(doc.get("testing"), known_systems)
    return out


def _per_system(given: Any, resolved: dict) -> dict:
    """What one system runs differently from the others of the experiment:
    ``{system: {section: {field: value}}}``, e.g. a ring topology for Karma beside K2's
    replica groups, or single writes where the others run write-only transactions. Each
    value is checked as the section's field; a swept field cannot be overridden."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ConfigError("per_system", "must map systems to sections they run differently, e.g. "
                          "{karma: {topology: {file: topologies/karma-rings.yaml}}}")
    out: dict[str, dict] = {}
    for system, sections in given.items():
        where = f"per_system.{system}"
        if system not in resolved["systems"]:
            raise ConfigError(where, f"{system!r} is not one of the experiment's systems "
                              f"({', '.join(resolved['systems'])}); add it to systems or drop this entry")
        if not isinstance(sections, dict):
            raise ConfigError(where, f"must map sections ({', '.join(PER_SYSTEM_SECTIONS)}) to fields, got {sections!r}")
        out[system] = {}
        for section, fields in sections.items():
            if section not in PER_SYSTEM_SECTIONS:
                raise ConfigError(f"{where}.{section}", f"not a section a system can override; allowed: "
                                  f"{', '.join(PER_SYSTEM_SECTIONS)}")
            if not isinstance(fields, dict) or not fields:
                raise ConfigError(f"{where}.{section}", f"must be a non-empty mapping of fields, got {fields!r}")
            for field in fields:
                if f"{section}.{field}" in resolved["sweep"]:
                    raise ConfigError(f"{where}.{section}.{field}", f"is swept (sweep.{section}.{field}); a system "
                                      "cannot override a swept field: drop one of the two")
            probe = {**copy.deepcopy(resolved[section]), **fields}
            try:
                checked = _section(section, probe)
            except ConfigError as e:
                raise ConfigError(f"{where}.{e.field}", e.problem) from None
            out[system][section] = {field: checked[field] for field in fields}
    return out


def for_system(cfg: dict, system: str) -> dict:
    """A point's configuration as ``system`` runs it: the experiment's ``per_system``
    overrides applied (the configuration itself when it has none for the system)."""
    overrides = cfg.get("per_system", {}).get(system)
    if not overrides:
        return cfg
    out = copy.deepcopy(cfg)
    for section, fields in overrides.items():
        out[section].update(copy.deepcopy(fields))
    return out


def _faults(given: Any, duration: dict) -> list[dict]:
    """Faults injected during the trial, at seconds after the clients' start."""
    if given is None:
        return []
    if not isinstance(given, list):
        raise ConfigError("faults", "must be a list of faults, e.g. [{kind: kill, dc: TYO, at_s: 30}]")
    total = duration["warmup_s"] + duration["measure_s"] + duration["cooldown_s"]
    out = []
    for i, f in enumerate(given):
        field = f"faults[{i}]"
        if not isinstance(f, dict) or f.get("kind") not in FAULT_KINDS:
            raise ConfigError(f"{field}.kind", f"must be one of {', '.join(FAULT_KINDS)}")
        required, optional = FAULT_KINDS[f["kind"]]
        for key in f:
            if key != "kind" and key not in required | optional:
                raise ConfigError(f"{field}.{key}", f"unknown field for {f['kind']}; allowed: "
                                  f"{', '.join(sorted(required | optional))}")
        for key in required:
            if key not in f:
                raise ConfigError(f"{field}.{key}", f"missing; a {f['kind']} fault needs {', '.join(sorted(required))}")
        g = {"kind": f["kind"]}
        for key in ("at_s", "for_s", "extra_ms"):
            if key in f:
                g[key] = _typed(f"{field}.{key}", f[key], float)
                if g[key] < 0 or (key != "at_s" and g[key] == 0):
                    raise ConfigError(f"{field}.{key}", f"must be {'>= 0' if key == 'at_s' else '> 0'}, got {f[key]!r}")
        if g["at_s"] >= total:
            raise ConfigError(f"{field}.at_s", f"{g['at_s']} s is after the trial's end ({total} s after the start)")
        if f["kind"] in ("kill", "pause"):
            if ("dc" in f) == ("server" in f):
                raise ConfigError(field, "give exactly one of dc (a whole datacenter) or server (DC:SHARD)")
            g["dc" if "dc" in f else "server"] = _typed(f"{field}.{'dc' if 'dc' in f else 'server'}",
                                                        f.get("dc", f.get("server")), str)
        if f["kind"] == "kill":
            # redirect: the datacenter's clients go on against the nearest surviving one (the
            # replica-placement paper's failure, faults.py); fail: they keep asking their own
            g["clients"] = f.get("clients", "fail")
            if g["clients"] not in ("fail", "redirect"):
                raise ConfigError(f"{field}.clients", f"must be fail or redirect, got {g['clients']!r}")
            if g["clients"] == "redirect" and "dc" not in f:
                raise ConfigError(f"{field}.clients", "redirect moves a whole datacenter's clients: give dc, not server")
        if "dcs" in f:
            dcs = f["dcs"]
            if not (isinstance(dcs, list) and len(dcs) == 2 and all(isinstance(d, str) for d in dcs)
                    and dcs[0] != dcs[1]):
                raise ConfigError(f"{field}.dcs", f"must be two different datacenters, got {dcs!r}")
            g["dcs"] = list(dcs)
        if f["kind"] == "partition":
            g["mode"] = f.get("mode", "hold")
            if g["mode"] not in ("hold", "drop"):
                raise ConfigError(f"{field}.mode", f"must be hold or drop, got {g['mode']!r}")
        out.append(g)
    return out


def _testing(given: Any, known_systems: Systems) -> dict:
    """Test-only switches: a deliberately broken protocol variant for the checker's tests,
    one that a bundled system honours (its descriptor's ``mutants``)."""
    if given is None:
        return {"mutant": None}
    if not isinstance(given, dict) or set(given) - {"mutant"}:
        raise ConfigError("testing", "only testing.mutant is allowed")
    m = given.get("mutant")
    mutants = known_systems.mutants()
    if m is not None and m not in mutants:
        raise ConfigError("testing.mutant", f"unknown mutant {m!r}; known: {', '.join(mutants) or 'none'}")
    return {"mutant": m}


def _sweep(given: Any, resolved: dict) -> dict:
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ConfigError("sweep", "must map dotted fields (e.g. workload.zipf) to lists of values")
    out = {}
    for axis, values in given.items():
        field = f"sweep.{axis}"
        parts = str(axis).split(".")
        if parts[0] == "faults":
            out[axis] = _sweep_fault(field, parts, values, resolved)
            continue
        if len(parts) != 2 or parts[0] not in SCHEMA or parts[1] not in SCHEMA[parts[0]]:
            raise ConfigError(field, "not a sweepable field; use section.field (e.g. workload.zipf) or "
                              "faults.N.field (e.g. faults.0.dc)")
        if not isinstance(values, list) or not values:
            raise ConfigError(field, "must be a non-empty list of values")
        checked = []
        for i, v in enumerate(values):
            probe = copy.deepcopy(resolved[parts[0]])
            probe[parts[1]] = v
            try:
                checked.append(_section(parts[0], probe)[parts[1]])
            except ConfigError as e:  # name the value in the list, not the section's field
                problem = e.problem.replace("give a value or leave the field out", "give a value")
                raise ConfigError(f"{field}[{i}]", problem) from None
        out[axis] = checked
    return out


def _sweep_fault(field: str, parts: list[str], values: Any, resolved: dict) -> list:
    """A swept field of one of the experiment's faults (``faults.N.field``): each value checked
    as that fault's field."""
    faults = resolved["faults"]
    if len(parts) != 3 or not parts[1].isdigit() or int(parts[1]) >= len(faults):
        raise ConfigError(field, f"a fault axis is faults.N.field with N below the {len(faults)} fault(s), "
                          "e.g. faults.0.dc")
    i, name = int(parts[1]), parts[2]
    required, optional = FAULT_KINDS[faults[i]["kind"]]
    if name == "kind" or name not in required | optional or name not in faults[i]:
        raise ConfigError(field, f"fault {i} ({faults[i]['kind']}) has no field {name!r} to sweep; its fields: "
                          f"{', '.join(sorted(k for k in faults[i] if k != 'kind'))}")
    if not isinstance(values, list) or not values:
        raise ConfigError(field, "must be a non-empty list of values")
    checked = []
    for j, v in enumerate(values):
        probe = copy.deepcopy(faults)
        probe[i][name] = v
        try:
            checked.append(_faults(probe, resolved["duration"])[i][name])
        except ConfigError as e:
            raise ConfigError(f"{field}[{j}]", e.problem) from None
    return checked


# YCSB 0.17 takes -target as an int and paces each thread at target / threads ops/s. A
# thread paced at 1,000 ops/s or less first sleeps a random part of one tick, drawn by
# nextInt((int) tick_ns) with tick_ns = 1e9 / rate (ClientThread.run). Below
# 1e9 / (2^31 - 1) ops/s (~0.4657) the cast overflows: to a negative int or 0 for some rates
# (0.2328-0.4657 ops/s, ...: the thread dies with IllegalArgumentException, and YCSB exits
# as if done once every thread has), to a positive one for others (the thread runs). We
# reject every rate below the floor on purpose: which ones survive is an accident of the
# wrap-around, and a small change of the target or the threads would turn one into the
# other.
MIN_OPS_PER_S_PER_THREAD = 1e9 / (2**31 - 1)


@dataclass(frozen=True)
class ClientShare:
    """What one YCSB process of a datacenter runs: its -threads and -target (None: unpaced)."""
    threads: int
    target: int | None

    @property
    def per_thread(self) -> float | None:
        return None if self.target is None else self.target / self.threads

    def paces(self) -> bool:
        """YCSB can pace its threads at this rate (see MIN_OPS_PER_S_PER_THREAD)."""
        return self.target is None or self.target / self.threads >= MIN_OPS_PER_S_PER_THREAD

    @property
    def interval_ms(self) -> float | None:
        """The time between two operations of one thread on schedule, in ms."""
        return None if not self.target else 1000.0 * self.threads / self.target


def client_shares(threads_per_dc: int, target_per_dc: float | None, processes: int) -> list[ClientShare]:
    """How a datacenter's threads and target rate are split over its ``processes`` YCSB
    client processes (client slots): threads by integer division, the first processes
    taking one of the remainder each, at least one per process; the target evenly, rounded
    to the int YCSB's -target takes. The orchestrator launches exactly these, and the
    pacing check validates exactly these."""
    out = []
    for i in range(processes):
        threads = max(1, threads_per_dc // processes + (1 if i < threads_per_dc % processes else 0))
        target = None if not target_per_dc else round(target_per_dc / processes)
        out.append(ClientShare(threads, target))
    return out


def pacing_interval_ms(cfg: dict, processes_by_dc: dict[str, int]) -> float | None:
    """The longest time between two operations of one client thread on schedule, over every
    client process of a configuration (None: unpaced)."""
    cl = cfg["clients"]
    intervals = [s.interval_ms for n in set(processes_by_dc.values())
                 for s in client_shares(cl["threads_per_dc"], cl["target_ops_per_s_per_dc"], n)]
    return None if not cl["target_ops_per_s_per_dc"] or not intervals else max(intervals)


def _min_target(threads_per_dc: int, processes: int) -> int:
    """The smallest per-datacenter target (a multiple of ``processes``) at which every
    process of the split paces its threads."""
    most = max(s.threads for s in client_shares(threads_per_dc, None, processes))
    per_process = max(1, math.ceil(MIN_OPS_PER_S_PER_THREAD * most - 1e-9))
    while per_process / most < MIN_OPS_PER_S_PER_THREAD:
        per_process += 1
    return per_process * processes


def _split_text(shares: list[ClientShare]) -> str:
    return ("-target " + "/".join(str(s.target) for s in shares)
            + " -threads " + "/".join(str(s.threads) for s in shares))


def _swept_field(exp: dict, cfg: dict, axes: tuple[str, ...], default: str) -> str:
    """The field to name for a problem of a point: the swept ones among ``axes`` with the
    point's values (e.g. sweep.clients.threads_per_dc=48), else ``default``."""
    swept = [a for a in axes if a in exp["sweep"]]
    if not swept:
        return default
    return " and ".join(f"sweep.{a}={_value_text(axis_get(cfg, a))}" for a in swept)


def _value_text(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def check_pacing(exp: dict, cfg: dict, processes_by_dc: dict[str, int] | None = None) -> None:
    """Every YCSB client process of one point (``cfg``) paces each of its threads at a rate
    YCSB 0.17 can keep, with the split the orchestrator launches. ``processes_by_dc``: client
    processes per datacenter (the deployment's client slots); None: one each (this machine)."""
    cl = cfg["clients"]
    target, threads = cl["target_ops_per_s_per_dc"], cl["threads_per_dc"]
    if not target:
        return
    by_count: dict[int, str] = {}
    for dc, n in (processes_by_dc or {"": 1}).items():
        by_count.setdefault(n, dc)
    for n, dc in sorted(by_count.items()):
        shares = client_shares(threads, target, n)
        if all(s.paces() for s in shares):
            continue
        field = _swept_field(exp, cfg, ("clients.target_ops_per_s_per_dc", "clients.threads_per_dc"),
                             "clients.target_ops_per_s_per_dc")
        slowest = min(s.per_thread for s in shares)
        where = (f"runs YCSB with {_split_text(shares)}" if n == 1 else
                 f"runs {dc}'s {n} client processes with {_split_text(shares)}")
        fewer = next((k for k in range(threads - 1, 0, -1)
                      if all(s.paces() for s in client_shares(k, target, n))), None)
        least = _min_target(threads, n)
        if fewer is None:
            fix = (f"clients.target_ops_per_s_per_dc must be at least {MIN_OPS_PER_S_PER_THREAD:.2f} x threads: "
                   f"at least {least} for {threads} clients.threads_per_dc")
        else:
            fix = f"use at most {fewer} clients.threads_per_dc or a clients.target_ops_per_s_per_dc of at least {least}"
        raise ConfigError(field, f"{target:g} ops/s over {threads} threads_per_dc {where}: {slowest:.3f} ops/s "
                          f"per thread, below the {MIN_OPS_PER_S_PER_THREAD:.4f} YCSB 0.17 can pace; {fix}")


def _check_pacing(exp: dict) -> None:
    """Every point's pacing, one client process per datacenter (the orchestrator checks
    again with the deployment's client processes)."""
    for _, _, cfg in system_points(exp):
        check_pacing(exp, cfg)


# K2's failure detector ticks with its server (every 100 ms) and needs a few heartbeats per
# fail-over timeout; a server stopped for a quarter of it must not be taken for the others'
# silence.
MIN_FAILOVER_TIMEOUT_MS = 300


def _check_timeouts(exp: dict) -> None:
    """A remote read fails over after server.failover_timeout_ms, within the RPC timeout
    (clients.rpc_timeout_ms, which the servers get as --rpc-timeout-ms too): at or above it,
    the read times out before it can fail over."""
    for _, _, cfg in system_points(exp):
        failover, rpc = cfg["server"]["failover_timeout_ms"], cfg["clients"]["rpc_timeout_ms"]
        if failover < MIN_FAILOVER_TIMEOUT_MS:
            field = _swept_field(exp, cfg, ("server.failover_timeout_ms",), "server.failover_timeout_ms")
            raise ConfigError(field, f"{failover} ms is too short to tell a dead datacenter from a slow one: servers "
                              f"tick every 100 ms and send several heartbeats per fail-over timeout; use at least "
                              f"{MIN_FAILOVER_TIMEOUT_MS} (and above the largest round trip of the topology)")
        if failover >= rpc:
            field = _swept_field(exp, cfg, ("server.failover_timeout_ms", "clients.rpc_timeout_ms"),
                                 "server.failover_timeout_ms")
            raise ConfigError(field, f"the fail-over timeout ({failover} ms) is not below the RPC timeout of "
                              f"clients and servers (clients.rpc_timeout_ms, {rpc} ms): a remote read would time out "
                              f"before it fails over to the next replica; set server.failover_timeout_ms below {rpc} "
                              f"or clients.rpc_timeout_ms above {failover}")


# The session ids of one client process: its threads', a warm-up's and, with a redirecting
# kill, one more per thread for every datacenter kill (each may re-point the redirect).
IDS_PER_PROCESS = 1000


def _check_redirects(exp: dict) -> None:
    for _, _, cfg in system_points(exp):
        faults = cfg["faults"]
        if not any(f.get("clients") == "redirect" for f in faults):
            continue
        kills = sum(1 for f in faults if f["kind"] == "kill" and "dc" in f)
        most = (IDS_PER_PROCESS - 2) // (1 + kills)
        if cfg["clients"]["threads_per_dc"] > most:
            field = _swept_field(exp, cfg, ("clients.threads_per_dc",), "clients.threads_per_dc")
            raise ConfigError(field, f"{cfg['clients']['threads_per_dc']} threads: a kill with clients: redirect opens "
                              f"a session per thread for each of the {kills} datacenter kill(s), at most {most} "
                              "threads per datacenter fit; use fewer threads or clients: fail")


def _check_key_distribution(exp: dict) -> None:
    """workload.key_distribution: ycsb_scrambled is YCSB's generator as it is: at its constant,
    over the whole key space, one popularity order for every datacenter; and topology.place's
    expected demand (placement.expected_demand) models the exact Zipf only."""
    for _, system, cfg in system_points(exp):
        w, t = cfg["workload"], cfg["topology"]
        if w["key_distribution"] != "ycsb_scrambled":
            continue
        # 0.99 is the one constant YCSB has zeta precomputed for; any other takes hours over its 10^10 items
        if w["zipf"] != 0.99:
            other, problem = ("workload.zipf",), ("ycsb_scrambled is YCSB's generator at its constant 0.99; "
                                                  "set workload.zipf: 0.99 or use key_distribution: zipf")
        elif w["locality"] > 0:
            other, problem = ("workload.locality",), ("ycsb_scrambled has no per-datacenter hot sets; "
                                                      "set workload.locality: 0 or use key_distribution: zipf")
        elif w["partitions_per_op"] > 0:
            other, problem = ("workload.partitions_per_op",), (
                "ycsb_scrambled draws over the whole key space, not the PaRiS key choice; "
                "set workload.partitions_per_op: 0 or use key_distribution: zipf")
        elif t["place"] != "none" and t["place_demand"] == "expected":
            other, problem = ("topology.place", "topology.place_demand"), (
                "topology.place's expected demand models the exact Zipf, not ycsb_scrambled; give "
                "topology.place_demand a parquet of k2bench demand, set topology.place: none or use "
                "key_distribution: zipf")
        else:
            continue
        raise ConfigError(_point_field(exp, cfg, system, ("workload.key_distribution", *other),
                                       "workload.key_distribution"), problem)


def _point_field(exp: dict, cfg: dict, system: str, axes: tuple[str, ...], default: str) -> str:
    """The field to name for a problem of one system at one point: its per_system override
    among ``axes``, else the swept ones with the point's values, else ``default``."""
    own = exp.get("per_system", {}).get(system, {})
    for a in axes:
        section, name = a.split(".")
        if name in own.get(section, {}):
            return f"per_system.{system}.{a}"
    return _swept_field(exp, cfg, axes, default)


def axis_get(cfg: dict, axis: str) -> Any:
    """The value of a sweep axis in a configuration: ``section.field``, or ``faults.N.field``
    (a field of the experiment's N-th fault, e.g. which datacenter a kill takes)."""
    parts = axis.split(".")
    if parts[0] == "faults":
        return cfg["faults"][int(parts[1])][parts[2]]
    return cfg[parts[0]][parts[1]]


def axis_set(cfg: dict, axis: str, value: Any) -> dict:
    """``cfg`` with a sweep axis set to ``value`` (in place; returned for chaining)."""
    parts = axis.split(".")
    if parts[0] == "faults":
        cfg["faults"][int(parts[1])][parts[2]] = value
    else:
        cfg[parts[0]][parts[1]] = value
    return cfg


def axis_label(axis: str) -> str:
    """How a point names an axis: the field (``zipf``), a fault's as fault<N>_field (``fault0_dc``)."""
    parts = axis.split(".")
    return parts[-1] if parts[0] != "faults" else f"fault{parts[1]}_{parts[2]}"


def points(exp: dict) -> list[tuple[str, dict]]:
    """(point id, configuration) for every combination of sweep values; one point without a sweep."""
    axes = exp["sweep"]
    if not axes:
        return [("", exp)]
    out = []
    for combo in itertools.product(*axes.values()):
        cfg = copy.deepcopy(exp)
        labels = []
        for axis, value in zip(axes, combo):
            axis_set(cfg, axis, value)
            labels.append(f"{axis_label(axis)}={value}")
        cfg["sweep"] = {}
        out.append(("_".join(labels), cfg))
    return out


def system_points(exp: dict) -> list[tuple[str, str, dict]]:
    """(point id, system, configuration as the system runs it) for every point and system."""
    return [(pid, system, for_system(cfg, system)) for pid, cfg in points(exp) for system in exp["systems"]]


def find(workloads_dir: pathlib.Path, name_or_path: str) -> pathlib.Path:
    """The experiment file for a name in workloads/ (or a path); an unknown name lists the known ones."""
    p = pathlib.Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.exists():
        return p
    candidate = workloads_dir / f"{name_or_path}.yaml"
    if candidate.exists():
        return candidate
    known = sorted(f.stem for f in workloads_dir.glob("*.yaml"))
    raise ConfigError("EXPERIMENT", f"no experiment {name_or_path!r} in {workloads_dir}; known: {', '.join(known)}")
