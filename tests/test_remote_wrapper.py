"""The shell every remote process runs under (deploy/ssh.py's wrapper_script), run here
without SSH: its lease watchdog (with a short lease), the exit code it records, the signals
it outlives, and what a poll makes of a process whose wrapper is gone."""
import os
import signal
import subprocess
import time
from pathlib import Path

from k2bench.deploy.hosts import Proc
from k2bench.deploy.ssh import SshHost, wrapper_script


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose (an orphan's waits for init to reap it)
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):  # reaped between the open and the read: ESRCH
        return False


def _until(ready, within_s: float, what: str) -> None:
    deadline = time.time() + within_s
    while not ready():
        assert time.time() < deadline, what
        time.sleep(0.05)


def _wrapped(tmp_path, lease_s, argv):
    lease = tmp_path / ".lease"
    lease.touch()
    out, err = tmp_path / "p.out", tmp_path / "p.err"
    script = wrapper_script(argv, str(out), str(err), f"{out}.pid", f"{out}.rc", str(lease), lease_s, check_s=0.2)
    # with a hang-up's default disposition, as under sshd: a shell cannot trap a signal
    # ignored when it starts (a test run under nohup would pass that on)
    wrapper = subprocess.Popen(["setsid", "sh", "-c", script], stdin=subprocess.DEVNULL,
                               preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    pidf = Path(f"{out}.pid")
    _until(lambda: pidf.exists() and pidf.read_text().strip(), 5, "the wrapper records the pid")
    pids = pidf.read_text().split()
    assert pids[1:] == [str(wrapper.pid)], f"the pid file names the process and its wrapper: {pids}"
    return wrapper, int(pids[0]), lease, out


def test_a_process_stops_on_its_own_when_the_lease_goes_stale(tmp_path):
    wrapper, pid, lease, out = _wrapped(tmp_path, 2, ["sleep", "300"])
    try:
        began = time.time()
        while _alive(pid) and time.time() - began < 15:
            time.sleep(0.1)
        assert not _alive(pid), "the watchdog killed the process once the lease was 2 s old"
        assert 2 <= time.time() - began < 6
        wrapper.wait(5)
        assert Path(f"{out}.rc").read_text().strip() == str(128 + signal.SIGTERM), "its exit is recorded"
        assert "not refreshed for 2 s" in Path(f"{out}.lease-expired").read_text()
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        wrapper.wait(5)


def test_a_refreshed_lease_keeps_the_process_and_its_end_leaves_nothing(tmp_path):
    wrapper, pid, lease, out = _wrapped(tmp_path, 2, ["sleep", "4"])
    try:
        began = time.time()
        while time.time() - began < 3.5:
            lease.touch()
            assert _alive(pid), "a fresh lease keeps it running past the 2 s lease"
            time.sleep(0.3)
        wrapper.wait(10)  # the process ended by itself; the wrapper and its watchdog with it
        assert Path(f"{out}.rc").read_text().strip() == "0"
        assert not Path(f"{out}.lease-expired").exists()
        left = [pid for pid in subprocess.run(["pgrep", "-g", str(wrapper.pid)], capture_output=True,
                                              text=True).stdout.split() if _alive(int(pid))]
        assert left == [], f"no watchdog or sleep left behind (zombies aside): {left}"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_signal_meant_for_the_wrapper_is_noted_and_the_exit_code_still_recorded(tmp_path):
    """A hang-up or a stray TERM to the wrapper alone used to end it, and with it the record
    of how its process ends: the run then saw a process gone without an exit code (-9)."""
    go = tmp_path / "go"  # the process ends when the test says so, not on a clock a loaded CI outruns
    wrapper, pid, lease, out = _wrapped(tmp_path, 60, ["sh", "-c", f"until [ -e {go} ]; do sleep 0.05; done; exit 7"])
    try:
        # one at a time: dash may run only the first trap of two signals that arrive together
        for sig, noted in ((signal.SIGTERM, ["SIGTERM"]), (signal.SIGHUP, ["SIGTERM", "SIGHUP"])):
            os.kill(wrapper.pid, sig)
            note = Path(f"{out}.wrapper")
            _until(lambda: note.exists() and note.read_text().split() == noted, 5, f"{sig.name} noted")
            assert wrapper.poll() is None, "the wrapper lives on"
        go.touch()
        assert wrapper.wait(10) == 0
        assert Path(f"{out}.rc").read_text().strip() == "7", "the process's own exit code"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_term_to_the_whole_group_records_the_exit_code_the_process_chose(tmp_path):
    """The wrapper's first wait ends with the signal (143); the process's own code comes
    from waiting again: recorded 143 instead, in about a quarter of the tries, before."""
    for i in range(8):
        d = tmp_path / str(i)
        d.mkdir()
        ready = d / "ready"
        wrapper, pid, lease, out = _wrapped(
            d, 60, ["sh", "-c", f"trap 'exit 5' TERM; touch {ready}; while :; do sleep 0.05; done"])
        try:
            _until(ready.exists, 10, "the process set its trap")
            os.killpg(wrapper.pid, signal.SIGTERM)
            assert wrapper.wait(10) == 0
            assert Path(f"{out}.rc").read_text().strip() == "5", f"try {i}"
        finally:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _local_ssh_host(tmp_path, shell=("sh", "-c"), env=None):
    """An SshHost whose commands run here instead of over SSH."""
    host = SshHost.__new__(SshHost)
    host.name, host.base, host.lease_s = "h", str(tmp_path), 60.0
    host._procs, host._status, host._status_at = [], {}, 0.0
    host.EXIT_CODE_WAIT_S = 2.0

    def run(command, what, **kw):
        return subprocess.run([*shell, command], capture_output=True, text=True, timeout=60, env=env)

    host._run = run
    return host


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _gone(pid: int) -> None:
    # reaped, by init if its parent is gone
    _until(lambda: not Path(f"/proc/{pid}").exists(), 10, f"pid {pid} still there")


def test_a_poll_waits_for_an_exit_code_the_wrapper_is_still_writing(tmp_path):
    """A process that just ended, whose wrapper has not written its exit code yet, is not
    taken for one that vanished (which fails the trial)."""
    rcf = tmp_path / "x.out.rc"
    ended = subprocess.Popen(["true"])
    ended.wait()
    late = subprocess.Popen(["sh", "-c", f"sleep 0.5; echo 143 > {rcf}"])  # the wrapper, a little late
    host = _local_ssh_host(tmp_path)
    proc = Proc("x", "h", [], ended.pid, "x.out", "x.err", 0, handle=(str(tmp_path / "x.out.pid"), str(rcf), late.pid))
    host._procs = [proc]
    assert host.poll(proc) == 143
    late.wait()


def test_a_process_that_ends_between_the_polls_two_looks_is_not_called_gone(tmp_path):
    """The CI failure: alive at the first look (no exit code yet), reaped at the second, its
    exit code written a moment later. `kill` here answers "alive" for the process once,
    then "gone", as the real one did with the process ending in between."""
    rcf = tmp_path / "x.out.rc"
    wrapper = subprocess.Popen(["sh", "-c", f"sleep 0.5; echo 143 > {rcf}"])
    bin_dir, seen = tmp_path / "bin", tmp_path / "seen"
    bin_dir.mkdir()
    (bin_dir / "kill").write_text(f"#!/bin/sh\n[ \"$2\" = 424242 ] || exec /bin/kill \"$@\"\n"
                                  f"[ -e {seen} ] && exit 1; touch {seen}; exit 0\n")
    (bin_dir / "kill").chmod(0o755)
    # bash with its kill builtin off, so the script above answers
    host = _local_ssh_host(tmp_path, ("bash", "-c", "enable -n kill; eval \"$1\"", "poll"),
                           env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    proc = Proc("x", "h", [], 424242, "x.out", "x.err", 0, handle=(str(tmp_path / "x.out.pid"), str(rcf), wrapper.pid))
    host._procs = [proc]
    polls = []
    while not polls or polls[-1] is None:  # as stop() polls
        assert len(polls) < 5, polls
        host._status_at = 0.0
        polls.append(host.poll(proc))
    assert polls[-1] == 143, (polls, proc.notes)
    wrapper.wait()


def test_a_process_whose_wrapper_died_is_polled_as_running_and_then_said_to_have_no_exit_code(tmp_path):
    host = _local_ssh_host(tmp_path)
    host.EXIT_CODE_WAIT_S = 5.0
    p = host.start("x", ["sleep", "60"], "logs/x.out", "logs/x.err")
    try:
        wrapper = _parent(p.pid)
        assert host.poll(p) is None and "wrapper_lost" not in p.notes
        os.kill(wrapper, signal.SIGKILL)  # nothing can catch this one
        _gone(wrapper)
        host._status_at = 0.0
        assert host.poll(p) is None, "the process itself still runs"
        assert p.notes["wrapper_lost"].startswith(f"its wrapper (pid {wrapper}) was gone by "), p.notes
        os.kill(p.pid, signal.SIGTERM)
        _gone(p.pid)
        host._status_at = 0.0
        began = time.time()
        assert host.poll(p) == -9
        assert time.time() - began < 3, "no wait (5 s) for an exit code nobody is left to write"
        assert p.ended() == f"ended without an exit code: {p.notes['wrapper_lost']}"
        assert p.record()["exit_unknown"] == p.notes["wrapper_lost"]
    finally:
        if _alive(p.pid):
            os.kill(p.pid, signal.SIGKILL)


def test_processes_gone_with_silent_wrappers_share_one_wait(tmp_path):
    host = _local_ssh_host(tmp_path)
    host.EXIT_CODE_WAIT_S = 3.0
    ended = subprocess.Popen(["true"])
    ended.wait()
    silent = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:
        host._procs = [Proc(f"x{i}", "h", [], ended.pid, f"x{i}.out", f"x{i}.err", 0,
                            handle=(str(tmp_path / f"x{i}.out.pid"), str(tmp_path / f"x{i}.out.rc"), w.pid))
                       for i, w in enumerate(silent)]
        began = time.time()
        assert [host.poll(p) for p in host._procs] == [-9] * 3
        assert 3 <= time.time() - began < 7, "one wait of EXIT_CODE_WAIT_S (3 s) for all three, not 9 s"
        assert all(p.notes["exit_unknown"].endswith("still runs but recorded none while the poll waited")
                   for p in host._procs)
    finally:
        for w in silent:
            w.kill()
            w.wait()


def test_polls_tell_two_processes_apart_by_position_not_pid(tmp_path):
    """A pid recorded for a process that ended may since belong to another: one line per
    process, keyed by its place in the poll, so one's state is never read as the other's."""
    host = _local_ssh_host(tmp_path)
    a = host.start("a", ["sh", "-c", "exit 3"], "a.out", "a.err")
    b = host.start("b", ["sleep", "60"], "b.out", "b.err")
    try:
        _until((tmp_path / "a.out.rc").exists, 5, "a ended")
        a.pid = b.pid  # as if a's pid, its process ended unpolled, now belonged to b
        assert host.poll(a) == 3 and host.poll(b) is None
    finally:
        if _alive(b.pid):
            os.kill(b.pid, signal.SIGKILL)


def test_a_run_directory_with_a_space_in_its_path_works(tmp_path):
    base = tmp_path / "a b"
    base.mkdir()
    host = _local_ssh_host(base)
    p = host.start("x", ["sh", "-c", "sleep 0.2; exit 4"], "logs/x.out", "logs/x.err")
    deadline = time.time() + 10
    while host.poll(p) is None:
        assert time.time() < deadline
        host._status_at = 0.0
        time.sleep(0.1)
    assert p.returncode == 4, p.notes
