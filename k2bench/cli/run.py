"""Running and checking: ``run``, ``validate``, ``systems``, ``summarize``, ``check``,
``placement-report``."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from rich.console import Console

from .. import experiment, rundir, systems
from ..errors import ConfigError, did_you_mean
from ..env import Env
from ..orchestrator import Orchestrator
from ..spec.validate import NEEDS_JAR, validate
from ..progress import Progress, print_summary
from .common import (REPO, _by_system_and_point, _env, _in_file, _load, check_cluster_shape, legacy_trials,
                     parse_overrides, plugin_commands, servers_per_dc_override, tc_verify)


def cmd_run(args) -> int:
    return run_experiment(_env(args), args.experiment, Path(args.resume) if args.resume else None, Path(args.runs),
                          resume=bool(args.resume), systems=None if args.systems is None else args.systems.split(","),
                          overrides=parse_overrides(args.set), check=not args.no_check,
                          servers_per_dc=args.servers_per_dc, tc_verify_file=args.tc_verify)


def run_experiment(env: Env, experiment_name_or_path: str, run_dir: Path | None, runs: Path, resume: bool = False,
                   systems: list[str] | None = None, overrides: dict | None = None, check: bool = True,
                   servers_per_dc: int | None = None, tc_verify_file: str | None = None) -> int:
    """Runs an experiment (a name in workloads/ or a path) as ``k2bench run`` does and returns
    its exit code; bad input raises ConfigError before anything starts. ``run_dir``: with
    ``resume``, the run to finish (its saved configuration and overrides must be these);
    without, the new run's directory (created; None: ``runs/<stamp>_<name>``). ``runs/latest``
    links to it. ``systems``: a subset of the experiment's; ``overrides``: {dotted field:
    value} set on the file's fields (--set; common.parse_overrides), kept in the manifest;
    ``check``: False skips the consistency checker (--no-check); ``servers_per_dc`` and
    ``tc_verify_file`` as the flags of the same names (the latter for an inventory's
    deployment)."""
    overrides = dict(overrides or {})
    exp = servers_per_dc_override(_load(env, experiment_name_or_path, overrides=overrides), servers_per_dc)
    inv = getattr(env.deployment, "inventory", None)
    if inv is not None:
        check_cluster_shape(exp, inv, env.deployment.inventory_file)
        env.deployment.tc_verify = tc_verify(inv, tc_verify_file)
    if systems is not None:
        exp["systems"] = chosen_systems(systems, exp["systems"])
    if not check:
        exp["check"] = False
    with _in_file(experiment.find(env.workloads, experiment_name_or_path), overrides):
        validate(env, exp)
    if resume:
        if run_dir is None or not (run_dir / "manifest.json").exists():
            raise ConfigError("--resume", f"{run_dir} is not a run directory (no manifest.json)")
        manifest = rundir.read_manifest(run_dir)
        # the configuration, and the --set that made it (a run before --set had none)
        changes = rundir.changed_fields(manifest.get("config"), rundir.as_saved(exp))
        old_set, new_set = manifest.get("overrides") or {}, rundir.as_saved(overrides)
        changes += [(f"--set {f}", old_set.get(f, rundir.MISSING), new_set.get(f, rundir.MISSING))
                    for f in [*new_set, *(f for f in old_set if f not in new_set)]
                    if old_set.get(f, rundir.MISSING) != new_set.get(f, rundir.MISSING)]
        if changes:
            raise ConfigError("--resume", f"{run_dir} was run with a different configuration of {exp['name']}: "
                              f"{rundir.describe_changes(changes)}; resume it with the file, --systems, --no-check "
                              "and --set it was run with, or start a new run without --resume")
    elif run_dir is not None:
        if run_dir.exists() and any(run_dir.iterdir()):
            raise ConfigError("run_dir", f"{run_dir} exists and is not empty; give a new directory, or resume it")
        run_dir.mkdir(parents=True, exist_ok=True)
    else:
        run_dir = rundir.create(runs, exp["name"])
    runs.mkdir(parents=True, exist_ok=True)
    rundir.link_latest(runs, run_dir)
    console = Console()
    console.print(f"run directory: {run_dir}")
    code = Orchestrator(env, Progress(console)).run(exp, run_dir, resume=resume, overrides=overrides)
    summaries = [json.loads(p.read_text()) for p in sorted(run_dir.glob("*/summary.json"))]
    summaries += sorted((json.loads(p.read_text()) for p in run_dir.glob("*/*/summary.json")
                         if not p.parent.name.startswith("trial-")), key=_by_system_and_point)
    if summaries:
        print_summary(console, summaries)
    from ..placement import report as placement_report
    if placement_report.has_placements(exp):
        placement_report.print_report(console, placement_report.report(run_dir, env.check_output))
        console.print(f"tables: {run_dir / placement_report.TABLE_FILE}")
        _placement_figures(console, run_dir)
    return code


def chosen_systems(names: list[str], experiments: list[str]) -> list[str]:
    """--systems: a subset of the experiment's systems, each once; an empty list or name is
    refused (it is a typo, never "every system")."""
    given = ",".join(names)
    fix = f"give one or more of the experiment's systems, comma-separated: {', '.join(experiments)}"
    names = [n.strip() for n in names]
    if not any(names):
        raise ConfigError("--systems", f"{given!r} names no system; {fix}")
    if not all(names):
        raise ConfigError("--systems", f"{given!r} has an empty name; {fix}")
    for n in names:
        if n not in experiments:
            raise ConfigError("--systems", f"{n!r} is not one of the experiment's systems{did_you_mean(n, experiments)}; "
                              f"{fix}")
    if len(set(names)) != len(names):
        raise ConfigError("--systems", f"{given!r} names a system twice; {fix}")
    return names


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
    (placement.json and its tables, placement.md, in the run; k2bench/placement/report.py)."""
    from rich.console import Console
    from ..placement import report as placement_report
    placement_report.check_run(Path(args.run))
    console = Console()
    placement_report.print_report(console, placement_report.report(Path(args.run), _env(args).check_output))
    console.print(f"tables: {Path(args.run) / placement_report.TABLE_FILE}")
    _placement_figures(console, Path(args.run))
    return 0


