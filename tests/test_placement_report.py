"""The placement experiment's report (k2bench/placement/report.py): measured windows split at
the kill, latency from the intended start, failed reads counted, the killed datacenter's
clients left out (fail) or kept (redirect), trials pooled in merged histograms with their
spread, the model's prediction on the trial's own table, and K2's cache term. (tests/test_placement.py checks that the experiment
kills the datacenter BA's model calls most critical.)"""
import json
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from analysis import placement as analysis_placement
from k2bench import experiment, placement
from k2bench.placement import report as placement_report
from k2bench.errors import ConfigError

from conftest import SYSTEMS

TOPO = {"datacenters": ["A", "B", "C"], "rtt_ms": {"A": {"B": 10, "C": 100}, "B": {"C": 50}},
        "servers_per_dc": 1, "replication_factor": 1, "base_port": 17000}


def make_run(tmp_path, clients="fail"):
    """A run of one trial: keys 0-1 at A, 2-3 at C (f = 1); C killed at 20 s."""
    run = tmp_path / "run"
    trial = run / "k2"
    (trial / "clients").mkdir(parents=True)
    cfg = experiment.resolve({"systems": ["k2"], "workload": {"keys": 4, "keys_per_op": 1, "zipf": 1.0, "locality": 0.0},
                              "duration": {"warmup_s": 5, "measure_s": 35, "cooldown_s": 1},
                              "server": {"cache_fraction": 0}, "clients": {"rpc_timeout_ms": 3000},
                              "faults": [{"kind": "kill", "dc": "C", "at_s": 20, "clients": clients}]}, "t", SYSTEMS)
    start = 1_000_000.0
    (run / "manifest.json").write_text(json.dumps({"config": cfg, "trials": [
        {"system": "k2", "dir": "k2", "point_values": {"topology.place": "ba"}, "start": {"t0_ms": start}}]}))
    (trial / "summary.json").write_text("{}")
    (trial / "topology.yaml").write_text(yaml.safe_dump(TOPO))
    (trial / "placement.csv").write_text("ids,replicas,bucket\n0-1,A,0\n2-3,C,1\n")

    def op(s, key, ms, ok=True, kind="rot", late_ms=0):
        o = {"s": 1, "i": 0, "op": kind, "t0": start + s * 1000 + late_ms, "t1": start + s * 1000 + late_ms + ms,
             "ok": ok, "r": {f"user{key}": 1} if ok else None}
        if late_ms:
            o["ti"] = start + s * 1000  # paced, started late_ms behind its schedule
        return json.dumps({k: v for k, v in o.items() if v is not None}) + "\n"
    (trial / "clients" / "history-client-B.jsonl").write_text(
        op(1, 0, 999)            # warm-up: left out
        + op(6, 0, 4, late_ms=6) + op(7, 2, 50)   # normal: 10 ms from the intended start, 50
        + op(8, 0, 999, ok=False)      # failed: counted as such
        + op(19.5, 2, 900)       # started before the kill, ended after it: the kill's, not normal operation's
        + op(21, 0, 999) + op(31, 0, 999)  # inside the settling time after the kill: left out
        + op(33, 0, 12) + op(34, 1, 14)   # failure phase
        + op(34.5, 1, 14, late_ms=200))   # behind schedule by 200 ms: a late start, 214 ms
    (trial / "clients" / "history-client-C.jsonl").write_text(
        op(10, 2, 1) + op(35, 2, 70) + op(36, 2, 999, ok=False))  # C's own: out unless redirected
    return run


