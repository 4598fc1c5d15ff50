"""analysis/ against a small real run the harness produced (tests/fixtures/run-analysis,
made by `k2bench run tests/fixtures/analysis.yaml`): loaders, histogram merging, trimming
by the manifest's durations, and every notebook executed end to end."""
import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hdrh.histogram import HdrHistogram

from analysis import claims, figures, frames, load, paper, paris, peaks, report
from k2bench.verdicts import versus
from k2bench import histograms, summary
from conftest import ROOT

RUN = ROOT / "tests" / "fixtures" / "run-analysis"
SWEEP = ROOT / "tests" / "fixtures" / "run-sweep"
PARIS = ROOT / "tests" / "fixtures" / "run-paris"
KARMA = ROOT / "tests" / "fixtures" / "run-karma"  # k2bench run tests/fixtures/karma-analysis.yaml


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
    s = frames.summary_frame(run).set_index("system")
    for t in run.trials:
        h = t.summary
        assert s.loc[t.system, "rot_count"] == h["ops"]["rot"]["count"]
        assert s.loc[t.system, "rot_p99_ms"] == h["ops"]["rot"]["latency_ms"]["p99"]
        assert s.loc[t.system, "throughput_ops_per_s"] == pytest.approx(h["throughput_ops_per_s"])
        assert s.loc[t.system, "all_local_fraction"] == pytest.approx(h["ops"]["rot"]["all_local_fraction"], abs=1e-6)
    lat = frames.latency_frame(run)
    assert set(lat["dc"]) == {"all", "VA", "CA", "SP", "LDN", "TYO", "SG"}
    assert set(lat["op"]) == {"rot", "wot", "write"}
    per_dc = lat[(lat["op"] == "rot") & (lat["dc"] != "all")].groupby("system")["count"].sum()
    everything = lat[(lat["op"] == "rot") & (lat["dc"] == "all")].set_index("system")["count"]
    assert per_dc.to_dict() == everything.to_dict(), "the datacenters add up to the whole"
    r = frames.rounds_frame(run)
    assert (r[r["dc"] == "all"].groupby("system")["fraction"].sum().round(9) == 1).all()


@pytest.fixture(scope="module")
def concatenated(run):
    """The first trial's ROT latencies and every trial's, as samples (expanding them takes
    seconds: once for all percentiles), and the merged histograms to compare them with."""
    per_trial = [samples(_raw(tr), "rot", tr.window_ms) for tr in run.trials]
    lat = frames.latency_frame(run, ops=("rot",), per_dc=False)
    return per_trial[0], sorted(v for values in per_trial for v in values), frames.merge_rows(lat, ["run"]).iloc[0]


@pytest.mark.parametrize("p", [1, 50, 90, 99, 99.9])
def test_merged_percentiles_equal_those_of_the_concatenated_samples(run, concatenated, p):
    first, all_values, merged = concatenated
    # Across clients within a trial ...
    assert run.trials[0].merged("rot").get_value_at_percentile(p) == percentile(first, p)
    # ... and across trials and systems, through merge_rows.
    assert merged["count"] == len(all_values)
    assert merged["histogram"].get_value_at_percentile(p) == percentile(all_values, p)


def _raw(trial):
    """The trial's client intervals as the logs decode them (what Trial keeps is compacted)."""
    return [iv for paths in trial.logs.values() for p in paths for iv in summary.read_log(p)]


def test_compacted_intervals_merge_to_the_decoded_histograms(run):
    """Trial keeps each interval's non-zero buckets only (a decoded one is ~180 KB; six runs
    of them outgrew 24 GiB): merged, they give what merging the decoded histograms gives."""
    t = run.trials[0]
    raw = _raw(t)
    compact = [iv for ivs in t.intervals().values() for iv in ivs]
    assert len(compact) == len(raw) and all(isinstance(iv.histogram, load.Buckets) for iv in compact)
    tags = sorted({iv.tag for iv in raw})
    assert {"rot", "staleness"} <= set(tags)
    for tag in tags:
        for window in (t.window_ms, None):
            a, b = summary.merge(raw, tag, window), load.merge(compact, tag, window)
            assert b.get_total_count() == a.get_total_count(), tag
            assert (b.get_min_value(), b.get_max_value(), b.get_mean_value()) == \
                (a.get_min_value(), a.get_max_value(), a.get_mean_value()), tag
            for p in (1, 50, 90, 99, 99.9, 100):
                assert b.get_value_at_percentile(p) == a.get_value_at_percentile(p), (tag, p)


def test_an_interval_of_another_precision_is_kept_in_the_common_layout():
    """Two significant digits instead of three: its bucket indices mean other values, so it
    is re-recorded in new_histogram's layout before it is compacted."""
    h = HdrHistogram(1, histograms.HIGHEST_US, 2)
    for v in (5, 1234, 98_765, 1_234_567):
        h.record_value(v, 3)
    iv = summary.Interval("rot", 0.0, 1000.0, h)
    a = summary.merge([iv], "rot", None)
    b = load.merge([dataclasses.replace(iv, histogram=load.Buckets.of(h))], "rot", None)
    assert b.get_total_count() == a.get_total_count() == 12
    assert [b.get_value_at_percentile(p) for p in (10, 30, 60, 90, 100)] == \
        [a.get_value_at_percentile(p) for p in (10, 30, 60, 90, 100)]
    assert (b.get_min_value(), b.get_max_value()) == (a.get_min_value(), a.get_max_value())


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
    tp = frames.throughput_frame(shifted)
    assert set(tp["phase"]) == {"warmup", "measure", "cooldown"}
    assert tp[tp["phase"] == "measure"]["t_s"].min() == m["config"]["duration"]["warmup_s"]


def test_each_trial_reads_its_configuration_as_its_system_ran_it(tmp_path, run):
    """per_system overrides (partial-replication: Karma on rings with single puts) reach the
    trials of that system only; the workload's paper setting is the experiment's own."""
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    m = json.loads((copy / "manifest.json").read_text())
    system = run.trials[0].system
    m["config"]["per_system"] = {system: {"workload": {"write_fraction": 0.03, "wot_fraction": 0.0}}}
    (copy / "manifest.json").write_text(json.dumps(m))
    again = load.load_run(copy)
    for t in again.trials:
        mine = t.system == system
        assert t.config["workload"]["write_fraction"] == (0.03 if mine else run.trials[0].config["workload"]["write_fraction"])
        assert (t.config["workload"]["wot_fraction"] == 0.0) == mine
    assert {w.setting for w in claims.workloads(again)} == {"write 5%"}, "the experiment's setting, not the override's"


