"""The peak search of bench-throughput (k2bench/bench.py), its tables and the Fig. 9 ratios
beside the paper's (analysis/throughput.py)."""
import os

import pytest

from analysis import paper, throughput
from conftest import SYSTEMS
from k2bench import bench, cpu


def p(threads, ops, p99=300.0, degraded=False):
    return {"threads": threads, "ops_per_s": ops, "rot_p99_ms": p99, "degraded": degraded,
            "lateness_p99_ms": 9.0 if degraded else 1.0}


def test_the_climb_goes_on_while_throughput_grows_and_latency_holds():
    assert bench.stop_reason([p(4, 100)]) is None
    assert bench.stop_reason([p(4, 100), p(16, 400), p(48, 390)]) is None  # within 5% of the best


def test_the_climb_stops_when_throughput_falls():
    why = bench.stop_reason([p(4, 100), p(16, 400), p(48, 300)])
    assert why and "fell" in why


def test_the_climb_stops_when_p99_passes_five_times_its_low_load_value():
    why = bench.stop_reason([p(4, 100, 200), p(16, 400, 1001)])
    assert why and "5x" in why
    assert bench.stop_reason([p(4, 100, 200), p(16, 400, 999)]) is None


def test_a_degraded_point_stops_the_climb_and_is_never_the_peak():
    pts = [p(4, 100), p(16, 400), p(48, 900, degraded=True)]
    assert "degraded" in bench.stop_reason(pts)
    assert bench.peak_of(pts)["threads"] == 16


def test_the_ratio_table_names_each_order_and_where_it_differs_from_the_papers():
    def climb(setting, system, ops, disturbed=False, stop="emulation degraded"):
        c = bench.Climb(setting, system)
        c.peak, c.disturbed, c.stop = {"ops_per_s": ops, "cpu": None}, disturbed, stop
        return c
    climbs = [climb("default", "k2", 4_862), climb("default", "rad", 4_895), climb("default", "paris-star", 3_957),
              climb("zipf 1.4", "k2", 5_448), climb("zipf 1.4", "rad", 3_327, disturbed=True),
              climb("f=3", "k2", 3_625), climb("f=3", "rad", 3_437)]
    rows = {r[0]: r for r in throughput.ratio_rows(climbs, ["default", "zipf 1.4", "f=3", "f=1"])}
    assert rows["default"] == ("default", "0.99", "-", "1.68", "tie / K2 ahead: DIFFERS", "1.23")
    # a DISTURBED peak is starred and its order not judged; so is a climb that ran out
    assert rows["zipf 1.4"][1] == "1.64*" and rows["zipf 1.4"][4] == "not judged: RAD not a peak"
    assert rows["f=3"][4] == "tie / tie"  # 1.05 here, 53.7/51.9 = 1.03 in the paper
    assert rows["f=1"][1:] == ("-", "-", "1.80", "-", "-")
    climbs[0].stop = None  # K2's default climb reached the ladder's top
    assert throughput.ratio_rows(climbs, ["default"])[0][4] == "not judged: K2 not a peak"
    climbs[0].stop = "emulation degraded"
    climbs[4] = climb("zipf 1.4", "rad", 3_327)
    assert throughput.ratio_rows(climbs, ["zipf 1.4"])[0][4] == "K2 ahead / K2 ahead"


def test_the_ratio_table_is_read_back_from_the_runs_throughput_json(tmp_path, capsys):
    import json
    climbs = []
    for system, ops in (("k2", 4_862), ("rad", 4_895), ("paris-star", 3_957)):
        c = bench.Climb("default", system)
        c.peak, c.stop = {"ops_per_s": ops, "cpu": None}, "emulation degraded"
        climbs.append(c)
    (tmp_path / "throughput.json").write_text(json.dumps({"settings": ["default"],
                                                          "climbs": [c.as_json() for c in climbs]}))
    settings, back = throughput.climbs_of(tmp_path)
    assert settings == ["default"] and [c.is_peak for c in back] == [True, True, True]
    assert throughput.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tie / K2 ahead: DIFFERS" in out and "1.23" in out
    with pytest.raises(SystemExit, match="throughput.json not found"):
        throughput.climbs_of(tmp_path / "nowhere")


def test_ratios_and_the_papers():
    assert paper.fig9_ratio("default") == pytest.approx(41.6 / 24.8)
    assert paper.fig9_ratio("read-only") is None  # Fig. 8a only: no peak in Fig. 9
    assert bench.ratio({"ops_per_s": 300}, {"ops_per_s": 200}) == 1.5
    assert bench.ratio({"ops_per_s": 300}, None) is None
    assert all(s in bench.FIG9_SETTINGS for s in bench.SETTINGS)


