"""Demand: reads and writes per key and datacenter, from a run's histories or expected from the
workload's own key choice (the same permutation as the Java KeySpace)."""
from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..rundir import read_manifest

DEMAND_COLUMNS = ("key_id", "dc", "reads", "writes")
# The workload's key permutation (Java org.k2bench.ycsb.KeySpace): rank r -> ((r-1) m + OFFSET) mod n.
PERMUTATION_MULTIPLIER = 2_654_435_761
PERMUTATION_OFFSET = 40_503


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _empty_demand():
    import pandas as pd
    return pd.DataFrame({"key_id": pd.Series([], dtype="int64"), "dc": pd.Series([], dtype=object),
                         "reads": pd.Series([], dtype="int64"), "writes": pd.Series([], dtype="int64")})


_KEY = re.compile(r"user(\d+)")
_HISTORY = re.compile(r"history-client-(.+?)(?:-(\d+))?\.jsonl")


def _history_dc(name: str, dcs: list[str]) -> str | None:
    """The datacenter of a client history file: history-client-<DC>.jsonl, or
    history-client-<DC>-<i>.jsonl when a datacenter has several client hosts."""
    for dc in dcs:
        if name == f"history-client-{dc}.jsonl" or re.fullmatch(rf"history-client-{re.escape(dc)}-\d+\.jsonl", name):
            return dc
    m = _HISTORY.fullmatch(name)
    return m.group(1) if m else None


def demand_from_run(run_dir, system: str | None = None):
    """Per key and datacenter, the reads and writes the clients of a run made: a DataFrame of
    ``key_id`` (int64), ``dc`` (str), ``reads``, ``writes`` (int64), rows with demand only,
    sorted by key id and datacenter.

    ``run_dir`` is a run directory (or the ``runs/latest`` link): its ``manifest.json`` lists the
    trials (``dir``, ``system``); each trial's ``clients/history-client-<DC>.jsonl`` has one
    operation per line, whose ``r`` keys are reads and ``w`` keys writes; only operations with
    ``ok`` count, and the loaders' ``history-load-*.jsonl`` do not. ``system``: whose trials;
    by default the first system of the manifest (said on stderr when the run has several).
    Keys not named ``user<id>`` are left out, their count said on stderr."""
    import pandas as pd
    run = Path(run_dir)
    doc = read_manifest(run)
    trials = [t for t in doc.get("trials") or [] if isinstance(t, dict) and "dir" in t and "system" in t]
    systems = list(dict.fromkeys(t["system"] for t in trials))
    if not systems:
        raise ConfigError("RUN", f"{run}: the manifest lists no trials (a run made before manifests listed them, "
                          "or one that has not run a trial yet)")
    if system is None:
        system = systems[0]
        if len(systems) > 1:
            _stderr(f"demand of {system}'s trials; the run also has {', '.join(systems[1:])} (--system picks one)")
    elif system not in systems:
        raise ConfigError("--system", f"{system!r} has no trial in {run}; it has {', '.join(systems)}")
    reads: Counter = Counter()
    writes: Counter = Counter()
    other = 0
    files = 0
    for t in trials:
        if t["system"] != system:
            continue
        clients = run / t["dir"] / "clients"
        dcs = list((t.get("client_logs") or {}).keys())
        for h in sorted(clients.glob("history-client-*.jsonl")):
            dc = _history_dc(h.name, dcs)
            if dc is None:
                continue
            files += 1
            with open(h, encoding="utf-8") as lines:
                for no, line in enumerate(lines, 1):
                    if not line.strip():
                        continue
                    try:
                        op = json.loads(line)
                    except json.JSONDecodeError:
                        raise ConfigError("RUN", f"{h}:{no}: not a JSON object; the history is damaged") from None
                    if not op.get("ok"):
                        continue
                    for counter, keys in ((reads, op.get("r")), (writes, op.get("w"))):
                        for k in keys or ():
                            m = _KEY.fullmatch(k)
                            if m is None:
                                other += 1
                            else:
                                counter[int(m.group(1)), dc] += 1
    if files == 0:
        raise ConfigError("RUN", f"{run}: no client histories (clients/history-client-<DC>.jsonl) in {system}'s trials")
    if other:
        _stderr(f"{other} access(es) to keys not named user<id> left out")
    pairs = sorted(set(reads) | set(writes))
    if not pairs:
        return _empty_demand()
    df = pd.DataFrame({"key_id": np.fromiter((p[0] for p in pairs), dtype=np.int64, count=len(pairs)),
                       "dc": [p[1] for p in pairs],
                       "reads": np.fromiter((reads.get(p, 0) for p in pairs), dtype=np.int64, count=len(pairs)),
                       "writes": np.fromiter((writes.get(p, 0) for p in pairs), dtype=np.int64, count=len(pairs))})
    return df


