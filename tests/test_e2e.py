"""End to end through the k2bench CLI: a tiny experiment on K2 and RAD, teardown on
Ctrl-C and on a crashed server, and bad input stopping before anything starts."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
import yaml

from conftest import ROOT

TINY = ROOT / "tests" / "fixtures" / "tiny.yaml"


def k2bench(*args, **kw):
    return subprocess.run([sys.executable, "-m", "k2bench.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=kw.pop("timeout", 600), **kw)


def _as_in_a_terminal():
    # A shell without job control starts background commands with SIGINT ignored, and Python
    # then leaves Ctrl-C ignored; in a terminal it is not. Test what a user at a terminal gets,
    # however the test suite itself was started.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(runs: pathlib.Path, *args):
    return subprocess.Popen([sys.executable, "-m", "k2bench.cli", "run", str(TINY), "--runs", str(runs), *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (e.g. a run directory)."""
    out = []
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if text in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                pass
    return [p for p in out if p != os.getpid()]


def wait_for(predicate, timeout_s, what):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_tiny_experiment_leaves_a_complete_run_directory(jar, tmp_path):
    r = k2bench("run", str(TINY), "--runs", str(tmp_path))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    run = (tmp_path / "latest").resolve()
    assert run.parent == tmp_path and run.name.endswith("_tiny")
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "completed" and m["experiment"] == "tiny"
    assert m["systems"] == ["k2", "rad"]
    assert len(m["git_commit"]) == 40 and isinstance(m["git_dirty"], bool)
    assert m["started"] < m["stopped"]
    assert m["config"]["workload"]["keys"] == 300, "the resolved configuration is saved"
    rtt = m["measured_rtt_ms"]
    assert rtt["VA"]["CA"]["configured"] == pytest.approx(6.0) and rtt["VA"]["CA"]["p50"] >= 6.0
    for system in m["systems"]:
        d = run / system
        s = json.loads((d / "summary.json").read_text())
        assert s["system"] == system and s["experiment"] == "tiny"
        assert s["ops"]["rot"]["count"] > 0 and s["errors"] == 0
        assert s["throughput_ops_per_s"] > 0
        assert len(list((d / "clients").glob("client-*.hlog"))) == 6
        assert (d / "topology.yaml").exists()
        assert len(list((d / "servers").glob("stats-*.json"))) == 6
        records = [json.loads(p.read_text()) for p in (d / "processes").glob("*.json")]
        names = {r["name"] for r in records}
        assert {f"server-{dc}" for dc in ("VA", "CA", "SP", "LDN", "TYO", "SG")} <= names
        assert {f"client-{dc}" for dc in ("VA", "SG")} <= names and {"load-VA"} <= names
        # loaders and clients inside their datacenter's server JVM (auto, no kill or pause)
        pids = {r["name"]: r["pid"] for r in records}
        assert all(pid == pids["server-" + n.split("-")[1]] for n, pid in pids.items() if n[:5] in ("load-", "clien"))
        assert s["server_processes"]["clients"] == "in_server" and s["server_processes"]["own_client_dcs"] == []
        # the clients below the servers, the transport (event loops started before any client) above
        nice = s["cpu"]["nice"]["servers"]
        assert nice["transport (gRPC/Netty)"] == [0] and nice["WAN dispatchers"] == [0], nice
        assert nice["client threads (YCSB, workload, history, histograms)"] == [4], nice
        for rec in records:
            assert rec["argv"] and rec["pid"] > 0 and rec["stopped"] >= rec["started"]
            assert (run / rec["stdout"]).exists() and (run / rec["stderr"]).exists(), "paths relative to the run"
            assert rec["exit_code"] in (0, 143, -15), rec
        if system == "k2":
            assert s["ops"]["rot"]["wan_rounds"]["2"] == 0 and s["ops"]["rot"]["wan_rounds"]["3"] == 0
        assert s["schedule_lag_ms"]["count"] > 0 and s["schedule_lag_ms"]["interval_ms"] == 200.0  # 2 threads, 10/s
        assert isinstance(s["warnings"], list)
        pending = s["replication_pending_at_end"]
        assert set(pending["by_dc"]) == {"VA", "CA", "SP", "LDN", "TYO", "SG"}
        assert pending["total"] == sum(pending["by_dc"].values())
        if system == "rad":
            assert s["cache"] is None, "no cache"
        else:  # the clients' non-replica key reads in the window
            assert 0 < s["cache"]["nonreplica_key_reads"] and 0 <= s["cache"]["hit_rate"] <= 1
    assert "summary (latencies in ms)" in r.stdout
    assert processes_mentioning(str(run)) == [], "no process of the run is left"


