"""The RTT phase: once per run, ping probes measure the matrix between datacenters (the
WAN is the same for every system and point), recorded beside the configured one."""
from __future__ import annotations

import json

from .. import rundir
from ..spec.fields import server_jvm_args
from .jvm import java
from .procs import start, wait_exit
from .state import Running


def measure_rtt(run: Running) -> None:
    t, manifest = run.t, run.manifest
    if "measured_rtt_ms" in manifest:
        return
    run.progress.update(phase="measuring RTT matrix", elapsed=0, expected=None)
    probes = []
    for pinger in run.dep.pingers(run.dcs):
        row = ["--from", pinger.from_dc] if pinger.from_dc else []
        out = f"{t.rel}/rtt-{pinger.from_dc or 'all'}.json"
        probes.append((pinger.host, out, start(t, run.stack, pinger.host, f"ping-{pinger.from_dc or 'all'}",
                       java(pinger.host, 512, "ping", "--topology", pinger.host.path(run.topo_rel), *row,
                            "--samples", "10", "--warmup-s", "1", "--json", pinger.host.path(out),
                            jvm_args=server_jvm_args(run.cfg, "per_dc")))))
    wait_exit(t, run.progress, [p for _, _, p in probes], run.servers, 120, "measuring RTT matrix", None)
    matrix: dict = {}
    for host, out, _ in probes:
        for a, row in json.loads(host.read_text(out)).items():
            matrix.setdefault(a, {}).update(row)
    manifest["measured_rtt_ms"] = matrix
    manifest["rtt_check"] = rtt_check(run.doc, matrix)
    rundir.write_json(t.dir / "rtt.json", matrix)


def rtt_check(doc: dict, measured: dict) -> dict:
    """Configured (the topology's rtt_ms times its rtt_scale) against measured (the run's
    ping probes, median) round-trip time per ordered pair of datacenters, e.g.
    {"VA->CA": {"configured_ms": 60, "measured_ms": 61.2}}."""
    scale = float(doc.get("rtt_scale", 1.0))
    given = doc.get("rtt_ms") or {}
    out = {}
    for a in doc["datacenters"]:
        for b in doc["datacenters"]:
            if a == b:
                continue
            conf = (given.get(a) or {}).get(b, (given.get(b) or {}).get(a))
            m = (measured.get(a) or {}).get(b)
            value = m.get("p50") if isinstance(m, dict) else m
            out[f"{a}->{b}"] = {"configured_ms": None if conf is None else round(float(conf) * scale, 3),
                                "measured_ms": None if value is None else round(float(value), 3)}
    return out
