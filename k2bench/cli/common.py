"""What the commands share: the environment (jar, deployment), loading an experiment with
errors named in its file, cluster shape checks, flags as numbers, and analysis's commands."""
from __future__ import annotations

import contextlib
import copy
import json
import re
from pathlib import Path

import yaml

from .. import experiment
from ..deploy import inventory
from ..deploy import LocalDeployment, RemoteDeployment, check_shape
from ..errors import ConfigError
from ..deploy.hosts import LocalHost
from ..env import Env
from ..spec.files import UniqueKeyLoader
from ..spec.topology import topology_doc
from ..systems import SystemInfo, Systems


REPO = Path(__file__).resolve().parents[2]  # the repository


def _by_system_and_point(summary: dict) -> list:
    """Sweep points in numeric order (40 before 120 before 360), not their names' order."""
    parts = re.split(r"(\d+(?:\.\d+)?)", f"{summary['system']} {summary.get('point') or ''}")
    return [(0, float(x), "") if i % 2 else (1, 0.0, x) for i, x in enumerate(parts)]


def _env(args) -> Env:
    for flag in ("lease_s", "ssh_timeout"):
        if getattr(args, flag, 60.0) <= 0:
            raise ConfigError(f"--{flag.replace('_', '-')}", f"must be > 0 seconds, got {getattr(args, flag)}")
    if getattr(args, "inventory", None):
        dep = RemoteDeployment(inventory.load(args.inventory), base_port=args.base_port,
                               jar=args.remote_jar, known_hosts=args.known_hosts,
                               lease_s=getattr(args, "lease_s", 60.0), command_timeout=getattr(args, "ssh_timeout", 60.0),
                               inventory_file=args.inventory)
    else:
        dep = LocalDeployment(LocalHost(Path(args.jar)))
    return Env(repo=REPO, jar=Path(args.jar), deployment=dep, java=args.java)


def _experiment_field(field: str) -> bool:
    """Whether a ConfigError's field is one of an experiment file (not a flag, the jar or an
    inventory's): its first name is a top-level field of experiment files."""
    head = field.split(".")[0].split("[")[0].split(" ")[0]
    return head in experiment.TOP_LEVEL


@contextlib.contextmanager
def _in_file(path: Path, overrides: dict | None = None, every: bool = False):
    """A ConfigError raised inside about a field of the experiment names the user's file
    (unless it names one already), or --set when the field is one ``overrides`` set; others
    (an inventory's, a flag's) are left as they are. ``every``: every field is the file's
    (a misspelt one too)."""
    try:
        yield
    except ConfigError as e:
        raise ConfigError.of([x if x.field.startswith("--set ") or not (every or _experiment_field(x.field))
                              else x.in_file(path) for x in _set_errors(e, overrides or {})]) from None


def _load(env: Env, name: str, need_jar: bool = True, overrides: dict | None = None) -> dict:
    """The experiment, resolved against the jar's systems; without the jar and ``need_jar``
    False, against the file's own names (without_jar). ``overrides`` (parse_overrides) are
    set on the file's fields before they are checked; a problem of one names it as --set."""
    path = experiment.find(env.workloads, name)
    jar = need_jar or env.jar.exists()
    systems = env.systems() if jar else Systems()  # asks the jar: a missing one is named on its own
    with _in_file(path, overrides, every=True):
        doc = experiment.load_file(path)
        if not jar:
            doc, systems = without_jar(doc, systems)
        return experiment.resolve(apply_overrides(doc, overrides or {}), path.stem, systems)


def parse_overrides(items: list[str] | None) -> dict:
    """--set FIELD=VALUE, repeatable: {dotted field: the value parsed as YAML}; the last value
    of a field wins."""
    out: dict = {}
    for item in items or []:
        field, sep, text = item.partition("=")
        field = field.strip()
        if not sep or not field:
            raise ConfigError("--set", f"{item!r} is not FIELD=VALUE, e.g. --set workload.zipf=1.4")
        try:
            out[field] = yaml.load(text, Loader=UniqueKeyLoader)
        except yaml.YAMLError:
            raise ConfigError(f"--set {field}", f"{text!r} is not a YAML value; quote the whole flag for the "
                              "shell, e.g. --set 'clients.jvm_args=[-XX:+UseZGC]'") from None
    return out


def _override_path(field: str) -> list[str]:
    """The keys an override's dotted field walks: section.field, a top-level field,
    sweep.<axis> (the axis is one key, e.g. sweep.workload.zipf) or
    per_system.<system>.<section>.<field>."""
    parts = field.split(".")
    return ["sweep", ".".join(parts[1:])] if parts[0] == "sweep" and len(parts) > 1 else parts


