"""Latency-aware replica placement (``k2bench demand``, ``k2bench place``), after "Latency-aware
replica placement": per key, the f replica datacenters chosen from the key's per-datacenter
demand and the inter-datacenter delays, written as a placement table (``placement: table``).

Two models, both a mixed-integer program solved by HiGHS (``scipy.optimize.milp``):

- **BA** ("basic availability"): minimise the demand-weighted mean read latency with every
  replica up.
- **N-1C**: minimise the read latency under the worst single-datacenter failure (per bucket),
  with 0.01 x the BA objective as a tie-break (``N1C_NORMAL_WEIGHT``) so that among the
  placements equally good under failure the one best in normal operation wins.

**The latency model is K2's read path** (PaRiS*'s too). A read from datacenter i of a key
costs 0 when i holds a replica of the key, else rtt(i, j) to the nearest replica datacenter
j: K2 reads a non-local key from its nearest replica in one wide-area round. K2's datacenter
cache makes such a read a local one when it hits; with ``cache_keys`` (a datacenter's cache
capacity in keys; the ``placement`` experiment gives K2's) the objective counts it
(``cache_hits``: a read of a key hits when, since the key's last write by another datacenter,
its datacenter read or wrote it and LRU still holds it, in steady state; a key's hit
probability depends on the placement only through which keys compete for the cache, so the
program is solved with the hits of the previous solution's placement until the placement
settles). Without it the objective is the nearest replica's latency, for K2 an upper bound.
Writes are local in K2 (replicated asynchronously), so the objective counts reads only;
writes enter the cache term (they invalidate other datacenters' copies) and are reported.
**A failure** is the one the paper's experiment ran (§VIII-E): the storage of datacenter k
stops, its application servers go on and send their requests to the closest surviving
datacenter c (by RTT), whose coordinator reads the replicas; so k's readers keep reading at
rtt(k, c) + c's latency to its nearest surviving replica (``redirect_dc``, ``set_latency``;
the paper's form and the solver's objective). (Where the RTTs break the triangle
inequality, 8 pairs of the K2 paper's matrix, this is above rtt(k, nearest surviving
replica), a user-to-replica form the paper's model section may use; the excerpt we have
does not give it.) They count as cache misses, one hop from c (the paper's coordinator;
the placement report predicts K2's client instead, which shares c's cache and pays the hop
twice on a miss: ``placement_report.failure_stats``). N-1C's objective is the paper's
per-key worst case over every single-datacenter failure and every reader, displaced ones
included.

**The program** (``solve``). The paper's form chooses x[b, j] (bucket b has a replica at j)
with routing variables y (and, for N-1C, per failure z and a worst-case t_b); since the
nearest-replica routing and a bucket's worst failure are functions of its replica set alone,
the same program is solved as a choice of one of the C(D, f) replica sets per bucket, whose
cost is computed exactly beforehand. Same optimum, far tighter LP relaxation: N-1C on a few
hundred buckets solves in under a second instead of running past 15 minutes (both forms are
kept; the tests check both against brute force).

**Storage balance.** Every datacenter holds at most ceil(balance x f x N / D) keys (N: all
keys, those without demand included; D: datacenters). Without the bound every hot key would
land in the central datacenters.

**Buckets** (``bucketize``; so a million keys solve in seconds on two cores). The objective is
linear in a key's read vector, so keys whose read vectors point the same way want the same
replicas and can share one set of variables:

1. the ``hot`` most-read keys (default 256) get a bucket each;
2. every other key with reads is grouped by its *signature*, its normalised read vector
   (reads per datacenter / the key's reads) with each share rounded to a multiple of
   1/``levels`` (default 4): keys read mostly in one datacenter, or split between two, etc.,
   group together whatever their volume;
3. keys with no reads (never read, or written only) form one group of their own;
4. every group is cut into chunks of at most ``chunk`` keys (default ceil(N / (4 D))), its
   keys taken from the most read down (ties by id), so the storage bound can split a group
   over several replica sets, and the chunk holding a group's hottest keys is the one the
   optimiser gives the best set when the bound binds.

A bucket's demand is the sum of its keys'. Bucket labels are numbered from the most read
bucket down. The solve's (and the table's) granularity is the bucket, the predictions are
exact for the keys' own demand.

**Table** (``write_table``/``read_table``): the CSV file ``placement: table`` reads (Java
``PlacementTable``): ``#`` comments, the header ``ids,replicas,bucket``, then rows
``id`` or ``first-last``, the f replica datacenters joined by ``;`` (the first loads the
keys: here the replica of the bucket that reads most), the bucket label.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Callable

import numpy as np

from .errors import ConfigError

MODELS = ("ba", "n-1c")
def code_fingerprint() -> str:
    """What a placement's output depends on besides its inputs: this module's source and the
    solver's version (part of the cache key of ``topology.place``'s tables, so a changed
    optimiser never reuses a table the old one wrote)."""
    import hashlib
    import scipy
    return hashlib.sha256(Path(__file__).read_bytes() + scipy.__version__.encode()).hexdigest()[:16]


MODEL_VERSION = 2  # bump when a table for the same inputs would come out differently
CACHE_ROUNDS = 4  # with a cache term: re-solves on the last placement's hits, at most
N1C_NORMAL_WEIGHT = 0.01  # N-1C's tie-break: this x the BA objective is added to the failure objective
HEADER = "ids,replicas,bucket"
HEADERS = ("ids,replicas", HEADER)  # what the loaders accept
DEMAND_COLUMNS = ("key_id", "dc", "reads", "writes")
FORMULATIONS = ("sets", "xyz")  # solve's two equivalent programs (see there)

# The workload's key permutation (Java org.k2bench.ycsb.KeySpace): rank r -> ((r-1) m + OFFSET) mod n.
PERMUTATION_MULTIPLIER = 2_654_435_761
PERMUTATION_OFFSET = 40_503


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ topology

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
    import yaml
    source = "topology"
    if isinstance(topology, (str, Path)):
        path = Path(topology)
        source = str(path)
        try:
            doc = yaml.safe_load(path.read_text())
        except FileNotFoundError:
            raise ConfigError("--topology", f"{path} does not exist") from None
        except yaml.YAMLError as e:
            raise ConfigError("--topology", f"{path} is not YAML: {e}") from None
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


# ------------------------------------------------------------------ the table file

def _atomic_write(path: Path, write: Callable, binary: bool = False) -> None:
    """``write(file)`` into a temporary file beside ``path``, renamed over it once complete
    (text, UTF-8, or with ``binary`` bytes)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # as an ordinary file (mkstemp makes it private)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as out:
            write(out)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all (temporary file + rename)."""
    _atomic_write(Path(path), lambda out: out.write(data), binary=True)


def table_text_rows(replicas_per_id: np.ndarray, sets: list[tuple[str, ...]], bucket_per_id) -> list[str]:
    """The table's rows (no header): sorted by id, consecutive ids with the same replicas and
    bucket merged into ranges."""
    sid = np.asarray(replicas_per_id, dtype=np.int64)
    n = len(sid)
    labels = np.zeros(n, dtype=np.int64) if bucket_per_id is None else np.asarray(bucket_per_id, dtype=np.int64)
    if n == 0:
        raise ValueError("a placement table needs at least one key")
    if len(labels) != n:
        raise ValueError(f"{len(labels)} bucket labels for {n} keys")
    if sid.min() < 0 or sid.max() >= len(sets):
        raise ValueError(f"replica set indexes must be in 0..{len(sets) - 1}")
    if len({len(s) for s in sets}) != 1 or any(len(set(s)) != len(s) for s in sets):
        raise ValueError(f"every replica set needs the same number of distinct datacenters, got {sets}")
    change = np.flatnonzero((sid[1:] != sid[:-1]) | (labels[1:] != labels[:-1])) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [n])) - 1
    names = [";".join(s) for s in sets]
    return [(f"{a}" if a == b else f"{a}-{b}") + f",{names[s]},{lab}"
        for a, b, s, lab in zip(starts.tolist(), ends.tolist(), sid[starts].tolist(), labels[starts].tolist())]


def write_table(path, replicas_per_id: np.ndarray, sets: list[tuple[str, ...]], bucket_per_id,
                comment_lines: list[str] = ()) -> None:
    """Writes a placement table: ``replicas_per_id[id]`` indexes ``sets`` (tuples of datacenter
    names in replica order, the first loads the key), ``bucket_per_id`` the bucket labels (None:
    0 everywhere). ``comment_lines`` go first, each as ``# line``. Whole or not at all: written
    to a temporary file that is renamed over ``path``."""
    rows = table_text_rows(replicas_per_id, sets, bucket_per_id)

    def write(out):
        for c in comment_lines:
            for line in str(c).splitlines() or [""]:
                out.write(f"# {line}\n" if line else "#\n")
        out.write(HEADER + "\n")
        out.write("\n".join(rows))
        out.write("\n")
    _atomic_write(Path(path), write)


def read_table(path, dcs: list[str], f: int, keys: int | None = None) -> tuple[np.ndarray, list[tuple[str, ...]], np.ndarray]:
    """A placement table as (replica set index per key id, the sets as tuples of datacenter
    names in replica order, bucket label per id; -1 everywhere for a table without a bucket
    column). Refuses, with a ConfigError naming file:line and the fix, what the Java loader
    refuses: a bad header, a bad row or id range, an unknown or repeated datacenter, a wrong
    replica count, a gap or an overlap between rows; with ``keys``, also a table that does not
    cover exactly the ids 0..keys-1."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("placement_table", f"{path}: no such file; write one with k2bench place") from None
    header, has_bucket = False, False
    index: dict[tuple[str, ...], int] = {}
    sets: list[tuple[str, ...]] = []
    firsts, lasts, set_of_row, label_of_row, line_of_row = [], [], [], [], []
    known = set(dcs)
    by_cell: dict[str, int] = {}  # a replicas cell seen before: its set (validated once)
    width = 0
    for no, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s or s[0] == "#":
            continue
        if not header:
            if s not in HEADERS:
                raise ConfigError("placement_table", f"{path}:{no}: the header must be 'ids,replicas' or "
                                  f"'ids,replicas,bucket', got {s!r}")
            header, has_bucket = True, s == HEADER
            width = 3 if has_bucket else 2
            continue
        cells = s.split(",")
        if len(cells) != width:
            raise ConfigError("placement_table", f"{path}:{no}: a row is "
                              f"'{'ids,replicas,bucket' if has_bucket else 'ids,replicas'}' under this header, got {s!r}")
        ids = cells[0].strip()
        a, dash, b = ids.partition("-")
        if not (a.isascii() and a.isdigit() and (not dash or (b.isascii() and b.isdigit() and int(b) >= int(a)))):
            raise ConfigError("placement_table", f"{path}:{no}: ids must be a key id or a range 'first-last' of ids "
                              f">= 0 (first <= last), got {ids!r}")
        first = int(a)
        last = int(b) if dash else first
        si = by_cell.get(cells[1])
        if si is None:
            names = tuple(x.strip() for x in cells[1].split(";"))
            if len(names) != f:
                raise ConfigError("placement_table", f"{path}:{no}: lists {len(names)} replica datacenters "
                                  f"({cells[1].strip()}), the topology's replication_factor is {f}; place again "
                                  f"with f = {f}")
            for i, name in enumerate(names):
                if name not in known:
                    raise ConfigError("placement_table", f"{path}:{no}: unknown datacenter {name!r}; the topology's "
                                      f"datacenters are {list(dcs)}")
                if name in names[:i]:
                    raise ConfigError("placement_table", f"{path}:{no}: {name} is listed twice; a key's {f} replicas "
                                      f"are at {f} distinct datacenters")
            if names not in index:
                index[names] = len(sets)
                sets.append(names)
            si = by_cell[cells[1]] = index[names]
        label = -1
        if has_bucket:
            try:
                label = int(cells[2])
            except ValueError:
                raise ConfigError("placement_table", f"{path}:{no}: the bucket must be an integer, "
                                  f"got {cells[2]!r}") from None
        firsts.append(first)
        lasts.append(last)
        set_of_row.append(si)
        label_of_row.append(label)
        line_of_row.append(no)
    if not header or not firsts:
        raise ConfigError("placement_table", f"{path}: no rows; the header '{HEADER}' and one row per key id or id "
                          "range are needed")
    firsts_a, lasts_a = np.asarray(firsts, dtype=np.int64), np.asarray(lasts, dtype=np.int64)
    order = np.lexsort((np.asarray(line_of_row), firsts_a))  # by first id, then by line
    expect = np.concatenate(([0], lasts_a[order][:-1] + 1))  # where each row must start
    bad = np.flatnonzero(firsts_a[order] != expect)
    if len(bad):
        r, nxt = int(order[bad[0]]), int(expect[bad[0]])
        if firsts[r] > nxt:
            raise ConfigError("placement_table", f"{path}:{line_of_row[r]}: the ids {nxt}..{firsts[r] - 1} are in no "
                              "row; every key id from 0 on needs its replicas")
        raise ConfigError("placement_table", f"{path}:{line_of_row[r]}: the ids from {firsts[r]} overlap an "
                          "earlier row; each key id is in exactly one row")
    nxt = int(lasts_a.max()) + 1
    if keys is not None and nxt != keys:
        raise ConfigError("placement_table", f"{path}: places {nxt} keys, the workload has {keys}; place again "
                          f"with --keys {keys}")
    lengths = lasts_a - firsts_a + 1
    starts = np.repeat(firsts_a, lengths)
    offsets = np.arange(nxt, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    ids = starts + offsets  # the ids of the rows, in file order
    set_per_id = np.empty(nxt, dtype=np.int64)
    bucket_per_id = np.empty(nxt, dtype=np.int64)
    set_per_id[ids] = np.repeat(np.asarray(set_of_row, dtype=np.int64), lengths)
    bucket_per_id[ids] = np.repeat(np.asarray(label_of_row, dtype=np.int64), lengths)
    return set_per_id, sets, bucket_per_id


# ------------------------------------------------------------------ demand

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
    manifest = run / "manifest.json"
    if not manifest.exists():
        raise ConfigError("RUN", f"{run} is not a run directory (no manifest.json)")
    try:
        doc = json.loads(manifest.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError("RUN", f"{manifest} is not JSON ({e.msg} at line {e.lineno})") from None
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


# ------------------------------------------------------------------ buckets

@dataclass
class Bucketing:
    """How keys are bucketed (see the module docstring): ``hot`` most-read keys one bucket
    each; the others by their read vector's shares rounded to multiples of 1/``levels``;
    groups cut into chunks of at most ``chunk`` keys (None: ceil(N / (4 D)))."""
    hot: int = 256
    levels: int = 4
    chunk: int | None = None

    @classmethod
    def parse(cls, spec: str | None) -> "Bucketing":
        """``hot=256,levels=4,chunk=40000`` (any subset)."""
        b = cls()
        for part in (spec or "").split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or name not in ("hot", "levels", "chunk"):
                raise ConfigError("--buckets", f"{part.strip()!r}: give hot=N, levels=N and/or chunk=N, comma-separated")
            try:
                v = int(value)
            except ValueError:
                raise ConfigError("--buckets", f"{name} must be an integer, got {value.strip()!r}") from None
            if v < (0 if name == "hot" else 1):
                raise ConfigError("--buckets", f"{name} must be >= {0 if name == 'hot' else 1}, got {v}")
            setattr(b, name, v)
        return b


def bucketize(reads: np.ndarray, bucketing: Bucketing | None = None) -> np.ndarray:
    """The bucket label of every key id of ``reads`` ([N, D]); labels 0.. from the most read
    bucket down (see the module docstring)."""
    b = bucketing or Bucketing()
    n, d = reads.shape
    if (b.levels + 1) ** d >= 2 ** 62:
        raise ConfigError("--buckets", f"levels={b.levels} is too fine for {d} datacenters")
    total = reads.sum(axis=1)
    read = total > 0
    ids = np.arange(n, dtype=np.int64)
    group = np.full(n, -1, dtype=np.int64)  # -1: no reads
    share = reads[read] / total[read, None]
    q = np.rint(share * b.levels).astype(np.int64)
    group[read] = q @ ((b.levels + 1) ** np.arange(d, dtype=np.int64))
    n_hot = min(b.hot, int(read.sum()))
    if n_hot:
        hottest = np.lexsort((ids, -total))[:n_hot]
        group[hottest] = (b.levels + 1) ** d + np.arange(n_hot)  # a group of its own each
    chunk = b.chunk or max(1, math.ceil(n / (4 * d)))
    order = np.lexsort((ids, -total, group))  # by group, in it from the most read down
    g_sorted = group[order]
    first = np.flatnonzero(np.concatenate(([True], g_sorted[1:] != g_sorted[:-1])))
    group_no = np.cumsum(np.concatenate(([True], g_sorted[1:] != g_sorted[:-1]))) - 1
    pos = np.arange(n) - first[group_no]
    raw = np.empty(n, dtype=np.int64)
    raw[order] = group_no * (n // chunk + 2) + pos // chunk
    _, label = np.unique(raw, return_inverse=True)
    label = label.ravel()
    # number the buckets from the most read down (ties: the smallest id first)
    nb = int(label.max()) + 1
    mass = np.bincount(label, weights=total, minlength=nb)
    smallest = np.full(nb, n, dtype=np.int64)
    np.minimum.at(smallest, label, ids)
    rank = np.empty(nb, dtype=np.int64)
    rank[np.lexsort((smallest, -mass))] = np.arange(nb)
    return rank[label]


# ------------------------------------------------------------------ the program

@dataclass
class Solved:
    sets: list[tuple[int, ...]]  # per bucket: its replica datacenters (indexes, ascending)
    objective: float             # the solver's objective value
    seconds: float
    status: str
    gap: float | None
    variables: int
    constraints: int
    threshold_ms: float | None = None  # a percentile objective's optimum (the percentile's latency)


def check_args(topo: Topology, model: str, balance: float, one_per_group: bool, keys: int) -> None:
    """The model, bound and groups fit the topology (else a ConfigError naming the flag)."""
    d, f = topo.d, topo.f
    if model not in MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {model!r}")
    if model == "n-1c" and f < 2:
        raise ConfigError("--model", "n-1c plans for a datacenter failure, so a key needs a second replica: "
                          f"replication_factor must be >= 2, got {f}")
    if one_per_group and d % f:
        raise ConfigError("--one-per-group", f"the groups (datacenter index modulo f) need f ({f}) to divide the "
                          f"{d} datacenters")
    if not balance >= 1:
        raise ConfigError("--balance", f"must be >= 1 (1: every datacenter holds f N / D keys), got {balance}")
    cap = capacity(keys, f, d, balance)
    if cap * d < f * keys:
        raise ConfigError("--balance", f"{balance}: {d} datacenters of at most {cap} keys cannot hold {f} replicas "
                          f"of {keys} keys; raise it")


def capacity(keys: int, f: int, d: int, balance: float) -> int:
    """The most keys a datacenter may hold: ceil(balance f N / D)."""
    return math.ceil(balance * f * keys / d - 1e-9)


def che_time(rates: np.ndarray, capacity: float) -> float:
    """The characteristic time T of Che's approximation of an LRU cache of ``capacity`` keys
    under independent requests at ``rates``: sum_k (1 - exp(-rate_k T)) = capacity (by
    bisection); inf when every requested key fits, 0 without a cache."""
    live = rates > 0
    if capacity <= 0 or not live.any():
        return 0.0
    if capacity >= live.sum():
        return math.inf
    lo, hi = 0.0, 1.0
    while (1 - np.exp(-rates * hi)).sum() < capacity:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (1 - np.exp(-rates * mid)).sum() < capacity else (lo, mid)
    return hi


def lru_hits(rates: np.ndarray, capacity: float) -> np.ndarray:
    """Che's approximation: key k is in an LRU cache of ``capacity`` keys with probability
    1 - exp(-rate_k T) (``che_time``). All ones (for keys requested) when every key fits."""
    return _in_cache(rates, che_time(rates, capacity))


def _in_cache(rates: np.ndarray, t: float) -> np.ndarray:
    if t == math.inf:
        return (rates > 0).astype(float)
    return 1 - np.exp(-rates * t)


def in_cache_filling(rates: np.ndarray, t: float, a: float, b: float) -> np.ndarray:
    """LRU's share of Che's approximation over [a, b] s from an empty cache at 0, ``rates``
    per second and ``t`` Che's time in seconds: an empty cache has touched as many distinct
    keys as it holds, in expectation, at t itself, so it evicts nothing before t (the
    freshness term already says whether a key was touched) and holds a key with
    probability 1 - exp(-rate t) after it."""
    if t == math.inf or b <= t:
        return np.ones_like(rates, dtype=np.float64)
    before = max(0.0, t - a) / (b - a)
    return before + (1 - before) * _in_cache(rates, t)


def cache_hits(reads: np.ndarray, writes: np.ndarray, local: np.ndarray, capacity: float,
               window: tuple[float, float, float] | None = None, filling: bool = False) -> np.ndarray:
    """[key, dc]: in steady state, the probability that a read of key k in datacenter i hits
    i's cache (K2 §III-A: non-replica values are cached after a fetch, and local clients'
    writes of non-replica keys; LRU of ``capacity`` keys): i read or wrote k since another
    datacenter last wrote it, (r + w_i) / (r + w_i + w_others) with Poisson reads and
    writes at the demand's rates, times the probability that LRU holds k among i's non-local
    keys (``lru_hits``). Given for every key as if i held no replica of it (a read of a local
    key costs 0 either way): ``local`` says only which keys compete for i's cache, so a key the
    next solve moves away from i is not charged as if i could not cache it.

    ``window = (per_s, a, b)``: not in steady state but from an empty cache at time 0, averaged
    over the measurement window [a, b] s, the counts times ``per_s`` being rates per second:
    the first term becomes (r + w_i) / c x (1 - exp(-c t)) with c = r + w_i + w_others, whose
    mean over [a, b] is 1 - (exp(-c a) - exp(-c b)) / (c (b - a)) (what a trial measures).
    With ``filling`` too, LRU is not at its steady state either (``in_cache_filling``; the
    placement report's prediction: a trial's caches evicted nothing in run 20261202T213511Z;
    the solver's cache term keeps the steady state)."""
    hit = np.zeros_like(reads, dtype=np.float64)
    w_all = writes.sum(axis=1)
    for i in range(reads.shape[1]):
        mine = reads[:, i] + writes[:, i]
        c = mine + (w_all - writes[:, i])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            fresh = np.where(c > 0, mine / c, 0.0)
            if window is not None:
                per_s, a, b = window
                cs = c * per_s
                fresh = fresh * np.where(cs > 0, 1 - (np.exp(-cs * a) - np.exp(-cs * b)) / (cs * (b - a)), 0.0)
        t = che_time(mine[~local[:, i]], capacity)
        if filling and window is not None:
            per_s, a, b = window
            hit[:, i] = fresh * in_cache_filling(mine * per_s, t / per_s, a, b)
        else:
            hit[:, i] = fresh * _in_cache(mine, t)
    return hit


def objective_quantile(objective: str) -> float | None:
    """The quantile a percentile objective names (``p90``: 0.9), None for ``mean``; else a
    ConfigError naming --objective."""
    if objective == "mean":
        return None
    try:
        q = float(objective[1:]) / 100 if objective[:1] == "p" else None
    except ValueError:
        q = None
    if q is None or not 0 < q < 1:
        raise ConfigError("--objective", f"must be mean or a percentile p1..p99.9 (e.g. p90), got {objective!r}")
    return q


def _coverage_groups(reads_b: np.ndarray, hits_b: np.ndarray, candidates: list[tuple[int, ...]], topo: Topology,
                     model: str):
    """What a percentile objective bounds, per population of reads: (misses' weights, [set, i]
    latency, the share of cache hits), weights and hits as shares of the population's reads.
    BA: every read in normal operation. N-1C: for each datacenter k, every read under k's
    failure (k's own readers redirected, ``set_latency``)."""
    out = []
    total = reads_b.sum()
    if total <= 0:
        return out
    for k in ([None] if model == "ba" else range(topo.d)):
        hits = hits_b if k is None else failure_hits(hits_b, k)
        out.append(((reads_b - hits) / total, set_latency(candidates, topo.rtt, k), float(hits.sum() / total)))
    return out


def _solve_xyz(w: np.ndarray, sizes: np.ndarray, topo: Topology, model: str, cap: int, one_per_group: bool,
               time_limit_s: float, mip_rel_gap: float):
    """The program as the paper states it (``formulation="xyz"``; weights ``w``: each bucket's
    reads per datacenter / all reads). x[b, j] binary: bucket b has a replica at j;
    sum_j x[b, j] = f. y[b, i, j] in [0, 1] (for the datacenters i that read b): i reads b
    from j; sum_j y = 1, y <= x. BA minimises sum_b sum_i w[b, i] sum_j rtt(i, j) y[b, i, j].
    Storage: sum_b size_b x[b, j] <= cap. one_per_group: sum_{j = g mod f} x[b, j] = 1.
    N-1C: z[b, k, i, j] (j != k) routes i's reads to a survivor of k's failure (sum_j z = 1,
    z <= x), t_b >= sum_i w[b, i] sum_{j != k} lat_k(i, j) z[b, k, i, j] for every k, where
    lat_k(i, j) = rtt(i, j), and for k's own readers, sent to c = redirect_dc(k),
    rtt(k, c) + rtt(c, j),
    and the objective is sum_b t_b + N1C_NORMAL_WEIGHT x the BA objective. Same optimum as
    the set form; its LP relaxation is weak under N-1C (fractional x shrink the worst failure),
    so HiGHS branches long: a few hundred buckets of N-1C ran past 15 minutes here."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    d, f, rtt = topo.d, topo.f, topo.rtt
    B = len(sizes)
    pb, pi = np.nonzero(w > 0)  # (bucket, reader) pairs
    P = len(pb)
    nx, ny = B * d, P * d
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    nrow = 0

    def add(r, c, v, low, high, count):
        nonlocal nrow
        rows.append(np.asarray(r, dtype=np.int64) + nrow)
        cols.append(np.asarray(c, dtype=np.int64))
        vals.append(np.broadcast_to(np.asarray(v, dtype=np.float64), np.shape(c)).ravel())
        lo.append(np.full(count, float(low)))
        hi.append(np.full(count, float(high)))
        nrow += count

    jj = np.arange(d)
    xcol = (np.arange(B)[:, None] * d + jj).ravel()
    add(np.repeat(np.arange(B), d), xcol, 1.0, f, f, B)                      # sum_j x = f
    ycol = nx + np.arange(ny)
    add(np.repeat(np.arange(P), d), ycol, 1.0, 1, 1, P)                      # sum_j y = 1
    ry = np.arange(ny)
    add(np.concatenate([ry, ry]), np.concatenate([ycol, np.repeat(pb, d) * d + np.tile(jj, P)]),
        np.concatenate([np.ones(ny), -np.ones(ny)]), -np.inf, 0, ny)        # y <= x
    add(np.tile(jj, B), xcol, np.repeat(sizes.astype(np.float64), d), -np.inf, cap, d)  # storage
    if one_per_group:
        add(np.repeat(np.arange(B), d) * f + np.tile(jj % f, B), xcol, 1.0, 1, 1, B * f)
    c = np.zeros(nx + ny)
    c[nx:] = (N1C_NORMAL_WEIGHT if model == "n-1c" else 1.0) * (w[pb, pi][:, None] * rtt[pi, :]).ravel()
    n_vars = nx + ny
    tcols = None
    if model == "n-1c":
        qp = np.repeat(np.arange(P), d)  # q = (pair p, failed k): z over the survivors j != k
        qk = np.tile(jj, P)
        Q = len(qp)
        jsurv = np.tile(np.arange(d - 1), Q).reshape(Q, d - 1)
        jsurv = jsurv + (jsurv >= qk[:, None])
        zcol = n_vars + np.arange(Q * (d - 1))
        n_vars += Q * (d - 1)
        tcols = n_vars + np.arange(B)
        n_vars += B
        add(np.repeat(np.arange(Q), d - 1), zcol, 1.0, 1, 1, Q)              # sum_j z = 1
        rz = np.arange(Q * (d - 1))
        qb = pb[qp]
        add(np.concatenate([rz, rz]), np.concatenate([zcol, np.repeat(qb, d - 1) * d + jsurv.ravel()]),
            np.concatenate([np.ones(len(rz)), -np.ones(len(rz))]), -np.inf, 0, len(rz))  # z <= x
        redirect = np.array([redirect_dc(rtt, k) for k in range(d)])
        own = pi[qp] == qk  # k's own readers, sent to redirect[k]
        via = np.where(own, redirect[qk], pi[qp])
        hop = np.where(own, rtt[qk, redirect[qk]], 0.0)
        coef = (w[qb, pi[qp]][:, None] * (hop[:, None] + rtt[via[:, None], jsurv])).ravel()
        add(np.concatenate([np.repeat(qb * d + qk, d - 1), np.arange(B * d)]),
            np.concatenate([zcol, np.repeat(tcols, d)]),
            np.concatenate([coef, -np.ones(B * d)]), -np.inf, 0, B * d)      # t_b >= failure latency
        c = np.concatenate([c, np.zeros(Q * (d - 1)), np.ones(B)])
    A = csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nrow, n_vars))
    integrality = np.zeros(n_vars)
    integrality[:nx] = 1
    upper = np.ones(n_vars)
    if tcols is not None:
        upper[tcols] = np.inf
    res = milp(c, constraints=LinearConstraint(A, np.concatenate(lo), np.concatenate(hi)),
               integrality=integrality, bounds=Bounds(np.zeros(n_vars), upper),
               options={"time_limit": float(time_limit_s), "mip_rel_gap": float(mip_rel_gap), "disp": False})
    sets = None
    if res.x is not None:
        x = res.x[:nx].reshape(B, d) > 0.5
        sets = [tuple(int(j) for j in np.flatnonzero(x[b])) for b in range(B)]
    return res, sets, n_vars, nrow


def solve(reads_b: np.ndarray, sizes: np.ndarray, topo: Topology, model: str, balance: float,
          one_per_group: bool, keys: int, time_limit_s: float = 600.0, mip_rel_gap: float = 1e-4,
          formulation: str = "sets", objective: str = "mean", hits_b: np.ndarray | None = None) -> Solved:
    """The MILP over buckets and candidate replica sets (weights: each bucket's reads per
    datacenter / all reads, so the BA objective is the mean read latency in ms).

    u[b, s] binary: bucket b is placed on the replica set s, one of the C(D, f) sets of f
    datacenters (with one_per_group only those with one datacenter of each group, by index
    modulo f); sum_s u[b, s] = 1. Storage: sum_b size_b sum_{s contains j} u[b, s] <=
    ceil(balance f N / D) for every j. The objective is sum_{b,s} cost[b, s] u[b, s], where
    a bucket's cost on a set is fixed by the set alone: BA, sum_i w[b, i] rtt(i, nearest
    member of s); N-1C, max over failed k of sum_i w[b, i] lat(i, nearest member of s other
    than k), the failed datacenter's own readers redirected (``set_latency``; the paper's
    per-key worst case), plus N1C_NORMAL_WEIGHT x the BA cost. Choosing a set per bucket is the same program as choosing x[b, j] with
    routing variables (nearest-replica routing and the per-bucket worst failure are functions
    of the chosen set), with B x C(D, f) binaries instead of B x D x (D - 1)^2 routes: a
    million keys' N-1C solves in seconds, not past a 10-minute limit. ``formulation="xyz"``
    solves the paper's own x/y/z program instead (``_solve_xyz``), as a cross-check (tests).

    ``objective="pNN"`` minimises a percentile of read latency instead of the mean: BA's over
    every read, N-1C's the worst over single-datacenter failures of every read.
    The p-th percentile is at most T exactly when reads served within T weigh at least p,
    and that weight is linear in u (a bucket's reads within T on a set are fixed by the
    set), so for a threshold T the program above with a coverage row per population
    (sum_{b,s} within_T[b, s] u[b, s] >= p) is feasible exactly when T is reachable. The
    latencies take only the topology's RTTs (and 0), so a binary search over those finds
    the least reachable T in a few solves; the last one also minimises the mean objective
    among the placements that reach it.

    ``hits_b`` (the set form only): each bucket's reads per datacenter that its cache serves
    (``cache_hits``); those cost 0 whatever the set, so only the misses are weighted by
    latency and a percentile's reads within T count the hits as given."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    if model not in MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {model!r}")
    d, f, rtt = topo.d, topo.f, topo.rtt
    B = len(sizes)
    check_args(topo, model, balance, one_per_group, keys)
    cap = capacity(keys, f, d, balance)
    if B and sizes.max() > cap:
        raise ConfigError("--buckets", f"a bucket of {int(sizes.max())} keys exceeds a datacenter's bound of {cap} "
                          "keys; give a smaller chunk")
    if formulation not in FORMULATIONS:
        raise ConfigError("--formulation", f"must be one of {', '.join(FORMULATIONS)}, got {formulation!r}")
    q = objective_quantile(objective)
    if formulation == "xyz" and q is not None:
        raise ConfigError("--objective", "a percentile objective is solved on the set formulation only")
    if formulation == "xyz" and hits_b is not None:
        raise ConfigError("--cache-keys", "the cache term is solved on the set formulation only")
    hits_b = np.zeros_like(reads_b, dtype=np.float64) if hits_b is None else hits_b
    threshold = None
    if formulation == "xyz":
        total = reads_b.sum()
        w = reads_b / total if total > 0 else np.zeros_like(reads_b)
        start = time.monotonic()
        res, sets, n_vars, n_rows = _solve_xyz(w, sizes, topo, model, cap, one_per_group, time_limit_s, mip_rel_gap)
        seconds = time.monotonic() - start
    else:
        res, sets, n_vars, n_rows, seconds = None, None, 0, 0, 0.0
    unproven = False
    if formulation == "sets":
        candidates = [c for c in combinations(range(d), f)
                      if not one_per_group or sorted(j % f for j in c) == list(range(f))]
        S = len(candidates)
        total = reads_b.sum()
        w = (reads_b - hits_b) / total if total > 0 else np.zeros_like(reads_b)  # misses, as shares of all reads
        cost = w @ set_latency(candidates, rtt).T               # [B, S]
        if model == "n-1c":
            worst = np.zeros((B, S))
            for k in range(d):
                wk = ((reads_b - failure_hits(hits_b, k)) / total  # k's readers redirected, as misses
                      if total > 0 else np.zeros_like(reads_b))
                worst = np.maximum(worst, wk @ set_latency(candidates, rtt, failed=k).T)
            cost = worst + N1C_NORMAL_WEIGHT * cost
        member = np.array([[j in c for j in range(d)] for c in candidates], dtype=np.float64)  # [S, D]
        n_vars, n_rows = B * S, B + d
        one = csr_matrix((np.ones(n_vars), (np.repeat(np.arange(B), S), np.arange(n_vars))), shape=(B, n_vars))
        # storage row j: sum_b size_b sum_s member[s, j] u[b, s]
        store = csr_matrix((np.outer(sizes.astype(np.float64), member.T.ravel()).reshape(B, d, S)
                            .transpose(1, 0, 2).reshape(d, n_vars)))
        start = time.monotonic()
        base = [LinearConstraint(one, 1, 1), LinearConstraint(store, -np.inf, cap)]

        def run(extra=()):
            left = max(1.0, time_limit_s - (time.monotonic() - start))
            return milp(cost.ravel(), constraints=[*base, *extra], integrality=np.ones(n_vars), bounds=Bounds(0, 1),
                        options={"time_limit": float(left), "mip_rel_gap": float(mip_rel_gap), "disp": False})
        if q is None:
            res = run()
        else:
            groups = _coverage_groups(reads_b, hits_b, candidates, topo, model)
            levels = sorted({0.0} | {float(x) for _, lat, _ in groups for x in np.unique(lat[np.isfinite(lat)])})

            def within(level):  # one coverage row per population: reads served within ``level`` ms
                rows = np.vstack([(wg @ (lat <= level + 1e-9).T).ravel() for wg, lat, _ in groups])
                return [LinearConstraint(csr_matrix(rows), np.array([q - hit - 1e-9 for _, _, hit in groups]),
                                         np.inf)]
            lo, hi = 0, len(levels) - 1
            res = run(within(levels[hi]))
            unproven = False
            while lo < hi and res.x is not None:  # the least reachable level; res: the last feasible solve
                mid = (lo + hi) // 2
                attempt = run(within(levels[mid]))
                if attempt.x is not None:
                    hi, res = mid, attempt
                elif attempt.status == 2:  # infeasible: the percentile is above this level
                    lo = mid + 1
                else:  # out of time (or the solver gave up) on this level: keep the last feasible one
                    unproven = True
                    break
            threshold = levels[hi]
            n_rows += len(groups)
        seconds = time.monotonic() - start
        if res.x is not None:
            sets = [candidates[c] for c in res.x.reshape(B, S).argmax(axis=1)]
    if res.x is None:
        hint = ("no placement within the time limit; raise --time-limit or coarsen --buckets" if res.status == 1
                else f"no placement satisfies the constraints ({res.message.strip()}); raise --balance"
                + (" or drop --one-per-group" if one_per_group else ""))
        raise ConfigError("--balance" if res.status != 1 else "--time-limit", hint)
    bad = [b for b, c in enumerate(sets) if len(c) != f]
    if bad:  # cannot happen with an integral solution; guards against rounding surprises
        raise RuntimeError(f"the solver gave bucket {bad[0]} {len(sets[bad[0]])} replicas, not {f}")
    gap = getattr(res, "mip_gap", None)
    status = res.message.strip()
    if q is not None and formulation == "sets" and unproven:
        status += f" (the time limit ended the search: {objective} at most {threshold} ms, not proven least)"
    return Solved(sets, float(res.fun), seconds, status, None if gap is None else float(gap),
                  n_vars, n_rows, threshold)


def objective_of(sets: list[tuple[int, ...]], reads_b: np.ndarray, topo: Topology, model: str,
                 hits_b: np.ndarray | None = None) -> float:
    """The model's mean objective of given bucket sets, computed directly (nearest replica,
    worst failure, the cache's hits at 0): what ``solve`` minimises for the mean."""
    total = reads_b.sum()

    def misses(hits):  # as shares of all reads
        m = reads_b - hits if hits is not None else reads_b
        return m / total if total > 0 else np.zeros_like(reads_b, dtype=np.float64)
    w = misses(hits_b)
    failed_w = [misses(failure_hits(hits_b, k)) for k in range(topo.d)] if model == "n-1c" else []
    normal = 0.0
    worst = 0.0
    for b, s in enumerate(sets):
        normal += float(w[b] @ topo.rtt[:, list(s)].min(axis=1))
        if model == "n-1c":  # k's readers redirected, as misses (set_latency, failure_hits)
            worst += max(float(failed_w[k][b] @ set_latency([tuple(s)], topo.rtt, k)[0]) for k in range(topo.d))
    return normal if model == "ba" else worst + N1C_NORMAL_WEIGHT * normal


# ------------------------------------------------------------------ predictions

def redirect_dc(rtt: np.ndarray, failed: int, down: frozenset[int] | set[int] = frozenset()) -> int:
    """Where the failed datacenter's clients send their requests (the paper, §VIII-E: "to
    the closest DC"): the surviving datacenter (neither ``failed`` nor in ``down``) nearest
    it by RTT, ties to the lower index; a ConfigError when none survives."""
    others = [j for j in range(rtt.shape[0]) if j != failed and j not in down]
    if not others:
        raise ConfigError("faults", "every datacenter is killed: redirected clients have nowhere to go")
    return min(others, key=lambda j: (rtt[failed, j], j))


def set_latency(sets: list[tuple[int, ...]], rtt: np.ndarray, failed: int | None = None) -> np.ndarray:
    """[set, i]: datacenter i's read latency of a key of each set: its nearest replica; under
    the failure of ``failed`` the survivors' nearest, and for the failed datacenter's own
    clients, redirected to c = ``redirect_dc``, rtt(failed, c) + c's latency (inf when no
    replica survives)."""
    d = rtt.shape[0]
    out = np.full((len(sets), d), np.inf)
    for s, members in enumerate(sets):
        alive = [j for j in members if j != failed]
        if alive:
            out[s] = rtt[:, alive].min(axis=1)
    if failed is not None and d > 1:
        c = redirect_dc(rtt, failed)
        out[:, failed] = rtt[failed, c] + out[:, c]
    return out


def failure_hits(hits: np.ndarray | None, failed: int) -> np.ndarray | None:
    """The cache hits under ``failed``'s failure: its cache is gone with its storage, and its
    displaced readers count as misses at the datacenter they are sent to (module doc)."""
    if hits is None:
        return None
    out = hits.copy()
    out[..., failed] = 0
    return out


def weighted_stats(lat: np.ndarray, weight: np.ndarray, percentiles: tuple[int, ...] = (50, 90)) -> dict:
    """Mean and percentiles (p50 and p90 unless told) of latencies weighted by reads (the
    lower weighted quantile), over the reads that reach a replica; ``unavailable_share``: the
    reads whose key has no replica left (f = 1 under a failure)."""
    lat, weight = lat.ravel(), weight.ravel()
    keep = weight > 0
    lat, weight = lat[keep], weight[keep]
    total = weight.sum()
    ok = np.isfinite(lat)
    out = {"mean": None} | {f"p{p}": None for p in percentiles} | {"unavailable_share": 0.0}
    if total <= 0:
        return out
    out["unavailable_share"] = round(float(weight[~ok].sum() / total), 6)
    lat, weight = lat[ok], weight[ok]
    if not len(lat):
        return out
    order = np.argsort(lat, kind="stable")
    lat, weight = lat[order], weight[order]
    cum = np.cumsum(weight) / weight.sum()

    def q(p):
        return round(float(lat[min(int(np.searchsorted(cum, p - 1e-12)), len(lat) - 1)]), 3)
    out |= {"mean": round(float((lat * weight).sum() / weight.sum()), 3)} | {f"p{p}": q(p / 100) for p in percentiles}
    return out


def read_stats(lat: np.ndarray, reads: np.ndarray, hits: np.ndarray | None, percentiles=(50, 90)) -> dict:
    """weighted_stats of reads, the cache's hits (if any) at 0 ms and the misses at ``lat``."""
    percentiles = tuple(int(p) if float(p).is_integer() else p for p in percentiles)  # p90, p99.9
    if hits is None or not hits.any():
        return weighted_stats(lat, reads, percentiles)
    return weighted_stats(np.concatenate([np.zeros_like(lat).ravel(), lat.ravel()]),
                          np.concatenate([hits.ravel(), (reads - hits).ravel()]), percentiles)


def predict(set_of_bucket: np.ndarray, sets: list[tuple[int, ...]], reads_b: np.ndarray, writes_b: np.ndarray,
            sizes: np.ndarray, topo: Topology, hits_b: np.ndarray | None = None,
            percentiles: tuple = (50, 90)) -> dict:
    """The model's read latency of a placement: overall (mean, p50, p90 over every read of
    every key, weighted by reads) in normal operation and under each single datacenter's failure
    (its own readers redirected, ``set_latency``), the most critical datacenter (the worst
    mean under its failure),
    and per bucket (the demand-weighted mean, normal and under each failure). All keys of a
    bucket share their replicas, so the (bucket, reader) pairs carry the exact distribution.
    With ``hits_b`` (reads the datacenter cache serves) those count at 0 ms."""
    dcs = topo.dcs
    normal = set_latency(sets, topo.rtt)[set_of_bucket]          # [bucket, i]
    failed = {k: set_latency(sets, topo.rtt, k)[set_of_bucket] for k in range(topo.d)}
    overall = {"normal": read_stats(normal, reads_b, hits_b, percentiles), "failure": {}}
    for k, dc in enumerate(dcs):
        overall["failure"][dc] = read_stats(failed[k], reads_b, failure_hits(hits_b, k), percentiles)
    means = {dc: s["mean"] for dc, s in overall["failure"].items() if s["mean"] is not None}
    overall["most_critical_dc"] = max(means, key=lambda dc: (overall["failure"][dc]["unavailable_share"], means[dc])) \
        if means else None
    has_replica = np.zeros((len(sets), topo.d), dtype=bool)
    for s, members in enumerate(sets):
        has_replica[s, list(members)] = True
    wt = writes_b.sum()
    overall["writes"] = {"total": round(float(wt), 3),
                         "at_a_replica_share": round(float((writes_b * has_replica[set_of_bucket]).sum() / wt), 6)
                         if wt > 0 else None}
    overall["reads"] = {"total": round(float(reads_b.sum()), 3)}
    per_bucket = []
    rt = reads_b.sum()
    for b in range(len(set_of_bucket)):
        r = reads_b[b]
        rb = r.sum()
        miss = r - hits_b[b] if hits_b is not None else r
        entry = {"bucket": b, "keys": int(sizes[b]), "replicas": [dcs[j] for j in sets[set_of_bucket[b]]],
                 "read_share": round(float(rb / rt), 6) if rt > 0 else 0.0,
                 "normal_ms": round(float(miss @ normal[b] / rb), 3) if rb > 0 else None, "failure_ms": {}}
        for k, dc in enumerate(dcs):
            rk = miss.copy()
            rk[k] = r[k]  # redirected, as misses
            lat = failed[k][b]
            live = rk > 0
            entry["failure_ms"][dc] = (round(float(rk[live] @ lat[live] / rb), 3)
                                       if rb > 0 and np.isfinite(lat[live]).all() else None)
        per_bucket.append(entry)
    return {"overall": overall, "buckets": per_bucket}


# ------------------------------------------------------------------ the whole

@dataclass
class Placement:
    """A computed placement: per key id its replica set (an index into ``sets``, tuples of
    datacenter names in replica order) and bucket; ``predictions`` (``predict``); ``info``:
    how it was made (model, keys, buckets, bound, solve time, solver status, objective)."""
    set_per_id: np.ndarray
    sets: list[tuple[str, ...]]
    bucket_per_id: np.ndarray
    predictions: dict
    info: dict = field(default_factory=dict)

    def comment_lines(self, demand_source: str) -> list[str]:
        i, o = self.info, self.predictions["overall"]
        crit = o["most_critical_dc"]
        minimises = i.get("minimises", "mean")
        return [f"k2bench place --model {i['model']}" + (f" --objective {minimises}" if minimises != "mean" else "")
                + ": latency-aware placement (HiGHS MILP, K2's read latency model)",
                f"demand: {demand_source}",
                f"{i['keys']} keys, replication factor {i['f']}, {i['buckets']} buckets, balance {i['balance']} "
                f"(at most {i['bound_per_dc']} keys per datacenter)" + (", one replica per group" if i["one_per_group"]
                                                                         else ""),
                f"predicted mean read latency: {o['normal']['mean']} ms normal"
                + (f", {o['failure'][crit]['mean']} ms with {crit} (the most critical datacenter) failed" if crit else ""),
                "rows: ids (an id or an inclusive range of the keys user<id>), replicas (the first loads the keys), "
                "bucket (the optimiser's)"]

    def sidecar(self, demand_source: str) -> dict:
        return {**self.info, "demand": demand_source, "predictions": self.predictions["overall"],
                "per_bucket": self.predictions["buckets"]}

    def write(self, path, demand_source: str) -> Path:
        """The table at ``path`` and its predictions at ``path.json``, each written whole
        (temporary file + rename; the sidecar first, so a table is never newer than its
        predictions' file). Returns the sidecar's path."""
        path = Path(path)
        side = Path(str(path) + ".json")
        doc = self.sidecar(demand_source)
        _atomic_write(side, lambda out: out.write(json.dumps(doc, indent=1) + "\n"))
        write_table(path, self.set_per_id, self.sets, self.bucket_per_id, self.comment_lines(demand_source))
        return side


def place(demand, topology, model: str = "ba", f: int | None = None, balance: float = 1.2,
          one_per_group: bool = False, buckets: Bucketing | str | None = None, keys: int | None = None,
          time_limit_s: float = 600.0, mip_rel_gap: float = 1e-4, formulation: str = "sets",
          progress: Callable[[str], None] | None = _stderr, objective: str = "mean",
          cache_keys: float = 0, cache_window: tuple[float, float, float] | None = None) -> Placement:
    """The placement of every key id 0..keys-1 (default: the largest key id of the demand + 1)
    for ``demand`` (long DataFrame: key_id, dc, reads, writes) on ``topology`` (a path or a
    document; ``f`` overrides its replication_factor) under ``model`` (ba or n-1c): buckets the
    keys, solves the MILP (``solve``), orders each set's replicas from the most read down and
    predicts the read latency. ``objective``: mean, or a percentile (``p90``; see ``solve``).
    ``cache_keys``: each datacenter's cache capacity in keys (K2's DC cache), counted in the
    objective and the predictions (``cache_hits``), 0 for none; in steady state, or with
    ``cache_window`` warming up from empty over a trial's window (``cache_hits``).
    ``progress`` gets the bucket count and "solving ..." lines."""
    progress = progress or (lambda msg: None)
    if model not in MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {model!r}")
    topo = load_topology(topology, f)
    bucketing = buckets if isinstance(buckets, Bucketing) else Bucketing.parse(buckets)
    reads, writes, n = demand_matrices(demand, topo.dcs, keys)
    if not cache_keys >= 0:
        raise ConfigError("--cache-keys", f"must be >= 0 keys per datacenter, got {cache_keys}")
    if keys is None:
        progress(f"placing {n} keys: the demand's largest key id + 1 (--keys N when the workload has more)")
    check_args(topo, model, balance, one_per_group, n)
    objective_quantile(objective)  # a bad objective is refused before the work
    t0 = time.monotonic()
    bucket = bucketize(reads, bucketing)
    n_hot = min(bucketing.hot, int((reads.sum(axis=1) > 0).sum()))
    nb = int(bucket.max()) + 1
    sizes = np.bincount(bucket, minlength=nb)
    reads_b = np.stack([np.bincount(bucket, weights=reads[:, j], minlength=nb) for j in range(topo.d)], axis=1)
    writes_b = np.stack([np.bincount(bucket, weights=writes[:, j], minlength=nb) for j in range(topo.d)], axis=1)
    progress(f"{n} keys in {nb} buckets ({n_hot} hot, chunks of at most "
             f"{bucketing.chunk or max(1, math.ceil(n / (4 * topo.d)))} keys)")
    progress(f"solving {model.upper()} for the {objective} (HiGHS, {topo.d} datacenters, f = {topo.f}, balance "
             f"{balance}" + (f", a cache of {cache_keys:g} keys per datacenter" if cache_keys else "") + ") ...")
    hits_b, rounds, seconds, settled = None, 0, 0.0, None
    q = objective_quantile(objective)
    pct = None if q is None else round(q * 100, 6)
    solved = solve(reads_b, sizes, topo, model, balance, one_per_group, n, time_limit_s, mip_rel_gap, formulation,
                   objective)
    seconds += solved.seconds

    def hits_of(sets):  # each bucket's reads per datacenter its cache serves, with ``sets`` placed
        member = np.zeros((nb, topo.d), dtype=bool)
        for b, members in enumerate(sets):
            member[b, list(members)] = True
        hit = cache_hits(reads, writes, member[bucket], cache_keys, cache_window)
        return np.stack([np.bincount(bucket, weights=reads[:, j] * hit[:, j], minlength=nb)
                         for j in range(topo.d)], axis=1)

    def score(sets, hits):  # the objective of a placement with its own hits: (percentile,) mean
        mean = objective_of(sets, reads_b, topo, model, hits)
        if q is None:
            return (mean,)
        uniq: dict[tuple[int, ...], int] = {}
        of_bucket = np.array([uniq.setdefault(tuple(x), len(uniq)) for x in sets])
        o = predict(of_bucket, list(uniq), reads_b, writes_b, sizes, topo, hits, (pct,))["overall"]
        key = "p" + (str(int(pct)) if float(pct).is_integer() else str(pct))
        worst = o["normal"][key] if model == "ba" else max(f[key] for f in o["failure"].values()
                                                             if f[key] is not None)
        return (worst, mean)
    if cache_keys:
        # The hits depend on the placement (which keys compete for the cache): solve on the
        # last placement's hits until the placement settles, and keep the best by its own.
        hits_b = hits_of(solved.sets)
        best, best_score, best_hits = solved, score(solved.sets, hits_b), hits_b
        while rounds < CACHE_ROUNDS:
            rounds += 1
            again = solve(reads_b, sizes, topo, model, balance, one_per_group, n, time_limit_s, mip_rel_gap,
                          formulation, objective, hits_b)
            seconds += again.seconds
            settled = again.sets == solved.sets
            solved = again
            if settled:
                break
            hits_b = hits_of(solved.sets)
            this = score(solved.sets, hits_b)
            if this < best_score:
                best, best_score, best_hits = solved, this, hits_b
        solved, hits_b = best, best_hits
        progress(f"cache term: {rounds} re-solve(s), {'settled' if settled else 'not settled'}; kept the best "
                 "placement by its own hits")
    del reads, writes
    # replica order: the bucket's most-read replica first (it loads the keys), ties by topology order
    index: dict[tuple[int, ...], int] = {}
    set_of_bucket = np.empty(nb, dtype=np.int64)
    for b, members in enumerate(solved.sets):
        ordered = tuple(sorted(members, key=lambda j: (-reads_b[b, j], -writes_b[b, j], j)))
        set_of_bucket[b] = index.setdefault(ordered, len(index))
    sets_idx = list(index)
    predictions = predict(set_of_bucket, sets_idx, reads_b, writes_b, sizes, topo, hits_b,
                          tuple(sorted({50, 90} | ({pct} if pct is not None else set()))))
    keys_per_dc = {dc: int(sum(sizes[b] for b in range(nb) if j in solved.sets[b])) for j, dc in enumerate(topo.dcs)}
    info = {"model": model, "model_version": MODEL_VERSION, "keys": n, "f": topo.f, "datacenters": topo.dcs,
            "balance": balance, "one_per_group": one_per_group, "buckets": nb,
            "bucketing": {"hot": bucketing.hot, "levels": bucketing.levels,
                          "chunk": bucketing.chunk or max(1, math.ceil(n / (4 * topo.d)))},
            "bound_per_dc": capacity(n, topo.f, topo.d, balance), "keys_per_dc": keys_per_dc,
            "solve_s": round(seconds, 3), "total_s": round(time.monotonic() - t0, 3),
            "cache_keys_per_dc": cache_keys, "cache_window": list(cache_window) if cache_window else None,
            "cache_rounds": rounds, "cache_settled": settled,
            "status": solved.status, "mip_gap": solved.gap, "minimises": objective,
            "threshold_ms": solved.threshold_ms, "objective": solved.objective,
            "objective_exact": objective_of(solved.sets, reads_b, topo, model, hits_b),
            "n1c_normal_weight": N1C_NORMAL_WEIGHT if model == "n-1c" else None,
            "milp": {"formulation": formulation, "variables": solved.variables, "constraints": solved.constraints}}
    return Placement(set_of_bucket[bucket], [tuple(topo.dcs[j] for j in s) for s in sets_idx], bucket,
                     predictions, info)


def place_cache_keys(cfg: dict) -> float:
    """topology.place_cache: the datacenter cache's capacity in keys the optimiser counts
    (server.cache_fraction of workload.keys per datacenter), else 0."""
    return float(cfg["server"]["cache_fraction"]) * int(cfg["workload"]["keys"]) \
        if cfg["topology"].get("place_cache") else 0.0


EXPECTED_DRAWS = 1_000_000  # the expected demand's draws per datacenter (place_for_experiment)


def place_cache_window(cfg: dict) -> tuple[float, float, float] | None:
    """With topology.place_cache on the expected demand of a paced workload: the trial's
    cache warms from empty, so the optimiser counts the hits of its normal-operation window
    (warm-up end to the first kill, or the end), as the placement report predicts them:
    (rate per expected draw per second, window start, end). None otherwise (steady state)."""
    ops = cfg["clients"].get("target_ops_per_s_per_dc")
    if not place_cache_keys(cfg) or not ops or cfg["topology"].get("place_demand", "expected") != "expected":
        return None
    d = cfg["duration"]
    kills = [f["at_s"] for f in cfg.get("faults") or [] if f.get("kind") == "kill" and f.get("dc")]
    end = min([d["warmup_s"] + d["measure_s"], *kills])
    return float(ops) / EXPECTED_DRAWS, float(d["warmup_s"]), float(end)


def place_for_experiment(doc: dict, cfg: dict, out: Path, workloads: Path) -> None:
    """An experiment point's table (``topology.place``): the point's own expected demand
    (``place_demand: expected``: ``expected_demand`` of its workload, the same number of draws
    in every datacenter, reads and writes split by its write_fraction) or a demand parquet of
    ``k2bench demand`` (relative to workloads/), placed by ``place`` and written with its
    predictions (``Placement.write``)."""
    t, w = cfg["topology"], cfg["workload"]
    topo = load_topology(doc)
    n = int(w["keys"])
    try:
        if t.get("place_demand", "expected") == "expected":
            wf = float(w.get("write_fraction", 0) or 0)
            demand = expected_demand(n, float(w["zipf"]), float(w.get("locality", 0) or 0), topo.dcs,
                                     EXPECTED_DRAWS * (1 - wf), EXPECTED_DRAWS * wf)
            source = (f"expected (the workload's key choice: {n} keys, zipf {w['zipf']}, locality "
                      f"{w.get('locality', 0)}, equal draws per datacenter)")
        else:
            import pandas as pd
            demand = pd.read_parquet(Path(workloads) / t["place_demand"])
            source = str(t["place_demand"])
        _stderr(f"placing {n} keys ({t['place']}, balance {t.get('place_balance', 1.2)}) ...")
        placed = place(demand, doc, t["place"], balance=float(t.get("place_balance", 1.2)), keys=n,
                       objective=t.get("place_objective", "mean"), cache_keys=place_cache_keys(cfg),
                       cache_window=place_cache_window(cfg))
    except ConfigError as e:
        raise ConfigError(f"topology.place ({e.field})", e.problem) from None
    placed.write(out, source)
    o = placed.predictions["overall"]
    _stderr(f"placed in {placed.info['solve_s']} s: predicted mean read latency {o['normal']['mean']} ms")
