"""Runs an experiment: for every sweep point, system and trial, one trial (k2bench/trial/:
servers, RTT, load, clients through warm-up, measurement and cool-down, stop, summary, check),
then each point's median trial. Writes the run directory (docs/running.md, "The run
directory").

Teardown is guaranteed: on Ctrl-C, SIGTERM, a crashed process or any error, every started
process is stopped, the manifest says how the run ended, and the caller exits non-zero.
"""
from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

from . import rundir
from .deploy.ssh import LeaseKeeper
from .env import Env
from .errors import RunFailed
from .spec.points import point_values, points, system_points
from .spec.topology import placements, topology_doc
from .trial import Trial, run_trial
from .trial.procs import fan_out


class Orchestrator:
    def __init__(self, env: Env, progress):
        self.env = env
        self.progress = progress

    def run_trial(self, t: Trial, run_manifest: dict) -> dict:
        return run_trial(self.env, self.progress, t, run_manifest)

    def run(self, exp: dict, run_dir: Path, resume: bool = False, overrides: dict | None = None) -> int:
        """Runs every trial of ``exp`` into ``run_dir`` (resume: skipping finished ones);
        ``overrides``, the fields --set changed, go into the manifest beside the config."""
        manifest_path = run_dir / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if resume and manifest_path.exists() else {}
        dep = self.env.deployment
        manifest |= {
            "experiment": exp["name"], "config": exp, "overrides": dict(overrides or {}), "systems": exp["systems"],
            **rundir.git_info(self.env.repo), "hosts": dep.describe()["hosts"], "deployment": dep.describe(),
            "started": manifest.get("started", rundir.iso(time.time())), "stopped": None,
            "status": "running", "jar": str(self.env.jar),
            # each system's descriptor as this jar gave it: readers label the run as it was made
            "systems_info": self.env.system_info.to_json(exp["systems"]),
        }
        rundir.write_json(manifest_path, manifest)
        if getattr(dep, "inventory", None) is not None:
            rundir.write_json(run_dir / "inventory.json", dep.inventory.doc)
        trials = [(pid, cfg, system, k) for pid, system, cfg in system_points(exp)
                  for k in range(1, exp["trials"] + 1)]
        # Every trial of the run and where it lives, so readers (analysis/) never parse
        # directory names.
        dcs = topology_doc(self.env, exp)["datacenters"]
        placement = placements(self.env, exp)
        manifest["trials"] = [
            {"system": system, "point": pid, "point_values": point_values(exp, cfg), "trial": k,
             "dir": str(trial_dir(run_dir, system, pid, k, exp["trials"]).relative_to(run_dir)),
             "client_logs": {dc: [f"clients/{s.name}.hlog" for s in dep.clients(dc)] for dc in dcs},
             "placement": placement[pid, system]}
            for pid, cfg, system, k in trials]
        self.progress.start(exp["name"], len(trials), eta_per_trial(exp))
        status, reason, code = "completed", None, 0
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        lease_keeper = None
        try:
            fan_out(dep.hosts(), lambda h: h.bind_run(run_dir))
            # Remote processes stop on their own when the lease goes stale (ssh.wrapper_script).
            lease_s = max([getattr(h, "lease_s", 0) for h in dep.hosts()] or [0])
            lease_keeper = LeaseKeeper(dep.hosts(), max(1.0, lease_s / 4)).__enter__() if lease_s else None
            for i, (pid, cfg, system, k) in enumerate(trials):
                tdir = trial_dir(run_dir, system, pid, k, exp["trials"])
                if (tdir / "summary.json").exists():
                    self.progress.skip(system, pid, k)
                    continue
                if tdir.exists():
                    shutil.rmtree(tdir)  # a trial that did not finish starts over
                self.progress.begin_trial(i, system, pid, k)
                self.run_trial(Trial(system, pid, k, cfg, tdir, str(tdir.relative_to(run_dir)),
                                     placement=placement[pid, system]), manifest)
                rundir.write_json(manifest_path, manifest)
            for pid, cfg in points(exp):
                for system in exp["systems"]:
                    point_summary(run_dir, system, pid, exp["trials"])
        except KeyboardInterrupt:
            status, reason, code = "interrupted", "interrupted by the user (Ctrl-C or SIGTERM)", 130
        except RunFailed as e:
            status, reason, code = "failed", str(e), 1
        except Exception as e:  # noqa: BLE001 - recorded, then re-raised after teardown
            status, reason, code = "failed", f"{type(e).__name__}: {e}", 1
            raise
        finally:
            if lease_keeper is not None:
                lease_keeper.__exit__(None, None, None)
            signal.signal(signal.SIGTERM, previous)
            manifest |= {"status": status, "stopped": rundir.iso(time.time())}
            if reason:
                manifest["reason"] = reason
            rundir.write_json(manifest_path, manifest)
            self.progress.finish(status, reason)
        return code


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def trial_dir(run_dir: Path, system: str, point: str, trial: int, trials: int) -> Path:
    d = run_dir / system
    if point:
        d = d / point
    return d / f"trial-{trial}" if trials > 1 else d


def point_summary(run_dir: Path, system: str, point: str, trials: int) -> None:
    """With several trials, the point's summary is its median trial by mean ROT latency (paper §VII-B)."""
    if trials == 1:
        return
    base = trial_dir(run_dir, system, point, 1, 1)
    summaries = [json.loads((trial_dir(run_dir, system, point, k, trials) / "summary.json").read_text())
                 for k in range(1, trials + 1)]
    key = lambda s: s["ops"]["rot"]["latency_ms"]["mean"] or 0.0  # noqa: E731
    median = sorted(summaries, key=key)[len(summaries) // 2]
    rundir.write_json(base / "summary.json", median | {
        "median_of_trials": trials,
        "trials": [{"trial": s["trial"], "rot_mean_ms": key(s),
                    "throughput_ops_per_s": s["throughput_ops_per_s"]} for s in summaries]})


def eta_per_trial(exp: dict) -> float:
    d = exp["duration"]
    return 25 + exp["workload"]["keys"] / 1500 + d["warmup_s"] + d["measure_s"] + d["cooldown_s"]
