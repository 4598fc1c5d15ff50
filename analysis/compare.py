"""Runs side by side: ``k2bench compare RUN [RUN ...]`` (``make compare RUNS="a b"``).

Every run keeps its own label, line style and table column; runs are merged only when
asked (``--pool``, for trials of one experiment made as separate runs). For each system
(and sweep point) the first label is the baseline and every other one is compared with
it: read-only transaction p50 and p99, the all-local fraction, throughput, staleness and
write latencies, each with its change and whether that change is better or worse.

Within a label, the trials of a system at a point are pooled the one correct way: their
histograms are merged (never their percentiles averaged); throughput is each trial's
committed operations over its measured window, given as the mean with the trials'
min-max beside it.

    k2bench compare RUN RUN [...] [--by run|deployment] [--pool] [--out DIR]
"""
from __future__ import annotations

import html
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import frames, load

REPO = Path(__file__).resolve().parent.parent

# (metric, what, unit, whether higher is better)
METRICS = [
    ("rot_p50_ms", "ROT p50", "ms", False),
    ("rot_p99_ms", "ROT p99", "ms", False),
    ("all_local_pct", "all-local ROTs", "%", True),
    ("throughput_ops_per_s", "throughput", "ops/s", True),
    ("staleness_p50_ms", "staleness p50", "ms", False),
    ("staleness_p99_ms", "staleness p99", "ms", False),
    ("wot_p99_ms", "WOT p99", "ms", False),
    ("write_p50_ms", "write p50", "ms", False),
]
HIGHER_IS_BETTER = {m: better for m, _, _, better in METRICS}
WHAT = {m: f"{what} ({unit})" for m, what, unit, _ in METRICS}
SAME_WITHIN = 0.01  # a change within 1% of the baseline (or 0.05 units) reads "same"
CDF_OPS = {"rot": "read-only transactions", "wot": "write-only transactions", "write": "single writes"}


class CompareError(Exception):
    """The runs cannot be compared as asked; the message says why and what to do."""


@dataclass
class Group:
    """What one column of the comparison shows: one run, or several pooled (``--pool``)."""
    label: str
    runs: list

    def trials(self) -> list:
        return [t for r in self.runs for t in r.trials]

    def by_system_point(self) -> dict[tuple, list]:
        """Its trials by (system, point), in the order they come."""
        out: dict[tuple, list] = {}
        for t in self.trials():
            out.setdefault((t.system, t.point), []).append(t)
        return out


def _comparable(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in ("name", "description")}


def groups(runs: list, by: str = "run", pool: bool = False) -> list[Group]:
    """The columns of the comparison, in the order the runs were given: one per run (by
    run), per deployment or per experiment; with ``pool`` the runs that share a label are
    one column (they must be trials of one configuration, each trial once)."""
    if by not in ("run", "deployment", "experiment"):
        raise CompareError(f"--by {by}: use run, deployment or experiment")
    keys = [r.name if by == "run" else r.deployment if by == "deployment" else r.experiment for r in runs]
    out: dict[str, Group] = {}
    if pool:
        for key, r in zip(keys, runs):
            out.setdefault(key, Group(key, [])).runs.append(r)
        if len(out) == len(runs):
            raise CompareError(f"--pool: no two runs share a label --by {by}, so nothing would be pooled; "
                               "use --by deployment or --by experiment")
        for g in out.values():
            first = g.runs[0]
            for r in g.runs[1:]:
                if _comparable(r.manifest.get("config", {})) != _comparable(first.manifest.get("config", {})):
                    what = "experiments" if r.experiment != first.experiment else "configurations"
                    raise CompareError(f"--pool: {g.label} would pool runs of different {what} ({first.name}: "
                                       f"{first.experiment}, {r.name}: {r.experiment}); pool only trials of one "
                                       "configuration, or compare them without --pool")
            dirs = [t.dir.resolve() for t in g.trials()]
            if len(set(dirs)) < len(dirs):
                raise CompareError(f"--pool: {g.label} lists a trial twice (one run given under two names?)")
    else:
        seen: dict[str, int] = {}
        for key in keys:
            seen[key] = seen.get(key, 0) + 1
        index: dict[str, int] = {}
        for key, r in zip(keys, runs):
            label = key
            if seen[key] > 1:  # two local runs compared by deployment stay apart
                index[key] = index.get(key, 0) + 1
                label = f"{key} #{index[key]}"
            out[label] = Group(label, [r])
    if len(out) < 2:
        raise CompareError("compare needs at least two runs (or, with --pool, two groups of runs); got "
                           + ", ".join(r.name for r in runs))
    return list(out.values())


