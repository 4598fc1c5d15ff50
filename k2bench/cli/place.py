"""Latency-aware placement: ``demand`` (a run's reads and writes per key) and ``place`` (a table)."""
from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from ..errors import ConfigError
from .common import REPO, _flag_number


def cmd_demand(args) -> int:
    """A run's per-key, per-datacenter reads and writes (its clients' histories) as parquet:
    the demand `k2bench place` reads (k2bench/placement/)."""
    import io

    from .. import placement
    if not args.out and sys.stdout.isatty():
        raise ConfigError("--out", "the demand is parquet (binary), not for a terminal: redirect stdout "
                          "(k2bench demand RUN > demand.parquet) or give --out FILE")
    df = placement.demand_from_run(Path(args.run), args.system)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    if args.out:
        placement.write_bytes_atomic(args.out, buf.getvalue())
    else:
        sys.stdout.buffer.write(buf.getvalue())
        sys.stdout.flush()
    print(f"demand: {df['key_id'].nunique()} keys, {len(df)} (key, datacenter) pairs, "
          f"{int(df['reads'].sum())} reads, {int(df['writes'].sum())} writes"
          + (f" -> {args.out}" if args.out else ""), file=sys.stderr)
    return 0


def cmd_place(args) -> int:
    """Latency-aware replica placement (BA or N-1C) of every key from a demand parquet and a
    topology: a placement table, its predictions beside it (k2bench/placement/)."""
    import pandas as pd
    from rich.table import Table

    from .. import placement
    for flag, value in (("--model", args.model), ("--demand", args.demand), ("--topology", args.topology),
                        ("--out", args.out)):
        if not value:
            raise ConfigError(flag, {"--model": "missing: give ba (normal operation) or n-1c (the worst single "
                                                "datacenter failure)",
                                     "--demand": "missing: give a demand parquet (k2bench demand RUN > demand.parquet)",
                                     "--topology": "missing: give a topology file, e.g. "
                                                   "workloads/topologies/paper-local.yaml",
                                     "--out": "missing: give the table file to write, e.g. table.csv"}[flag])
    if args.model not in placement.MODELS:
        raise ConfigError("--model", f"must be ba or n-1c, got {args.model!r}")
    balance = _flag_number(args.balance, "--balance", float, 1)
    keys = _flag_number(args.keys, "--keys", int, 1)
    f = _flag_number(args.replication_factor, "--replication-factor", int, 1)
    time_limit = _flag_number(args.time_limit, "--time-limit", float)
    cache_keys = _flag_number(args.cache_keys, "--cache-keys", float, 0)
    if not time_limit > 0:
        raise ConfigError("--time-limit", f"must be > 0 seconds, got {args.time_limit}")
    buckets = placement.Bucketing.parse(args.buckets)
    topology = Path(args.topology)
    if not topology.exists() and (REPO / "workloads" / "topologies" / f"{args.topology}.yaml").exists():
        topology = REPO / "workloads" / "topologies" / f"{args.topology}.yaml"  # a name of workloads/topologies
    out = Path(args.out)
    if not out.parent.is_dir():
        raise ConfigError("--out", f"{out.parent} is not a directory")
    demand_path = Path(args.demand)
    if not demand_path.exists():
        raise ConfigError("--demand", f"{demand_path} does not exist; write one with k2bench demand RUN > {demand_path}")
    try:
        demand = pd.read_parquet(demand_path)
    except Exception as e:  # pyarrow's errors vary by what is wrong with the file
        raise ConfigError("--demand", f"{demand_path} is not a parquet file ({type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''})") from None

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)
    placed = placement.place(demand, topology, args.model, f=f, balance=balance, one_per_group=args.one_per_group,
                             buckets=buckets, keys=keys, time_limit_s=time_limit, progress=progress,
                             objective=args.objective, cache_keys=cache_keys)
    side = placed.write(out, str(demand_path))
    info, o = placed.info, placed.predictions["overall"]
    console = Console() if sys.stdout.isatty() else Console(width=120)
    cache = f"a cache of {info['cache_keys_per_dc']:g} keys per DC" if info["cache_keys_per_dc"] else "no cache"
    t = Table(title=f"{info['model'].upper()} ({info['minimises']}): predicted read latency (ms, K2's model: "
                    f"nearest replica, {cache}), weighted by reads")
    for col in ("", "mean", "p50", "p90", "reads unavailable"):
        t.add_column(col, justify="left" if not col else "right")

    def row(name, s):
        t.add_row(name, *["-" if s[k] is None else f"{s[k]:.1f}" for k in ("mean", "p50", "p90")],
                  f"{100 * s['unavailable_share']:.1f}%")
    row("normal", o["normal"])
    for dc, s in o["failure"].items():
        row(f"{dc} failed" + (" (most critical)" if dc == o["most_critical_dc"] else ""), s)
    console.print(t)
    per_dc = ", ".join(f"{dc} {n}" for dc, n in info["keys_per_dc"].items())
    console.print(f"solved in {info['solve_s']:.2f} s ({info['buckets']} buckets; {info['status']}); keys per "
                  f"datacenter: {per_dc} (bound {info['bound_per_dc']})", soft_wrap=True, markup=False,
                  highlight=False)
    console.print(f"table: {out}; predictions: {side}", soft_wrap=True, markup=False, highlight=False)
    return 0
