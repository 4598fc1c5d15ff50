"""`k2bench compare` on two small real runs that differ in a known direction: the analysis
fixture (tests/fixtures/run-analysis, RTTs x0.25) and the same experiment with every RTT
twice as long (tests/fixtures/run-analysis-wan, x0.5), both made by the harness."""
import io
import json

import pandas as pd
import pytest
from rich.console import Console

from analysis import compare, load
from conftest import ROOT

A = ROOT / "tests" / "fixtures" / "run-analysis"
B = ROOT / "tests" / "fixtures" / "run-analysis-wan"


@pytest.fixture(scope="module")
def runs():
    return load.load_runs([A, B])


def quiet():
    return Console(file=io.StringIO(), width=200)


def test_the_fixtures_differ_only_in_their_rtts(runs):
    a, b = (json.loads(json.dumps(r.manifest["config"])) for r in runs)
    assert (a["topology"].pop("rtt_scale"), b["topology"].pop("rtt_scale")) == (0.25, 0.5)
    for cfg in (a, b):
        cfg.pop("name"), cfg.pop("description")
    assert a == b
    assert all(r.manifest["status"] == "completed" for r in runs)


def median(curve: pd.DataFrame) -> float:
    return curve[curve["fraction"] >= 0.5]["latency_ms"].iloc[0]


def test_two_runs_are_two_distinct_cdfs_per_system_never_one(runs, tmp_path):
    out = compare.compare([str(A), str(B)], out=str(tmp_path / "c"), console=quiet())
    cdf = pd.read_csv(out / "cdf.csv")
    rot = cdf[cdf["op"] == "rot"]
    assert set(rot["label"]) == {A.name, B.name}
    for system in ("k2", "rad", "paris-star"):
        a = rot[(rot["system"] == system) & (rot["label"] == A.name)]
        b = rot[(rot["system"] == system) & (rot["label"] == B.name)]
        assert a["fraction"].iloc[-1] == pytest.approx(1) and b["fraction"].iloc[-1] == pytest.approx(1)
        if system != "k2":  # K2's median read is all-local: no wide-area delay to double
            assert median(b) > 1.6 * median(a), system
    # The overlay: one line per system and run, the runs in different styles.
    fig = compare.overlay_figure(compare.cdf_frame(compare.groups(runs)))
    ax = next(a for a in fig.axes if a.get_title() == "read-only transactions")
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
    assert len(lines) == 6
    styles = {(ln.get_color(), ln.get_linestyle()) for ln in lines}
    assert len(styles) == 6 and len({ln.get_linestyle() for ln in lines}) == 2
    assert (out / "latency-cdf.png").stat().st_size > 10_000


def test_deltas_come_from_each_runs_merged_histograms(runs):
    gs = compare.groups(runs)
    metrics = compare.metrics_frame(gs)
    deltas = compare.delta_frame(metrics, gs[0].label).set_index(["system", "metric"])
    for ta, tb in zip(runs[0].trials, runs[1].trials):
        assert ta.system == tb.system
        pa, pb = (t.summary["ops"]["rot"]["latency_ms"]["p50"] for t in (ta, tb))  # the harness's own
        row = deltas.loc[(ta.system, "rot_p50_ms")]
        assert (row["baseline"], row["value"]) == (pa, pb)
        assert row["delta"] == pytest.approx(pb - pa)
        if ta.system != "k2":
            assert row["change"] == "worse"
        tp = deltas.loc[(ta.system, "throughput_ops_per_s")]
        assert tp["baseline"] == pytest.approx(ta.summary["throughput_ops_per_s"], rel=1e-6)
        assert tp["change"] == compare.direction("throughput_ops_per_s", tp["baseline"], tp["value"])


def test_each_metric_changes_in_its_own_sense():
    d = compare.direction
    assert d("rot_p99_ms", 100.0, 150.0) == "worse" and d("rot_p99_ms", 150.0, 100.0) == "better"
    assert d("throughput_ops_per_s", 100.0, 150.0) == "better" and d("all_local_pct", 50.0, 40.0) == "worse"
    assert d("rot_p50_ms", 100.0, 100.5) == "same"  # within 1% of the baseline
    assert d("staleness_p50_ms", 0.0, 0.0) == "same" and d("staleness_p50_ms", 0.0, 12.0) == "worse"
    assert d("wot_p99_ms", None, 3.0) == "n/a"


