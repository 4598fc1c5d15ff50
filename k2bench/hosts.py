"""Where processes run. One orchestrator drives every deployment through this interface
(STYLE: frankenpaxos' Host): ``LocalHost`` runs processes on this machine; an SSH host
(Fabric, issue 6) implements the same methods for remote machines.

Every process is recorded (command, pid, stdout, stderr, times, exit code) and stopped by
its pid: SIGTERM to its process group, SIGKILL after a grace period. Never by name.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import rundir


@dataclass
class Proc:
    name: str
    host: str
    argv: list[str]
    pid: int
    stdout: Path
    stderr: Path
    started: float
    stopped: float | None = None
    returncode: int | None = None
    handle: object = field(default=None, repr=False, compare=False)

    def record(self) -> dict:
        return {"name": self.name, "host": self.host, "argv": self.argv, "pid": self.pid,
                "stdout": str(self.stdout), "stderr": str(self.stderr), "started": self.started,
                "stopped": self.stopped, "exit_code": self.returncode}


class Host(Protocol):
    name: str

    def start(self, name: str, argv: list[str], stdout: Path, stderr: Path) -> Proc: ...

    def poll(self, proc: Proc) -> int | None: ...

    def stop(self, proc: Proc, grace_s: float = 10.0) -> int | None: ...

    def free_ports(self, count: int) -> list[int]: ...

    def put_text(self, path: Path, text: str) -> None:
        """Writes a file the host's processes read (atomically: never seen half-written)."""


class LocalHost:
    """Processes on this machine, each in its own session so its whole group can be stopped."""

    name = "localhost"

    def start(self, name: str, argv: list[str], stdout: Path, stderr: Path) -> Proc:
        stdout.parent.mkdir(parents=True, exist_ok=True)
        stderr.parent.mkdir(parents=True, exist_ok=True)
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
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

    def put_text(self, path: Path, text: str) -> None:
        rundir.write_text(path, text)

    def free_ports(self, count: int) -> list[int]:
        socks, ports = [], []
        try:
            for _ in range(count):
                s = socket.socket()
                s.bind(("127.0.0.1", 0))
                socks.append(s)
                ports.append(s.getsockname()[1])
        finally:
            for s in socks:
                s.close()
        return ports
