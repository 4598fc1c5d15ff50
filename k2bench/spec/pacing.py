"""Open-loop pacing: a datacenter's client threads and target split over its YCSB processes, and
the checks that YCSB can keep the pace asked of it."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError
from .points import _swept_field, system_points

# YCSB 0.17 takes -target as an int and paces each thread at target / threads ops/s. A
# thread paced at 1,000 ops/s or less first sleeps a random part of one tick, drawn by
# nextInt((int) tick_ns) with tick_ns = 1e9 / rate (ClientThread.run). Below
# 1e9 / (2^31 - 1) ops/s (~0.4657) the cast overflows: to a negative int or 0 for some rates
# (0.2328-0.4657 ops/s, ...: the thread dies with IllegalArgumentException, and YCSB exits
# as if done once every thread has), to a positive one for others (the thread runs). We
# reject every rate below the floor on purpose: which ones survive is an accident of the
# wrap-around, and a small change of the target or the threads would turn one into the
# other.
MIN_OPS_PER_S_PER_THREAD = 1e9 / (2**31 - 1)


@dataclass(frozen=True)
class ClientShare:
    """What one YCSB process of a datacenter runs: its -threads and -target (None: unpaced)."""
    threads: int
    target: int | None

    @property
    def per_thread(self) -> float | None:
        return None if self.target is None else self.target / self.threads

    def paces(self) -> bool:
        """YCSB can pace its threads at this rate (see MIN_OPS_PER_S_PER_THREAD)."""
        return self.target is None or self.target / self.threads >= MIN_OPS_PER_S_PER_THREAD

    @property
    def interval_ms(self) -> float | None:
        """The time between two operations of one thread on schedule, in ms."""
        return None if not self.target else 1000.0 * self.threads / self.target


def client_shares(threads_per_dc: int, target_per_dc: float | None, processes: int) -> list[ClientShare]:
    """How a datacenter's threads and target rate are split over its ``processes`` YCSB
    client processes (client slots): threads by integer division, the first processes
    taking one of the remainder each, at least one per process; the target evenly, rounded
    to the int YCSB's -target takes. The orchestrator launches exactly these, and the
    pacing check validates exactly these."""
    out = []
    for i in range(processes):
        threads = max(1, threads_per_dc // processes + (1 if i < threads_per_dc % processes else 0))
        target = None if not target_per_dc else round(target_per_dc / processes)
        out.append(ClientShare(threads, target))
    return out


def pacing_interval_ms(cfg: dict, processes_by_dc: dict[str, int]) -> float | None:
    """The longest time between two operations of one client thread on schedule, over every
    client process of a configuration (None: unpaced)."""
    cl = cfg["clients"]
    intervals = [s.interval_ms for n in set(processes_by_dc.values())
                 for s in client_shares(cl["threads_per_dc"], cl["target_ops_per_s_per_dc"], n)]
    return None if not cl["target_ops_per_s_per_dc"] or not intervals else max(intervals)


def _min_target(threads_per_dc: int, processes: int) -> int:
    """The smallest per-datacenter target (a multiple of ``processes``) at which every
    process of the split paces its threads."""
    most = max(s.threads for s in client_shares(threads_per_dc, None, processes))
    per_process = max(1, math.ceil(MIN_OPS_PER_S_PER_THREAD * most - 1e-9))
    while per_process / most < MIN_OPS_PER_S_PER_THREAD:
        per_process += 1
    return per_process * processes


def _split_text(shares: list[ClientShare]) -> str:
    return ("-target " + "/".join(str(s.target) for s in shares)
            + " -threads " + "/".join(str(s.threads) for s in shares))


def check_pacing(exp: dict, cfg: dict, processes_by_dc: dict[str, int] | None = None) -> None:
    """Every YCSB client process of one point (``cfg``) paces each of its threads at a rate
    YCSB 0.17 can keep, with the split the orchestrator launches. ``processes_by_dc``: client
    processes per datacenter (the deployment's client slots); None: one each (this machine)."""
    cl = cfg["clients"]
    target, threads = cl["target_ops_per_s_per_dc"], cl["threads_per_dc"]
    if not target:
        return
    by_count: dict[int, str] = {}
    for dc, n in (processes_by_dc or {"": 1}).items():
        by_count.setdefault(n, dc)
    for n, dc in sorted(by_count.items()):
        shares = client_shares(threads, target, n)
        if all(s.paces() for s in shares):
            continue
        field = _swept_field(exp, cfg, ("clients.target_ops_per_s_per_dc", "clients.threads_per_dc"),
                             "clients.target_ops_per_s_per_dc")
        slowest = min(s.per_thread for s in shares)
        where = (f"runs YCSB with {_split_text(shares)}" if n == 1 else
                 f"runs {dc}'s {n} client processes with {_split_text(shares)}")
        fewer = next((k for k in range(threads - 1, 0, -1)
                      if all(s.paces() for s in client_shares(k, target, n))), None)
        least = _min_target(threads, n)
        if fewer is None:
            fix = (f"clients.target_ops_per_s_per_dc must be at least {MIN_OPS_PER_S_PER_THREAD:.2f} x threads: "
                   f"at least {least} for {threads} clients.threads_per_dc")
        else:
            fix = f"use at most {fewer} clients.threads_per_dc or a clients.target_ops_per_s_per_dc of at least {least}"
        raise ConfigError(field, f"{target:g} ops/s over {threads} threads_per_dc {where}: {slowest:.3f} ops/s "
                          f"per thread, below the {MIN_OPS_PER_S_PER_THREAD:.4f} YCSB 0.17 can pace; {fix}")


def _check_pacing(exp: dict) -> None:
    """Every point's pacing, one client process per datacenter (the orchestrator checks
    again with the deployment's client processes)."""
    for _, _, cfg in system_points(exp):
        check_pacing(exp, cfg)
