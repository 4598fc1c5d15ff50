"""Experiment files on disk: finding one by name, reading its YAML, and ``extends``."""
from __future__ import annotations

import copy
import pathlib

import yaml

from ..errors import ConfigError

SHIPPED = pathlib.Path(__file__).resolve().parents[2] / "workloads"  # the repository's


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
