"""Where processes run. One orchestrator drives every deployment through this interface:
``LocalHost`` runs processes on this machine, ``SshHost``
(Fabric, k2bench/deploy/ssh.py) on a remote machine. A run's files are named by their path relative to the run
directory; each host keeps them under its own base directory (the local run directory, or
``<remote_dir>/runs/<run>`` on a remote machine) and ``fetch`` brings remote ones home.

Every process is recorded (command, pid, stdout, stderr, times, exit code) and stopped by
its pid: SIGTERM, then SIGKILL after a grace period. Never by name.
"""
from __future__ import annotations

import fcntl
import getpass
import os
import random
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .. import rundir, systems
from ..errors import RunFailed

# Outgoing connections take their local ports from the kernel's ephemeral range, as bind(0)
# does: a port bind(0) reported free could be taken by another run's connect() before the
# server binds it. Ports are drawn below that range instead, where only a listener can be.
_LOW_PORTS = (10_000, 32_768)
# Below it, only another allocator can take a port between "free now" and the server's bind.
# So the range is cut into blocks and a process draws only from blocks it holds a lock on
# until it exits: POSIX record locks (lockf) on block-<first port>.lock, as the Java side's
# FreePorts takes them (same directory, same blocks), so JVMs and runs never share one.
_BLOCK = 512


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32_768, 60_999


def port_lock_dir() -> Path:
    """``K2BENCH_PORT_LOCKS``, else ``/tmp/k2bench-ports-<user>``: the Java side's rule."""
    env = os.environ.get("K2BENCH_PORT_LOCKS", "").strip()
    if env:
        return Path(env)
    return Path("/tmp") / f"k2bench-ports-{getpass.getuser()}"


