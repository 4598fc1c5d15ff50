"""The consistency checker on hand-built histories: each anomaly is caught and named, and
its valid counterpart passes."""
import random
import time

import pytest

from k2bench import checker


class H:
    """Builds a history: sessions' operations in order, with increasing times."""

    def __init__(self):
        self.ops = []
        self.next_i = {}
        self.t = 1000.0

    def _op(self, s, op, **kw):
        i = self.next_i.get(s, 0)
        self.next_i[s] = i + 1
        self.t += 1
        o = {"s": s, "i": i, "op": op, "t0": self.t, "t1": self.t + 0.5, "ok": True, **kw}
        self.ops.append(o)
        return o

    def load(self, s, **w):
        return self._op(s, "load", w=w)

    def write(self, s, k, v):
        return self._op(s, "write", w={k: v})

    def wot(self, s, **w):
        return self._op(s, "wot", w=w)

    def rot(self, s, rounds=0, **r):
        return self._op(s, "rot", r=r, rounds=rounds)

    def rwt(self, s, r, w, rounds=0):
        """A read-write transaction: versions read, then the one version its writes got."""
        return self._op(s, "rwt", r=r, w=w, rounds=rounds)

    def check(self, **kw):
        return checker.check(self.ops, **kw)


def kinds(result):
    return result["violations"]["by_kind"]


@pytest.fixture
def h():
    h = H()
    h.load(9000, x=1, y=2)  # the loaded versions
    return h


def test_a_valid_history_has_no_violation(h):
    h.wot(1, x=10, y=10)
    h.rot(2, x=10, y=10)
    h.rot(2, x=10, y=10)
    h.write(2, "x", 20)
    h.rot(2, x=20, y=10)
    h.rot(3, x=1, y=2)  # an old but consistent snapshot: allowed
    r = h.check()
    assert r["violations"]["count"] == 0, r["violations"]
    assert r["checked"]["committed_ops"] == 7 and r["checked"]["reads"] == 8


def test_fractured_read_of_a_write_only_transaction(h):
    h.wot(1, x=10, y=10)
    h.rot(2, x=10, y=2)  # sees the transaction's x, misses its y
    r = h.check()
    assert kinds(r) == {"atomic-visibility": 1}
    v = r["violations"]["listed"][0]
    assert v["key"] == "y" and v["read_version"] == 2 and v["newer_version"] == 10
    assert [o["op"] for o in v["ops"]] == ["rot", "wot"]


def test_both_or_neither_side_of_a_transaction_is_valid(h):
    h.wot(1, x=10, y=10)
    h.rot(2, x=10, y=10)
    h.rot(3, x=1, y=2)
    h.wot(4, x=30, y=30)
    h.rot(5, x=30, y=10)  # x from the second transaction, y from the first: fractured
    assert kinds(h.check()) == {"atomic-visibility": 1}
    h.ops.pop()
    h.rot(5, x=30, y=30)
    assert h.check()["violations"]["count"] == 0


def test_causality_through_session_order(h):
    h.write(1, "x", 10)
    h.write(1, "y", 11)  # y depends on x by session order
    h.rot(2, x=1, y=11)  # sees y, misses x
    r = h.check()
    assert kinds(r) == {"causality": 1}
    assert r["violations"]["listed"][0]["key"] == "x"


def test_causality_through_reads_from_across_three_sessions(h):
    h.write(1, "x", 10)
    h.rot(2, x=10)
    h.write(2, "y", 20)  # depends on x=10 through what session 2 read
    h.rot(3, y=20, x=1)
    assert kinds(h.check()) == {"causality": 1}
    h.ops[-1]["r"]["x"] = 10
    assert h.check()["violations"]["count"] == 0


def test_causality_across_two_read_only_transactions_of_a_reader(h):
    h.write(1, "x", 10)
    h.write(1, "y", 11)
    h.rot(2, y=11)
    h.rot(2, x=1)  # the session saw y=11 earlier, so x=10 precedes this read
    assert kinds(h.check()) == {"causality": 1}


def test_read_your_writes(h):
    h.write(1, "x", 10)
    h.rot(1, x=1)
    assert kinds(h.check()) == {"read-your-writes": 1}
    h.ops[-1]["r"]["x"] = 10
    assert h.check()["violations"]["count"] == 0
    h.write(2, "x", 50)  # a newer write by someone else is fine to read
    h.rot(1, x=50)
    assert h.check()["violations"]["count"] == 0


def test_monotonic_reads(h):
    h.write(1, "x", 10)
    h.rot(2, x=10)
    h.rot(2, x=1)  # went back
    assert kinds(h.check()) == {"monotonic-reads": 1}
    h.ops[-1]["r"]["x"] = 10
    assert h.check()["violations"]["count"] == 0


