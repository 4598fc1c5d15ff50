"""One field's value from an experiment file: typed and checked against the schema (a
distribution, JVM options, a system's options), and a section filled with the schema's defaults."""
from __future__ import annotations

from typing import Any

from . import schema
from ..errors import Collect, ConfigError, did_you_mean
from .schema import DEFAULT_JVM_ARGS, PER_HOST_SERVER_JVM_ARGS

# field -> (type, default, check), from the one definition of every parameter (spec/schema.py).
SCHEMA: dict[str, dict[str, tuple]] = schema.table()


def _dist(field: str, value: Any, check) -> Any:
    """An integer, or {value: probability} with probabilities summing to 1."""
    if isinstance(value, int) and not isinstance(value, bool):
        problem = check(value) if check else None
        if problem:
            raise ConfigError(field, f"{problem}, got {value!r}")
        return value
    if not isinstance(value, dict) or not value:
        raise ConfigError(field, f"must be an integer or a mapping value: probability, got {value!r}")
    total = 0.0
    for v, p in value.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise ConfigError(f"{field}.{v}", "values of a distribution must be integers")
        if check and check(v):
            raise ConfigError(f"{field}.{v}", check(v))
        if not isinstance(p, (int, float)) or isinstance(p, bool) or p < 0:
            raise ConfigError(f"{field}.{v}", f"probability must be a number >= 0, got {p!r}")
        total += p
    if abs(total - 1.0) > 1e-3:
        raise ConfigError(field, f"probabilities sum to {total:g}, not 1")
    return {int(v): float(p) for v, p in value.items()}


def dist_min(value) -> int:
    """The smallest value a ``dist`` field can take."""
    return value if isinstance(value, int) else min(value)


def dist_max(value) -> int:
    return max(value) if isinstance(value, dict) else value


def server_jvm_args(cfg: dict, processes: str) -> list[str]:
    """server.jvm_args, or its default for the process split: one JVM for every server
    compiles its hot code once, and C2's code cut the protocol threads' CPU by a third at
    bench-throughput's peak (K2 3,812 -> 4,299 ops/s); six or more server JVMs on two
    cores spend more in C2's compiler threads than it saves, so they run C1 only.

    The one JVM also runs ZGC: its heap holds every datacenter's store, and G1's young
    pauses there took 45-63 ms every ~2.3 s at 4,400 ops/s, so 1-2% of the messages on
    WAN links, due while the JVM stood still, were released 30-35 ms late (p99); with ZGC
    0.8-1.8 ms (bench-throughput's workload, K2).

    ZGC collects at least every 5 s (ZCollectionInterval): left alone it lets the heap grow
    towards -Xmx (7,680 MB by default) before collecting, so every page the heap takes is
    new memory the kernel zeroes on first touch, for the whole of a run. At 5% writes, K2,
    32 threads/DC (~2,000 ops/s, ~190 MB/s allocated) that zeroing (clear_page_erms under
    shmem faults, perf) took 21-32% of the machine in the measurement window; the threads
    that allocate pay it, in kernel mode (the protocol threads spent 5.4-6.4 of their
    12-13 CPU seconds there). With the timer the heap stays near 1.6-1.8 GB and reuses its
    pages: the JVM's CPU in the window fell from 23-26 s to 18.4 s (GC +1.5 s), the
    machine's idle time rose from 13-23% to 38% and lateness p99 fell from 2.1-5.4 to
    1.2 ms. How much the zeroing costs depends on the host (a virtual machine pays more
    for memory it has not backed yet), so without the timer peaks varied by machine."""
    given = cfg["server"]["jvm_args"]
    if given is not None:
        return given
    return list(PER_HOST_SERVER_JVM_ARGS) if processes == "per_host" else list(DEFAULT_JVM_ARGS)


def _jvm_args(field: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(a, str) and a for a in value):
        raise ConfigError(field, f"must be a list of JVM options like [-XX:+UseZGC], got {value!r}")
    for a in value:
        if not a.startswith("-"):
            raise ConfigError(field, f"{a!r} is not a JVM option (they start with '-')")
        if a.startswith("-Xmx"):
            raise ConfigError(field, f"{a!r}: set the heap with heap_mb instead")
    return list(value)


def _typed(field: str, value: Any, typ: type) -> Any:
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if typ is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(field, f"must be true or false, got {value!r}")
        return value
    if not isinstance(value, typ) or isinstance(value, bool):
        want = {int: "an integer", float: "a number", str: "a string"}[typ]
        raise ConfigError(field, f"must be {want}, got {value!r}")
    return value


def _system_options(field: str, value: Any) -> dict:
    """{system: {option: number, bool or a choice's name}}: the shape only; names, ranges and
    choices are the systems' (spec/validate.check_system_options)."""
    if not isinstance(value, dict):
        raise ConfigError(field, f"must be a mapping system: {{option: value}}, got {value!r}")
    out = {}
    for system, opts in value.items():
        if not isinstance(opts, dict):
            raise ConfigError(f"{field}.{system}", f"must be a mapping option: value, got {opts!r}")
        for name, v in opts.items():
            if not isinstance(v, (int, float, bool, str)):
                raise ConfigError(f"{field}.{system}.{name}", f"must be a number, true/false or a name, got {v!r}")
        out[str(system)] = {str(k): v for k, v in opts.items()}
    return out


def _section(name: str, given: Any) -> dict:
    spec = SCHEMA[name]
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ConfigError(name, f"must be a mapping, got {given!r}")
    errors = Collect()  # every unknown or bad field of the section, each on its own line
    for key in given:
        if key not in spec:
            errors.errors.append(ConfigError(f"{name}.{key}", f"unknown field{did_you_mean(key, spec)}; allowed here: "
                                             f"{', '.join(sorted(spec))}"))
    out = {}
    for key, (typ, default, check) in spec.items():
        with errors.check():
            out[key] = _field(f"{name}.{key}", given.get(key, default), typ, default, check)
    errors.done()
    return out


def _field(field: str, value: Any, typ, default, check) -> Any:
    if value is None and default is not None:  # null only where the default is null
        fix = "use [] for no options" if typ == "args" else "give a value or leave the field out"
        raise ConfigError(field, f"must not be null (its default is {default!r}); {fix}")
    if value is None:
        return None
    if typ == "dist":
        return _dist(field, value, check)
    if typ == "args":
        return _jvm_args(field, value)
    if typ == "options":
        return _system_options(field, value)
    value = _typed(field, value, typ)
    problem = check(value) if check else None
    if problem:
        raise ConfigError(field, f"{problem}, got {value!r}{did_you_mean(value, getattr(check, 'choices', ()))}")
    return value