def test_the_cpu_rows_give_shares_cores_cost_per_operation_and_memory():
    acc = {"window_s": 10.0, "cores": 2, "cpu_s": 15.0, "machine_share": 0.75,
           "roles": {"servers": dict.fromkeys(cpu.CATEGORIES, 0.0) | {"server protocol": 5.0, "GC": 5.0},
                     "clients": dict.fromkeys(cpu.CATEGORIES, 0.0) | {"transport (gRPC/Netty)": 5.0}},
           "memory_mb": {"servers": {"processes": 1, "peak_rss_mb_max": 900, "peak_rss_mb_sum": 900}}}
    peak = bench.Climb("default", "k2")
    peak.peak = {"ops_per_s": 1500.0, "cpu": acc}
    other = bench.Climb("zipf 0.9", "k2")
    other.peak = {"ops_per_s": 1.0, "cpu": acc}
    cats, rows = bench.cpu_rows([peak, other, bench.Climb("default", "rad")])
    assert cats == cpu.CATEGORIES and [s for s, _ in rows] == ["k2"]
    r = rows[0][1]
    assert r["shares"]["server protocol"] == pytest.approx(1 / 3) and r["shares"]["GC"] == pytest.approx(1 / 3)
    assert r["cores"] == pytest.approx(1.5) and r["per_op_ms"] == pytest.approx(1.0)  # 15 s / 15,000 ops
    assert r["memory_mb"]["servers"]["peak_rss_mb_max"] == 900


class FakeOrchestrator:
    """Runs a point by writing the summary a system would give: 70 ops/s per thread per
    datacenter, degraded above ``limit`` threads per datacenter, and where ``steal(run
    directory name, threads)`` (the hypervisor's share of the machine's time there) is
    above 2%."""

    def __init__(self, limit, steal=lambda name, threads: 0.0, stolen_is_late=True, stall=lambda name, threads: 0):
        self.limit, self.steal, self.stolen_is_late, self.stall, self.runs = limit, steal, stolen_is_late, stall, []

    def run(self, step, sub, resume):
        import json
        from k2bench.orchestrator import trial_dir
        sub.mkdir(parents=True, exist_ok=True)
        for t in step["sweep"][bench.AXIS]:
            d = trial_dir(sub, step["systems"][0], f"threads_per_dc={t}", 1, 1)
            if (d / "summary.json").exists():
                continue  # resumed
            self.runs.append(t)
            d.mkdir(parents=True)
            stolen, stalled = self.steal(sub.name, t), self.stall(sub.name, t)
            late = 6.0 if t > self.limit or (self.stolen_is_late and stolen > 0.02) or stalled else 1.0
            (d / "summary.json").write_text(json.dumps({
                "throughput_ops_per_s": 70.0 * t, "ops": {"rot": {"latency_ms": {"p99": 280.0}}},
                "emulation_lateness_ms": {"worst_p99": late, "degraded": late > 5},
                "cpu": {"machine_s": {"user": 20 * (1 - stolen), "idle": 0.0, "steal": 20 * stolen}},
                "window_ms": [1_060_000, 1_075_000],  # seconds 60-74 of the run
                "timeseries": stalled_series(78, range(62, 62 + stalled))}))
        (sub / "manifest.json").write_text(json.dumps({"trials": []}))
        return 0