def test_the_report_splits_at_the_kill_and_predicts_on_the_trials_table(tmp_path):
    run = make_run(tmp_path)
    rep = placement_report.report(run, jar_check=None)
    assert rep["killed"] == {"dc": "C", "dcs": ["C"], "at_s": 20.0, "settle_s": 12.0,  # failover timeout (2 s) + 10 s
                             "clients": "fail"}
    (r,) = rep["trials"]
    assert r["placement"] == "BA" and r["system"] == "k2"
    assert r["windows"] == {"normal": [5.0, 20.0], "failure": [32.0, 40.0]}  # too short for cold and warm
    m = r["measured"]
    # C's own clients are left out of both phases (they fail): the phases compare the same clients
    assert m["normal"]["reads"] == 2 and m["normal"]["mean"] == 30.0 and m["normal"]["reads_per_dc"] == {"B": 2}
    assert m["normal"]["failed_reads"] == 1 and m["normal"]["failed_share"] == round(1 / 3, 4)
    assert m["normal"]["cut_by_kill"] == 1
    assert m["failure"]["reads"] == 3 and m["failure"]["mean"] == 80.0 and m["failure"]["failed_reads"] == 0
    assert m["failure"]["late_starts"] == 1 and m["normal"]["late_starts"] == 0  # 6 ms behind is on time
    # the model: each key's draw probability per reader times its latency from A (keys 0-1) or C
    p = placement.draw_probabilities(4, 1.0, 0.0, 3)
    p[:, 2] = 0  # C's reads: its clients are gone after the kill, so both phases leave them out
    want = (p * np.array([[0, 10, 100], [0, 10, 100], [100, 50, 0], [100, 50, 0]])).sum() / p.sum()
    assert abs(r["predicted"]["normal"]["mean"] - want) < 1e-3, (r["predicted"], want)
    assert r["predicted"]["failure"]["mean"] is not None or r["predicted"]["failure"]["unavailable_share"] > 0
    assert {b["bucket"]: b["measured_ms"] for b in r["buckets"]} == {0: 10.0, 1: 50.0}
    assert json.loads((run / "placement.json").read_text()) == json.loads(json.dumps(rep))


def test_redirected_clients_of_the_killed_datacenter_are_counted_on_both_sides(tmp_path):
    """clients: redirect (the paper's failure): C's clients go on from the nearest survivor,
    B (50 ms), and keys 2-3 (on C only, f = 1) are then unavailable: the model says so, and
    the measurement counts C's reads and its failed one."""
    run = make_run(tmp_path, clients="redirect")
    rep = placement_report.report(run, jar_check=None)
    assert rep["killed"]["settle_s"] == 12.0  # as without a redirect: the clients' calls fail with the connection
    (r,) = rep["trials"]
    m = r["measured"]
    assert m["normal"]["reads_per_dc"] == {"B": 2, "C": 1}
    assert m["failure"]["reads_per_dc"] == {"B": 3, "C": 1} and m["failure"]["failed_reads"] == 1
    p = placement.draw_probabilities(4, 1.0, 0.0, 3)
    lat = np.array([[0, 10, 100], [0, 10, 100], [100, 50, 0], [100, 50, 0]])
    want = (p * lat).sum() / p.sum()
    assert abs(r["predicted"]["normal"]["mean"] - want) < 1e-3
    # under C's failure: keys 0-1 from A; C's readers through B (50 ms), whose servers read A
    # (10 ms); K2's client runs the second round itself, so the hop to B is paid twice: 110 ms
    f = r["predicted"]["failure"]
    survive = p[:2]
    fail_lat = np.array([[0, 10, 110], [0, 10, 110]])
    assert abs(f["mean"] - (survive * fail_lat).sum() / survive.sum()) < 1e-3
    assert abs(f["unavailable_share"] - p[2:].sum() / p.sum()) < 1e-6