def _values(trials) -> dict:
    """The compared metrics of a set of trials of one system at one point."""
    p = frames.pooled(trials)
    p["all_local_pct"] = None if p["all_local_fraction"] is None else 100.0 * p["all_local_fraction"]
    return {m: p[m] for m, *_ in METRICS}


def metrics_frame(groups_: list[Group]) -> pd.DataFrame:
    """Long form: one row per (label, system, point, metric) with the pooled value, the
    number of trials and the trials' min and max (the spread across trials)."""
    rows = []
    for g in groups_:
        for (system, point), trials in g.by_system_point().items():
            pooled = _values(trials)
            per_trial = [_values([t]) for t in trials]
            for metric, *_ in METRICS:
                spread = [v[metric] for v in per_trial if v[metric] is not None]
                rows.append({"label": g.label, "system": system, "point": point, "metric": metric,
                             "value": pooled[metric], "trials": len(trials),
                             "min": min(spread) if spread else None, "max": max(spread) if spread else None})
    return pd.DataFrame(rows, columns=["label", "system", "point", "metric", "value", "trials", "min", "max"])


def direction(metric: str, base, value, base_range=None, value_range=None) -> str:
    """better, worse or same, from the metric's sense (lower latency, higher throughput ...);
    "within spread" when both sides have several trials and their min-max ranges overlap:
    the trials do not tell the two apart."""
    if base is None or value is None or pd.isna(base) or pd.isna(value):
        return "n/a"
    delta = value - base
    if abs(delta) <= max(SAME_WITHIN * abs(base), 0.05):
        return "same"
    if base_range and value_range and base_range[0] <= value_range[1] and value_range[0] <= base_range[1]:
        return "within spread"
    return "better" if (delta > 0) == HIGHER_IS_BETTER[metric] else "worse"


