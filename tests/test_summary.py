"""summary.json from HdrHistogram logs a smoke run of the harness produced (tests/fixtures/smoke-k2)."""
import json
import pathlib

import pytest

from k2bench import summary as S

FIX = pathlib.Path(__file__).resolve().parent / "fixtures" / "smoke-k2"
WINDOW = json.loads((FIX / "window.json").read_text())


@pytest.fixture(scope="module")
def logs():
    return {p.stem.removeprefix("client-"): [p] for p in sorted(FIX.glob("client-*.hlog"))}


@pytest.fixture(scope="module")
def intervals(logs):
    return [iv for ps in logs.values() for p in ps for iv in S.read_log(p)]


def window():
    return tuple(WINDOW["window_ms"])


def samples(intervals, tag, win):
    """Every recorded value, expanded from the intervals in the window: the 'concatenated samples'."""
    out = []
    for iv in intervals:
        if iv.tag == tag and win[0] <= iv.midpoint_ms < win[1]:
            for item in iv.histogram.get_recorded_iterator():
                out += [item.value_iterated_to] * item.count_at_value_iterated_to
    return sorted(out)


def percentile(sorted_values, p):
    """HdrHistogram's definition: the smallest value with at least round(p% of n) samples at or below it."""
    rank = max(1, int(p / 100 * len(sorted_values) + 0.5))
    return sorted_values[rank - 1]


def test_the_fixture_is_a_real_run(logs, intervals):
    assert set(logs) == {"VA", "CA", "SP", "LDN", "TYO", "SG"}
    assert {iv.tag for iv in intervals} >= {"rot", "rot_rounds", "staleness"}


@pytest.mark.parametrize("p", [1, 50, 90, 99, 99.9])
def test_merged_percentiles_equal_those_of_the_concatenated_samples(intervals, p):
    merged = S.merge(intervals, "rot", window())
    values = samples(intervals, "rot", window())
    assert merged.get_total_count() == len(values) > 100
    assert merged.get_value_at_percentile(p) == percentile(values, p)


def test_averaging_per_client_percentiles_would_be_wrong(logs):
    """The reason for merging: the mean of the clients' p99s is not the p99 of all operations."""
    per_client = [S.merge(S.read_log(p), "rot", window()).get_value_at_percentile(99) for [p] in logs.values()]
    merged = S.merge([iv for [p] in logs.values() for iv in S.read_log(p)], "rot", window())
    assert sum(per_client) / len(per_client) != merged.get_value_at_percentile(99)


def test_trimming_keeps_intervals_whose_midpoint_is_in_the_window(intervals):
    w = window()
    inside = sum(iv.histogram.get_total_count() for iv in intervals
                 if iv.tag == "rot" and w[0] <= iv.midpoint_ms < w[1])
    everything = sum(iv.histogram.get_total_count() for iv in intervals if iv.tag == "rot")
    assert S.merge(intervals, "rot", w).get_total_count() == inside < everything
    narrower = (w[0] + 2000, w[1] - 2000)
    assert S.merge(intervals, "rot", narrower).get_total_count() < inside


def test_summary_has_the_spec_fields_and_consistent_figures(logs, intervals):
    s = S.summarize(logs, system="k2", experiment="smoke", window_ms=window(), origin_ms=WINDOW["origin_ms"])
    for key in ("system", "experiment", "measured_seconds", "throughput_ops_per_s", "ops", "staleness_ms", "errors"):
        assert key in s
    rot = s["ops"]["rot"]
    assert set(rot["latency_ms"]) == {"mean", "p1", "p50", "p90", "p99", "p999"}
    assert set(s["staleness_ms"]) >= {"p50", "p75", "p99"}
    assert set(rot["wan_rounds"]) == {"0", "1", "2", "3"}
    assert sum(rot["wan_rounds"].values()) == rot["count"]
    assert rot["all_local_fraction"] == pytest.approx(rot["wan_rounds"]["0"] / rot["count"])
    assert s["measured_seconds"] == pytest.approx((window()[1] - window()[0]) / 1000)
    committed = sum(s["ops"][op]["count"] for op in ("rot", "wot", "write"))
    assert s["throughput_ops_per_s"] == pytest.approx(committed / s["measured_seconds"], rel=1e-3)
    assert rot["latency_ms"]["p50"] == pytest.approx(percentile(samples(intervals, "rot", window()), 50) / 1000)
    assert sum(d["rot"]["count"] for d in s["per_dc"].values()) == rot["count"]
    assert sum(s["timeseries"]["ops_per_s"]) == sum(
        iv.histogram.get_total_count() for iv in intervals if iv.tag in ("rot", "wot", "write"))
    json.dumps(s)  # serialisable as is


