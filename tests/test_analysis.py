"""analysis/ against a small real run the harness produced (tests/fixtures/run-analysis,
made by `k2bench run tests/fixtures/analysis.yaml`): loaders, histogram merging, trimming
by the manifest's durations, and every notebook executed end to end."""
import json
import shutil
from pathlib import Path

import pytest

from analysis import figures, load, report
from conftest import ROOT

RUN = ROOT / "tests" / "fixtures" / "run-analysis"


@pytest.fixture(scope="module")
def run():
    return load.load_run(RUN)


def samples(intervals, tag, window):
    """Every recorded value in the window, expanded: the 'concatenated samples'."""
    out = []
    for iv in intervals:
        if iv.tag == tag and window[0] <= iv.midpoint_ms < window[1]:
            for item in iv.histogram.get_recorded_iterator():
                out += [item.value_iterated_to] * item.count_at_value_iterated_to
    return sorted(out)


def percentile(values, p):
    """HdrHistogram's definition: the smallest value with at least round(p% of n) samples at or below it."""
    return values[max(1, int(p / 100 * len(values) + 0.5)) - 1]


def test_the_fixture_is_a_complete_real_run(run):
    assert run.manifest["status"] == "completed"
    assert {t.system for t in run.trials} == {"k2", "rad", "paris-star"}
    for t in run.trials:
        assert set(t.logs) == {"VA", "CA", "SP", "LDN", "TYO", "SG"}
        assert t.summary["ops"]["rot"]["count"] > 0


def test_the_window_follows_the_manifest_durations(run):
    d = run.manifest["config"]["duration"]
    for t in run.trials:
        assert t.window_ms == (t.start_ms + 1000 * d["warmup_s"], t.start_ms + 1000 * (d["warmup_s"] + d["measure_s"]))
        assert list(t.window_ms) == pytest.approx(t.summary["window_ms"]), "the harness used the same window"


def test_frames_agree_with_the_harness_summaries(run):
    s = load.summary_frame(run).set_index("system")
    for t in run.trials:
        h = t.summary
        assert s.loc[t.system, "rot_count"] == h["ops"]["rot"]["count"]
        assert s.loc[t.system, "rot_p99_ms"] == h["ops"]["rot"]["latency_ms"]["p99"]
        assert s.loc[t.system, "throughput_ops_per_s"] == pytest.approx(h["throughput_ops_per_s"])
        assert s.loc[t.system, "all_local_fraction"] == pytest.approx(h["ops"]["rot"]["all_local_fraction"], abs=1e-6)
    lat = load.latency_frame(run)
    assert set(lat["dc"]) == {"all", "VA", "CA", "SP", "LDN", "TYO", "SG"}
    assert set(lat["op"]) == {"rot", "wot", "write"}
    per_dc = lat[(lat["op"] == "rot") & (lat["dc"] != "all")].groupby("system")["count"].sum()
    everything = lat[(lat["op"] == "rot") & (lat["dc"] == "all")].set_index("system")["count"]
    assert per_dc.to_dict() == everything.to_dict(), "the datacenters add up to the whole"
    r = load.rounds_frame(run)
    assert (r[r["dc"] == "all"].groupby("system")["fraction"].sum().round(9) == 1).all()


@pytest.mark.parametrize("p", [1, 50, 90, 99, 99.9])
def test_merged_percentiles_equal_those_of_the_concatenated_samples(run, p):
    # Across clients within a trial ...
    t = run.trials[0]
    everything = [iv for ivs in t.intervals().values() for iv in ivs]
    values = samples(everything, "rot", t.window_ms)
    assert t.merged("rot").get_value_at_percentile(p) == percentile(values, p)
    # ... and across trials and systems, through merge_rows.
    lat = load.latency_frame(run, ops=("rot",), per_dc=False)
    merged = load.merge_rows(lat, ["run"]).iloc[0]
    all_values = sorted(v for tr in run.trials
                        for v in samples([iv for ivs in tr.intervals().values() for iv in ivs], "rot", tr.window_ms))
    assert merged["count"] == len(all_values)
    assert merged["histogram"].get_value_at_percentile(p) == percentile(all_values, p)


def test_trimming_changes_with_the_manifest(tmp_path, run):
    """Shift the window in a copy of the run's manifest: the counts follow the new window."""
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    m = json.loads((copy / "manifest.json").read_text())
    m["config"]["duration"]["warmup_s"] += 2
    m["config"]["duration"]["measure_s"] -= 2
    (copy / "manifest.json").write_text(json.dumps(m))
    shifted = load.load_run(copy)
    for a, b in zip(run.trials, shifted.trials):
        assert b.window_ms == (a.window_ms[0] + 2000, a.window_ms[1])
        inside = sum(iv.histogram.get_total_count() for ivs in b.intervals().values() for iv in ivs
                     if iv.tag == "rot" and b.window_ms[0] <= iv.midpoint_ms < b.window_ms[1])
        assert b.merged("rot").get_total_count() == inside < a.merged("rot").get_total_count()
    tp = load.throughput_frame(shifted)
    assert set(tp["phase"]) == {"warmup", "measure", "cooldown"}
    assert tp[tp["phase"] == "measure"]["t_s"].min() == m["config"]["duration"]["warmup_s"]


