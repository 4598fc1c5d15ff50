"""Experiment files: a whole paper figure as one declarative YAML file.

An experiment names the systems, the topology (a file in workloads/topologies plus
overrides), the workload, the servers' and clients' settings, the durations with explicit
warm-up and cool-down, the number of trials, and optional sweep axes. ``resolve`` fills in
the paper's defaults (§VII-B), validates every field (one-line ``ConfigError`` naming it) and
returns the fully resolved configuration that is saved with the run; ``points`` expands the
sweep.

This module is the harness's entry to them; the parts live in k2bench/spec/: the one
definition of every parameter (``schema``), files and ``extends`` (``files``), a field's value
(``fields``), the resolution (``resolve``), the checks across fields (``checks``, ``pacing``)
and the sweep points (``points``).
"""
from __future__ import annotations

from .spec.checks import IDS_PER_PROCESS, MIN_FAILOVER_TIMEOUT_MS  # noqa: F401
from .spec.fields import SCHEMA, dist_max, dist_min, server_jvm_args  # noqa: F401
from .spec.files import SHIPPED, find, load_file  # noqa: F401
from .spec.pacing import (  # noqa: F401
    MIN_OPS_PER_S_PER_THREAD,
    ClientShare,
    check_pacing,
    client_shares,
    pacing_interval_ms,
)
from .spec.points import axis_get, axis_label, axis_set, for_system, points, system_points  # noqa: F401
from .spec.resolve import FAULT_KINDS, PER_SYSTEM_SECTIONS, TOP_LEVEL, resolve  # noqa: F401
from .spec.schema import DEFAULT_JVM_ARGS, PER_HOST_SERVER_JVM_ARGS  # noqa: F401
