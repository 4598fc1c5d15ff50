"""The k2bench command line: run experiments, check experiment files, re-derive summaries."""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import sys
from pathlib import Path

from rich.console import Console

from . import experiment, inventory, rundir
from .errors import ConfigError
from .deploy import LocalDeployment, RemoteDeployment, check_shape
from .hosts import LocalHost
from .orchestrator import Env, Orchestrator, topology_doc, validate
from .progress import Progress, print_summary
from .systems import SystemInfo, Systems, local as systems_local

REPO = Path(__file__).resolve().parent.parent


def _by_system_and_point(summary: dict) -> list:
    """Sweep points in numeric order (40 before 120 before 360), not their names' order."""
    parts = re.split(r"(\d+(?:\.\d+)?)", f"{summary['system']} {summary.get('point') or ''}")
    return [(0, float(x), "") if i % 2 else (1, 0.0, x) for i, x in enumerate(parts)]


def _env(args) -> Env:
    for flag in ("lease_s", "ssh_timeout"):
        if getattr(args, flag, 60.0) <= 0:
            raise ConfigError(f"--{flag.replace('_', '-')}", f"must be > 0 seconds, got {getattr(args, flag)}")
    if getattr(args, "inventory", None):
        dep = RemoteDeployment(inventory.load(args.inventory), base_port=args.base_port,
                               jar=args.remote_jar, known_hosts=args.known_hosts,
                               lease_s=getattr(args, "lease_s", 60.0), command_timeout=getattr(args, "ssh_timeout", 60.0),
                               inventory_file=args.inventory)
    else:
        dep = LocalDeployment(LocalHost(Path(args.jar)))
    return Env(repo=REPO, jar=Path(args.jar), deployment=dep, java=args.java)


def _experiment_field(field: str) -> bool:
    """Whether a ConfigError's field is one of an experiment file (not a flag, the jar or an
    inventory's): its first name is a top-level field of experiment files."""
    head = field.split(".")[0].split("[")[0].split(" ")[0]
    return head in experiment.TOP_LEVEL


@contextlib.contextmanager
def _in_file(path: Path):
    """A ConfigError raised inside about a field of the experiment names the user's file
    (unless it names one already); others (an inventory's, a flag's) are left as they are."""
    try:
        yield
    except ConfigError as e:
        raise (e.in_file(path) if _experiment_field(e.field) else e) from None


def _load(env: Env, name: str) -> dict:
    path = experiment.find(env.workloads, name)
    systems = env.systems()  # asks the jar: a missing one is named on its own
    with _in_file(path):
        return experiment.resolve(experiment.load_file(path), path.stem, systems)


def servers_per_dc_override(exp: dict, n: int | None) -> dict:
    """The experiment with --servers-per-dc applied to its topology (saved with the run)."""
    if n is None:
        return exp
    if n < 1:
        raise ConfigError("--servers-per-dc", f"must be at least 1, got {n}")
    exp["topology"]["servers_per_dc"] = n
    return exp


def check_cluster_shape(exp: dict, inv: inventory.Inventory, inventory_file: str) -> None:
    """Every point of the experiment fits the inventory: one server host per server."""
    env = Env(repo=REPO, jar=Path("-"), deployment=None)
    for _, _, cfg in experiment.system_points(exp):
        doc = topology_doc(env, cfg)
        if not isinstance(doc.get("servers_per_dc"), int) or not isinstance(doc.get("datacenters"), list):
            continue  # malformed: validate names the field
        dcs = [dc for dc in doc["datacenters"] if dc in inv.datacenters]
        check_shape(inv, doc["servers_per_dc"], dcs, experiment=exp["name"], inventory_file=inventory_file)


def tc_verify(inv: inventory.Inventory, path: str | None) -> dict | None:
    """The ping verification of the deploy's tc (netem inventories): the file the netem role
    wrote, by default runs/.deploy/<experiment_id>/tc/verify.json, or None elsewhere."""
    if inv.latency != "netem":
        return None
    p = Path(path) if path else REPO / "runs" / ".deploy" / inv.experiment_id / "tc" / "verify.json"
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError("--tc-verify", f"{p} does not exist: run `k2bench deploy` (make emulab-run does) "
                          "first, or give the deploy's tc/verify.json") from None
    except json.JSONDecodeError as e:
        raise ConfigError("--tc-verify", f"{p} is not JSON ({e.msg} at line {e.lineno}): deploy again") from None


