"""Run directories: runs/<UTC timestamp>_<experiment>/, runs/latest, files
written atomically (a reader never sees half a file), provenance from git."""
from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path

from .errors import ConfigError


def utc_stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()


def create(runs_dir: Path, experiment: str) -> Path:
    runs_dir.mkdir(parents=True, exist_ok=True)
    d = runs_dir / f"{utc_stamp()}_{experiment}"
    d.mkdir()
    return d


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)


def as_saved(obj):
    """``obj`` as write_json saves it and json reads it back (int keys become strings, tuples
    lists): what a saved configuration is compared with."""
    return json.loads(json.dumps(obj))


def read_manifest(run_dir: Path) -> dict:
    """A run directory's manifest.json; a one-line ConfigError (RUN) for a path that is not
    a run directory or a manifest that is not JSON."""
    path = Path(run_dir) / "manifest.json"
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError):
        raise ConfigError("RUN", f"{run_dir} is not a run directory (no manifest.json); give one "
                          "of runs/, e.g. runs/latest") from None
    except (ValueError, UnicodeDecodeError) as e:
        where = f" ({e.msg} at line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
        raise ConfigError("RUN", f"{path} is not JSON{where}") from None


MISSING = object()  # changed_fields' value of a field one side does not have


def changed_fields(old, new, path: str = "") -> list[tuple[str, object, object]]:
    """(dotted field, old value, new value) for every field that differs between two saved
    configurations, in the order of ``new``; lists of the same length are compared item by
    item (``faults[1].at_s``), others whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in [*new, *(k for k in old if k not in new)]:
            out += changed_fields(old.get(k, MISSING), new.get(k, MISSING), f"{path}.{k}" if path else str(k))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [c for i, (a, b) in enumerate(zip(old, new)) for c in changed_fields(a, b, f"{path}[{i}]")]
    return [] if old == new else [(path, old, new)]


def describe_changes(changes: list[tuple[str, object, object]], most: int = 3) -> str:
    """The first ``most`` changes (changed_fields) as ``field old -> new``, and how many more."""
    def text(v) -> str:
        t = "(none)" if v is MISSING else json.dumps(v)
        return t if len(t) <= 40 else t[:37] + "..."
    shown = ", ".join(f"{f} {text(a)} -> {text(b)}" for f, a, b in changes[:most])
    return shown + (f" and {len(changes) - most} more" if len(changes) > most else "")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def link_latest(runs_dir: Path, run_dir: Path) -> None:
    """runs/latest -> the run: by its name when it is in runs/, else by its absolute path."""
    tmp = runs_dir / ".latest.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    inside = run_dir.resolve().parent == runs_dir.resolve()
    tmp.symlink_to(run_dir.name if inside else run_dir.resolve())
    os.replace(tmp, runs_dir / "latest")


def git_info(repo: Path) -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                                  timeout=10, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            return None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit.strip() if commit else "unknown",
            "git_dirty": None if status is None else bool(status.strip())}
