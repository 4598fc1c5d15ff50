"""Where processes run. One orchestrator drives every deployment through this interface:
``LocalHost`` runs processes on this machine, ``SshHost``
(Fabric) on a remote machine. A run's files are named by their path relative to the run
directory; each host keeps them under its own base directory (the local run directory, or
``<remote_dir>/runs/<run>`` on a remote machine) and ``fetch`` brings remote ones home.

Every process is recorded (command, pid, stdout, stderr, times, exit code) and stopped by
its pid: SIGTERM, then SIGKILL after a grace period. Never by name.
"""
from __future__ import annotations

import os
import shlex
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import rundir
from .errors import RunFailed


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

    def record(self) -> dict:
        return {"name": self.name, "host": self.host, "argv": self.argv, "pid": self.pid,
                "stdout": self.stdout, "stderr": self.stderr, "started": self.started,
                "stopped": self.stopped, "exit_code": self.returncode}


class Host(Protocol):
    name: str

    def bind_run(self, run_dir: Path) -> None:
        """Files of this run live under the host's base for ``run_dir``."""

    def path(self, rel: str) -> str:
        """Where a run file lives on this host (for command lines)."""

    def jar(self) -> str:
        """The k2bench jar on this host."""

    def start(self, name: str, argv: list[str], stdout: str, stderr: str) -> Proc: ...

    def poll(self, proc: Proc) -> int | None: ...

    def stop(self, proc: Proc, grace_s: float = 10.0) -> int | None: ...

    def signal(self, proc: Proc, sig: int) -> None:
        """Sends a signal to a process's group (fault injection: SIGKILL, SIGSTOP, SIGCONT)."""

    def put_text(self, rel: str, text: str) -> None:
        """Writes a run file the host's processes read (atomically: never seen half-written)."""

    def read_text(self, rel: str) -> str:
        """A run file's text on this host, "" if it does not exist (yet)."""

    def fetch(self, rel_dir: str) -> None:
        """Copies a directory of run files from the host into the local run directory."""

    def free_ports(self, count: int) -> list[int]: ...

    def close(self) -> None: ...


class LocalHost:
    """Processes on this machine, each in its own session so its whole group can be stopped."""

    name = "localhost"

    def __init__(self, jar: Path):
        self._jar = Path(jar)
        self.run_dir: Path | None = None

    def bind_run(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)

    def path(self, rel: str) -> str:
        return str(self.run_dir / rel)

    def jar(self) -> str:
        return str(self._jar)

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

    def fetch(self, rel_dir: str) -> None:
        return None  # already here

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

    def close(self) -> None:
        return None