def cmd_run(args) -> int:
    env = _env(args)
    exp = servers_per_dc_override(_load(env, args.experiment), args.servers_per_dc)
    if args.inventory:
        check_cluster_shape(exp, env.deployment.inventory, args.inventory)
        env.deployment.tc_verify = tc_verify(env.deployment.inventory, args.tc_verify)
    if args.systems:
        chosen = args.systems.split(",")
        for s in chosen:
            if s not in exp["systems"]:
                raise ConfigError("--systems", f"{s!r} is not in the experiment's systems {exp['systems']}")
        exp["systems"] = chosen
    if args.no_check:
        exp["check"] = False
    with _in_file(experiment.find(env.workloads, args.experiment)):
        validate(env, exp)
    runs = Path(args.runs)
    if args.resume:
        run_dir = Path(args.resume)
        if not (run_dir / "manifest.json").exists():
            raise ConfigError("--resume", f"{run_dir} is not a run directory (no manifest.json)")
        old = json.loads((run_dir / "manifest.json").read_text())["config"]
        if old != rundir.as_saved(exp):
            raise ConfigError("--resume", f"{run_dir} was run with a different configuration of {exp['name']}")
    else:
        run_dir = rundir.create(runs, exp["name"])
    rundir.link_latest(runs, run_dir)
    console = Console()
    console.print(f"run directory: {run_dir}")
    code = Orchestrator(env, Progress(console)).run(exp, run_dir, resume=bool(args.resume))
    summaries = [json.loads(p.read_text()) for p in sorted(run_dir.glob("*/summary.json"))]
    summaries += sorted((json.loads(p.read_text()) for p in run_dir.glob("*/*/summary.json")
                         if not p.parent.name.startswith("trial-")), key=_by_system_and_point)
    if summaries:
        print_summary(console, summaries)
    from . import placement_report
    if placement_report.has_placements(exp):
        placement_report.print_report(console, placement_report.report(run_dir, env.check_output))
        console.print(f"tables: {run_dir / placement_report.TABLE_FILE}")
        _placement_figures(console, run_dir)
    return code


def _placement_figures(console, run_dir: Path) -> None:
    """A placement run's figures, drawn by analysis's ``placement-figures`` command when it
    is installed (the harness never imports analysis)."""
    draw = plugin_commands().get("placement-figures")
    if draw is None:
        console.print("figures: not drawn (the analysis package is not installed)")
    elif draw.load()([str(run_dir)]) != 0:
        console.print("figures: not drawn")


def cmd_placement_report(args) -> int:
    """The model's predicted read latency beside the measured one for each trial of a run
    (placement.json and its tables, placement.md, in the run; k2bench/placement_report.py)."""
    from rich.console import Console
    from . import placement_report
    placement_report.check_run(Path(args.run))
    console = Console()
    placement_report.print_report(console, placement_report.report(Path(args.run), _env(args).check_output))
    console.print(f"tables: {Path(args.run) / placement_report.TABLE_FILE}")
    _placement_figures(console, Path(args.run))
    return 0