def test_trials_pool_into_one_histogram_with_their_spread_and_verdicts(tmp_path, monkeypatch):
    """Two trials each of BA and hash: the group's percentiles are of every read of both trials
    (not an average of the trials'), its range the trials' own; BA against hash is "a lower"
    only when the ranges do not overlap."""
    run = tmp_path / "run"
    cfg = experiment.resolve({"systems": ["k2"], "workload": {"keys": 4, "keys_per_op": 1, "zipf": 1.0, "locality": 0.0},
                              "duration": {"warmup_s": 5, "measure_s": 60, "cooldown_s": 1},
                              "server": {"cache_fraction": 0}}, "t", SYSTEMS)
    start = 1_000_000.0
    trials = []
    for place, latencies in (("ba", ([10] * 9 + [30], [12] * 10)), ("none", ([40] * 10, [45] * 9 + [90]))):
        for i, lats in enumerate(latencies, 1):
            d = run / f"k2/{place}/{i}"
            (d / "clients").mkdir(parents=True)
            (d / "summary.json").write_text("{}")
            (d / "topology.yaml").write_text(yaml.safe_dump(TOPO))
            (d / "placement.csv").write_text("ids,replicas,bucket\n0-1,A,0\n2-3,C,1\n")
            lines = [json.dumps({"s": 1, "i": j, "op": "rot", "t0": start + (6 + j * 5) * 1000,
                                 "t1": start + (6 + j * 5) * 1000 + ms, "ok": True, "r": {"user0": 1}})
                     for j, ms in enumerate(lats)]
            (d / "clients" / "history-client-B.jsonl").write_text("\n".join(lines) + "\n")
            trials.append({"system": "k2", "dir": f"k2/{place}/{i}", "trial": i, "start": {"t0_ms": start},
                           "point_values": {"topology.place": place}})
    (run / "manifest.json").write_text(json.dumps({"config": cfg, "trials": trials}))
    monkeypatch.setattr(placement_report, "trial_table",
                        lambda jar_check, trial_dir, keys, scratch: trial_dir / "placement.csv")
    rep = placement_report.report(run, jar_check=None)
    assert {(x["placement"], x["phase"]) for x in rep["groups"]} == {
        (p, w) for p in ("BA", "hash (groups)") for w in ("normal", "cold", "warm")}
    ba = next(x for x in rep["groups"] if x["placement"] == "BA" and x["phase"] == "normal")
    assert ba["trials"] == 2 and ba["measured"]["reads"] == 20
    assert ba["measured"]["mean"] == 12.0  # (9 x 10 + 30 + 10 x 12) / 20
    assert ba["measured"]["p90"] == pytest.approx(12.0, abs=0.01)  # of the 20 reads (HdrHistogram's 3 digits)
    # the trials' own p90s are 10 and 12
    assert (ba["measured"]["p90_min"], ba["measured"]["p90_max"]) == pytest.approx((10.0, 12.0), abs=0.01)
    assert (ba["measured"]["mean_min"], ba["measured"]["mean_max"]) == (12.0, 12.0)
    verdicts = {(c["phase"], c["metric"]): c["verdict"] for c in rep["comparisons"] if c["a"] == "BA"}
    assert verdicts[("normal", "mean")] == "a lower" and verdicts[("normal", "p50")] == "a lower"
    # the cold window (first 25 s: reads 0-4 of each trial) against the warm one (40-65 s: 7-9)
    cold = next(x for x in rep["groups"] if x["placement"] == "BA" and x["phase"] == "cold")
    warm = next(x for x in rep["groups"] if x["placement"] == "BA" and x["phase"] == "warm")
    assert cold["measured"]["reads"] == 10 and warm["measured"]["reads"] == 6
    import io
    from rich.console import Console
    out = io.StringIO()
    placement_report.print_report(Console(file=out, width=220), rep)
    text = out.getvalue()
    assert "normal, first 25 s" in text and "normal, last 25 s" in text
    assert "BA vs hash (groups)" in text and "a lower" in text
    assert "12.0 / 12 [12-12 / 10-12]" in text  # pooled mean / p90 [the trials' ranges]
    md = (run / "placement.md").read_text()  # the same tables in Markdown, written beside placement.json
    # pooled mean (equal in both trials: no range), p50 and p90 [the trials' own], failed reads
    assert "| k2 | normal | BA | 2 | 44.7 / 100 | 12.0 | 12.0 [10.0-12.0] | 12 [10-12] | 0 | 0.0 (0) |" in md
    assert "| k2 | normal | BA vs hash (groups) | 0.27x [0.24-0.30] a lower |" in md


