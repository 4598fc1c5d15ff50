"""The orchestrator's own faults and the clients' common start, without a JVM or SSH: the
lease keeper, the choice of the start time, the start skew check (Python stand-ins for the clients print the
first-operation line the Java workload prints), the fetch of every host's logs after a
failed trial, the configured-vs-measured RTT record, and what `k2bench run` checks of its
inputs before the orchestrator starts anything (run_experiment, with an orchestrator that
starts nothing). The remote processes' wrapper and watchdog: test_remote_wrapper.py."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from k2bench import experiment
from k2bench.deploy import LocalDeployment
from k2bench.errors import ConfigError, RunFailed
from k2bench.deploy.hosts import LocalHost, Proc
from k2bench.env import Env
from k2bench.orchestrator import Orchestrator
from k2bench.trial import Trial
from k2bench.trial.clients import CLIENTS_READY
from k2bench.trial.procs import fan_out
from k2bench.trial.rtt import rtt_check
from k2bench.trial.start import TEST_START_DELAY_ENV, choose_t0, pacing_spread_s, skew_failure, start_skew
from k2bench.experiment import ClientShare

from conftest import ORPHAN_GUARD, ROOT, SYSTEMS


# ------------------------------------------------------------------ the lease keeper

def test_a_host_whose_lease_refresh_hangs_holds_up_no_other_host():
    """The keeper refreshes each host on its own schedule: a host that takes 3 s to answer
    (its refreshes back to back) leaves the other refreshed every interval meanwhile."""
    import threading

    from k2bench.deploy.ssh import LeaseKeeper

    class Host:
        lease_s, unreachable = 2.0, None

        def __init__(self, hang_s):
            self.hang_s, self.refreshed = hang_s, []

        def refresh_lease(self):
            self.refreshed.append(time.time())
            threading.Event().wait(self.hang_s)
            return True

    slow, quick = Host(3.0), Host(0.0)
    with LeaseKeeper([slow, quick], 0.2):
        time.sleep(2.5)
    assert len(slow.refreshed) == 1, "one refresh in flight per host"
    gaps = [b - a for a, b in zip(quick.refreshed, quick.refreshed[1:])]
    assert len(quick.refreshed) >= 6 and max(gaps) < 1.0, quick.refreshed


# ------------------------------------------------------------------ the common start

def test_t0_leaves_twice_the_measured_fan_out_plus_a_margin():
    assert choose_t0(1000.0, 0.01) == 1001.0, "at least one second"
    assert choose_t0(1000.0, 2.0) == pytest.approx(1004.5)


def test_fan_out_writes_to_every_host_in_parallel_and_raises_the_first_error():
    import threading

    seen = []
    together = threading.Barrier(8, timeout=10)

    def meet(h):
        together.wait()  # passes only once all eight writes are in flight at the same time
        seen.append(h)

    # with fewer than eight at once the waits time out (BrokenBarrierError, raised here)
    fan_out(list(range(8)), meet)
    assert sorted(seen) == list(range(8))

    def failing(h):
        if h == 3:
            raise RunFailed("host3: writing failed")
        seen.append(h)

    seen.clear()
    with pytest.raises(RunFailed, match="host3"):
        fan_out(list(range(5)), failing)
    assert sorted(seen) == [0, 1, 2, 4], "the other hosts were still written"


class _Text:
    def __init__(self, texts):
        self.texts = texts

    def read_text(self, rel):
        return self.texts.get(rel, "")


def _procs(texts: dict[str, str]) -> list[Proc]:
    host = _Text({f"{n}.out": t for n, t in texts.items()})
    return [Proc(n, f"host-{n}", [], 1, f"{n}.out", f"{n}.err", 0, handle_host=host) for n in texts]


def test_the_skew_of_each_clients_first_operation_is_held_to_the_bound():
    t0 = 1_700_000_000.0
    ok = start_skew(_procs({"client-VA": f"k2bench: clients ready\nk2bench: first operation at {int(t0 * 1000) + 120}\n",
                            "client-CA": f"k2bench: first operation at {int(t0 * 1000) + 900}\n"}),
                    t0, {"client-VA": 0.0, "client-CA": 0.0}, 1.0, {"t0_ms": int(t0 * 1000)})
    assert ok["clients"]["client-VA"] == {"host": "host-client-VA", "first_op_ms": int(t0 * 1000) + 120,
                                          "skew_s": 0.12, "pacing_spread_s": 0.0}
    assert ok["max_skew_s"] == 0.9 and skew_failure(ok) is None
    late = start_skew(_procs({"client-VA": f"k2bench: first operation at {int(t0 * 1000) + 2500}\n"}),
                      t0, {"client-VA": 0.5}, 1.0, {})
    why = skew_failure(late)
    assert why == ("start skew: client-VA on host-client-VA issued its first operation +2.50 s from the common "
                   "start, beyond clients.max_start_skew_s 1 s plus 0.5 s of pacing spread (a late start file or "
                   "a slow start; by the host's own clock, which chrony keeps in step)")
    within_spread = start_skew(_procs({"client-VA": f"k2bench: first operation at {int(t0 * 1000) + 1400}\n"}),
                               t0, {"client-VA": 0.5}, 1.0, {})
    assert skew_failure(within_spread) is None, "YCSB's pacing spread is not skew"
    none = start_skew(_procs({"client-VA": "k2bench: clients ready\n"}), t0, {}, 1.0, {})
    assert "issued no operation within 1 s of the common start" in skew_failure(none)


def test_the_pacing_spread_is_one_interval_of_a_paced_thread():
    assert pacing_spread_s(ClientShare(4, 8)) == 0.5
    assert pacing_spread_s(ClientShare(4, None)) == 0.0
    assert pacing_spread_s(ClientShare(1, 5000)) == 0.0, "above 1000 ops/s per thread YCSB does not spread"


def test_the_skew_bound_is_an_experiment_field_with_a_clear_error():
    exp = experiment.resolve({}, "x", SYSTEMS)
    assert exp["clients"]["max_start_skew_s"] == 1.0
    for bad in (0, -1, "soon"):
        with pytest.raises(ConfigError) as e:
            experiment.resolve({"clients": {"max_start_skew_s": bad}}, "x", SYSTEMS)
        assert e.value.field == "clients.max_start_skew_s" and "\n" not in str(e.value)


def test_the_rtt_check_pairs_configured_and_measured():
    doc = {"datacenters": ["VA", "CA", "SP"], "rtt_ms": {"VA": {"CA": 60, "SP": 146}, "CA": {"SP": 194}},
           "rtt_scale": 0.5}
    measured = {"VA": {"VA": 0.0, "CA": {"configured": 30, "p50": 31.24}, "SP": {"p50": 73.5}},
                "CA": {"VA": {"p50": 30.9}}}
    check = rtt_check(doc, measured)
    assert check["VA->CA"] == {"configured_ms": 30.0, "measured_ms": 31.24}
    assert check["CA->VA"] == {"configured_ms": 30.0, "measured_ms": 30.9}, "a pair given once counts both ways"
    assert check["SP->CA"] == {"configured_ms": 97.0, "measured_ms": None}
    assert len(check) == 6


# ------------------------------------------------------------------ trials with stand-in processes

# Every process of a trial as a small Python program: servers print their ready line, the
# VA loader writes its report, clients say they are ready, wait for the start file, print
# the first-operation line (when they read the start file, if that is after the start),
# then run to the end or stop at once (STUB_CLIENT=early).
STUB = ORPHAN_GUARD + textwrap.dedent(f'''
    import json, os, sys, time
    argv = sys.argv[1:]
    if "serve" in argv:
        print("ready: stub", flush=True)
        while True:
            time.sleep(1)
    props = {{}}
    for line in open(argv[argv.index("-P") + 1]):
        key, _, value = line.rstrip("\\n").partition("=")
        props[key] = value
    json.load(open(props["k2bench.spec"]))  # as the Java clients: the trial's spec is on this host
    if "-load" in argv:
        keys = int(props["insertcount"]) if props["k2bench.dc"] == "VA" else 0
        json.dump({{"loaded": keys, "failed": 0}}, open(props["k2bench.load_report"], "w"))
        sys.exit(0)
    print({CLIENTS_READY!r}, flush=True)
    while not (os.path.exists(props["k2bench.start_file"]) and open(props["k2bench.start_file"]).read().strip()):
        time.sleep(0.02)
    start = int(open(props["k2bench.start_file"]).read()) / 1000
    time.sleep(max(0, start - time.time()))
    print("k2bench: first operation at %d" % round(time.time() * 1000), flush=True)
    if os.environ["STUB_CLIENT"] == "early":
        sys.exit(0)
    time.sleep(max(0, start + float(props["k2bench.run_s"]) - time.time()))
''')


class StubHost(LocalHost):
    def __init__(self, jar, stub, fetch_error=None):
        super().__init__(jar)
        self.stub = stub
        self.fetched = []
        self.fetch_error = fetch_error

    def start(self, name, argv, stdout, stderr):
        return super().start(name, [sys.executable, str(self.stub), *argv], stdout, stderr)

    def fetch(self, rel_dir, timeout=300.0):
        self.fetched.append((rel_dir, timeout))
        if self.fetch_error:
            raise RunFailed(self.fetch_error)


class _Quiet:
    def update(self, **_):
        pass


def run_trial(tmp_path, monkeypatch, mode, doc, fetch_error=None):
    monkeypatch.setenv("STUB_CLIENT", mode)
    stub = tmp_path / "stub.py"
    stub.write_text(STUB)
    host = StubHost(tmp_path / "k2bench.jar", stub, fetch_error)
    host.bind_run(tmp_path)
    # The stand-ins are processes of their own (a stub server hosts no clients or loaders).
    clients = {"heap_mb": 64, **doc.get("clients", {}), "processes": "own"}
    exp = experiment.resolve({"systems": ["k2"], "topology": {"servers_per_dc": 1}, "workload": {"keys": 10},
                              "server": {"heap_mb": 64}, **doc, "clients": clients}, "stub", SYSTEMS)
    dep = LocalDeployment(host)
    dep.in_server_clients = False
    env = Env(repo=ROOT, jar=tmp_path / "k2bench.jar", deployment=dep)
    env.system_info = SYSTEMS  # the real descriptors; the stub jar has none
    orch = Orchestrator(env, _Quiet())
    t = Trial("k2", "", 1, exp, tmp_path / "k2", "k2")
    manifest = {"config": exp, "measured_rtt_ms": {}, "trials": [{"dir": "k2"}]}  # no RTT probe
    error = None
    try:
        orch.run_trial(t, manifest)
    except RunFailed as e:
        error = e
    assert all(p.returncode is not None for p in t.procs), "every process was stopped"
    return t, host, manifest, error


SHORT = {"clients": {"threads_per_dc": 1, "target_ops_per_s_per_dc": 1000, "heap_mb": 64},
         "duration": {"warmup_s": 0, "measure_s": 4, "cooldown_s": 0}}


def test_a_stand_in_exits_once_the_test_process_that_started_it_is_gone(tmp_path):
    stub = tmp_path / "stub.py"
    stub.write_text(STUB)
    # plays a pytest killed before its teardown: starts a stand-in server, sees it ready, dies
    starter = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys
        p = subprocess.Popen([sys.executable, {str(stub)!r}, "serve"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        p.stdout.readline()
        print(p.pid, flush=True)
        """)], capture_output=True, text=True, timeout=30)
    pid = int(starter.stdout.split()[-1])

    def running():  # a zombie nobody reaps (PID 1 in a container may not) has ended too
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
        except (OSError, IndexError):
            return False
    deadline = time.time() + 10
    while running() and time.time() < deadline:
        time.sleep(0.1)
    if running():
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the stand-in outlived the process that started it")