def permutation_multiplier(n: int) -> int:
    """m of the workload's key permutation: 2654435761 mod n, increased by 1 (mod n) until it
    is coprime with n and not 0; 1 for n == 1."""
    if n < 1:
        raise ConfigError("keys", f"must be at least 1, got {n}")
    if n == 1:
        return 1
    m = PERMUTATION_MULTIPLIER % n
    while m == 0 or math.gcd(m, n) != 1:
        m = (m + 1) % n
    return m


def id_of_rank(n: int) -> np.ndarray:
    """[r - 1] -> the key id of popularity rank r in [1, n]: ((r - 1) m + 40503) mod n."""
    r = np.arange(n, dtype=object if n > 3_000_000_000 else np.int64)
    return np.asarray((r * permutation_multiplier(n) + PERMUTATION_OFFSET) % n, dtype=np.int64)


def draw_probabilities(n: int, zipf: float, locality: float, n_dcs: int) -> np.ndarray:
    """[id, d]: the probability that one key draw of a client in datacenter index d is key id
    (the rule of ``expected_demand``)."""
    if not zipf > 0:
        raise ConfigError("zipf", f"must be > 0, got {zipf}")
    if not 0 <= locality <= 1:
        raise ConfigError("locality", f"must be in [0, 1], got {locality}")
    ranks = np.arange(1, n + 1, dtype=np.float64)
    p_rank = ranks ** -float(zipf)
    p_rank /= p_rank.sum()
    p_id = np.empty(n)
    p_id[id_of_rank(n)] = p_rank
    out = np.empty((n, n_dcs))
    for d in range(n_dcs):
        # DC d's own order: the key of global id g is (g + d (n // D)) mod n, so its
        # probability at id is the global one at id - shift: np.roll by shift.
        out[:, d] = (1 - locality) * p_id + locality * np.roll(p_id, d * (n // n_dcs))
    return out


def _per_dc(value, dcs: list[str], name: str) -> np.ndarray:
    if isinstance(value, dict):
        unknown = set(value) - set(dcs)
        if unknown:
            raise ConfigError(name, f"unknown datacenter(s) {sorted(unknown)}; the datacenters are {dcs}")
        arr = np.array([float(value.get(dc, 0)) for dc in dcs])
    elif np.ndim(value) == 0:
        arr = np.full(len(dcs), float(value))
    else:
        arr = np.asarray(value, dtype=float)
        if arr.shape != (len(dcs),):
            raise ConfigError(name, f"needs one number per datacenter ({len(dcs)}), got {len(arr)}")
    if (arr < 0).any() or not np.isfinite(arr).all():
        raise ConfigError(name, f"must be finite and >= 0, got {arr.tolist()}")
    return arr


def expected_demand(n: int, zipf: float, locality: float, dcs: list[str], reads_per_dc, writes_per_dc):
    """The workload model's expected demand: per key id and datacenter, the expected number of
    reads and writes (float64 columns ``reads`` and ``writes``: expected counts are not whole;
    ``place`` takes floats and integers alike), rows with demand > 0 only.

    ``reads_per_dc``/``writes_per_dc``: the number of key draws for reads / writes the
    clients of each datacenter make (a number for every datacenter, a sequence in ``dcs``
    order or a mapping dc -> number); a 5-key read-only transaction is 5 draws, as
    ``demand_from_run`` counts it.

    **The workload's key choice** (the single source of truth; Java ``KeySpace`` and
    ``TxnWorkload.chooseKeys`` implement exactly this):

    - keys are ``user<id>``, id in 0..n-1;
    - each draw takes a popularity rank r in [1, n] from the exact Zipf(``zipf``) distribution,
      P(r) = r^-zipf / sum_{s=1..n} s^-zipf;
    - rank r is key id = ((r - 1) m + 40503) mod n, where m = 2654435761 mod n, increased by 1
      (mod n) until gcd(m, n) == 1 and m != 0 (m = 1 for n == 1), a bijection;
    - with ``locality`` L in [0, 1], each draw of a client in datacenter index d (topology
      order, D datacenters) is, with probability L, taken from that datacenter's own order:
      id_d = (id + d (n // D)) mod n; else (probability 1 - L) the global id.

    So P_d(id) = (1 - L) P(rank of id) + L P(rank of (id - d (n // D)) mod n), and the expected
    reads of id in d are reads_per_dc[d] x P_d(id). (Java draws again when one operation would
    name a key twice; the model ignores that, which flattens the hottest keys of multi-key
    operations by a little.)"""
    n = int(n)
    dcs = list(dcs)
    r = _per_dc(reads_per_dc, dcs, "reads_per_dc")
    w = _per_dc(writes_per_dc, dcs, "writes_per_dc")
    p = draw_probabilities(n, zipf, locality, len(dcs))
    return _dense_to_long(p * r, p * w, dcs)


def _dense_to_long(reads: np.ndarray, writes: np.ndarray, dcs: list[str]):
    import pandas as pd
    n, d = reads.shape
    keep = ((reads + writes) > 0).ravel()
    ids = np.repeat(np.arange(n, dtype=np.int64), d)[keep]
    dc_index = np.tile(np.arange(d), n)[keep]
    return pd.DataFrame({"key_id": ids, "dc": np.asarray(dcs, dtype=object)[dc_index],
                         "reads": reads.ravel()[keep], "writes": writes.ravel()[keep]})


def demand_matrices(demand, dcs: list[str], keys: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Long demand as dense [keys, D] reads and writes (float64) and the key count (``keys``,
    by default the largest key id + 1)."""
    missing = [c for c in DEMAND_COLUMNS if c not in demand.columns]
    if missing:
        raise ConfigError("--demand", f"has no column(s) {missing}; a demand has {list(DEMAND_COLUMNS)} "
                          "(k2bench demand RUN writes one)")
    ids = demand["key_id"].to_numpy()
    if len(ids) and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0):
        raise ConfigError("--demand", "key_id must be integers >= 0")
    top = int(ids.max()) + 1 if len(ids) else 0
    if keys is None:
        if top == 0:
            raise ConfigError("--demand", "is empty: no key has demand; give --keys N to place N keys anyway")
        keys = top
    elif keys < 1:
        raise ConfigError("--keys", f"must be at least 1, got {keys}")
    elif top > keys:
        raise ConfigError("--keys", f"is {keys}, but the demand names key id {top - 1}; give --keys {top} or more")
    codes = demand["dc"].map({dc: i for i, dc in enumerate(dcs)})
    if codes.isna().any():
        unknown = sorted(set(demand["dc"][codes.isna()].astype(str)))
        raise ConfigError("--demand", f"names datacenter(s) {unknown} the topology does not have; its datacenters are "
                          f"{dcs}")
    flat = ids.astype(np.int64) * len(dcs) + codes.to_numpy(dtype=np.int64)
    out = []
    for col in ("reads", "writes"):
        v = demand[col].to_numpy(dtype=np.float64)
        if len(v) and (not np.isfinite(v).all() or v.min() < 0):
            raise ConfigError("--demand", f"{col} must be finite and >= 0")
        out.append(np.bincount(flat, weights=v, minlength=keys * len(dcs)).reshape(keys, len(dcs)))
    return out[0], out[1], keys