class PortBlocks:
    """The blocks of loopback ports this process holds, and where its next draw starts."""

    def __init__(self, lock_dir: Path, lo: int, hi: int):
        self.lock_dir, self.lo, self.hi = lock_dir, lo, hi
        self.held: list[int] = []  # first ports; their files stay open, so locked
        self._files: list = []
        self._cursor = 0

    def take(self, count: int) -> list[int]:
        """``count`` distinct ports nothing listens on now."""
        probes: list[socket.socket] = []
        try:
            while len(probes) < count:
                probes.append(self._next())
            return [s.getsockname()[1] for s in probes]
        finally:
            for s in probes:
                s.close()

    def _next(self) -> socket.socket:
        while True:
            size = len(self.held) * _BLOCK
            for _ in range(size):
                i = self._cursor
                self._cursor = (i + 1) % size
                s = socket.socket()
                try:
                    s.bind(("127.0.0.1", self.held[i // _BLOCK] + i % _BLOCK))
                    return s
                except OSError:  # a server of ours, or a listener no allocator's
                    s.close()
            if not self._claim():
                return self._unlocked()
            self._cursor = size  # the new block's first port

    def _claim(self) -> bool:
        blocks = (self.hi - self.lo) // _BLOCK
        if blocks <= 0:
            return False
        try:
            self.lock_dir.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
        start = random.randrange(blocks)  # processes spread out
        for k in range(blocks):
            first = self.lo + (start + k) % blocks * _BLOCK
            if first in self.held:
                continue
            try:
                f = open(self.lock_dir / f"block-{first}.lock", "ab")
            except OSError:
                return False  # the directory is not ours to write: draw without locks
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.close()
                continue
            self._files.append(f)
            self.held.append(first)
            return True
        return False

    def _unlocked(self) -> socket.socket:
        """Every block held or the directory unusable: a random port below the range."""
        for _attempt in range(100 if self.hi - self.lo >= 1000 else 0):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", random.randrange(self.lo, self.hi)))
                return s
            except OSError:
                s.close()
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        return s


_process_blocks: PortBlocks | None = None


def free_loopback_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free now, from this process's blocks below the
    ephemeral range (bind(0) when the range leaves no room below it)."""
    global _process_blocks
    hi = min(_LOW_PORTS[1], _ephemeral_range()[0])
    if _process_blocks is None or _process_blocks.hi != hi:
        _process_blocks = PortBlocks(port_lock_dir(), _LOW_PORTS[0], hi)
    return _process_blocks.take(count)


@dataclass
class Proc:
    name: str
    host: str
    argv: list[str]
    pid: int
    stdout: str  # relative to the run directory
    stderr: str
    started: float
    stopped: float | None = None
    returncode: int | None = None
    handle: object = field(default=None, repr=False, compare=False)
    handle_host: object = field(default=None, repr=False, compare=False)  # the Host running it
    notes: dict = field(default_factory=dict)  # e.g. a client's first operation and its start skew

    def ended(self) -> str:
        """How it ended, for a message: its exit code, or why there is none."""
        if (why := self.notes.get("exit_unknown")):
            return f"ended without an exit code: {why}"
        return f"exited with code {self.returncode}"

    def record(self) -> dict:
        return {"name": self.name, "host": self.host, "argv": self.argv, "pid": self.pid,
                "stdout": self.stdout, "stderr": self.stderr, "started": self.started,
                "stopped": self.stopped, "exit_code": self.returncode, **self.notes}


class Host(Protocol):
    name: str
    # This machine: its pids are ours to sample (CPU per thread) and its clock is ours.
    this_machine: bool

    def bind_run(self, run_dir: Path) -> None:
        """Files of this run live under the host's base for ``run_dir``."""

    def path(self, rel: str) -> str:
        """Where a run file lives on this host (for command lines)."""

    def jar(self) -> str:
        """The k2bench jar on this host."""

    def class_archive(self) -> str | None:
        """The jar's class-data archive on this host (``make build`` dumps it beside the
        jar), or None: its JVMs then load every class from the jar."""

    def start(self, name: str, argv: list[str], stdout: str, stderr: str) -> Proc: ...

    def poll(self, proc: Proc) -> int | None: ...

    def stop(self, proc: Proc, grace_s: float = 10.0) -> int | None: ...

    def signal(self, proc: Proc, sig: int) -> None:
        """Sends a signal to a process's group (fault injection: SIGKILL, SIGSTOP, SIGCONT)."""

    def put_text(self, rel: str, text: str) -> None:
        """Writes a run file the host's processes read (atomically: never seen half-written)."""

    def read_text(self, rel: str) -> str:
        """A run file's text on this host, "" if it does not exist (yet)."""

    def fetch(self, rel_dir: str, timeout: float = 300.0) -> None:
        """Copies a directory of run files from the host into the local run directory."""

    unreachable: str | None  # why the host stopped answering, None while it answers

    def refresh_lease(self) -> bool:
        """Keeps the host's processes alive; they stop on their own once it goes stale.
        False when the host could not be reached to refresh it."""

    def free_ports(self, count: int) -> list[int]: ...

    def cores(self) -> int:
        """The machine's processors (what its server JVMs share)."""

    def close(self) -> None: ...


class LocalHost:
    """Processes on this machine, each in its own session so its whole group can be stopped."""

    name = "localhost"
    this_machine = True
    unreachable = None
    lease_s = 0  # local processes need no lease

    def __init__(self, jar: Path):
        self._jar = Path(jar)
        self.run_dir: Path | None = None

    def refresh_lease(self) -> bool:
        return True  # local processes need no lease

    def bind_run(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)

    def path(self, rel: str) -> str:
        return str(self.run_dir / rel)

    def jar(self) -> str:
        return str(self._jar)

    def class_archive(self) -> str | None:
        archive = systems.class_archive(self._jar)
        return str(archive) if archive else None

    def start(self, name: str, argv: list[str], stdout: str, stderr: str) -> Proc:
        out_path, err_path = Path(self.path(stdout)), Path(self.path(stderr))
        out_path.parent.mkdir(parents=True, exist_ok=True)
        err_path.parent.mkdir(parents=True, exist_ok=True)
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        return Proc(name, self.name, list(argv), p.pid, stdout, stderr, time.time(), handle=p)

    def poll(self, proc: Proc) -> int | None:
        rc = proc.handle.poll()
        if rc is not None and proc.returncode is None:
            proc.returncode, proc.stopped = rc, time.time()
        return rc

    def stop(self, proc: Proc, grace_s: float = 10.0) -> int | None:
        """SIGTERM to the process group (pgid = pid), SIGKILL if it outlives the grace period."""
        if self.poll(proc) is not None:
            return proc.returncode
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.handle.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        return self.poll(proc)

    def signal(self, proc: Proc, sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass

    def put_text(self, rel: str, text: str) -> None:
        rundir.write_text(Path(self.path(rel)), text)

    def read_text(self, rel: str) -> str:
        try:
            return Path(self.path(rel)).read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def fetch(self, rel_dir: str, timeout: float = 300.0) -> None:
        return None  # already here

    def free_ports(self, count: int) -> list[int]:
        return free_loopback_ports(count)

    def cores(self) -> int:
        return os.cpu_count() or 1

    def close(self) -> None:
        return None


class InServerHost:
    """Clients that run inside a server JVM (clients.processes: in_server; the launcher's
    ``serve --clients-dir``): starting one writes its YCSB arguments to ``<dir>/<name>.args``,
    the JVM writes its output beside it and its exit code to ``<name>.exit``. Everything
    else is the machine's host."""

    def __init__(self, host: "LocalHost", server: Proc, dir_rel: str):
        self.host, self.server, self.dir_rel = host, server, dir_rel
        self.name = host.name

    def __getattr__(self, attr):
        return getattr(self.host, attr)

    def start(self, name: str, argv: list[str], stdout: str, stderr: str) -> Proc:
        base = f"{self.dir_rel}/{name}"
        self.host.put_text(f"{base}.args", "".join(f"{a}\n" for a in argv))
        return Proc(name, self.host.name, list(argv), self.server.pid, f"{base}.stdout", f"{base}.stderr",
                    time.time())

    def poll(self, proc: Proc) -> int | None:
        text = self.host.read_text(f"{self.dir_rel}/{proc.name}.exit").strip()
        rc = int(text) if text else self.host.poll(self.server)
        if rc is not None:
            proc.returncode = rc
            proc.stopped = proc.stopped or time.time()
        return rc

    def stop(self, proc: Proc, grace_s: float = 10.0) -> int | None:
        """A client still running ends with its server JVM, which the trial stops next."""
        rc = self.poll(proc)
        proc.stopped = proc.stopped or time.time()
        return rc

    def signal(self, proc: Proc, sig: int) -> None:
        raise RunFailed(f"{proc.name} runs inside the server JVM and cannot be signalled alone")