def stalled_series(seconds, zeros, rate=120):
    """A run's operations per second from origin 1,000,000 ms: ``rate``, 0 in ``zeros``, the last second cut short."""
    ops = [0 if t in zeros else rate for t in range(seconds)]
    return {"origin_ms": 1_000_000, "t_s": list(range(seconds)), "ops_per_s": ops[:-1] + [rate // 5]}


def test_a_stall_is_the_windows_seconds_without_an_operation_when_the_run_had_many():
    def summary(zeros, rate=120):
        return {"window_ms": [1_060_000, 1_075_000], "timeseries": stalled_series(78, zeros, rate)}
    assert bench.stalled_seconds(summary(range(62, 73))) == 11, "most of the window: the run's median decides"
    assert bench.stalled_seconds(summary([3, 5, 59, 75])) == 0, "outside the window"
    assert bench.stalled_seconds(summary([60, 74])) == 2, "its first and last whole seconds"
    assert bench.stalled_seconds(summary([62], rate=9)) == 0, "a run this slow has empty seconds of its own"
    assert bench.stalled_seconds({"window_ms": [0, 1]}) == 0 and bench.stalled_seconds({}) == 0
    q = bench.point_record({"throughput_ops_per_s": 10.0, "ops": {"rot": {"latency_ms": {"p99": 1.0}}}}
                           | summary(range(62, 65)), 4, "d")
    assert q["stalled_s"] == 3 and bench.disturbed(q) and "in 3 s of the window" in bench.disturbance(q)


def test_a_point_where_every_client_stalled_is_measured_again_and_a_system_that_always_stalls_is_no_peak(tmp_path):
    """16 threads/DC stalls (11 s without an operation) once: measured again, it passes and the
    climb goes on. A system stalling at 16 in every attempt: its climb is flagged, the stall named."""
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8, 16, 24, 32]},
           "workload": {}, "topology": {}, "clients": {}}
    orch = FakeOrchestrator(limit=21, stall=lambda name, t: 11 if (name, t) == ("default", 16) else 0)
    said = []
    c = bench.climb(orch, exp, tmp_path / "once", "default", "rad", said.append, {})
    assert orch.runs == [4, 8, 16, 16, 24, 20, 22] and c.as_json()["is_peak"] and c.peak["threads"] == 20
    at16 = next(q for q in c.points if q["threads"] == 16)
    assert at16["stalled_s"] == 0 and at16["disturbed_attempts"][0]["stalled_s"] == 11
    assert any("stalled 11 s" in s for s in said)
    from k2bench.cli.bench import _attempt
    assert _attempt(at16["disturbed_attempts"][0]) == "steal 0.0%, stalled 11 s" and _attempt({}) == "n/a"
    assert any("no operation completed in 11 s of the window" in s and "(1 of 2)" in s for s in said)
    always = FakeOrchestrator(limit=100, stall=lambda name, t: 11 if t == 16 else 0)
    c = bench.climb(always, exp, tmp_path / "always", "default", "rad", lambda _: None, {})
    assert always.runs == [4, 8, 16, 16, 16, 12, 14]
    assert c.disturbed and not c.as_json()["is_peak"] and "every client stood still" in c.stop
    assert "in each of 3 attempts: DISTURBED, not a peak" in c.stop


def test_the_step_that_stopped_the_climb_is_halved_and_a_passing_point_in_it_is_the_peak(tmp_path):
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8, 16, 24, 32]},
           "workload": {}, "topology": {}, "clients": {}}
    orch = FakeOrchestrator(limit=21)
    said = []
    c = bench.climb(orch, exp, tmp_path, "default", "k2", said.append, {})
    # ladder 4, 8, 16, 24 (degraded: stop); then 20 (passes), then 22 (degraded); 32 never runs
    assert orch.runs == [4, 8, 16, 24, 20, 22]
    assert "degraded at 24" in c.stop
    assert c.peak["threads"] == 20 and c.peak["ops_per_s"] == 1400
    assert [q["threads"] for q in c.points] == [4, 8, 16, 20, 22, 24]
    assert [q.get("refinement", False) for q in c.points] == [False, False, False, True, True, False]
    # a narrow step is not split; nor more than twice
    assert bench.refinement(16, 19, 0) is None and bench.refinement(16, 24, 2) is None
    assert bench.refinement(16, 24, 0) == 20


def test_a_climb_without_a_stop_is_not_refined(tmp_path):
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8]}, "workload": {}, "topology": {}, "clients": {}}
    orch = FakeOrchestrator(limit=100)
    c = bench.climb(orch, exp, tmp_path, "default", "k2", lambda _: None, {})
    assert orch.runs == [4, 8] and c.stop is None and c.peak["threads"] == 8


def test_a_resumed_climb_reads_its_measured_points_and_runs_only_the_rest(tmp_path):
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8, 16, 24, 32]},
           "workload": {}, "topology": {}, "clients": {}}
    first = FakeOrchestrator(limit=21)
    done = bench.climb(first, exp, tmp_path, "default", "k2", lambda _: None, {})
    # interrupted after 16: its summary gone, as if the point never finished
    import shutil
    from k2bench.orchestrator import trial_dir
    shutil.rmtree(trial_dir(tmp_path / "default", "k2", "threads_per_dc=16", 1, 1))
    again = FakeOrchestrator(limit=21)
    c = bench.climb(again, exp, tmp_path, "default", "k2", lambda _: None, {})
    assert again.runs == [16]  # nothing else is measured twice
    assert c.stop == done.stop and c.peak == done.peak and c.points == done.points