def test_a_read_write_transaction_is_checked_as_reads_then_writes(h):
    h.rwt(1, r={"x": 1}, w={"x": 10, "y": 10})  # read x, then wrote x and y: not its own read-your-writes
    h.rot(2, x=10, y=10)
    h.rwt(2, r={"y": 10}, w={"z": 20})  # z depends on y=10, hence on x=10 (one transaction)
    h.rot(3, z=20, x=10, y=10)
    r = h.check()
    assert r["violations"]["count"] == 0, r["violations"]
    assert r["checked"]["writes"] == 5  # x, y loaded; x, y, z written


def test_read_write_transactions_break_guarantees_like_any_other(h):
    h.rwt(1, r={"x": 1}, w={"x": 10, "y": 10})
    h.rot(2, x=10, y=2)  # half of the read-write transaction's writes
    assert kinds(h.check()) == {"atomic-visibility": 1}
    h.ops.pop()
    h.rwt(1, r={"y": 2}, w={"z": 30})  # its own earlier write of y=10 is missed
    assert kinds(h.check()) == {"read-your-writes": 1}
    h.ops[-1]["r"]["y"] = 10
    assert h.check()["violations"]["count"] == 0
    h.rwt(2, r={"z": 30}, w={"x": 40})
    h.rot(3, x=40, y=2)  # x=40 follows z=30 (session 2 read it), which follows session 1's y=10
    assert kinds(h.check()) == {"causality": 1}


def test_a_read_write_transaction_must_commit_above_what_it_read(h):
    h.write(1, "x", 50)
    h.rwt(2, r={"x": 50}, w={"y": 40})  # commit 40 below the 50 it read: its writes would look older
    r = h.check()
    assert kinds(r) == {"causality": 1}
    v = r["violations"]["listed"][0]
    assert v["key"] == "x" and v["read_version"] == 50 and v["newer_version"] == 40
    assert "committed at version 40, not above version 50" in v["message"]
    h.ops[-1]["w"]["y"] = 60
    assert h.check()["violations"]["count"] == 0


def test_duplicate_and_unknown_versions(h):
    h.write(1, "x", 10)
    h.write(2, "x", 10)
    h.rot(3, x=77)
    r = h.check()
    assert kinds(r) == {"duplicate-version": 1, "unknown-version": 1}


def test_a_read_of_a_failed_write_is_attributed_not_flagged(h):
    o = h.write(1, "x", None)
    o["ok"], o["err"] = False, "timeout"
    h.rot(2, x=77)  # the failed write may have committed as 77
    r = h.check()
    assert r["violations"]["count"] == 0
    assert r["checked"]["reads_of_unacknowledged_writes"] == 1 and r["checked"]["failed_ops"] == 1


def test_reading_the_empty_row_before_the_load_is_not_a_violation_by_itself(h):
    h.rot(2, x=0)
    assert h.check()["violations"]["count"] == 0
    h.rot(2, x=1)
    h.rot(2, x=0)  # but going back from the loaded version is
    assert kinds(h.check()) == {"monotonic-reads": 1}


def test_a_write_below_the_loaded_version_is_lost_and_its_reads_are_flagged():
    h = H()
    h.load(9000, x=100, y=200)
    h.write(1, "x", 50)  # acknowledged, but below the loaded 100: last-writer-wins keeps the load
    h.rot(1, x=100)  # the session reads the loaded value after its own write
    h.write(1, "y", 300)
    h.rot(2, y=300, x=100)  # another session, after the write through y, reads the loaded x too
    h.rot(3, x=100)  # a session that saw none of it may read the loaded value
    r = h.check()
    assert kinds(r) == {"lost-write": 3}
    by_form = sorted(v["message"].split(" ")[0] for v in r["violations"]["listed"])
    assert by_form == ["read", "read", "wrote"]
    wrote = next(v for v in r["violations"]["listed"] if v["message"].startswith("wrote"))
    assert wrote["written_version"] == 50 and wrote["newer_version"] == 100 and "loaded" in wrote["message"]
    reads = [v for v in r["violations"]["listed"] if v["message"].startswith("read")]
    assert {v["ops"][0]["s"] for v in reads} == {1, 2} and all(v["read_version"] == 100 for v in reads)
    assert all(v["newer_version"] == 50 and "the loaded value" in v["message"] for v in reads)


def test_a_write_below_a_version_it_causally_follows_is_lost():
    h = H()
    h.load(9000, x=1, y=2)
    h.write(1, "x", 300)
    h.rot(2, x=300)
    h.write(2, "x", 200)  # follows 300 through the read, but got the lower version
    h.rot(2, x=300)  # its own write lost: the version order shows nothing (300 > 200)
    h.write(3, "x", 250)  # concurrent with both: any order is allowed
    h.rot(3, x=300)
    r = h.check()
    assert kinds(r) == {"lost-write": 2}
    listed = {v["message"].split(" ")[0]: v for v in r["violations"]["listed"]}
    assert listed["wrote"]["written_version"] == 200 and listed["wrote"]["newer_version"] == 300
    assert "session 1" in listed["wrote"]["message"]
    assert listed["read"]["read_version"] == 300 and listed["read"]["newer_version"] == 200