def test_an_empty_window_gives_nulls_not_crashes(logs):
    s = S.summarize(logs, system="k2", experiment="smoke", window_ms=(0, 1000))
    assert s["ops"]["rot"]["count"] == 0
    assert s["ops"]["rot"]["latency_ms"]["p99"] is None and s["ops"]["rot"]["all_local_fraction"] is None


def test_the_end_table_prints_every_figure_whole_on_an_80_column_terminal():
    """The end table is where a user reads snapshot lag and staleness: a figure cut to
    "792…" by a narrow terminal is no figure."""
    import io

    from rich.console import Console

    from k2bench.progress import summary_table
    run = pathlib.Path(__file__).parent / "fixtures" / "run-analysis"
    summaries = [json.loads((run / s / "summary.json").read_text()) for s in ("k2", "rad", "paris-star")]
    k2 = summaries[0]
    k2["snapshot_lag_ms"] = {"count": 10, "p50": 1776.6, "p75": 2764.8, "p99": 7929.9}
    out = io.StringIO()
    Console(file=out, width=80).print(summary_table(summaries))
    text = out.getvalue()
    assert "…" not in text
    assert "1777/2765/7930" in text


# ------------------------------------------------------------------ synthetic logs

BASE_MS = 1_800_000_000_000
WIN = (BASE_MS + 2000, BASE_MS + 5000)  # intervals starting at 2, 3 and 4 s are measured