def test_congestion_events_are_measured_against_the_seconds_before_the_first(tmp_path, run):
    """Two delay events (one of two datacenter pairs, as karma-congestion's every link of LDN)
    in a copy of the fixture: each event's and the uncongested seconds' (before the first
    event) operations and latencies are those of their windows' intervals merged, and the
    degradation is against the uncongested seconds."""
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    m = json.loads((copy / "manifest.json").read_text())
    d = m["config"]["duration"]
    at1, at2 = int(d["warmup_s"]) + 2, int(d["warmup_s"]) + 6
    m["config"]["faults"] = [{"kind": "delay", "dcs": ["VA", "CA"], "extra_ms": 300, "at_s": at1, "for_s": 3},
                             {"kind": "delay", "dcs": ["VA", "SP"], "extra_ms": 300, "at_s": at1, "for_s": 3},
                             {"kind": "delay", "dcs": ["VA", "CA"], "extra_ms": 600, "at_s": at2, "for_s": 2}]
    (copy / "manifest.json").write_text(json.dumps(m))
    shifted = load.load_run(copy)
    frame = frames.congestion_frame(shifted)
    for t in shifted.trials:
        rows = frame[frame["system"] == t.system].set_index("event")
        assert list(rows.index) == ["uncongested", "+300 ms", "+600 ms"]
        assert list(rows["seconds"]) == [2, 3, 2], "uncongested: the measured seconds before the first event"
        everything = [iv for ivs in t.intervals().values() for iv in ivs]
        for event, (a, b) in {"uncongested": (d["warmup_s"], at1), "+300 ms": (at1, at1 + 3),
                              "+600 ms": (at2, at2 + 2)}.items():
            h = load.merge(everything, "rot", (t.start_ms + 1000 * a, t.start_ms + 1000 * b))
            assert rows.loc[event, "reads"] == h.get_total_count()
            assert rows.loc[event, "mean_ms"] == pytest.approx(load.latency(h, ())["mean"], abs=1e-3)
            ops = sum(iv.histogram.get_total_count() for iv in everything if iv.tag in load.OPS
                      and t.start_ms + 1000 * a <= iv.midpoint_ms < t.start_ms + 1000 * b)
            assert rows.loc[event, "ops_per_s"] * rows.loc[event, "seconds"] == pytest.approx(ops)
        base, e = rows.loc["uncongested"], rows.loc["+300 ms"]
        assert e["latency_increase_pct"] == pytest.approx(100 * (e["mean_ms"] / base["mean_ms"] - 1), abs=0.06)
    assert frames.congestion_frame(run).empty, "no delay faults, no rows"
    fig = figures.congestion(shifted)
    assert len(fig.axes) == 3 and fig.axes[1].patches, "latency over time and one bar per event and system"
    with pytest.raises(figures.MissingData, match="delay faults"):
        figures.congestion(run)


def test_cdf_is_monotone_and_ends_at_one(run):
    c = frames.cdf_frame(run, "rot")
    for _, part in c.groupby("system"):
        assert part["latency_ms"].is_monotonic_increasing and part["fraction"].is_monotonic_increasing
        assert part["fraction"].iloc[-1] == pytest.approx(1.0)


def test_paper_settings_are_recognised(run):
    cfg = json.loads(json.dumps(run.trials[0].config))
    assert paper.setting_of(cfg) == "write 5%", "the fixture runs 5% writes"
    cfg["workload"]["write_fraction"] = 0.01
    assert paper.setting_of(cfg) == "default"
    cfg["workload"]["zipf"] = 1.4
    assert paper.setting_of(cfg) == "zipf 1.4"
    cfg["server"]["cache_fraction"] = 0.15
    assert paper.setting_of(cfg) is None, "two changes are no Fig. 9 column"
    cfg["server"]["cache_fraction"], cfg["workload"]["zipf"], cfg["workload"]["write_fraction"] = 0.05, 1.2, 0.0
    assert paper.setting_of(cfg) == "read-only"
    cfg["workload"]["keys_per_op"] = {1: 0.5, 2: 0.5}
    assert paper.setting_of(cfg) == "tao"


def test_a_directory_that_is_not_a_run_is_named(tmp_path):
    with pytest.raises(load.RunError, match="no manifest.json"):
        load.load_run(tmp_path)
    assert report.main([str(tmp_path)]) == 2