def test_a_normal_start_records_every_clients_first_operation_within_the_bound(tmp_path, monkeypatch):
    t, host, manifest, error = run_trial(tmp_path, monkeypatch, "run", SHORT)
    # The stand-ins write no hlog: the trial gets past its clients and the skew check, and
    # stops at the summary.
    assert error is not None and str(error).startswith("client logs missing"), error
    start = json.loads((t.dir / "start.json").read_text())
    assert set(start["clients"]) == {f"client-{dc}" for dc in ("VA", "CA", "SP", "LDN", "TYO", "SG")}
    assert all(c["first_op_ms"] is not None and abs(c["skew_s"]) < 0.5 for c in start["clients"].values()), start
    assert start["lead_s"] >= 1.0 and start["probe_fan_out_s"] < 1.0 and not start["written_late"]
    assert manifest["trials"][0]["start"] == start, "the run's manifest has each client's first operation too"
    record = json.loads((t.dir / "processes" / "client-VA.json").read_text())
    assert record["first_op_ms"] == start["clients"]["client-VA"]["first_op_ms"]
    assert record["start_skew_s"] == start["clients"]["client-VA"]["skew_s"] and record["exit_code"] is not None


def test_closed_loop_sessions_share_threads_and_paced_ones_keep_their_own(tmp_path, monkeypatch):
    # Unpaced: the workload may drive sessions_per_thread sessions on one thread (TxnWorkload
    # decides by the system's client); paced, it is not asked to.
    unpaced = {"clients": {"threads_per_dc": 4, "sessions_per_thread": 3},
               "duration": {"warmup_s": 0, "measure_s": 1, "cooldown_s": 0}}
    for d in ("unpaced", "paced"):
        (tmp_path / d).mkdir()
    t, *_ = run_trial(tmp_path / "unpaced", monkeypatch, "run", unpaced)
    props = (t.dir / "clients" / "client-VA.properties").read_text().splitlines()
    assert "k2bench.sessions_per_thread=3" in props, props
    t, *_ = run_trial(tmp_path / "paced", monkeypatch, "run", SHORT)
    props = (t.dir / "clients" / "client-VA.properties").read_text()
    assert "sessions_per_thread" not in props, props