def write_hlog(path, intervals):
    """A client log as the Java clients write it: one tagged interval histogram per line,
    (tag, start second after BASE_MS, values recorded in it)."""
    lines = ["#[Histogram log format version 1.3]", f"#[StartTime: {BASE_MS / 1000:.3f} (seconds since epoch)]",
             f"#[BaseTime: {BASE_MS / 1000:.3f} (seconds since epoch)]",
             '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"']
    for tag, start_s, values in intervals:
        h = S.new_histogram()
        for v in values:
            h.record_value(v)
        lines.append(f"Tag={tag},{start_s:.3f},1.000,{h.get_max_value() / 1000:.3f},{h.encode().decode()}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def paced_logs(tmp_path):
    """Two clients: VA fell far behind during the warm-up only; in the window VA's
    operations started 1 ms late and CA's 300 ms late. Cache: warm-up all misses; in the
    window VA 30 hits and 10 misses, CA 15 and 5."""
    va = write_hlog(tmp_path / "client-VA.hlog", [
        ("rot", 0, [50_000] * 10), ("schedule_lag", 0, [4_000_000] * 100), ("cache_miss", 0, [1] * 100),
        ("rot", 2, [50_000] * 10), ("schedule_lag", 2, [1_000] * 90), ("cache_miss", 2, [0] * 30 + [1] * 10),
        ("schedule_lag", 6, [9_000_000] * 50)])  # cool-down
    ca = write_hlog(tmp_path / "client-CA.hlog", [
        ("rot", 3, [60_000] * 10), ("schedule_lag", 3, [300_000] * 10), ("cache_miss", 4, [0] * 15 + [1] * 5)])
    return {"VA": [va], "CA": [ca]}


def test_schedule_lag_is_merged_over_clients_within_the_window(paced_logs):
    s = S.summarize(paced_logs, system="k2", experiment="t", window_ms=WIN, pacing_interval_ms=400.0)
    lag = s["schedule_lag_ms"]
    assert lag["count"] == 100, "the warm-up's 100 and the cool-down's 50 are trimmed"
    assert lag["p50"] == pytest.approx(1.0, rel=1e-3)
    assert lag["p99"] == pytest.approx(300.0, rel=1e-3), "merged: not the mean of the clients' p99s (150.5)"
    assert lag["max"] == pytest.approx(300.0, rel=1e-3)
    assert lag["interval_ms"] == 400.0
    assert s["warnings"] == []
    json.dumps(s)


def test_closed_loop_runs_have_no_schedule_lag(paced_logs):
    s = S.summarize(paced_logs, system="k2", experiment="t", window_ms=WIN)
    assert s["schedule_lag_ms"] is None and s["warnings"] == []


@pytest.mark.parametrize("interval_ms, warned", [(200.0, True), (299.0, True), (300.3, False), (1000.0, False)])
def test_a_schedule_lag_p99_beyond_a_threads_interval_is_a_warning(paced_logs, interval_ms, warned):
    s = S.summarize(paced_logs, system="k2", experiment="t", window_ms=WIN, pacing_interval_ms=interval_ms)
    if not warned:
        assert s["warnings"] == []
        return
    [w] = s["warnings"]
    assert "\n" not in w
    assert w == (f"clients ran behind their schedule: schedule lag p99 300 ms > the {interval_ms:.0f} ms between a "
                 f"thread's operations; latencies include queueing behind earlier operations (the machine could not "
                 f"sustain the target rate, or duration.warmup_s is too short for the start-up)")


def test_the_cache_hit_rate_counts_the_clients_reads_in_the_window(paced_logs):
    s = S.summarize(paced_logs, system="k2", experiment="t", window_ms=WIN, origin_ms=BASE_MS)
    over = s["cache"].pop("over_time")
    assert s["cache"] == {"hit_rate": 0.75, "nonreplica_key_reads": 60, "remote_fetches": 15}
    # over the whole trial, warm-up included: the warm-up's 100 misses and the window's 45 of 60 hits
    assert over == {"bucket_s": 10, "t_s": [0], "hit_rate": [round(45 / 160, 4)], "reads": [160]}
    ivs = [iv for ps in paced_logs.values() for p in ps for iv in S.iter_log(p)]
    fine = S.cache_hit_rate_over_time(ivs, BASE_MS, bucket_s=1)
    assert fine == {"bucket_s": 1, "t_s": [0, 2, 4], "hit_rate": [0.0, 0.75, 0.75], "reads": [100, 40, 20]}
    everything = S.summarize(paced_logs, system="k2", experiment="t", window_ms=(BASE_MS, BASE_MS + 10_000))
    assert everything["cache"]["remote_fetches"] == 115, "the warm-up's misses are outside the window"


def test_no_cache_reads_means_no_cache_hit_rate(tmp_path):
    rad = write_hlog(tmp_path / "client-VA.hlog", [("rot", 2, [90_000] * 10)])
    assert S.summarize({"VA": [rad]}, system="rad", experiment="t", window_ms=WIN)["cache"] is None


def _stats(path, servers):
    path.write_text(json.dumps(servers))


def test_replication_pending_at_the_end_sums_the_gauges_per_surviving_datacenter(tmp_path):
    gauges = {"pending_replicated_txns": 2, "incoming_writes": 3, "replicating": 1, "waiting_remote_reads": 4,
              "pending_client_txns": 7, "retransmit_pending": 6,
              "remote_fetches": 1000, "retransmit_parked": 50}  # not pending gauges
    _stats(tmp_path / "stats-server-VA.json", {"VA:0": gauges, "VA:1": {"incoming_writes": 5}})
    _stats(tmp_path / "stats-server-CA.json", {"CA:0": {"pending_replicated_txns": 0, "incoming_writes": 0}})
    _stats(tmp_path / "stats-server-TYO-0.json", {"TYO:0": {"replicating": 9}})  # TYO:1 was killed: no file
    p = S.replication_pending_at_end(tmp_path, [{"kind": "kill", "server": "TYO:1", "at_s": 3},
                                                {"kind": "pause", "dc": "CA", "at_s": 1, "for_s": 1}])
    assert p == {"total": 28, "by_dc": {"CA": 0, "VA": 28},
                 "by_gauge": {"pending_replicated_txns": 2, "incoming_writes": 8, "replicating": 1,
                              "waiting_remote_reads": 4, "pending_client_txns": 7, "retransmit_pending": 6},
                 "skipped_dcs": ["TYO"]}
    assert S.replication_pending_at_end(tmp_path)["by_dc"]["TYO"] == 9, "counted when no fault killed it"
    assert S.replication_pending_at_end(tmp_path / "none") is None


def test_the_end_table_shows_schedule_lag_and_pending_and_prints_warnings_under_it():
    import io

    from rich.console import Console

    from k2bench.progress import print_summary
    run = pathlib.Path(__file__).parent / "fixtures" / "run-analysis"
    k2, rad = (json.loads((run / s / "summary.json").read_text()) for s in ("k2", "rad"))
    k2["schedule_lag_ms"] = {"p50": 12.5, "p99": 4310.2, "max": 5000.0, "count": 90, "interval_ms": 200.0}
    k2["replication_pending_at_end"] = {"total": 7, "by_dc": {}, "by_gauge": {}, "skipped_dcs": ["TYO"]}
    k2["warnings"] = [S.schedule_warning(k2["schedule_lag_ms"], 200.0)]
    rad["schedule_lag_ms"] = None  # closed loop
    out = io.StringIO()
    print_summary(Console(file=out, width=80), [k2, rad])
    text = out.getvalue()
    row = next(ln for ln in text.splitlines() if "schedule lag p50/p99" in ln)
    assert "12.5/4310" in row and row.rstrip(" │").endswith("-")
    assert "7 (without killed TYO)" in next(ln for ln in text.splitlines() if "pending at the end" in ln)
    assert ("\nwarning: k2: clients ran behind their schedule: schedule lag p99 4310 ms > the 200 ms between a "
            "thread's operations; latencies include queueing") in text, "one unbroken line under the table"
    assert text.index("summary (latencies in ms)") < text.index("warning: k2")


def test_summarize_rederives_the_new_fields_of_an_old_run(tmp_path):
    """`k2bench summarize` on a run made before clients logged schedule lag and cache reads:
    the pacing interval follows from the manifest, the pending gauges from the stats files,
    and the cache hit rate the run had is kept."""
    import shutil

    from k2bench import cli
    run = tmp_path / "run"
    shutil.copytree(pathlib.Path(__file__).parent / "fixtures" / "run-analysis", run)
    old = json.loads((run / "k2" / "summary.json").read_text())
    assert cli.main(["summarize", str(run)]) == 0
    new = json.loads((run / "k2" / "summary.json").read_text())
    assert new["schedule_lag_ms"]["interval_ms"] == pytest.approx(1000 * 4 / 12, abs=1e-3)  # 4 threads, 12 ops/s
    assert new["replication_pending_at_end"]["total"] == 0 and len(new["replication_pending_at_end"]["by_dc"]) == 6
    assert {k: v for k, v in new["cache"].items() if k != "over_time"} == old["cache"] and new["ops"] == old["ops"]
    assert sum(new["cache"]["over_time"]["reads"]) >= old["cache"]["nonreplica_key_reads"], "warm-up included"
    # a system's own client settings (per_system) pace its clients, and so its schedule lag
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["per_system"] = {"k2": {"clients": {"threads_per_dc": 8}}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert cli.main(["summarize", str(run)]) == 0
    new = json.loads((run / "k2" / "summary.json").read_text())
    assert new["schedule_lag_ms"]["interval_ms"] == pytest.approx(1000 * 8 / 12, abs=1e-3)
    assert json.loads((run / "rad" / "summary.json").read_text())["schedule_lag_ms"]["interval_ms"] == \
        pytest.approx(1000 * 4 / 12, abs=1e-3)


def test_with_faults_the_schedule_warning_names_them_first(paced_logs):
    s = S.summarize(paced_logs, system="k2", experiment="t", window_ms=WIN, pacing_interval_ms=200.0,
                    after_ms=WIN[0])
    [w] = s["warnings"]
    assert "(operations blocked by the faults held their threads back; or the machine could not" in w
    plain = S.summarize(paced_logs, system="k2", experiment="t", window_ms=WIN, pacing_interval_ms=200.0)
    assert "faults" not in plain["warnings"][0]


def _lateness_intervals(values_by_tag, start_ms=1000.0):
    out = []
    for tag, values in values_by_tag.items():
        h = S.new_histogram()
        for v in values:
            h.record_value(v)
        out.append(S.Interval(tag, start_ms, start_ms + 1000, h))
    return out


def test_emulation_lateness_is_merged_over_processes_per_link_class():
    # two processes: the p99 of their merged values, not the mean of their p99s
    a = _lateness_intervals({"lateness:wan": [100] * 99 + [9000], "lateness:local": [50] * 100})
    b = _lateness_intervals({"lateness:wan": [200] * 100})
    e = S.emulation(a + b, (0, 10_000))
    assert e["classes"]["wan"]["count"] == 200 and e["classes"]["local"]["count"] == 100
    assert e["classes"]["wan"]["p99"] == pytest.approx(0.2, abs=0.001)
    assert e["classes"]["wan"]["max"] == pytest.approx(9.0, rel=0.01)
    assert e["count"] == 300 and e["worst_p99"] == e["classes"]["wan"]["p99"]
    assert not e["degraded"] and S.emulation_warning(e) is None
    assert S.emulation(a + b, (5000, 10_000))["count"] == 0  # outside the window: not counted


def test_messages_are_counted_per_link_class_and_type_over_processes_in_the_window():
    a = _lateness_intervals({"msg:local:ReadRequest": [40] * 30, "msg:wan:RemoteRead": [100] * 5,
                             "lateness:local": [1] * 30})
    b = _lateness_intervals({"msg:local:ReadRequest": [60] * 10, "msg:local:ReadReply": [500] * 50})
    late = _lateness_intervals({"msg:local:ReadRequest": [40] * 7}, start_ms=20_000.0)
    m = S.messages(a + b + late, (0, 10_000), ops=10)
    assert m == {"local": {"ReadReply": {"count": 50, "per_op": 5.0, "mean_bytes": pytest.approx(500, rel=0.01)},
                           "ReadRequest": {"count": 40, "per_op": 4.0, "mean_bytes": pytest.approx(45, rel=0.01)}},
                 "wan": {"RemoteRead": {"count": 5, "per_op": 0.5, "mean_bytes": pytest.approx(100, rel=0.01)}}}
    assert list(m["local"]) == ["ReadReply", "ReadRequest"]  # most frequent first
    assert S.messages(a, (0, 10_000), ops=0)["wan"]["RemoteRead"]["per_op"] is None
    assert S.messages(_lateness_intervals({"lateness:wan": [1]}), (0, 10_000), ops=5) == {}  # older logs


def _lateness_row(e: dict, unrecorded: bool = False) -> str:
    """The end table's emulation-lateness row for the fixture K2 run with lateness ``e`` (and,
    with ``unrecorded``, a second column for a run from before lateness was recorded)."""
    import io

    from rich.console import Console

    from k2bench.progress import summary_table
    k2 = json.loads((pathlib.Path(__file__).parent / "fixtures" / "run-analysis" / "k2" / "summary.json").read_text())
    columns = [k2 | {"emulation_lateness_ms": e}]
    if unrecorded:
        columns.append({k: v for k, v in k2.items() if k != "emulation_lateness_ms"})
    out = io.StringIO()
    Console(file=out, width=120).print(summary_table(columns))
    return next(ln for ln in out.getvalue().splitlines() if "emulation lateness" in ln)


def test_a_p99_lateness_above_5_ms_in_any_class_marks_the_run_degraded():
    e = S.emulation(_lateness_intervals({"lateness:wan": [100] * 100, "lateness:local": [6000] * 10 + [10] * 90}),
                    (0, 10_000))
    assert e["degraded"] and e["worst_p99"] == pytest.approx(6.0, rel=0.01)
    assert S.emulation_warning(e).startswith(S.EMULATION_DEGRADED) and "local links" in S.emulation_warning(e)
    line = _lateness_row(e, unrecorded=True)
    assert "6.00 (local) DEGRADED" in line and line.rstrip().rstrip("│").rstrip().endswith("-")


def test_each_class_merges_its_delivery_paths_and_names_the_latest():
    # late through the dispatchers (p99 9 ms), on time through the servers' own timers; two processes
    a = _lateness_intervals({"lateness:wan:timer": [100] * 80, "lateness:local:arrival": [10] * 100,
                             "lateness:local:timer": []})
    b = _lateness_intervals({"lateness:wan:dispatcher": [9000] * 20})
    e = S.emulation(a + b, (0, 10_000))
    assert set(e["paths"]) == {"wan:timer", "wan:dispatcher", "local:arrival"}  # empty paths left out
    assert e["paths"]["wan:dispatcher"]["count"] == 20 and e["paths"]["wan:timer"]["p99"] == pytest.approx(0.1, abs=0.001)
    # a class is the merge of its paths: 100 values, p99 among the dispatcher's
    assert e["classes"]["wan"]["count"] == 100 and e["classes"]["wan"]["p99"] == pytest.approx(9.0, rel=0.01)
    assert e["count"] == 200 and e["degraded"]
    assert e["classes"]["wan"]["late_path"] == "dispatcher" and e["classes"]["local"]["late_path"] == "arrival"
    assert "wan links, the latest waiting for a WAN dispatcher;" in S.emulation_warning(e)
    # the other way round: the servers' threads are the late ones
    e = S.emulation(_lateness_intervals({"lateness:wan:timer": [9000] * 80, "lateness:wan:dispatcher": [100] * 20}),
                    (0, 10_000))
    assert e["classes"]["wan"]["late_path"] == "timer" and "waiting for the receiving server's thread" in S.emulation_warning(e)
    # a few very late deliveries on one path do not make it the late one: most of the tail is elsewhere
    e = S.emulation(_lateness_intervals({"lateness:wan:timer": [100] * 968, "lateness:wan:dispatcher": [9000] * 30,
                                         "lateness:wan:arrival": [50_000] * 2}), (0, 10_000))
    assert e["classes"]["wan"]["p99"] == pytest.approx(9.0, rel=0.01) and e["paths"]["wan:arrival"]["p99"] > 49
    assert e["classes"]["wan"]["late_path"] == "dispatcher"
    # a log from before paths were recorded: its class tags, no path named
    e = S.emulation(_lateness_intervals({"lateness:wan": [9000] * 100}), (0, 10_000))
    assert "paths" not in e and e["classes"]["wan"]["late_path"] is None and e["classes"]["wan"]["count"] == 100
    assert "wan links; limit" in S.emulation_warning(e)
    e = S.emulation(a + b, (0, 10_000))
    line = _lateness_row(e)
    assert "(wan, dispatcher) DEGRADED" in line, line


def test_jvm_memory_is_the_largest_gauge_of_each_process_log():
    server = _lateness_intervals({"jvm:heap_live_mb": [300], "jvm:heap_committed_mb": [900],
                                  "jvm:heap_max_mb": [4608]})
    server += _lateness_intervals({"jvm:heap_live_mb": [700], "jvm:heap_committed_mb": [1200],
                                   "jvm:heap_max_mb": [4608]}, start_ms=2000.0)
    in_server_client = _lateness_intervals({"rot": [1000]})
    m = S.jvm_memory({"servers/all": server, "clients/VA-0": in_server_client})
    # exact: above 2,047 values share buckets of 4, and the top of one (4611) would overstate
    assert m == {"servers/all": {"live_mb": 700, "committed_mb": 1200, "max_mb": 4608}}


def test_every_run_is_judged_without_what_its_faults_made_late():
    """Messages a partition or delay held back (lateness:faulted) are reported apart and not
    judged; a paused server's own intervals from its SIGSTOP to 2 s after its SIGCONT are
    left out; everything else is judged as in a run without faults."""
    held = _lateness_intervals({"lateness:wan": [100] * 100, "lateness:faulted": [3_000_000] * 50})
    e = S.emulation(held, (0, 10_000))
    assert not e["degraded"] and e["faulted"]["count"] == 50 and e["faulted"]["p99"] == pytest.approx(3000, rel=0.01)
    busy = _lateness_intervals({"lateness:wan": [100] * 90 + [8000] * 10})  # the machine, not the faults
    assert S.emulation(held + busy, (0, 10_000))["degraded"]
    paused = {"servers/server-SP": [S.Interval("lateness:wan", 4000.0, 5000.0, busy[0].histogram)],
              "servers/server-VA": [S.Interval("lateness:wan", 4000.0, 5000.0, held[0].histogram)]}
    kept = S.without_paused(paused, {"servers/server-SP": [(1000.0, 2500.0)]})  # 4-5 s is within 2 s of 2.5 s
    assert kept == paused["servers/server-VA"]
    assert not S.emulation(kept, (0, 10_000))["degraded"]
    assert len(S.without_paused(paused, {"servers/server-SP": [(1000.0, 1500.0)]})) == 2  # settled by 3.5 s
    assert len(S.without_paused(paused, None)) == 2


def test_a_run_without_lateness_values_is_not_degraded():
    e = S.emulation([], (0, 1))
    assert e["worst_p99"] is None and not e["degraded"]


def test_visibility_and_blocking_are_merged_over_servers_and_clients():
    # two servers (one per datacenter): visibility, BPR's read slices; a client: BPR's read phases
    servers = (_lateness_intervals({"visibility:OR": [1000] * 99 + [300_000], "read_blocked": [0] * 60 + [50_000] * 40})
               + _lateness_intervals({"visibility:SY": [2000] * 100}))
    clients = _lateness_intervals({"read_phase_blocked": [0] * 50 + [50_000] * 40 + [90_000] * 10})
    v = S.visibility(servers, (0, 10_000))
    assert v["count"] == 200 and v["by_dc"]["OR"]["count"] == 100 and v["by_dc"]["SY"]["p50"] == pytest.approx(2.0, rel=0.01)
    assert v["max"] == pytest.approx(300, rel=0.01)
    b = S.read_blocked(servers + clients, (0, 10_000))
    assert b["count"] == 100 and b["blocked_share"] == pytest.approx(0.4)
    t = b["per_transaction"]
    assert t["count"] == 100 and t["mean"] == pytest.approx(29.0, rel=0.01) and t["max"] == pytest.approx(90, rel=0.01)
    assert t["mean_blocked"] == pytest.approx(29.0 * 100 / 50, rel=0.01)  # over the 50 phases that blocked
    assert S.read_blocked(_lateness_intervals({"visibility:OR": [1]}), (0, 10_000)) is None  # PaRiS never blocks
    assert S.visibility(clients, (0, 10_000)) is None  # systems that do not record it
    assert "at_read" not in v and b["cpu_us_per_blocked_read"] is None  # recorded by BPR only


def test_bprs_visibility_at_read_and_cpu_per_blocked_read():
    """BPR's visibility also as its authors' code records it (a read's snapshot first covering
    the update), per datacenter; the CPU each blocked read cost (ns recorded, µs reported)."""
    servers = _lateness_intervals({"visibility:OR": [1000] * 100, "visibility_at_read:OR": [20_000] * 90 + [90_000] * 10,
                                   "read_blocked": [0] * 10 + [50_000] * 90,
                                   "read_blocked_cpu_ns": [600_000] * 80 + [2_000_000] * 10})
    v = S.visibility(servers, (0, 10_000))
    assert v["p50"] == pytest.approx(1.0, rel=0.01) and v["count"] == 100
    r = v["at_read"]
    assert r["count"] == 100 and r["p50"] == pytest.approx(20.0, rel=0.01) and r["p99"] == pytest.approx(90, rel=0.01)
    assert r["by_dc"]["OR"]["count"] == 100
    c = S.read_blocked(servers, (0, 10_000))["cpu_us_per_blocked_read"]
    assert c["count"] == 90 and c["p50"] == pytest.approx(600, rel=0.01)
    assert c["mean"] == pytest.approx((80 * 600 + 10 * 2000) / 90, rel=0.01)


def test_check_judges_each_trial_by_its_systems_claims_and_names_an_unknown_system(tmp_path, jar, capsys):
    """`k2bench check` re-runs the checker with the claims (max_wan_rounds) of the run's own
    systems, and refuses a trial whose system neither the run nor the jar describes."""
    import shutil

    from k2bench import cli
    run = tmp_path / "run"
    shutil.copytree(pathlib.Path(__file__).parent / "fixtures" / "run-analysis", run)
    assert cli.main(["--jar", str(jar), "check", str(run)]) == 0
    out = capsys.readouterr().out
    assert all(f"{s}: 0 violations in" in out for s in ("k2", "rad", "paris-star")), out
    summary = json.loads((run / "rad" / "summary.json").read_text())
    (run / "rad" / "summary.json").write_text(json.dumps(summary | {"system": "nope"}))
    assert cli.main(["--jar", str(jar), "check", str(run)]) == 2
    assert "system 'nope' is neither in the run's manifest nor in this jar" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["summarize", "check", "placement-report"])
def test_a_path_that_is_not_a_run_is_one_line(command, tmp_path, jar, capsys):
    from k2bench import cli
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "manifest.json").write_text("{")
    for path, problem in ((tmp_path / "nosuch", "is not a run directory (no manifest.json); give one of runs/"),
                          (tmp_path, "is not a run directory (no manifest.json); give one of runs/"),
                          (pathlib.Path(__file__), "is not a run directory (no manifest.json); give one of runs/"),
                          (tmp_path / "damaged", "is not JSON (Expecting property name")):
        assert cli.main(["--jar", str(jar), command, str(path)]) == 2, path
        err = capsys.readouterr().err
        assert err.startswith(f"k2bench: RUN: {path}") and problem in err and err.count("\n") == 1, err


