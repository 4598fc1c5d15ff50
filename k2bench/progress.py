"""Live progress of a run (rich): experiment, system, point, trial, phase, elapsed/ETA and
the clients' current throughput. Plain lines when the output is not a terminal (CI, logs)."""
from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.table import Table


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    def __init__(self, console: Console | None = None):
        self.console = console or Console()
        self.live: Live | None = None
        self.state: dict = {}
        self.total = 0
        self.done = 0
        self.per_trial = 0.0
        self.started = 0.0
        self.last_phase = None

    def start(self, experiment: str, trials: int, eta_per_trial: float) -> None:
        self.state = {"experiment": experiment}
        self.total, self.per_trial, self.started = trials, eta_per_trial, time.time()
        if self.console.is_terminal:
            self.live = Live(self._render(), console=self.console, refresh_per_second=2, transient=False)
            self.live.start()
        else:
            self.console.print(f"{experiment}: {trials} system run(s), about {_fmt(trials * eta_per_trial)} in all")

    def begin_trial(self, index: int, system: str, point: str, trial: int) -> None:
        self.done = index
        self.update(system=system, point=point or "-", trial=trial)

    def skip(self, system: str, point: str, trial: int) -> None:
        self.console.print(f"skipping {system} {point or ''} trial {trial}: already complete")

    def update(self, **fields) -> None:
        self.state.update(fields)
        if self.live:
            self.live.update(self._render())
        elif fields.get("phase") and fields["phase"] != self.last_phase:
            self.last_phase = fields["phase"]
            s = self.state
            self.console.print(f"[{_fmt(time.time() - self.started)}] {s.get('system')} "
                               f"{s.get('point') or ''} trial {s.get('trial')}: {fields['phase']}")

    def _eta(self) -> float:
        remaining = (self.total - self.done) * self.per_trial
        e, x = self.state.get("elapsed"), self.state.get("expected")
        if e is not None and x:
            remaining -= min(e, x)
        return remaining

    def _render(self) -> Table:
        s = self.state
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("experiment", f"{s.get('experiment')}  ({self.done + 1}/{self.total})")
        t.add_row("system", f"{s.get('system', '-')}   point {s.get('point', '-')}   trial {s.get('trial', '-')}")
        x = s.get("expected")
        t.add_row("phase", f"{s.get('phase', '-')}   {_fmt(s.get('elapsed'))}" + (f" / {_fmt(x)}" if x else ""))
        rate = s.get("ops_per_s")
        t.add_row("throughput", "-" if rate is None else f"{rate:,.0f} ops/s")
        t.add_row("elapsed / ETA", f"{_fmt(time.time() - self.started)} / {_fmt(self._eta())}")
        return t

    def finish(self, status: str, reason: str | None) -> None:
        if self.live:
            self.live.stop()
            self.live = None
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
    row("throughput ops/s", lambda s: f(s["throughput_ops_per_s"]))
    row("schedule lag p50/p99", lambda s: "-" if not (s.get("schedule_lag_ms") or {}).get("count")
        else f"{f(s['schedule_lag_ms']['p50'])}/{f(s['schedule_lag_ms']['p99'])}")
    row("staleness p50/p75/p99", lambda s: "/".join(f(s["staleness_ms"][k]) for k in ("p50", "p75", "p99")))
    row("snapshot lag p50/p75/p99", lambda s: "-" if not (s.get("snapshot_lag_ms") or {}).get("count")
        else "/".join(f(s["snapshot_lag_ms"][k]) for k in ("p50", "p75", "p99")))
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
        worst = max((c for c in e["classes"].items() if c[1]["p99"] is not None), key=lambda c: c[1]["p99"])
        return f"{e['worst_p99']:.2f} ({worst[0]})" + (" DEGRADED" if e["degraded"] else "")

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
