"""Latency-aware placement in the reports: the placement reports' frames, their two figures
and a placement run's figures into its run directory: ``placement.png`` (the placement
paper's Fig. 7/8 shape: CDFs of read latency per placement, normal and after the kill,
measured beside predicted) and ``placement-buckets.png`` (per key bucket, predicted against
measured), from the run's ``placement.json`` (k2bench/placement/report.py writes it).

    k2bench placement-figures RUN      (or python -m analysis.placement RUN)

``k2bench run`` and ``k2bench placement-report`` draw them through this command when
analysis is installed beside the harness."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from k2bench.placement.report import BUCKETS_FIGURE_FILE, FIGURE_FILE

from .draw import MissingData, label as _label, panels as _panels
from .load import Run


PLACEMENT_PHASES = ("normal", "cold", "warm", "failure")


def _placement_reports(runs) -> list[tuple[Run, dict]]:
    """Each run's placement report (``placement.json``, written by ``k2bench placement-report``
    and at the end of a run that sweeps or sets topology.place), if it has one."""
    out = []
    for r in runs if isinstance(runs, list) else [runs]:
        path = r.dir / "placement.json"
        if path.exists():
            out.append((r, json.loads(path.read_text())))
    return out


def _is_percentile(name: str) -> bool:
    """p50, p99.9: a percentile's key in placement.json."""
    return name[:1] == "p" and name[1:].replace(".", "", 1).isdigit()


def placement_frame(runs) -> pd.DataFrame:
    """Per run, system, placement, window (normal, cold, warm; failure, with the killed
    datacenter) and source (measured; predicted: the latency model): mean and percentiles of
    single-key read latency (ms), the reads measured and the trials pooled (a report's
    groups: each window's reads of every trial in one histogram; an older report's trials)."""
    rows = []
    for r, rep in _placement_reports(runs):
        entries = rep.get("groups")
        if entries is None:  # before the groups: a row per trial, the kill the run's
            killed = (rep.get("killed") or {}).get("dc")
            entries = [{"system": t["system"], "placement": t["placement"], "phase": phase, "trials": 1,
                        "killed": killed if phase == "failure" else None,
                        "measured": t["measured"].get(phase), "predicted": t["predicted"].get(phase)}
                       for t in rep["trials"] for phase in ("normal", "failure")]
        for g in entries:
            for source in ("measured", "predicted"):
                s = g.get(source)
                if not s or s.get("mean") is None:
                    continue
                rows.append({"run": r.name, "system": g["system"], "placement": g["placement"], "phase": g["phase"],
                             "killed": g.get("killed"), "trials": g.get("trials", 1), "source": source,
                             "reads": s.get("reads"), "remote_share": s.get("remote_share"), "mean_ms": s["mean"],
                             **{k + "_ms": v for k, v in s.items() if _is_percentile(k)}})
    return pd.DataFrame(rows)


def placement_buckets_frame(runs) -> pd.DataFrame:
    """Per run, system, placement and key bucket of a table placement: the model's predicted
    and the measured mean single-key read latency (ms) in normal operation, and the reads."""
    rows = [{"run": r.name, "system": t["system"], "placement": t["placement"], **b}
            for r, rep in _placement_reports(runs) for t in rep["trials"] for b in t["buckets"]]
    return pd.DataFrame(rows)


def placement_killed(runs) -> str | None:
    """The datacenter(s) the placement runs killed (the first run's that killed any)."""
    for _, rep in _placement_reports(runs):
        if rep.get("killed"):
            return ", ".join(rep["killed"].get("dcs") or [rep["killed"]["dc"]])
    return None


# ------------------------------------------------------------------ latency-aware placement

PLACEMENT_COLOUR = {"hash": "#7f7f7f", "BA": "#1f77b4", "N-1C": "#d62728"}


def _placement_order(name: str) -> tuple[int, str]:
    model = name.split()[0]
    return (0 if model == "hash" else 1 if model == "BA" else 2 if model == "N-1C" else 3, name)