def cmd_bench_throughput(args) -> int:
    """Each system's real peak per Fig. 9 setting, its CPU there and the transport's echo
    ceiling (k2bench/bench.py); the ratios beside the paper's are analysis/throughput.py's."""
    import subprocess
    from rich.table import Table
    from . import bench
    env = _env(args)
    exp = _load(env, "bench-throughput")
    validate(env, exp)
    settings = bench.SETTINGS if args.settings == "all" else [s.strip() for s in args.settings.split(",")]
    for s in settings:
        if s not in bench.SETTINGS:
            raise ConfigError("--settings", f"unknown setting {s!r}; choose from {', '.join(bench.SETTINGS)} or all")
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
    if grew:
        console.print(grew, markup=False, highlight=False)
    orch = Orchestrator(env, Progress(console))
    climbs: list[bench.Climb] = []
    # SIGTERM stops the bench as Ctrl-C does (inside a point the orchestrator's own handler
    # does), so throughput.json is written and --resume works
    import signal
    from .orchestrator import _raise_interrupt
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        try:
            for setting in settings:
                trials: dict[str, list[dict]] = {}  # by run directory: the setting's and its retries'
                try:
                    for system in exp["systems"]:
                        climbs.append(bench.climb(orch, exp, run_dir, setting, system, console.print, trials))
                        if climbs[-1].failed:
                            console.print(f"{setting} / {system}: {climbs[-1].failed}")
                finally:
                    for name, done in trials.items():
                        bench.finish_manifest(run_dir / name, bench.setting_experiment(exp, setting), done)
        except KeyboardInterrupt:
            rundir.write_json(run_dir / "throughput.json", {"settings": settings, "interrupted": True,
                                                            "climbs": [c.as_json() for c in climbs]})
            console.print("interrupted: the climbs so far are in throughput.json")
            return 130
        report = {"settings": settings, "climbs": [c.as_json() for c in climbs], "echo": None,
                  "rules": {"fall": bench.FALL, "p99_factor": bench.P99_FACTOR}}
        rundir.write_json(run_dir / "throughput.json", report)  # the climbs, whatever the echo does
        echo = None
        if not args.no_echo:
            console.print("measuring the echo ceiling through the same transport (about 2 min) ...")
            try:
                r = subprocess.run(env.launcher("bench-echo", "--json", str(run_dir / "echo.json")),
                                   capture_output=True, text=True)
            except KeyboardInterrupt:  # subprocess.run has stopped the echo's JVM
                console.print("interrupted during the echo ceiling: the climbs are in throughput.json")
                return 130
            if r.returncode != 0:
                console.print(f"bench-echo failed (exit {r.returncode}): {r.stderr.strip()[-2000:]}")
            else:
                console.print(r.stdout.strip())
                echo = json.loads((run_dir / "echo.json").read_text())
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
    t = Table(title="peaks (closed loop, emulation on)")
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
        again = [f"{q['threads']} (steal " + ", ".join(f"{100 * a['steal_share']:.1f}%" for a in q["disturbed_attempts"])
                 + " -> " + (f"{100 * st:.1f}%" if (st := bench.steal_share(q)) is not None else "n/a") + ")"
                 for q in c.points if q.get("disturbed_attempts")]
        console.print(f"{c.setting} / {c.system}: threads/DC:ops/s {steps} (*: within the stopping step); "
                      f"stopped: {why}"
                      + (f"; measured again, the hypervisor having taken CPU: {', '.join(again)}" if again else ""),
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


def cmd_validate(args) -> int:
    env = _env(args)
    names = args.experiments or sorted(p.stem for p in env.workloads.glob("*.yaml"))
    for name in names:
        exp = _load(env, name)
        with _in_file(experiment.find(env.workloads, name)):
            validate(env, exp)
        n = len(experiment.points(exp)) * len(exp["systems"]) * exp["trials"]
        print(f"{name}: ok ({n} system run(s))")
    return 0


def cmd_systems(args) -> int:
    """The bundled systems as the launcher declares them: claims, placements, own options."""
    env = Env(repo=REPO, jar=Path(args.jar), deployment=None, java=args.java)
    for name, s in env.system_info.items():
        rounds = s.max_wan_rounds
        print(f"{name}: {s.description}")
        print(f"  placements: {', '.join(s.placements)}; read-only transactions: "
              + (f"at most {rounds} wide-area round(s)" if rounds is not None else "no round claim")
              + ("; read-write transactions" if s.read_write_transactions else "")
              + ("" if s.write_only_transactions else "; no write-only transactions")
              + ("" if s.message_loss else "; needs reliable channels (no partition with mode: drop)")
              + ("; a datacenter cache" if s.dc_cache else "")
              + ("" if s.causal else "; NOT causal (a negative control: the checker finds violations)")
              + ("; run by default" if s.run_by_default else "")
              + (f"; of the {s.paper} paper's evaluation" if s.paper else ""))
        for o in s.options:
            bounds = ("" if o["type"] == "boolean" else f", one of {' | '.join(o['choices'])}" if o["type"] == "choice"
                      else f", {o['min']}..{o['max']}")
            print(f"  server.options.{name}.{o['name']}: {o['type']}, default {o['default']}{bounds}: {o['description']}")
        if s.mutants:
            print(f"  mutants (testing.mutant): {', '.join(s.mutants)}")
    return 0


def cmd_summarize(args) -> int:
    """Re-derives summary.json of every trial in a run from its raw logs."""
    from .faults import paused_ms
    from .summary import EMULATION_DEGRADED, SCHEDULE_WARNING, replication_pending_at_end, summarize
    run = Path(args.run)
    manifest = json.loads((run / "manifest.json").read_text())
    for entry in manifest.get("trials") or legacy_trials(run):
        path = run / entry["dir"] / "summary.json"
        if not path.exists():
            continue
        old = json.loads(path.read_text())
        logs = {dc: [run / entry["dir"] / rel for rel in rels] for dc, rels in entry["client_logs"].items()}
        after_ms = (old.get("replication_lag_ms") or {}).get("after", {}).get("from_ms")
        cfg = manifest["config"]
        cfg = copy.deepcopy(cfg)
        for axis, value in old.get("point_values", {}).items():
            experiment.axis_set(cfg, axis, value)
        cfg = experiment.for_system(cfg, old["system"])  # as the system ran it (its per_system overrides)
        new = summarize(logs, system=old["system"], experiment=manifest["experiment"],
                        window_ms=tuple(old["window_ms"]), origin_ms=old["timeseries"]["origin_ms"],
                        server_logs=sorted((run / entry["dir"] / "servers").glob("*.hlog")), after_ms=after_ms,
                        pacing_interval_ms=experiment.pacing_interval_ms(cfg, {dc: len(ps) for dc, ps in logs.items()}),
                        paused_ms=paused_ms(run / entry["dir"] / "timeline.jsonl"))
        new |= {k: old[k] for k in ("point", "point_values", "trial", "start_ms", "start", "server_stats",
                                    "availability", "faults", "consistency", "cpu", "server_processes") if k in old}
        if new["cache"] is None and old.get("cache"):
            new["cache"] = old["cache"]  # a run whose clients did not log cache_miss yet
        new["replication_pending_at_end"] = replication_pending_at_end(run / entry["dir"] / "servers",
                                                                       old.get("faults", []))
        new["warnings"] += [w for w in old.get("warnings", []) if not w.startswith((SCHEDULE_WARNING, EMULATION_DEGRADED))]
        rundir.write_json(path, new)
        print(f"re-derived {path}")
    return 0


def cmd_check(args) -> int:
    """Runs the consistency checker again on every trial of a run (from its histories)."""
    from .orchestrator import check_trial_dir
    info = _env(args).system_info
    run = Path(args.run)
    if not (run / "manifest.json").exists():
        raise ConfigError("run", f"{run} is not a run directory (no manifest.json)")
    manifest = json.loads((run / "manifest.json").read_text())
    mutant = manifest["config"].get("testing", {}).get("mutant")
    total = 0
    for entry in manifest.get("trials") or legacy_trials(run):
        tdir = run / entry["dir"]
        if not (tdir / "summary.json").exists():
            continue
        summary = json.loads((tdir / "summary.json").read_text())
        c = check_trial_dir(tdir, summary["system"], info.info(summary["system"]).max_wan_rounds, mutant)
        summary["consistency"] = c
        rundir.write_json(tdir / "summary.json", summary)
        total += c["violations"]
        kinds = ", ".join(f"{k} {v}" for k, v in c["by_kind"].items())
        print(f"{entry['dir']}: {c['violations']} violations in {c['checked_ops']} operations"
              + (f" ({kinds})" if kinds else ""))
    return 1 if total else 0


def legacy_trials(run: Path) -> list[dict]:
    """Trials of a run made before the manifest listed them: one client log per datacenter."""
    out = []
    for s in sorted(run.rglob("summary.json")):
        if "median_of_trials" in json.loads(s.read_text()):
            continue
        logs = sorted((s.parent / "clients").glob("client-*.hlog"))
        out.append({"dir": str(s.parent.relative_to(run)),
                    "client_logs": {p.stem.removeprefix("client-"): [f"clients/{p.name}"] for p in logs}})
    return out


def _extra_vars(args, extra: dict) -> dict:
    import yaml

    for item in args.extra_var or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError("--extra-var", f"{item!r} is not NAME=VALUE")
        extra[key] = yaml.safe_load(value)
    return extra


def _deploy_experiment(args) -> dict | None:
    """The experiment of `deploy --experiment` (with --servers-per-dc applied), resolved
    without the jar: the deploy may run before the jar is built on this machine."""
    if not getattr(args, "experiment", None):
        if getattr(args, "servers_per_dc", None) is not None:
            raise ConfigError("--servers-per-dc", "needs --experiment NAME (the experiment whose shape to check)")
        return None
    path = experiment.find(REPO / "workloads", args.experiment)
    with _in_file(path):
        doc = experiment.load_file(path)
        # the file's own systems stand for the bundled ones; a file that names none runs the jar's defaults
        named = doc.get("systems")
        known = Systems(SystemInfo(n) for n in named) if isinstance(named, list) and named else systems_local()
        exp = experiment.resolve(doc, path.stem, known)
    return servers_per_dc_override(exp, getattr(args, "servers_per_dc", None))


def _tc_rtt_ms(args, exp: dict | None = None) -> dict:
    """The RTT matrix tc emulates: the topology of the experiment (--experiment: its file
    with the experiment's overrides, rtt_scale applied), else the --topology file."""
    import yaml

    from .tc import rtt_matrix
    if getattr(args, "experiment", None) and args.topology:
        raise ConfigError("--topology", "give --experiment NAME or --topology FILE, not both "
                          "(the experiment's own topology is the one its runs expect)")
    if exp is None:
        exp = _deploy_experiment(args)
    if exp is not None:
        env = Env(repo=REPO, jar=Path(args.jar), deployment=None, java=args.java)
        matrices: list[dict] = []
        for _, _, cfg in experiment.system_points(exp):
            m = rtt_matrix(topology_doc(env, cfg), "topology")
            if m not in matrices:
                matrices.append(m)
        if len(matrices) > 1:
            raise ConfigError("--experiment", f"{exp['name']} sweeps the RTT matrix (topology.file or rtt_scale), "
                              "but tc holds one matrix per deploy: split the sweep into one experiment per value")
        return matrices[0]
    if args.topology:
        path = Path(args.topology)
        try:
            doc = yaml.safe_load(path.read_text())
        except FileNotFoundError:
            raise ConfigError("--topology", f"{path} does not exist") from None
        return rtt_matrix(doc, str(path))
    raise ConfigError("--experiment", "the inventory's latency is netem, so tc needs an RTT matrix: "
                      "pass --experiment NAME (its topology) or --topology FILE")


def _playbook(inv, hosts_file: Path, playbook: str, known_hosts: Path) -> int:
    """Runs a playbook of ansible/ on the inventory's machines (forks and host keys:
    ansible_inventory.playbook_argv)."""
    import subprocess

    from .ansible_inventory import playbook_argv
    cmd = playbook_argv(inv, hosts_file, REPO / "ansible" / playbook, known_hosts,
                        Path(sys.executable).parent / "ansible-playbook")
    print(f"ansible inventory: {hosts_file}", flush=True)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible" / "ansible.cfg"))
    return subprocess.run(cmd, env=env).returncode


def cmd_deploy(args) -> int:
    """Prepares an inventory's machines with Ansible (ansible/site.yml): Java, the jar, the
    client and server directories, and tc/netem latency where the inventory says so."""
    import yaml

    from .ansible_inventory import known_hosts, to_ansible
    inv = inventory.load(args.inventory)
    # The shape check before Ansible runs; tc's matrix comes from the same experiment.
    exp = _deploy_experiment(args)
    if exp is not None:
        check_cluster_shape(exp, inv, args.inventory)
    keys = known_hosts(inv, args.inventory, args.known_hosts)
    jar = Path(args.jar)
    if not jar.exists():
        raise ConfigError("--jar", f"{jar} is missing; run `make build`")
    work = Path(args.workdir) if args.workdir else REPO / "runs" / ".deploy" / inv.experiment_id
    extra = _extra_vars(args, {"k2bench_jar": str(jar.resolve()), "k2bench_tc_dir": str((work / "tc").resolve())})
    if inv.latency == "netem":
        from .tc import write_scripts
        write_scripts(inv, _tc_rtt_ms(args, exp), work / "tc")
        # The netem role writes it anew; one left from an earlier deploy would be taken for this one's.
        (work / "tc" / "verify.json").unlink(missing_ok=True)
    hosts_file = work / "hosts.yml"
    rundir.write_text(hosts_file, yaml.safe_dump(to_ansible(inv, extra), sort_keys=False))
    return _playbook(inv, hosts_file, "site.yml", keys)


def cmd_netem_reset(args) -> int:
    """Removes k2bench's tc qdiscs from every machine of an inventory (ansible/netem-reset.yml)."""
    import yaml

    from .ansible_inventory import known_hosts, to_ansible
    from .tc import write_reset_scripts
    inv = inventory.load(args.inventory)
    keys = known_hosts(inv, args.inventory, args.known_hosts)
    work = Path(args.workdir) if args.workdir else REPO / "runs" / ".deploy" / inv.experiment_id
    extra = _extra_vars(args, {"k2bench_tc_dir": str((work / "tc").resolve())})
    write_reset_scripts(inv, work / "tc")
    hosts_file = work / "hosts-reset.yml"
    rundir.write_text(hosts_file, yaml.safe_dump(to_ansible(inv, extra), sort_keys=False))
    return _playbook(inv, hosts_file, "netem-reset.yml", keys)


def plugin_commands() -> dict:
    """Commands other installed packages add to ``k2bench`` (entry points of group
    ``k2bench.commands``: a name and a ``main(argv) -> int``), such as analysis's
    ``compare``: found by name, so the harness never imports them."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group="k2bench.commands")}


def _flag_number(value, flag: str, kind=float, minimum=None):
    """A numeric flag's value (taken as text so a bad one is a one-line ConfigError, not
    argparse's usage)."""
    if value is None:
        return None
    try:
        v = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(flag, f"must be {'an integer' if kind is int else 'a number'}, got {value!r}") from None
    if minimum is not None and not v >= minimum:
        raise ConfigError(flag, f"must be at least {minimum}, got {value}")
    return v


def cmd_demand(args) -> int:
    """A run's per-key, per-datacenter reads and writes (its clients' histories) as parquet:
    the demand `k2bench place` reads (k2bench/placement/)."""
    import io

    from . import placement
    if not args.out and sys.stdout.isatty():
        raise ConfigError("--out", "the demand is parquet (binary), not for a terminal: redirect stdout "
                          "(k2bench demand RUN > demand.parquet) or give --out FILE")
    df = placement.demand_from_run(Path(args.run), args.system)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    if args.out:
        placement.write_bytes_atomic(args.out, buf.getvalue())
    else:
        sys.stdout.buffer.write(buf.getvalue())
        sys.stdout.flush()
    print(f"demand: {df['key_id'].nunique()} keys, {len(df)} (key, datacenter) pairs, "
          f"{int(df['reads'].sum())} reads, {int(df['writes'].sum())} writes"
          + (f" -> {args.out}" if args.out else ""), file=sys.stderr)
    return 0


def cmd_place(args) -> int:
    """Latency-aware replica placement (BA or N-1C) of every key from a demand parquet and a
    topology: a placement table, its predictions beside it (k2bench/placement/)."""
    import pandas as pd
    from rich.table import Table

    from . import placement
    for flag, value in (("--model", args.model), ("--demand", args.demand), ("--topology", args.topology),
                        ("--out", args.out)):
        if not value:
            raise ConfigError(flag, {"--model": "missing: give ba (normal operation) or n-1c (the worst single "
                                                "datacenter failure)",
                                     "--demand": "missing: give a demand parquet (k2bench demand RUN > demand.parquet)",
                                     "--topology": "missing: give a topology file, e.g. "
                                                   "workloads/topologies/paper-local.yaml",
                                     "--out": "missing: give the table file to write, e.g. table.csv"}[flag])
    if args.model not in placement.MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {args.model!r}")
    balance = _flag_number(args.balance, "--balance", float, 1)
    keys = _flag_number(args.keys, "--keys", int, 1)
    f = _flag_number(args.replication_factor, "--replication-factor", int, 1)
    time_limit = _flag_number(args.time_limit, "--time-limit", float)
    cache_keys = _flag_number(args.cache_keys, "--cache-keys", float, 0)
    if not time_limit > 0:
        raise ConfigError("--time-limit", f"must be > 0 seconds, got {args.time_limit}")
    buckets = placement.Bucketing.parse(args.buckets)
    topology = Path(args.topology)
    if not topology.exists() and (REPO / "workloads" / "topologies" / f"{args.topology}.yaml").exists():
        topology = REPO / "workloads" / "topologies" / f"{args.topology}.yaml"  # a name of workloads/topologies
    out = Path(args.out)
    if not out.parent.is_dir():
        raise ConfigError("--out", f"{out.parent} is not a directory")
    demand_path = Path(args.demand)
    if not demand_path.exists():
        raise ConfigError("--demand", f"{demand_path} does not exist; write one with k2bench demand RUN > {demand_path}")
    try:
        demand = pd.read_parquet(demand_path)
    except Exception as e:  # pyarrow's errors vary by what is wrong with the file
        raise ConfigError("--demand", f"{demand_path} is not a parquet file ({type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''})") from None

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)
    placed = placement.place(demand, topology, args.model, f=f, balance=balance, one_per_group=args.one_per_group,
                             buckets=buckets, keys=keys, time_limit_s=time_limit, progress=progress,
                             objective=args.objective, cache_keys=cache_keys)
    side = placed.write(out, str(demand_path))
    info, o = placed.info, placed.predictions["overall"]
    console = Console() if sys.stdout.isatty() else Console(width=120)
    cache = f"a cache of {info['cache_keys_per_dc']:g} keys per DC" if info["cache_keys_per_dc"] else "no cache"
    t = Table(title=f"{info['model'].upper()} ({info['minimises']}): predicted read latency (ms, K2's model: "
                    f"nearest replica, {cache}), weighted by reads")
    for col in ("", "mean", "p50", "p90", "reads unavailable"):
        t.add_column(col, justify="left" if not col else "right")

    def row(name, s):
        t.add_row(name, *["-" if s[k] is None else f"{s[k]:.1f}" for k in ("mean", "p50", "p90")],
                  f"{100 * s['unavailable_share']:.1f}%")
    row("normal", o["normal"])
    for dc, s in o["failure"].items():
        row(f"{dc} failed" + (" (most critical)" if dc == o["most_critical_dc"] else ""), s)
    console.print(t)
    per_dc = ", ".join(f"{dc} {n}" for dc, n in info["keys_per_dc"].items())
    console.print(f"solved in {info['solve_s']:.2f} s ({info['buckets']} buckets; {info['status']}); keys per "
                  f"datacenter: {per_dc} (bound {info['bound_per_dc']})", soft_wrap=True, markup=False,
                  highlight=False)
    console.print(f"table: {out}; predictions: {side}", soft_wrap=True, markup=False, highlight=False)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="k2bench", description=__doc__)
    p.add_argument("--jar", default=str(REPO / "system/launcher/target/k2bench.jar"))
    p.add_argument("--java", default="java")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an experiment of workloads/ on this machine")
    r.add_argument("experiment", help="name of a file in workloads/ (without .yaml) or a path")
    r.add_argument("--runs", default=str(REPO / "runs"))
    r.add_argument("--resume", metavar="RUN_DIR", help="continue a run, skipping completed points")
    r.add_argument("--systems", help="comma-separated subset of the experiment's systems")
    r.add_argument("--no-check", action="store_true",
                   help="skip the consistency checker after each trial (the histories are still kept)")
    r.add_argument("--inventory", metavar="JSON",
                   help="run on the machines of this inventory over SSH (terraform output; see k2bench/inventory.py)")
    r.add_argument("--tc-verify", metavar="FILE",
                   help="netem inventories: the deploy's ping verification (default runs/.deploy/<id>/tc/verify.json), "
                        "kept in the run's manifest")
    r.add_argument("--known-hosts", metavar="FILE",
                   help="SSH host keys of the inventory's machines (default: the inventory's ssh.known_hosts)")
    r.add_argument("--servers-per-dc", type=int, metavar="N",
                   help="servers per datacenter, overriding the experiment's topology (the inventory needs N "
                        "server hosts per datacenter)")
    r.add_argument("--lease-s", type=float, default=60.0, metavar="S",
                   help="remote processes stop on their own S seconds after the orchestrator stopped refreshing "
                        "their lease (it died or lost the network)")
    r.add_argument("--ssh-timeout", type=float, default=60.0, metavar="S",
                   help="the longest a remote command may take; a host that does not answer within it fails the run")
    r.add_argument("--base-port", type=int, default=17000, help="first server port on remote machines")
    r.add_argument("--remote-jar", default="/opt/k2bench/k2bench.jar",
                   help="the jar on remote machines (where ansible's k2bench_server role puts it)")
    r.set_defaults(func=cmd_run)
    b = sub.add_parser("bench-throughput", help="each system's peak per Fig. 9 setting, its CPU, the echo ceiling")
    b.add_argument("--settings", default="all", metavar="S[,S]",
                   help="Fig. 9 settings to climb: all (default) or a comma list of "
                        "'default', 'write 5%%', 'zipf 1.4', 'zipf 0.9', 'f=1', 'f=3'")
    b.add_argument("--no-echo", action="store_true", help="skip the echo ceiling")
    b.add_argument("--resume", metavar="RUN_DIR",
                   help="continue an interrupted bench: points already measured are read, not run again")
    b.add_argument("--runs", default=str(REPO / "runs"))
    b.set_defaults(func=cmd_bench_throughput)
    v = sub.add_parser("validate", help="check experiment files without running anything")
    v.add_argument("experiments", nargs="*")
    v.set_defaults(func=cmd_validate)
    sy = sub.add_parser("systems", help="the bundled systems: their claims, the placements they run on, their own options")
    sy.set_defaults(func=cmd_systems)
    d = sub.add_parser("deploy", help="prepare an inventory's machines with Ansible (site.yml)")
    d.add_argument("--inventory", required=True, metavar="JSON")
    d.add_argument("--known-hosts", metavar="FILE",
                   help="SSH host keys of the machines (default: the inventory's ssh.known_hosts)")
    d.add_argument("--experiment", metavar="NAME",
                   help="check that the inventory has the experiment's servers per datacenter, and take the tc "
                        "RTT matrix from its topology")
    d.add_argument("--servers-per-dc", type=int, metavar="N", help="servers per datacenter, overriding the experiment's")
    d.add_argument("--topology", metavar="FILE",
                   help="RTT matrix for tc/netem (latency netem) when no experiment is given, "
                        "e.g. workloads/topologies/paper-local.yaml")
    d.add_argument("--extra-var", action="append", metavar="NAME=VALUE", help="an Ansible variable (repeatable)")
    d.add_argument("--workdir", help="where the Ansible inventory and tc scripts go (default runs/.deploy/<id>)")
    d.set_defaults(func=cmd_deploy)
    n = sub.add_parser("netem-reset", help="remove k2bench's tc qdiscs from an inventory's machines")
    n.add_argument("--inventory", required=True, metavar="JSON")
    n.add_argument("--known-hosts", metavar="FILE",
                   help="SSH host keys of the machines (default: the inventory's ssh.known_hosts)")
    n.add_argument("--extra-var", action="append", metavar="NAME=VALUE", help="an Ansible variable (repeatable)")
    n.add_argument("--workdir", help="where the Ansible inventory and reset scripts go (default runs/.deploy/<id>)")
    n.set_defaults(func=cmd_netem_reset)
    c = sub.add_parser("check", help="check a run's histories for consistency again (exit 1 on violations)")
    c.add_argument("run")
    c.set_defaults(func=cmd_check)
    pr = sub.add_parser("placement-report", help="a run's read latency, the placement model's prediction beside "
                        "the measurement (normal and after a kill)")
    pr.add_argument("run")
    pr.set_defaults(func=cmd_placement_report)
    s = sub.add_parser("summarize", help="re-derive the summaries of a run from its raw logs")
    s.add_argument("run")
    s.set_defaults(func=cmd_summarize)
    for name, ep in sorted(plugin_commands().items()):
        sub.add_parser(name, add_help=False, help=f"from {ep.module} (k2bench {name} --help: its options)") \
            .set_defaults(plugin=ep)
    dm = sub.add_parser("demand", help="a run's reads and writes per key and datacenter, as parquet (for place)")
    dm.add_argument("run", help="a run directory (runs/<stamp>_<experiment>, or runs/latest)")
    dm.add_argument("--system", help="whose trials (default: the run's first system)")
    dm.add_argument("--out", metavar="FILE", help="write the parquet here (default: stdout, not a terminal)")
    dm.set_defaults(func=cmd_demand)
    pl = sub.add_parser("place", help="latency-aware replica placement (BA or N-1C) from a demand: a placement table")
    pl.add_argument("--model", metavar="ba|n-1c",
                    help="ba: the least mean read latency in normal operation; n-1c: under the worst single "
                         "datacenter failure")
    pl.add_argument("--demand", metavar="PARQUET", help="per-key demand (k2bench demand RUN > demand.parquet)")
    pl.add_argument("--topology", metavar="FILE", help="topology file (datacenters, rtt_ms), e.g. "
                                                       "workloads/topologies/paper-local.yaml")
    pl.add_argument("--out", metavar="FILE", help="the table to write (its predictions go to FILE.json)")
    pl.add_argument("--keys", metavar="N", help="place the keys user0..user<N-1> (default: the demand's largest id + 1)")
    pl.add_argument("--balance", default="1.2", metavar="B",
                    help="no datacenter holds more than B x f x keys / datacenters keys (default 1.2)")
    pl.add_argument("--one-per-group", action="store_true",
                    help="one replica in each of the f groups of datacenters (index modulo f), as RAD needs")
    pl.add_argument("--replication-factor", metavar="F", help="replicas per key (default: the topology's)")
    pl.add_argument("--buckets", metavar="SPEC",
                    help="bucketing: hot=N (most-read keys with a bucket each, 256), levels=N (read share "
                         "quantisation, 4), chunk=N (keys per bucket at most, keys/(4 x datacenters))")
    pl.add_argument("--time-limit", default="600", metavar="S", help="the solver's time limit (default 600 s)")
    pl.add_argument("--objective", default="mean", metavar="mean|pNN",
                    help="what to minimise: the mean read latency (default) or a percentile, e.g. p90 (N-1C: "
                         "under the worst single-datacenter failure)")
    pl.add_argument("--cache-keys", default="0", metavar="N",
                    help="count a datacenter cache of N keys per datacenter in the objective (K2's: "
                         "server.cache_fraction x keys; default 0: none)")
    pl.set_defaults(func=cmd_place)
    args, rest = p.parse_known_args(argv)
    if getattr(args, "plugin", None) is not None:
        return args.plugin.load()(rest)
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"k2bench: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
