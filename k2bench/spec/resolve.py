"""An experiment file resolved: every section filled in and checked, ``per_system`` overrides,
faults, test switches and sweeps, and the checks across fields; the result is what a run saves."""
from __future__ import annotations

import copy
from typing import Any

from ..errors import Collect, ConfigError, did_you_mean
from ..systems import Systems
from .checks import _check_key_distribution, _check_redirects, _check_retention, _check_timeouts
from .fields import SCHEMA, _section, _typed, dist_max
from .pacing import _check_pacing
from .points import for_system

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


def resolve(doc: dict, name: str, known_systems: Systems) -> dict:
    """The fully resolved experiment: defaults filled in, every field checked against these
    systems' descriptors (k2bench/systems.py). The checks of single fields are independent:
    all their problems are raised together (ConfigErrors); the checks across fields, which
    need those fields right, follow and stop at the first."""
    errors = Collect()
    for key in doc:
        if key not in TOP_LEVEL:
            errors.errors.append(ConfigError(key, f"unknown field{did_you_mean(key, TOP_LEVEL)}; allowed: "
                                             f"{', '.join(sorted(TOP_LEVEL))}"))
    out: dict[str, Any] = {}
    with errors.check():
        out["name"] = _typed("name", doc.get("name", name), str)
    with errors.check():
        out["description"] = _typed("description", doc.get("description", ""), str)
    with errors.check():
        out["systems"] = _systems(doc, known_systems)
    for section in SCHEMA:
        with errors.check():
            out[section] = _section(section, doc.get(section))
    with errors.check():
        out["trials"] = _typed("trials", doc.get("trials", 1), int)
        if out["trials"] < 1:
            raise ConfigError("trials", f"must be at least 1, got {out['trials']}")
    if "duration" in out:
        with errors.check():
            out["faults"] = _faults(doc.get("faults"), out["duration"])  # before the sweep: it may sweep a fault
    check = doc.get("check", True)
    if not isinstance(check, bool):
        errors.errors.append(ConfigError("check", f"must be true or false (run the consistency checker), got {check!r}"))
    with errors.check():
        testing = _testing(doc.get("testing"), known_systems)
    errors.done()
    if dist_max(out["workload"]["keys_per_op"]) > out["workload"]["keys"]:
        raise ConfigError("workload.keys_per_op", "is larger than workload.keys")
    out["sweep"] = _sweep(doc.get("sweep"), out)
    out["per_system"] = _per_system(doc.get("per_system"), out)
    for system in out["per_system"]:
        w = for_system(out, system)["workload"]
        if dist_max(w["keys_per_op"]) > w["keys"]:
            raise ConfigError(f"per_system.{system}.workload.keys_per_op", "is larger than workload.keys")
    _check_pacing(out)
    _check_timeouts(out)
    _check_retention(out, known_systems)
    _check_redirects(out)
    _check_key_distribution(out)
    out["check"] = check
    out["testing"] = testing
    return out


def _systems(doc: dict, known_systems: Systems) -> list[str]:
    systems = doc.get("systems", known_systems.defaults())
    if "systems" not in doc and not systems:
        raise ConfigError("systems", "no bundled system runs by default; name the systems to run")
    if not isinstance(systems, list) or not systems:
        raise ConfigError("systems", f"must be a non-empty list of systems, got {systems!r}")
    errors = Collect()
    for i, s in enumerate(systems):
        if not isinstance(s, str):
            errors.errors.append(ConfigError(f"systems[{i}]", f"must be a system's name, got {s!r}"))
        elif s not in known_systems:
            errors.errors.append(ConfigError(f"systems[{i}]", f"unknown system {s!r}{did_you_mean(s, known_systems)}; "
                                             f"available: {', '.join(sorted(known_systems))}"))
    errors.done()
    if len(set(systems)) != len(systems):
        raise ConfigError("systems", f"lists a system twice: {systems}")
    return list(systems)