def delta_frame(metrics: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Each label against the baseline, per (system, point, metric): both values, the
    change (absolute and in % of the baseline) and its direction."""
    base = metrics[metrics["label"] == baseline].set_index(["system", "point", "metric"])
    rows = []

    def spread(row):
        return (row["min"], row["max"]) if row["trials"] > 1 and not pd.isna(row["min"]) else None

    for r in metrics[metrics["label"] != baseline].to_dict("records"):
        key = (r["system"], r["point"], r["metric"])
        b_row = base.loc[key] if key in base.index else None
        b = None if b_row is None else b_row["value"]
        v = r["value"]
        have = b is not None and v is not None and not pd.isna(b) and not pd.isna(v)
        rows.append({"label": r["label"], "system": r["system"], "point": r["point"], "metric": r["metric"],
                     "baseline": b, "value": v, "delta": v - b if have else None,
                     "delta_pct": 100.0 * (v - b) / b if have and b else None,
                     "change": direction(r["metric"], b, v, None if b_row is None else spread(b_row), spread(r))})
    return pd.DataFrame(rows, columns=["label", "system", "point", "metric", "baseline", "value", "delta",
                                       "delta_pct", "change"])


def cdf_frame(groups_: list[Group]) -> pd.DataFrame:
    """Latency CDFs per (label, system, point, op), trials merged within a label."""
    parts = []
    for g in groups_:
        for (system, point), trials in g.by_system_point().items():
            for op in CDF_OPS:
                h = frames.merged_of(trials, op)
                if not h.get_total_count():
                    continue
                c = frames.cdf(h).rename(columns={"value": "latency_ms"})
                parts.append(c.assign(label=g.label, system=system, point=point, op=op))
    cols = ["label", "system", "point", "op", "latency_ms", "fraction"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def overlay_figure(cdfs: pd.DataFrame):
    """Latency CDFs overlaid: colour by system, line style by run (or deployment); one
    column per operation type, one row per sweep point."""
    import seaborn as sns

    from .figures import _label, _order_labels, palette

    if cdfs.empty:
        raise CompareError("the runs have no measured operations to draw")
    data = cdfs.copy()
    data["System"] = data["system"].map(_label)
    data["operation"] = data["op"].map(CDF_OPS)
    data["run"] = data["label"]
    points = list(dict.fromkeys(data["point"]))
    many = len(points) > 1
    grid = sns.relplot(data=data, kind="line", x="latency_ms", y="fraction", hue="System",
                       hue_order=_order_labels(data["System"]), palette=palette(data["System"]), style="run",
                       style_order=list(dict.fromkeys(data["run"])), col="operation",
                       col_order=[v for k, v in CDF_OPS.items() if k in set(data["op"])],
                       row="point" if many else None, drawstyle="steps-post", estimator=None,
                       units=None, errorbar=None, height=3.6, aspect=1.25,
                       facet_kws={"sharex": False, "sharey": True})
    grid.set(xscale="log", ylim=(0, 1.01))
    grid.set_axis_labels("latency (ms, log scale)", "fraction of operations")
    grid.set_titles(row_template="{row_name}", col_template="{col_name}")
    grid.figure.suptitle("Latency CDFs, runs overlaid (line style: run)", y=1.02)
    return grid.figure


def _fmt(v, metric: str) -> str:
    if v is None or pd.isna(v):
        return "-"
    if metric == "throughput_ops_per_s":
        return f"{v:,.0f}"
    return f"{v:.1f}"


def wide_table(metrics: pd.DataFrame, deltas: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """For printing: one row per (system, point, metric), the baseline's value, then per
    other label its value with the change and its direction; trials' min-max where there
    are several."""
    base = labels[0]
    rows = []
    keyed = metrics.set_index(["label", "system", "point", "metric"])
    dk = deltas.set_index(["label", "system", "point", "metric"]) if not deltas.empty else None
    from .figures import _label

    for (system, point, metric), _ in metrics.groupby(["system", "point", "metric"], sort=False):
        row = {"system": _label(system), "point": point or "", "metric": WHAT[metric]}
        for label in labels:
            if (label, system, point, metric) not in keyed.index:
                row[label] = "-"
                continue
            m = keyed.loc[(label, system, point, metric)]
            text = _fmt(m["value"], metric)
            if m["trials"] > 1 and m["min"] is not None and not pd.isna(m["min"]):
                text += f" [{_fmt(m['min'], metric)}-{_fmt(m['max'], metric)}]"
            if label != base and dk is not None and (label, system, point, metric) in dk.index:
                d = dk.loc[(label, system, point, metric)]
                if d["delta"] is not None and not pd.isna(d["delta"]):
                    pct = "" if d["delta_pct"] is None or pd.isna(d["delta_pct"]) else f", {d['delta_pct']:+.0f}%"
                    text += f" ({d['delta']:+.1f}{pct}, {d['change']})"
            row[label] = text
        rows.append(row)
    return pd.DataFrame(rows)


def rtt_scales(run) -> list[float]:
    """The RTT scales the run's trials ran at (claims.rtt_scale_of: the trial's topology)."""
    from .claims import rtt_scale_of

    return sorted({rtt_scale_of(t, run.manifest) for t in run.trials})


def runs_table(groups_: list[Group]) -> pd.DataFrame:
    """What each column is made of, with what qualifies its numbers: failed operations
    (not in the latencies), consistency violations, the emulation's worst lateness, faults."""
    rows = []
    for g in groups_:
        for r in g.runs:
            m = r.manifest
            checked = [t.violations for t in r.trials if t.violations is not None]
            p99s = [t.lateness_p99 for t in r.trials if t.lateness_p99 is not None]
            rows.append({"label": g.label, "run": r.name, "experiment": r.experiment,
                         "deployment": r.deployment, "rtt_scale": "/".join(f"{x:g}" for x in rtt_scales(r)),
                         "systems": ", ".join(m.get("systems", [])),
                         "trials": f"{len(r.trials)} of {r.listed}" if r.listed not in (None, len(r.trials))
                         else str(len(r.trials)),
                         "status": m.get("status"),
                         "failed ops": sum(t.failed_ops for t in r.trials),
                         "violations": sum(checked) if checked else "not checked",
                         "lateness p99": "-" if not p99s else f"{max(p99s):.1f} ms"
                         + (" DEGRADED" if any(t.degraded for t in r.trials) else ""),
                         "faults": "yes" if (m.get("config") or {}).get("faults") else "no",
                         "commit": str(m.get("git_commit", ""))[:12] + (" (dirty)" if m.get("git_dirty") else "")})
    return pd.DataFrame(rows)


