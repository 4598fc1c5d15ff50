"""Runs an experiment: for every sweep point, system and trial, start one server process
per datacenter, wait until they listen, measure the RTT matrix, load the keys, run the
clients through warm-up, measurement and cool-down, stop everything by pid, and derive the
summary from the clients' raw logs. Writes the run directory of SPEC §8.

Teardown is guaranteed (ExitStack): on Ctrl-C, SIGTERM, a crashed process or any error,
every started process is stopped, the manifest says how the run ended, and the caller
exits non-zero.
"""
from __future__ import annotations

import contextlib
import copy
import json
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import rundir
from .errors import ConfigError, RunFailed
from .experiment import dist_text, points
from .hosts import Host, Proc
from .summary import summarize

CLIENT_ID_BASE = 4096
IDS_PER_PROCESS = 1000
# Printed by every client process once its threads are connected (TxnWorkload.READY_LINE).
CLIENTS_READY = "k2bench: clients ready"
CLIENT_START_TIMEOUT_S = 300
STATUS_RE = re.compile(r"(\d+) sec: (\d+) operations; ([\d.]+) current ops/sec")


@dataclass
class Env:
    """Where things are: the repository, the system jar, the Java binary, the host."""
    repo: Path
    jar: Path
    host: Host
    java: str = "java"

    @property
    def workloads(self) -> Path:
        return self.repo / "workloads"

    def launcher(self, *args: str, heap_mb: int | None = None) -> list[str]:
        heap = [f"-Xmx{heap_mb}m"] if heap_mb else []
        return [self.java, *heap, "-jar", str(self.jar), *args]

    def ycsb(self, heap_mb: int, *args: str) -> list[str]:
        return [self.java, f"-Xmx{heap_mb}m", "-cp", str(self.jar), "site.ycsb.Client", *args]

    def check_output(self, *args: str) -> str:
        """Runs a short launcher command; a ConfigError carries its one-line complaint."""
        p = subprocess.run(self.launcher(*args), capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            line = (p.stderr.strip().splitlines() or ["failed"])[-1]
            raise ConfigError(line.split(": ", 2)[1] if line.count(": ") >= 2 else "launcher",
                              line.split(": ", 2)[-1])
        return p.stdout

    def systems(self) -> list[str]:
        return [line.split()[0] for line in self.check_output("systems").splitlines() if line.strip()]


# ------------------------------------------------------------------ topology of a run

def topology_doc(env: Env, cfg: dict) -> dict:
    """The experiment's topology: its file with the experiment's overrides applied."""
    t = cfg["topology"]
    path = env.workloads / t["file"]
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError("topology.file", f"{path} does not exist") from None
    if not isinstance(doc, dict):
        raise ConfigError("topology.file", f"{path} is not a topology mapping")
    for key in ("servers_per_dc", "replication_factor", "intra_dc_delay_ms", "jitter_ms"):
        if t[key] is not None:
            doc[key] = t[key]
    doc["rtt_scale"] = float(doc.get("rtt_scale", 1.0)) * t["rtt_scale"]
    return doc


def with_ports(doc: dict, ports: list[int]) -> dict:
    """The topology with every server on 127.0.0.1 at the given ports (local runs)."""
    doc = copy.deepcopy(doc)
    dcs, s = doc.get("datacenters", []), doc.get("servers_per_dc", 0)
    if not isinstance(dcs, list) or not isinstance(s, int) or len(ports) < len(dcs) * s:
        return doc  # malformed: the launcher's check names the field
    it = iter(ports)
    doc["servers"] = {dc: [f"127.0.0.1:{next(it)}" for _ in range(s)] for dc in dcs}
    for k in ("base_port", "host"):
        doc.pop(k, None)
    return doc


def check_topology(env: Env, doc: dict) -> dict:
    """Validates a topology with the servers' own loader; returns it resolved."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(doc, f)
        tmp = Path(f.name)
    try:
        return json.loads(env.check_output("topology", str(tmp)))
    except ConfigError as e:
        raise ConfigError(f"topology ({e.field})", e.problem) from None
    finally:
        tmp.unlink()


def validate(env: Env, exp: dict) -> dict:
    """Everything that can be checked before a process starts; returns the resolved topology."""
    resolved = None
    for _, cfg in points(exp):
        doc = topology_doc(env, cfg)
        n = len(doc.get("datacenters") or []) * int(doc.get("servers_per_dc") or 0)
        resolved = resolved or check_topology(env, with_ports(doc, list(range(20000, 20000 + n))))
    if not env.jar.exists():
        raise ConfigError("jar", f"{env.jar} is missing; run `make build`")
    return resolved


# ------------------------------------------------------------------ one trial

@dataclass
class Trial:
    system: str
    point: str
    trial: int
    cfg: dict
    dir: Path
    procs: list[Proc] = field(default_factory=list)


class Orchestrator:
    def __init__(self, env: Env, progress):
        self.env = env
        self.progress = progress

    # -------------------------------------------------------------- processes

    def _start(self, t: Trial, stack: contextlib.ExitStack, name: str, argv: list[str]) -> Proc:
        p = self.env.host.start(name, argv, t.dir / "logs" / f"{name}.out", t.dir / "logs" / f"{name}.err")
        t.procs.append(p)
        rundir.write_json(t.dir / "processes" / f"{name}.json", p.record())  # pid known while it runs
        stack.callback(self._stop, t, p)
        return p

    def _stop(self, t: Trial, p: Proc) -> None:
        self.env.host.stop(p)
        rundir.write_json(t.dir / "processes" / f"{p.name}.json", p.record())

    def _check_alive(self, procs: list[Proc]) -> None:
        for p in procs:
            rc = self.env.host.poll(p)
            if rc is not None:
                raise RunFailed(f"{p.name} exited with code {rc} unexpectedly: {tail(p.stderr)}")

    def _wait_for_line(self, procs: list[Proc], others: list[Proc], prefix: str, timeout_s: float,
                       what: str) -> None:
        """Waits until every process of ``procs`` printed a line starting with ``prefix``."""
        deadline = time.time() + timeout_s
        pending = list(procs)
        while pending:
            self._check_alive(pending + others)
            pending = [p for p in pending
                       if not any(ln.startswith(prefix) for ln in read(p.stdout).splitlines())]
            if pending and time.time() > deadline:
                raise RunFailed(f"{what} not ready after {timeout_s:.0f} s: {[p.name for p in pending]}")
            time.sleep(0.2)

    def _wait_exit(self, t: Trial, clients: list[Proc], servers: list[Proc], timeout_s: float,
                   phase: str, expected_s: float) -> None:
        start = time.time()
        while True:
            self._check_alive(servers)
            done = [p for p in clients if self.env.host.poll(p) is not None]
            for p in done:
                if p.returncode != 0:
                    raise RunFailed(f"{p.name} exited with code {p.returncode}: {tail(p.stderr)}")
            if len(done) == len(clients):
                return
            if time.time() - start > timeout_s:
                raise RunFailed(f"{phase} did not finish within {timeout_s:.0f} s")
            self.progress.update(phase=phase, elapsed=time.time() - start, expected=expected_s,
                                 ops_per_s=current_rate(clients))
            time.sleep(0.5)

    # -------------------------------------------------------------- phases

    def run_trial(self, t: Trial, run_manifest: dict) -> dict:
        cfg, env = t.cfg, self.env
        w, srv, cl, dur = cfg["workload"], cfg["server"], cfg["clients"], cfg["duration"]
        doc = topology_doc(env, cfg)
        n_servers = len(doc["datacenters"]) * doc["servers_per_dc"]
        topo_doc = with_ports(doc, env.host.free_ports(n_servers))
        topo_file = t.dir / "topology.yaml"
        rundir.write_text(topo_file, yaml.safe_dump(topo_doc, sort_keys=False))
        dcs = topo_doc["datacenters"]
        t.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            self.progress.update(system=t.system, point=t.point, trial=t.trial, phase="starting servers",
                                 elapsed=0, expected=None, ops_per_s=None)
            servers = [self._start(t, stack, f"server-{dc}", env.launcher(
                "serve", "--topology", str(topo_file), "--system", t.system, "--dc", dc,
                "--keys", str(w["keys"]), "--cache-fraction", str(srv["cache_fraction"]),
                "--gc-window-ms", str(srv["gc_window_ms"]),
                "--replica-retention-ms", str(srv["replica_retention_ms"]),
                "--txn-timeout-ms", str(srv["txn_timeout_ms"]),
                "--stats-out", str(t.dir / "servers" / f"stats-{dc}.json"), heap_mb=srv["heap_mb"]))
                for dc in dcs]
            self._wait_for_line(servers, [], "ready:", 120, "servers")

            if "measured_rtt_ms" not in run_manifest:
                # Once per run: the emulated WAN is the same for every system and point.
                self.progress.update(phase="measuring RTT matrix", elapsed=0, expected=None)
                rtt_file = t.dir / "rtt.json"
                ping = self._start(t, stack, "ping", env.launcher(
                    "ping", "--topology", str(topo_file), "--samples", "10", "--warmup-s", "2",
                    "--json", str(rtt_file)))
                self._wait_exit(t, [ping], servers, 120, "measuring RTT matrix", None)
                run_manifest["measured_rtt_ms"] = json.loads(rtt_file.read_text())

            # Load: each datacenter's loader writes the keys it can write locally (those
            # whose first replica it is), so loading costs no wide-area round in any system.
            loaders = []
            for i, dc in enumerate(dcs):
                props = self._client_props(t, cfg, topo_file, dc, CLIENT_ID_BASE + i * IDS_PER_PROCESS, None)
                props |= {"insertstart": 0, "insertcount": w["keys"], "operationcount": 2**31 - 1,
                          "k2bench.load_local": "true",
                          "k2bench.load_report": str(t.dir / "clients" / f"load-{dc}.json")}
                loaders.append(self._start(t, stack, f"load-{dc}", env.ycsb(
                    cl["heap_mb"], "-load", "-s", "-P", str(self._props_file(t, f"load-{dc}", props)),
                    "-threads", str(cfg["load"]["threads_per_dc"]))))
            self._wait_exit(t, loaders, servers, max(600, w["keys"] / 20), "loading keys", None)
            reports = [json.loads((t.dir / "clients" / f"load-{dc}.json").read_text()) for dc in dcs]
            loaded, failed = sum(r["loaded"] for r in reports), sum(r["failed"] for r in reports)
            if loaded != w["keys"] or failed:
                raise RunFailed(f"load wrote {loaded} of {w['keys']} keys ({failed} failed)")

            # Clients connect, then wait at a start barrier: JVM start-up (seconds on a
            # loaded machine) must not eat into the warm-up, and every client process
            # measures the same window (see TxnWorkload).
            total = dur["warmup_s"] + dur["measure_s"] + dur["cooldown_s"]
            start_file = t.dir / "clients" / "start"
            clients = []
            self.progress.update(phase="starting clients", elapsed=0, expected=None, ops_per_s=None)
            for i, dc in enumerate(dcs):
                hlog = t.dir / "clients" / f"client-{dc}.hlog"
                props = self._client_props(t, cfg, topo_file, dc,
                                           CLIENT_ID_BASE + (len(dcs) + i) * IDS_PER_PROCESS, hlog)
                props |= {"operationcount": 2**31 - 1, "k2bench.start_file": str(start_file),
                          "k2bench.run_s": total,
                          # a safety net only: the workload stops itself at start + run_s
                          "maxexecutiontime": int(total + CLIENT_START_TIMEOUT_S + 60)}
                args = ["-t", "-s", "-P", str(self._props_file(t, f"client-{dc}", props)),
                        "-threads", str(cl["threads_per_dc"])]
                if cl["target_ops_per_s_per_dc"]:
                    args += ["-target", str(max(1, round(cl["target_ops_per_s_per_dc"])))]
                clients.append(self._start(t, stack, f"client-{dc}", env.ycsb(cl["heap_mb"], *args)))
            self._wait_for_line(clients, servers, CLIENTS_READY, CLIENT_START_TIMEOUT_S, "clients")
            t0 = time.time() + 1.0
            env.host.put_text(start_file, f"{round(t0 * 1000)}\n")
            self._wait_exit(t, clients, servers, total + 180, "running", total)
            self.progress.update(phase="stopping", elapsed=0, expected=None, ops_per_s=None)
            for p in servers:
                self._stop(t, p)
            bad = [p for p in servers if p.returncode not in (0, 143, -15)]
            if bad:
                raise RunFailed(f"{bad[0].name} exited with code {bad[0].returncode}: {tail(bad[0].stderr)}")

        t0 = round(t0 * 1000) / 1000  # what the clients read: their intervals start there
        window = ((t0 + dur["warmup_s"]) * 1000, (t0 + dur["warmup_s"] + dur["measure_s"]) * 1000)
        logs = {p.name.removeprefix("client-"): t.dir / "clients" / f"{p.name}.hlog" for p in clients}
        missing = [str(p) for p in logs.values() if not p.exists()]
        if missing:
            raise RunFailed(f"client logs missing: {missing}")
        summary = summarize(logs, system=t.system, experiment=cfg["name"], window_ms=window,
                            origin_ms=t0 * 1000)
        summary["point"] = t.point
        summary["point_values"] = point_values(run_manifest["config"], cfg)
        summary["trial"] = t.trial
        summary["start_ms"] = t0 * 1000  # the clients' common start; the window follows from it
        summary["server_stats"] = server_totals(t.dir / "servers")
        rundir.write_json(t.dir / "summary.json", summary)
        return summary

    def _client_props(self, t: Trial, cfg: dict, topo: Path, dc: str, id_base: int, hlog: Path | None) -> dict:
        w = cfg["workload"]
        props = {
            "db": "org.k2bench.ycsb.K2BenchDB",
            "workload": "org.k2bench.ycsb.TxnWorkload",
            "recordcount": w["keys"],
            "k2bench.system": t.system,
            "k2bench.topology": str(topo),
            "k2bench.dc": dc,
            "k2bench.client_id_base": id_base,
            "k2bench.rpc_timeout_ms": cfg["clients"]["rpc_timeout_ms"],
            "k2bench.keys_per_op": dist_text(w["keys_per_op"]),
            "k2bench.columns": dist_text(w["columns"]),
            "k2bench.value_bytes": dist_text(w["value_bytes"]),
            "k2bench.zipf": w["zipf"],
            "k2bench.write_fraction": w["write_fraction"],
            "k2bench.wot_fraction": w["wot_fraction"],
            "k2bench.seed": 1_000 * t.trial + id_base,
            "status.interval": 1,
            # YCSB keeps the intended start time of paced operations only in this mode; the
            # workload measures latency from it (coordinated omission corrected).
            "measurement.interval": "intended",
        }
        if hlog is not None:
            props["k2bench.hlog"] = str(hlog)
        return props

    def _props_file(self, t: Trial, name: str, props: dict) -> Path:
        path = t.dir / "clients" / f"{name}.properties"
        rundir.write_text(path, "".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    # -------------------------------------------------------------- experiment

    def run(self, exp: dict, run_dir: Path, resume: bool = False) -> int:
        manifest_path = run_dir / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if resume and manifest_path.exists() else {}
        manifest |= {
            "experiment": exp["name"], "config": exp, "systems": exp["systems"],
            **rundir.git_info(self.env.repo), "hosts": [self.env.host.name],
            "started": manifest.get("started", rundir.iso(time.time())), "stopped": None,
            "status": "running", "jar": str(self.env.jar),
        }
        rundir.write_json(manifest_path, manifest)
        trials = [(pid, cfg, system, k) for pid, cfg in points(exp)
                  for system in exp["systems"] for k in range(1, exp["trials"] + 1)]
        # Every trial of the run and where it lives, so readers (analysis/) never parse
        # directory names (STYLE 4).
        manifest["trials"] = [
            {"system": system, "point": pid, "point_values": point_values(exp, cfg), "trial": k,
             "dir": str(trial_dir(run_dir, system, pid, k, exp["trials"]).relative_to(run_dir))}
            for pid, cfg, system, k in trials]
        self.progress.start(exp["name"], len(trials), eta_per_trial(exp))
        status, reason, code = "completed", None, 0
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            for i, (pid, cfg, system, k) in enumerate(trials):
                tdir = trial_dir(run_dir, system, pid, k, exp["trials"])
                if (tdir / "summary.json").exists():
                    self.progress.skip(system, pid, k)
                    continue
                if tdir.exists():
                    shutil.rmtree(tdir)  # a trial that did not finish starts over
                self.progress.begin_trial(i, system, pid, k)
                self.run_trial(Trial(system, pid, k, cfg, tdir), manifest)
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
            signal.signal(signal.SIGTERM, previous)
            manifest |= {"status": status, "stopped": rundir.iso(time.time())}
            if reason:
                manifest["reason"] = reason
            rundir.write_json(manifest_path, manifest)
            self.progress.finish(status, reason)
        return code


def point_values(exp: dict, cfg: dict) -> dict:
    """The sweep values of one point, e.g. {"workload.zipf": 1.2}; {} without a sweep."""
    return {axis: cfg[axis.split(".")[0]][axis.split(".")[1]] for axis in exp["sweep"]}


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


def server_totals(stats_dir: Path) -> dict:
    totals: dict[str, int] = {}
    for f in sorted(stats_dir.glob("stats-*.json")):
        for counters in json.loads(f.read_text()).values():
            for k, v in counters.items():
                totals[k] = totals.get(k, 0) + v
    return totals


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def tail(path: Path, lines: int = 3) -> str:
    text = [ln for ln in read(path).splitlines() if ln.strip()]
    return " | ".join(text[-lines:]) or "(no output)"


def current_rate(clients: list[Proc]) -> float | None:
    """The clients' current throughput from YCSB's status lines (for the display only)."""
    total, seen = 0.0, False
    for p in clients:
        matches = STATUS_RE.findall(read(p.stderr)[-2000:])
        if matches:
            total += float(matches[-1][2])
            seen = True
    return total if seen else None