def test_ctrl_c_tears_everything_down_and_marks_the_run(jar, tmp_path):
    p = start(tmp_path)
    wait_for(lambda: any(tmp_path.glob("*/k2/logs/server-SG.out")) and
             "ready:" in next(tmp_path.glob("*/k2/logs/server-SG.out")).read_text(), 60, "servers up")
    run = next(tmp_path.glob("*_tiny"))
    assert processes_mentioning(str(run)), "servers are running"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, out + err
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "interrupted" and m["stopped"]
    assert processes_mentioning(str(run)) == [], "no orphan processes"


def test_a_crashed_server_fails_the_run_and_stops_the_rest(jar, tmp_path):
    p = start(tmp_path)
    wait_for(lambda: any(tmp_path.glob("*/k2/processes/client-VA.json")), 90, "clients started")
    run = next(tmp_path.glob("*_tiny"))
    victim = json.loads((run / "k2" / "processes" / "server-LDN.json").read_text())["pid"]
    os.kill(victim, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1, out + err
    m = json.loads((run / "manifest.json").read_text())
    assert m["status"] == "failed" and "server-LDN exited" in m["reason"]
    assert processes_mentioning(str(run)) == []


@pytest.mark.parametrize("change, field", [
    ({"systems": ["k2", "k7"]}, "systems[1]"),
    ({"workload": {"zipf": "high"}}, "workload.zipf"),
    ({"clients": {"threads": 4}}, "clients.threads"),
    ({"topology": {"file": "BROKEN"}}, "rtt_ms.VA.XX"),
])
def test_bad_input_stops_with_one_line_before_anything_starts(jar, tmp_path, change, field):
    exp = yaml.safe_load(TINY.read_text())
    for key, value in change.items():
        exp[key] = {**exp[key], **value} if isinstance(value, dict) else value
    if exp["topology"]["file"] == "BROKEN":  # a topology file of the user's, outside workloads/
        doc = yaml.safe_load((ROOT / "workloads" / "topologies" / "paper-local.yaml").read_text())
        doc["rtt_ms"]["VA"]["XX"] = 10
        exp["topology"]["file"] = str(tmp_path / "broken.yaml")
        (tmp_path / "broken.yaml").write_text(yaml.safe_dump(doc))
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(exp))
    r = k2bench("run", str(f), "--runs", str(tmp_path / "runs"), timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], r.stderr
    assert not (tmp_path / "runs").exists(), "nothing started, no run directory"


def test_an_unknown_experiment_lists_the_known_ones(jar):
    r = k2bench("run", "nosuch", timeout=120)
    assert r.returncode == 2 and "known:" in r.stderr and "smoke" in r.stderr


def test_resume_skips_completed_points(jar, tmp_path):
    exp = yaml.safe_load(TINY.read_text())
    exp["systems"] = ["k2"]
    exp["server"].pop("processes")  # one JVM: resuming is the point here, not the gRPC path
    exp["sweep"] = {"workload.zipf": [0.9, 1.4]}
    exp["duration"] = {"warmup_s": 0.5, "measure_s": 1, "cooldown_s": 0.5}  # what is kept matters, not how much
    f = tmp_path / "sweep.yaml"
    f.write_text(yaml.safe_dump(exp))
    runs = tmp_path / "runs"
    assert k2bench("run", str(f), "--runs", str(runs)).returncode == 0
    run = (runs / "latest").resolve()
    done, redo = run / "k2" / "zipf=0.9", run / "k2" / "zipf=1.4"
    kept = {p: p.stat().st_mtime_ns for p in done.rglob("*") if p.is_file()}
    # As if the run had been interrupted during the second point.
    (redo / "summary.json").unlink()
    r = k2bench("run", str(f), "--runs", str(runs), "--resume", str(run))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "skipping k2 zipf=0.9" in r.stdout
    assert {p: p.stat().st_mtime_ns for p in done.rglob("*") if p.is_file()} == kept, "done point untouched"
    assert json.loads((redo / "summary.json").read_text())["point"] == "zipf=1.4"
    assert json.loads((run / "manifest.json").read_text())["status"] == "completed"
    exp["workload"]["keys"] = 400
    f.write_text(yaml.safe_dump(exp))
    r = k2bench("run", str(f), "--runs", str(runs), "--resume", str(run))
    assert r.returncode == 2 and "different configuration" in r.stderr, "a changed experiment is not resumed"


