"""The checker on real runs (issue 7): the deliberately broken protocol variants are caught,
the correct systems pass the same stress, and a run with a datacenter killed mid-way ends
with its unavailability reported and no violation."""
import json
import os
import re

import pytest
import yaml

from conftest import ROOT
from test_e2e import k2bench, processes_mentioning

STRESS = ROOT / "tests" / "fixtures" / "stress.yaml"
DC_KILL = ROOT / "tests" / "fixtures" / "dc-kill.yaml"

# mutant -> the system it breaks and the anomalies it must produce (at least one of them)
MUTANTS = {
    "skip-dependency-checks": ("k2", {"causality", "atomic-visibility", "monotonic-reads"}),
    "incoming-writes-visible": ("k2", {"atomic-visibility", "causality", "monotonic-reads"}),
    "read-pending": ("k2", {"atomic-visibility", "causality", "read-your-writes", "monotonic-reads"}),
    "rad-skip-second-round": ("rad", {"atomic-visibility", "causality", "monotonic-reads"}),
}


def run(tmp_path, experiment, *args):
    # a wide console, so the summary table's cells are not wrapped
    r = k2bench("run", str(experiment), "--runs", str(tmp_path), *args, timeout=900,
                env=dict(os.environ, COLUMNS="250"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return (tmp_path / "latest").resolve(), r.stdout


def test_the_mutant_list_matches_the_java_switch():
    from k2bench.experiment import MUTANTS as declared
    java = (ROOT / "system/core/src/main/java/org/k2bench/core/testing/Mutants.java").read_text()
    assert set(declared) == set(re.findall(r'static final String \w+ = "([a-z0-9-]+)"', java)) == set(MUTANTS)


def test_the_correct_systems_pass_the_stress_workload(jar, tmp_path):
    rundir, out = run(tmp_path, STRESS)
    for system in ("k2", "rad", "paris-star"):
        c = json.loads((rundir / system / "consistency.json").read_text())
        assert c["checked"]["reads"] > 1000 and c["checked"]["writes"] > 300, c["checked"]
        assert c["violations"]["count"] == 0, (system, c["violations"]["listed"][:3])
        assert c["mutant"] is None
        lines = (rundir / system / "history.txt").read_text().splitlines()
        assert lines and all(re.fullmatch(r"[rw]\(\w+,\d+,\d+,\d+\)", ln) for ln in lines)
    assert "consistency violations" in out and "0 of" in out


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_every_mutant_is_caught(jar, tmp_path, mutant):
    system, expected = MUTANTS[mutant]
    exp = yaml.safe_load(STRESS.read_text()) | {"systems": [system], "testing": {"mutant": mutant}}
    f = tmp_path / f"mutant-{mutant}.yaml"
    f.write_text(yaml.safe_dump(exp))
    rundir, out = run(tmp_path / "runs", f)
    c = json.loads((rundir / system / "consistency.json").read_text())
    assert c["mutant"] == mutant
    found = c["violations"]["by_kind"]
    print(f"mutant {mutant}: {c['violations']['count']} violations {found}")
    assert c["violations"]["count"] > 0, f"{mutant} was not caught"
    assert set(found) & expected, found
    v = c["violations"]["listed"][0]
    assert v["ops"] and v["message"], "each violation names the operations involved"
    assert f"{c['violations']['count']} of {c['checked']['ops']} ops" in out, "the summary table shows it"


def test_a_run_with_a_datacenter_killed_reports_unavailability_and_no_violation(jar, tmp_path):
    rundir, out = run(tmp_path, DC_KILL)
    s = json.loads((rundir / "k2" / "summary.json").read_text())
    c = json.loads((rundir / "k2" / "consistency.json").read_text())
    timeline = [json.loads(ln) for ln in (rundir / "k2" / "timeline.jsonl").read_text().splitlines()]
    assert [e["event"] for e in timeline] == ["fault-start"] and timeline[0]["kind"] == "kill"
    assert "SIGKILL to server-TYO" in timeline[0]["note"]
    m = json.loads((rundir / "manifest.json").read_text())
    assert m["status"] == "completed"
    avail = s["availability"]
    assert avail["failed_ops"] > 0, "TYO's own clients fail once their datacenter is gone"
    tyo = [w for w in avail["windows"] if w["dc"] == "TYO"]
    assert tyo and tyo[0]["from_s"] >= 3.5, avail["windows"]
    assert s["server_stats"].get("remote_read_failovers", 0) > 0, "reads failed over to the other replica"
    assert s["consistency"]["violations"] == 0 and c["violations"]["count"] == 0, c["violations"]["listed"][:3]
    # Datacenters other than TYO keep serving after the kill.
    ops = [json.loads(ln) for p in (rundir / "k2" / "clients").glob("history-client-*.jsonl")
           for ln in p.read_text().splitlines() if ln.strip()]
    t_kill = timeline[0]["t_ms"]
    late_ok = [o for o in ops if o["ok"] and o["t0"] > t_kill + 2000]
    assert len(late_ok) > 100, "the run continued after the kill"
    assert "unavailability windows" in out and "TYO" in out
    assert processes_mentioning(str(rundir)) == []
