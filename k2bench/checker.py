"""Consistency checking of a run's histories.

Every client session records its operations (system/ycsb HistoryLog): read-only
transactions with the version read per key, write-only transactions and single writes with
the version they created, loads (the load phase's writes) likewise, and read-write
transactions (``rwt``, systems that have them) with both: the versions their reads returned
and the one version their writes got at commit. A read-write transaction reads before it
writes, so its reads are checked against what precedes it, not against its own writes. Versions are unique per
write (Lamport timestamp with the writer's node id), a write-only transaction gives all its
keys one version, and a key's versions are ordered by number: the newest visible version
is the largest (every bundled system's apply rule). Version 0 is the empty row a key has
before it is loaded.

The checker builds the causal order of the history — session order plus reads-from (the
write that created a version precedes every read that returns it) — and then asks of every
read: does it return a version older than a write to the same key that causally precedes
the reading transaction? Each such read is a violation, named by the most specific
guarantee it breaks:

* ``read-your-writes``: the newer write is the session's own;
* ``atomic-visibility``: the newer write belongs to a write-only transaction this read-only
  transaction observed through another key (it saw part of the transaction);
* ``monotonic-reads``: an earlier operation of the session read the newer version;
* ``causality``: any other causally preceding write (through reads-from, across sessions).

Version numbers alone hide one more anomaly, ``lost-write``: a write that got a lower version
than a value of its key it causally follows. Last-writer-wins then keeps the older value
everywhere, and the write is acknowledged and never becomes the key's value. The loaded
data is every key's initial state, ordered before every operation of the run, so a run
write below its key's loaded version is lost too, whatever the version numbers say. Two
forms are flagged: a write whose version is below one of its key in its causal past (the
loaded version included), and a read that returns a value a causally preceding write had
overwritten in causal order (the loaded value after a run write of the key, or a write W
after a write that followed W), which the version order above cannot see because the
overwriting write has the lower version.

It also flags ``duplicate-version`` (two operations created the same version of a key),
``unknown-version`` (a read returned a version nobody wrote, and no failed write could have
written it), ``causality`` also for a read-write transaction that committed at a version not
above one it read (its writes causally follow its reads, so every version it read must be
older than its own: the PaRiS paper's commit time above the snapshot), ``causal-cycle`` (the order is not acyclic: a read returned a write from its
own future), and ``wan-rounds``: a read-only transaction took more wide-area rounds than
its system claims (K2 and PaRiS*: one; StoreSystem.maxWanRounds) outside the windows in
which a fault was in force.

History line format (JSON per line; times in epoch ms)::

    {"s": 4097, "i": 12, "op": "rot", "t0": ..., "t1": ..., "ok": true, "r": {"k": 1234}, "rounds": 1}
    {"s": 4097, "i": 13, "op": "wot", "t0": ..., "t1": ..., "ok": true, "w": {"k": 5678, "j": 5678}}
    {"s": 5001, "i": 0, "op": "load", "t0": ..., "t1": ..., "ok": true, "w": {"k": 99}}
    {"s": 4097, "i": 14, "op": "rwt", "t0": ..., "t1": ..., "ok": true, "r": {"k": 5678}, "w": {"j": 6001}, "rounds": 0}

A failed write (``ok`` false) may still have committed, at a version the client never
learned: it is not in the causal order, but a read of an otherwise unknown version of one of
its keys is attributed to it rather than flagged.
"""
from __future__ import annotations

import bisect
import json
from collections import defaultdict, deque
from pathlib import Path
from typing import Iterable

import numpy as np

KINDS = ("read-your-writes", "atomic-visibility", "monotonic-reads", "causality", "lost-write",
         "duplicate-version", "unknown-version", "causal-cycle", "wan-rounds")
MAX_LISTED = 50  # violations listed in full per kind; all are counted
FAULT_SLACK_MS = 5000  # a fault's effects (held messages, fail-over timeouts) outlast it


def load_history(paths: Iterable[Path]) -> list[dict]:
    """The operations of every history file (missing files contribute nothing)."""
    ops = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            continue
        with p.open() as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    ops.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{p}:{n}: not a history line ({e.msg})") from None
    return ops


def _brief(op: dict) -> dict:
    """An operation as a violation report shows it."""
    out = {k: op[k] for k in ("s", "i", "op", "t0", "t1") if k in op}
    for k in ("r", "w", "rounds"):
        if k in op:
            out[k] = op[k]
    return out