def test_a_climb_that_ran_out_of_ladder_continues_up_a_taller_one(tmp_path):
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8, 16]},
           "workload": {}, "topology": {}, "clients": {}}
    short = bench.climb(FakeOrchestrator(limit=40), exp, tmp_path, "default", "k2", lambda _: None, {})
    assert short.stop is None and short.peak["threads"] == 16  # NOT A PEAK: the ladder ran out
    taller = exp | {"sweep": {bench.AXIS: [4, 8, 16, 32, 64]}}
    again = FakeOrchestrator(limit=40)
    c = bench.climb(again, taller, tmp_path, "default", "k2", lambda _: None, {})
    # the points measured before are read, not run again; 64 is degraded, its step halved twice
    assert again.runs == [32, 64, 48, 40]
    assert "degraded" in c.stop and c.peak["threads"] == 40


def test_resume_accepts_its_own_run_and_refuses_others_with_one_line(tmp_path):
    import pathlib

    from k2bench import experiment, rundir
    from k2bench.errors import ConfigError
    workloads = pathlib.Path(__file__).resolve().parents[1] / "workloads"
    path = experiment.find(workloads, "bench-throughput")
    exp = experiment.resolve(experiment.load_file(path), path.stem, SYSTEMS)
    # as the bench saves it when it starts: a genuine resume must match after the JSON round trip
    rundir.write_json(tmp_path / bench.BENCH_JSON, {"experiment": exp})
    bench.check_resume(tmp_path, exp)
    tao = experiment.find(workloads, "tao")  # int-keyed distributions become string keys in JSON
    tao_exp = experiment.resolve(experiment.load_file(tao), tao.stem, SYSTEMS)
    rundir.write_json(tmp_path / bench.BENCH_JSON, {"experiment": tao_exp})
    bench.check_resume(tmp_path, tao_exp)

    changed = exp | {"workload": exp["workload"] | {"keys": exp["workload"]["keys"] + 1}}
    rundir.write_json(tmp_path / bench.BENCH_JSON, {"experiment": exp})
    with pytest.raises(ConfigError, match="another bench-throughput experiment"):
        bench.check_resume(tmp_path, changed)
    # a ladder extended at the top continues the climbs; any other ladder change is refused
    ladder = exp["sweep"][bench.AXIS]
    taller = exp | {"sweep": {bench.AXIS: ladder + [ladder[-1] * 2]}}
    grew = bench.check_resume(tmp_path, taller)
    assert grew and str(ladder[-1] * 2) in grew
    for other in ([ladder[0] + 1] + ladder[1:], ladder[:-1]):
        with pytest.raises(ConfigError, match="another bench-throughput experiment"):
            bench.check_resume(tmp_path, exp | {"sweep": {bench.AXIS: other}})
    with pytest.raises(ConfigError, match="another bench-throughput experiment"):  # and nothing else with it
        bench.check_resume(tmp_path, changed | {"sweep": taller["sweep"]})
    (tmp_path / bench.BENCH_JSON).write_text("{not json")
    with pytest.raises(ConfigError, match="unreadable"):
        bench.check_resume(tmp_path, exp)
    with pytest.raises(ConfigError, match="not a bench-throughput run directory"):
        bench.check_resume(tmp_path / "elsewhere", exp)


def _summary(ops_per_s, server_threads_s, protocol_s, local, wan, cpu_s=15.0):
    roles = {"servers": dict.fromkeys(cpu.CATEGORIES, 0.0) | {"server protocol": protocol_s}}
    return {"throughput_ops_per_s": ops_per_s, "measured_seconds": 10.0,
            "ops": {"rot": {"latency_ms": {"p99": 280.0}}},
            "emulation_lateness_ms": {"worst_p99": 1.0, "degraded": False,
                                      "classes": {"local": {"count": local}, "wan": {"count": wan}}},
            "cpu": {"window_s": 10.0, "cores": 2, "cpu_s": cpu_s, "machine_share": cpu_s / 20, "roles": roles,
                    "server_threads_s": server_threads_s}}


TOPO = {"datacenters": ["VA", "CA"], "servers_per_dc": 2}


