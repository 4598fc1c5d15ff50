"""``k2bench reproduce <paper>``: run a paper's experiments, then write its scorecard.

    k2bench reproduce k2 | paris | karma | placement | all [--scale quick|full] [--dir RUN_DIR]

The plan of each paper and scale is in its cast (``workloads/papers/<paper>.yaml``,
``reproduce``): the experiments that measure its claims and the fields a scale sets in
them (``--set``'s dotted fields). A reproduction is one directory,
``runs/<UTC>_reproduce-<paper>-<scale>/``: ``reproduce.json`` (the plan as run), a run
directory per experiment, and the card, ``scorecard.json`` and ``scorecard.md``
(analysis/scorecard.py). ``--dir`` continues one: a finished run is kept, an unfinished one
resumed, so a reproduction interrupted or with a failed run is finished by running the same
command again with ``--dir``. ``--score-only`` writes the card from what the directory has.
``--inventory`` runs the experiments on a cluster, as ``k2bench run --inventory`` does.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from k2bench import rundir
from k2bench.errors import ConfigError, did_you_mean

from . import load, scorecard, scorecards

SCALES = ("quick", "full")
PLAN_FILE, CARD_JSON, CARD_MD = "reproduce.json", "scorecard.json", "scorecard.md"
COLOURS = {"agrees": "green", "differs": "red", "within noise": "yellow", "not covered": "dim"}


def plan(paper_id: str, scale: str) -> dict:
    """A paper's plan at a scale: its note, and per experiment the fields set ({dotted: value})."""
    cast, _ = scorecards.PAPERS[paper_id]
    where = f"workloads/papers/{paper_id}.yaml: reproduce.{scale}"
    p = cast.reproduce.get(scale)
    if not isinstance(p, dict) or not isinstance(p.get("experiments"), list) or not p["experiments"]:
        raise ConfigError(where, "needs a list of experiments (see workloads/papers/k2.yaml)")
    common = dict(p.get("set") or {})
    experiments = []
    for entry in p["experiments"]:
        name, own = (next(iter(entry.items())) if isinstance(entry, dict) and len(entry) == 1 else (entry, {}))
        if not isinstance(name, str) or not isinstance(own or {}, dict):
            raise ConfigError(where, f"an experiment is a name or {{name: {{field: value}}}}, got {entry!r}")
        experiments.append({"experiment": name, "set": common | dict(own or {})})
    return {"paper": paper_id, "scale": scale, "note": " ".join(str(p.get("note", "")).split()),
            "experiments": experiments}


def _status(run_dir: Path) -> tuple[str, int]:
    """A run directory's state: "done" (completed), "failed", "interrupted", "running" (an
    unfinished one), or "not run"; and its finished trials."""
    path = run_dir / "manifest.json"
    if not path.exists():
        return "not run", 0
    m = json.loads(path.read_text())
    done = sum((run_dir / t["dir"] / "summary.json").exists() for t in m.get("trials") or [])
    status = m.get("status") or "running"
    return ("done" if status == "completed" else status), done


def _run_experiment(args, name: str, run_dir: Path, overrides: dict, resume: bool) -> int:
    """``k2bench run`` of one experiment with the scale's fields set, into ``run_dir``."""
    from k2bench.cli.common import _env
    from k2bench.cli.run import run_experiment
    env = _env(argparse.Namespace(jar=args.jar, java="java", inventory=args.inventory, known_hosts=args.known_hosts,
                                  base_port=17000, remote_jar="/opt/k2bench/k2bench.jar", lease_s=60.0,
                                  ssh_timeout=60.0))
    # runs/latest names the experiment's run, as after `k2bench run`: `make analyze` reads it
    return run_experiment(env, name, run_dir=run_dir, runs=Path(args.runs), resume=resume, overrides=overrides)