def test_redirected_readers_pay_the_hop_once_per_client_round():
    """C killed, its clients redirected to B (50 ms away): a key B holds costs the hop; one
    only A holds (B reads it in 10 ms) the hop, B's read, and the hop again where the client
    runs the second round (K2's), or once (the placement paper's coordinator)."""
    rtt = np.array([[0, 10, 100], [10, 0, 50], [100, 50, 0]], dtype=float)
    sets, per_id = [(0,), (1,)], np.array([0, 1])
    readers = np.array([[0, 0, 1.0], [0, 0, 1.0]])  # C reads both keys, equally
    kill = placement_report.Kill("C", 95.0, "redirect")
    for second_round, want in ((True, 110), (False, 60)):
        got = placement_report.failure_stats(sets, per_id, rtt, readers, readers, kill, 2, 0, 40.0, 0.05,
                                             (98.0, 135.0), second_round)
        assert got["mean"] == pytest.approx((want + 50) / 2) and got["remote_share"] == 0.5  # B reads key 0 remotely
        assert got["p50"] == 50 and got["p90"] == want
    # with K2's cache (room for everything, no writes): key 0 is cached at B from C's first read
    # of it after the kill (B never reads it itself), then costs the hop alone
    r = 40.0 * 0.5  # C's reads of key 0 per second (draws: each key half of C's)
    a, b = 98.0 - 95, 135.0 - 95
    hit = 1 - (np.exp(-r * a) - np.exp(-r * b)) / (r * (b - a))
    cached = placement_report.failure_stats(sets, per_id, rtt, readers / 2, readers / 2, kill, 2, 1e9, 40.0, 0.0,
                                            (98.0, 135.0), True)
    assert cached["mean"] == pytest.approx((hit * 50 + (1 - hit) * 110 + 50) / 2)
    assert cached["remote_share"] == pytest.approx((1 - hit) / 2)
    # a key only the killed datacenter held is unavailable to its clients, cache or not (their
    # misses fill nothing)
    lost = placement_report.failure_stats([(2,), (1,)], per_id, rtt, readers / 2, readers / 2, kill, 2, 1e9, 40.0,
                                          0.0, (98.0, 135.0), True)
    assert lost["unavailable_share"] == pytest.approx(0.5) and lost["mean"] == pytest.approx(50)
    # with the clients failing instead, nobody reads under the failure
    gone = placement_report.failure_stats(sets, per_id, rtt, readers, readers * 0, placement_report.Kill(
        "C", 95.0, "fail"), 2, 0, 40.0, 0.05, (98.0, 135.0), True)
    assert gone["mean"] is None