def test_cdf_is_monotone_and_ends_at_one(run):
    c = load.cdf_frame(run, "rot")
    for _, part in c.groupby("system"):
        assert part["latency_ms"].is_monotonic_increasing and part["fraction"].is_monotonic_increasing
        assert part["fraction"].iloc[-1] == pytest.approx(1.0)


def test_fig9_settings_are_recognised(run):
    cfg = json.loads(json.dumps(run.trials[0].config))
    assert figures.fig9_setting(cfg) == "write 5%", "the fixture runs 5% writes"
    cfg["workload"]["write_fraction"] = 0.01
    assert figures.fig9_setting(cfg) == "default"
    cfg["workload"]["zipf"] = 1.4
    assert figures.fig9_setting(cfg) == "zipf 1.4"
    cfg["server"]["cache_fraction"] = 0.15
    assert figures.fig9_setting(cfg) is None, "two changes are no Fig. 9 column"


def test_a_directory_that_is_not_a_run_is_named(tmp_path):
    with pytest.raises(load.RunError, match="no manifest.json"):
        load.load_run(tmp_path)
    assert report.main([str(tmp_path)]) == 2


def test_every_notebook_runs_end_to_end_and_the_report_has_every_figure(tmp_path):
    out = tmp_path / "report"
    assert report.main([str(RUN), str(RUN), "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    records = [json.loads(p.read_text()) for p in (out / "figures").glob("*.json")]
    names = {r["name"] for r in records}
    assert {"fig8-rot-latency-cdf", "fig9-throughput", "staleness-cdf", "write-latency", "rounds",
            "overview", "throughput-timeseries"} <= names
    for r in records:
        assert "png" in r, f"{r['name']}: {r.get('note')}"
        assert (out / r["png"]).stat().st_size > 10_000
        assert r["png"] in index
    for nb in report.notebooks():
        assert (out / f"{nb.stem}.html").exists()



def test_the_cdf_figure_shows_the_three_systems(run):
    fig = figures.rot_latency_cdf(load.load_runs([RUN, RUN]))
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 1, "one panel per workload: the same run twice is one workload"
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["K2", "PaRiS*", "RAD"]
    assert len(axes[0].get_lines()) >= 3
    assert "latency (ms" in axes[0].get_xlabel() and "fraction" in axes[0].get_ylabel()


def test_missing_data_gives_a_note_not_a_crash(tmp_path):
    """A run whose clients logged no writes and no read-only transactions still gets a report."""
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    for log in copy.glob("**/clients/client-*.hlog"):
        header = [ln for ln in log.read_text().splitlines(keepends=True) if ln.startswith(("#", '"'))]
        log.write_text("".join(header))
    out = tmp_path / "report"
    assert report.main([str(copy), "--out", str(out)]) == 0
    records = {r["name"]: r for r in (json.loads(p.read_text()) for p in (out / "figures").glob("*.json"))}
    assert "no read-only transactions" in records["fig8-rot-latency-cdf"]["note"]
    assert "no write" in records["write-latency"]["note"]
    assert "Not drawn" in (out / "index.html").read_text()



def test_the_fidelity_table_shows_schedule_lag_pending_replication_and_warnings(tmp_path):
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    path = copy / "k2" / "summary.json"
    s = json.loads(path.read_text())
    s["schedule_lag_ms"] = {"p50": 12.4, "p99": 4310.0, "max": 5000.0, "count": 90, "interval_ms": 333.333}
    s["replication_pending_at_end"] = {"total": 7, "by_dc": {"VA": 7}, "by_gauge": {}, "skipped_dcs": ["TYO"]}
    s["replication_lag_ms"]["after"] = {"p50": 100.0, "p99": 900.0, "max": 1200.0, "count": 780, "from_ms": 0}
    s["warnings"] = ["clients ran behind their schedule: schedule lag p99 4310 ms > the 333 ms between ..."]
    path.write_text(json.dumps(s))
    table = figures.fidelity_table(load.load_run(copy)).set_index("system")
    assert table.loc["K2", "schedule lag p50/p99 ms"] == "12/4310"
    assert table.loc["K2", "replication pending at end"] == "7 (without killed TYO)"
    assert table.loc["K2", "after the faults p99/max ms (n)"] == "900/1200 (n 780)"
    assert table.loc["K2", "warnings"].startswith("clients ran behind their schedule")
    assert table.loc["RAD", "schedule lag p50/p99 ms"] == "-" and table.loc["RAD", "warnings"] == ""
