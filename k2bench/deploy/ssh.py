"""Remote hosts over SSH (Fabric): processes started by a wrapper that writes their pid and exit
code and stops them when the orchestrator's lease goes stale, files put and fetched, and
hosts that do not answer named as such."""
from __future__ import annotations

import functools
import io
import os
import shlex
import signal
import socket
import stat
import threading
import time
from pathlib import Path

from ..errors import RunFailed
from .hosts import Proc


# How long a remote process outlives an orchestrator that stopped refreshing its lease.
LEASE_S = 60.0
LEASE_FILE = ".lease"  # in the run's directory on each host


def wrapper_script(argv: list[str], out: str, err: str, pidf: str, rcf: str, lease: str,
                   lease_s: float = LEASE_S, check_s: float = 2.0) -> str:
    """The POSIX shell script a remote process runs under: it starts the process, records
    its pid and, when it ends, its exit code, and runs a watchdog beside it.

    The watchdog stops the process (SIGTERM, SIGKILL 10 s later, by its pid) once the lease
    file has not been touched for ``lease_s`` seconds: the orchestrator touches it on every
    poll and from a background thread, so it goes stale only when the orchestrator is gone
    (killed, its machine or network down). A lease rather than an absolute deadline: a
    trial's length is not known in advance (loading, sweeps), and a deadline long enough
    for the longest would leave orphans running that long. Both ends read the host's own
    clock (touch sets the mtime, the watchdog compares with ``date``), so clock offsets
    between the orchestrator and the host do not matter.

    The pid file holds the process's pid and the wrapper's. A hang-up or a TERM meant for
    the wrapper's group is noted in ``<out>.wrapper`` and the wrapper waits on, so the exit
    code is still recorded; it is written by the shell itself (no fork)."""
    q = shlex.quote
    limit = max(1, int(round(lease_s)))
    note = f"{out}.lease-expired"
    watchdog = (
        "trap 'kill $s 2>/dev/null; exit 0' TERM; "
        "while kill -0 $pid 2>/dev/null; do "
        f"seen=$(stat -c %Y {q(lease)} 2>/dev/null || echo 0); "
        f"if [ $(( $(date +%s) - seen )) -gt {limit} ]; then "
        f"echo \"k2bench: lease {lease} not refreshed for {limit} s: stopping pid $pid\" > {q(note)}; "
        "kill -TERM $pid 2>/dev/null; i=0; "
        "while kill -0 $pid 2>/dev/null && [ $i -lt 10 ]; do sleep 1; i=$((i+1)); done; "
        "kill -KILL $pid 2>/dev/null; exit 0; fi; "
        f"sleep {check_s:g} & s=$!; wait $s; done")
    # The traps are set after the process started, so it keeps the default dispositions (a
    # JVM started with TERM ignored would skip its shutdown hooks), and before its pid is
    # written: a signal once the orchestrator knows it is caught. Builtins only in them (a
    # fork that fails ends a non-interactive sh). A caught signal ends `wait` early (128+n):
    # wait again; 127 means the exit was already collected by the first wait.
    traps = "; ".join(f"trap 'echo SIG{sig} >> \"$w\"; caught=1' {sig}" for sig in ("HUP", "TERM"))
    return (f"w={q(wrapper_note(out))}; caught=; "
            f"{shlex.join(argv)} > {q(out)} 2> {q(err)} < /dev/null & pid=$!; "
            f"{traps}; echo \"$pid $$\" > {q(pidf)}; "
            # the watchdog ignores a hang-up of the group (a TERM to the group ends it: the
            # process is ending too), so it is ours to stop when the process has ended
            f"( trap '' HUP; {watchdog} ) < /dev/null > /dev/null 2>&1 & wd=$!; "
            "wait $pid; rc=$?; "
            "while [ -n \"$caught\" ]; do caught=; wait $pid; r=$?; [ $r -eq 127 ] || rc=$r; done; "
            f"echo $rc > {q(rcf)}; kill $wd 2>/dev/null; wait $wd; exit 0")


def _clock() -> str:
    return time.strftime("%H:%M:%S", time.gmtime()) + " UTC"


def wrapper_note(out: str) -> str:
    """Where a wrapper notes the signals it caught (see wrapper_script)."""
    return f"{out}.wrapper"


class HostUnreachable(RunFailed):
    """A host stopped answering over SSH (a command timed out, or it cannot be reached)."""