def test_redirected_readers_fill_the_serving_cache_from_the_kill_as_a_simulation_does():
    """B serves C's redirected clients from the kill (95 s) on: a key's hit probability at B
    over the failure window, against Poisson events drawn one by one (B's reads and writes
    before the kill, B's and C's after, A's writes throughout; a read hits when the last event
    before it is B's or C's)."""
    rng = np.random.default_rng(7)
    ops, wf, kill_s, window = 10.0, 0.2, 95.0, (98.0, 135.0)
    # per key: datacenters A, B, C's draw shares (rates = ops x share x (1 - wf) reads, x wf writes)
    draws = np.array([[0.02, 0.01, 0.05], [0.0, 0.0, 0.003], [0.01, 0.004, 0.0], [0.05, 0.0, 0.02],
                      [0.0005, 0.001, 0.0005]])  # the last: slow enough that the time before the kill counts
    local = np.array([[True, False, False]] * 5)
    got = placement_report.redirected_hits(draws, local, 1e9, ops, wf, 2, 1, kill_s, window)
    for key in range(len(draws)):
        reads, writes = (1 - wf) * ops * draws[key], wf * ops * draws[key]
        hits, n = 0, 4000
        for _ in range(n):
            t = rng.uniform(*window)
            events = []  # (time, mine)
            for rate, a, b, mine in ((reads[1] + writes[1], 0, t, True), (writes[0], 0, t, False),
                                     (writes[2], 0, kill_s, False), (reads[2] + writes[2], kill_s, t, True)):
                if rate > 0:
                    times = rng.uniform(a, b, rng.poisson(rate * (b - a)))
                    events += [(x, mine) for x in times]
            hits += bool(events) and max(events)[1]
        assert abs(got[key] - hits / n) < 0.03, (key, got[key], hits / n)
    # key 1, only C reads and writes it: cached from C's first operation after the kill on
    r = ops * 0.003
    assert got[1] == pytest.approx(1 - (np.exp(-r * 3) - np.exp(-r * 40)) / (r * 37))
    # key 2, C never touches it: B's own hits, as without the redirect
    alone = placement_report.cache_hits(local, draws, 1e9, ops, wf, window)
    assert got[2] == pytest.approx(alone[2, 1])
    assert np.all(placement_report.redirected_hits(draws, np.ones_like(local), 1e9, ops, wf, 2, 1, kill_s,
                                                   window) == 0)  # B holds every key: nothing to cache


def test_a_cache_filling_from_empty_evicts_nothing_before_it_holds_its_capacity():
    """Che's time T is when an empty cache has touched as many keys as it holds: before it
    nothing is evicted, after it LRU holds a key with 1 - exp(-rate T)."""
    rates = 1.0 / np.arange(1, 101)
    t = placement.che_time(rates, 10)
    assert np.all(placement.in_cache_filling(rates, t, 0.0, t) == 1)  # not full yet
    assert np.allclose(placement.in_cache_filling(rates, t, t, 2 * t), placement.lru_hits(rates, 10))  # full
    half = placement.in_cache_filling(rates, t, 0.0, 2 * t)  # half the window each way
    assert np.allclose(half, 0.5 + 0.5 * placement.lru_hits(rates, 10))
    assert np.all(placement.in_cache_filling(rates, placement.che_time(rates, 500), 0, 1e6) == 1)  # all fit


def test_the_report_refuses_what_is_not_a_run(tmp_path):
    try:
        placement_report.check_run(tmp_path)
    except ConfigError as e:
        assert "no manifest.json" in str(e)
    else:
        raise AssertionError("a directory without a manifest was taken for a run")


def test_the_cache_model_fills_lru_to_capacity_and_a_write_elsewhere_empties_it():
    rates = 1.0 / np.arange(1, 101)
    hits = placement.lru_hits(rates, 10)
    assert abs(hits.sum() - 10) < 1e-6 and np.all(np.diff(hits) <= 0)  # Che: the hotter, the likelier
    assert placement.lru_hits(rates, 500).sum() == 100  # everything fits
    local = np.array([[True, False]] * 3)  # three keys at datacenter 0, read from 1 too
    draws = np.array([[0.5, 0.5], [0.3, 0.3], [0.2, 0.2]])
    never = placement_report.cache_hits(local, draws, 10, 100.0, 0.0, (50.0, 60.0))
    assert np.allclose(never[:, 0], 0) and np.all(never[:, 1] > 0.99)  # warm, never written: hits
    # half the operations write: 1's reads r = 0.5 x 100 x p, its own writes as many (cached
    # too), datacenter 0's writes as many again: (r + w_1) / (r + w_1 + w_0) = 2/3
    busy = placement_report.cache_hits(local, draws, 10, 100.0, 0.5, (50.0, 60.0))
    assert np.allclose(busy[:, 1], 2 / 3, atol=0.01)
    # with datacenter 0 failed, nothing invalidates 1's copies
    alone = placement_report.cache_hits(local, draws, 10, 100.0, 0.5, (50.0, 60.0), failed=0)
    assert np.all(alone[:, 1] > 0.99)
    cold = placement_report.cache_hits(local, draws, 10, 100.0, 0.0, (0.0, 0.01))
    assert np.all(cold[:, 1] < 0.5)  # the first hundredth of a second: mostly misses
    # percentiles are of reads: a pair half hits (0 ms), half misses (100 ms)
    s = placement_report.stats(np.array([[100.0]]), np.array([[1.0]]), np.array([[0.5]]))
    assert s["mean"] == 50.0 and s["p50"] == 0.0 and s["p90"] == 100.0


