"""Where CPU time goes: per-thread CPU of the run's local JVMs, from /proc.

Two snapshots of every process (``/proc/<pid>/stat``) and of each of its threads
(``/proc/<pid>/task/<tid>/stat``, whose name is the Java thread's name cut to 15
characters by Linux) bracket the measurement window; the difference, grouped by what each
thread does, is the table ``make bench-throughput`` prints. CPU of threads that ended
inside the window is in the process's total but no thread's: it is reported as
``exited threads``. Each server's protocol thread is also counted on its own
(``server_threads_s``). Nothing runs inside the JVMs, so the accounting costs them nothing.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

PROC = Path("/proc")
STEAL_LIMIT = 0.02  # share of the machine's time the hypervisor may take in a window before it is said
STOLEN = "the hypervisor took"  # how the summary's steal warning begins

PROTOCOL = "server protocol"
# (category, pattern on the thread name), first match wins. Thread names are set in
# system/ (k2b-*, srv-<id>-<system>) or by the JVM / gRPC / YCSB.
_RULES = [
    # srv-<id>-<system> (ServerActor's thread), cut to 15 characters; the name before it,
    # <system>-server-<id>, still counts (a host running an older jar), though not per server
    (PROTOCOL, re.compile(r"^srv-\d+-|^(?!k2bench-)[a-z0-9-]+-server-\d+$|^(?!k2bench-)[a-z0-9-]{10,}-serv")),
    ("transport (gRPC/Netty)", re.compile(r"^(k2b-io|k2b-accept|grpc-|epollEventLoop|nioEventLoop)")),
    ("WAN dispatchers", re.compile(r"^k2b-wan")),
    ("client threads (YCSB, workload, history, histograms)", re.compile(r"^(Thread-\d+|ClientThread|k2b-client)")),
    ("GC", re.compile(r"^(GC Thread|G1 |ZWorker|ZDriver|ZDirector|ZStat|ZUnmapper|ZUncommit|VM Thread|"
                      r"Parallel GC|PS |Conc#|ConcGC|GC-)")),
    ("JIT", re.compile(r"^(C1 |C2 |Sweeper|CompilerThre)")),
]
_SERVER_THREAD = re.compile(r"^srv-(\d+)-")
OTHER = "other (timers, logs, JVM)"
EXITED = "exited threads"
CATEGORIES = [c for c, _ in _RULES] + [OTHER, EXITED]


def rules(own: Mapping[str, str] | None = None) -> list[tuple[str, re.Pattern]]:
    """The rules, with a system's own thread categories (its descriptor's
    ``thread_categories``: label -> pattern) after the protocol thread's."""
    mine = [(c, re.compile(rx)) for c, rx in (own or {}).items()]
    return _RULES[:1] + mine + _RULES[1:]


def category(thread_name: str, rules_: list | None = None) -> str:
    for cat, rx in rules_ or _RULES:
        if rx.search(thread_name):
            return cat
    return OTHER


def _stat(stat_text: str) -> tuple[str, int, int, int | None]:
    """(name, utime + stime, stime, nice) from a stat line, CPU in clock ticks (fields 14
    and 15; stime: kernel mode), nice (field 19) None if the line has none; the name may
    hold spaces."""
    open_, close = stat_text.index("("), stat_text.rindex(")")
    fields = stat_text[close + 2:].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (stat_text[open_ + 1:close], utime + stime, stime,
            int(fields[16]) if len(fields) > 16 else None)


def _minor_faults(stat_text: str) -> int:
    """The process's minor page faults so far (stat field 10, all its threads): each one a
    page mapped on first touch, e.g. heap memory the kernel zeroes before handing it over."""
    return int(stat_text[stat_text.rindex(")") + 2:].split()[7])


