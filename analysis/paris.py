"""The PaRiS paper's headline comparison (its §V, Fig. 2): PaRiS against BPR and NoCC, from
the trials' merged histograms with their spread over trials."""
from __future__ import annotations

import pandas as pd

from k2bench.verdicts import versus

from . import frames
from .paper import BPR, NOCC, PARIS


def _of_paris(compared: dict, paris_is_b: bool = False) -> str:
    """``versus``'s verdict said of PaRiS (system a, or b with ``paris_is_b``)."""
    lower, higher = ("PaRiS higher", "PaRiS lower") if paris_is_b else ("PaRiS lower", "PaRiS higher")
    return {"a lower": lower, "a higher": higher}.get(compared["verdict"], compared["verdict"])


def paris_ratios_frame(runs) -> pd.DataFrame:
    """The PaRiS paper's headline ratios per (run, experiment, point), from the trials'
    merged histograms with their spread over trials: BPR's mean transaction latency over
    PaRiS's (Fig. 2: up to 5.91x, 20.56x), PaRiS's over NoCC's (the same), their
    throughputs, and the update visibility gap (Fig. 5), PaRiS's p50 and p99 against BPR's
    as measured here and as its authors' code records it (at read)."""
    pooled = frames.pooled_frame(runs)
    rows = []
    if pooled.empty:
        return pd.DataFrame(rows)
    for (run, experiment, point), g in pooled.groupby(["run", "experiment", "point"], sort=False):
        by = {r["system"]: r for _, r in g.iterrows()}
        if PARIS not in by:
            continue
        paris = by[PARIS]
        row = {"run": run, "experiment": experiment, "point": point, "trials": int(paris["trials"])}
        for system in (PARIS, BPR, NOCC):
            if system in by:
                for m in ("rwt_mean_ms", "throughput_ops_per_s", "visibility_p50_ms", "visibility_p99_ms"):
                    row[f"{system}_{m}"] = by[system][m]
                    row[f"{system}_{m}_min"], row[f"{system}_{m}_max"] = by[system][f"{m}_min"], by[system][f"{m}_max"]
        if BPR in by:
            bpr = by[BPR]
            v = versus(bpr, paris, "rwt_mean_ms")
            row |= {"bpr_over_paris_latency": v["ratio"], "bpr_over_paris_latency_min": v["ratio_min"],
                    "bpr_over_paris_latency_max": v["ratio_max"],
                    "latency_paris_vs_bpr": _of_paris(v, paris_is_b=True)}
            t = versus(paris, bpr, "throughput_ops_per_s")
            row |= {"paris_over_bpr_throughput": t["ratio"], "paris_over_bpr_throughput_min": t["ratio_min"],
                    "paris_over_bpr_throughput_max": t["ratio_max"],
                    "throughput_paris_vs_bpr": _of_paris(t)}
            for q in ("p50", "p99"):
                row[f"visibility_gap_{q}_ms"] = paris[f"visibility_{q}_ms"] - bpr[f"visibility_{q}_ms"] \
                    if pd.notna(paris[f"visibility_{q}_ms"]) and pd.notna(bpr[f"visibility_{q}_ms"]) else None
                at = bpr.get(f"visibility_at_read_{q}_ms")
                row[f"bpr_visibility_at_read_{q}_ms"] = at
                row[f"visibility_gap_at_read_{q}_ms"] = paris[f"visibility_{q}_ms"] - at \
                    if pd.notna(paris[f"visibility_{q}_ms"]) and at is not None and pd.notna(at) else None
        if NOCC in by:
            v = versus(paris, by[NOCC], "rwt_mean_ms")
            row |= {"paris_over_nocc_latency": v["ratio"], "paris_over_nocc_latency_min": v["ratio_min"],
                    "paris_over_nocc_latency_max": v["ratio_max"],
                    "latency_paris_vs_nocc": _of_paris(v)}
            t = versus(paris, by[NOCC], "throughput_ops_per_s")
            row |= {"paris_over_nocc_throughput": t["ratio"],
                    "throughput_paris_vs_nocc": _of_paris(t)}
        rows.append(row)
    # The paper's throughput ratios (1.47x, 1.46x over BPR) compare peaks: each system's
    # highest pooled throughput over the sweep, with that point's spread over trials.
    for (run, experiment), g in pooled.groupby(["run", "experiment"], sort=False):
        peak = {s: r.loc[r["throughput_ops_per_s"].idxmax()] for s, r in g.groupby("system")
                if r["throughput_ops_per_s"].notna().any()}
        if PARIS not in peak or len(g["point"].unique()) < 2:
            continue
        row = {"run": run, "experiment": experiment, "point": "peak (each system's best point)",
               "trials": int(peak[PARIS]["trials"])}
        for system, r in peak.items():
            row[f"{system}_peak_point"] = r["point"]
            for x in ("", "_min", "_max"):
                row[f"{system}_throughput_ops_per_s{x}"] = r[f"throughput_ops_per_s{x}"]
        for other in (BPR, NOCC):
            if other in peak:
                t = versus(peak[PARIS], peak[other], "throughput_ops_per_s")
                row |= {f"paris_over_{other}_throughput": t["ratio"],
                        f"paris_over_{other}_throughput_min": t["ratio_min"],
                        f"paris_over_{other}_throughput_max": t["ratio_max"],
                        f"throughput_paris_vs_{other}": _of_paris(t)}
        rows.append(row)
    return pd.DataFrame(rows)
