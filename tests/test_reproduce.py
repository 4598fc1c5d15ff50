"""``k2bench reproduce``: its plans, its bad input, and a reproduction continued (finished
runs kept, unfinished ones resumed, missing ones run), then its card written."""
import json
import shutil

import pytest

from analysis import reproduce, scorecards
from conftest import ROOT
from k2bench.cli.common import _load
from k2bench.env import Env

FIXTURES = ROOT / "tests" / "fixtures"


@pytest.mark.parametrize("paper", sorted(scorecards.PAPERS))
@pytest.mark.parametrize("scale", reproduce.SCALES)
def test_every_paper_has_a_plan_of_shipped_experiments_at_each_scale(paper, scale):
    p = reproduce.plan(paper, scale)
    assert p["note"] and p["experiments"]
    env = Env(repo=ROOT, jar=ROOT / "system/launcher/target/k2bench.jar", deployment=None)
    for e in p["experiments"]:
        # the file with the scale's fields set resolves, as `k2bench run --set` takes them
        exp = _load(env, e["experiment"], need_jar=False, overrides=e["set"])
        assert all(exp[k] == v for k, v in e["set"].items() if "." not in k), e
    covered = {x for c in scorecards.PAPERS[paper][1] for x in c.experiments}
    assert {e["experiment"] for e in p["experiments"]} <= covered, "every experiment run measures a claim"


def test_the_quick_plans_are_smaller_than_the_full_ones():
    for paper in scorecards.PAPERS:
        quick, full = (reproduce.plan(paper, s) for s in reproduce.SCALES)
        assert quick["experiments"] != full["experiments"], paper


@pytest.mark.parametrize("argv, field", [
    (["k3"], "paper: 'k3' is not a bundled paper (did you mean k2?)"),
    (["k2", "--scale", "huge"], "--scale: 'huge' is not a scale"),
    (["all", "--dir", "x"], "--dir: continues one paper's reproduction"),
    (["k2", "--score-only"], "--score-only: needs --dir"),
    (["k2", "--dir", "/nonexistent"], "--dir: /nonexistent is not a reproduction"),
])
def test_bad_input_is_one_line_and_exit_2(argv, field, capsys):
    assert reproduce.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"k2bench reproduce: {field}") and err.count("\n") == 1, err


def _reproduction(tmp_path, paper="karma", scale="quick"):
    """A karma quick reproduction with its first experiment done (the Karma fixture run), its
    second interrupted, its third not started."""
    out = tmp_path / "repro"
    out.mkdir()
    p = reproduce.plan(paper, scale)
    (out / reproduce.PLAN_FILE).write_text(json.dumps(p))
    first, second = (e["experiment"] for e in p["experiments"][:2])
    shutil.copytree(FIXTURES / "run-karma", out / first)
    shutil.copytree(FIXTURES / "run-karma", out / second)
    m = json.loads((out / second / "manifest.json").read_text())
    (out / second / "manifest.json").write_text(json.dumps(m | {"status": "interrupted"}))
    return out, p


def test_a_continued_reproduction_keeps_finished_runs_and_resumes_the_rest(tmp_path, monkeypatch):
    out, p = _reproduction(tmp_path)
    calls = []
    monkeypatch.setattr(reproduce, "_run_experiment",
                        lambda args, name, d, overrides, resume: calls.append((name, d, overrides, resume)) or 0)
    assert reproduce.main(["karma", "--dir", str(out)]) == 0
    names = [e["experiment"] for e in p["experiments"]]
    assert [(c[0], c[3]) for c in calls] == [(names[1], True), (names[2], False)]
    assert calls[0][1] == out / names[1] and calls[1][2] == p["experiments"][2]["set"]
    card = json.loads((out / reproduce.CARD_JSON).read_text())
    assert [r["status"] for r in card["runs"]] == ["done", "interrupted", "not run"]
    rows = {r["id"]: r for r in card["claims"]}
    assert rows["karma-local-access"]["verdict"] == "agrees"
    assert card["scale"] == "quick" and card["scale_note"] == p["note"]
    assert (out / reproduce.CARD_MD).read_text().startswith("# Karma")