def _per_system(given: Any, resolved: dict) -> dict:
    """What one system runs differently from the others of the experiment:
    ``{system: {section: {field: value}}}``, e.g. a ring topology for Karma beside K2's
    replica groups, or single writes where the others run write-only transactions. Each
    value is checked as the section's field; a swept field cannot be overridden."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ConfigError("per_system", "must map systems to sections they run differently, e.g. "
                          "{<system>: {topology: {file: topologies/karma-rings.yaml}}}")
    out: dict[str, dict] = {}
    for system, sections in given.items():
        where = f"per_system.{system}"
        if system not in resolved["systems"]:
            raise ConfigError(where, f"{system!r} is not one of the experiment's systems"
                              f"{did_you_mean(system, resolved['systems'])}; they are {', '.join(resolved['systems'])}: "
                              "add it to systems or drop this entry")
        if not isinstance(sections, dict):
            raise ConfigError(where, f"must map sections ({', '.join(PER_SYSTEM_SECTIONS)}) to fields, got {sections!r}")
        out[system] = {}
        for section, fields in sections.items():
            if section not in PER_SYSTEM_SECTIONS:
                raise ConfigError(f"{where}.{section}", f"not a section a system can override"
                                  f"{did_you_mean(section, PER_SYSTEM_SECTIONS)}; allowed: {', '.join(PER_SYSTEM_SECTIONS)}")
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
                raise ConfigError.of([ConfigError(f"{where}.{x.field}", x.problem) for x in e.errors]) from None
            out[system][section] = {field: checked[field] for field in fields}
    return out


def _faults(given: Any, duration: dict) -> list[dict]:
    """Faults injected during the trial, at seconds after the clients' start."""
    if given is None:
        return []
    if not isinstance(given, list):
        raise ConfigError("faults", "must be a list of faults, e.g. [{kind: kill, dc: TYO, at_s: 30}]")
    total = duration["warmup_s"] + duration["measure_s"] + duration["cooldown_s"]
    errors = Collect()  # each fault's problem, on its own line
    out = []
    for i, f in enumerate(given):
        with errors.check():
            out.append(_fault(f"faults[{i}]", f, total))
    errors.done()
    return out


def _fault(field: str, f: Any, total: float) -> dict:
    if not isinstance(f, dict) or f.get("kind") not in FAULT_KINDS:
        kind = f.get("kind") if isinstance(f, dict) else None
        got = f", got {kind!r}{did_you_mean(kind, FAULT_KINDS)}" if kind is not None else ""
        raise ConfigError(f"{field}.kind", f"must be one of {', '.join(FAULT_KINDS)}{got}")
    required, optional = FAULT_KINDS[f["kind"]]
    for key in f:
        if key != "kind" and key not in required | optional:
            raise ConfigError(f"{field}.{key}", f"unknown field for {f['kind']}"
                              f"{did_you_mean(key, required | optional)}; allowed: "
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
    return g


def _testing(given: Any, known_systems: Systems) -> dict:
    """Test-only switches: a deliberately broken protocol variant for the checker's tests,
    one that a bundled system honours (its descriptor's ``mutants``)."""
    if given is None:
        return {"mutant": None}
    if not isinstance(given, dict) or set(given) - {"mutant"}:
        other = sorted(set(given) - {"mutant"}, key=str)[0] if isinstance(given, dict) else ""
        raise ConfigError("testing", f"only testing.mutant is allowed{did_you_mean(other, ['mutant'])}")
    m = given.get("mutant")
    mutants = known_systems.mutants()
    if m is not None and not isinstance(m, str):
        raise ConfigError("testing.mutant", f"must be a mutant's name or null, got {m!r}")
    if m is not None and m not in mutants:
        raise ConfigError("testing.mutant", f"unknown mutant {m!r}{did_you_mean(m, mutants)}; known: "
                          f"{', '.join(mutants) or 'none'}")
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
            axes = [f"{s}.{f}" for s, fields in SCHEMA.items() for f in fields]
            raise ConfigError(field, f"not a sweepable field{did_you_mean(axis, axes)}; use section.field (e.g. "
                              "workload.zipf) or faults.N.field (e.g. faults.0.dc)")
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
        fields = sorted(k for k in faults[i] if k != "kind")
        raise ConfigError(field, f"fault {i} ({faults[i]['kind']}) has no field {name!r} to sweep"
                          f"{did_you_mean(name, fields)}; its fields: {', '.join(fields)}")
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
