"""Experiment files on disk: finding one by name, reading its YAML (a key given twice is an
error, as in topology files), and ``extends``."""
from __future__ import annotations

import copy
import pathlib
from typing import Any

import yaml

from ..errors import ConfigError, did_you_mean

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
    doc = _own_topology_files(path, _read_yaml(path))
    base_name = doc.pop("extends", None)
    if base_name is None:
        return doc
    if not isinstance(base_name, str) or not base_name:
        raise ConfigError("extends", f"must name an experiment file, got {base_name!r}", str(path))
    base_path = _base_file(path, base_name)
    if base_path is None:
        known = sorted(f.stem for f in SHIPPED.glob("*.yaml"))
        near = {f.stem for f in path.parent.glob("*.yaml")} - {path.stem}
        raise ConfigError("extends", f"no experiment {base_name!r}{did_you_mean(base_name, [*near, *known])} next to "
                          f"{path.name} or in workloads/ (known there: {', '.join(known)}); give a name or a path "
                          f"relative to {path.name}", str(path))
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


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping: PyYAML keeps the last
    one silently, so a second ``workload:`` section would drop the first."""

    def construct_document(self, node):
        _check_unique_keys(node, "", set())
        return super().construct_document(node)


class DuplicateKey(yaml.YAMLError):
    def __init__(self, field: str, line: int, first_line: int):
        super().__init__(f"{field} at line {line} (first at line {first_line})")
        self.field, self.line, self.first_line = field, line, first_line


def _check_unique_keys(node: yaml.Node, path: str, seen: set) -> None:
    if id(node) in seen:  # an alias: its node is checked where it is defined
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[tuple, int] = {}
        for k, v in node.value:
            here = path
            if isinstance(k, yaml.ScalarNode):
                here = f"{path}.{k.value}" if path else k.value
                if (k.tag, k.value) in first:
                    raise DuplicateKey(here, k.start_mark.line + 1, first[k.tag, k.value])
                first[k.tag, k.value] = k.start_mark.line + 1
            _check_unique_keys(v, here, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _check_unique_keys(v, f"{path}[{i}]", seen)


def yaml_file(path: pathlib.Path) -> Any:
    """A YAML file's document. A ConfigError names a key given twice with the file and line
    (``<file>:<line>: <key>: ...``), or the line of a syntax error; FileNotFoundError is the
    caller's to name."""
    text = pathlib.Path(path).read_text()
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)
    except DuplicateKey as e:
        raise ConfigError(e.field, f"given twice (first at line {e.first_line}); YAML would keep only the last: "
                          "give it once", f"{path}:{e.line}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(str(path), f"not valid YAML{where}", str(path)) from None


def _topology_file(path: pathlib.Path, value: Any) -> Any:
    """A topology.file as ``path`` gives it: a file next to ``path`` wins over one of
    workloads/ (as ``extends`` looks), and is then named relative to workloads/ if it is in
    there, else by its absolute path; any other value is left to the resolution."""
    if not isinstance(value, str) or not value or pathlib.Path(value).is_absolute():
        return value
    here = path.parent / value
    if path.parent.resolve() == SHIPPED.resolve() or not here.is_file():
        return value
    try:
        return str(here.resolve().relative_to(SHIPPED.resolve()))
    except ValueError:
        return str(here.resolve())


def _own_topology_files(path: pathlib.Path, doc: dict) -> dict:
    """The file's own topology.file values (its topology, each per_system's, a topology.file
    sweep) looked up next to it first (_topology_file), before a base's are merged in."""
    def fix(section):
        if isinstance(section, dict) and "file" in section:
            section["file"] = _topology_file(path, section["file"])
    fix(doc.get("topology"))
    for sections in (doc.get("per_system") or {}).values() if isinstance(doc.get("per_system"), dict) else ():
        fix(sections.get("topology") if isinstance(sections, dict) else None)
    swept = (doc.get("sweep") or {}).get("topology.file") if isinstance(doc.get("sweep"), dict) else None
    if isinstance(swept, list):
        doc["sweep"]["topology.file"] = [_topology_file(path, v) for v in swept]
    return doc


def _read_yaml(path: pathlib.Path) -> dict:
    try:
        doc = yaml_file(path)
    except FileNotFoundError:
        raise ConfigError(str(path), "no such file", str(path)) from None
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
    raise ConfigError("EXPERIMENT", f"no experiment {name_or_path!r} in {workloads_dir}"
                      f"{did_you_mean(pathlib.Path(name_or_path).stem, known)}; known: {', '.join(known)}")
