"""A client whose threads die must fail the run, not give it a short, quiet window.

YCSB exits 0 once all its threads are gone, and keeps going with fewer threads when only
some die; either would leave a summary measured on part of the load. The helpers here are
wired into Orchestrator.run_trial, which tests/test_run_trial_checks.py runs."""
import sys
import time

import pytest

from k2bench.deploy.hosts import LocalHost, Proc
from k2bench.errors import RunFailed
from k2bench.trial import Trial
from k2bench.trial.diagnose import CLIENT_EARLY_EXIT_S, check_clients_after_run, dead_thread, early_exit, thread_deaths
from k2bench.trial.procs import wait_exit


class _Quiet:
    def update(self, **_):
        pass


# What YCSB 0.17 prints when a paced worker thread's first tick overflows (a real run of
# site.ycsb.Client with -target 1 -threads 4), between its status output.
WORKER_DIES = """DBWrapper: report latency for each error is false and specific error codes to track for latency are: []
Exception in thread "Thread-2" java.lang.IllegalArgumentException: bound must be positive
\tat java.base/java.util.Random.nextInt(Random.java:322)
\tat java.base/java.util.concurrent.ThreadLocalRandom.nextInt(ThreadLocalRandom.java:453)
\tat site.ycsb.ClientThread.run(ClientThread.java:113)
\tat java.base/java.lang.Thread.run(Thread.java:840)
2026-11-24 21:40:01:123 10 sec: 0 operations; est completion in 0 second
"""
# Another thread of the client JVM (its name alone says nothing: YCSB's status and
# terminator threads are "Thread-<n>" too).
OTHER_DIES = """Exception in thread "Thread-0" java.lang.IllegalStateException: status
\tat site.ycsb.StatusThread.run(StatusThread.java:120)
Exception in thread "grpc-default-executor-3" java.lang.OutOfMemoryError: Java heap space
\tat io.grpc.internal.SerializingExecutor.run(SerializingExecutor.java:133)
"""


def _client(host, name, stderr, sleep_s=0.0):
    code = f"import sys, time; time.sleep({sleep_s}); sys.stderr.write({stderr!r})"
    p = host.start(name, [sys.executable, "-c", code], f"{name}.out", f"{name}.err")
    p.handle_host = host
    return p


@pytest.fixture
def host(tmp_path):
    h = LocalHost(tmp_path / "k2bench.jar")
    h.bind_run(tmp_path)
    return h


def _wait(host, clients, ends_at):
    t = Trial("k2", "", 1, {}, host.run_dir, ".")
    wait_exit(t, _Quiet(), clients, [], 30, "running", 1, ends_at=ends_at)


def test_worker_threads_are_told_from_the_others_by_their_stack():
    assert thread_deaths(WORKER_DIES) == [(True, 'Exception in thread "Thread-2" java.lang.IllegalArgumentException: '
                                                 'bound must be positive at java.base/java.util.Random.nextInt'
                                                 '(Random.java:322)')]
    assert [worker for worker, _ in thread_deaths(OTHER_DIES)] == [False, False]
    assert thread_deaths("Exception in thread \"main\" java.lang.Error\n") == [
        (False, 'Exception in thread "main" java.lang.Error')]


def test_a_client_that_stops_long_before_the_end_fails_the_run_with_its_exception(host):
    p = _client(host, "client-VA", WORKER_DIES)
    with pytest.raises(RunFailed, match=r"client-VA stopped \d+ s before the trial's end: a client thread died: "
                                        r"Exception in thread \"Thread-2\" java.lang.IllegalArgumentException"):
        _wait(host, [p], time.time() + 60)


def test_a_client_that_stops_at_the_end_is_fine(host):
    p = _client(host, "client-VA", "", sleep_s=0.5)
    _wait(host, [p], time.time() + 0.5)
    assert p.returncode == 0 and dead_thread(p) is None and check_clients_after_run([p]) == []


class _FarHost:
    """A client host reached over SSH: its clock is not this machine's."""

    this_machine = False

    def __init__(self, stderr):
        self.stderr = stderr

    def read_text(self, rel):
        return self.stderr


def _far(stderr):
    p = Proc("client-TYO-1", "tyo-client-1", [], 1, "out", "err", 0.0)
    p.handle_host = _FarHost(stderr)
    return p


def test_an_early_stop_without_a_dead_thread_says_it_may_be_the_clock():
    now = 1000.0
    slack = CLIENT_EARLY_EXIT_S
    assert early_exit(_far(""), now + slack, now) is None, "within the slack"
    why = early_exit(_far("some output\n"), now + slack + 3, now)
    assert why == (f"client-TYO-1 stopped {slack + 3} s before the trial's end, with no thread death in its log "
                   f"(a crash, or its host clock ahead of this machine's by more than the {slack} s slack): some output")
    assert "a thread died: Exception in thread \"Thread-0\"" in early_exit(_far(OTHER_DIES), now + 60, now)
    assert "a client thread died" in early_exit(_far(OTHER_DIES + WORKER_DIES), now + 60, now)


def test_after_the_run_a_dead_worker_fails_it_and_other_deaths_are_warnings(host):
    with pytest.raises(RunFailed, match=r"^client-TYO-1: a client thread died, so its load fell short: "
                                        r"Exception in thread \"Thread-2\""):
        check_clients_after_run([_far(""), _far(OTHER_DIES + WORKER_DIES)])
    warnings = check_clients_after_run([_far(OTHER_DIES)])
    assert warnings == [
        'client-TYO-1: a thread that is not a YCSB client thread died: Exception in thread "Thread-0" '
        'java.lang.IllegalStateException: status at site.ycsb.StatusThread.run(StatusThread.java:120)',
        'client-TYO-1: a thread that is not a YCSB client thread died: Exception in thread '
        '"grpc-default-executor-3" java.lang.OutOfMemoryError: Java heap space at '
        'io.grpc.internal.SerializingExecutor.run(SerializingExecutor.java:133)']