def test_a_start_file_that_arrives_late_fails_the_trial_with_the_skew(tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_START_DELAY_ENV, "localhost=3")
    t, host, manifest, error = run_trial(tmp_path, monkeypatch, "run", SHORT)
    assert error is not None and str(error).startswith("start skew: client-"), error
    assert "\n" not in str(error) and "beyond clients.max_start_skew_s 1 s" in str(error)
    start = json.loads((t.dir / "start.json").read_text())
    assert start["written_late"] and min(c["skew_s"] for c in start["clients"].values()) > 1.5


LONGER = {**SHORT, "duration": {"warmup_s": 0, "measure_s": 12, "cooldown_s": 0}}  # stopping at once is early


def test_a_failed_trial_still_fetches_every_hosts_logs(tmp_path, monkeypatch):
    t, host, manifest, error = run_trial(tmp_path, monkeypatch, "early", LONGER)
    assert error is not None and "before the trial's end" in str(error)
    assert host.fetched == [("k2", 300)], "the failed trial's files were fetched, bounded"


def test_a_host_whose_logs_cannot_be_fetched_is_noted_and_the_first_error_kept(tmp_path, monkeypatch):
    t, host, manifest, error = run_trial(tmp_path, monkeypatch, "early", LONGER,
                                         fetch_error="localhost: fetching k2 timed out after 300 s")
    assert "before the trial's end" in str(error), "the trial's own error, not the fetch's"
    assert manifest["fetch_failures"] == [{"trial": "k2", "host": "localhost",
                                           "error": "localhost: fetching k2 timed out after 300 s"}]


