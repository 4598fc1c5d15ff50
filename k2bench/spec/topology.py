"""A point's topology: the experiment's file with its overrides, its placement table (computed
by ``topology.place`` or given), and its resolution by the servers' own loader (the launcher's
``topology`` command: one parser, Java's), which also checks it."""
from __future__ import annotations

import copy
import hashlib
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..errors import ConfigError, did_you_mean
from .files import yaml_file
from .points import system_points

if TYPE_CHECKING:
    from ..env import Env


def topology_doc(env: Env, cfg: dict) -> dict:
    """The experiment's topology: its file with the experiment's overrides applied."""
    t = cfg["topology"]
    path = env.workloads / t["file"]
    try:
        doc = yaml_file(path)
    except FileNotFoundError:
        shipped = sorted(str(p.relative_to(env.workloads)) for p in env.workloads.glob("topologies/*.yaml"))
        raise ConfigError("topology.file", f"no topology {t['file']!r}{did_you_mean(t['file'], shipped)} next to the "
                          f"experiment file or in workloads/ ({path} does not exist); shipped: "
                          f"{', '.join(shipped)}") from None
    except ConfigError as e:  # a key given twice, a syntax error: the topology file's line
        raise ConfigError("topology.file", str(e)) from None
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
    from .. import placement
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
