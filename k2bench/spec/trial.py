"""One trial's fully resolved spec (``spec.json`` in the trial directory, and beside it on
every host): the experiment's point as the system runs it (per_system overrides and sweep
values applied, every default filled in), built from the typed sections of schema.py.
It is what the harness hands the systems' processes: the one place a run's parameters are
written for them."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from . import schema

SPEC_FILE = "spec.json"
SPEC_VERSION = 1


@dataclass(frozen=True)
class ExperimentRef:
    name: str
    point: str  # the sweep point's name ("" without a sweep)
    point_values: dict  # axis -> value of the point
    trial: int
    trials: int
    check: bool  # the consistency checker runs after the trial


@dataclass(frozen=True)
class SystemRef:
    name: str
    options: dict  # the system's own options (server.options.<system>)


@dataclass(frozen=True)
class TrialSpec:
    experiment: ExperimentRef
    system: SystemRef
    topology: schema.Topology
    workload: schema.Workload
    server: schema.Server
    clients: schema.Clients
    load: schema.Load
    duration: schema.Duration
    faults: tuple  # each {"kind", "at_s", ...} as resolved
    mutant: str | None  # testing.mutant
    files: dict  # trial files, relative to the trial directory: topology, placement_table (or None)

    @classmethod
    def of(cls, cfg: dict, system: str, point: str, point_values: dict, trial: int, trials: int,
           placement_table: str | None = None) -> TrialSpec:
        """``cfg``: the point's resolved configuration as ``system`` runs it (for_system)."""
        sections = {name: schema.build(name, dict(cfg[name])) for name in schema.SECTIONS}
        server = dataclasses.replace(sections["server"], options={})  # the system's own are in system.options
        return cls(experiment=ExperimentRef(cfg["name"], point, dict(point_values), trial, trials, bool(cfg["check"])),
                   system=SystemRef(system, dict(cfg["server"]["options"].get(system, {}))),
                   **(sections | {"server": server}), faults=tuple(cfg["faults"]),
                   mutant=cfg["testing"]["mutant"],
                   files={"topology": "topology.yaml", "placement_table": placement_table})

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["server"].pop("options")
        d["faults"] = list(d["faults"])
        d["testing"] = {"mutant": d.pop("mutant")}
        return {"spec_version": SPEC_VERSION, **d}

    def text(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n"
