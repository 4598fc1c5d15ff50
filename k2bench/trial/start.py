"""The start barrier: clients connect, then wait for a common start time written to every
client host, so JVM start-up (seconds on a loaded machine) does not eat into the warm-up and
every client process measures the same window (see TxnWorkload); each client's first
operation is then held to clients.max_start_skew_s from that start."""
from __future__ import annotations

import os
import re
import time

from .. import rundir
from ..deploy.hosts import Host, Proc
from ..errors import ConfigError, RunFailed
from .procs import fan_out
from .state import Running

# Printed by every client process when it issues its first operation after the start
# barrier (TxnWorkload.FIRST_OP_LINE), with its wall time in epoch ms.
FIRST_OP_RE = re.compile(r"^k2bench: first operation at (\d+)\s*$", re.M)
# For tests of the start skew check only: "<host name>=<seconds>" delays the write of the
# start file to that host, as a slow host would.
TEST_START_DELAY_ENV = "K2BENCH_TESTING_START_FILE_DELAY"


def common_start(run: Running) -> None:
    """Writes the clients' common start time to every client host in parallel. t0 leaves
    room for the fan-out: a parallel write of a probe file first measures how long
    writing to every host takes, and t0 is that far ahead twice, plus a margin
    (choose_t0). A start file that still arrives late shows as the clients' skew."""
    hosts, start_rel = run.client_hosts, f"{run.t.rel}/clients/start"
    probe = fan_out(hosts, lambda h: h.put_text(f"{start_rel}.probe", "probe\n"))
    t0 = choose_t0(time.time(), probe)
    delays = test_start_delays()
    written_at = time.time()

    def write(h: Host):
        if h.name in delays:
            time.sleep(delays[h.name])
        h.put_text(start_rel, f"{round(t0 * 1000)}\n")

    fan = fan_out(hosts, write)
    run.t0 = t0
    run.start_info = {"t0_ms": round(t0 * 1000), "probe_fan_out_s": round(probe, 3),
                      "lead_s": round(t0 - written_at, 3), "write_fan_out_s": round(fan, 3),
                      "written_late": time.time() > t0}


def check_skew(run: Running) -> dict:
    """Each client's first operation against the common start, recorded in the trial, the
    run's manifest and the clients' process records; a client beyond the bound fails the trial."""
    t, bound = run.t, run.cfg["clients"]["max_start_skew_s"]
    info = start_skew(run.clients, run.t0, run.spreads, bound, run.start_info)
    rundir.write_json(t.dir / "start.json", info)
    for entry in run.manifest.get("trials", []):
        if entry.get("dir") == t.rel:
            entry["start"] = info
    for p in run.clients:
        c = info["clients"][p.name]
        p.notes |= {"first_op_ms": c["first_op_ms"], "start_skew_s": c["skew_s"]}
        rundir.write_json(t.dir / "processes" / f"{p.name}.json", p.record())
    if (why := skew_failure(info)):
        raise RunFailed(why)
    return info


def first_check_at(run: Running) -> float:
    """When every client should have begun (epoch s): the skew check runs then, and again at the end."""
    return run.t0 + run.cfg["clients"]["max_start_skew_s"] + max(run.spreads.values(), default=0) + 2


def choose_t0(now: float, fan_out_s: float) -> float:
    """The clients' common start (epoch s): twice the measured fan-out of a write to every
    client host plus half a second ahead, at least one second."""
    return now + max(1.0, 2 * fan_out_s + 0.5)


def test_start_delays() -> dict[str, float]:
    """The test-only delays of TEST_START_DELAY_ENV: host name -> seconds."""
    out = {}
    for item in filter(None, os.environ.get(TEST_START_DELAY_ENV, "").split(",")):
        name, _, secs = item.partition("=")
        try:
            out[name.strip()] = float(secs)
        except ValueError:
            raise ConfigError(TEST_START_DELAY_ENV, f"{item!r} is not HOST=SECONDS") from None
    return out


def pacing_spread_s(share) -> float:
    """How late YCSB 0.17 may issue a paced thread's first operation on purpose: it spreads
    the threads' starts over one pacing interval (ClientThread: a random delay below one
    interval when a thread runs at most 1000 ops/s). Unpaced threads start at once."""
    interval_ms = share.interval_ms
    return 0.0 if not interval_ms or interval_ms < 1 else interval_ms / 1000


def first_op_ms(stdout: str) -> int | None:
    m = FIRST_OP_RE.search(stdout)
    return int(m.group(1)) if m else None


def start_skew(clients: list[Proc], t0: float, spreads: dict[str, float], bound_s: float, info: dict) -> dict:
    """Each client's first operation (its own report, epoch ms by its host's clock) and its
    skew from the common start t0, with the bound it is held to."""
    out = dict(info) | {"bound_s": bound_s, "clients": {}}
    t0_ms = round(t0 * 1000)
    for p in clients:
        first = first_op_ms(p.handle_host.read_text(p.stdout))
        out["clients"][p.name] = {"host": p.host, "first_op_ms": first,
                                  "skew_s": None if first is None else round((first - t0_ms) / 1000, 3),
                                  "pacing_spread_s": round(spreads.get(p.name, 0.0), 3)}
    skews = [abs(c["skew_s"]) for c in out["clients"].values() if c["skew_s"] is not None]
    out["max_skew_s"] = max(skews) if skews else None
    return out


def skew_failure(info: dict) -> str | None:
    """Why the clients' start fails the trial: a client whose first operation is further
    from the common start than the bound (plus its pacing spread), or none yet."""
    bound = info["bound_s"]
    for name, c in info["clients"].items():
        allowed = bound + c["pacing_spread_s"]
        spread = f" plus {c['pacing_spread_s']:g} s of pacing spread" if c["pacing_spread_s"] else ""
        if c["first_op_ms"] is None:
            return (f"start skew: {name} on {c['host']} issued no operation within {allowed:g} s of the common start "
                    f"(clients.max_start_skew_s {bound:g} s{spread}); its start file arrived late or it hangs")
        if abs(c["skew_s"]) > allowed:
            return (f"start skew: {name} on {c['host']} issued its first operation {c['skew_s']:+.2f} s from the "
                    f"common start, beyond clients.max_start_skew_s {bound:g} s{spread} (a late start file or "
                    f"a slow start; by the host's own clock, which chrony keeps in step)")
    return None