class SshHost:
    """A machine reached over SSH (Fabric). Processes are started detached under a small
    shell that records the process's pid and, when it ends, its exit code, in files next
    to its output; they are stopped by that pid. Results come back over SFTP."""

    POLL_CACHE_S = 0.3

    def __init__(self, name: str, ssh_host: str, port: int, user: str, key: str | None,
                 remote_dir: str, jar: str = "/opt/k2bench/k2bench.jar", known_hosts: str | None = None,
                 connect_timeout: float = 15.0):
        from fabric import Connection  # imported here: only remote runs need Fabric

        self.name = name
        self.remote_dir = remote_dir.rstrip("/")
        self._jar = jar
        self.base: str | None = None
        self.local_run_dir: Path | None = None
        kwargs = {"key_filename": os.path.expanduser(key)} if key else {}
        self.conn = Connection(host=ssh_host, port=port, user=user, connect_timeout=connect_timeout,
                               connect_kwargs=kwargs)
        if known_hosts:
            # The test hosts' keys are pinned; Fabric otherwise auto-adds unknown hosts.
            self.conn.client.load_host_keys(known_hosts)
        self._status: dict[int, str] = {}
        self._status_at = 0.0
        self._procs: list[Proc] = []

    def _run(self, command: str, what: str, warn: bool = False):
        try:
            return self.conn.run(command, hide=True, warn=warn, in_stream=False)
        except Exception as e:  # noqa: BLE001 - any SSH or remote failure ends the run with its cause
            raise RunFailed(f"{self.name}: {what} failed: {type(e).__name__}: {str(e).strip()[:300]}") from None

    def bind_run(self, run_dir: Path) -> None:
        self.local_run_dir = Path(run_dir)
        self.base = f"{self.remote_dir}/runs/{Path(run_dir).name}"
        self._run(f"mkdir -p {shlex.quote(self.base)}", "creating the run directory")

    def path(self, rel: str) -> str:
        return f"{self.base}/{rel}"

    def jar(self) -> str:
        return self._jar

    def start(self, name: str, argv: list[str], stdout: str, stderr: str) -> Proc:
        out, err = self.path(stdout), self.path(stderr)
        pidf, rcf = f"{out}.pid", f"{out}.rc"
        inner = (f"{shlex.join(argv)} > {shlex.quote(out)} 2> {shlex.quote(err)} < /dev/null & "
                 f"echo $! > {shlex.quote(pidf)}; wait $!; echo $? > {shlex.quote(rcf)}")
        dirs = " ".join(shlex.quote(str(Path(p).parent)) for p in (out, err))
        # The subshell detaches the wrapper from the SSH session, whose channel then closes.
        pid_text = self._run(
            f"mkdir -p {dirs} && rm -f {shlex.quote(pidf)} {shlex.quote(rcf)} && "
            f"(setsid sh -c {shlex.quote(inner)} > /dev/null 2>&1 < /dev/null &) && "
            f"for i in $(seq 100); do [ -s {shlex.quote(pidf)} ] && break; sleep 0.05; done; "
            f"cat {shlex.quote(pidf)} 2>/dev/null || true", f"starting {name}").stdout.strip()
        if not pid_text.isdigit():
            raise RunFailed(f"{self.name}: {name} did not start (no pid in {pidf})")
        p = Proc(name, self.name, list(argv), int(pid_text), stdout, stderr, time.time(), handle=(pidf, rcf))
        self._procs.append(p)
        return p

    def _statuses(self) -> dict[int, str]:
        """Every process's state on this machine in one SSH command, cached briefly."""
        if time.time() - self._status_at < self.POLL_CACHE_S:
            return self._status
        live = [p for p in self._procs if p.returncode is None]
        if not live:
            return {}
        parts = [f"if [ -s {shlex.quote(p.handle[1])} ]; then echo {p.pid} rc $(cat {shlex.quote(p.handle[1])}); "
                 f"elif kill -0 {p.pid} 2>/dev/null; then echo {p.pid} running; else echo {p.pid} gone; fi"
                 for p in live]
        lines = self._run("; ".join(parts), "polling processes").stdout.splitlines()
        self._status = {int(ln.split()[0]): " ".join(ln.split()[1:]) for ln in lines if ln.strip()}
        self._status_at = time.time()
        return self._status

    def poll(self, proc: Proc) -> int | None:
        if proc.returncode is not None:
            return proc.returncode
        state = self._statuses().get(proc.pid, "running")
        if state == "running":
            return None
        if state.startswith("rc "):
            rc = int(state.split()[1])
        else:
            # Gone without an exit code: the wrapper itself was killed (e.g. the machine rebooted).
            rc = -int(signal.SIGKILL)
        proc.returncode, proc.stopped = rc, time.time()
        return rc

    def stop(self, proc: Proc, grace_s: float = 10.0) -> int | None:
        if self.poll(proc) is not None:
            return proc.returncode
        for sig, wait in (("TERM", grace_s), ("KILL", 5.0)):
            self._run(f"kill -{sig} {proc.pid} 2>/dev/null || true", f"stopping {proc.name}")
            deadline = time.time() + wait
            while time.time() < deadline:
                self._status_at = 0.0
                if self.poll(proc) is not None:
                    return proc.returncode
                time.sleep(0.2)
        return self.poll(proc)

    def signal(self, proc: Proc, sig: int) -> None:
        # The process itself: its wrapper shell must live on to record the exit code.
        self._run(f"kill -{signal.Signals(sig).name.removeprefix('SIG')} {proc.pid} 2>/dev/null || true",
                  f"signalling {proc.name}")
        self._status_at = 0.0

    def put_text(self, rel: str, text: str) -> None:
        import io

        target = self.path(rel)
        tmp = f"{target}.tmp"
        self._run(f"mkdir -p {shlex.quote(str(Path(target).parent))}", f"creating the directory of {rel}")
        try:
            self.conn.put(io.BytesIO(text.encode()), tmp)
        except Exception as e:  # noqa: BLE001
            raise RunFailed(f"{self.name}: writing {rel} failed: {e}") from None
        self._run(f"mv -f {shlex.quote(tmp)} {shlex.quote(target)}", f"writing {rel}")

    def read_text(self, rel: str) -> str:
        r = self._run(f"cat {shlex.quote(self.path(rel))} 2>/dev/null || true", f"reading {rel}")
        return r.stdout

    def fetch(self, rel_dir: str) -> None:
        """Every file under a remote run directory, over SFTP, into the local run directory."""
        remote_root = self.path(rel_dir)
        sftp = self.conn.sftp()
        stack = [remote_root]
        while stack:
            d = stack.pop()
            try:
                entries = sftp.listdir_attr(d)
            except FileNotFoundError:
                continue
            for e in entries:
                remote = f"{d}/{e.filename}"
                if stat.S_ISDIR(e.st_mode):
                    stack.append(remote)
                    continue
                local = self.local_run_dir / Path(remote).relative_to(self.base)
                local.parent.mkdir(parents=True, exist_ok=True)
                sftp.get(remote, str(local))

    def free_ports(self, count: int) -> list[int]:
        raise NotImplementedError("remote ports come from the deployment's base port")

    def close(self) -> None:
        self.conn.close()
