"""What a process's output says when it failed: the tail of its stderr, the uncaught
exceptions of its threads, a YCSB client that could not start or stopped early, and the
clients' current rate (for the display)."""
from __future__ import annotations

import re

from ..deploy.hosts import Proc
from ..errors import RunFailed

CLIENT_EARLY_EXIT_S = 5  # a client that stops this long before the trial's end failed (clock skew below it)
STATUS_RE = re.compile(r"(\d+) sec: (\d+) operations; ([\d.]+) current ops/sec")

# What a JVM not run as root prints once at start (PRIORITY_JVM_ARGS): not an error.
PRIORITY_WARNING = "VM warning: -XX:ThreadPriorityPolicy=1 may require system level permission"


def tail(p: Proc, lines: int = 3) -> str:
    """The last lines of a process's stderr, wherever it runs (the priority warning left out)."""
    text = [ln for ln in p.handle_host.read_text(p.stderr).splitlines()
            if ln.strip() and PRIORITY_WARNING not in ln]
    return " | ".join(text[-lines:]) or "(no output)"


# The frame every YCSB 0.17 client worker thread runs (Client starts one
# java.lang.Thread per ClientThread; they are named like any other, "Thread-<n>", as are
# its status and terminator threads, so the stack tells them apart, not the name).
YCSB_WORKER_FRAME = "site.ycsb.ClientThread.run("


def thread_deaths(stderr: str) -> list[tuple[bool, str]]:
    """Every uncaught exception of a thread in a JVM's stderr: whether the thread was one of
    YCSB's client worker threads (its stack runs ClientThread.run), and the exception's
    first two lines ("Exception in thread ..." and its first frame)."""
    lines = stderr.splitlines()
    out = []
    for i, ln in enumerate(lines):
        if ln.startswith("Exception in thread "):
            stack = []
            for x in lines[i + 1:]:
                if not (x[:1].isspace() or x.startswith("Caused by:")):
                    break
                stack.append(x)
            out.append((any(YCSB_WORKER_FRAME in x for x in stack),
                        " ".join(x.strip() for x in [ln, *stack[:1]])))
    return out


def _worker_death(deaths: list[tuple[bool, str]]) -> str | None:
    return next((text for worker, text in deaths if worker), None)


def client_init_failure(p: Proc) -> str | None:
    """The error a YCSB client thread's DB.init threw (a server it could not reach, a bad
    property), or None. YCSB prints it and lets the thread end; the process lives on with
    no load until its maximum execution time, so waiting for it would only time out."""
    for line in p.handle_host.read_text(p.stderr).splitlines():
        if line.startswith("site.ycsb.DBException"):
            return line.split(":", 1)[1].strip()
    return None


def dead_thread(p: Proc) -> str | None:
    """The first uncaught exception of a YCSB client worker thread in a client's stderr, or
    None. YCSB goes on with the other threads, so the client's load fell short."""
    return _worker_death(thread_deaths(p.handle_host.read_text(p.stderr)))


def early_exit(p: Proc, ends_at: float, now: float) -> str | None:
    """Why a client that exited at ``now`` (epoch s) fails the trial, or None: it stopped more
    than CLIENT_EARLY_EXIT_S before ``ends_at``, the trial's end by this machine's clock.
    YCSB exits 0 once its threads are gone, so an exit code says nothing."""
    early = ends_at - now
    if early <= CLIENT_EARLY_EXIT_S:
        return None
    deaths = thread_deaths(p.handle_host.read_text(p.stderr))
    if (died := _worker_death(deaths)):
        return f"{p.name} stopped {early:.0f} s before the trial's end: a client thread died: {died}"
    if deaths:
        return f"{p.name} stopped {early:.0f} s before the trial's end: a thread died: {deaths[0][1]}"
    # The client stops itself at the start time plus the trial's length by its own clock.
    cause = ("a crash" if p.handle_host.this_machine else
             f"a crash, or its host clock ahead of this machine's by more than the {CLIENT_EARLY_EXIT_S} s slack")
    return (f"{p.name} stopped {early:.0f} s before the trial's end, with no thread death in its log ({cause}): "
            f"{tail(p)}")


def check_clients_after_run(clients: list[Proc]) -> list[str]:
    """After the clients ran to the end: a dead YCSB worker thread fails the trial (its
    process went on with fewer threads, so its load fell short); the deaths of other threads
    (gRPC, status) do not cut the offered load and come back as warnings for the summary."""
    warnings = []
    for p in clients:
        deaths = thread_deaths(p.handle_host.read_text(p.stderr))
        if (died := _worker_death(deaths)):
            raise RunFailed(f"{p.name}: a client thread died, so its load fell short: {died}")
        warnings += [f"{p.name}: a thread that is not a YCSB client thread died: {text}" for _, text in deaths]
    return warnings


def current_rate(clients: list[Proc]) -> float | None:
    """The clients' current throughput from YCSB's status lines (for the display only)."""
    total, seen = 0.0, False
    for p in clients:
        matches = STATUS_RE.findall(p.handle_host.read_text(p.stderr)[-2000:])
        if matches:
            total += float(matches[-1][2])
            seen = True
    return total if seen else None
