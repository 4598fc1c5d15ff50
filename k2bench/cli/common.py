"""What the commands share: the environment (jar, deployment), loading an experiment with
errors named in its file, cluster shape checks, flags as numbers, and analysis's commands."""
from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from .. import experiment
from ..deploy import inventory
from ..deploy import LocalDeployment, RemoteDeployment, check_shape
from ..errors import ConfigError
from ..deploy.hosts import LocalHost
from ..env import Env
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
def _in_file(path: Path):
    """A ConfigError raised inside about a field of the experiment names the user's file
    (unless it names one already); others (an inventory's, a flag's) are left as they are."""
    try:
        yield
    except ConfigError as e:
        raise (e.in_file(path) if _experiment_field(e.field) else e) from None


def _load(env: Env, name: str, need_jar: bool = True) -> dict:
    """The experiment, resolved against the jar's systems; without the jar and ``need_jar``
    False, against the file's own names (without_jar)."""
    path = experiment.find(env.workloads, name)
    jar = need_jar or env.jar.exists()
    systems = env.systems() if jar else Systems()  # asks the jar: a missing one is named on its own
    try:
        doc = experiment.load_file(path)
        if not jar:
            doc, systems = without_jar(doc, systems)
        return experiment.resolve(doc, path.stem, systems)
    except ConfigError as e:  # every field here is the file's, a misspelt one too
        raise e.in_file(path) from None


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
