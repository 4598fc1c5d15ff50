"""A client whose threads die must fail the run, not give it a short, quiet window.

YCSB exits 0 once all its threads are gone, and keeps going with fewer threads when only
some die; either would leave a summary measured on part of the load."""
import sys
import time

import pytest

from k2bench.hosts import LocalHost
from k2bench.orchestrator import Orchestrator, RunFailed, Trial, dead_thread


class _Quiet:
    def update(self, **_):
        pass


def _client(host, name, code):
    return host.start(name, [sys.executable, "-c", code], f"{name}.out", f"{name}.err")


@pytest.fixture
def host(tmp_path):
    h = LocalHost(tmp_path / "k2bench.jar")
    h.bind_run(tmp_path)
    return h


def _wait(host, clients, ends_at):
    orch = Orchestrator.__new__(Orchestrator)
    orch.progress = _Quiet()
    t = Trial("k2", "", 1, {}, host.run_dir, ".")
    for p in clients:
        p.handle_host = host
    orch._wait_exit(t, clients, [], 30, "running", 1, ends_at=ends_at)


DIES = ("import sys; print('Exception in thread \"Thread-7\" java.lang.IllegalArgumentException:', file=sys.stderr);"
        "print('\\tat java.base/java.util.Random.nextInt(Random.java:322)', file=sys.stderr)")


def test_a_client_that_stops_long_before_the_end_fails_the_run_with_its_exception(host):
    p = _client(host, "client-VA", DIES)
    with pytest.raises(RunFailed, match=r"client-VA stopped \d+ s before the trial's end: "
                                        r"Exception in thread \"Thread-7\" java.lang.IllegalArgumentException"):
        _wait(host, [p], time.time() + 60)


def test_a_client_that_stops_at_the_end_is_fine(host):
    p = _client(host, "client-VA", "import time; time.sleep(0.5)")
    _wait(host, [p], time.time() + 0.5)
    assert p.returncode == 0 and dead_thread(p) is None


def test_a_dead_thread_in_a_client_that_ran_to_the_end_is_found(host):
    p = _client(host, "client-VA", DIES)
    _wait(host, [p], None)
    assert dead_thread(p).startswith('Exception in thread "Thread-7" java.lang.IllegalArgumentException: '
                                     'at java.base/java.util.Random.nextInt')

