"""Sweep points: the dotted axes, each point's configuration, and each system's (``per_system``)."""
from __future__ import annotations

import copy
import itertools
from typing import Any

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


def _swept_field(exp: dict, cfg: dict, axes: tuple[str, ...], default: str) -> str:
    """The field to name for a problem of a point: the swept ones among ``axes`` with the
    point's values (e.g. sweep.clients.threads_per_dc=48), else ``default``."""
    swept = [a for a in axes if a in exp["sweep"]]
    if not swept:
        return default
    return " and ".join(f"sweep.{a}={_value_text(axis_get(cfg, a))}" for a in swept)


def _value_text(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


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


def point_values(exp: dict, cfg: dict) -> dict:
    """The sweep values of one point, e.g. {"workload.zipf": 1.2}; {} without a sweep."""
    return {axis: axis_get(cfg, axis) for axis in exp["sweep"]}