def test_notebooks_chooses_by_name_and_refuses_an_unknown_one_in_one_line(tmp_path, capsys):
    every = report.notebooks()
    assert report.notebooks("rot-latency,01-overview") == [every[0], every[1]] and len(every) > 2
    assert report.notebooks(None) == every == report.notebooks("")
    assert report.main([str(RUN), "--notebooks", "overview,nope", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("analyze: --notebooks: no notebook 'nope'; there are overview, rot-latency, ") and \
        err.count("\n") == 1, err
    assert not (tmp_path / "r").exists(), "nothing written"


def test_every_notebook_runs_end_to_end_and_the_report_has_every_figure(tmp_path):
    import nbformat

    out = tmp_path / "report"
    assert report.main([str(RUN), str(SWEEP), str(PARIS), str(KARMA), "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    records = [json.loads(p.read_text()) for p in (out / "figures").glob("*.json")]
    names = {r["name"] for r in records}
    assert set(figures.DATA) <= names
    for r in records:
        # need the freshness experiments' histories, delay faults (test_congestion_events_...: drawn
        # there), a placement run's report (tests/test_placement_report.py draws them)
        if r["name"] in ("freshness", "congestion", "placement-latency", "placement-buckets"):
            assert "note" in r or not r["name"].startswith("placement"), r  # these runs have no placement report
            continue
        assert "png" in r, f"{r['name']}: {r.get('note')}"
        assert (out / r["png"]).stat().st_size > 10_000
        assert r["png"] in index
        csv = (out / r["csv"]).read_text()  # the data behind it, plain values
        assert len(csv.splitlines()) > 1 and "HdrHistogram" not in csv
    for nb in report.notebooks():
        assert (out / f"{nb.stem}.html").exists()
        executed = nbformat.read(str(out / "notebooks" / nb.name), as_version=4)
        images = [o for c in executed.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
        drawn = [r for r in records if r["notebook"] == nb.stem and "png" in r]
        assert len(images) >= len(drawn), f"{nb.stem}: figures shown inline, not only saved"
    # The page opens with the paper table, then what was run, the verdict, the configuration.
    order = [index.index(h) for h in ("The paper and these runs", "<h2>Runs", "<h2>Consistency",
                                      "<h2>Configuration", "<h2>Figures")]
    assert order == sorted(order)
    assert "0 violations of" in index and "zipf: 1.2" in index


def test_a_failing_notebook_leaves_a_note_and_the_rest_of_the_report(tmp_path, monkeypatch):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    broken = new_notebook(cells=[new_code_cell("runs = []\nout_dir = ''", metadata={"tags": ["parameters"]}),
                                 new_code_cell("raise RuntimeError('the figure data is not there')")],
                          metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(broken, str(nbs / "00-broken.ipynb"))
    keep = next(nb for nb in report.notebooks() if nb.stem == "02-rot-latency")
    (nbs / keep.name).write_text(keep.read_text())
    monkeypatch.setattr(report, "NOTEBOOKS", nbs)
    out = tmp_path / "report"
    assert report.main([str(RUN), "--out", str(out)]) == 1
    index = (out / "index.html").read_text()
    assert "Notebook 00-broken failed (RuntimeError: the figure data is not there)" in index
    assert (out / "00-broken.html").exists() and "fig8-rot-latency-cdf.png" in index


def test_committed_notebooks_carry_no_outputs():
    import nbformat

    for nb in report.notebooks():
        doc = nbformat.read(str(nb), as_version=4)
        for cell in doc.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{nb.name}: strip its outputs"
        assert "papermill" not in doc.metadata, f"{nb.name}: an executed copy, not the source"


def test_runs_resolve_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load.load_run("tests/fixtures/run-analysis").dir == RUN.resolve()


def test_percentiles_come_in_long_form(run):
    long = frames.percentiles_long(frames.latency_frame(run, ops=("rot",), per_dc=False))
    assert set(long["statistic"]) == {"mean", "p1", "p50", "p75", "p90", "p99", "p99.9"}
    k2 = long[(long["system"] == "k2") & (long["statistic"] == "p99")]["ms"].iloc[0]
    assert k2 == next(t for t in run.trials if t.system == "k2").summary["ops"]["rot"]["latency_ms"]["p99"]
    assert "histogram" not in long.columns


def test_the_cdf_figure_shows_the_three_systems(run):
    fig = figures.rot_latency_cdf(load.load_runs([RUN, RUN]))
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 1, "one panel per workload: the same run twice is one workload"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["K2", "PaRiS*", "RAD"]
    curves = [ln for ln in axes[0].get_lines() if len(ln.get_xdata()) > 2]  # not legend proxies, not the RTT mark
    assert len(curves) == 3
    assert "latency (ms" in axes[0].get_xlabel() and "fraction" in axes[0].get_ylabel()
    # The dotted line is the smallest RTT of this run: 60 ms x its rtt_scale of 0.25.
    assert [ln.get_xdata()[0] for ln in axes[0].get_lines() if ln.get_linestyle() == ":"] == [15.0]


def test_two_runs_of_one_experiment_are_two_lines_per_system_not_an_average(tmp_path):
    copy = tmp_path / "again"
    shutil.copytree(RUN, copy)
    fig = figures.rot_latency_cdf(load.load_runs([RUN, copy]))
    ax = next(ax for ax in fig.axes if ax.get_visible())
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]  # not legend proxies, not the RTT mark
    assert len(lines) == 6 and len({ln.get_linestyle() for ln in lines}) == 2


def test_claims_are_checked_only_on_the_workloads_they_cover(run):
    t = claims.table(run).set_index("claim")
    # The fixture is the 5% writes setting: the Fig. 8 claims and RAD's two rounds apply ...
    for c in ("K2 all-local read-only transactions", "RAD read-only p1 is a wide-area round",
              "RAD ROTs taking two wide-area rounds", "K2 staleness"):
        assert t.loc[c, "agrees"] is not None and t.loc[c, "this run"].startswith("analysis: "), c
    # ... the default-setting write claims and the peak do not.
    for c in ("K2 write-only transaction p99", "RAD single-write p50", "Peak throughput K2/RAD (Fig. 9)"):
        assert t.loc[c, "agrees"] is None and t.loc[c, "this run"] == "not covered", c
        assert t.loc[c, "checked on"].startswith("needs")
    assert t.loc["RAD single-write p50", "checked on"] == \
        "needs default with clients paced, no faults, no mutant and the emulation on time"


def test_the_paper_table_scales_with_rtt_scale(run, tmp_path):
    claim = "RAD read-only p1 is a wide-area round"
    a = claims.table(run).set_index("claim")
    assert "(smallest RTT 15 ms)" in a.loc[claim, "this run"]
    assert a.loc[claim, "agrees"] is True and a.loc[claim, "scaled by"] == "x0.25"
    # The same run said to have run at the paper's RTTs: RAD's first percentile is now far
    # below one wide-area round trip, and the claim fails.
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    for topo in copy.glob("*/topology.yaml"):
        topo.write_text(topo.read_text().replace("rtt_scale: 0.25", "rtt_scale: 1.0"))
    b = claims.table(load.load_run(copy)).set_index("claim")
    assert "(smallest RTT 60 ms)" in b.loc[claim, "this run"] and b.loc[claim, "agrees"] is False
    wan = claims.table(load.load_run(ROOT / "tests" / "fixtures" / "run-analysis-wan")).set_index("claim")
    assert "(smallest RTT 30 ms)" in wan.loc[claim, "this run"] and wan.loc[claim, "scaled by"] == "x0.5"


def test_the_fig9_peak_is_the_best_point_of_each_sweep():
    sweep = load.load_run(SWEEP)
    pooled = frames.pooled_frame(sweep)
    peaks = claims.peaks(sweep).set_index("system")
    for system, g in pooled.groupby("system"):
        best = g.loc[g["throughput_ops_per_s"].idxmax()]
        assert peaks.loc[system, "point"] == best["point"] and peaks.loc[system, "points"] == 3
        assert peaks.loc[system, "ops_per_s"] == pytest.approx(best["throughput_ops_per_s"])
    assert peaks.loc["k2", "setting"] == "default"
    table = figures.fig9_table(sweep).iloc[0]
    assert table["K2/RAD"] == round(peaks.loc["k2", "ops_per_s"] / peaks.loc["rad", "ops_per_s"], 2)
    assert table["paper K2/RAD"] == 1.68
    t = claims.table(sweep).set_index("claim")
    assert t.loc["Peak throughput K2/RAD (Fig. 9)", "this run"].startswith(f"default: {table['K2/RAD']:.2f} (paper 1.68")
    # The sweep's points are the default setting, but closed loop: the paced claims skip them.
    assert t.loc["K2 write-only transaction p99", "this run"] == "not covered"
    assert "3 workload(s) of the setting left out" in t.loc["K2 write-only transaction p99", "note"]
    with pytest.raises(figures.MissingData, match="no load sweep"):
        figures.fig9_table(load.load_run(RUN))


def test_a_sweep_that_ran_out_has_no_peak_and_the_order_is_not_checked():
    """The fixture's sweep (1, 2, 4 threads/DC) rises to its top: no rule stopped it, so its
    best point is shown as not a peak and K2/RAD there is not judged."""
    sweep = load.load_run(SWEEP)
    peaks = claims.peaks(sweep).set_index("system")
    assert not peaks["is_peak"].any() and peaks["stop"].str.contains("not a peak").all()
    assert figures.fig9_table(sweep).iloc[0]["not a peak"] == "K2, RAD"
    row = claims.table(sweep).set_index("claim").loc["Peak throughput K2/RAD (Fig. 9)"]
    assert row["agrees"] is None and "not checked: no peak for K2 and RAD" in row["this run"]
    assert row["checked on"].startswith("needs sweeps of K2 and RAD that reach a peak")


def test_the_replay_stops_where_the_bench_would():
    pts = [{"threads": t, "ops_per_s": ops, "rot_p99_ms": p99, "degraded": deg, "lateness_p99_ms": None}
           for t, ops, p99, deg in ((4, 100, 100, False), (8, 200, 110, False), (16, 390, 120, False),
                                    (24, 380, 130, False), (32, 300, 140, False), (48, 500, 150, True))]
    passed, why, shaken = peaks._replay(pts)
    # 24 is within 95% of 16's rate and goes on; 32 falls below it and stops the climb
    assert [q["threads"] for q in passed] == [4, 8, 16, 24] and "fell" in why and not shaken
    passed, why, _ = peaks._replay(pts[:3] + [dict(pts[3], rot_p99_ms=501)])
    assert [q["threads"] for q in passed] == [4, 8, 16] and "ROT p99" in why
    passed, why, _ = peaks._replay(pts[:3] + [pts[5]])  # a degraded point stops it too
    assert [q["threads"] for q in passed] == [4, 8, 16] and why.startswith("emulation degraded at 48")
    passed, why, shaken = peaks._replay(pts[:3] + [dict(pts[5], disturbed=True)])
    assert why and shaken, "stopped by a point the hypervisor took CPU from: the bench measures it again"
    passed, why, _ = peaks._replay(pts[:3])
    assert len(passed) == 3 and why is None


@pytest.mark.parametrize("setting, k2, rad, order, agrees", [
    ("default", 4_862, 4_895, "tie", False),  # the paper has K2 ahead (1.68)
    ("default", 6_000, 4_000, "K2 ahead", True),
    ("f=3", 3_700, 3_500, "tie", True),  # the paper's 53.7 against 51.9: a tie
    ("zipf 0.9", 5_000, 4_000, "K2 ahead", False),  # the paper has RAD ahead (0.25)
    ("zipf 0.9", 3_000, 4_000, "RAD ahead", True),
])
def test_the_peak_order_counts_a_ratio_within_ten_percent_as_a_tie(setting, k2, rad, order, agrees):
    p = pd.DataFrame([{"run": "r", "setting": setting, "system": s, "ops_per_s": v, "is_peak": True}
                      for s, v in (("k2", k2), ("rad", rad))])
    text, ok = claims._throughput_claim(p)
    assert f", {order} (paper" in text and ok is agrees


def test_a_bench_setting_takes_the_benchs_own_climb_and_its_retries_add_no_peak(tmp_path):
    """A setting directory beside a bench's throughput.json is analysed with the bench's
    climb (its retried points live in <setting>.retry<k>/, which adds no peak of its own), so
    the report shows the peaks make bench-throughput printed."""
    bench = tmp_path / "20260101T000000Z_bench-throughput"
    shutil.copytree(SWEEP, bench / "default")
    shutil.copytree(SWEEP, bench / "default.retry1")
    climbs = [{"setting": "default", "system": s, "is_peak": True, "stop": "emulation degraded at 4 threads/DC",
               "peak": {"threads": 2, "ops_per_s": ops, "rot_p99_ms": 300.0, "dir": f"default.retry1/{s}/x"}}
              for s, ops in (("k2", 1500.0), ("rad", 1000.0))]
    (bench / "throughput.json").write_text(json.dumps({"settings": ["default"], "climbs": climbs}))
    runs = load.load_runs([bench / "default", bench / "default.retry1"])
    peaks = claims.peaks(runs)
    assert list(peaks["run"].unique()) == ["default"], "the retry directory adds no peak"
    by = peaks.set_index("system")
    assert by.loc["k2", "ops_per_s"] == 1500.0 and by.loc["k2", "point"] == "threads_per_dc=2"
    assert by["is_peak"].all() and by.loc["rad", "stop"] == "emulation degraded at 4 threads/DC"
    row = claims.table(runs).set_index("claim").loc["Peak throughput K2/RAD (Fig. 9)"]
    assert row["this run"].startswith("default: 1.50, K2 ahead (paper 1.68, K2 ahead)") and row["agrees"] is True


def _sweep_copy(tmp_path, changes):
    """The fixture sweep with some trials' summaries changed: {(system, threads): fields}."""
    copy = tmp_path / SWEEP.name
    shutil.copytree(SWEEP, copy)
    for (system, threads), fields in changes.items():
        path = copy / system / f"threads_per_dc={threads}" / "summary.json"
        s = json.loads(path.read_text())
        for k, v in fields.items():
            s[k] = (s.get(k) or {}) | v if isinstance(v, dict) else v
        path.write_text(json.dumps(s))
    return copy


LATE = {"emulation_lateness_ms": {"degraded": True, "worst_p99": 9.0}}
STOLEN = {"cpu": {"machine_s": {"user": 10.0, "idle": 0.0, "steal": 1.0}}}  # 9% of the machine


def test_a_degraded_point_ends_the_sweep_though_later_points_pass(tmp_path):
    """As the bench climbs: the point after 1 thread/DC went late, so 1 is the peak, though 4
    passed again (the earlier rule took 4, the best point not degraded)."""
    peaks = claims.peaks(load.load_run(_sweep_copy(tmp_path, {("k2", 2): LATE}))).set_index("system")
    assert peaks.loc["k2", "point"] == "threads_per_dc=1" and peaks.loc["k2", "is_peak"]
    assert peaks.loc["k2", "stop"].startswith("emulation degraded at 2 threads/DC")


def test_a_sweep_stopped_by_a_disturbed_point_has_no_peak(tmp_path):
    peaks = claims.peaks(load.load_run(_sweep_copy(tmp_path, {("k2", 4): LATE | STOLEN}))).set_index("system")
    assert peaks.loc["k2", "point"] == "threads_per_dc=2" and not peaks.loc["k2", "is_peak"]
    assert "hypervisor" in peaks.loc["k2", "stop"]
    assert not peaks.loc["rad", "is_peak"]  # it ran out


def test_an_interrupted_bench_or_a_failed_climb_is_no_peak_and_still_shown(tmp_path):
    bench = tmp_path / "b_bench-throughput"
    shutil.copytree(SWEEP, bench / "default")
    failed = {"setting": "default", "system": "rad", "is_peak": False, "stop": None, "peak": None,
              "failed": "the point at 1 threads/DC failed"}
    (bench / "throughput.json").write_text(json.dumps({"settings": ["default"], "interrupted": True,
                                                       "climbs": [failed]}))
    run = load.load_run(bench / "default")
    peaks = claims.peaks(run).set_index("system")
    assert not peaks["is_peak"].any()
    assert peaks.loc["k2", "stop"].startswith("the bench was interrupted") and peaks.loc["k2", "ops_per_s"] > 0
    assert peaks.loc["rad", "stop"] == "the point at 1 threads/DC failed" and pd.isna(peaks.loc["rad", "ops_per_s"])
    assert figures.fig9_table(run).iloc[0]["RAD ops/s"] is None
    row = claims.table(run).set_index("claim").loc["Peak throughput K2/RAD (Fig. 9)"]
    assert row["this run"] == "default: - (paper 1.68; not checked: no peak for K2 and RAD)" and row["agrees"] is None


def _workload(setting="default", scale=0.25, smallest=15.0, **systems):
    w = claims.Workload("r", "", "e", setting, scale, (), {}, False, smallest)
    w.systems = {s: dict(v) for s, v in systems.items()}
    w.name = "e"
    return w


def test_the_claims_own_bounds_can_fail():
    """Each check on a hand-made workload at x0.25 (smallest RTT 15 ms): inside its bound it
    agrees, outside it does not."""
    gap = claims.CHECKS["K2 mean ROT latency below RAD's"]
    panel = "zipf 1.4"
    assert gap(_workload(panel, k2={"rot_mean_ms": 20}, rad={"rot_mean_ms": 20 + 88 * 0.25}))[1] is True
    assert gap(_workload(panel, k2={"rot_mean_ms": 20}, rad={"rot_mean_ms": 20 + 80 * 0.25}))[1] is False  # < 88
    assert gap(_workload(k2={"rot_mean_ms": 20}, rad={"rot_mean_ms": 20 + 140 * 0.25}))[1] is True
    assert gap(_workload(k2={"rot_mean_ms": 20}, rad={"rot_mean_ms": 20 + 130 * 0.25}))[1] is False, \
        "the default's own figure: 140-297 ms"
    wot = claims.CHECKS["K2 write-only transaction p99"]
    assert wot(_workload(k2={"wot_p99_ms": 10}))[1] is True
    assert wot(_workload(k2={"wot_p99_ms": 16}))[1] is False, "above the smallest RTT: it crossed the WAN"
    write = claims.CHECKS["RAD single-write p50"]
    assert write(_workload(k2={"write_p50_ms": 5}, rad={"write_p50_ms": 40}))[1] is True
    assert write(_workload(k2={"write_p50_ms": 30}, rad={"write_p50_ms": 40}))[1] is False, "K2's write not local"
    assert write(_workload(rad={"write_p50_ms": 40})) is None, "K2 missing: not covered"
    tao = claims.CHECKS["RAD and PaRiS* all-local, TAO-like"]
    assert tao(_workload("tao", rad={"all_local_fraction": 0.005}, **{"paris-star": {"all_local_fraction": 0.002}}))[1]
    assert tao(_workload("tao", rad={"all_local_fraction": 0.17}))[1] is False
    k2_tao = claims.CHECKS["K2 all-local read-only transactions, TAO-like"]
    assert k2_tao(_workload("tao", k2={"all_local_fraction": 0.73}))[1] and not k2_tao(
        _workload("tao", k2={"all_local_fraction": 0.5}))[1]


def test_the_papers_claims_cover_the_workloads_the_paper_names():
    covers = {c.what: c.covers for c, _ in claims.CLAIMS}
    rad_gap = covers["K2 mean ROT latency below RAD's"]
    assert "tao" not in rad_gap and "default" in rad_gap
    assert covers["K2 mean ROT latency below PaRiS*'s"] == claims.FIG8_PANELS
    assert covers["K2 all-local read-only transactions, TAO-like"] == {"tao"}


@pytest.mark.parametrize("ratio, order", [(1.09, "tie"), (1 / 1.09, "tie"), (1.11, "K2 ahead"), (0.90, "RAD ahead"),
                                          (1.68, "K2 ahead"), (0.25, "RAD ahead")])
def test_an_order_is_a_tie_within_ten_percent_either_way(ratio, order):
    assert paper.order(ratio, paper.TIE_HERE) == order


def test_a_point_with_degraded_emulation_is_no_peak(tmp_path):
    copy = tmp_path / SWEEP.name
    shutil.copytree(SWEEP, copy)
    path = copy / "k2" / "threads_per_dc=4" / "summary.json"
    s = json.loads(path.read_text())
    s["emulation_lateness_ms"] = (s.get("emulation_lateness_ms") or {}) | {"degraded": True, "worst_p99": 9.0}
    path.write_text(json.dumps(s))
    peaks = claims.peaks(load.load_run(copy)).set_index("system")
    assert peaks.loc["k2", "point"] == "threads_per_dc=2" and peaks.loc["k2", "degraded_points"] == 1
    assert peaks.loc["rad", "point"] == "threads_per_dc=4" and peaks.loc["rad", "degraded_points"] == 0


def test_a_run_with_faults_is_not_checked_against_the_papers_fault_free_figures(tmp_path):
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    m = json.loads((copy / "manifest.json").read_text())
    m["config"]["faults"] = [{"kind": "pause", "dc": "SP", "at_s": 5, "for_s": 2}]
    (copy / "manifest.json").write_text(json.dumps(m))
    t = claims.table(load.load_run(copy)).set_index("claim")
    assert t.loc["K2 all-local read-only transactions", "this run"] == "not covered"
    assert "left out" in t.loc["K2 all-local read-only transactions", "note"]


@pytest.mark.parametrize("change, why", [
    ("mutant", "mutant skip-dependency-checks"),
    ("degraded", "emulation degraded (RAD)"),
    ("closed loop", "closed loop"),
])
def test_workloads_unlike_the_papers_measurement_are_left_out_by_name(tmp_path, change, why):
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    m = json.loads((copy / "manifest.json").read_text())
    if change == "mutant":
        m["config"]["testing"] = {"mutant": "skip-dependency-checks"}
    elif change == "closed loop":
        m["config"]["clients"]["target_ops_per_s_per_dc"] = None
    else:
        path = next(copy.glob("rad/**/summary.json"))
        s = json.loads(path.read_text())
        s["emulation_lateness_ms"] = (s.get("emulation_lateness_ms") or {}) | {"degraded": True, "worst_p99": 9.0}
        path.write_text(json.dumps(s))
    (copy / "manifest.json").write_text(json.dumps(m))
    t = claims.table(load.load_run(copy)).set_index("claim")
    # the degraded trial is RAD's: a claim about K2 alone is still checked, one that reads RAD is not
    row = t.loc["RAD read-only p1 is a wide-area round" if change == "degraded" else "K2 all-local read-only transactions"]
    assert row["this run"] == "not covered" and row["agrees"] is None
    assert f"1 workload(s) of the setting left out (analysis: {why})" in row["note"]
    if change == "degraded":
        assert t.loc["K2 all-local read-only transactions", "agrees"] is not None


def test_the_smallest_rtt_is_the_topologys_not_the_papers(tmp_path):
    """RAD's p1 and K2's local write are judged against the run's own smallest RTT: with
    VA-CA at 40 ms instead of the paper's 60 the bound is 10 ms at x0.25, not 15."""
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    for topo in copy.glob("*/topology.yaml"):
        topo.write_text(topo.read_text().replace("CA: 60\n", "CA: 40\n"))
    row = claims.table(load.load_run(copy)).set_index("claim").loc["RAD read-only p1 is a wide-area round"]
    assert "(smallest RTT 10 ms)" in row["this run"]
    assert [ln for ln in figures.rot_latency_cdf(load.load_run(copy)).axes[0].get_lines()
            if ln.get_linestyle() == ":"][0].get_xdata()[0] == 10.0


def test_two_runs_of_one_folder_name_stay_apart(tmp_path):
    other = tmp_path / "elsewhere" / RUN.name
    shutil.copytree(RUN, other)
    runs = load.load_runs([RUN, other])
    assert [r.name for r in runs] == [f"fixtures/{RUN.name}", f"elsewhere/{RUN.name}"]
    assert {t.run for t in load.trials_of(runs)} == {r.name for r in runs}
    k2 = claims.table(runs).set_index("claim").loc["K2 all-local read-only transactions", "this run"]
    assert f"fixtures/{RUN.name}: analysis: " in k2 and f"elsewhere/{RUN.name}: analysis: " in k2


def test_missing_data_gives_a_note_not_a_crash(tmp_path):
    """A run whose clients logged no writes and no read-only transactions still gets a report:
    every notebook runs (report.main is 0 only if none failed)."""
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
    rad = json.loads((copy / "rad" / "summary.json").read_text())["schedule_lag_ms"]  # untouched: its own
    assert table.loc["RAD", "schedule lag p50/p99 ms"] == f"{rad['p50']:.0f}/{rad['p99']:.0f}"
    assert table.loc["RAD", "warnings"] == ""


def test_jupyterlab_serves_the_repository_notebooks():
    """`make notebook`'s server, on loopback with a token: its API lists the notebooks."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    jupyter = Path(sys.executable).parent / "jupyter"
    root = ["--allow-root"] if os.geteuid() == 0 else []  # as make notebook does
    proc = subprocess.Popen([str(jupyter), "lab", "--no-browser", f"--ServerApp.root_dir={ROOT}", *root,
                             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--IdentityProvider.token=k2b",
                             "--ServerApp.port_retries=0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/api/contents/analysis/notebooks?token=k2b"
        deadline = time.time() + 60
        while True:
            try:
                listing = json.loads(urllib.request.urlopen(url, timeout=5).read())
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.time() < deadline, "JupyterLab did not answer within 60 s"
                time.sleep(0.5)
        names = {c["name"] for c in listing["content"]}
        assert {nb.name for nb in report.notebooks()} <= names
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_paris_papers_figures_come_from_its_runs():
    """Fig. 2 (transaction latency against throughput), Fig. 5 (visibility) and the
    transactions table from a small load sweep of PaRiS, BPR and NoCC."""
    runs = [load.load_run(PARIS)]
    vis = frames.visibility_frame(runs)
    assert set(vis["system"]) == {"paris", "bpr", "nocc"}
    for _, g in vis.groupby(["point", "system", "measure"]):
        assert g["fraction"].is_monotonic_increasing and g["fraction"].iloc[-1] == pytest.approx(1.0)
    nocc = vis[vis["system"] == "nocc"]
    at_once = nocc[nocc["latency_ms"] <= 1.0].groupby("point")["fraction"].max()
    assert len(at_once) == 4 and (at_once > 0.99).all(), f"NoCC shows what it installs at once: {at_once}"
    t = frames.transactions_frame(runs)
    assert set(t["system"]) == {"paris", "bpr", "nocc"} and (t["rwt_count"] > 0).all()
    assert set(t["workload.rw_writes"]) == {1, 10} and set(t["clients.threads_per_dc"]) == {1, 4}
    bpr, paris = t[t["system"] == "bpr"], t[t["system"] == "paris"]
    assert (bpr["reads_blocked_share"] > 0).all() and (bpr["read_phase_blocked_mean_ms"] > 0).all()
    assert paris["reads_blocked_share"].isna().all(), "PaRiS never blocks"
    shares = paris[[c for c in t.columns if c.startswith("bytes_share_")]]
    assert set(shares.columns) == {"bytes_share_replication", "bytes_share_ust_intra_dc", "bytes_share_ust_inter_dc"}
    assert (shares.sum(axis=1) - 1).abs().max() < 1e-9 and (shares > 0).all().all()
    pooled = {(w.point_values["workload.rw_writes"], s): p for w in claims.workloads(runs) for s, p in w.systems.items()}
    assert all(p["rot_count"] == 0 and p["rwt_count"] > 0 and p["rwt_mean_ms"] > 0 for p in pooled.values())
    fig = figures.latency_vs_throughput(runs)
    assert len(fig.axes) == 2, "one panel per read:write mix"
    assert figures.visibility_cdf(runs) is not None


def test_the_karma_papers_figures_pool_the_trials_and_show_their_spread():
    """Local access, cache miss ratio and restricted share from the trials' merged 0/1
    counts (each trial's equals its summary's), min and max across trials around them,
    messages per operation by type, and dependency checks per put."""
    runs = [load.load_run(KARMA)]
    frame = frames.rings_frame(runs).set_index("system")
    assert set(frame.index) == {"karma", "cops-pr"} and (frame["trials"] == 2).all()
    for system, row in frame.iterrows():
        sums = [json.loads((KARMA / system / f"trial-{n}" / "summary.json").read_text()) for n in (1, 2)]
        one = frames.rings_frame([dataclasses.replace(runs[0], trials=[t for t in runs[0].trials
                                                                     if t.system == system and t.trial == 1])])
        assert one["local_access"].iloc[0] == pytest.approx(sums[0]["rings"]["local_access_fraction"], abs=1e-6)
        assert one["restricted"].iloc[0] == pytest.approx(sums[0]["rings"]["restricted_fraction"], abs=1e-6)
        per_trial = sorted(s["rings"]["local_access_fraction"] for s in sums)
        assert (row["local_access_min"], row["local_access_max"]) == pytest.approx(tuple(per_trial), abs=1e-6)
        assert row["local_access_min"] <= row["local_access"] <= row["local_access_max"]
        assert row["throughput_ops_per_s"] == pytest.approx(sum(s["throughput_ops_per_s"] for s in sums) / 2, rel=0.01)
        puts = sum(s["messages"]["wan"]["Put"]["count"] for s in sums)
        ops = sum(s["messages"]["wan"]["Put"]["count"] / s["messages"]["wan"]["Put"]["per_op"] for s in sums)
        assert row["msg_per_op:wan:Put"] == pytest.approx(puts / ops, rel=1e-3)
    karma, cops = frame.loc["karma"], frame.loc["cops-pr"]
    assert 0 < karma["cache_miss_ratio"] < 1 and pd.isna(cops["cache_miss_ratio"]), "COPS-PR has no cache"
    assert cops["restricted"] == 0 and karma["local_access"] > cops["local_access"]
    assert pd.isna(cops.get("msg_per_op:wan:Ping")), "COPS-PR reads its own ring: no latency probes"
    assert karma["dependencies_per_put"] < cops["dependencies_per_put"]
    warm = frames.cache_warmup_frame(runs)
    assert set(warm["system"]) == {"karma"} and set(warm["trial"]) == {1, 2} and (warm["window_s"] == 12).all()
    assert warm["reads"].sum() > 0 and warm["hit_rate"].between(0, 1).all()
    assert figures.cache_warmup(runs) is not None


def test_latency_against_throughput_joins_points_in_order_of_load(monkeypatch):
    """Past its peak a sweep's throughput falls as threads grow: the line goes back, as the
    paper's curves do, instead of being redrawn in order of throughput."""
    ws = claims.workloads([load.load_run(PARIS)])
    for w in ws:
        if w.point_values["clients.threads_per_dc"] == 4:
            for p in w.systems.values():
                p["throughput_ops_per_s"] = 0.5  # below every 1-thread point
    monkeypatch.setattr(claims, "workloads", lambda runs: ws)
    fig = figures.latency_vs_throughput([])
    lines = [ln for ax in fig.axes for ln in ax.get_lines() if len(ln.get_xdata()) == 2]
    assert lines and all(ln.get_xdata()[0] > ln.get_xdata()[1] for ln in lines), "1 thread first, then 4"
    assert "paris" in fig.axes[0].get_title(), f"a panel is named by its experiment: {fig.axes[0].get_title()}"


def test_a_paced_sweep_is_a_load_sweep_too(monkeypatch):
    """A sweep of the offered rate (clients.target_ops_per_s_per_dc, karma-default's) is drawn
    as latency against throughput like a sweep of client threads, in order of the rate."""
    ws = claims.workloads([load.load_run(PARIS)])
    for w in ws:
        rate = 100.0 * w.point_values.pop("clients.threads_per_dc")
        w.point_values["clients.target_ops_per_s_per_dc"] = rate
        w.sweep_axes = tuple("clients.target_ops_per_s_per_dc" if a == "clients.threads_per_dc" else a
                             for a in w.sweep_axes)
    monkeypatch.setattr(claims, "workloads", lambda runs: ws)
    fig = figures.latency_vs_throughput([])
    assert len(fig.axes) == 2, "one panel per read:write mix, as with threads"
    assert all(len(ln.get_xdata()) == 2 for ax in fig.axes for ln in ax.get_lines() if len(ln.get_xdata()))


def test_the_paris_papers_claims_are_checked_on_its_runs_only():
    paris = claims.table([load.load_run(PARIS)]).set_index("claim")
    assert list(paris.index) == [c.what for c, _, _ in claims.PARIS_CLAIMS], "its claims alone"
    assert paris["agrees"].notna().all(), paris["this run"].to_dict()
    low = paris.loc["PaRiS transaction latency as NoCC's below overload", "this run"]
    assert "threads_per_dc=1" in low and "threads_per_dc=4" not in low, f"at each sweep's lowest load only: {low}"
    assert "threads_per_dc=4" in paris.loc["PaRiS transaction latency below BPR's", "this run"], "at every load"
    k2 = claims.table([load.load_run(RUN)])
    assert not set(k2["claim"]) & {c.what for c, _, _ in claims.PARIS_CLAIMS}, "K2 runs: the K2 paper's claims"


def test_a_ratio_is_within_noise_where_the_trials_overlap_and_a_difference_otherwise():
    """``versus``: a ratio's range from the trials' spreads, and its verdict both ways."""
    def row(v, lo, hi, trials=3):
        return pd.Series({"rwt_mean_ms": v, "rwt_mean_ms_min": lo, "rwt_mean_ms_max": hi, "trials": trials})

    apart = versus(row(10, 9, 11), row(50, 45, 60), "rwt_mean_ms")
    assert apart["verdict"] == "a lower" and apart["ratio"] == pytest.approx(0.2)
    assert (apart["ratio_min"], apart["ratio_max"]) == pytest.approx((9 / 60, 11 / 45))
    assert versus(row(50, 45, 60), row(10, 9, 11), "rwt_mean_ms")["verdict"] == "a higher"
    assert versus(row(10, 9, 12), row(11, 10.5, 13), "rwt_mean_ms")["verdict"] == "within noise"
    # apart by less than the histograms' precision (one bucket at 146.7 ms), then by more
    assert versus(row(146.687, 146.687, 146.687), row(146.815, 146.815, 146.943),
                       "rwt_mean_ms")["verdict"] == "within noise"
    assert versus(row(146.687, 146.687, 146.687), row(147.1, 147.1, 147.3),
                       "rwt_mean_ms")["verdict"] == "a lower"
    assert versus(row(147.1, 147.1, 147.3), row(146.687, 146.687, 146.687),
                       "rwt_mean_ms")["verdict"] == "a higher"
    assert versus(row(10, 10, 10, 1), row(50, 50, 50, 1), "rwt_mean_ms")["verdict"] == "one trial: no spread"
    assert versus(row(10, 9, 11), row(None, None, None), "rwt_mean_ms")["verdict"] == "not measured"


def test_the_paris_ratios_say_which_system_is_lower(monkeypatch):
    """paris_ratios_frame's verdicts are about PaRiS: lower than BPR when BPR's trials are all above."""
    rows = [{"run": "r", "experiment": "e", "point": "p", "system": s, "trials": 3,
             **{f"{m}{x}": v for m, v in (("rwt_mean_ms", mean), ("throughput_ops_per_s", thr))
                for x, v in (("", v), ("_min", 0.9 * v), ("_max", 1.1 * v))},
             **{f"visibility_{q}_ms{x}": vis for q in ("p50", "p99") for x in ("", "_min", "_max")},
             "visibility_at_read_p50_ms": None, "visibility_at_read_p99_ms": None}
            for s, mean, thr, vis in (("paris", 10, 1000, 260), ("bpr", 80, 120, 2), ("nocc", 10.5, 1050, 0))]
    monkeypatch.setattr(frames, "pooled_frame", lambda runs: pd.DataFrame(rows))
    r = paris.paris_ratios_frame([]).iloc[0]
    assert r["latency_paris_vs_bpr"] == "PaRiS lower" and r["bpr_over_paris_latency"] == pytest.approx(8.0)
    assert r["latency_paris_vs_nocc"] == "within noise" and r["throughput_paris_vs_nocc"] == "within noise"
    assert r["visibility_gap_p50_ms"] == pytest.approx(258) and r["visibility_gap_at_read_p50_ms"] is None


def test_rad_two_round_share_counts_two_wide_area_rounds_or_more(run):
    """K2 §VII-C counts read-only transactions taking two wide-area rounds: the fixture's RAD
    has 23 with two and one with Eiger's third (a pending transaction resolved after the
    second), 24 of 539."""
    rounds = json.loads((RUN / "rad" / "summary.json").read_text())["ops"]["rot"]["wan_rounds"]
    assert rounds["2"] == 23 and rounds["3"] == 1
    w = next(w for w in claims.workloads([run]) if "rad" in w.systems)
    assert w.systems["rad"]["two_round_fraction"] == pytest.approx(24 / 539)
    assert w.systems["rad"]["hot_key_writes_per_s"] is None, "summarized before it was recorded"


def test_second_rounds_frame_reads_rads_round_counters(run):
    """RAD's trials with round counters get a row: round shares from the merged histograms,
    the counters' shares of round-one key reads; trials of systems without them none."""
    r = dataclasses.replace(run, trials=[dataclasses.replace(t, summary=dict(t.summary)) for t in run.trials])
    rad = next(t for t in r.trials if t.system == "rad")
    rad.summary["server_stats"] = {"round1_keys": 1000, "round1_lvt_pending": 50, "round2_keys": 40,
                                   "round2_keys_pending": 10}
    rad.summary["hot_keys"] = {"keys": 10, "writes_per_s": 0.5, "hottest_writes_per_s": 2.0}
    f = frames.second_rounds_frame([r])
    assert list(f["system"]) == ["rad"]
    row = f.iloc[0]
    assert row["two_round_share"] == pytest.approx(24 / 539) and row["rounds_3_share"] == pytest.approx(1 / 539)
    assert (row["round1_pending_share"], row["read_again_share"], row["read_again_waited_share"]) == (0.05, 0.04, 0.25)
    assert row["hot_key_writes_per_s"] == 0.5
