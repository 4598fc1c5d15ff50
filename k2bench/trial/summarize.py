"""The end of a trial: every host's files brought home, the summary derived from the
clients' raw logs, and the consistency check of the histories."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .. import checker, cpu, rundir
from ..deploy import client_processes
from ..errors import RunFailed
from ..spec.pacing import pacing_interval_ms
from ..spec.points import point_values
from ..summary import (hot_keys, replication_pending_at_end, ring_invalidations, server_totals_hit_rate,
                       summarize)
from .faults import fault_windows, paused_ms, unavailability
from .procs import fan_out
from .state import Trial

if TYPE_CHECKING:
    from ..env import Env

FETCH_TIMEOUT_S = 300  # per host and trial


def fetch_all(env: Env, t: Trial, run_manifest: dict, strict: bool) -> None:
    """Brings every host's files of the trial home, in parallel, each bounded. With
    ``strict`` (the trial succeeded) a failure fails the trial; otherwise it is noted in
    the manifest and the others still come."""
    errors: dict[str, str] = {}

    def one(h):
        try:
            h.fetch(t.rel, timeout=FETCH_TIMEOUT_S)
        except RunFailed as e:
            errors[h.name] = str(e)

    fan_out(env.deployment.hosts(), one)
    if not errors:
        return
    notes = run_manifest.setdefault("fetch_failures", [])
    notes += [{"trial": t.rel, "host": name, "error": err} for name, err in sorted(errors.items())]
    for h in env.deployment.hosts():
        if getattr(h, "unreachable", None):
            run_manifest.setdefault("unreachable_hosts", {})[h.name] = (
                f"{h.unreachable}; its processes stop on their own when their lease expires "
                f"({getattr(h, 'lease_s', 0):.0f} s after the last refresh)")
    if strict:
        name = sorted(errors)[0]
        raise RunFailed(errors[name])


def summarize_trial(env: Env, progress, t: Trial, run_manifest: dict, doc: dict, t0: float, start_info: dict,
                    client_warnings: list[str]) -> dict:
    """The trial's summary.json from its clients' and servers' logs (k2bench/summary.py), with
    its start, faults, availability and CPU, and, with ``check``, its consistency check."""
    cfg, dep, dur = t.cfg, env.deployment, t.cfg["duration"]
    dcs = doc["datacenters"]
    t0 = round(t0 * 1000) / 1000  # what the clients read: their intervals start there
    window = ((t0 + dur["warmup_s"]) * 1000, (t0 + dur["warmup_s"] + dur["measure_s"]) * 1000)
    logs = client_logs(t.dir, {dc: [s.name for s in dep.clients(dc)] for dc in dcs})
    fault_ends = [f["at_s"] + f.get("for_s", 0) for f in cfg["faults"]]
    after_ms = (t0 + max(fault_ends)) * 1000 + checker.FAULT_SLACK_MS if fault_ends else None
    summary = summarize(logs, system=t.system, experiment=cfg["name"], window_ms=window,
                        origin_ms=t0 * 1000, server_logs=sorted((t.dir / "servers").glob("*.hlog")),
                        after_ms=after_ms, pacing_interval_ms=pacing_interval_ms(cfg, client_processes(dep, dcs)),
                        paused_ms=paused_ms(t.dir / "timeline.jsonl"))
    summary["warnings"] += client_warnings
    for op, why in env.system_info.info(t.system).not_own.items():
        if op in summary["ops"]:
            summary["ops"][op]["not_own"] = why  # e.g. PaRiS*'s writes are K2's
    summary["point"] = t.point
    summary["point_values"] = point_values(run_manifest["config"], cfg)
    summary["trial"] = t.trial
    summary["start_ms"] = t0 * 1000  # the clients' common start; the window follows from it
    summary["start"] = start_info  # each client's first operation and its skew from the start
    summary["server_stats"] = server_totals(t.dir / "servers")
    if (counted := server_totals_hit_rate(summary["server_stats"])):
        summary["server_stats"]["cache_hit_rate"] = counted["hit_rate"]  # whole run; ``cache``: the window
    if "rings" in summary and (inv := ring_invalidations(summary["server_stats"],
                                                         len((t.placement or {}).get("rings") or []) or 1)):
        summary["rings"]["invalidations"] = inv
    summary["replication_pending_at_end"] = replication_pending_at_end(t.dir / "servers", cfg["faults"])
    histories = {dc: [t.dir / "clients" / f"history-{s.name}.jsonl" for s in dep.clients(dc)] for dc in dcs}
    ops_by_dc = {dc: checker.load_history(paths) for dc, paths in histories.items()}
    summary["availability"] = unavailability(ops_by_dc, t0 * 1000)
    summary["hot_keys"] = hot_keys([o for ops in ops_by_dc.values() for o in ops], window)
    summary["faults"] = cfg["faults"]
    summary["cpu"] = t.cpu
    if (stolen := cpu.steal_warning(t.cpu)):
        summary["warnings"].append(stolen)
    summary["server_processes"] = {"split": t.server_processes, "jvm_args": t.server_jvm_args,
                                   "clients": t.client_split, "own_client_dcs": t.own_client_dcs}
    if cfg["check"]:
        progress.update(phase="checking consistency", elapsed=0, expected=None, ops_per_s=None)
        summary["consistency"] = check_trial_dir(
            t.dir, t.system, env.system_info.info(t.system).max_wan_rounds, cfg["testing"]["mutant"],
            [o for ops in ops_by_dc.values() for o in ops])
    rundir.write_json(t.dir / "summary.json", summary)
    return summary


def server_totals(stats_dir: Path) -> dict:
    totals: dict[str, int] = {}
    for f in sorted(stats_dir.glob("stats-*.json")):
        for counters in json.loads(f.read_text()).values():
            for k, v in counters.items():
                totals[k] = totals.get(k, 0) + v
    return totals


def check_trial_dir(tdir: Path, system: str, max_wan_rounds: int | None, mutant: str | None,
                    client_ops: list[dict] | None = None) -> dict:
    """Runs the consistency checker on a trial's histories (the loaders' and the clients';
    ``client_ops`` if the caller already read the clients'), holding read-only transactions
    to the system's claimed wide-area rounds except while a fault of the trial's timeline was
    in force: writes consistency.json and the plain r/w history.txt; returns the summary's
    consistency block."""
    clients = tdir / "clients"
    loads = checker.load_history(sorted(clients.glob("history-load-*.jsonl")))
    if client_ops is None:
        client_ops = checker.load_history(sorted(p for p in clients.glob("history-*.jsonl")
                                                 if not p.name.startswith("history-load-")))
    everything = loads + client_ops
    result = checker.check(everything, max_wan_rounds=max_wan_rounds,
                           fault_windows=fault_windows(tdir / "timeline.jsonl"))
    result |= {"system": system, "mutant": mutant}
    rundir.write_json(tdir / "consistency.json", result)
    checker.export_text(everything, tdir / "history.txt")
    return {"checked_ops": result["checked"]["ops"], "violations": result["violations"]["count"],
            "by_kind": result["violations"]["by_kind"], "round_claim": result["round_claim"]}


def client_logs(trial_dir: Path, names: dict[str, list[str]]) -> dict[str, list[Path]]:
    """Each datacenter's client logs (datacenter -> the hlog of every client process there)."""
    logs = {dc: [trial_dir / "clients" / f"{n}.hlog" for n in ns] for dc, ns in names.items()}
    missing = [str(p) for ps in logs.values() for p in ps if not p.exists()]
    if missing:
        raise RunFailed(f"client logs missing: {missing}")
    return logs