def test_an_operations_cost_names_the_busiest_server_and_bounds_the_peak_by_it():
    k2 = bench.point_record(_summary(1000.0, {"0": 1.0, "1": 4.0, "2": 2.0, "3": 1.0}, 8.0, 200_000, 50_000),
                            44, "d", TOPO)
    assert k2["messages_per_op"] == {"local": 20.0, "wan": 5.0}  # of 10,000 operations in the window
    assert list(k2["cpu"]["server_threads_s"]) == ["VA:0", "VA:1", "CA:0", "CA:1"]
    c = bench.op_costs(k2)
    assert c["cpu_ms_per_op"] == pytest.approx(1.5) and c["protocol_ms_per_op"] == pytest.approx(0.8)
    assert c["busiest_server"] == "VA:1" and c["busiest_core_share"] == pytest.approx(0.4)
    assert c["mean_core_share"] == pytest.approx(0.2)
    assert c["busiest_ops_per_core"] == pytest.approx(2500)  # 10,000 operations on 4 CPU s of one core
    assert "wakeups_per_op" not in c  # an accounting without context switches
    switched = k2 | {"cpu": k2["cpu"] | {"switches": {"servers": {"server protocol": {"voluntary": 30_000, "involuntary": 9},
                                                                  "GC": {"voluntary": 5_000, "involuntary": 0}}}}}
    assert bench.op_costs(switched)["wakeups_per_op"] == pytest.approx(3.5)
    assert "kernel_share" not in c and "machine_idle_share" not in c  # an accounting without them
    split = k2 | {"cpu": k2["cpu"] | {"kernel_s": {"servers": {"server protocol": 3.0, "GC": 0.0}},
                                      "machine_s": {"user": 10.0, "nice": 4.0, "system": 3.0, "idle": 2.0,
                                                    "irq": 0.0, "steal": 1.0}}}
    sc = bench.op_costs(split)
    assert sc["kernel_share"] == pytest.approx(3.0 / 15.0)  # of the JVMs' 15 CPU s
    assert "page_faults_per_op" not in sc  # an accounting without page faults
    faulted = k2 | {"cpu": k2["cpu"] | {"minor_faults": {"servers": 256_000, "clients": 4_000}}}
    assert bench.op_costs(faulted)["page_faults_per_op"] == pytest.approx(26.0)  # 260,000 over 10,000 ops
    assert sc["machine_idle_share"] == pytest.approx(0.1) and sc["machine_steal_share"] == pytest.approx(0.05)
    # RAD: faster here, but one server does half of all protocol work
    assert c["messages_by_type"] is None  # a summary without per-type counts
    typed = bench.point_record(_summary(1000.0, {}, 8.0, 1, 1) | {"messages": {
        "local": {"ReadRequest": {"count": 20_000, "per_op": 2.0, "mean_bytes": 60.0}},
        "wan": {"RemoteRead": {"count": 3_000, "per_op": 0.3, "mean_bytes": 90.0}}}}, 4, "d")
    assert bench.op_costs(typed)["messages_by_type"] == {"local": {"ReadRequest": 2.0}, "wan": {"RemoteRead": 0.3}}
    rad = bench.point_record(_summary(2000.0, {"0": 1.0, "1": 1.0, "2": 8.0, "3": 1.0}, 11.0, 10, 10), 144, "d", TOPO)
    assert bench.ratio(k2, rad) == pytest.approx(0.5)
    assert bench.busiest_server_ratio(k2, rad) == pytest.approx(2500 / 2500)
    assert bench.op_costs(rad)["busiest_server"] == "CA:0"
    # a point measured before per-server accounting (or without topology) still has its totals
    old = bench.point_record(_summary(1000.0, {}, 8.0, 1, 1) | {"emulation_lateness_ms": {}}, 4, "d")
    assert old["messages_per_op"] is None and "busiest_server" not in bench.op_costs(old)
    assert old["lateness_paths_p99_ms"] is None and k2["lateness_paths_p99_ms"] is None  # no paths recorded
    paths = {"wan:timer": {"p99": 3.0, "count": 9}, "wan:dispatcher": {"p99": 4.5, "count": 2}}
    late = _summary(1000.0, {}, 8.0, 1, 1)
    late["emulation_lateness_ms"] |= {"paths": paths}
    assert bench.point_record(late, 4, "d")["lateness_paths_p99_ms"] == {"wan:timer": 3.0, "wan:dispatcher": 4.5}
    assert bench.busiest_server_ratio(k2, old) is None and bench.op_costs(None) is None


class RatedOrchestrator:
    """Writes each point as a system of a given rate per thread would, with its CPU per
    server: k2 degrades above 20 threads/DC, rad above 40."""
    RATE = {"k2": (50.0, 20), "rad": (20.0, 40), "paris-star": (30.0, 40)}

    def __init__(self, env, progress):
        pass

    def run(self, step, sub, resume):
        import json
        from k2bench.orchestrator import trial_dir
        system = step["systems"][0]
        rate, limit = self.RATE[system]
        for t in step["sweep"][bench.AXIS]:
            d = trial_dir(sub, system, f"threads_per_dc={t}", 1, 1)
            if (d / "summary.json").exists():
                continue
            d.mkdir(parents=True)
            (d / "topology.yaml").write_text("datacenters: [VA, CA, SP, LDN, TYO, SG]\nservers_per_dc: 2\n")
            busiest = 3.0 if system == "rad" else 1.0
            s = _summary(rate * t, {str(i): busiest if i == 5 else 0.5 for i in range(12)}, 8.0, 1000 * t, 100 * t)
            s["emulation_lateness_ms"] |= {"worst_p99": 6.0 if t > limit else 1.0, "degraded": t > limit}
            s["messages"] = {"local": {"ReadRequest": {"count": 10, "per_op": 1.5, "mean_bytes": 60.0},
                                       "ReadReply": {"count": 10, "per_op": 1.25, "mean_bytes": 600.0}}}
            (d / "summary.json").write_text(json.dumps(s))
        (sub / "manifest.json").write_text(json.dumps({"trials": []}))
        return 0


