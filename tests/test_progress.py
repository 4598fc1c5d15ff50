"""The live display (rich.progress) and its plain-line form for logs."""
import io

from rich.console import Console

from k2bench.progress import Progress


def test_the_bar_counts_expected_seconds_and_shows_where_the_run_is():
    out = io.StringIO()
    p = Progress(Console(file=out, force_terminal=True, width=160))
    p.start("smoke", trials=2, eta_per_trial=100.0)
    p.begin_trial(1, "rad", "", 1)
    p.update(phase="measuring", elapsed=30.0, expected=60.0, ops_per_s=1234.0)
    task = p.bar.tasks[0]
    assert task.total == 200.0 and task.completed == 130.0  # one trial done, 30 s of the next
    assert task.fields["trials"] == "2/2" and task.fields["rate"] == "1,234 ops/s"
    assert task.fields["where"] == "rad trial 1" and task.fields["phase"] == "measuring 0:30/1:00"
    p.update(phase="measuring", elapsed=90.0, expected=60.0)
    assert p.bar.tasks[0].completed == 160.0, "a phase running over its time does not overfill the trial"
    p.update(phase="stopping", elapsed=0, expected=None, ops_per_s=None)
    assert p.bar.tasks[0].completed == 160.0, "the untimed phases after it do not move the bar back"
    p.update(phase="measuring", elapsed=30.0, expected=60.0, ops_per_s=1234.0)
    p.bar.refresh()
    p.finish("completed", None)
    text = out.getvalue()
    assert "smoke" in text and "1,234 ops/s" in text and text.rstrip().endswith("run completed")
    assert p.bar is None


def test_logs_get_one_plain_line_per_phase():
    out = io.StringIO()
    p = Progress(Console(file=out, force_terminal=False, width=160))
    p.start("smoke", trials=3, eta_per_trial=60.0)
    p.begin_trial(0, "k2", "zipf=1.4", 1)
    p.update(phase="starting servers", elapsed=0, expected=None)
    p.update(phase="starting servers", elapsed=1, expected=None)
    p.update(phase="running", elapsed=0, expected=60.0)
    p.finish("failed", "a server exited")
    lines = out.getvalue().splitlines()
    assert lines[0] == "smoke: 3 system run(s), about 3:00 in all"
    assert [ln.split("] ", 1)[1] for ln in lines[1:3]] == ["k2 zipf=1.4 trial 1: starting servers",
                                                           "k2 zipf=1.4 trial 1: running"]
    assert lines[-1] == "run failed: a server exited"


def test_the_end_table_lists_sweep_points_in_numeric_order():
    from k2bench.cli.common import _by_system_and_point
    points = ["target_ops_per_s_per_dc=360.0", "target_ops_per_s_per_dc=40.0", "target_ops_per_s_per_dc=120.0"]
    summaries = [{"system": s, "point": p} for s in ("karma", "cops-pr") for p in points]
    ordered = [(s["system"], s["point"].split("=")[1]) for s in sorted(summaries, key=_by_system_and_point)]
    assert ordered == [("cops-pr", "40.0"), ("cops-pr", "120.0"), ("cops-pr", "360.0"),
                       ("karma", "40.0"), ("karma", "120.0"), ("karma", "360.0")]
