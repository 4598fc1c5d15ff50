"""The command lines of a trial's JVMs: the launcher's and YCSB's, with the nice policy, and
the few properties a client or loader gets besides the trial's spec."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rundir
from ..spec.trial import SPEC_FILE
from .faults import FAULTS_FILE

if TYPE_CHECKING:
    from ..deploy.hosts import Host
    from .state import Trial


# Who waits when processes share the cores (docs/architecture.md has the whole policy): the
# WAN emulation's dispatchers and the JVMs' own threads at nice 0 (the network takes no CPU
# from anyone), server protocol threads (Java priority 4) at nice 2, clients (priority 1, or
# every thread of a client JVM) at nice 4. Only lowering is used: it needs no privilege.
CLIENT_NICE, SERVER_NICE = 4, 2
PRIORITY_JVM_ARGS = ("-XX:ThreadPriorityPolicy=1", f"-XX:JavaPriority1_To_OSPriority={CLIENT_NICE}",
                     *(f"-XX:JavaPriority{p}_To_OSPriority={SERVER_NICE if p == 4 else 0}" for p in range(2, 11)))
CLIENT_JVM_ARGS = (*PRIORITY_JVM_ARGS, f"-XX:JavaPriority5_To_OSPriority={CLIENT_NICE}")


def _jvm(host: Host, heap_mb: int, props: dict | None, jvm_args: list[str], priorities=PRIORITY_JVM_ARGS) -> list[str]:
    # The jar's class-data archive, where the host has one: a local trial starts 10-20 JVMs,
    # and mapping the transport's classes instead of loading them is a large part of their
    # start-up CPU (docs/architecture.md has the figures). A JVM that cannot use it (a rebuilt
    # jar; ZGC on JDK 17) ignores it silently, so the flag changes no behaviour, only cost.
    archive = host.class_archive()
    return ["java", *priorities, *jvm_args, *([f"-XX:SharedArchiveFile={archive}"] if archive else []),
            f"-Xmx{heap_mb}m", *(f"-D{k}={v}" for k, v in (props or {}).items())]


def java(host: Host, heap_mb: int, *args: str, props: dict | None = None,
         jvm_args: list[str]) -> list[str]:
    """The launcher (k2bench-server) on a host, with JVM options and system properties."""
    return [*_jvm(host, heap_mb, props, jvm_args), "-jar", host.jar(), *args]


def ycsb(host: Host, heap_mb: int, *args: str, props: dict | None = None,
         jvm_args: list[str]) -> list[str]:
    """YCSB's client, with the bundled binding and workload, on a host: every thread at
    the client nice (CLIENT_JVM_ARGS)."""
    return [*_jvm(host, heap_mb, props, jvm_args, CLIENT_JVM_ARGS), "-cp", host.jar(), "site.ycsb.Client", *args]


def jvm_props(host: Host, t: Trial) -> dict:
    """System properties every process of a trial gets: the faults file its transport
    watches (a test-only mutant comes with the spec, testing.mutant)."""
    return {"k2bench.faults_file": host.path(f"{t.rel}/{FAULTS_FILE}")}


def client_props(t: Trial, host: Host, dc: str, id_base: int, hlog: str | None) -> dict:
    """A client's or loader's own properties; what it runs is the trial's spec.json on its host,
    which the harness put there with the topology (the workload, the system and its options)."""
    props = {
        "db": "org.k2bench.ycsb.K2BenchDB",
        "workload": "org.k2bench.ycsb.TxnWorkload",
        "k2bench.spec": host.path(f"{t.rel}/{SPEC_FILE}"),
        "k2bench.dc": dc,
        "k2bench.client_id_base": id_base,
        "k2bench.seed": 1_000 * t.trial + id_base,
        "status.interval": 1,
        # YCSB keeps the intended start time of paced operations only in this mode; the
        # workload measures latency from it (coordinated omission corrected).
        "measurement.interval": "intended",
    }
    if hlog is not None:
        props["k2bench.hlog"] = str(hlog)
    return props


def props_file(t: Trial, host: Host, name: str, props: dict) -> str:
    """The exact YCSB configuration of a client process, on its host and in the run."""
    rel = f"{t.rel}/clients/{name}.properties"
    text = "".join(f"{k}={v}\n" for k, v in props.items())
    rundir.write_text(t.dir / "clients" / f"{name}.properties", text)
    host.put_text(rel, text)
    return host.path(rel)