def test_runs_are_merged_only_when_asked(runs, tmp_path):
    import shutil

    assert [g.label for g in compare.groups(runs)] == [A.name, B.name]
    assert [g.label for g in compare.groups(runs, by="deployment")] == ["local #1", "local #2"]
    with pytest.raises(compare.CompareError, match="different experiments"):
        compare.groups(runs, by="deployment", pool=True)
    with pytest.raises(compare.CompareError, match="nothing would be pooled"):
        compare.groups(runs, by="run", pool=True)
    with pytest.raises(compare.CompareError, match="at least two runs"):
        compare.groups(runs[:1])
    # --pool --by deployment: two local runs of one configuration against one on Emulab.
    a, b = runs
    shutil.copytree(A, tmp_path / "again")
    again = load.load_run(tmp_path / "again")
    emulab = load.Run(b.dir, b.manifest | {"deployment": {"kind": "remote", "provider": "emulab"}}, b.trials)
    gs = compare.groups([a, again, emulab], by="deployment", pool=True)
    assert [(g.label, len(g.runs)) for g in gs] == [("local", 2), ("emulab", 1)]
    m = compare.metrics_frame(gs).set_index(["label", "system", "metric"])
    k2 = m.loc[("local", "k2", "rot_p99_ms")]
    assert k2["trials"] == 2 and k2["min"] == k2["max"] == k2["value"], "a copy of one trial: no spread"
    # ... but never the same trial twice, nor two configurations under one label.
    twice = load.Run(tmp_path / "alias", a.manifest, a.trials)
    with pytest.raises(compare.CompareError, match="lists a trial twice"):
        compare.groups([a, twice, emulab], by="deployment", pool=True)
    other = load.Run(b.dir, b.manifest | {"experiment": a.experiment}, b.trials)
    with pytest.raises(compare.CompareError, match="different configurations"):
        compare.groups([a, other, emulab], by="deployment", pool=True)


def test_a_change_inside_the_trials_spread_is_not_called_better_or_worse():
    d = compare.direction
    assert d("rot_p99_ms", 100.0, 120.0, (90.0, 110.0), (105.0, 130.0)) == "within spread"
    assert d("rot_p99_ms", 100.0, 120.0, (90.0, 110.0), (115.0, 130.0)) == "worse"
    assert d("rot_p99_ms", 100.0, 120.0) == "worse", "one trial a side: no spread to judge by"


def test_the_command_prints_the_deltas_and_writes_the_overlay_and_the_page(tmp_path, capsys):
    from k2bench import cli

    out = tmp_path / "cmp"
    assert cli.main(["compare", str(A), str(B), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "compared with " + A.name in printed and "ROT p50 (ms)" in printed and "worse" in printed
    page = (out / "index.html").read_text()
    assert "latency-cdf.png" in page and "class='worse'" in page
    assert "emulate different wide-area latencies (rtt_scale run-analysis: 0.25, run-analysis-wan: 0.5)" in page
    for column in ("failed ops", "violations", "lateness p99", "faults"):
        assert f"<th>{column}</th>" in page
    for name in ("metrics.csv", "deltas.csv", "cdf.csv", "latency-cdf.png"):
        assert (out / name).stat().st_size > 0
    metrics = pd.read_csv(out / "metrics.csv")
    assert set(metrics.columns) == {"label", "system", "point", "metric", "value", "trials", "min", "max"}


def test_the_command_refuses_what_it_cannot_compare(tmp_path, capsys):
    from k2bench import cli

    assert cli.main(["compare", str(A)]) == 2
    assert "compare: compare needs at least two runs" in capsys.readouterr().err
    assert cli.main(["compare", str(A), str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("not a run directory (no manifest.json)") and "\n" not in err


def test_a_run_with_a_degraded_emulation_or_failures_gets_a_note_naming_only_what_went_wrong(tmp_path):
    import shutil
    from k2bench import cli

    bad = tmp_path / "bad"
    shutil.copytree(B, bad)
    path = next(bad.glob("rad/**/summary.json"))
    s = json.loads(path.read_text())
    s["emulation_lateness_ms"] = (s.get("emulation_lateness_ms") or {}) | {"degraded": True, "worst_p99": 9.0}
    path.write_text(json.dumps(s))
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(A), str(bad), "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    assert "bad: emulation lateness p99 9.0 ms DEGRADED: read its numbers with that in mind." in page
    assert "failed operations" not in page.split("bad: emulation")[1].split("</p>")[0]
    assert "<p class='note'>run-analysis: " not in page, "the good run gets no note"