def test_a_run_behind_its_schedule_says_so(jar, tmp_path):
    """One RAD client thread per datacenter paced at 40 ops/s (25 ms apart) over the paper's
    matrix, where a read-only transaction takes at least one 60 ms round trip: the thread
    cannot keep up on any machine, latencies include the queue, and the summary and the end
    table say so."""
    exp = {"description": "behind schedule", "systems": ["rad"],
           "topology": {"file": "topologies/paper-local.yaml", "servers_per_dc": 1, "rtt_scale": 1.0},
           "workload": {"keys": 300}, "server": {"heap_mb": 256, "jvm_args": ["-XX:TieredStopAtLevel=1"]},
           "clients": {"threads_per_dc": 1, "target_ops_per_s_per_dc": 40, "heap_mb": 256},
           "load": {"threads_per_dc": 2}, "duration": {"warmup_s": 1, "measure_s": 3, "cooldown_s": 1}}
    f = tmp_path / "behind.yaml"
    f.write_text(yaml.safe_dump(exp))
    r = k2bench("run", str(f), "--runs", str(tmp_path / "runs"), "--no-check")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    s = json.loads(((tmp_path / "runs" / "latest").resolve() / "rad" / "summary.json").read_text())
    lag = s["schedule_lag_ms"]
    assert lag["interval_ms"] == 25.0 and lag["count"] > 0 and lag["p99"] > 25.0, lag
    [w] = [w for w in s["warnings"] if w.startswith("clients ran behind their schedule")]
    assert f"schedule lag p99 {lag['p99']:.0f} ms > the 25 ms between a thread's operations" in w
    assert f"warning: rad: {w}" in r.stdout, r.stdout[-3000:]
    assert "schedule lag p50/p99" in r.stdout


@pytest.mark.parametrize("mode", ["in_server", "own"])
def test_clients_inside_the_server_jvm_or_in_their_own_run_a_checked_experiment(jar, tmp_path, mode):
    exp = yaml.safe_load(TINY.read_text())
    exp["systems"] = ["k2"]
    exp["server"]["processes"] = "per_host"
    exp["clients"]["processes"] = mode
    if mode == "in_server":
        exp["server"].pop("jvm_args", None)  # one server JVM's own default (ZGC, C2), as users run it
    f = tmp_path / "clients.yaml"
    f.write_text(yaml.safe_dump(exp))
    r = k2bench("run", str(f), "--runs", str(tmp_path / "runs"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    run = (tmp_path / "runs" / "latest").resolve()
    d = run / "k2"
    s = json.loads((d / "summary.json").read_text())
    assert s["server_processes"]["clients"] == mode and s["server_processes"]["split"] == "per_host"
    assert s["ops"]["rot"]["count"] > 0 and s["errors"] == 0 and s["throughput_ops_per_s"] > 0
    assert s["consistency"]["violations"] == 0 and s["consistency"]["checked_ops"] > 0
    assert len(list((d / "clients").glob("client-*.hlog"))) == 6
    # the client threads ran below the servers, the servers below the WAN emulation
    # (nice 4, 2, 0), in either mode
    nice = s["cpu"]["nice"]
    clients = nice["servers" if mode == "in_server" else "clients"]
    assert clients["client threads (YCSB, workload, history, histograms)"] == [4], nice
    assert nice["servers"]["server protocol"] == [2] and nice["servers"]["WAN dispatchers"] == [0], nice
    if mode == "own":  # a client JVM of its own runs at nice 4 throughout, its JVM's own threads aside
        assert clients["WAN dispatchers"] == [4], nice
    records = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in (d / "processes").glob("*.json")}
    server = records["servers"]
    for dc in ("VA", "CA", "SP", "LDN", "TYO", "SG"):
        c = records[f"client-{dc}"]
        assert (c["pid"] == server["pid"]) == (mode == "in_server"), "where the client ran"
        assert c["exit_code"] == 0 and c["first_op_ms"] is not None
        out = (run / c["stdout"]).read_text()
        assert "k2bench: clients ready" in out and "k2bench: first operation at" in out
        # each client's YCSB status lines went to its own file, not to the server's output
        assert "current ops/sec" in (run / c["stderr"]).read_text()
    assert "k2bench: clients ready" not in (run / server["stdout"]).read_text()
    assert not [p for p in processes_mentioning(str(run)) if p], "no process of the run is left"