def test_the_report_draws_measured_and_predicted_cdfs_and_buckets(tmp_path):
    """The figures come from placement.json: each placement's measured CDF is the percentiles
    of one histogram merged over the phase's client files (not per-client percentiles
    averaged), the predicted one the model's; the per-bucket figure plots predicted against
    measured."""
    import matplotlib
    matplotlib.use("Agg")
    from hdrh.histogram import HdrHistogram

    from analysis import figures, load

    run = make_run(tmp_path)
    start = 1_000_000.0
    second = "".join(json.dumps({"s": 2, "i": i, "op": "rot", "t0": start + (9 + i) * 1000, "t1": start + (9 + i) * 1000
                                 + 20, "ok": True, "r": {"user0": 1}}) + "\n" for i in range(3))
    (run / "k2" / "clients" / "history-client-B-2.jsonl").write_text(second)  # a second client host in B
    rep = placement_report.report(run, jar_check=None)
    merged = HdrHistogram(1, 3_600_000_000, 3)
    for ms in (10, 50, 20, 20, 20):  # B's normal-phase reads, both files
        merged.record_value(ms * 1000)
    want = [round(merged.get_value_at_percentile(p) / 1000, 3) for p in placement_report.PERCENTILES]
    runs = [SimpleNamespace(dir=run, name="run")]  # what the figures read of a run: placement.json
    frame = analysis_placement.placement_frame(runs)
    measured = frame[(frame["source"] == "measured") & (frame["phase"] == "normal")].iloc[0]
    assert measured["reads"] == 5 and measured["mean_ms"] == 24.0
    fig = analysis_placement.placement_latency(runs)
    lines = {(ax.get_title(), ln.get_label()): ln for ax in fig.axes for ln in ax.get_lines()}
    normal = lines[("K2: normal operation", "BA, measured")]
    assert list(normal.get_xdata()) == want
    assert list(normal.get_ydata()) == [p / 100 for p in placement_report.PERCENTILES]
    predicted = lines[("K2: C killed", "BA, predicted")]
    failure = rep["trials"][0]["predicted"]["failure"]
    assert list(predicted.get_xdata()) == [failure[f"p{p}"] for p in placement_report.PERCENTILES]
    buckets = analysis_placement.placement_buckets(runs, min_reads=1)
    points = sorted(map(tuple, buckets.axes[0].collections[0].get_offsets().tolist()))
    assert [y for _, y in points] == sorted(b["measured_ms"] for b in rep["trials"][0]["buckets"])
    # The run's figures: buckets need 30 reads each to be drawn, these have one to four.
    assert [p.name for p in analysis_placement.draw(run)] == ["placement.png"]
    assert (run / "placement.png").stat().st_size > 10_000


def test_the_figures_say_what_is_missing(tmp_path):
    from analysis import figures
    run = make_run(tmp_path)  # no report yet
    with pytest.raises(figures.MissingData, match="no placement report"):
        analysis_placement.placement_latency([SimpleNamespace(dir=run, name="run")])
    assert analysis_placement.draw(run) == []
    assert analysis_placement.main([str(run)]) == 2  # no placement.json: says so
