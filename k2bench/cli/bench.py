"""``bench-throughput``: each system's peak per Fig. 9 setting, its CPU there and the transport's
echo ceiling (the climbing is k2bench/bench.py's)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console

from .. import rundir
from ..errors import ConfigError
from ..orchestrator import Orchestrator
from ..spec.validate import validate
from ..progress import Progress
from .common import _env, _load


def _attempt(q: dict) -> str:
    """One attempt at a point, by what disturbed it: "steal 9.1%", "stalled 11 s" or "n/a"."""
    st, stalled = q.get("steal_share"), q.get("stalled_s")
    if st is None and q.get("cpu") is not None:
        from .. import bench
        st = bench.steal_share(q)
    parts = ([f"steal {100 * st:.1f}%"] if st is not None else []) + ([f"stalled {stalled} s"] if stalled else [])
    return ", ".join(parts) or "n/a"


def cmd_bench_throughput(args) -> int:
    """Each system's real peak per Fig. 9 setting, its CPU there and the transport's echo
    ceiling (k2bench/bench.py); the ratios beside the paper's are analysis/throughput.py's."""
    import subprocess
    from rich.table import Table
    from .. import bench
    env = _env(args)
    exp = _load(env, bench.QUICK if args.quick else "bench-throughput")
    validate(env, exp)
    if args.quick and args.settings == "all":
        args.settings = "default"
    settings = bench.SETTINGS if args.settings == "all" else [s.strip() for s in args.settings.split(",")]
    for s in settings:
        if s not in bench.SETTINGS:
            raise ConfigError("--settings", f"unknown setting {s!r}; choose from {', '.join(bench.SETTINGS)} or all")
    if args.quick and len(settings) != 1:
        raise ConfigError("--settings", f"--quick climbs one setting, got {len(settings)}: name one, e.g. --settings default")
    if not exp["sweep"].get(bench.AXIS) or len(exp["sweep"]) != 1:
        raise ConfigError("sweep", f"bench-throughput climbs one ladder: sweep must be {bench.AXIS} only")
    runs = Path(args.runs)
    # runs/latest is left alone: each setting is a run directory of its own inside this one
    grew = None
    if args.resume:
        run_dir = Path(args.resume)
        if grew := bench.check_resume(run_dir, exp):
            rundir.write_json(run_dir / bench.BENCH_JSON, {"experiment": exp})  # the next resume compares with it
    else:
        run_dir = rundir.create(runs, exp["name"])
        rundir.write_json(run_dir / bench.BENCH_JSON, {"experiment": exp})
    # a log file (not a terminal) gets wide lines: rich would cut the tables to 80 columns
    console = Console() if sys.stdout.isatty() else Console(width=200)
    console.print(f"run directory: {run_dir}")
    if args.quick:
        d = exp["duration"]
        console.print(f"quick: {settings[0]} only, ladder {', '.join(map(str, exp['sweep'][bench.AXIS]))} threads/DC, "
                      f"{bench.QUICK_REFINE} refinement, {d['warmup_s']:g} s warm-up and {d['measure_s']:g} s windows, "
                      f"a shorter echo ceiling "
                      f"(full bench: make bench-throughput). For checking a change; peaks are coarser, and lower "
                      "while the JIT still compiles in a window (its share is in the CPU table).",
                      markup=False, highlight=False)
    if grew:
        console.print(grew, markup=False, highlight=False)
    orch = Orchestrator(env, Progress(console))
    climbs: list[bench.Climb] = []
    # SIGTERM stops the bench as Ctrl-C does (inside a point the orchestrator's own handler
    # does), so throughput.json is written and --resume works
    import signal
    from ..orchestrator import _raise_interrupt
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        try:
            for setting in settings:
                trials: dict[str, list[dict]] = {}  # by run directory: the setting's and its retries'
                try:
                    for system in exp["systems"]:
                        climbs.append(bench.climb(orch, exp, run_dir, setting, system, console.print, trials,
                                                  bench.QUICK_REFINE if args.quick else bench.REFINE))
                        if climbs[-1].failed:
                            console.print(f"{setting} / {system}: {climbs[-1].failed}")
                finally:
                    for name, done in trials.items():
                        bench.finish_manifest(run_dir / name, bench.setting_experiment(exp, setting), done)
        except KeyboardInterrupt:
            rundir.write_json(run_dir / "throughput.json", {"settings": settings, "quick": args.quick, "interrupted": True,
                                                            "climbs": [c.as_json() for c in climbs]})
            console.print("interrupted: the climbs so far are in throughput.json")
            return 130
        report = {"settings": settings, "quick": args.quick, "climbs": [c.as_json() for c in climbs], "echo": None,
                  "rules": {"fall": bench.FALL, "p99_factor": bench.P99_FACTOR}}
        rundir.write_json(run_dir / "throughput.json", report)  # the climbs, whatever the echo does
        echo = None
        if not args.no_echo:
            echo = _echo_ceiling(env, console, run_dir, args.quick)
            if echo == "interrupted":
                console.print("interrupted during the echo ceiling: the climbs are in throughput.json")
                return 130
            if echo is not None:
                rundir.write_json(run_dir / "throughput.json", report | {"echo": echo})
    finally:
        signal.signal(signal.SIGTERM, previous)

    cats, rows = bench.cpu_rows(climbs)
    if rows:
        t = Table(title="where the CPU goes at each system's peak (default setting; share of all CPU "
                        "of the run's JVMs in the measurement window)")
        t.add_column("")
        for system, _ in rows:
            t.add_column(system, justify="right")
        for c in cats:
            t.add_row(c, *[f"{100 * r['shares'].get(c, 0.0):.1f}%" for _, r in rows])
        t.add_row("cores busy", *[f"{r['cores']:.2f}" for _, r in rows])
        t.add_row("CPU ms per operation", *[f"{r['per_op_ms']:.3f}" if r["per_op_ms"] is not None else "-"
                                            for _, r in rows])
        for role in ("servers", "clients"):
            t.add_row(f"resident MB, {role} (largest JVM / all)",
                      *[f"{m['peak_rss_mb_max']:,} / {m['peak_rss_mb_sum']:,}" if (m := (r["memory_mb"] or {}).get(role))
                        else "-" for _, r in rows])
        console.print(t)
    t = Table(title="peaks (closed loop, emulation on" + ("; quick: coarse)" if args.quick else ")"))
    for col in ("setting", "system", "peak ops/s", "threads/DC", "ROT p99 ms", "lateness p99 ms", "a peak?"):
        t.add_column(col, justify="left" if col in ("setting", "system") else "right")
    for c in climbs:
        p = c.peak
        t.add_row(c.setting, c.system, f"{p['ops_per_s']:,.0f}" if p else "-", str(p["threads"]) if p else "-",
                  f"{p['rot_p99_ms']:.0f}" if p and p["rot_p99_ms"] is not None else "-",
                  f"{p['lateness_p99_ms']:.2f}" if p and p["lateness_p99_ms"] is not None else "-",
                  "failed" if c.failed else "DISTURBED" if c.disturbed else "yes" if c.stop and p else "NOT A PEAK")
    console.print(t)
    for c in climbs:
        steps = " ".join(f"{q['threads']}{'*' if q.get('refinement') else ''}:{q['ops_per_s']:,.0f}" for q in c.points)
        why = c.failed or c.stop or "the top of the ladder was reached: NOT A PEAK"
        again = [f"{q['threads']} (" + ", ".join(map(_attempt, q["disturbed_attempts"])) + " -> " + _attempt(q) + ")"
                 for q in c.points if q.get("disturbed_attempts")]
        console.print(f"{c.setting} / {c.system}: threads/DC:ops/s {steps} (*: within the stopping step); "
                      f"stopped: {why}"
                      + (f"; measured again, disturbed (CPU stolen, or every client stalled): {', '.join(again)}"
                         if again else ""),
                      soft_wrap=True, markup=False, highlight=False)
    t = Table(title="what an operation costs at each peak (messages: every delivery, clients' included; servers: "
                    "each server's protocol thread as a share of one core; ops/s per busiest core: at most the peak "
                    "if each server had a core of its own, transport not counted)")
    for col in ("setting", "system", "CPU ms/op", "protocol ms/op", "messages/op local / WAN",
                "busiest server, % of a core", "mean server", "ops/s per busiest core"):
        t.add_column(col, justify="left" if col in ("setting", "system") else "right")
    machine = Table(title="the machine at each peak (in kernel: of the JVMs' CPU, the part in system calls; "
                          "idle and steal: of the machine's time; wake-ups: threads blocking, to be woken again; "
                          "page faults: memory the JVMs touched for the first time)")
    for col in ("setting", "system", "cores busy", "in kernel", "machine idle", "steal", "wake-ups/op",
                "page faults/op"):
        machine.add_column(col, justify="left" if col in ("setting", "system") else "right")
    by_type = []  # each peak's messages per operation by type, printed after the table
    for c in climbs:
        k = bench.op_costs(c.peak)
        if k is None:
            continue
        if k["messages_by_type"]:
            parts = [f"{cls} " + ", ".join(f"{name} {n:.2f}" for name, n in list(types.items())[:6])
                     for cls, types in k["messages_by_type"].items()]
            by_type.append(f"{c.setting} / {c.system}: messages per operation by type: {'; '.join(parts)}")
        m = k["messages_per_op"]
        pct = lambda key: f"{100 * k[key]:.0f}%" if k.get(key) is not None else "-"  # noqa: E731
        one = lambda key: f"{k[key]:.1f}" if k.get(key) is not None else "-"  # noqa: E731
        acc = c.peak["cpu"]
        machine.add_row(c.setting, c.system, f"{acc['cpu_s'] / acc['window_s']:.2f}", pct("kernel_share"),
                        pct("machine_idle_share"), pct("machine_steal_share"),
                        one("wakeups_per_op"), one("page_faults_per_op"))
        t.add_row(c.setting, c.system, f"{k['cpu_ms_per_op']:.3f}", f"{k['protocol_ms_per_op']:.3f}",
                  f"{m['local']:.1f} / {m['wan']:.1f}" if m else "-",
                  f"{k['busiest_server']}: {100 * k['busiest_core_share']:.1f}%" if "busiest_server" in k else "-",
                  f"{100 * k['mean_core_share']:.1f}%" if "mean_core_share" in k else "-",
                  f"{k['busiest_ops_per_core']:,.0f}" if k.get("busiest_ops_per_core") else "-")
    console.print(t)
    console.print(machine)
    for line in by_type:
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    console.print(f"Fig. 9 ratios: python -m analysis.throughput {run_dir}", soft_wrap=True, markup=False,
                  highlight=False)
    if echo:
        console.print(bench.echo_line(echo, climbs), soft_wrap=True, markup=False, highlight=False)
    failed = [c for c in climbs if c.failed]
    return 1 if failed else 0


def _echo_ceiling(env, console: Console, run_dir: Path, quick: bool):
    """bench-echo's JSON, measured again (up to bench.ECHO_ATTEMPTS in all) while its windows
    spread past 10% (UNSTABLE): the ceiling is every ratio's denominator, and a window cut
    short by something else on the machine would raise them all. The first stable attempt
    stands, else the last; earlier attempts are listed in it (``unstable_attempts``) and
    kept beside it (echo.retry1.json ...). None when bench-echo failed; "interrupted" on Ctrl-C."""
    import subprocess
    from .. import bench
    earlier: list[dict] = []
    for attempt in range(bench.ECHO_ATTEMPTS):
        out = run_dir / ("echo.json" if attempt == 0 else f"echo.retry{attempt}.json")
        console.print(f"measuring the echo ceiling through the same transport (about {1 if quick else 2} min)"
                      + (f", attempt {attempt + 1} of {bench.ECHO_ATTEMPTS}: the last was UNSTABLE" if attempt else "")
                      + " ...")
        try:
            r = subprocess.run(env.launcher("bench-echo", "--json", str(out), *(bench.QUICK_ECHO if quick else ())),
                               capture_output=True, text=True)
        except KeyboardInterrupt:  # subprocess.run has stopped the echo's JVM
            return "interrupted"
        if r.returncode != 0:
            console.print(f"bench-echo failed (exit {r.returncode}): {r.stderr.strip()[-2000:]}")
            return None
        console.print(r.stdout.strip())
        echo = json.loads(out.read_text())
        if echo.get("stable", True) or attempt == bench.ECHO_ATTEMPTS - 1:
            return echo | ({"unstable_attempts": earlier} if earlier else {})
        earlier.append({k: echo.get(k) for k in ("echo_rpcs_per_s", "in_flight", "repeats")} | {"file": out.name})