def test_the_bench_prints_each_peaks_costs_and_the_ratio_by_busiest_server_beside_the_papers(
        jar, tmp_path, monkeypatch, capsys):
    import json
    import signal

    from k2bench import cli
    handler = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(cli.bench, "Orchestrator", RatedOrchestrator)
    monkeypatch.setenv("COLUMNS", "300")
    code = cli.main(["--jar", str(jar), "bench-throughput", "--settings", "default", "--no-echo",
                     "--runs", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads(next(tmp_path.glob("*_bench-throughput/throughput.json")).read_text())
    peaks = {c["system"]: c for c in report["climbs"]}
    # k2 peaks at 20 threads/DC (1,000 ops/s), rad at 40 (800): 1.25 here
    assert peaks["k2"]["peak"]["threads"] == 20 and peaks["rad"]["peak"]["threads"] == 40
    k2c, radc = peaks["k2"]["peak_costs"], peaks["rad"]["peak_costs"]
    assert k2c["busiest_server"] == "SP:1" and k2c["messages_per_op"] == {"local": 2.0, "wan": 0.2}
    # each server its own core: k2 10,000 ops / 1 s = 10,000 per core; rad 8,000 / 3 s
    assert k2c["busiest_ops_per_core"] == pytest.approx(10_000) and radc["busiest_ops_per_core"] == pytest.approx(8000 / 3)
    assert "what an operation costs at each peak" in out and "SP:1: 30.0%" in out
    # the machine's table: 15 CPU s in a 10 s window; no kernel split or machine time recorded
    assert "the machine at each peak" in out
    machine_rows = [ln for ln in out.splitlines() if "default" in ln and "1.50" in ln and ln.count("-") >= 3]
    assert len(machine_rows) == 3, out  # k2, rad, paris-star
    assert "default / rad: messages per operation by type: local ReadRequest 1.50, ReadReply 1.25" in out
    assert "Fig. 9 ratios: python -m analysis.throughput" in out  # the paper's side is analysis's
    run = next(tmp_path.glob("*_bench-throughput"))
    assert throughput.main([str(run)]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if "default" in ln and "1.68" in ln]
    assert len(rows) == 1 and "1.25" in rows[0] and "3.75" in rows[0], out  # here; by busiest server (10,000 / 2,667); paper
    assert signal.getsignal(signal.SIGTERM) is handler  # the bench's own handler is gone


class TermOrchestrator(RatedOrchestrator):
    """SIGTERM arrives while rad's climb runs, outside any orchestrator handler."""

    def run(self, step, sub, resume):
        if step["systems"][0] == "rad":
            import os
            import signal
            os.kill(os.getpid(), signal.SIGTERM)
        return super().run(step, sub, resume)


def test_sigterm_stops_the_bench_like_ctrl_c_with_the_climbs_so_far_written(jar, tmp_path, monkeypatch):
    import json
    import signal

    from k2bench import cli
    monkeypatch.setattr(cli.bench, "Orchestrator", TermOrchestrator)
    handler = signal.getsignal(signal.SIGTERM)
    code = cli.main(["--jar", str(jar), "bench-throughput", "--settings", "default", "--no-echo",
                     "--runs", str(tmp_path)])
    assert code == 130 and signal.getsignal(signal.SIGTERM) is handler
    report = json.loads(next(tmp_path.glob("*_bench-throughput/throughput.json")).read_text())
    assert report["interrupted"] and [c["system"] for c in report["climbs"]] == ["k2"]


def test_a_point_the_hypervisor_disturbed_is_measured_again_and_the_climb_goes_on(tmp_path):
    """16 threads/DC fails (degraded) while 10% of the machine's time was stolen: it is
    measured again in a run directory of its own, passes, and the climb continues to the
    system's own limit; the disturbed attempt is kept in the record."""
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8, 16, 24, 32]},
           "workload": {}, "topology": {}, "clients": {}}
    orch = FakeOrchestrator(limit=21, steal=lambda name, t: 0.10 if (name, t) == ("default", 16) else 0.001)
    said, trials = [], {}
    c = bench.climb(orch, exp, tmp_path, "default", "k2", said.append, trials)
    assert orch.runs == [4, 8, 16, 16, 24, 20, 22]
    assert "degraded at 24" in c.stop and "DISTURBED" not in c.stop and not c.disturbed
    assert c.peak["threads"] == 20 and c.as_json()["is_peak"]
    at16 = next(q for q in c.points if q["threads"] == 16)
    assert not at16["degraded"] and at16["dir"].startswith("default.retry1/")
    assert at16["disturbed_attempts"] == [{"ops_per_s": 1120.0, "rot_p99_ms": 280.0, "lateness_p99_ms": 6.0,
                                           "degraded": True, "dir": "default/k2/threads_per_dc=16",
                                           "steal_share": 0.1}]
    assert set(trials) == {"default", "default.retry1"}
    assert any("10.0% of the machine's time at 16 threads/DC" in s and "(1 of 2)" in s for s in said)
    # resumed, every attempt is read back, none run again
    again = FakeOrchestrator(limit=21, steal=lambda name, t: 0.10 if (name, t) == ("default", 16) else 0.001)
    replay = bench.climb(again, exp, tmp_path, "default", "k2", lambda _: None, {})
    assert again.runs == [] and replay.points == c.points and replay.peak == c.peak