# ------------------------------------------------------------------ SSH that does not answer

def _ssh_host(port, tmp, connect_timeout=2.0):
    from k2bench.deploy.ssh import SshHost

    known = tmp / "known_hosts"
    known.write_text("")
    return SshHost("quiet-host", "127.0.0.1", port, "nobody", None, "/nonexistent", known_hosts=str(known),
                   connect_timeout=connect_timeout, command_timeout=3)


def test_a_refused_connection_is_retried_with_backoff_then_named(tmp_path):
    import socket

    from k2bench.deploy.ssh import HostUnreachable

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    h = _ssh_host(port, tmp_path)
    began = time.time()
    with pytest.raises(HostUnreachable) as e:
        h.bind_run(tmp_path / "run")
    assert 2.5 < time.time() - began < 10, "three attempts, 1 s and 2 s apart"
    assert str(e.value).startswith(f"quiet-host: cannot connect over SSH to 127.0.0.1:{port} after 3 attempts: ")
    with pytest.raises(HostUnreachable, match="skipped: the host does not answer"):
        h.read_text("x")  # at once from now on


def test_a_host_that_accepts_and_never_answers_does_not_hang_the_orchestrator(tmp_path):
    import socket
    import threading

    from k2bench.deploy.ssh import HostUnreachable

    server = socket.create_server(("127.0.0.1", 0))
    held = []
    threading.Thread(target=lambda: [held.append(server.accept()) for _ in range(5)], daemon=True).start()
    h = _ssh_host(server.getsockname()[1], tmp_path, connect_timeout=1.0)
    began = time.time()
    with pytest.raises(HostUnreachable) as e:
        h.bind_run(tmp_path / "run")
    assert time.time() - began < 15, "the banner timeout bounds every attempt"
    assert len(held) == 3 and "\n" not in str(e.value) and str(e.value).startswith("quiet-host: "), str(e.value)
    server.close()


