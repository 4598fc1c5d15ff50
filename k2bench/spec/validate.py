"""Everything about an experiment that can be checked before a process starts, against the
systems' descriptors, the resolved topologies and the deployment."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..deploy import client_processes
from ..errors import ConfigError, did_you_mean
from .fields import dist_min
from .pacing import check_pacing
from .points import for_system, points
from .topology import resolve_topology, topology_doc
from ..trial.servers import check_process_split

if TYPE_CHECKING:
    from ..env import Env


def check_system_options(env: Env, cfg: dict) -> None:
    """A point's ``server.options`` against what each system declares (``systems --json``):
    a system that is not bundled, an option it does not have, or a value of the wrong type
    or out of its range is named with the fix. The launcher checks the same again when it
    starts."""
    for system, opts in cfg["server"]["options"].items():
        field = f"server.options.{system}"
        if system not in env.system_info:
            raise ConfigError(field, f"no system {system!r}{did_you_mean(system, env.system_info)}; bundled: "
                              f"{', '.join(sorted(env.system_info))}")
        declared = {o["name"]: o for o in env.system_info[system].options}
        for name, value in opts.items():
            o = declared.get(name)
            if o is None:
                have = ", ".join(sorted(declared)) if declared else "none"
                raise ConfigError(f"{field}.{name}", f"{system} has no such option{did_you_mean(name, declared)}; "
                                  f"its options: {have}")
            if o["type"] == "boolean":
                if not isinstance(value, bool):
                    raise ConfigError(f"{field}.{name}", f"must be true or false, got {value!r}")
                continue
            if o["type"] == "choice":
                if value not in o["choices"]:
                    raise ConfigError(f"{field}.{name}", f"must be one of {', '.join(o['choices'])}, got {value!r}"
                                      f"{did_you_mean(value, o['choices'])}")
                continue
            if isinstance(value, (bool, str)) or not math.isfinite(value) or (o["type"] == "integer" and value != int(value)):
                raise ConfigError(f"{field}.{name}", f"must be {'a whole number' if o['type'] == 'integer' else 'a number'}, "
                                  f"got {value!r}")
            if not float(o["min"]) <= float(value) <= float(o["max"]):
                raise ConfigError(f"{field}.{name}", f"must be in [{o['min']}, {o['max']}], got {value!r}")


# What validate leaves out without the jar (need_jar=False): the checks that ask it.
NEEDS_JAR = ("system names, options and mutants, the systems' claims (placements, transactions, message loss, "
             "caches), the launcher's topology check")


def validate(env: Env, exp: dict, need_jar: bool = True) -> dict | None:
    """Everything that can be checked before a process starts; returns the first point's
    resolved topology (of the first system). Every point's topology is checked (a sweep may
    change it), and every system against its placement and workload, as it runs them (its
    ``per_system`` overrides). Without the jar, ``need_jar=False`` runs every check that
    does not ask it (NEEDS_JAR lists the others) and returns None."""
    jar = env.jar.exists()
    if not jar and need_jar:
        raise ConfigError("jar", f"{env.jar} is missing; run `make build`")
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
            if not jar:
                return []
            return [s for s, c in by_system.items() if wanted(c) and not getattr(env.system_info.info(s), claim)]

        def they(systems: list[str], verb: str) -> str:
            return f"{', '.join(systems)} {verb if len(systems) > 1 else verb.replace('have', 'has')}"

        for cfg in by_system.values() if jar else ():
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
        cached = env.system_info.where(dc_cache=True) if jar else []
        for system, cfg in by_system.items():
            own = "topology" in exp.get("per_system", {}).get(system, {})
            doc = topology_doc(env, cfg)
            if jar:
                resolved = _check_placement(env, exp, system, cfg, cached, named)
                first = first or resolved
            dcs = resolved["datacenters"] if jar else doc.get("datacenters")
            if datacenters is None:
                datacenters = dcs
            elif dcs != datacenters:
                raise ConfigError(f"per_system.{system}.topology" if own else "topology.file",
                                  f"{system}'s topology ({cfg['topology']['file']}) has datacenters "
                                  f"{', '.join(map(str, dcs or []))}, another system's "
                                  f"{', '.join(map(str, datacenters or []))}: the systems of a run share its "
                                  "datacenters and clients; give every topology the same datacenters")
            if isinstance(doc.get("datacenters"), list) and isinstance(doc.get("servers_per_dc"), int):
                env.deployment.topology(doc, doc["servers_per_dc"])  # the inventory fits the topology
                check_fault_targets(cfg["faults"], doc["datacenters"], doc["servers_per_dc"])
                check_pacing(exp, cfg, client_processes(env.deployment, doc["datacenters"]))
                try:
                    check_process_split(env.deployment, cfg, doc["datacenters"], doc["servers_per_dc"])
                except ConfigError as e:  # the field as the system was given it (per_system)
                    section, _, field = e.field.partition(".")
                    raise ConfigError(named([system], section, field) if section in cfg else e.field,
                                      e.problem) from None
    return first


def _check_placement(env: Env, exp: dict, system: str, cfg: dict, cached: list[str], named) -> dict:
    """One system at one point against what it runs on (its descriptor, the jar's) and the
    launcher's resolution of its topology, which it returns."""
    if cfg["topology"]["place_cache"] and not env.system_info.info(system).dc_cache:
        own_cache = "place_cache" in exp.get("per_system", {}).get(system, {}).get("topology", {})
        raise ConfigError(f"per_system.{system}.topology.place_cache" if own_cache else "topology.place_cache",
                          f"{system} has no datacenter cache (only {', '.join(cached) or 'none'} "
                          f"{'have' if len(cached) > 1 else 'has'}); set it for those alone: per_system: "
                          f"{{{cached[0] if cached else '<system>'}: {{topology: {{place_cache: true}}}}}}")
    resolved = resolve_topology(env, cfg)
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
    return resolved


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
                raise ConfigError(field_, f"unknown datacenter {dc!r}{did_you_mean(dc, dcs)}; datacenters: "
                                  f"{', '.join(dcs)}")
