"""How long ``k2bench place`` takes on a million keys: ``.venv/bin/python -m k2bench.placement.bench``
[N_KEYS]. The demand is the workload model's expected one (``placement.expected_demand``: Zipf
1.2, locality 0.8, the same number of draws in every datacenter, 5% writes) on the six
datacenters of workloads/topologies/paper-local.yaml (f = 2); BA and N-1C are placed with the
defaults (balance 1.2, default buckets), for the mean, for the p90 and for the mean with K2's
datacenter cache (5% of the keys per datacenter), and the bucket count, the times and the
predictions printed."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from .. import placement
from ..spec.schema import Workload

TOPOLOGY = Path(__file__).resolve().parents[2] / "workloads" / "topologies" / "paper-local.yaml"


def bench_place(n_keys: int = 1_000_000, zipf: float = Workload.zipf, locality: float = 0.8, models=placement.MODELS,
                out=sys.stdout) -> dict:
    """Places ``n_keys`` keys with each model; returns {model: Placement.info | predictions}."""
    topo = placement.load_topology(TOPOLOGY)
    t0 = time.monotonic()
    demand = placement.expected_demand(n_keys, zipf, locality, topo.dcs, 950_000, 50_000)
    print(f"expected demand of {n_keys} keys (zipf {zipf}, locality {locality}, {len(topo.dcs)} datacenters): "
          f"{len(demand)} rows in {time.monotonic() - t0:.1f} s", file=out, flush=True)
    results = {}
    for model, objective, cache in [(m, obj, c) for m in models
                                    for obj, c in (("mean", 0), ("p90", 0), ("mean", 0.05 * n_keys))]:
        t0 = time.monotonic()
        placed = placement.place(demand, TOPOLOGY, model, keys=n_keys, objective=objective, cache_keys=cache,
                                 progress=lambda msg: print(f"  {msg}", file=out, flush=True))
        wall = time.monotonic() - t0
        i, o = placed.info, placed.predictions["overall"]
        crit = o["most_critical_dc"]
        name = f"{model.upper()} {objective}" + (f" +cache {cache:g}" if cache else "")
        print(f"{name}: {i['buckets']} buckets, solve {i['solve_s']:.2f} s ({i['status']}), "
              f"place() {wall:.1f} s; predicted read latency normal mean {o['normal']['mean']} / p50 "
              f"{o['normal']['p50']} / p90 {o['normal']['p90']} ms; most critical DC {crit}: mean "
              f"{o['failure'][crit]['mean']} / p90 {o['failure'][crit]['p90']} ms; keys per DC {i['keys_per_dc']} "
              f"(bound {i['bound_per_dc']})", file=out, flush=True)
        for dc, s in o["failure"].items():
            print(f"    {dc} failed: mean {s['mean']} p50 {s['p50']} p90 {s['p90']} ms", file=out, flush=True)
        results[name] = {**i, "place_s": round(wall, 2), "predictions": o}
    return results


if __name__ == "__main__":
    bench_place(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