# ------------------------------------------------------------------ the command line's inputs (no process starts)

def test_version_is_the_packages_and_the_checkouts_commit(capsys, monkeypatch):
    import tomllib

    from k2bench import cli, rundir
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code in (0, None)
    assert capsys.readouterr().out.startswith(f"k2bench {want} (git {commit[:12]}")
    monkeypatch.setattr(rundir, "git_info", lambda repo: {"git_commit": "unknown", "git_dirty": None})
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out == f"k2bench {want}\n", "not a checkout: the version alone"


@pytest.fixture
def no_trials(monkeypatch):
    """run_experiment up to the orchestrator, which records what it was given and starts nothing."""
    from k2bench import rundir
    from k2bench.cli import run as cli_run
    given = []

    def run(self, exp, run_dir, resume=False, **kw):
        given.append({"exp": exp, "run_dir": run_dir, "resume": resume, **kw})
        rundir.write_json(run_dir / "manifest.json", {"config": exp, **kw})
        return 0
    monkeypatch.setattr(cli_run.Orchestrator, "run", run)
    return given


def _local_env(jar) -> Env:
    return Env(repo=ROOT, jar=jar, deployment=LocalDeployment(LocalHost(jar)))


def test_run_experiment_runs_into_the_run_directory_it_is_given(tmp_path, jar, no_trials):
    from k2bench.cli.run import run_experiment
    runs, mine = tmp_path / "runs", tmp_path / "elsewhere" / "mine"
    assert run_experiment(_local_env(jar), "smoke", mine, runs, systems=["rad"], check=False) == 0
    [given] = no_trials
    assert given["run_dir"] == mine and not given["resume"]
    assert given["exp"]["systems"] == ["rad"] and given["exp"]["check"] is False
    assert (runs / "latest").resolve() == mine.resolve(), "latest names a run outside runs/ by its path"
    with pytest.raises(ConfigError) as e:
        run_experiment(_local_env(jar), "smoke", mine, runs)  # not empty: it holds a run
    assert e.value.field == "run_dir" and "resume it" in str(e.value)
    assert run_experiment(_local_env(jar), "smoke", mine, runs, resume=True, systems=["rad"], check=False) == 0
    assert no_trials[-1]["resume"] and no_trials[-1]["run_dir"] == mine


def test_systems_refuses_an_empty_list_or_name_and_lists_the_experiments(tmp_path, jar, no_trials, capsys):
    from k2bench import cli
    have = "give one or more of the experiment's systems, comma-separated: k2, rad, paris-star"
    for flag, problem in (("", "'' names no system"), ("k2,", "'k2,' has an empty name"),
                          (" , ", "' , ' names no system"), ("k7", "'k7' is not one of the experiment's systems"),
                          ("k2,k2", "'k2,k2' names a system twice")):
        assert cli.main(["--jar", str(jar), "run", "smoke", "--runs", str(tmp_path), "--systems", flag]) == 2
        assert capsys.readouterr().err.strip() == f"k2bench: --systems: {problem}; {have}", flag
    assert not no_trials and not list(tmp_path.iterdir()), "nothing ran, no run directory"
    assert cli.main(["--jar", str(jar), "run", "smoke", "--runs", str(tmp_path), "--systems", "rad, k2"]) == 0
    assert no_trials[0]["exp"]["systems"] == ["rad", "k2"]