def apply_overrides(doc: dict, overrides: dict) -> dict:
    """The experiment document with each override set at its field (a copy), to be checked
    as the file's own fields are."""
    if not overrides:
        return doc
    doc = copy.deepcopy(doc)
    for field, value in overrides.items():
        keys, here = _override_path(field), doc
        for i, key in enumerate(keys[:-1]):
            if here.get(key) is None:
                here[key] = {}
            if not isinstance(here[key], dict):
                where = ".".join(keys[:i + 1])
                raise ConfigError(f"--set {field}", f"{where} is not a mapping of fields; set it whole, e.g. "
                                  f"--set '{where}=...'")
            here = here[key]
        here[keys[-1]] = value
    return doc


def _set_errors(e: ConfigError, overrides: dict) -> list[ConfigError]:
    """The problems of a resolution with overrides, those about an overridden field (or a
    field above or below one) named as --set's."""
    def mine(field: str) -> bool:
        return any(field == f or field.startswith((f"{f}.", f"{f}[", f"{f}=")) or f.startswith(f"{field}.")
                   for f in overrides)
    return [ConfigError(f"--set {x.field}", x.problem) if not x.field.startswith("--set") and mine(x.field) else x
            for x in e.errors]


def without_jar(doc: dict, known: Systems) -> tuple[dict, Systems]:
    """An experiment document and the systems to resolve it with when the jar's descriptors
    are missing (or ``known`` lacks some): the file's own system names stand for the ones
    ``known`` does not have, and testing.mutant goes unchecked (null) when no system names
    its mutants. What the systems are is then not checked; the rest of the file is."""
    named = doc.get("systems")
    if named is None and not known.defaults():
        raise ConfigError("systems", "not given, and the default systems come from the jar, which is not built: "
                          "name the systems, or run `make build`")
    if isinstance(named, list):
        known = known.merged(Systems(SystemInfo(n) for n in named if isinstance(n, str) and n not in known))
    if isinstance((doc.get("testing") or {}).get("mutant"), str) and not known.mutants():
        doc = {**doc, "testing": {**doc["testing"], "mutant": None}}
    return doc, known


def servers_per_dc_override(exp: dict, n: int | None) -> dict:
    """The experiment with --servers-per-dc applied to its topology (saved with the run)."""
    if n is None:
        return exp
    if n < 1:
        raise ConfigError("--servers-per-dc", f"must be at least 1, got {n}")
    exp["topology"]["servers_per_dc"] = n
    return exp


def check_cluster_shape(exp: dict, inv: inventory.Inventory, inventory_file: str) -> None:
    """Every point of the experiment fits the inventory: one server host per server."""
    env = Env(repo=REPO, jar=Path("-"), deployment=None)
    for _, _, cfg in experiment.system_points(exp):
        doc = topology_doc(env, cfg)
        if not isinstance(doc.get("servers_per_dc"), int) or not isinstance(doc.get("datacenters"), list):
            continue  # malformed: validate names the field
        dcs = [dc for dc in doc["datacenters"] if dc in inv.datacenters]
        check_shape(inv, doc["servers_per_dc"], dcs, experiment=exp["name"], inventory_file=inventory_file)


def tc_verify(inv: inventory.Inventory, path: str | None) -> dict | None:
    """The ping verification of the deploy's tc (netem inventories): the file the netem role
    wrote, by default runs/.deploy/<experiment_id>/tc/verify.json, or None elsewhere."""
    if inv.latency != "netem":
        return None
    p = Path(path) if path else REPO / "runs" / ".deploy" / inv.experiment_id / "tc" / "verify.json"
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError("--tc-verify", f"{p} does not exist: run `k2bench deploy` (make emulab-run does) "
                          "first, or give the deploy's tc/verify.json") from None
    except json.JSONDecodeError as e:
        raise ConfigError("--tc-verify", f"{p} is not JSON ({e.msg} at line {e.lineno}): deploy again") from None


def legacy_trials(run: Path) -> list[dict]:
    """Trials of a run made before the manifest listed them: one client log per datacenter."""
    out = []
    for s in sorted(run.rglob("summary.json")):
        if "median_of_trials" in json.loads(s.read_text()):
            continue
        logs = sorted((s.parent / "clients").glob("client-*.hlog"))
        out.append({"dir": str(s.parent.relative_to(run)),
                    "client_logs": {p.stem.removeprefix("client-"): [f"clients/{p.name}"] for p in logs}})
    return out


def plugin_commands() -> dict:
    """Commands other installed packages add to ``k2bench`` (entry points of group
    ``k2bench.commands``: a name and a ``main(argv) -> int``), such as analysis's
    ``compare``: found by name, so the harness never imports them."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group="k2bench.commands")}


def _flag_number(value, flag: str, kind=float, minimum=None):
    """A numeric flag's value (taken as text so a bad one is a one-line ConfigError, not
    argparse's usage)."""
    if value is None:
        return None
    try:
        v = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(flag, f"must be {'an integer' if kind is int else 'a number'}, got {value!r}") from None
    if minimum is not None and not v >= minimum:
        raise ConfigError(flag, f"must be at least {minimum}, got {value}")
    return v