def test_the_load_is_the_initial_state_only_of_what_began_after_it():
    h = H()
    early = h.write(1, "x", 50)  # overlaps the load: it may be older than the loaded value
    h.load(9000, x=100)
    early["t1"] = h.ops[-1]["t1"] + 1
    h.rot(1, x=100)
    r = h.check()
    assert r["violations"]["count"] == 0 and r["checked"]["ops_before_load_end"] == 1
    h.write(2, "x", 60)  # began after the load: below it, lost
    assert kinds(h.check()) == {"lost-write": 1}


def test_a_write_above_what_it_follows_is_not_lost(h):
    h.write(1, "x", 300)
    h.rot(2, x=300)
    h.write(2, "x", 400)
    h.rot(2, x=400)
    h.rot(3, x=1)  # nothing causally precedes this read: the loaded value is fine
    h.rot(1, x=300)  # session 1 never saw 400
    assert h.check()["violations"]["count"] == 0
    h.rot(2, x=300)  # but session 2 did: the version order names it
    assert kinds(h.check()) == {"read-your-writes": 1}


def test_a_read_from_its_own_future_is_a_cycle(h):
    r1 = h.rot(1, y=20)  # reads y=20, written later by the same session
    h.write(1, "y", 20)
    assert r1["i"] == 0
    assert "causal-cycle" in kinds(h.check())


def test_wide_area_rounds_claim_and_fault_windows(h):
    h.rot(1, rounds=1, x=1)
    slow = h.rot(1, rounds=2, x=1)
    assert h.check()["violations"]["count"] == 0, "no claim, no violation"
    r = h.check(max_wan_rounds=1)
    assert kinds(r) == {"wan-rounds": 1}
    assert r["round_claim"]["rot_rounds"] == {"1": 1, "2": 1}
    r = h.check(max_wan_rounds=1, fault_windows=[(slow["t0"] - 100, slow["t0"] - 50)])
    assert r["violations"]["count"] == 0 and r["round_claim"]["excused_in_fault_windows"] == 1
    r = h.check(max_wan_rounds=1, fault_windows=[(slow["t0"] - 60_000, slow["t0"] - 30_000)])
    assert kinds(r) == {"wan-rounds": 1}, "a fault long over excuses nothing"


def test_a_read_write_transactions_reads_are_held_to_the_round_claim(h):
    h.rwt(1, r={"x": 1}, w={"y": 10}, rounds=1)
    h.rwt(2, r={"x": 1}, w={"z": 11}, rounds=2)
    r = h.check(max_wan_rounds=1)
    assert kinds(r) == {"wan-rounds": 1}
    assert "read-write transaction's reads took 2" in r["violations"]["listed"][0]["message"]
    assert r["round_claim"]["rwt_rounds"] == {"1": 1, "2": 1} and r["round_claim"]["rot_rounds"] == {}


def test_violations_are_counted_in_full_and_listed_up_to_a_limit(h):
    h.wot(1, x=10, y=10)
    for _ in range(checker.MAX_LISTED + 5):
        h.rot(2, x=10, y=2)
    r = h.check()
    assert kinds(r) == {"atomic-visibility": checker.MAX_LISTED + 5}
    assert len(r["violations"]["listed"]) == checker.MAX_LISTED


def test_export_text_numbers_values_per_key_with_the_load_as_zero(h, tmp_path):
    h.wot(1, x=10, y=10)
    h.rot(2, x=10, y=2)
    h.write(2, "x", 30)
    failed = h.write(3, "y", None)
    failed["ok"] = False
    h.rot(3, x=0)
    out = tmp_path / "history.txt"
    checker.export_text(h.ops, out)
    s1, s2, s3 = 1, 2, 3
    assert out.read_text().splitlines() == [
        f"w(x,1,{s1},1)", f"w(y,1,{s1},1)",
        f"r(x,1,{s2},2)", f"r(y,0,{s2},2)",
        f"w(x,2,{s2},3)",
        f"r(x,0,{s3},4)",
    ]


def test_a_large_valid_random_history_has_no_violation():
    """The size of a real run (~60k operations, hot keys written by every session)."""
    rng = random.Random(7)
    h = H()
    keys = [f"k{i}" for i in range(2000)]
    h.load(9000, **{k: 1 for k in keys})
    newest = {k: 1 for k in keys}
    version = 100
    for n in range(60_000):
        s = rng.randrange(48)
        if rng.random() < 0.05:
            version += 1
            ks = rng.sample(keys[:50], 3)
            h.wot(s, **{k: version for k in ks})
            for k in ks:
                newest[k] = version
        else:
            h.rot(s, **{k: newest[k] for k in rng.sample(keys[:200], 5)})
    start = time.time()
    r = h.check()
    elapsed = time.time() - start
    assert r["violations"]["count"] == 0
    print(f"checked {r['checked']['committed_ops']} ops in {elapsed:.1f} s")