def write_card(out: Path, p: dict, console: Console | None = None) -> dict:
    """The scorecard of a reproduction directory from the runs it has (written atomically)."""
    cast, claims = scorecards.PAPERS[p["paper"]]
    entries, runs = [], []
    for e in p["experiments"]:
        d = out / e["experiment"]
        status, done = _status(d)
        entries.append({"experiment": e["experiment"], "dir": e["experiment"], "status": status, "trials": done})
        if done:
            runs.append(load.load_run(d))
    info = rundir.git_info(load.REPO)
    card = scorecard.card(p["paper"], cast.title, claims, runs, scale=p["scale"], scale_note=p["note"],
                          created=rundir.iso(time.time()), commit=info.get("git_commit"), runs=entries)
    here = {e["experiment"] for e in p["experiments"]}
    covers = {c.id: c.covers for c in claims}
    full = {e["experiment"] for e in plan(p["paper"], "full")["experiments"]}
    for r in card["claims"]:
        if r["verdict"] == "not covered" and not here & set(r["experiments"]) and full & set(r["experiments"]):
            r["why"] = (f"needs {', '.join(sorted(full & set(r['experiments'])))}, not in the {p['scale']} scale: "
                        f"k2bench reproduce {p['paper']} --scale full runs it")
        elif r["verdict"] == "not covered" and here & set(r["experiments"]) and not covers[r["id"]]:
            r["why"] = ("its runs here measured nothing of the kind the paper measured (a run that failed or did "
                        "not finish, or every trial left out: make analyze's claims table says why)")
    rundir.write_text(out / CARD_JSON, json.dumps(card, indent=1) + "\n")
    rundir.write_text(out / CARD_MD, scorecard.markdown(card))
    if console is not None:
        show(console, card)
        console.print(f"scorecard: {out / CARD_MD}")
    return card


def show(console: Console, card: dict) -> None:
    t = Table(title=f"{card['title']} ({card.get('scale', '')})", show_lines=True)
    for col in ("claim", "paper", "measured here", "verdict", "why"):
        t.add_column(col, overflow="fold")
    for r in card["claims"]:
        colour = COLOURS[r["verdict"]]
        t.add_row(r["claim"], f"{r['paper']} ({r['where']})", r["measured"], f"[{colour}]{r['verdict']}[/]",
                  r["why"] + (f" ({r['doc']})" if r["doc"] else ""))
    console.print(t)
    console.print("verdicts: " + ", ".join(f"[{COLOURS[v]}]{n} {v}[/]" for v, n in card["counts"].items()))


def _continued(out: Path, p: dict, score_only: bool) -> dict:
    """The plan of the reproduction ``out`` continues: the same paper, scale and plan (the
    saved one when only scoring it, whatever the cast says now)."""
    if not (out / PLAN_FILE).exists():
        raise ConfigError("--dir", f"{out} is not a reproduction (no {PLAN_FILE}): leave --dir out to start one")
    old = json.loads((out / PLAN_FILE).read_text())
    if old.get("paper") != p["paper"]:
        raise ConfigError("--dir", f"{out} reproduces paper {old.get('paper')!r}, not {p['paper']!r}: give that "
                                   "paper, or leave --dir out to start another")
    if old.get("scale") != p["scale"]:
        raise ConfigError("--scale", f"{out} is a reproduction at scale {old.get('scale')!r}: give --scale "
                                     f"{old.get('scale')}, or leave --dir out to start another")
    if score_only:
        return {k: old[k] for k in ("paper", "scale", "note", "experiments")}
    if old.get("experiments") != p["experiments"]:
        raise ConfigError("--dir", f"{out} was made with another plan of {p['paper']} ({p['scale']}): its "
                                   f"workloads/papers/{p['paper']}.yaml changed since; score it with --score-only, "
                                   "or start another")
    return p


