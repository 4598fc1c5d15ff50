"""Live progress of a run (rich.progress): experiment, system, point, trial, phase, the
clients' current throughput, a bar over the run's expected time with elapsed and remaining
time. Plain lines when the output is not a terminal (CI, logs)."""
from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, Progress as Bar, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from .summary import worst_class


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """The orchestrator's view of a run. The bar counts expected seconds: each trial is
    worth ``eta_per_trial``, and a trial's phase with an expected length (its warm-up,
    measurement, cool-down) fills its share as it elapses, so the remaining time follows
    the run's real pace."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console()
        self.bar: Bar | None = None
        self.task = None
        self.state: dict = {}
        self.total = 0
        self.done = 0
        self.per_trial = 0.0
        self.started = 0.0
        self.last_phase = None
        self.completed = 0.0

    def start(self, experiment: str, trials: int, eta_per_trial: float) -> None:
        self.state = {"experiment": experiment}
        self.total, self.per_trial, self.started = trials, eta_per_trial, time.time()
        if self.console.is_terminal:
            self.bar = Bar(TextColumn("[bold]{task.fields[experiment]}[/] {task.fields[where]}"),
                           TextColumn("{task.fields[phase]}"), BarColumn(), TextColumn("{task.fields[trials]}"),
                           TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                           TextColumn("{task.fields[rate]}"), console=self.console, refresh_per_second=2)
            self.task = self.bar.add_task("run", total=max(1.0, trials * eta_per_trial), **self._fields())
            self.bar.start()
        else:
            self.console.print(f"{experiment}: {trials} system run(s), about {_fmt(trials * eta_per_trial)} in all")

    def begin_trial(self, index: int, system: str, point: str, trial: int) -> None:
        self.done = index
        self.update(system=system, point=point or "-", trial=trial)

    def skip(self, system: str, point: str, trial: int) -> None:
        self.console.print(f"skipping {system} {point or ''} trial {trial}: already complete")

    def _fields(self) -> dict:
        s = self.state
        phase = s.get("phase", "-")
        x = s.get("expected")
        if s.get("elapsed") is not None:
            phase += f" {_fmt(s['elapsed'])}" + (f"/{_fmt(x)}" if x else "")
        rate = s.get("ops_per_s")
        return {"experiment": s.get("experiment", ""), "phase": phase,
                "where": " ".join(x for x in (s.get("system", "-"), s.get("point"), f"trial {s.get('trial', '-')}")
                                  if x and x != "-"),
                "trials": f"{min(self.done + 1, self.total)}/{self.total}",
                "rate": "" if rate is None else f"{rate:,.0f} ops/s"}

    def update(self, **fields) -> None:
        self.state.update(fields)
        if self.bar is not None:
            e, x = self.state.get("elapsed"), self.state.get("expected")
            within = min(e, x) if e is not None and x else 0.0
            # never backwards: the phases after the timed one (stopping, checking) have no
            # expected length, and the bar's remaining time divides by its progress
            self.completed = max(self.completed, self.done * self.per_trial + within)
            self.bar.update(self.task, completed=self.completed, **self._fields())
        elif fields.get("phase") and fields["phase"] != self.last_phase:
            self.last_phase = fields["phase"]
            s = self.state
            self.console.print(f"[{_fmt(time.time() - self.started)}] {s.get('system')} "
                               f"{s.get('point') or ''} trial {s.get('trial')}: {fields['phase']}")

    def finish(self, status: str, reason: str | None) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        self.console.print(f"run {status}" + (f": {reason}" if reason else ""))


def summary_table(summaries: list[dict]) -> Table:
    """One column per system (and point), one row per figure: fits a terminal."""
    t = Table(title="summary (latencies in ms)")
    t.add_column("", style="bold")
    for s in summaries:
        # fold, never truncate: a figure cut to "792…" is no figure
        t.add_column(s["system"] + (f" {s['point']}" if s.get("point") else ""), justify="right",
                     overflow="fold")

    def f(v):
        """Short enough for a terminal: a decimal below 100, none from 100 up."""
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"
        return str(v)

    def row(label, fn):
        t.add_row(label, *[fn(s) for s in summaries])

    rot = lambda s: s["ops"]["rot"]  # noqa: E731
    row("ROTs", lambda s: str(rot(s)["count"]))
    for p in ("mean", "p1", "p50", "p99"):
        row(f"ROT {p}", lambda s, p=p: f(rot(s)["latency_ms"][p]))
    row("ROT all-local", lambda s: "-" if rot(s)["all_local_fraction"] is None
        else f"{100 * rot(s)['all_local_fraction']:.1f}%")
    row("ROT WAN rounds 0/1/2/3", lambda s: "/".join(str(rot(s)["wan_rounds"][k]) for k in "0123"))
    for op in ("wot", "write"):
        row(f"{op.upper()} n, p50/p99", lambda s, op=op: f"{s['ops'][op]['count']}, "
            f"{f(s['ops'][op]['latency_ms']['p50'])}/{f(s['ops'][op]['latency_ms']['p99'])}"
            + (" *" if s["ops"][op].get("not_own") else ""))
    if any("rwt" in s["ops"] for s in summaries):  # systems with read-write transactions
        rwt = lambda s: s["ops"].get("rwt")  # noqa: E731
        row("RWT n, p50/p99", lambda s: "-" if not rwt(s) else
            f"{rwt(s)['count']}, {f(rwt(s)['latency_ms']['p50'])}/{f(rwt(s)['latency_ms']['p99'])}")
        row("RWT WAN rounds 0/1", lambda s: "-" if not rwt(s) else
            "/".join(str(rwt(s)["wan_rounds"][k]) for k in "01"))
    if any("visibility_ms" in s for s in summaries):
        row("visibility p50/p99", lambda s: "-" if not (s.get("visibility_ms") or {}).get("count")
            else f"{f(s['visibility_ms']['p50'])}/{f(s['visibility_ms']['p99'])}")
        at_read = lambda s: (s.get("visibility_ms") or {}).get("at_read") or {}  # noqa: E731
        if any(at_read(s).get("count") for s in summaries):  # BPR, as its authors' code records it
            row("visibility at read p50/p99", lambda s: "-" if not at_read(s).get("count")
                else f"{f(at_read(s)['p50'])}/{f(at_read(s)['p99'])}")
    if any("read_blocked_ms" in s for s in summaries):
        row("reads blocked, p50/p99", lambda s: "-" if not s.get("read_blocked_ms") else
            f"{100 * s['read_blocked_ms']['blocked_share']:.0f}%, "
            f"{f(s['read_blocked_ms']['p50'])}/{f(s['read_blocked_ms']['p99'])}")
        phase = lambda s: (s.get("read_blocked_ms") or {}).get("per_transaction") or {}  # noqa: E731
        row("read phase blocked, mean/p99", lambda s: "-" if not phase(s).get("count") else
            f"{f(phase(s)['mean'])}/{f(phase(s)['p99'])}")
        cpu = lambda s: (s.get("read_blocked_ms") or {}).get("cpu_us_per_blocked_read") or {}  # noqa: E731
        row("CPU per blocked read µs", lambda s: "-" if not cpu(s).get("count") else f(cpu(s)["mean"]))
    row("throughput ops/s", lambda s: f(s["throughput_ops_per_s"]))
    row("schedule lag p50/p99", lambda s: "-" if not (s.get("schedule_lag_ms") or {}).get("count")
        else f"{f(s['schedule_lag_ms']['p50'])}/{f(s['schedule_lag_ms']['p99'])}")
    row("staleness p50/p75/p99", lambda s: "/".join(f(s["staleness_ms"][k]) for k in ("p50", "p75", "p99")))
    row("snapshot lag p50/p75/p99", lambda s: "-" if not (s.get("snapshot_lag_ms") or {}).get("count")
        else "/".join(f(s["snapshot_lag_ms"][k]) for k in ("p50", "p75", "p99")))
    if any("rings" in s for s in summaries):  # Karma, COPS-PR
        rg = lambda s: s.get("rings") or {}  # noqa: E731
        pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        row("local access (WB/cache)", lambda s: "-" if not rg(s) else f"{pct(rg(s)['local_access_fraction'])} "
            f"({pct(rg(s)['write_buffer_fraction'])}/{pct(rg(s)['cache_fraction'])})")
        row("reads restricted", lambda s: "-" if not rg(s) else pct(rg(s)["restricted_fraction"]))
        row("writes with a ring down", lambda s: "-" if not rg(s) else pct(rg(s).get("down_ring_write_fraction")))
        row("write completion p50/p99", lambda s: "-" if not rg(s).get("write_completion_ms", {}).get("count") else
            f"{f(rg(s)['write_completion_ms']['p50'])}/{f(rg(s)['write_completion_ms']['p99'])}")
        row("dependencies per put, mean/p99", lambda s: "-" if not rg(s).get("dependencies_per_put") else
            f"{rg(s)['dependencies_per_put']['mean']:.2f}/{rg(s)['dependencies_per_put']['p99']}")
        row("invalidations per write", lambda s: "-" if not rg(s).get("invalidations") else
            f"{rg(s)['invalidations']['per_write']:.3f}")
    row("cache hit rate", lambda s: "-" if not s.get("cache") else f"{100 * s['cache']['hit_rate']:.1f}%")
    row("replication lag p50/p99", lambda s: "-" if not (s.get("replication_lag_ms") or {}).get("count")
        else f"{f(s['replication_lag_ms']['p50'])}/{f(s['replication_lag_ms']['p99'])}")
    row("  after the faults", lambda s: "-" if not (s.get("replication_lag_ms") or {}).get("after", {}).get("count")
        else f"{f(s['replication_lag_ms']['after']['p50'])}/{f(s['replication_lag_ms']['after']['p99'])}"
        f" (max {f(s['replication_lag_ms']['after']['max'])}, n {s['replication_lag_ms']['after']['count']})")

    def pending(s):
        p = s.get("replication_pending_at_end")
        if not p:
            return "-"
        return str(p["total"]) + (f" (without killed {', '.join(p['skipped_dcs'])})" if p.get("skipped_dcs") else "")

    row("  pending at the end", pending)

    def lateness(s):
        e = s.get("emulation_lateness_ms")
        if not e or e.get("worst_p99") is None:
            return "-"
        worst = worst_class(e)
        path = worst[1].get("late_path")
        return f"{e['worst_p99']:.2f} ({worst[0]}{', ' + path if path else ''})" + (" DEGRADED" if e["degraded"] else "")

    row("emulation lateness worst p99", lateness)
    row("errors", lambda s: str(s["errors"]))
    row("unavailability windows", lambda s: "-" if "availability" not in s else
        ", ".join(f"{w['dc']} {w['from_s']:.0f}-{w['to_s']:.0f}s" for w in s["availability"]["windows"]) or "none")
    row("consistency violations", lambda s: "not checked" if "consistency" not in s else
        f"{s['consistency']['violations']} of {s['consistency']['checked_ops']} ops"
        + (f" ({', '.join(f'{k} {v}' for k, v in s['consistency']['by_kind'].items())})"
           if s["consistency"]["violations"] else ""))
    notes = sorted({f"{s['system']}: {s['ops'][op]['not_own']}" for s in summaries for op in ("wot", "write")
                    if s["ops"][op].get("not_own")})
    if notes:
        t.caption = "* " + "; ".join(notes)
    return t


def summary_warnings(summaries: list[dict]) -> list[str]:
    """Every summary's warnings, one line each, named by system (and point)."""
    return [f"warning: {s['system']}" + (f" {s['point']}" if s.get("point") else "") + f": {w}"
            for s in summaries for w in s.get("warnings") or []]


def print_summary(console: Console, summaries: list[dict]) -> None:
    """The end table, then its warnings under it, each on one unbroken line."""
    console.print(summary_table(summaries))
    for line in summary_warnings(summaries):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
