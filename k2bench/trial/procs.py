"""Starting, watching and stopping a trial's processes, on whatever host they run. Every
process is recorded by pid in the trial's ``processes/`` while it runs, and stopped by that
pid when the trial's ExitStack closes."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

from .. import rundir
from ..deploy.hosts import Host, Proc
from ..errors import RunFailed
from .diagnose import current_rate, early_exit, tail
from .state import Trial


def start(t: Trial, stack: contextlib.ExitStack, host: Host, name: str, argv: list[str]) -> Proc:
    # A Ctrl-C between the fork and the teardown's callback left the new process running
    # after the run ended (a CI run of test_ctrl_c_...): it is raised once the callback is in.
    with interrupts_deferred():
        p = host.start(name, argv, f"{t.rel}/logs/{name}.out", f"{t.rel}/logs/{name}.err")
        p.handle_host = host
        t.procs.append(p)
        stack.callback(stop_quietly, t, p)
    rundir.write_json(t.dir / "processes" / f"{name}.json", p.record())  # pid known while it runs
    return p


@contextlib.contextmanager
def interrupts_deferred():
    """SIGINT and SIGTERM that arrive inside the block are acted on after it, by the handlers
    they had (KeyboardInterrupt for the orchestrator's); an ignored signal stays ignored. Only
    the main thread receives Python's signals, so elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s, h in old.items():
        if h != signal.SIG_IGN:
            signal.signal(s, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for s in dict.fromkeys(got):
            if callable(old[s]):
                old[s](s, None)
            elif old[s] == signal.SIG_DFL:
                os.kill(os.getpid(), s)


def stop(t: Trial, p: Proc) -> None:
    p.handle_host.stop(p)
    rundir.write_json(t.dir / "processes" / f"{p.name}.json", p.record())


def stop_quietly(t: Trial, p: Proc) -> None:
    """Teardown: a process that cannot be stopped (its host stopped answering) is noted in
    its record and left to its lease; the error that ended the trial stays the one reported."""
    try:
        stop(t, p)
    except RunFailed as e:
        rundir.write_json(t.dir / "processes" / f"{p.name}.json", p.record() | {"stop_failed": str(e)})


def check_alive(procs: list[Proc], t: Trial | None = None) -> None:
    for p in procs:
        if t is not None and t.faults is not None and p.name in t.faults.killed:
            continue  # killed on purpose (a fault)
        rc = p.handle_host.poll(p)
        if rc is not None:
            raise RunFailed(f"{p.name} {p.ended()} unexpectedly: {tail(p)}")


def not_ready(procs: list[Proc], failed) -> str | None:
    """Why one of ``procs`` will never be ready (``failed(p)`` says, or None), or None."""
    for p in procs:
        if (why := failed(p)):
            return f"{p.name} failed before it was ready: {why}"
    return None


def wait_for_line(procs: list[Proc], others: list[Proc], prefix: str, timeout_s: float, what: str,
                  failed=None) -> None:
    """Waits until every process of ``procs`` printed a line starting with ``prefix``;
    ``failed(p)``, if given, says why a pending one will never get there (or None)."""
    deadline = time.time() + timeout_s
    pending = list(procs)
    while pending:
        check_alive(pending + others)
        if failed and (why := not_ready(pending, failed)):
            raise RunFailed(why)
        pending = [p for p in pending if not any(
            ln.startswith(prefix) for ln in p.handle_host.read_text(p.stdout).splitlines())]
        if pending and time.time() > deadline:
            raise RunFailed(f"{what} not ready after {timeout_s:.0f} s: {[p.name for p in pending]}")
        time.sleep(0.2)


FAILING_EVERY_S = 3.0


def wait_exit(t: Trial, progress, clients: list[Proc], servers: list[Proc], timeout_s: float, phase: str,
              expected_s: float | None, ends_at: float | None = None, check_at=None, failing=None) -> None:
    """Waits for ``clients`` to exit; with ``ends_at`` (epoch s), one that stops well
    before it (its threads died: YCSB then exits 0) fails the run. ``check_at`` =
    (epoch s, fn): fn() runs once at that time while they run. ``failing()``, if given, says
    why the run cannot go on (or None): asked every few seconds (it may read remote files)."""
    began = time.time()
    next_failing = began
    while True:
        if failing is not None and time.time() >= next_failing:
            next_failing = time.time() + FAILING_EVERY_S
            if (why := failing()):
                raise RunFailed(why)
        if check_at is not None and time.time() >= check_at[0]:
            check_at[1]()
            check_at = None
        if t.faults is not None:
            t.faults.poll()
        check_alive(servers, t)
        done = [p for p in clients if p.handle_host.poll(p) is not None]
        for p in done:
            if p.returncode != 0:
                raise RunFailed(f"{p.name} {p.ended()}: {tail(p)}")
            if ends_at is not None and (why := early_exit(p, ends_at, time.time())):
                raise RunFailed(why)
        if len(done) == len(clients):
            return
        if time.time() - began > timeout_s:
            raise RunFailed(f"{phase} did not finish within {timeout_s:.0f} s")
        progress.update(phase=phase, elapsed=time.time() - began, expected=expected_s,
                        ops_per_s=current_rate(clients))
        time.sleep(0.1 if t.faults is not None and t.faults.faults else 0.5)


def fan_out(hosts: list, fn) -> float:
    """Runs ``fn(host)`` for every host in parallel; returns the seconds it took for all.
    The first error (in host order) is raised once every call has ended."""
    from concurrent.futures import ThreadPoolExecutor

    began = time.time()
    if not hosts:
        return 0.0
    with ThreadPoolExecutor(max_workers=min(64, len(hosts)), thread_name_prefix="fan-out") as pool:
        futures = [pool.submit(fn, h) for h in hosts]
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e
    return time.time() - began
