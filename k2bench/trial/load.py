"""The load phase: each datacenter's loader writes the keys it can write locally (those whose
first replica it is), so loading costs no wide-area round in any system."""
from __future__ import annotations

import json

from ..errors import RunFailed
from ..spec.checks import IDS_PER_PROCESS
from .diagnose import client_init_failure, tail
from .jvm import client_props, jvm_props, props_file, ycsb
from .procs import not_ready, start, wait_exit
from .state import Running, Trial

CLIENT_ID_BASE = 4096  # loaders take the first ids from here, clients the ones after (clients.py)


def load_timeout_s(workload: dict) -> float:
    """The longest the load phase may take."""
    return max(600, workload["keys"] / 20)


def loader_dcs(t: Trial, dcs: list[str]) -> list[str]:
    """The datacenters that run a loader: those the placement gives first replicas (with
    groups, the first group's: index modulo f = 0); loaders elsewhere would write nothing and
    only take the CPU of a start from the others (load_keys's count check catches a
    mismatch). A trial built without its resolved placement, as tests with stand-in processes
    do, loads from every datacenter: each writes only its first replicas, right for any placement."""
    first = t.placement["first_replica_dcs"] if t.placement else dcs
    return [dc for dc in dcs if dc in first]


def load_keys(run: Running) -> None:
    t, cfg, dep = run.t, run.cfg, run.dep
    w, cl = cfg["workload"], cfg["clients"]
    loaders = []
    for dc in loader_dcs(t, run.dcs):
        i = run.dcs.index(dc)
        slot = dep.clients(dc)[0]
        props = client_props(t, slot.host, dc, CLIENT_ID_BASE + i * IDS_PER_PROCESS, None)
        props |= {"insertstart": 0, "insertcount": w["keys"], "operationcount": 2**31 - 1,
                  "k2bench.load_local": "true",
                  "k2bench.load_report": slot.host.path(f"{t.rel}/clients/load-{dc}.json"),
                  "k2bench.history": slot.host.path(f"{t.rel}/clients/history-load-{dc}.jsonl")}
        jvm = run.loader_slot(dc)
        if jvm is not None:
            props["k2bench.colocated"] = "true"
        args = ["-load", "-s", "-P", props_file(t, slot.host, f"load-{dc}", props),
                "-threads", str(cfg["load"]["threads_per_dc"])]
        if jvm is not None:  # in its datacenter's server JVM: no JVM to start (3-5 s), messages to it in process
            loader = start(t, run.stack, run.inside(slot.host, jvm), f"load-{dc}", args)
        else:
            loader = start(t, run.stack, slot.host, f"load-{dc}", ycsb(
                slot.host, cl["heap_mb"], *args, props=jvm_props(slot.host, t), jvm_args=cl["jvm_args"]))
        loaders.append((slot.host, dc, loader))
    # the clients start up meanwhile (clients.py): one that exits, or whose DB.init failed
    # (YCSB lives on idle then), fails the trial now rather than after the load
    wait_exit(t, run.progress, [p for _, _, p in loaders], run.servers + run.clients, load_timeout_s(w),
              "loading keys", None, failing=lambda: not_ready(run.clients, client_init_failure))
    reports = []  # (loader, its report)
    for h, dc, p in loaders:
        text = h.read_text(f"{t.rel}/clients/load-{dc}.json")
        if not text.strip():  # its threads died before the report (DB.init failed)
            raise RunFailed(f"{p.name} wrote no load report ({p.ended()}): {tail(p)}")
        reports.append((p, json.loads(text)))
    loaded, failed = sum(r["loaded"] for _, r in reports), sum(r["failed"] for _, r in reports)
    if loaded != w["keys"] or failed:
        worst = max(reports, key=lambda pr: pr[1]["failed"])[0]
        raise RunFailed(f"load wrote {loaded} of {w['keys']} keys ({failed} failed); {worst.name}: {tail(worst)}")
