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