def test_a_climb_that_stops_on_a_point_disturbed_in_every_attempt_is_no_peak(tmp_path):
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8, 16, 24, 32]},
           "workload": {}, "topology": {}, "clients": {}}
    orch = FakeOrchestrator(limit=100, steal=lambda name, t: 0.10 if t == 16 else 0.0)
    c = bench.climb(orch, exp, tmp_path, "default", "k2", lambda _: None, {})
    assert orch.runs == [4, 8, 16, 16, 16, 12, 14]  # three attempts, then the step is refined
    assert c.disturbed and "DISTURBED, not a peak" in c.stop and "in each of 3 attempts" in c.stop
    assert c.peak["threads"] == 14 and not c.as_json()["is_peak"]


def test_a_disturbed_point_that_passes_every_rule_is_not_measured_again(tmp_path):
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8]}, "workload": {}, "topology": {}, "clients": {}}
    orch = FakeOrchestrator(limit=100, steal=lambda name, t: 0.10 if t == 8 else 0.0, stolen_is_late=False)
    c = bench.climb(orch, exp, tmp_path, "default", "k2", lambda _: None, {})
    assert orch.runs == [4, 8] and c.peak["threads"] == 8 and not c.disturbed
    assert bench.steal_share(c.points[1]) == pytest.approx(0.10) and bench.disturbed(c.points[1])
    assert "disturbed_attempts" not in c.points[1]
    assert bench.steal_share({"cpu": None}) is None and not bench.disturbed({"cpu": None})


def test_a_refinement_point_disturbed_in_every_attempt_flags_the_climb(tmp_path):
    """The ladder stops at 24 (the system's own limit, undisturbed); in its refinement 20
    fails in all three attempts only because CPU was stolen: the peak (18) may lie too low."""
    exp = {"name": "bench-throughput", "sweep": {bench.AXIS: [4, 8, 16, 24, 32]},
           "workload": {}, "topology": {}, "clients": {}}
    orch = FakeOrchestrator(limit=21, steal=lambda name, t: 0.10 if t == 20 else 0.0)
    trials = {}
    c = bench.climb(orch, exp, tmp_path, "default", "k2", lambda _: None, trials)
    assert orch.runs == [4, 8, 16, 24, 20, 20, 20, 18]  # three attempts at 20, then 18 between 16 and 20
    assert c.disturbed and not c.as_json()["is_peak"] and c.peak["threads"] == 18
    assert "degraded at 24" in c.stop and "20 threads/DC failed while the hypervisor took 10.0%" in c.stop
    assert set(trials) == {"default", "default.retry1", "default.retry2"}