def test_resume_with_another_configuration_names_the_fields_that_changed(tmp_path, jar, no_trials, capsys):
    import yaml

    from k2bench import cli
    from k2bench.rundir import MISSING, changed_fields
    mine, run = tmp_path / "mine.yaml", tmp_path / "runs" / "one"
    mine.write_text(yaml.safe_dump({"extends": "smoke", "workload": {"zipf": 1.4}}))
    argv = ["--jar", str(jar), "run", str(mine), "--runs", str(tmp_path / "runs")]
    assert cli.main(argv + ["--systems", "k2,rad"]) == 0
    (tmp_path / "runs" / "latest").resolve().rename(run)
    assert cli.main(argv + ["--systems", "k2,rad", "--resume", str(run)]) == 0, "the same: resumed"
    mine.write_text(yaml.safe_dump({"extends": "smoke", "workload": {"zipf": 1.2}, "duration": {"measure_s": 20},
                                    "faults": [{"kind": "pause", "dc": "VA", "at_s": 1, "for_s": 1}]}))
    assert cli.main(argv + ["--resume", str(run)]) == 2
    assert capsys.readouterr().err == (
        f"k2bench: --resume: {run} was run with a different configuration of mine: systems [\"k2\", \"rad\"] -> "
        "[\"k2\", \"rad\", \"paris-star\"], workload.zipf 1.4 -> 1.2, duration.measure_s 10.0 -> 20.0 and 1 more; "
        "resume it with the file, --systems, --no-check and --set it was run with, or start a new run without "
        "--resume\n")
    gone = object()
    changes = [(f, gone if a is MISSING else a, gone if b is MISSING else b)
               for f, a, b in changed_fields({"faults": [{"at_s": 1}], "a": 1}, {"faults": [{"at_s": 2}], "b": 1})]
    assert changes == [("faults[0].at_s", 1, 2), ("b", gone, 1), ("a", 1, gone)]


def test_set_overrides_a_field_for_one_run_and_is_kept_in_the_manifest(tmp_path, jar, no_trials, capsys):
    from k2bench import cli
    from k2bench.rundir import read_manifest
    argv = ["--jar", str(jar), "run", "smoke", "--runs", str(tmp_path), "--systems", "k2"]
    assert cli.main(argv + ["--set", "workload.zipf=1.4", "--set", "sweep.workload.keys=[3000, 6000]"]) == 0
    exp = no_trials[0]["exp"]
    assert exp["workload"]["zipf"] == 1.4 and exp["sweep"] == {"workload.keys": [3000, 6000]}
    run = (tmp_path / "latest").resolve()
    assert read_manifest(run)["overrides"] == {"workload.zipf": 1.4, "sweep.workload.keys": [3000, 6000]}
    assert cli.main(argv + ["--set", "workload.zipf=1.4", "--set", "sweep.workload.keys=[3000, 6000]",
                            "--resume", str(run)]) == 0, "the same overrides: resumed"
    assert cli.main(argv + ["--set", "sweep.workload.keys=[3000, 6000]", "--resume", str(run)]) == 2
    assert capsys.readouterr().err.startswith(
        f"k2bench: --resume: {run} was run with a different configuration of smoke: workload.zipf 1.4 -> 1.2, "
        "--set workload.zipf 1.4 -> (none); resume it with")
    assert cli.main(argv + ["--set", "workload.zipff=1.4"]) == 2
    assert capsys.readouterr().err.startswith("k2bench: --set workload.zipff: unknown field (did you mean zipf?); ")
    assert len(no_trials) == 2, "refused before the orchestrator"