def _timed_out(e: BaseException) -> bool:
    """A timeout on a connection that was open: the host (or its network) stopped answering."""
    import paramiko

    return isinstance(e, (socket.timeout, TimeoutError)) or (
        isinstance(e, paramiko.SSHException) and "timeout" in str(e).lower())


def _transient(e: BaseException) -> bool:
    """An SSH failure worth another attempt: the network or sshd was slow or reset, not a
    refused key or an unknown host."""
    import paramiko

    if isinstance(e, (paramiko.AuthenticationException, paramiko.BadHostKeyException)):
        return False
    if isinstance(e, paramiko.SSHException):
        text = str(e)
        return "known_hosts" not in text and "not found" not in text
    return isinstance(e, (OSError, EOFError, TimeoutError))


class SshHost:
    """A machine reached over SSH (Fabric). Processes are started detached under a small
    shell (``wrapper_script``) that records the process's pid and, when it ends, its exit
    code, in files next to its output, and stops it when the orchestrator's lease goes
    stale; they are stopped by that pid. Results come back over SFTP.

    Host keys are checked strictly against ``known_hosts`` (unknown hosts are refused, never
    added). Every command has a timeout, the transport sends keepalives, connecting retries
    transient failures with backoff, and a host that stops answering is marked unreachable:
    later commands on it fail at once with a one-line RunFailed naming it, so a hung host
    never hangs the orchestrator."""

    this_machine = False
    POLL_CACHE_S = 0.3
    EXIT_CODE_WAIT_S = 10.0  # how long a poll waits for a just-ended process's exit code
    KEEPALIVE_S = 15
    CONNECT_ATTEMPTS = 3
    BACKOFF_S = 1.0  # doubled after every failed attempt

    def __init__(self, name: str, ssh_host: str, port: int, user: str, key: str | None,
                 remote_dir: str, jar: str = "/opt/k2bench/k2bench.jar", known_hosts: str | None = None,
                 connect_timeout: float = 20.0, command_timeout: float = 60.0, lease_s: float = LEASE_S):
        import logging

        import paramiko
        from fabric import Connection  # imported here: only remote runs need Fabric

        # paramiko logs every failed handshake with a traceback on stderr; the run reports
        # the failure itself, in one line.
        logging.getLogger("paramiko").setLevel(logging.CRITICAL)

        if not known_hosts:
            raise ValueError("SshHost needs a known_hosts file: host keys are verified strictly")
        self.name = name
        self.remote_dir = remote_dir.rstrip("/")
        self._jar = jar
        self.base: str | None = None
        self.local_run_dir: Path | None = None
        self.command_timeout = command_timeout
        self.connect_timeout = connect_timeout
        self.lease_s = lease_s
        self.unreachable: str | None = None  # why, once the host stopped answering
        kwargs = {"key_filename": os.path.expanduser(key)} if key else {}
        # banner and auth timeouts: an sshd that accepts the connection and then says nothing
        # must not hold the orchestrator; channel_timeout bounds opening every command's channel.
        kwargs |= {"banner_timeout": connect_timeout, "auth_timeout": connect_timeout,
                   "channel_timeout": connect_timeout}
        self.endpoint = f"{ssh_host}:{port}"
        self.conn = Connection(host=ssh_host, port=port, user=user, connect_timeout=connect_timeout,
                               connect_kwargs=kwargs)
        # Fabric adds unknown host keys by default; only the cluster's known_hosts counts here.
        self.conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        self.conn.client.load_host_keys(known_hosts)
        self._lock = threading.Lock()
        self._status: dict[int, list[str]] = {}  # id(Proc) -> its state, words
        self._status_at = 0.0
        self._procs: list[Proc] = []

    # ------------------------------------------------------------ SSH with bounds

    def _bounded(self, fn, limit: float, what: str):
        """``fn()`` in a daemon thread, at most ``limit`` seconds: a belt over Fabric's own
        timeouts, so that nothing in the SSH stack can block the orchestrator for good."""
        box: dict = {}

        def target():
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                box["error"] = e

        th = threading.Thread(target=target, daemon=True, name=f"ssh-{self.name}")
        th.start()
        th.join(limit)
        if th.is_alive():
            self._lost(f"{what} did not return within {limit:.0f} s")
            raise HostUnreachable(f"{self.name}: {what} timed out after {limit:.0f} s: the host does not answer")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _lost(self, why: str) -> None:
        if self.unreachable is None:
            self.unreachable = why
        # closing may itself block on a dead peer: not on this thread
        threading.Thread(target=self._close_quietly, daemon=True).start()

    def _close_quietly(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001
            pass

    def _connect(self) -> None:
        """Opens the connection if needed, retrying transient failures with backoff."""
        if self.conn.is_connected:
            return
        delay, last = self.BACKOFF_S, None
        for attempt in range(self.CONNECT_ATTEMPTS):
            try:
                self.conn.open()
                self.conn.transport.set_keepalive(self.KEEPALIVE_S)
                return
            except Exception as e:  # noqa: BLE001 - classified below
                self._close_quietly()
                if not _transient(e):
                    raise RunFailed(f"{self.name}: SSH to {self.endpoint} refused: {type(e).__name__}: "
                                    f"{_one_line(e)}") from None
                last = e
            if attempt + 1 < self.CONNECT_ATTEMPTS:
                time.sleep(delay)
                delay *= 2
        self.unreachable = f"no SSH connection after {self.CONNECT_ATTEMPTS} attempts"
        raise HostUnreachable(f"{self.name}: cannot connect over SSH to {self.endpoint} after "
                              f"{self.CONNECT_ATTEMPTS} attempts: {type(last).__name__}: {_one_line(last)}")

    def _check_reachable(self, what: str) -> None:
        if self.unreachable is not None:
            raise HostUnreachable(f"{self.name}: {what} skipped: the host does not answer ({self.unreachable})")

    def _ssh(self, fn, what: str, timeout: float | None = None, retry: bool = True):
        """Runs ``fn()`` (Fabric calls) on the open connection, bounded. A command that
        times out marks the host unreachable at once; a connection that broke (reset,
        closed) is opened again and an idempotent command (``retry``) tried once more."""
        from invoke.exceptions import CommandTimedOut, UnexpectedExit

        limit = timeout or self.command_timeout
        self._check_reachable(what)
        if not self._lock.acquire(timeout=limit + 30):
            self._check_reachable(what)
            raise RunFailed(f"{self.name}: {what}: another SSH command on this host did not finish")
        try:
            self._check_reachable(what)
            attempts = 2 if retry else 1
            for attempt in range(attempts):
                self._bounded(self._connect, self.CONNECT_ATTEMPTS * (self.connect_timeout + 10),
                              f"connecting for {what}")
                try:
                    return self._bounded(fn, limit + 10, what)
                except (HostUnreachable, RunFailed):
                    raise
                except CommandTimedOut:
                    self._lost(f"{what} timed out after {limit:.0f} s")
                    raise HostUnreachable(f"{self.name}: {what} timed out after {limit:.0f} s: "
                                          "the host does not answer") from None
                except UnexpectedExit as e:
                    raise RunFailed(f"{self.name}: {what} failed: exit {e.result.exited}: "
                                    f"{_one_line(e.result.stderr) or '(no output)'}") from None
                except Exception as e:  # noqa: BLE001 - classified below
                    if _timed_out(e):
                        self._lost(f"{what}: {type(e).__name__}: {_one_line(e)}")
                        raise HostUnreachable(f"{self.name}: {what} timed out: the host does not answer "
                                              f"({type(e).__name__}: {_one_line(e)})") from None
                    if attempt + 1 < attempts and _transient(e):
                        self._close_quietly()
                        time.sleep(self.BACKOFF_S)
                        continue
                    raise RunFailed(f"{self.name}: {what} failed: {type(e).__name__}: {_one_line(e)}") from None
        finally:
            self._lock.release()

    def _run(self, command: str, what: str, warn: bool = False, timeout: float | None = None,
             retry: bool = True):
        limit = timeout or self.command_timeout
        return self._ssh(lambda: self.conn.run(command, hide=True, warn=warn, in_stream=False, timeout=limit),
                         what, timeout=limit, retry=retry)

    # ------------------------------------------------------------ the Host interface

    def bind_run(self, run_dir: Path) -> None:
        self.local_run_dir = Path(run_dir)
        self.base = f"{self.remote_dir}/runs/{Path(run_dir).name}"
        self._run(f"mkdir -p {shlex.quote(self.base)} && touch {shlex.quote(self.lease())}",
                  "creating the run directory")

    def lease(self) -> str:
        return f"{self.base}/{LEASE_FILE}"

    def refresh_lease(self, timeout: float = 20.0) -> bool:
        """Keeps this host's processes alive (see wrapper_script): touches the lease on a
        channel of its own, beside whatever command the run has going on this host (SSH
        multiplexes channels over one connection), so a long command (a fetch, a slow
        start) never lets the lease go stale behind it. A host that does not answer, or a
        connection not open yet, is left to the run's next command on it; False then."""
        transport = self.conn.transport
        if self.base is None or self.unreachable is not None or transport is None or not transport.is_active():
            return False
        ch = None
        try:
            ch = transport.open_session(timeout=min(timeout, self.connect_timeout))
            ch.exec_command(f"touch {shlex.quote(self.lease())}")
            deadline = time.time() + timeout
            while not ch.exit_status_ready():
                if time.time() > deadline:
                    return False
                time.sleep(0.05)
            return ch.recv_exit_status() == 0
        except Exception:  # noqa: BLE001 - see the docstring
            return False
        finally:
            if ch is not None:
                ch.close()

    def path(self, rel: str) -> str:
        return f"{self.base}/{rel}"

    def jar(self) -> str:
        return self._jar

    def class_archive(self) -> str | None:
        return None  # hosts get the jar alone: an archive is only good for the JDK that dumped it

    def start(self, name: str, argv: list[str], stdout: str, stderr: str) -> Proc:
        out, err = self.path(stdout), self.path(stderr)
        pidf, rcf = f"{out}.pid", f"{out}.rc"
        inner = wrapper_script(argv, out, err, pidf, rcf, self.lease(), self.lease_s)
        dirs = " ".join(shlex.quote(str(Path(p).parent)) for p in (out, err))
        # The subshell detaches the wrapper from the SSH session, whose channel then closes.
        # Not retried: a start that failed half-way may have started the process.
        words = self._run(
            f"mkdir -p {dirs} && rm -f {shlex.quote(pidf)} {shlex.quote(rcf)} && "
            f"touch {shlex.quote(self.lease())} && "
            f"(setsid sh -c {shlex.quote(inner)} > /dev/null 2>&1 < /dev/null &) && "
            f"for i in $(seq 100); do [ -s {shlex.quote(pidf)} ] && break; sleep 0.05; done; "
            f"cat {shlex.quote(pidf)} 2>/dev/null || true", f"starting {name}", retry=False).stdout.split()
        if len(words) != 2 or not all(w.isdigit() for w in words):
            raise RunFailed(f"{self.name}: {name} did not start (no pid in {pidf})")
        pid, wrapper = map(int, words)
        p = Proc(name, self.name, list(argv), pid, stdout, stderr, time.time(), handle=(pidf, rcf, wrapper))
        self._procs.append(p)
        return p

    def _statuses(self) -> dict[int, list[str]]:
        """Every process's state on this machine in one SSH command (which also refreshes
        the lease), cached briefly."""
        if time.time() - self._status_at < self.POLL_CACHE_S:
            return self._status
        live = [p for p in self._procs if p.returncode is None]
        if not live:
            return {}
        # A process found gone may not have its exit code written yet (its wrapper writes it
        # right after): wait for it while the wrapper lives, up to EXIT_CODE_WAIT_S shared by
        # the lines (n). Exit code first, then liveness, then the wait: a process that ends
        # between two checks is never called gone without the wait (it once was: -9 at a
        # stop, with its exit code written a moment later). Lines are keyed by position, not
        # pid: a pid may be reused once its process ended.
        parts = [f"touch {shlex.quote(self.lease())}", f"n={max(1, round(self.EXIT_CODE_WAIT_S * 10))}"]
        for i, p in enumerate(live):
            pidf, rcf, wrapper = p.handle
            note = shlex.quote(wrapper_note(pidf.removesuffix(".pid")))
            parts.append(
                f"rcf={shlex.quote(rcf)}; "
                f"if [ -s \"$rcf\" ]; then echo {i} rc $(cat \"$rcf\"); "
                f"elif kill -0 {p.pid} 2>/dev/null; then "
                f"if kill -0 {wrapper} 2>/dev/null; then echo {i} running; else echo {i} orphaned; fi; "
                f"else while [ $n -gt 0 ] && ! [ -s \"$rcf\" ] && kill -0 {wrapper} 2>/dev/null; do "
                f"sleep 0.1; n=$((n-1)); done; "
                f"if [ -s \"$rcf\" ]; then echo {i} rc $(cat \"$rcf\"); "
                f"elif kill -0 {wrapper} 2>/dev/null; then echo {i} gone wrapper-alive; "
                f"else echo {i} gone $(cat {note} 2>/dev/null | tr '\\n' ' '); fi; fi")
        lines = self._run("; ".join(parts), "polling processes").stdout.splitlines()
        by_pos = {int(ln.split()[0]): ln.split()[1:] for ln in lines if ln.strip()}
        self._status = {id(p): by_pos[i] for i, p in enumerate(live) if i in by_pos}
        self._status_at = time.time()
        return self._status

    def poll(self, proc: Proc) -> int | None:
        if proc.returncode is not None:
            return proc.returncode
        state = self._statuses().get(id(proc), ["running"])
        wrapper = proc.handle[2]
        if state[0] == "orphaned":
            # The process runs on, but nothing will record how it ends: say when that began.
            proc.notes.setdefault("wrapper_lost", f"its wrapper (pid {wrapper}) was gone by {_clock()}")
        if state[0] in ("running", "orphaned"):
            return None
        if state[0] == "rc":
            rc = int(state[1])
        else:
            # Gone without an exit code: taken as killed, and said why as far as it is known.
            rc = -int(signal.SIGKILL)
            if state[1:2] == ["wrapper-alive"]:
                why = f"its wrapper (pid {wrapper}) still runs but recorded none while the poll waited"
            else:
                why = proc.notes.get("wrapper_lost", f"its wrapper (pid {wrapper}) is gone too")
                caught = " ".join(state[1:])
                why += f" (it caught: {caught})" if caught else ""
            proc.notes["exit_unknown"] = why
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
        """Writes the file over SFTP into a temporary file that is then renamed (readers
        never see half of it). Not on a command's stdin: Invoke copies a stream that is not
        a terminal one byte per 10 ms, 100 bytes a second."""
        target = self.path(rel)
        self._ssh(lambda: self._put(target, text.encode()), f"writing {rel}")

    def _put(self, target: str, data: bytes) -> None:
        sftp = self.conn.sftp()
        sftp.get_channel().settimeout(self.command_timeout)  # each SFTP request
        missing, d = [], str(Path(target).parent)
        while d not in ("/", self.base):
            try:
                sftp.stat(d)
                break
            except FileNotFoundError:
                missing.append(d)
                d = str(Path(d).parent)
        for d in reversed(missing):
            sftp.mkdir(d)
        tmp = f"{target}.tmp"
        sftp.putfo(io.BytesIO(data), tmp, file_size=len(data), confirm=True)
        sftp.posix_rename(tmp, target)

    def read_text(self, rel: str) -> str:
        r = self._run(f"cat {shlex.quote(self.path(rel))} 2>/dev/null || true", f"reading {rel}")
        return r.stdout

    def fetch(self, rel_dir: str, timeout: float = 300.0) -> None:
        """Every file under a remote run directory, over SFTP, into the local run directory
        (at most ``timeout`` seconds in all)."""
        self._ssh(lambda: self._fetch(rel_dir), f"fetching {rel_dir}", timeout=timeout)

    def _fetch(self, rel_dir: str) -> None:
        remote_root = self.path(rel_dir)
        sftp = self.conn.sftp()
        sftp.get_channel().settimeout(self.command_timeout)  # each SFTP request
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

    @functools.cache
    def cores(self) -> int:
        out = self._run("nproc", "counting processors").stdout.strip()
        return int(out) if out.isdigit() and int(out) > 0 else 1

    def close(self) -> None:
        if self.unreachable is None:
            self._bounded(self._close_quietly, 30, "closing the connection")
        else:
            self._lost(self.unreachable)


def _one_line(e) -> str:
    return " ".join(str(e).split())[:300]


class LeaseKeeper:
    """Refreshes the lease of every remote host from a background thread, so that long
    waits (a slow phase, a fetch) never let it go stale while the orchestrator lives.
    Each host on its own schedule: a host whose refresh hangs holds up no other. A host
    that does not answer is left to the command that needs it next."""

    def __init__(self, hosts: list, interval_s: float):
        self.hosts = [h for h in hosts if hasattr(h, "refresh_lease") and h.lease_s]
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="lease-keeper")

    def __enter__(self) -> "LeaseKeeper":
        if self.hosts:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def _loop(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        pending: dict = {}  # host -> its refresh in flight
        with ThreadPoolExecutor(max_workers=min(32, len(self.hosts)), thread_name_prefix="lease") as pool:
            while not self._stop.wait(self.interval_s):
                for h in self.hosts:
                    f = pending.get(h)
                    if h.unreachable is None and (f is None or f.done()):
                        pending[h] = pool.submit(self._refresh, h)

    @staticmethod
    def _refresh(h) -> None:
        h.refresh_lease()  # when it fails, the next command of the run on this host says what is wrong