def _attempt(args, e: dict, d: Path, resume: bool) -> tuple[int, str]:
    """One experiment of the plan: its exit code, and why it failed (one line) when it
    raised instead: a reproduction goes on to its other experiments either way."""
    try:
        return _run_experiment(args, e["experiment"], d, e["set"], resume=resume), ""
    except KeyboardInterrupt:
        return 130, ""
    except ConfigError as e_:
        return 2, str(e_)
    except Exception as e_:  # noqa: BLE001 - the run recorded it; the card says what is missing
        return 1, f"{type(e_).__name__}: {e_}"


def reproduce(args, paper_id: str, console: Console) -> int:
    p = plan(paper_id, args.scale)
    if args.dir:
        out = Path(args.dir)
        p = _continued(out, p, args.score_only)
    else:
        out = rundir.create(Path(args.runs), f"reproduce-{paper_id}-{args.scale}")
        rundir.write_json(out / PLAN_FILE, p | {"created": rundir.iso(time.time())})
    again = f"k2bench reproduce {paper_id} --scale {args.scale} --dir {out}"
    console.print(f"[bold]reproduce {paper_id} ({args.scale})[/]: {out}\n{p['note']}")
    code = 0
    for i, e in enumerate([] if args.score_only else p["experiments"], 1):
        d = out / e["experiment"]
        status, done = _status(d)
        where = f"[{i}/{len(p['experiments'])}] {e['experiment']}"
        if status == "done":
            console.print(f"{where}: already done ({done} trials), kept")
            continue
        console.print(where + (f": resuming ({done} trials done)" if status != "not run" else ""))
        rc, why = _attempt(args, e, d, resume=status != "not run")
        if rc == 130:
            console.print(f"interrupted: continue with {again}")
            return rc
        if rc:
            console.print(f"[red]{e['experiment']} failed (exit {rc})[/]" + (f": {why}" if why else "")
                          + f"; the card says what it could not measure; try it again with {again}")
            code = 1
    write_card(out, p, console)
    return code


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="k2bench reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("paper", help="k2 | paris | karma | placement | all")
    ap.add_argument("--scale", default="quick", help="quick (each paper in about 30 min here) or full (the shipped "
                                                     "files, 3 trials where the paper took a median)")
    ap.add_argument("--dir", metavar="RUN_DIR", help="continue this reproduction (runs/<UTC>_reproduce-<paper>-<scale>)")
    ap.add_argument("--score-only", action="store_true", help="write the scorecard from what --dir has; run nothing")
    ap.add_argument("--runs", default=str(load.REPO / "runs"), help="where a new reproduction goes")
    ap.add_argument("--jar", default=str(load.REPO / "system/launcher/target/k2bench.jar"))
    ap.add_argument("--inventory", metavar="JSON", help="run on this inventory's machines (as k2bench run --inventory)")
    ap.add_argument("--known-hosts", metavar="FILE", help="SSH host keys of the inventory's machines")
    args = ap.parse_args(argv)
    console = Console()
    try:
        papers = list(scorecards.PAPERS) if args.paper == "all" else [args.paper]
        if args.paper != "all" and args.paper not in scorecards.PAPERS:
            # paper ids are short: "k3" is 0.5 like "k2"
            raise ConfigError("paper", f"{args.paper!r} is not a bundled paper"
                              + did_you_mean(args.paper, [*scorecards.PAPERS, "all"], cutoff=0.4)
                              + f": one of {' | '.join(scorecards.PAPERS)} | all")
        if args.scale not in SCALES:
            raise ConfigError("--scale", f"{args.scale!r} is not a scale: quick or full")
        if args.dir and len(papers) > 1:
            raise ConfigError("--dir", "continues one paper's reproduction: give that paper, not all")
        if args.score_only and not args.dir:
            raise ConfigError("--score-only", "needs --dir, the reproduction to score")
        code = 0
        for paper_id in papers:
            code = reproduce(args, paper_id, console) or code
            if code == 130:
                break
        return code
    except ConfigError as e:
        print(f"k2bench reproduce: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