def write_html(out: Path, baseline: str, runs: pd.DataFrame, table: pd.DataFrame, figure: str | None,
               notes: list[str]) -> Path:
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>k2bench compare</title>",
             "<style>body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 1em}"
             "img{max-width:100%}td,th{padding:.2em .7em;text-align:left;border-bottom:1px solid #eee}"
             ".better{color:#1a7f37}.worse{color:#b42318}.note{background:#fff4e5;padding:.6em;"
             "border-left:4px solid #f0a020}</style></head><body><h1>k2bench compare</h1>",
             "<h2>Runs</h2>", runs.to_html(index=False, escape=True, border=0)]
    parts += [f"<p class='note'>{e(n)}</p>" for n in notes]
    parts.append(f"<h2>Changes against {e(baseline)}</h2>")
    body = table.to_html(index=False, escape=True, border=0)
    for word in ("better", "worse"):  # colour the direction of each change
        body = body.replace(f", {word})", f", <span class='{word}'>{word}</span>)")
    parts.append(body)
    if figure:
        parts.append(f"<h2>Latency CDFs</h2><img src='{e(figure)}' alt='latency CDFs, runs overlaid'>")
    parts.append("<p><small>Data: metrics.csv (long form, with the trials' min and max), deltas.csv, "
                 "cdf.csv</small></p></body></html>")
    path = out / "index.html"
    path.write_text("\n".join(parts))
    return path


def compare(paths: list[str], by: str = "run", pool: bool = False, out: str | None = None,
            console=None) -> Path:
    """Loads the runs, writes the comparison (table, figure, CSVs, index.html) into ``out``
    and prints the table; returns the output directory."""
    import matplotlib

    matplotlib.use("Agg")  # a command-line tool: files, never a window
    import matplotlib.pyplot as plt
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    runs = load.load_runs(paths)
    gs = groups(runs, by, pool)
    labels = [g.label for g in gs]
    out_dir = Path(out) if out else REPO / "runs" / f"compare-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics = metrics_frame(gs)
    deltas = delta_frame(metrics, labels[0])
    cdfs = cdf_frame(gs)
    metrics.to_csv(out_dir / "metrics.csv", index=False)
    deltas.to_csv(out_dir / "deltas.csv", index=False)
    cdfs.to_csv(out_dir / "cdf.csv", index=False)
    notes = []
    scales = {g.label: sorted({x for r in g.runs for x in rtt_scales(r)}) for g in gs}
    if len({tuple(v) for v in scales.values()}) > 1:
        notes.append("The runs emulate different wide-area latencies (rtt_scale "
                     + ", ".join(f"{k}: {'/'.join(f'{x:g}' for x in v)}" for k, v in scales.items())
                     + "): their latencies differ by construction.")
    table_runs = runs_table(gs)
    bad = table_runs[(table_runs["failed ops"] > 0) | table_runs["lateness p99"].str.contains("DEGRADED")
                     | table_runs["violations"].map(lambda v: isinstance(v, int) and v > 0)]
    for r in bad.to_dict("records"):
        what = [f"{r['failed ops']} failed operations (not in its latencies)" if r["failed ops"] else "",
                f"{r['violations']} consistency violations" if isinstance(r["violations"], int) and r["violations"]
                else "", f"emulation lateness p99 {r['lateness p99']}" if "DEGRADED" in r["lateness p99"] else ""]
        notes.append(f"{r['run']}: " + ", ".join(w for w in what if w) + ": read its numbers with that in mind.")
    figure = None
    if not cdfs.empty:
        fig = overlay_figure(cdfs)
        fig.savefig(out_dir / "latency-cdf.png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        figure = "latency-cdf.png"
    table = wide_table(metrics, deltas, labels)
    page = write_html(out_dir, labels[0], table_runs, table, figure, notes)

    t = Table(title=f"compared with {labels[0]}", show_lines=False)
    for col in table.columns:
        t.add_column(col, overflow="fold")
    for row in table.itertuples(index=False):
        t.add_row(*map(str, row))
    console.print(t)
    for n in notes:
        console.print(f"note: {n}")
    console.print(f"compare: {page}" + (f", {out_dir / figure}" if figure else ""))
    return out_dir


def parser():
    import argparse

    p = argparse.ArgumentParser(prog="k2bench compare",
                                description="runs side by side: overlaid latency CDFs and a table of changes per system")
    p.add_argument("runs", nargs="+", help="run directories (runs/<stamp>_<experiment>); the first is the baseline")
    p.add_argument("--by", choices=["run", "deployment", "experiment"], default="run",
                   help="label (and line style) per run, per deployment (local, emulab, ec2) or per experiment")
    p.add_argument("--pool", action="store_true",
                   help="merge the runs that share a label (trials of one configuration made as separate runs)")
    p.add_argument("--out", help="output directory (default: runs/compare-<stamp>)")
    return p


def main(argv=None) -> int:
    """``k2bench compare`` (registered in pyproject.toml as a command the harness finds by
    entry point: k2bench never imports analysis) and ``python -m analysis.compare``."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        compare(args.runs, args.by, args.pool, args.out)
    except (load.RunError, CompareError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
