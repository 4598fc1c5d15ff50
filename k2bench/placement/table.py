"""The placement table file: each key id's replica set (and bucket), written atomically, read with checks."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ConfigError

HEADER = "ids,replicas,bucket"
HEADERS = ("ids,replicas", HEADER)  # what the loaders accept


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
