"""One trial, phase by phase: its files on every host, then servers, RTT (once per run),
clients launched, load (the clients start up meanwhile), clients connected, start barrier,
faults and the measured run, stop; then every host's files
home, the summary and the consistency check. Teardown is guaranteed (an ExitStack): on any
error every started process is stopped by pid."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from .. import cpu, rundir
from ..spec.points import point_values
from ..spec.topology import PREDICTIONS_FILE, TABLE_FILE, table_on_hosts, topology_doc
from ..spec.trial import SPEC_FILE, TrialSpec
from .clients import await_clients, launch_clients
from .diagnose import check_clients_after_run
from .faults import FAULTS_FILE, FaultInjector
from .load import load_keys
from .procs import fan_out, wait_exit
from .rtt import measure_rtt
from .servers import start_servers, stop_servers
from .start import check_skew, common_start, first_check_at
from .state import Running, Trial
from .summarize import fetch_all, summarize_trial

if TYPE_CHECKING:
    from ..deploy.hosts import Host
    from ..env import Env


def run_trial(env: Env, progress, t: Trial, manifest: dict) -> dict:
    """Runs one trial and returns its summary (also in its directory's summary.json)."""
    cfg, dep = t.cfg, env.deployment
    doc = topology_doc(env, cfg)
    topo_doc, table_text = table_on_hosts(dep.topology(doc, doc["servers_per_dc"]))
    topo_rel = f"{t.rel}/topology.yaml"
    topo_text = yaml.safe_dump(topo_doc, sort_keys=False)
    if table_text is not None:
        rundir.write_text(t.dir / TABLE_FILE, table_text)
        predictions = Path(doc["placement_table"] + ".json")  # k2bench place's sidecar
        if predictions.exists():
            rundir.write_text(t.dir / PREDICTIONS_FILE, predictions.read_text())
    rundir.write_text(t.dir / "topology.yaml", topo_text)
    # the trial's parameters as the system runs them, for its processes (k2bench/spec)
    spec_text = TrialSpec.of(cfg, t.system, t.point, point_values(manifest["config"], cfg), t.trial,
                             manifest["config"]["trials"], TABLE_FILE if table_text is not None else None).text()
    rundir.write_text(t.dir / SPEC_FILE, spec_text)

    def put(h: Host):
        if table_text is not None:  # before the topology that names it
            h.put_text(f"{t.rel}/{TABLE_FILE}", table_text)
        h.put_text(topo_rel, topo_text)
        h.put_text(f"{t.rel}/{SPEC_FILE}", spec_text)
        h.put_text(f"{t.rel}/{FAULTS_FILE}", "{}\n")  # no network fault in force
    fan_out(dep.hosts(), put)
    t.dir.mkdir(parents=True, exist_ok=True)
    done = False
    try:
        with contextlib.ExitStack() as stack:
            run = Running(env, progress, t, manifest, doc, topo_rel, stack)
            start_servers(run)
            measure_rtt(run)
            launch_clients(run)
            load_keys(run)
            await_clients(run)
            common_start(run)
            measured_run(run)
            stop_servers(run)
        done = True
    finally:
        # Every log of every host, also when the trial failed or was interrupted (bounded
        # per host; a host that does not answer is skipped with a note in the manifest).
        fetch_all(env, t, manifest, strict=done)
    return summarize_trial(env, progress, t, manifest, doc, run.t0, run.skew, run.client_warnings)


def measured_run(run: Running) -> None:
    """Warm-up, measurement and cool-down from the common start, with the trial's faults
    injected on their timeline, CPU sampled over the measurement window where the processes
    are this machine's, and the clients' start skew checked as soon as all should have begun."""
    t, cfg, dur = run.t, run.cfg, run.cfg["duration"]
    total = dur["warmup_s"] + dur["measure_s"] + dur["cooldown_s"]
    t.faults = FaultInjector(cfg["faults"], round(run.t0 * 1000), list(zip(run.slots, run.servers)),
                             run.dep.hosts(), f"{t.rel}/{FAULTS_FILE}", t.dir / "timeline.jsonl",
                             redirect_topology(cfg, run.doc))
    run.stack.callback(t.faults.close)
    sampler = None
    if all(p.handle_host.this_machine for p in run.servers + run.clients):
        inside = {p.pid for p in run.servers}  # in_server clients are threads of a server JVM
        measured = [p for p in run.clients if p.pid not in inside]
        sampler = cpu.WindowSampler({p.name: p.pid for p in run.servers + measured},
                                    run.t0 + dur["warmup_s"], run.t0 + dur["warmup_s"] + dur["measure_s"])
        run.stack.callback(sampler.close)
    early = first_check_at(run)
    wait_exit(t, run.progress, run.clients, run.servers, total + 180, "running", total, ends_at=run.t0 + total,
              check_at=(early, lambda: check_skew(run)) if early < run.t0 + total else None)
    t.faults.close()
    if sampler is not None:
        t.cpu = sampler.result({p.name: "servers" for p in run.servers} | {p.name: "clients" for p in run.clients},
                               own=run.env.system_info.info(t.system).thread_categories)
    run.client_warnings = check_clients_after_run(run.clients)
    run.skew = check_skew(run)


def redirect_topology(cfg: dict, doc: dict):
    """The topology whose RTTs say where a kill's redirected clients go, if a kill redirects."""
    if not any(f.get("clients") == "redirect" for f in cfg["faults"]):
        return None
    from ..placement import load_topology
    return load_topology(doc)