def test_check_of_a_run_without_a_finished_trial_fails_saying_nothing_was_checked(tmp_path, jar, capsys):
    import shutil

    from k2bench import cli
    run = tmp_path / "run"
    shutil.copytree(pathlib.Path(__file__).parent / "fixtures" / "run-analysis", run)
    (run / "rad" / "summary.json").unlink()
    assert cli.main(["--jar", str(jar), "check", str(run)]) == 0
    assert capsys.readouterr().out.endswith("1 trial(s) not finished (no summary.json), not checked\n")
    for s in run.rglob("summary.json"):
        s.unlink()
    assert cli.main(["--jar", str(jar), "check", str(run)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == (f"k2bench: RUN: {run} has no finished trial (none has a summary.json): "
                                         f"no trial checked; finish the run with k2bench run analysis --resume {run}\n")


def test_hot_keys_count_the_most_written_keys_in_the_window_only():
    """The ten hottest keys' write rate: written keys of committed operations started in
    the window, averaged over the n most written; failed writes and writes outside the
    window do not count, and reads never do."""
    window = (10_000.0, 20_000.0)  # 10 s
    ops = ([{"t0": 10_000 + i, "w": {"hot": "v", "warm": "v"}} for i in range(30)]
           + [{"t0": 12_000 + i, "w": {"hot": "v"}} for i in range(20)]
           + [{"t0": 5_000, "w": {"hot": "v"}}, {"t0": 20_000, "w": {"hot": "v"}},  # outside
              {"t0": 15_000, "w": {"hot": "v"}, "ok": False},  # failed
              {"t0": 15_000, "r": {"hot": 1, "cold": 1}}])  # a read
    hot = S.hot_keys(ops, window, n=2)
    assert hot == {"keys": 2, "writes_per_s": 4.0, "hottest_writes_per_s": 5.0}  # (50 + 30) / 2 / 10 s
    assert S.hot_keys(ops, window, n=1)["writes_per_s"] == 5.0
    assert S.hot_keys([], window) == {"keys": 10, "writes_per_s": 0.0, "hottest_writes_per_s": 0.0}
    assert S.hot_keys(ops, (1.0, 1.0)) is None


def test_summarize_adds_the_hot_keys_write_rate_from_the_histories(tmp_path):
    """An old run gets the summary's ``hot_keys`` from its clients' histories, the figure
    analysis reads in place of the histories."""
    import shutil

    from analysis import load
    from k2bench import checker, cli
    run = tmp_path / "run"
    shutil.copytree(pathlib.Path(__file__).parent / "fixtures" / "run-analysis", run)
    assert cli.main(["summarize", str(run)]) == 0
    new = json.loads((run / "k2" / "summary.json").read_text())
    ops = checker.load_history(sorted((run / "k2" / "clients").glob("history-client-*.jsonl")))
    assert any(o.get("w") for o in ops), "the fixture has writes"
    assert new["hot_keys"] == S.hot_keys(ops, tuple(new["window_ms"]))
    assert new["hot_keys"]["writes_per_s"] > 0
    trial = next(t for t in load.load_run(run).trials if t.system == "k2")
    assert trial.hot_key_write_rate() == new["hot_keys"]["writes_per_s"]
    assert trial.hot_key_write_rate(1) == new["hot_keys"]["hottest_writes_per_s"]  # from the histories
