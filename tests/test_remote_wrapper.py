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
    except FileNotFoundError:
        return False


def _wrapped(tmp_path, lease_s, argv):
    lease = tmp_path / ".lease"
    lease.touch()
    out, err = tmp_path / "p.out", tmp_path / "p.err"
    script = wrapper_script(argv, str(out), str(err), f"{out}.pid", f"{out}.rc", str(lease), lease_s, check_s=0.2)
    wrapper = subprocess.Popen(["setsid", "sh", "-c", script], stdin=subprocess.DEVNULL)
    deadline = time.time() + 5
    while not (Path(f"{out}.pid").exists() and Path(f"{out}.pid").read_text().strip()):
        assert time.time() < deadline, "the wrapper records the pid"
        time.sleep(0.05)
    pid, wrapper_pid = map(int, Path(f"{out}.pid").read_text().split())
    assert wrapper_pid == wrapper.pid, "the pid file names the process and its wrapper"
    return wrapper, pid, lease, out


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



def test_a_poll_waits_for_an_exit_code_the_wrapper_is_still_writing(tmp_path):
    """A process that just ended, whose wrapper has not written its exit code yet, is not
    taken for one that vanished (which fails the trial)."""
    from k2bench.deploy.ssh import SshHost

    rcf = tmp_path / "x.out.rc"
    ended = subprocess.Popen(["true"])
    ended.wait()
    host = SshHost.__new__(SshHost)  # its poll command, run here instead of over SSH
    host.base, host._status, host._status_at = str(tmp_path), {}, 0.0
    proc = Proc("x", "h", [], ended.pid, "x.out", "x.err", 0, handle=(str(tmp_path / "x.out.pid"), str(rcf), ended.pid))
    host._procs = [proc]

    class Result:
        stdout = ""

    def run(command, what, **kw):
        subprocess.Popen(["sh", "-c", f"sleep 0.5; echo 143 > {rcf}"])  # the wrapper, a little late
        Result.stdout = subprocess.run(["sh", "-c", command], capture_output=True, text=True).stdout
        return Result

    host._run = run
    assert host.poll(proc) == 143


def test_a_signal_meant_for_the_wrapper_is_noted_and_the_exit_code_still_recorded(tmp_path):
    """A hang-up or a stray TERM to the wrapper alone used to end it, and with it the record
    of how its process ends: the run then saw a process gone without an exit code (-9)."""
    wrapper, pid, lease, out = _wrapped(tmp_path, 60, ["sh", "-c", "sleep 1.5; exit 7"])
    try:
        time.sleep(0.3)
        os.kill(wrapper.pid, signal.SIGTERM)
        os.kill(wrapper.pid, signal.SIGHUP)
        assert wrapper.wait(10) == 0
        assert Path(f"{out}.rc").read_text().strip() == "7", "the process's own exit code"
        noted = Path(f"{out}.wrapper").read_text().split()
        assert sorted(noted[1::2]) == ["SIGHUP", "SIGTERM"] and abs(int(noted[0]) - time.time()) < 10, noted
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _local_ssh_host(tmp_path):
    """An SshHost whose commands run here instead of over SSH."""
    host = SshHost.__new__(SshHost)
    host.name, host.base, host.lease_s = "h", str(tmp_path), 60.0
    host._procs, host._status, host._status_at = [], {}, 0.0
    host.EXIT_CODE_WAIT_S = 2.0

    def run(command, what, **kw):
        return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60)

    host._run = run
    return host


def test_a_process_whose_wrapper_died_is_polled_as_running_and_then_said_to_have_no_exit_code(tmp_path):
    host = _local_ssh_host(tmp_path)
    p = host.start("x", ["sleep", "60"], "logs/x.out", "logs/x.err")
    try:
        wrapper = p.handle[2]
        assert host.poll(p) is None and "wrapper_lost" not in p.notes
        os.kill(wrapper, signal.SIGKILL)  # nothing can catch this one
        deadline = time.time() + 5
        while Path(f"/proc/{wrapper}").exists():  # reaped by init
            assert time.time() < deadline
            time.sleep(0.05)
        host._status_at = 0.0
        assert host.poll(p) is None, "the process itself still runs"
        assert p.notes["wrapper_lost"].startswith(f"its wrapper (pid {wrapper}) was gone by "), p.notes
        os.kill(p.pid, signal.SIGTERM)
        while Path(f"/proc/{p.pid}").exists():  # reaped by init, as its wrapper is gone
            time.sleep(0.05)
        host._status_at = 0.0
        began = time.time()
        assert host.poll(p) == -9
        assert 2 <= time.time() - began < 20, "it waited for an exit code before calling the process gone"
        assert p.ended() == f"ended without an exit code: {p.notes['wrapper_lost']}"
        assert p.record()["exit_unknown"] == p.notes["wrapper_lost"]
    finally:
        if _alive(p.pid):
            os.kill(p.pid, signal.SIGKILL)


def test_polls_tell_two_processes_apart_by_position_not_pid(tmp_path):
    """A pid recorded for a process that ended may since belong to another: one line per
    process, keyed by its place in the poll, so one's state is never read as the other's."""
    host = _local_ssh_host(tmp_path)
    a = host.start("a", ["sh", "-c", "exit 3"], "a.out", "a.err")
    b = host.start("b", ["sleep", "60"], "b.out", "b.err")
    try:
        deadline = time.time() + 5
        while not (tmp_path / "a.out.rc").exists():
            assert time.time() < deadline
            time.sleep(0.05)
        a.pid = b.pid  # as if a's pid, its process ended unpolled, now belonged to b
        assert host.poll(a) == 3 and host.poll(b) is None
    finally:
        os.kill(b.handle[2], signal.SIGTERM)
        for q in (a, b):
            if _alive(q.pid):
                os.kill(q.pid, signal.SIGKILL)