def test_a_retry_directorys_manifest_names_only_the_systems_measured_there(tmp_path):
    import json
    sub = tmp_path / "default.retry1"
    sub.mkdir()
    (sub / "manifest.json").write_text(json.dumps({"trials": []}))
    # entries as the orchestrator writes them: relative to the setting's own directory
    trials = [{"system": "rad", "dir": "rad/threads_per_dc=48", "point_values": {bench.AXIS: 48}}]
    bench.finish_manifest(sub, {"systems": ["k2", "rad", "paris-star"], "sweep": {}}, trials)
    m = json.loads((sub / "manifest.json").read_text())
    assert m["systems"] == ["rad"] and m["config"]["sweep"] == {bench.AXIS: [48]}
    assert m["status"] == "failed", "the trial's directory is not there"
    (sub / "rad" / "threads_per_dc=48").mkdir(parents=True)
    bench.finish_manifest(sub, {"systems": ["k2", "rad", "paris-star"], "sweep": {}}, trials)
    assert json.loads((sub / "manifest.json").read_text())["status"] == "completed"


def test_a_step_resumed_over_earlier_points_adds_no_second_entry_for_them():
    """Each climb step rewrites its manifest with every point so far; the points it skipped
    lack the clients' start their own step recorded. The setting's manifest lists each
    trial directory once, with what every step knew of it."""
    mine: list[dict] = []
    first = {"system": "k2", "dir": "k2/threads_per_dc=4", "point": "threads_per_dc=4"}  # as the orchestrator writes
    bench.collect_trials(mine, [first | {"start": {"t0_ms": 1}}])
    second = {"system": "k2", "dir": "k2/threads_per_dc=8", "point": "threads_per_dc=8"}
    bench.collect_trials(mine, [first, second | {"start": {"t0_ms": 2}}])
    assert [e["dir"] for e in mine] == [first["dir"], second["dir"]]
    assert mine[0]["start"] == {"t0_ms": 1} and mine[1]["start"] == {"t0_ms": 2}


class LadderOrchestrator(RatedOrchestrator):
    """Records every point's threads and warm-up, as the bench asked for them."""
    asked: list[tuple[str, int, int]] = []

    def run(self, step, sub, resume):
        new = [t for t in step["sweep"][bench.AXIS] if (system := step["systems"][0], t) not in
               {(s, x) for s, x, _ in LadderOrchestrator.asked}]
        LadderOrchestrator.asked += [(system, t, step["duration"]["warmup_s"]) for t in new]
        return super().run(step, sub, resume)


def test_quick_climbs_one_setting_on_its_own_coarser_ladder_with_one_refinement(jar, tmp_path, monkeypatch, capsys):
    """--quick takes workloads/bench-throughput-quick.yaml: k2 (degraded above 20 threads/DC)
    climbs 4, 32 (stop), then one refinement (18) and no second; the run says it is quick."""
    import json

    import yaml
    from k2bench import cli
    quick = yaml.safe_load((cli.REPO / "workloads" / f"{bench.QUICK}.yaml").read_text())
    assert quick["sweep"][bench.AXIS][:2] == [4, 32]  # the climb below assumes it
    import subprocess
    LadderOrchestrator.asked = []
    monkeypatch.setattr(cli.bench, "Orchestrator", LadderOrchestrator)
    echoed, real_run = [], subprocess.run

    def run(argv, **kw):  # the jar answers everything but the echo
        if "bench-echo" not in argv:
            return real_run(argv, **kw)
        echoed.append(argv)
        return subprocess.CompletedProcess(argv, 1, "", "no echo in this test")
    monkeypatch.setattr(subprocess, "run", run)
    code = cli.main(["--jar", str(jar), "bench-throughput", "--quick", "--runs", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert len(echoed) == 1 and "bench-echo" in echoed[0] and echoed[0][-len(bench.QUICK_ECHO):] == list(bench.QUICK_ECHO)
    k2 = [(t, w) for s, t, w in LadderOrchestrator.asked if s == "k2"]
    assert k2 == [(4, quick["duration"]["warmup_s"]), (32, quick["duration"]["warmup_s"]),
                  (18, quick["duration"]["warmup_s"])]
    report = json.loads(next(tmp_path.glob("*_bench-throughput-quick/throughput.json")).read_text())
    assert report["quick"] is True and report["settings"] == ["default"]
    assert {c["setting"] for c in report["climbs"]} == {"default"}
    assert "quick: default only" in out and "quick: coarse" in out
    assert throughput.main([str(next(tmp_path.glob("*_bench-throughput-quick")))]) == 0
    assert "quick bench" in capsys.readouterr().out


def test_quick_refuses_more_than_one_setting(jar, tmp_path, monkeypatch, capsys):
    from k2bench import cli
    monkeypatch.setattr(cli.bench, "Orchestrator", LadderOrchestrator)
    code = cli.main(["--jar", str(jar), "bench-throughput", "--quick", "--settings", "default,zipf 1.4",
                     "--no-echo", "--runs", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--settings" in err and "one setting" in err
    assert not list(tmp_path.iterdir())  # refused before a run directory was made
