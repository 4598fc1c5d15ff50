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
