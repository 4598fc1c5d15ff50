"""``make bench-throughput``: each system's real peak on this machine and where its CPU goes
there (the ratios at peak beside the paper's Fig. 9 are analysis/throughput.py's).

A peak is searched, not assumed: for each setting and system the closed-loop client
threads per datacenter climb the experiment's ladder (``sweep: clients.threads_per_dc``)
one point at a time, and the climb stops at the first point where

- throughput falls (below ``FALL`` times the best so far), or
- ROT p99 exceeds ``P99_FACTOR`` times its value at the ladder's first (low-load) point, or
- the emulation is degraded (its lateness p99 above 5 ms: latencies are no longer the
  configured WAN's, so neither are the throughputs).

The peak is the best point before the stop (the point that stopped it is past the peak by
every rule) that is not degraded; the step that stopped the climb is then halved up to
twice (``refinement``), and a point in it that passes the same rules can be the peak. A
climb that reaches the top of the ladder without a stop did not show a peak: it is
flagged "not a peak".

A virtual machine's hypervisor can take CPU from it (steal time: seen here at 9-13% of
the machine's time during single points, otherwise below 0.5%), and a point that fails a
rule while that happened says nothing of the system. Such a point (steal above
``STEAL_LIMIT`` of the machine's time in its window) is measured again, up to ``RETRIES``
times, each new attempt in a run directory of its own beside the setting's
(``<setting>.retry<k>``); the last attempt stands, and the point records the ones before it
(``disturbed_attempts``). A climb whose stop, or a refinement's failure, still comes from a
disturbed point says so and is flagged (``disturbed``).

A point whose window holds a whole second in which no operation completed, while the run's
median second had ``STALL_MIN_MEDIAN`` or more, is disturbed too (``stalled_s``): every
client stood still at once (docs/performance.md has the one seen). A system that stalls in
every attempt is flagged all the same, the stall named: a stall is a finding, not a peak.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import cpu, rundir
from .errors import ConfigError
from .experiment import axis_set
from .orchestrator import Orchestrator, trial_dir

# The setting of each Fig. 9 column of the K2 paper as experiment-file values (its defaults,
# §VII-B, elsewhere): what a climb changes in the bench-throughput experiment.
FIG9_SETTINGS = {
    "default": {},
    "f=1": {"topology.replication_factor": 1}, "f=3": {"topology.replication_factor": 3},
    "write 0.1%": {"workload.write_fraction": 0.001}, "write 5%": {"workload.write_fraction": 0.05},
    "zipf 0.9": {"workload.zipf": 0.9}, "zipf 1.4": {"workload.zipf": 1.4},
    "cache 1%": {"server.cache_fraction": 0.01}, "cache 15%": {"server.cache_fraction": 0.15},
}
FALL = 0.95
P99_FACTOR = 5.0
# The Fig. 9 columns that fit one machine (cache sizes are left out: at 10k keys a 1% cache
# is 100 keys, too few to say anything about the paper's 10,000).
SETTINGS = ["default", "write 5%", "zipf 1.4", "zipf 0.9", "f=1", "f=3"]
AXIS = "clients.threads_per_dc"
REFINE = 2  # points tried between the last passing point and the one that stopped the climb
QUICK = "bench-throughput-quick"  # --quick's experiment: one setting, a coarser ladder, shorter phases
QUICK_REFINE = 1
QUICK_ECHO = ("--step-s", "3", "--repeats", "2", "--repeat-s", "5")  # ~1 min, not ~2
ECHO_ATTEMPTS = 3  # echo ceilings measured while the last one's windows spread past 10% (UNSTABLE)
MIN_GAP = 4  # threads per datacenter: a narrower step is not split
STEAL_LIMIT = cpu.STEAL_LIMIT  # share of the machine's time stolen in a point's window that makes it disturbed
RETRIES = 2  # new attempts at a disturbed point that stopped the climb
STALL_MIN_MEDIAN = 10  # operations in a run's median second from which a second without any is a stall
BENCH_JSON = "bench.json"  # the experiment a bench run climbs with, for --resume


@dataclass
class Climb:
    setting: str
    system: str
    points: list[dict] = field(default_factory=list)  # {"threads", "ops_per_s", "rot_p99_ms", "degraded", "dir"}
    stop: str | None = None  # why the climb stopped; None: the ladder ran out
    peak: dict | None = None
    failed: str | None = None
    disturbed: bool = False  # a point that stopped it or failed in its refinement was disturbed in every attempt

    @property
    def is_peak(self) -> bool:
        """The climb stopped by a rule, has a best point before it, and was not disturbed."""
        return self.stop is not None and self.peak is not None and not self.disturbed and not self.failed

    def as_json(self) -> dict:
        return {"setting": self.setting, "system": self.system, "points": self.points, "stop": self.stop,
                "peak": self.peak, "is_peak": self.is_peak,
                "disturbed": self.disturbed, "failed": self.failed, "peak_costs": op_costs(self.peak)}


def steal_share(point: dict) -> float | None:
    """The share of the machine's time the hypervisor took in the point's window."""
    return cpu.steal_share(point.get("cpu"))


def disturbance(point: dict) -> str | None:
    """What disturbed the point, as a phrase ("the hypervisor took ..."), or None."""
    st = steal_share(point)
    if st is not None and st > STEAL_LIMIT:
        return f"the hypervisor took {100 * st:.1f}% of the machine's time"
    if point.get("stalled_s"):
        return f"no operation completed in {point['stalled_s']} s of the window (every client stood still)"
    return None


def disturbed(point: dict) -> bool:
    return disturbance(point) is not None


def stalled_seconds(summary: dict) -> int:
    """Whole seconds of the measurement window in which no operation completed, when the
    run's median second (warm-up included: a long stall fills the window) had at least
    ``STALL_MIN_MEDIAN`` (0 otherwise, or without a time series)."""
    ts, window = summary.get("timeseries") or {}, summary.get("window_ms")
    origin, counts = ts.get("origin_ms"), ts.get("ops_per_s") or []
    if not window or origin is None or len(counts) < 2:
        return 0
    if sorted(counts[:-1])[(len(counts) - 1) // 2] < STALL_MIN_MEDIAN:  # the last second is cut short
        return 0
    return sum(1 for t, n in zip(ts.get("t_s", []), counts)
               if n == 0 and origin + 1000 * t >= window[0] and origin + 1000 * (t + 1) <= window[1])


def stop_reason(points: list[dict]) -> str | None:
    """Why the climb stops after its last point, or None to go on."""
    last = points[-1]
    if last["degraded"]:
        return f"emulation degraded at {last['threads']} threads/DC (lateness p99 {last['lateness_p99_ms']} ms)"
    if len(points) == 1:
        return None
    best = max(p["ops_per_s"] for p in points[:-1])
    if last["ops_per_s"] < FALL * best:
        return f"throughput fell to {last['ops_per_s']:,.0f} ops/s at {last['threads']} threads/DC (best {best:,.0f})"
    low = points[0]["rot_p99_ms"]
    if low and last["rot_p99_ms"] and last["rot_p99_ms"] > P99_FACTOR * low:
        return (f"ROT p99 {last['rot_p99_ms']:.0f} ms at {last['threads']} threads/DC > {P99_FACTOR:.0f}x "
                f"its low-load {low:.0f} ms")
    return None


def peak_of(points: list[dict]) -> dict | None:
    good = [p for p in points if not p["degraded"]]
    return max(good, key=lambda p: p["ops_per_s"]) if good else None


def check_resume(run_dir: Path, exp: dict) -> str | None:
    """Refuses (ConfigError on --resume) to continue ``run_dir`` unless it is a bench run of
    this very experiment (compared as JSON, the form it was saved in), or of one whose
    ladder is the start of this one's: a ladder extended at the top (after a climb was
    flagged NOT A PEAK) continues the climbs that ran out of it. Returns what grew, if any."""
    path = run_dir / BENCH_JSON
    if not path.exists():
        raise ConfigError("--resume", f"{run_dir} is not a bench-throughput run directory of this version "
                                      f"(no {BENCH_JSON}); start a new run")
    try:
        saved = json.loads(path.read_text())["experiment"]
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError("--resume", f"{path} is unreadable ({type(e).__name__}: {e}); start a new run") from None
    now = rundir.as_saved(exp)
    if saved == now:
        return None
    try:
        old_ladder, new_ladder = saved["sweep"][AXIS], now["sweep"][AXIS]
        same_but_ladder = ({**saved, "sweep": {}} == {**now, "sweep": {}} and set(saved["sweep"]) == {AXIS}
                           and set(now["sweep"]) == {AXIS})
    except (KeyError, TypeError):
        same_but_ladder = False
    if same_but_ladder and len(new_ladder) > len(old_ladder) and new_ladder[:len(old_ladder)] == old_ladder:
        return (f"the ladder grew ({old_ladder[-1]} -> {', '.join(map(str, new_ladder[len(old_ladder):]))} "
                f"threads/DC): climbs that ran out of it continue")
    raise ConfigError("--resume", f"{run_dir} was run with another bench-throughput experiment (its file or "
                                  "one it extends changed since; only a ladder extended at the top may "
                                  "differ); start a new run")


def setting_experiment(exp: dict, setting: str) -> dict:
    out = copy.deepcopy(exp)
    for axis, value in FIG9_SETTINGS[setting].items():
        axis_set(out, axis, value)
    out["name"] = exp["name"]
    out["trials"] = 1  # a climb reads one trial per point
    return out


def point_record(summary: dict, threads: int, tdir: str, topology: dict | None = None) -> dict:
    """One point of a climb. ``messages_per_op``: messages delivered in the window (the
    emulation's lateness histograms count every one) per operation, inside a datacenter and
    between datacenters. The CPU of each server's thread is named ``<DC>:<shard>`` from the
    trial's ``topology`` (datacenters, servers_per_dc) when given."""
    lat = summary.get("emulation_lateness_ms") or {}
    ops = (summary["throughput_ops_per_s"] or 0.0) * (summary.get("measured_seconds") or 0.0)
    counts = {c: (lat.get("classes") or {}).get(c, {}).get("count") for c in ("local", "wan")}
    per_op = ({c: round(n / ops, 2) for c, n in counts.items()}
              if ops > 0 and all(n is not None for n in counts.values()) else None)
    acc = summary.get("cpu")
    if acc and topology and acc.get("server_threads_s"):
        dcs, per_dc = topology["datacenters"], topology["servers_per_dc"]

        def name(key: str) -> str:
            sid = int(key)
            return f"{dcs[sid // per_dc]}:{sid % per_dc}" if sid // per_dc < len(dcs) else key
        acc = acc | {"server_threads_s": {name(k): v for k, v in acc["server_threads_s"].items()}}
    return {"threads": threads, "ops_per_s": summary["throughput_ops_per_s"] or 0.0,
            "rot_p99_ms": summary["ops"]["rot"]["latency_ms"]["p99"],
            "lateness_p99_ms": lat.get("worst_p99"), "degraded": bool(lat.get("degraded")),
            "lateness_paths_p99_ms": {k: v["p99"] for k, v in (lat.get("paths") or {}).items()} or None,
            "stalled_s": stalled_seconds(summary), "messages_per_op": per_op, "messages": summary.get("messages") or None, "cpu": acc, "dir": tdir}


def op_costs(peak: dict | None) -> dict | None:
    """What an operation cost at a peak, from its CPU accounting: CPU ms per operation (all
    of the run's JVMs, and the server protocol threads alone), messages per operation, and
    the servers' load: the busiest server thread's share of a core, the mean's, and the
    operations per second one core would carry if that server had it to itself (its CPU ms
    per operation, inverted). On the paper's testbed each server has its own machine and the
    busiest one sets the peak; here all servers share the cores, so the total sets it. None
    without an accounting."""
    acc = (peak or {}).get("cpu")
    if not acc or not peak["ops_per_s"] or "cpu_s" not in acc:  # cpu_s: not only the machine's split
        return None
    ops = peak["ops_per_s"] * acc["window_s"]
    out = {"cpu_ms_per_op": 1000 * acc["cpu_s"] / ops,
           "protocol_ms_per_op": 1000 * cpu.by_category(acc)[cpu.PROTOCOL] / ops,
           "messages_per_op": peak.get("messages_per_op"),
           # per link class, each payload type's messages per operation (summary.messages)
           "messages_by_type": {cls: {t: v["per_op"] for t, v in types.items()}
                                for cls, types in (peak.get("messages") or {}).items()} or None}
    if acc.get("switches"):
        # every time a thread blocked (and so had to be woken again), per operation
        out["wakeups_per_op"] = sum(v["voluntary"] for cats in acc["switches"].values()
                                    for v in cats.values()) / ops
    if acc.get("minor_faults"):
        # pages mapped on first touch per operation (4 KB each: 256 per MB of new memory)
        out["page_faults_per_op"] = sum(acc["minor_faults"].values()) / ops
    if acc.get("kernel_s") and acc["cpu_s"]:
        # the part of the JVMs' CPU spent in the kernel (system calls: waits, wake-ups, I/O)
        out["kernel_share"] = sum(v for cats in acc["kernel_s"].values() for v in cats.values()) / acc["cpu_s"]
    if (m := acc.get("machine_s")) and sum(m.values()) > 0:
        # the machine's time left idle and taken by the hypervisor (steal) in the window
        out["machine_idle_share"] = m["idle"] / sum(m.values())
        out["machine_steal_share"] = m["steal"] / sum(m.values())
    threads = acc.get("server_threads_s") or {}
    if threads:
        busiest = max(threads, key=threads.get)
        out |= {"busiest_server": busiest,
                "busiest_core_share": threads[busiest] / acc["window_s"],
                "mean_core_share": sum(threads.values()) / len(threads) / acc["window_s"],
                "busiest_ops_per_core": ops / threads[busiest] if threads[busiest] > 0 else None}
    return out


def busiest_server_ratio(a: dict | None, b: dict | None) -> float | None:
    """a's busiest_ops_per_core over b's (op_costs): the ratio of the peaks if each system's
    busiest server thread, on a core of its own, were what stops it; None when either is
    unknown. Each figure is an upper bound on its system's peak with one core per server;
    their ratio is an estimate, not a bound."""
    ca, cb = op_costs(a), op_costs(b)
    if not ca or not cb or not ca.get("busiest_ops_per_core") or not cb.get("busiest_ops_per_core"):
        return None
    return ca["busiest_ops_per_core"] / cb["busiest_ops_per_core"]


def refinement(lo: int, hi: int, done: int, refine: int = REFINE) -> int | None:
    """The thread count to try between the last point that passed (``lo``) and the first that
    stopped the climb (``hi``), or None: halving the gap at most ``refine`` times, down to
    gaps of ``MIN_GAP`` threads. A system that needs few threads for its rate (K2) jumps far
    past the limit with one ladder step; without this its peak would be found coarser than
    the others'."""
    if done >= refine or hi - lo < MIN_GAP:
        return None
    return (lo + hi) // 2


def attempt_dir(setting: str, attempt: int) -> str:
    """The run directory (under the bench's) of a setting's points' ``attempt``-th retries."""
    return slug(setting) if attempt == 0 else f"{slug(setting)}.retry{attempt}"


def climb(orch: Orchestrator, exp: dict, run_dir: Path, setting: str, system: str, say,
          trials: dict[str, list[dict]], refine: int = REFINE) -> Climb:
    """Runs one system up the ladder of one setting, a point at a time, into
    ``run_dir/<setting>/`` (a run directory of its own, resumed point by point); then
    narrows the step that stopped it (``refinement``). A disturbed point that fails a rule
    is measured again (``RETRIES``) into ``run_dir/<setting>.retry<k>/``. ``trials``
    collects each of those directories' trials (by name) for ``finish_manifest``."""
    ladder = list(exp["sweep"][AXIS])
    c = Climb(setting, system)
    ran: dict[int, list[int]] = {}

    def run_point(threads: int, attempt: int) -> dict | None:
        name = attempt_dir(setting, attempt)
        sub = run_dir / name
        ran.setdefault(attempt, []).append(threads)
        step = setting_experiment(exp, setting) | {"systems": [system], "sweep": {AXIS: sorted(ran[attempt])}}
        code = orch.run(step, sub, resume=True)
        if code == 130:
            raise KeyboardInterrupt
        manifest = json.loads((sub / "manifest.json").read_text())
        collect_trials(trials.setdefault(name, []), manifest.get("trials", []))
        tdir = trial_dir(sub, system, f"threads_per_dc={threads}", 1, 1)
        if code != 0 or not (tdir / "summary.json").exists():
            c.failed = f"the point at {threads} threads/DC failed (see {tdir})"
            return None
        topo = yaml.safe_load((tdir / "topology.yaml").read_text()) if (tdir / "topology.yaml").exists() else None
        q = point_record(json.loads((tdir / "summary.json").read_text()), threads, str(tdir.relative_to(run_dir)), topo)
        st = steal_share(q)
        say(f"{setting} / {system}: {threads} threads/DC -> {q['ops_per_s']:,.0f} ops/s, ROT p99 "
            f"{q['rot_p99_ms']} ms, lateness p99 {q['lateness_p99_ms']} ms"
            + (f", steal {100 * st:.1f}%" if st is not None and st > STEAL_LIMIT else "")
            + (f", stalled {q['stalled_s']} s" if q["stalled_s"] else ""))
        return q

    def measure(threads: int, before: list[dict]) -> dict | None:
        """The point, measured again while it is disturbed and fails a rule after ``before``."""
        q = run_point(threads, 0)
        earlier = []
        for attempt in range(1, RETRIES + 1):
            if q is None or not disturbed(q) or stop_reason(before + [q]) is None:
                break
            say(f"{setting} / {system}: {disturbance(q)} at {threads} threads/DC: "
                f"measuring it again ({attempt} of {RETRIES})")
            st = steal_share(q)
            earlier.append({k: q[k] for k in ("ops_per_s", "rot_p99_ms", "lateness_p99_ms", "degraded", "dir")}
                           | {"steal_share": None if st is None else round(st, 4)}
                           | ({"stalled_s": q["stalled_s"]} if q.get("stalled_s") else {}))
            q = run_point(threads, attempt)
        if q is not None and earlier:
            q["disturbed_attempts"] = earlier
        return q

    def stops(points: list[dict]) -> str | None:
        why = stop_reason(points)
        if why and disturbed(points[-1]):
            c.disturbed = True
            why += f" while {disturbance(points[-1])} (in each of {RETRIES + 1} attempts: DISTURBED, not a peak)"
        return why

    for threads in ladder:
        q = measure(threads, c.points)
        if q is None:
            break
        c.points.append(q)
        c.stop = stops(c.points)
        if c.stop:
            break
    # the point that stopped the climb is past the peak by every rule
    passed = c.points[:-1] if c.stop else list(c.points)
    if c.stop and passed and not c.failed:
        lo, hi, done = passed[-1]["threads"], c.points[-1]["threads"], 0
        while (mid := refinement(lo, hi, done, refine)) is not None:
            done += 1
            q = measure(mid, passed)
            if q is None:
                break
            q["refinement"] = True
            c.points.append(q)
            if stop_reason(passed + [q]) is None:
                passed.append(q)
                lo = mid
            else:
                if disturbed(q):  # the peak may lie in a step not measured
                    c.disturbed = True
                    c.stop += (f"; {mid} threads/DC failed while {disturbance(q)} "
                               f"(in each of {RETRIES + 1} attempts: DISTURBED, not a peak)")
                hi = mid
        c.points.sort(key=lambda q: q["threads"])
    c.peak = peak_of(passed)
    return c


def collect_trials(mine: list[dict], step: list[dict]) -> None:
    """Adds a climb step's manifest entries to ``mine``, one per trial directory: a step
    resumed over earlier points lists them again without what their own step added (the
    clients' ``start``), so an entry is merged into the one it repeats, never appended."""
    index = {e["dir"]: i for i, e in enumerate(mine)}
    for e in step:
        if e["dir"] in index:
            mine[index[e["dir"]]] = mine[index[e["dir"]]] | e
        else:
            index[e["dir"]] = len(mine)
            mine.append(e)


def finish_manifest(sub: Path, exp: dict, trials: list[dict]) -> None:
    """The setting's run directory as one run of every system (each climb's steps rewrote
    its manifest with their own trials only): every trial, the ladder actually run."""
    path = sub / "manifest.json"
    if not path.exists():
        return
    manifest = json.loads(path.read_text())
    manifest["trials"] = trials
    ran = {e.get("system") for e in trials}  # a retry directory holds only the systems measured again
    manifest["systems"] = [s for s in exp["systems"] if s in ran] or exp["systems"]
    manifest["status"] = "completed" if all((sub / e["dir"]).exists() for e in trials) else "failed"
    manifest.pop("reason", None)
    manifest["config"] = exp | {"sweep": {AXIS: sorted({e["point_values"][AXIS] for e in trials})}}
    rundir.write_json(path, manifest)


def slug(setting: str) -> str:
    return setting.replace(" ", "").replace("%", "pct").replace("=", "")


def ratio(a: dict | None, b: dict | None) -> float | None:
    if not a or not b or not b["ops_per_s"]:
        return None
    return a["ops_per_s"] / b["ops_per_s"]


def cpu_rows(climbs: list[Climb]) -> tuple[list[str], list[tuple[str, dict]]]:
    """(categories, [(system, row)]) at each system's default-setting peak; a row has
    ``shares`` (category -> share of the window's CPU), ``cores`` (cores busy),
    ``per_op_ms`` (CPU per operation) and ``memory_mb`` (resident memory per role, see
    cpu.account; None if not measured)."""
    rows = []
    for c in climbs:
        if c.setting != "default" or not c.peak or not c.peak.get("cpu"):
            continue
        acc = c.peak["cpu"]
        cats = cpu.by_category(acc)
        total = sum(cats.values()) or 1.0
        rows.append((c.system, {
            "shares": {k: v / total for k, v in cats.items()},
            "cores": acc["machine_share"] * acc["cores"],
            "per_op_ms": (op_costs(c.peak) or {}).get("cpu_ms_per_op"),
            "memory_mb": acc.get("memory_mb"),
        }))
    own = [c for _, r in rows for c in r["shares"] if c not in cpu.CATEGORIES]  # systems' own categories
    return [*cpu.CATEGORIES[:1], *dict.fromkeys(own), *cpu.CATEGORIES[1:]], rows


def echo_line(echo: dict, climbs: list) -> str:
    """The echo ceiling (bench-echo's JSON) and each system's default-setting peak against it."""
    e = echo["echo_rpcs_per_s"]
    flags = ([] if echo.get("saturated", True) else ["NOT SATURATED"]) + \
        ([] if echo.get("stable", True) else ["UNSTABLE"])
    again = [f"{a['echo_rpcs_per_s']:,.0f}" for a in echo.get("unstable_attempts", [])]
    if again:
        flags.append(f"(measured again after UNSTABLE attempts at {', '.join(again)} RPC/s)")
    line = (f"echo ceiling: {e:,.0f} RPC/s on {echo['cores']} cores at {echo.get('in_flight', '?'):,} in flight "
            f"(emulated RTT {echo['configured_rtt_ms']:.0f} ms, measured p50 {echo['rtt_ms']['p50']:.0f} ms; "
            f"windows {', '.join(f'{r:,}' for r in echo.get('repeats', []))})" + "".join(f" {f}" for f in flags))
    peaks = [f"{c.system} {c.peak['ops_per_s']:,.0f} ops/s = {100 * c.peak['ops_per_s'] / e:.2f}%"
             for c in climbs if c.setting == "default" and c.peak]
    # The echo crosses gRPC on loopback, which a local run's in-process messages never do, and it
    # moved x1.8 in ten days on one machine (docs/performance.md): say so beside the ratios.
    return line + ("; peaks against it (gRPC over loopback, a path local runs do not take: compare builds "
                   "on one day, not these ratios between days): " + ", ".join(peaks) if peaks else "")