def cmd_validate(args) -> int:
    """Checks experiment files; without the jar, every check that does not need it (and one
    line saying which were skipped)."""
    env = _env(args)
    overrides = parse_overrides(args.set)
    names = args.experiments or sorted(p.stem for p in env.workloads.glob("*.yaml"))
    for name in names:
        exp = _load(env, name, need_jar=False, overrides=overrides)
        with _in_file(experiment.find(env.workloads, name), overrides):
            validate(env, exp, need_jar=False)
        n = len(experiment.points(exp)) * len(exp["systems"]) * exp["trials"]
        print(f"{name}: ok ({n} system run(s))")
    if not env.jar.exists():
        print(f"k2bench: jar: {env.jar} is missing, so these checks were skipped: {NEEDS_JAR}; run `make build` "
              "for them", file=sys.stderr)
    return 0


def cmd_show(args) -> int:
    """The experiment resolved (extends, defaults, per_system as given), as YAML: what a run
    saves as its configuration, and itself an experiment file that resolves to the same."""
    import yaml

    env = _env(args)
    overrides = parse_overrides(args.set)
    exp = _load(env, args.experiment, overrides=overrides)
    path = experiment.find(env.workloads, args.experiment)
    given = "".join(f" --set {k}={json.dumps(v)}" for k, v in overrides.items())
    print(f"# {exp['name']} as it runs ({path}{given}: extends and defaults applied; `k2bench validate` checks "
          "the rest)")
    print(yaml.safe_dump(exp, sort_keys=False, width=100), end="")
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
    from ..trial.faults import paused_ms
    from .. import checker
    from ..summary import EMULATION_DEGRADED, SCHEDULE_WARNING, hot_keys, replication_pending_at_end, summarize
    run = Path(args.run)
    manifest = rundir.read_manifest(run)
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
        histories = sorted((run / entry["dir"] / "clients").glob("history-client-*.jsonl"))
        new["hot_keys"] = hot_keys(checker.load_history(histories), new["window_ms"])
        new["warnings"] += [w for w in old.get("warnings", []) if not w.startswith((SCHEDULE_WARNING, EMULATION_DEGRADED))]
        rundir.write_json(path, new)
        print(f"re-derived {path}")
    return 0


def cmd_check(args) -> int:
    """Runs the consistency checker again on every finished trial of a run (from its
    histories): exit 1 on violations, 2 when no trial could be checked."""
    from ..trial.summarize import check_trial_dir
    run = Path(args.run)
    manifest = rundir.read_manifest(run)
    # the claims (max_wan_rounds) as the run's systems made them, over the jar's
    info = _env(args).system_info.merged(systems.of_run(run))
    mutant = manifest["config"].get("testing", {}).get("mutant")
    total, checked, unfinished = 0, 0, 0
    for entry in manifest.get("trials") or legacy_trials(run):
        tdir = run / entry["dir"]
        if not (tdir / "summary.json").exists():
            unfinished += 1
            continue
        summary = json.loads((tdir / "summary.json").read_text())
        if summary["system"] not in info:
            raise ConfigError("RUN", f"{entry['dir']}: system {summary['system']!r} is neither in the run's manifest nor "
                                     "in this jar; check it with the jar that made it (--jar)")
        c = check_trial_dir(tdir, summary["system"], info.info(summary["system"]).max_wan_rounds, mutant)
        summary["consistency"] = c
        rundir.write_json(tdir / "summary.json", summary)
        total += c["violations"]
        checked += 1
        kinds = ", ".join(f"{k} {v}" for k, v in c["by_kind"].items())
        print(f"{entry['dir']}: {c['violations']} violations in {c['checked_ops']} operations"
              + (f" ({kinds})" if kinds else ""))
    if not checked:
        raise ConfigError("RUN", f"{run} has no finished trial (none has a summary.json): no trial checked; "
                          f"finish the run with k2bench run {manifest.get('experiment', 'EXPERIMENT')} --resume {run}")
    if unfinished:
        print(f"{unfinished} trial(s) not finished (no summary.json), not checked")
    return 1 if total else 0