def placement_latency(runs) -> plt.Figure:
    """The placement paper's Fig. 7/8 shape: per system, CDFs of single-key read latency with
    each placement (hash, BA, N-1C), in normal operation and after the kill, measured (solid,
    from merged histograms) beside the latency model's prediction (dashed)."""
    data = placement_frame(runs)
    if data.empty:
        raise MissingData("no placement report in these runs (make local-run EXPERIMENT=placement writes one; "
                          "k2bench placement-report RUN for another run that swept topology.place)")
    pcts = sorted(float(c[1:-3]) for c in data if c.endswith("_ms") and _is_percentile(c[:-3]))
    if len(pcts) < 5:
        raise MissingData("these runs' placement.json predates the CDF percentiles: "
                          "run k2bench placement-report RUN again")
    present = set(data["phase"])
    normal = ["cold", "warm"] if {"cold", "warm"} <= present else ["normal"] if "normal" in present else []
    kills = sorted(data.loc[data["phase"] == "failure", "killed"].fillna("").unique())
    phases = [(p, None) for p in normal] + [("failure", k or None) for k in kills]  # one row each
    columns = data[["run", "system"]].drop_duplicates().values.tolist()
    several_runs = data["run"].nunique() > 1
    fig, axes = plt.subplots(len(phases), len(columns), figsize=(5.2 * len(columns), 3.8 * len(phases)),
                             squeeze=False, sharex=True, sharey=True)
    for row, (phase, killed) in enumerate(phases):
        for col, (run, system) in enumerate(columns):
            ax = axes[row][col]
            sub = data[(data["run"] == run) & (data["system"] == system) & (data["phase"] == phase)]
            if phase == "failure":
                sub = sub[sub["killed"].fillna("") == (killed or "")]
            for name in sorted(sub["placement"].unique(), key=_placement_order):
                colour = PLACEMENT_COLOUR.get(name.split()[0], "black")
                for source, style in (("measured", "-"), ("predicted", "--")):
                    r = sub[(sub["placement"] == name) & (sub["source"] == source)]
                    if r.empty:
                        continue
                    xs = [r.iloc[0][f"p{p:g}_ms"] for p in pcts]
                    if pd.isna(xs).any():  # a report from before these percentiles: its row is not drawn
                        continue
                    ax.step(xs, [p / 100 for p in pcts], where="post", ls=style, color=colour,
                            label=f"{name}, {source}")
            ax.set_xscale("symlog", linthresh=1)
            ax.set_xlim(left=0)
            ax.grid(alpha=0.3)
            when = {"normal": "normal operation", "cold": "normal, cold cache (first window)",
                    "warm": "normal, warmer cache (last window)"}.get(
                phase, f"{killed} killed" if killed else "after the kill")
            ax.set_title(f"{_label(system)}{f' ({run})' if several_runs else ''}: {when}")
            if row == len(phases) - 1:
                ax.set_xlabel("single-key read latency (ms)")
            if col == 0:
                ax.set_ylabel("fraction of reads")
            ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Read latency by placement: measured (solid) and the model's prediction (dashed)", y=1.01)
    fig.tight_layout()
    return fig


def placement_buckets(runs, min_reads: int = 30) -> plt.Figure:
    """Per key bucket of each table placement: the model's predicted mean read latency
    against the measured one in normal operation (buckets with at least ``min_reads`` reads;
    on the diagonal the model is exact)."""
    data = placement_buckets_frame(runs)
    if data.empty:
        raise MissingData("no table placement with key buckets in these runs' placement reports "
                          "(topology.place: ba or n-1c computes one)")
    data = data[(data["reads"] >= min_reads) & data["predicted_ms"].notna()]
    if data.empty:
        raise MissingData(f"no key bucket had {min_reads} measured reads")
    panels = data[["run", "system"]].drop_duplicates().values.tolist()
    several_runs = data["run"].nunique() > 1
    fig, axes = _panels(len(panels), width=4.6, height=4.2)
    top = float(max(data["predicted_ms"].max(), data["measured_ms"].max())) * 1.05 + 1
    for ax, (run, system) in zip(axes, panels):
        sub = data[(data["run"] == run) & (data["system"] == system)]
        names = sorted(sub["placement"].unique(), key=_placement_order)
        sns.scatterplot(data=sub, x="predicted_ms", y="measured_ms", hue="placement", hue_order=names,
                        palette={n: PLACEMENT_COLOUR.get(n.split()[0], "black") for n in names}, size="reads",
                        sizes=(12, 120), alpha=0.7, ax=ax, legend="brief")
        ax.legend(fontsize=8, loc="upper left")
        ax.plot([0, top], [0, top], color="grey", lw=1, ls="--")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel("predicted mean read latency (ms)")
        ax.set_ylabel("measured mean read latency (ms)")
        ax.set_title(_label(system) + (f" ({run})" if several_runs else ""))
    fig.suptitle(f"Per key bucket, normal operation: the model against the measurement (>= {min_reads} reads)",
                 y=1.02)
    fig.tight_layout()
    return fig


def draw(run_dir: Path) -> list[Path]:
    """The figures drawn (none without data); one that cannot be drawn is a warning, never a
    failure of the finished run."""
    runs = [SimpleNamespace(dir=Path(run_dir), name=Path(run_dir).name)]  # the figures read placement.json only
    out = []
    for name, draw_figure in ((FIGURE_FILE, placement_latency), (BUCKETS_FIGURE_FILE, placement_buckets)):
        try:
            fig = draw_figure(runs)
        except MissingData:
            continue
        except Exception as e:  # noqa: BLE001 - see the docstring
            print(f"warning: {name} not drawn ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        path = Path(run_dir) / name
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        out.append(path)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="k2bench placement-figures", description="a placement run's figures")
    p.add_argument("run", help="a run directory with a placement report (placement.json)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if not (Path(args.run) / "placement.json").exists():
        print(f"placement-figures: {args.run} has no placement.json; k2bench placement-report {args.run} "
              "writes it", file=sys.stderr)
        return 2
    for png in draw(Path(args.run)):
        print(f"figure: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
