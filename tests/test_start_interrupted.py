"""A Ctrl-C or SIGTERM that lands while a trial starts a process stops that process with the
rest: procs.start registers it for the teardown before the interrupt is raised (a CI run of
test_ctrl_c_tears_everything_down_and_marks_the_run once left a JVM started in that window)."""
import contextlib
import os
import signal
import sys

import pytest

from k2bench.deploy.hosts import LocalHost
from k2bench.orchestrator import _raise_interrupt
from k2bench.trial import Trial
from k2bench.trial.procs import start
from test_e2e import processes_mentioning


class InterruptedWhileStarting(LocalHost):
    """Signals this process right after the fork: the window between a process's start and
    its teardown callback, made certain."""

    def __init__(self, jar, sig):
        super().__init__(jar)
        self.sig = sig

    def start(self, name, argv, stdout, stderr):
        p = super().start(name, argv, stdout, stderr)
        os.kill(os.getpid(), self.sig)
        return p


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_process_started_as_the_interrupt_lands_is_stopped_with_the_rest(tmp_path, sig):
    host = InterruptedWhileStarting(tmp_path / "k2bench.jar", sig)
    host.bind_run(tmp_path)
    t = Trial("k2", "", 1, {}, tmp_path, ".")
    marker = f"interrupted-start-{os.getpid()}-{sig}"
    # the orchestrator's handlers, whatever this test process had (a worker may ignore SIGINT)
    previous = {s: signal.signal(s, h) for s, h in ((signal.SIGINT, signal.default_int_handler),
                                                    (signal.SIGTERM, _raise_interrupt))}
    try:
        with pytest.raises(KeyboardInterrupt), contextlib.ExitStack() as stack:
            start(t, stack, host, "sleeper", [sys.executable, "-c", "import time; time.sleep(120)", marker])
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    [p] = t.procs
    assert p.returncode is not None, "the teardown stopped it"
    assert processes_mentioning(marker) == []
    assert (tmp_path / "processes" / "sleeper.json").exists(), "and recorded it"


def test_an_ignored_signal_stays_ignored_while_a_process_starts(tmp_path):
    host = InterruptedWhileStarting(tmp_path / "k2bench.jar", signal.SIGINT)
    host.bind_run(tmp_path)
    t = Trial("k2", "", 1, {}, tmp_path, ".")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with contextlib.ExitStack() as stack:
            start(t, stack, host, "sleeper", [sys.executable, "-c", "import time; time.sleep(120)"])
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert t.procs[0].returncode is not None
