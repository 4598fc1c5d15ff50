"""The clients phase: every client slot's YCSB process (or, in_server, its clients inside the
server JVM) with its share of the datacenter's threads and rate, connected and waiting at
the start barrier (start.py). They are launched before the load phase and start up beside
it: a client touches no key before the barrier (DB.init only pings the servers), and its
JVM's start-up (seconds) no longer follows the load's."""
from __future__ import annotations

from ..spec.checks import IDS_PER_PROCESS
from ..spec.pacing import check_pacing, client_shares
from ..deploy import client_processes
from .diagnose import client_init_failure
from .jvm import client_props, jvm_props, props_file, ycsb
from .load import CLIENT_ID_BASE, load_timeout_s
from .procs import start, wait_for_line
from .start import pacing_spread_s
from .state import Running

# Printed by every client process once its threads are connected (TxnWorkload.READY_LINE).
CLIENTS_READY = "k2bench: clients ready"
CLIENT_START_TIMEOUT_S = 300


def launch_clients(run: Running) -> None:
    """Starts every client process; await_clients waits until all are connected."""
    t, cfg, dep = run.t, run.cfg, run.dep
    cl, dur = cfg["clients"], cfg["duration"]
    total = dur["warmup_s"] + dur["measure_s"] + dur["cooldown_s"]
    start_rel = f"{t.rel}/clients/start"
    # the load runs between their start and the barrier
    waits_s = load_timeout_s(cfg["workload"]) + CLIENT_START_TIMEOUT_S
    # Checked again with this deployment's client processes, split as launched below.
    check_pacing(run.manifest["config"], cfg, client_processes(dep, run.dcs))
    n = 0
    for dc in run.dcs:
        dc_slots = dep.clients(dc)
        for slot, share in zip(dc_slots, client_shares(cl["threads_per_dc"], cl["target_ops_per_s_per_dc"],
                                                       len(dc_slots))):
            props = client_props(t, slot.host, dc, CLIENT_ID_BASE + (len(run.dcs) + n) * IDS_PER_PROCESS,
                                 slot.host.path(f"{t.rel}/clients/{slot.name}.hlog"))
            n += 1
            # a redirected thread's new session (a kill with clients: redirect) takes an id
            # after the threads' and the warm-up's (spec/checks._check_redirects)
            props["k2bench.redirect_id_base"] = props["k2bench.client_id_base"] + share.threads + 1
            props |= {"operationcount": 2**31 - 1, "k2bench.start_file": slot.host.path(start_rel),
                      "k2bench.run_s": total,
                      "k2bench.history": slot.host.path(f"{t.rel}/clients/history-{slot.name}.jsonl"),
                      "k2bench.start_timeout_ms": int(waits_s * 1000),
                      # a safety net only: the workload stops itself at start + run_s
                      "maxexecutiontime": int(total + waits_s + 60)}
            if share.target is None:  # a paced session needs its own thread (TxnWorkload)
                props["k2bench.sessions_per_thread"] = cl["sessions_per_thread"]
            jvm = run.client_slot(dc)
            if jvm is not None:
                props["k2bench.colocated"] = "true"
            args = ["-t", "-s", "-P", props_file(t, slot.host, slot.name, props), "-threads", str(share.threads)]
            if share.target is not None:
                args += ["-target", str(share.target)]
            if jvm is not None:  # inside a server JVM (clients.processes)
                run.clients.append(start(t, run.stack, run.inside(slot.host, jvm), slot.name, args))
            else:
                run.clients.append(start(t, run.stack, slot.host, slot.name,
                                         ycsb(slot.host, cl["heap_mb"], *args, props=jvm_props(slot.host, t),
                                              jvm_args=cl["jvm_args"])))
            run.spreads[slot.name] = pacing_spread_s(share)
            if slot.host not in run.client_hosts:
                run.client_hosts.append(slot.host)


def await_clients(run: Running) -> None:
    """Waits until every client process is connected and waiting at the start barrier."""
    run.progress.update(phase="starting clients", elapsed=0, expected=None, ops_per_s=None)
    wait_for_line(run.clients, run.servers, CLIENTS_READY, CLIENT_START_TIMEOUT_S, "clients",
                  failed=client_init_failure)