class _Report:
    def __init__(self):
        self.count = defaultdict(int)
        self.listed = []

    def add(self, kind: str, message: str, ops: list[dict], **extra):
        self.count[kind] += 1
        if self.count[kind] <= MAX_LISTED:
            self.listed.append({"kind": kind, "message": message, "ops": [_brief(o) for o in ops], **extra})


def check(ops: list[dict], max_wan_rounds: int | None = None,
          fault_windows: Iterable[tuple[float, float]] = ()) -> dict:
    """Checks a history; returns what consistency.json holds. ``max_wan_rounds``: the
    system's claim for read-only transactions and read-write transactions' reads outside
    ``fault_windows`` (None: no claim)."""
    report = _Report()
    ok_ops = [o for o in ops if o.get("ok", True)]
    # Sessions and their operations in session order.
    by_session: dict[int, list[dict]] = defaultdict(list)
    for o in ok_ops:
        by_session[o["s"]].append(o)
    sessions = sorted(by_session)
    sidx = {s: n for n, s in enumerate(sessions)}
    order: list[dict] = []  # every op, grouped by session in session order
    pos: dict[int, int] = {}  # id(op) -> 1-based position in its session
    for s in sessions:
        seq = sorted(by_session[s], key=lambda o: o["i"])
        for p, o in enumerate(seq, 1):
            pos[id(o)] = p
        order.extend(seq)
    n_ops = len(order)
    op_no = {id(o): n for n, o in enumerate(order)}

    # Writes: (key, version) -> the op that created it.
    writer: dict[tuple[str, int], dict] = {}
    for o in order:
        for k, v in (o.get("w") or {}).items():
            if v is None:
                continue
            prev = writer.get((k, v))
            if prev is not None and prev is not o:
                report.add("duplicate-version", f"version {v} of {k!r} was created by two operations", [prev, o],
                           key=k, version=v)
                continue
            writer[(k, v)] = o
    failed_keys = {k for o in ops if not o.get("ok", True) for k in (o.get("w") or {})}

    # The causal graph: session order and reads-from, as predecessor lists.
    preds: list[list[int]] = [[] for _ in range(n_ops)]
    succs: list[list[int]] = [[] for _ in range(n_ops)]
    unknown_reads = 0
    for n, o in enumerate(order):
        if pos[id(o)] > 1:
            preds[n].append(n - 1)
            succs[n - 1].append(n)
        for k, v in (o.get("r") or {}).items():
            if v == 0:
                continue  # the empty row before the load
            w = writer.get((k, v))
            if w is None:
                if k in failed_keys:
                    unknown_reads += 1
                else:
                    report.add("unknown-version", f"read version {v} of {k!r}, which no operation wrote", [o],
                               key=k, version=v)
                continue
            m = op_no[id(w)]
            if m != n:
                preds[n].append(m)
                succs[m].append(n)

    # Vector clocks in topological order: vc[n][s] = how many ops of session s precede op n
    # causally (itself included).
    vc = np.zeros((n_ops, len(sessions)), dtype=np.int32)
    indeg = [len(p) for p in preds]
    ready = deque(n for n in range(n_ops) if indeg[n] == 0)
    done = 0
    while ready:
        n = ready.popleft()
        done += 1
        for m in preds[n]:
            np.maximum(vc[n], vc[m], out=vc[n])
        vc[n, sidx[order[n]["s"]]] = pos[id(order[n])]
        for m in succs[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
    if done < n_ops:
        stuck = [order[n] for n in range(n_ops) if indeg[n] > 0]
        report.add("causal-cycle", f"{len(stuck)} operations lie on or after a cycle of session order and "
                   "reads-from (a read returned a write from its own causal future)", stuck[:4])

    # Per key and session, in session order: writes and reads with the running maximum of
    # their versions and the op that holds it.
    key_writes: dict[str, dict[int, _Running]] = defaultdict(dict)
    session_reads: dict[tuple[int, str], _Running] = {}
    key_reads: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for n, o in enumerate(order):
        s = sidx[o["s"]]
        for k, v in (o.get("w") or {}).items():
            if v is not None:
                key_writes[k].setdefault(s, _Running()).add(pos[id(o)], v, n)
        for k, v in (o.get("r") or {}).items():
            key_reads[k].append((n, v))
            session_reads.setdefault((s, k), _Running()).add(pos[id(o)], v, n)
    reads_checked = sum(len(r) for r in key_reads.values())
    # Run writes (loads left out) per key and session, in session order; the loaded version per key.
    run_writes: dict[str, dict[int, _Writes]] = defaultdict(dict)
    loaded: dict[str, int] = {}
    for n, o in enumerate(order):
        for k, v in (o.get("w") or {}).items():
            if v is None:
                continue
            if o["op"] == "load":
                loaded[k] = max(loaded.get(k, 0), v)
            else:
                run_writes[k].setdefault(sidx[o["s"]], _Writes()).add(pos[id(o)], v, n)
    # The load precedes an operation only if the operation began after the load ended (it
    # does in every run the harness makes; a history that interleaves them is checked
    # without that order for the operations that overlap it).
    load_end = max((o["t1"] for o in order if o["op"] == "load"), default=float("-inf"))
    after_load = np.fromiter((o["op"] != "load" and o["t0"] >= load_end for o in order), dtype=bool, count=n_ops)

    for k, reads in key_reads.items():
        writes = key_writes.get(k)
        if not writes:
            continue
        readers = np.fromiter((n for n, _ in reads), dtype=np.int64, count=len(reads))
        got = np.fromiter((v for _, v in reads), dtype=np.int64, count=len(reads))
        newest = np.full(len(reads), -1, dtype=np.int64)  # newest causally preceding version of k
        reader_sessions = np.fromiter((sidx[order[n]["s"]] for n, _ in reads), dtype=np.int64, count=len(reads))
        for s, idx in _latest_before(writes, readers, reader_sessions, vc):
            run = writes[s]
            vals = np.where(idx >= 0, np.asarray(run.maxima, dtype=np.int64)[np.maximum(idx, 0)], -1)
            np.maximum(newest, vals, out=newest)
        for j in np.nonzero(newest > got)[0]:
            n, v = reads[j]
            reader = order[n]
            s_me = sidx[reader["s"]]
            me = pos[id(reader)]
            # Name it by the most specific guarantee broken (see the module docstring).
            own = writes.get(s_me)
            if own is not None and own.newest_before(me)[0] > v:
                kind, why, other = "read-your-writes", "the session wrote", order[own.newest_before(me)[1]]
                newer = other["w"][k]
            else:
                observed = [w for kk, vv in (reader.get("r") or {}).items() if kk != k
                            for w in [writer.get((kk, vv))] if w is not None and (w.get("w") or {}).get(k, -1) > v]
                earlier = session_reads[(s_me, k)].newest_before(me)
                if observed:
                    kind, other = "atomic-visibility", observed[0]
                    why, newer = "it observed, through another key, the write-only transaction that wrote", other["w"][k]
                elif earlier[0] > v:
                    kind, why, other = "monotonic-reads", "the session had already read", order[earlier[1]]
                    newer = other["r"][k]
                else:
                    best = max(((run.newest_before(int(vc[n, s]) + (s != s_me)), s) for s, run in writes.items()))
                    other = order[best[0][1]]
                    kind, why = "causality", f"causally precedes it, is a write of session {other['s']}"
                    newer = best[0][0]
            report.add(kind, f"read {v} of {k!r}, older than {newer}, which {why}", [reader, other],
                       key=k, read_version=v, newer_version=newer)
        _overwritten_reads(k, reads, got, newest, run_writes.get(k, {}), writer, order, vc, sidx, pos, op_no,
                           after_load, report)

    for k, runs in run_writes.items():
        _writes_below_their_past(k, runs, key_writes[k], loaded.get(k, 0), order, vc, sidx, after_load, report)

    # A read-write transaction commits above every version it read (it causally follows them).
    for o in order:
        if not (o.get("r") and o.get("w")):
            continue
        committed = [v for v in o["w"].values() if v is not None]
        if not committed:
            continue
        below = [(k, v) for k, v in o["r"].items() if v >= min(committed)]
        if below:
            k, v = max(below, key=lambda kv: kv[1])
            report.add("causality", f"committed at version {min(committed)}, not above version {v} of {k!r}, "
                       "which it had read", [o], key=k, read_version=v, newer_version=min(committed))

    # Wide-area rounds of a read-only transaction, or of a read-write transaction's reads (K2,
    # PaRiS* and PaRiS claim at most one), outside fault windows.
    claimed = max_wan_rounds is not None
    windows = [(a - FAULT_SLACK_MS, b + FAULT_SLACK_MS) for a, b in fault_windows]
    rounds_of = {"rot": defaultdict(int), "rwt": defaultdict(int)}
    what = {"rot": "a read-only transaction", "rwt": "a read-write transaction's reads"}
    excused = 0
    for o in order:
        if o["op"] not in rounds_of or "rounds" not in o:
            continue
        rounds_of[o["op"]][str(o["rounds"])] += 1
        if claimed and o["rounds"] > max_wan_rounds:
            if any(o["t0"] < b and o["t1"] > a for a, b in windows):
                excused += 1
            else:
                report.add("wan-rounds", f"{what[o['op']]} took {o['rounds']} wide-area rounds; "
                           f"the system claims at most {max_wan_rounds}", [o])

    total = sum(report.count.values())
    return {
        "checked": {"ops": len(ops), "committed_ops": n_ops, "sessions": len(sessions), "reads": reads_checked,
                    "writes": len(writer), "failed_ops": len(ops) - len(ok_ops),
                    "reads_of_unacknowledged_writes": unknown_reads,
                    # operations that began before the load ended: the load is not their initial state
                    "ops_before_load_end": int(n_ops - int(after_load.sum()) - sum(o["op"] == "load" for o in order))},
        "guarantees": ["atomic-visibility", "causality", "read-your-writes", "monotonic-reads", "no-lost-writes"]
        + ([f"at-most-{max_wan_rounds}-wan-rounds"] if claimed else []),
        "round_claim": {"max_wan_rounds": max_wan_rounds,
                        "rot_rounds": dict(sorted(rounds_of["rot"].items())),
                        "rwt_rounds": dict(sorted(rounds_of["rwt"].items())),
                        "excused_in_fault_windows": excused},
        "violations": {"count": total, "by_kind": {k: report.count[k] for k in KINDS if report.count[k]},
                       "listed": report.listed},
    }


class _Running:
    """Versions at increasing positions of one session, with their running maximum."""
    __slots__ = ("positions", "maxima", "holders")

    def __init__(self):
        self.positions: list[int] = []
        self.maxima: list[int] = []
        self.holders: list[int] = []  # op number holding the maximum so far

    def add(self, position: int, version: int, op: int) -> None:
        if self.maxima and self.maxima[-1] >= version:
            version, op = self.maxima[-1], self.holders[-1]
        self.positions.append(position)
        self.maxima.append(version)
        self.holders.append(op)

    def newest_before(self, position: int) -> tuple[int, int]:
        """(largest version, its op) among positions < ``position``; (-1, -1) if none."""
        i = bisect.bisect_left(self.positions, position) - 1
        return (self.maxima[i], self.holders[i]) if i >= 0 else (-1, -1)


class _Writes:
    """One session's writes of one key, in session order: positions, versions and op numbers."""
    __slots__ = ("positions", "versions", "ops")

    def __init__(self):
        self.positions: list[int] = []
        self.versions: list[int] = []
        self.ops: list[int] = []

    def add(self, position: int, version: int, op: int) -> None:
        self.positions.append(position)
        self.versions.append(version)
        self.ops.append(op)


def _latest_before(runs: dict, readers: np.ndarray, reader_sessions: np.ndarray, vc: np.ndarray):
    """Per session of ``runs`` (its writes of a key, in session order: ``_Writes`` or
    ``_Running``), the latest of them that causally precedes each of ``readers`` (a
    read-write transaction's own writes come after its reads: in its own session only the
    operations before it count): (session, index into its writes or -1) pairs."""
    for s, w in runs.items():
        bound = vc[readers, s] - (reader_sessions == s)
        yield s, np.searchsorted(np.asarray(w.positions), bound, side="right") - 1


def _overwritten_reads(k, reads, got, newest, runs, writer, order, vc, sidx, pos, op_no, after_load,
                       report) -> None:
    """Reads of ``k`` that return a value W although a write W' with W -> W' causally precedes
    the read (W loaded: every run write that began after the load follows it), W' having the
    lower version, so that the version order does not show it (reads it does show are
    flagged already)."""
    if not runs:
        return
    cand = np.nonzero((newest <= got) & (got > 0))[0]
    cand = [j for j in cand if (k, reads[j][1]) in writer]
    if not cand:
        return
    readers = np.array([reads[j][0] for j in cand], dtype=np.int64)
    ws = [writer[(k, reads[j][1])] for j in cand]
    w_loaded = np.array([w["op"] == "load" for w in ws])
    w_sess = np.array([sidx[w["s"]] for w in ws], dtype=np.int64)
    w_pos = np.array([pos[id(w)] for w in ws], dtype=np.int64)
    w_op = np.array([op_no[id(w)] for w in ws], dtype=np.int64)
    reader_sessions = np.array([sidx[order[n]["s"]] for n in readers], dtype=np.int64)
    lost_by = np.full(len(cand), -1, dtype=np.int64)  # op number of an overwriting write
    for s, idx in _latest_before(runs, readers, reader_sessions, vc):
        ops = np.asarray(runs[s].ops, dtype=np.int64)[np.maximum(idx, 0)]
        # A session's latest write before the reader follows W if any of its earlier ones does.
        follows = (idx >= 0) & (ops != w_op) & ((w_loaded & after_load[ops]) | (vc[ops, w_sess] >= w_pos))
        lost_by = np.where((lost_by < 0) & follows, ops, lost_by)
    for j in np.nonzero(lost_by >= 0)[0]:
        n, v = reads[cand[j]]
        w, later = ws[j], order[lost_by[j]]
        what = "the loaded value" if w["op"] == "load" else f"session {w['s']}'s write"
        report.add("lost-write", f"read {v} of {k!r}, {what}, after write {later['w'][k]} of session {later['s']}, "
                   f"which followed it and precedes the read: that write was lost (its version is the lower)",
                   [order[n], later, w], key=k, read_version=v, newer_version=later["w"][k])


def _writes_below_their_past(k, runs, all_writes, loaded_version, order, vc, sidx, after_load, report) -> None:
    """Run writes of ``k`` whose version is below a version of ``k`` in their causal past (the
    loaded version precedes every one that began after the load): last-writer-wins drops
    them. A read-write transaction that read ``k`` is left to its own check (it must commit
    above what it read)."""
    ns = np.array([n for w in runs.values() for n in w.ops
                   if not (order[n]["op"] == "rwt" and k in (order[n].get("r") or {}))], dtype=np.int64)
    if not len(ns):
        return
    mine = np.array([order[n]["w"][k] for n in ns], dtype=np.int64)
    sessions = np.array([sidx[order[n]["s"]] for n in ns], dtype=np.int64)
    past = np.where(after_load[ns], loaded_version, -1).astype(np.int64)
    holder = np.full(len(ns), -1, dtype=np.int64)  # -1: the load
    for s, idx in _latest_before(all_writes, ns, sessions, vc):
        run = all_writes[s]
        vals = np.where(idx >= 0, np.asarray(run.maxima, dtype=np.int64)[np.maximum(idx, 0)], -1)
        ops = np.asarray(run.holders, dtype=np.int64)[np.maximum(idx, 0)]
        better = vals > past
        past = np.where(better, vals, past)
        holder = np.where(better, ops, holder)
    for j in np.nonzero(past > mine)[0]:
        o = order[ns[j]]
        if holder[j] < 0 or order[holder[j]]["op"] == "load":
            what, ops = "the loaded version", [o]
        else:
            what, ops = f"a write of session {order[holder[j]]['s']} it causally follows", [o, order[holder[j]]]
        report.add("lost-write", f"wrote {mine[j]} of {k!r}, below {past[j]}, {what}: last-writer-wins drops it",
                   ops, key=k, read_version=None, newer_version=int(past[j]), written_version=int(mine[j]))


def export_text(ops: list[dict], path: Path) -> None:
    """The history as the plain r/w text format of isolation checkers, one operation per
    line: ``r(key,value,session,txn)`` and ``w(key,value,session,txn)``. Values are unique per
    key: the loaded data (and the empty row before it) is the initial value 0, and every
    later version of a key is numbered 1, 2, ... in version order. Transactions are numbered
    in order of their start; failed operations and loads are left out."""
    loaded = {(k, v) for o in ops if o.get("op") == "load" and o.get("ok", True)
              for k, v in (o.get("w") or {}).items() if v is not None}
    versions: dict[str, set[int]] = defaultdict(set)
    for o in ops:
        if not o.get("ok", True):
            continue
        for field in ("r", "w"):
            for k, v in (o.get(field) or {}).items():
                if v is not None and v != 0 and (k, v) not in loaded:
                    versions[k].add(v)
    value = {k: {v: n for n, v in enumerate(sorted(vs), 1)} for k, vs in versions.items()}

    def val(k, v):
        return 0 if v == 0 or (k, v) in loaded else value[k][v]

    txns = sorted((o for o in ops if o.get("ok", True) and o.get("op") != "load"), key=lambda o: (o["t0"], o["s"], o["i"]))
    tmp = Path(path).with_name("." + Path(path).name + ".tmp")
    with tmp.open("w") as out:
        for t, o in enumerate(txns, 1):
            for k, v in (o.get("r") or {}).items():
                out.write(f"r({k},{val(k, v)},{o['s']},{t})\n")
            for k, v in (o.get("w") or {}).items():
                out.write(f"w({k},{val(k, v)},{o['s']},{t})\n")
    tmp.replace(path)
