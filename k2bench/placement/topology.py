"""The datacenters, their RTTs and the replication factor a placement is computed for."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigError

MODELS = ("ba", "n-1c")


@dataclass
class Topology:
    """A topology's datacenters (in file order), its RTT matrix in ms (rtt_scale applied,
    symmetric, 0 on the diagonal) and the replication factor."""
    dcs: list[str]
    rtt: np.ndarray
    f: int

    @property
    def d(self) -> int:
        return len(self.dcs)


def load_topology(topology, f: int | None = None) -> Topology:
    """A topology file (path) or document: ``datacenters``, ``rtt_ms`` (each pair once, in
    either direction; both directions must agree), optional ``rtt_scale`` and
    ``replication_factor`` (``f``, when given, overrides it)."""
    from ..spec.files import yaml_file
    source = "topology"
    if isinstance(topology, (str, Path)):
        path = Path(topology)
        source = str(path)
        try:
            doc = yaml_file(path)
        except FileNotFoundError:
            raise ConfigError("--topology", f"{path} does not exist") from None
        except ConfigError as e:  # a key given twice, a syntax error: the file's line
            raise ConfigError("--topology", str(e)) from None
    else:
        doc = topology
    if not isinstance(doc, dict):
        raise ConfigError(source, "a topology is a mapping with datacenters and rtt_ms")
    dcs = doc.get("datacenters")
    if not isinstance(dcs, list) or not dcs or not all(isinstance(x, str) for x in dcs) or len(set(dcs)) != len(dcs):
        raise ConfigError(f"{source}: datacenters", f"must be a list of distinct names, got {dcs!r}")
    d = len(dcs)
    rtt = np.full((d, d), np.nan)
    np.fill_diagonal(rtt, 0.0)
    rows = doc.get("rtt_ms")
    if not isinstance(rows, dict):
        raise ConfigError(f"{source}: rtt_ms", "missing: give the RTT (ms) of every pair of datacenters")
    for a, row in rows.items():
        if not isinstance(row, dict):
            raise ConfigError(f"{source}: rtt_ms.{a}", "must map datacenter -> RTT in ms")
        for b, v in row.items():
            if a not in dcs or b not in dcs:
                raise ConfigError(f"{source}: rtt_ms.{a}.{b}", f"unknown datacenter; the datacenters are {dcs}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"{source}: rtt_ms.{a}.{b}", f"must be a number >= 0, got {v!r}")
            i, j = dcs.index(a), dcs.index(b)
            if i == j:
                if v != 0:
                    raise ConfigError(f"{source}: rtt_ms.{a}.{b}", "a datacenter's RTT to itself is 0")
                continue
            if not np.isnan(rtt[i, j]) and rtt[i, j] != v:
                raise ConfigError(f"{source}: rtt_ms.{a}.{b}", f"is {v}, but rtt_ms.{b}.{a} is {rtt[i, j]:g}; "
                                  "give each pair once")
            rtt[i, j] = rtt[j, i] = float(v)
    missing = [(dcs[i], dcs[j]) for i in range(d) for j in range(i + 1, d) if np.isnan(rtt[i, j])]
    if missing:
        a, b = missing[0]
        raise ConfigError(f"{source}: rtt_ms.{a}.{b}", f"missing ({len(missing)} pair(s) are); give every pair's RTT")
    scale = doc.get("rtt_scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise ConfigError(f"{source}: rtt_scale", f"must be a number > 0, got {scale!r}")
    if f is None:
        f = doc.get("replication_factor")
        field_name = f"{source}: replication_factor"
    else:
        field_name = "--replication-factor"
    if isinstance(f, bool) or not isinstance(f, int) or not 1 <= f <= d:
        raise ConfigError(field_name, f"must be an integer between 1 and the {d} datacenters, got {f!r}")
    return Topology(list(dcs), rtt * float(scale), int(f))