def test_a_failed_experiment_is_reported_and_the_card_still_written(tmp_path, monkeypatch, capsys):
    out, p = _reproduction(tmp_path)
    monkeypatch.setattr(reproduce, "_run_experiment", lambda *a, **k: 1)
    assert reproduce.main(["karma", "--dir", str(out)]) == 1
    assert "failed (exit 1)" in capsys.readouterr().out
    assert (out / reproduce.CARD_JSON).exists()


def test_an_interrupted_experiment_stops_the_reproduction_without_a_card(tmp_path, monkeypatch):
    out, _ = _reproduction(tmp_path)
    monkeypatch.setattr(reproduce, "_run_experiment", lambda *a, **k: 130)
    assert reproduce.main(["karma", "--dir", str(out)]) == 130
    assert not (out / reproduce.CARD_JSON).exists()


def test_score_only_runs_nothing(tmp_path, monkeypatch):
    out, _ = _reproduction(tmp_path)
    monkeypatch.setattr(reproduce, "_run_experiment", lambda *a, **k: pytest.fail("ran an experiment"))
    assert reproduce.main(["karma", "--dir", str(out), "--score-only"]) == 0
    assert (out / reproduce.CARD_JSON).exists()


def test_a_reproduction_of_another_paper_or_plan_is_refused(tmp_path, capsys):
    out, p = _reproduction(tmp_path)
    assert reproduce.main(["k2", "--dir", str(out)]) == 2
    assert "reproduces paper 'karma', not 'k2'" in capsys.readouterr().err
    (out / reproduce.PLAN_FILE).write_text(json.dumps(p | {"experiments": p["experiments"][:1]}))
    assert reproduce.main(["karma", "--dir", str(out)]) == 2
    assert "another plan" in capsys.readouterr().err


def test_a_new_reproduction_gets_its_own_directory_with_its_plan(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "_run_experiment", lambda *a, **k: 0)
    assert reproduce.main(["paris", "--runs", str(tmp_path)]) == 0
    (out,) = tmp_path.glob("*_reproduce-paris-quick")
    assert json.loads((out / reproduce.PLAN_FILE).read_text())["paper"] == "paris"
    card = json.loads((out / reproduce.CARD_JSON).read_text())
    assert card["counts"]["not covered"] == len(card["claims"]), "nothing ran: nothing covered"


def test_an_experiment_that_raises_is_reported_and_the_others_still_run(tmp_path, monkeypatch, capsys):
    from k2bench.errors import ConfigError
    out, p = _reproduction(tmp_path)
    calls = []

    def run(args, name, d, overrides, resume):
        calls.append(name)
        if len(calls) == 1:
            raise ConfigError("--resume", "was run with a different configuration")
        return 0
    monkeypatch.setattr(reproduce, "_run_experiment", run)
    assert reproduce.main(["karma", "--dir", str(out)]) == 1
    assert len(calls) == 2, "the next experiment still ran"
    text = capsys.readouterr().out
    assert "failed (exit 2): --resume: was run with a different configuration" in text
    assert f"k2bench reproduce karma --scale quick --dir {out}" in text.replace("\n", "")
    assert (out / reproduce.CARD_JSON).exists()


def test_score_only_scores_with_the_plan_the_reproduction_was_made_with(tmp_path, monkeypatch):
    out, p = _reproduction(tmp_path)
    old = p | {"note": "an older plan", "experiments": p["experiments"][:1]}
    (out / reproduce.PLAN_FILE).write_text(json.dumps(old))
    monkeypatch.setattr(reproduce, "_run_experiment", lambda *a, **k: pytest.fail("ran an experiment"))
    assert reproduce.main(["karma", "--dir", str(out), "--score-only"]) == 0
    card = json.loads((out / reproduce.CARD_JSON).read_text())
    assert card["scale_note"] == "an older plan" and len(card["runs"]) == 1


def test_another_scale_is_named_as_the_flag_to_change(tmp_path, capsys):
    out, _ = _reproduction(tmp_path)
    assert reproduce.main(["karma", "--scale", "full", "--dir", str(out)]) == 2
    assert "--scale: " in capsys.readouterr().err