def machine_ticks() -> dict[str, int]:
    """The whole machine's CPU ticks by state since boot (/proc/stat's first line): user
    and nice (user mode), system, idle (with iowait), irq (with softirq) and steal (time
    the hypervisor ran something else while this machine had work)."""
    fields = [int(x) for x in (PROC / "stat").read_text().splitlines()[0].split()[1:]]
    fields += [0] * (8 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
    return {"user": user, "nice": nice, "system": system, "idle": idle + iowait,
            "irq": irq + softirq, "steal": steal}


def _switches(status_text: str) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of a thread from its status file: the
    times it blocked (waited for work: each one a wake-up later) and was preempted."""
    v = dict.fromkeys(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"), 0)
    for ln in status_text.splitlines():
        key, _, value = ln.partition(":")
        if key in v and value.strip().isdigit():
            v[key] = int(value)
    return v["voluntary_ctxt_switches"], v["nonvoluntary_ctxt_switches"]


def snapshot(pids: dict[str, int]) -> dict[str, dict]:
    """{process name: {"total": ticks, "threads": {tid: (thread name, ticks)}, "kernel":
    {tid: ticks in kernel mode}, "nice": {tid: nice}, "switches": {tid: (voluntary,
    involuntary)}, "peak_rss_kb": kB, "minor_faults": count}} of the processes still alive
    (a process gone since is left out)."""
    out = {}
    for name, pid in pids.items():
        try:
            stat = (PROC / str(pid) / "stat").read_text()
            _, total, _, _ = _stat(stat)
            threads, kernel, nice, switches = {}, {}, {}, {}
            for task in (PROC / str(pid) / "task").iterdir():
                try:
                    tname, ticks, kernel[task.name], nice[task.name] = _stat((task / "stat").read_text())
                    threads[task.name] = (tname, ticks)
                    switches[task.name] = _switches((task / "status").read_text())
                except (FileNotFoundError, ProcessLookupError, ValueError):
                    continue  # the thread ended between listing and reading
        except (FileNotFoundError, ProcessLookupError):
            continue
        out[name] = {"total": total, "threads": threads, "kernel": kernel, "nice": nice, "switches": switches,
                     "peak_rss_kb": _peak_rss_kb(pid), "minor_faults": _minor_faults(stat)}
    return out


def _peak_rss_kb(pid: int) -> int | None:
    """The process's resident memory at its peak so far (VmHWM), in kB; None if unreadable."""
    try:
        text = (PROC / str(pid) / "status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    for ln in text.splitlines():
        key, _, value = ln.partition(":")
        if key == "VmHWM" and value.split() and value.split()[0].isdigit():
            return int(value.split()[0])
    return None


def account(before: dict, after: dict, seconds: float, roles: dict[str, str],
            machine: tuple[dict, dict] | None = None, own: Mapping[str, str] | None = None) -> dict:
    """CPU seconds per role ("servers" / "clients") and category between two snapshots,
    with the share of the machine's cores each used over ``seconds``; ``machine`` is the
    pair of machine_ticks() taken with them; ``own``: the system's own thread categories
    (``rules``).

    A thread present in both snapshots counts its difference; one born inside the window
    counts all its time; one that ended is in its process's total only (EXITED)."""
    hz = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count() or 1
    rules_ = rules(own)
    by_role: dict[str, dict[str, float]] = {}
    per_server: dict[str, float] = {}  # each server's protocol thread (srv-<id>-...)
    nices: dict[str, dict[str, set[int]]] = {}  # role -> category -> the nice values its threads ran at
    switched: dict[str, dict[str, list[int]]] = {}  # role -> category -> [voluntary, involuntary]
    in_kernel: dict[str, dict[str, float]] = {}  # role -> category -> seconds in kernel mode
    faults: dict[str, int] = {}  # role -> minor page faults of its processes
    for name, b in before.items():
        a = after.get(name)
        if a is None:
            continue
        role = by_role.setdefault(roles.get(name, "other"), dict.fromkeys([*(own or {}), *CATEGORIES], 0.0))
        counted = 0
        for tid, (tname, ticks) in a["threads"].items():
            prev = b["threads"].get(tid)
            # born in the window: not there before, or its id reused (less time than before)
            born = prev is None or ticks < prev[1]
            d = ticks if born else ticks - prev[1]
            cat = category(tname, rules_)
            role[cat] += d / hz
            if (k := a.get("kernel", {}).get(tid)) is not None:
                k_was = 0 if born else b.get("kernel", {}).get(tid, 0)
                by_cat = in_kernel.setdefault(roles.get(name, "other"), {})
                by_cat[cat] = by_cat.get(cat, 0.0) + max(0, k - k_was) / hz
            if (n := a.get("nice", {}).get(tid)) is not None:
                nices.setdefault(roles.get(name, "other"), {}).setdefault(cat, set()).add(n)
            if (sw := a.get("switches", {}).get(tid)) is not None:
                was = (0, 0) if born else b.get("switches", {}).get(tid, (0, 0))
                acc_sw = switched.setdefault(roles.get(name, "other"), {}).setdefault(cat, [0, 0])
                acc_sw[0] += max(0, sw[0] - was[0])
                acc_sw[1] += max(0, sw[1] - was[1])
            counted += d
            if cat == PROTOCOL and (m := _SERVER_THREAD.match(tname)):
                # summed: a server restarted inside the window has two threads
                per_server[m.group(1)] = per_server.get(m.group(1), 0.0) + d / hz
        role[EXITED] += max(0, a["total"] - b["total"] - counted) / hz
        if a.get("minor_faults") is not None and b.get("minor_faults") is not None:
            r = roles.get(name, "other")
            faults[r] = faults.get(r, 0) + max(0, a["minor_faults"] - b["minor_faults"])
    total = sum(sum(r.values()) for r in by_role.values())
    # Resident memory at the window's end, per role: the largest process and all of them,
    # each at its peak so far (VmHWM: the heap a JVM touched stays resident).
    memory: dict[str, dict] = {}
    for name, a in after.items():
        peak = a.get("peak_rss_kb")
        if peak is None or name not in before:
            continue
        m = memory.setdefault(roles.get(name, "other"), {"processes": 0, "peak_rss_mb_max": 0, "peak_rss_mb_sum": 0})
        m["processes"] += 1
        m["peak_rss_mb_max"] = max(m["peak_rss_mb_max"], round(peak / 1024))
        m["peak_rss_mb_sum"] += round(peak / 1024)
    return {
        "memory_mb": dict(sorted(memory.items())),
        "window_s": round(seconds, 3),
        "cores": cores,
        "cpu_s": round(total, 2),
        "machine_share": round(total / (seconds * cores), 3) if seconds > 0 else None,
        "roles": {role: {c: round(v, 2) for c, v in cats.items()} for role, cats in sorted(by_role.items())},
        # CPU seconds of each server's protocol thread, by server id: how evenly the load
        # falls on the servers (with one machine per server, the busiest one sets the peak)
        "server_threads_s": {k: round(v, 3) for k, v in sorted(per_server.items(), key=lambda kv: int(kv[0]))},
        # the scheduler priority of each category (client threads run below the servers)
        "nice": {role: {c: sorted(v) for c, v in cats.items()} for role, cats in sorted(nices.items())},
        # context switches in the window, voluntary (a thread blocked: one wake-up each) and
        # involuntary (preempted), per role and category
        "switches": {role: {c: {"voluntary": v[0], "involuntary": v[1]} for c, v in cats.items()}
                     for role, cats in sorted(switched.items())},
        # of each role's and category's CPU seconds, those in kernel mode (system calls:
        # futex waits and wake-ups, sockets, page faults)
        "kernel_s": {role: {c: round(v, 2) for c, v in cats.items()} for role, cats in sorted(in_kernel.items())},
        # minor page faults per role: pages mapped on first touch; a heap that keeps growing
        # into new memory has the kernel zero each page, in the allocating threads' kernel time
        "minor_faults": dict(sorted(faults.items())),
        # the whole machine over the window, in seconds by state: what the JVMs above did not
        # use (idle), what other processes and the kernel did, and steal (the hypervisor)
        **({"machine_s": {k: round((machine[1][k] - machine[0][k]) / hz, 2) for k in machine[0]}}
           if machine else {}),
    }


def by_category(acc: dict) -> dict[str, float]:
    """CPU seconds per category over all roles."""
    out = dict.fromkeys(CATEGORIES, 0.0)
    for cats in acc["roles"].values():
        for c, v in cats.items():
            out[c] = out.get(c, 0.0) + v  # a system's own categories too
    return out


class WindowSampler:
    """Snapshots the given local processes at ``start`` and ``end`` (epoch s) on a
    background thread; ``result(roles)`` is the accounting, or None if a snapshot is
    missing (the trial ended early)."""

    def __init__(self, pids: dict[str, int], start: float, end: float):
        import threading
        self.pids, self.start, self.end = pids, start, end
        self.snaps: list[tuple[float, dict]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import time
        for at in (self.start, self.end):
            if self._stop.wait(max(0.0, at - time.time())):
                return
            self.snaps.append((time.monotonic(), snapshot(self.pids), machine_ticks()))

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def result(self, roles: dict[str, str], own: Mapping[str, str] | None = None) -> dict | None:
        self.close()
        if len(self.snaps) < 2:
            return None
        (t_a, a, m_a), (t_b, b, m_b) = self.snaps
        return account(a, b, t_b - t_a, roles, machine=(m_a, m_b), own=own)


def steal_share(acc: dict | None) -> float | None:
    """The share of the machine's time (all its CPUs) the hypervisor gave to something else
    in the window (``machine_s`` of the accounting), or None if unknown."""
    m = (acc or {}).get("machine_s") or {}
    total = sum(v for v in m.values() if isinstance(v, (int, float)))
    return m["steal"] / total if total > 0 and isinstance(m.get("steal"), (int, float)) else None


def steal_warning(acc: dict | None) -> str | None:
    """A warning when steal exceeded ``STEAL_LIMIT``: a degraded emulation or a latency
    jump in such a window is the host's, not the system's."""
    share = steal_share(acc)
    if share is None or share <= STEAL_LIMIT:
        return None
    return (f"{STOLEN} {100 * share:.1f}% of the machine's time in the window (steal; limit "
            f"{100 * STEAL_LIMIT:.0f}%): lateness and latencies may be the host's, not the system's "
            "(run again when the host is quieter)")
