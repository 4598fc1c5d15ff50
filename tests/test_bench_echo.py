"""The transport's echo ceiling (launcher bench-echo), its line in the bench's output and
bench-throughput measuring an UNSTABLE ceiling again."""
from pathlib import Path

import pytest

from k2bench import bench
from test_bench import LadderOrchestrator


def test_the_echo_ceiling_climbs_to_saturation_and_measures_its_best_steps_again(jar, tmp_path):
    import json
    import subprocess
    out = tmp_path / "echo.json"
    r = subprocess.run(["java", "-jar", str(jar), "bench-echo", "--in-flight", "5,10,20", "--step-s", "2",
                        "--repeat-s", "2", "--repeats", "2", "--warmup-s", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    # So few requests in flight over a 60 ms RTT: the RTT, not the CPU, sets the rate, which
    # doubles with each step (~83, 167, 333/s): never saturated.
    assert [w["in_flight"] for w in doc["ladder"]] == [5, 10, 20]
    rates = [w["rpcs_per_s"] for w in doc["ladder"]]
    assert rates[0] < rates[1] < rates[2] and 250 < rates[2] < 400, rates
    assert doc["saturated"] is False and "NOT SATURATED" in r.stdout
    # the two best steps again; the larger concurrency is clearly faster, so it counts
    assert doc["in_flight"] == 20 and len(doc["repeats"]) == 2 and doc["configured_rtt_ms"] == 60
    assert doc["echo_rpcs_per_s"] == sorted(doc["repeats"])[1]
    assert 60 <= doc["rtt_ms"]["p50"] < 70 and "emulated RTT 60 ms" in r.stdout


def test_the_echo_ceiling_names_a_bad_ladder(jar):
    import subprocess
    r = subprocess.run(["java", "-jar", str(jar), "bench-echo", "--in-flight", "10,5"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--in-flight" in r.stderr and "increasing" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_echo_line_states_the_delay_the_windows_and_each_peak_against_it():
    echo = {"echo_rpcs_per_s": 140_000, "cores": 2, "in_flight": 11_000, "configured_rtt_ms": 60.0,
            "rtt_ms": {"p50": 74.6}, "repeats": [134_775, 140_000, 146_896], "saturated": True, "stable": True}
    k2 = bench.Climb("default", "k2")
    k2.peak = {"ops_per_s": 2800.0}
    other = bench.Climb("zipf 0.9", "k2")
    other.peak = {"ops_per_s": 9999.0}
    line = bench.echo_line(echo, [k2, other])
    assert line.startswith("echo ceiling: 140,000 RPC/s on 2 cores at 11,000 in flight (emulated RTT 60 ms, "
                           "measured p50 75 ms; windows 134,775, 140,000, 146,896)")
    assert line.endswith("not these ratios between days): k2 2,800 ops/s = 2.00%") and "9,999" not in line
    assert "peaks against it (gRPC over loopback" in line
    assert "UNSTABLE" not in line and "NOT SATURATED" not in line
    line = bench.echo_line(echo | {"saturated": False, "stable": False}, [])
    assert "NOT SATURATED UNSTABLE" in line and "peaks" not in line


@pytest.mark.parametrize("stable, kept", [([False, True, True], 1), ([False, False, False], 2), ([True], 0)])
def test_an_unstable_echo_ceiling_is_measured_again(jar, tmp_path, monkeypatch, capsys, stable, kept):
    """Every ratio divides by the echo ceiling: while its windows spread past 10% it is
    measured again, up to three attempts; the first stable one stands (else the last),
    with the earlier attempts listed in it and kept beside it."""
    import json
    import subprocess
    from k2bench import cli
    monkeypatch.setattr(cli.bench, "Orchestrator", LadderOrchestrator)
    LadderOrchestrator.asked = []
    echoed, real_run = [], subprocess.run

    def run(argv, **kw):
        if "bench-echo" not in argv:
            return real_run(argv, **kw)
        n = len(echoed)
        echoed.append(argv)
        rate = 100_000 + 1_000 * n
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(
            {"echo_rpcs_per_s": rate, "in_flight": 4000, "repeats": [rate, rate], "stable": stable[n],
             "saturated": True, "cores": 2, "configured_rtt_ms": 60, "rtt_ms": {"p50": 61}}))
        return subprocess.CompletedProcess(argv, 0, f"echo {rate}", "")
    monkeypatch.setattr(subprocess, "run", run)
    assert cli.main(["--jar", str(jar), "bench-throughput", "--quick", "--runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert len(echoed) == kept + 1 == len(stable[:kept + 1])
    d = next(tmp_path.glob("*_bench-throughput-quick"))
    echo = json.loads((d / "throughput.json").read_text())["echo"]
    assert echo["echo_rpcs_per_s"] == 100_000 + 1_000 * kept and echo["stable"] == stable[kept]
    assert [a["echo_rpcs_per_s"] for a in echo.get("unstable_attempts", [])] == [100_000 + 1_000 * i for i in range(kept)]
    assert sorted(p.name for p in d.glob("echo*.json")) == ["echo.json"] + [f"echo.retry{i}.json" for i in range(1, kept + 1)]
    assert ("attempt 2 of 3" in out) == (kept > 0)
    if kept:
        assert "measured again after UNSTABLE attempts" in bench.echo_line(echo, [])
