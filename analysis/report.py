"""``make analyze``: executes every notebook of analysis/notebooks headless (papermill) on
one or more runs and writes ``report/index.html``, one HTML page per notebook and a PNG per
figure into the report directory (by default ``<first run>/report``).

    python -m analysis.report [RUN ...] [--out DIR] [--notebooks overview,rot-latency]
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import html
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from . import load

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
REPO = NOTEBOOKS.parent.parent


def notebooks(only: str | None = None) -> list[Path]:
    """Every notebook, or those named in ``only`` (comma-separated, with or without their
    number: "overview" or "01-overview"); ValueError names one that does not exist."""
    every = sorted(NOTEBOOKS.glob("*.ipynb"))
    if not only:
        return every
    by_name = {nb.stem: nb for nb in every} | {nb.stem.split("-", 1)[1]: nb for nb in every}
    unknown = [n for n in only.split(",") if n.strip() not in by_name]
    if unknown:
        raise ValueError(f"--notebooks: no notebook '{unknown[0]}'; there are "
                         f"{', '.join(nb.stem.split('-', 1)[1] for nb in every)}")
    return sorted({by_name[n.strip()] for n in only.split(",")})


class NotebookFailed(Exception):
    """A notebook raised; ``executed`` is its copy as far as it ran (with the error)."""

    def __init__(self, executed: Path, error: str):
        super().__init__(error)
        self.executed = executed


def execute(nb: Path, out_dir: Path, runs: list[str], kernel=None) -> Path:
    """Runs one notebook with the runs as parameters; returns the executed copy. A cell
    that raises gives NotebookFailed, with the copy papermill wrote up to the error. With
    ``kernel`` (one_kernel's), the notebook runs in its kernel after a reset; a kernel that
    cannot start or reset fails this notebook, not the report."""
    import papermill

    target = out_dir / "notebooks" / nb.name
    target.parent.mkdir(parents=True, exist_ok=True)
    km = None
    try:
        engine = {}
        if kernel is not None:
            km = kernel()
            _reset(km)
            engine["km"] = km
        papermill.execute_notebook(str(nb), str(target), parameters={"runs": runs, "out_dir": str(out_dir)},
                                   cwd=str(REPO), progress_bar=False, kernel_name="python3", **engine)
    except papermill.PapermillExecutionError as e:
        raise NotebookFailed(target, f"{e.ename}: {e.evalue}") from None
    except Exception as e:  # noqa: BLE001 - a dead kernel, a cell timeout: the report goes on
        raise NotebookFailed(target, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
    finally:
        if km is not None and target.exists():
            _renumber(target)
    return target


@contextlib.contextmanager
def one_kernel():
    """One kernel for a report's notebooks: each started its own, and the kernel's start and
    the imports (pandas, seaborn, matplotlib) were half of a notebook's time. Each notebook
    still starts from an empty namespace (_reset); a kernel that died is started again.
    An asynchronous manager, as nbclient's own: with a blocking one a dead kernel hung it."""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.utils import run_sync

    holder = {}

    def alive():
        km = holder.get("km")
        if km is None or not run_sync(km.is_alive)():
            if holder.pop("km", None) is not None:
                run_sync(km.shutdown_kernel)(now=True)
            km = AsyncKernelManager(kernel_name="python3")
            try:
                run_sync(km.start_kernel)(cwd=str(REPO))
            except BaseException:
                if km.has_kernel:
                    run_sync(km.shutdown_kernel)(now=True)
                raise
            holder["km"] = km
        return km

    try:
        yield alive
    finally:
        if holder.get("km") is not None:
            run_sync(holder["km"].shutdown_kernel)(now=True)


# Run in the kernel before each notebook: the names, figures and matplotlib settings (as the
# kernel's first notebook found them) a previous notebook left, gone.
_RESET = """%reset -f
import matplotlib.pyplot
if not hasattr(matplotlib, "_k2bench_rc"):
    matplotlib._k2bench_rc = dict(matplotlib.rcParams)
matplotlib.pyplot.close("all")
matplotlib.rcParams.update(matplotlib._k2bench_rc)
del matplotlib
"""


def _reset(km) -> None:
    """The namespace, figures and plot settings a previous notebook left, gone: a notebook
    that used a name it never defined fails here as it would on its own, and draws with the
    settings it would have on its own. Imported modules stay (the gain)."""
    from jupyter_client import BlockingKernelClient

    # parent=km: the client asks the kernel's process whether it lives; without one it asks
    # the heartbeat, which a kernel on a loaded machine can miss by its 1 s while alive.
    kc = BlockingKernelClient(parent=km)
    kc.load_connection_info(km.get_connection_info())
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        reply = kc.execute_interactive(_RESET, store_history=False, timeout=60)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"the kernel's reset failed: {reply['content']}")
    finally:
        kc.stop_channels()


def _renumber(executed: Path) -> None:
    """Execution counts from 1, as if the notebook had had its own kernel."""
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    n = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("execution_count") is not None:
            n += 1
            cell.execution_count = n
            for out in cell.get("outputs", []):
                if "execution_count" in out:
                    out["execution_count"] = n
    nbformat.write(nb, str(executed))


@functools.cache
def _exporter():
    """One exporter for every page (building one took ~0.3 CPU s a notebook), validating a
    page once after its preprocessors: after each of the ~12, nbformat's validator compiled
    the schema again each time (0.96 -> 0.10 CPU s a page, both changes)."""
    from nbconvert import HTMLExporter

    return HTMLExporter(exclude_input_prompt=True, exclude_output_prompt=True, optimistic_validation=True)


def to_html(executed: Path, out_dir: Path) -> Path:
    import nbformat

    body, _ = _exporter().from_notebook_node(nbformat.read(str(executed), as_version=4))
    page = out_dir / f"{executed.stem}.html"
    page.write_text(body)
    return page


STYLE = ("<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
         "img{max-width:100%;border:1px solid #ddd}.note{background:#fff4e5;padding:.6em;border-left:4px solid"
         " #f0a020}.bad{background:#fdecea;padding:.6em;border-left:4px solid #b42318}"
         "td,th{padding:.2em .8em;text-align:left;vertical-align:top;border-bottom:1px solid #eee}"
         ".agrees{color:#1a7f37}.differs{color:#b42318;font-weight:bold}.uncovered{color:#888}"
         "pre{background:#f6f8fa;padding:.6em;overflow:auto}</style>")


def claims_html(runs: list[load.Run]) -> str:
    """The paper-vs-run table (analysis/claims.py): ratios and orderings, each claim on the
    workloads it covers, latencies scaled by the runs' rtt_scale."""
    from . import claims

    e = html.escape
    rows = ["<table><tr><th>claim</th><th>paper (K2, DSN 2021, §VII)</th><th>these runs</th><th>verdict</th>"
            "<th>scaled by</th></tr>"]
    for r in claims.table(runs).to_dict("records"):
        verdict, cls = (("not covered: " + r["checked on"], "uncovered") if r["agrees"] is None else
                        ("agrees", "agrees") if r["agrees"] else ("differs", "differs"))
        rows.append(f"<tr><td>{e(r['claim'])}</td><td>{e(r['paper'])}</td><td>{e(r['this run'])}</td>"
                    f"<td class='{cls}'>{e(verdict)}" + (f"<br><small>{e(r['note'])}</small>" if r["note"] else "")
                    + f"</td><td>{e(r['scaled by'])}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def verdict_rows(runs: list[load.Run]) -> list[dict]:
    """Per trial: consistency, errors, emulation lateness and the summary's warnings."""
    out = []
    for t in load.trials_of(runs):
        problems = []
        if t.violations:
            problems.append(f"{t.violations} consistency violation(s)")
        if t.failed_ops:
            problems.append(f"{t.failed_ops} failed operation(s)")
        if t.degraded:
            problems.append("emulation degraded")
        out.append({
            "run": t.run, "point": t.point, "trial": t.trial, "system": t.system,
            "consistency": ("not checked" if t.violations is None else
                            f"{t.violations} violations of {t.checked_ops if t.checked_ops is not None else '?'}"
                            " checked operations"),
            "errors": t.failed_ops,
            "lateness p99": "-" if t.lateness_p99 is None else f"{t.lateness_p99:.2f} ms"
            + (" (degraded)" if t.degraded else ""),
            "warnings": "; ".join(t.summary.get("warnings") or []),
            "bad": bool(problems), "problems": problems,
        })
    return out


def index(out_dir: Path, runs: list[load.Run], pages: list[Path], failures: dict[str, str] | None = None) -> Path:
    """report/index.html: the paper-vs-run table first, then what was run (configuration),
    the consistency verdict, errors and degraded emulation, every figure (or why it is
    missing) and the notebooks; a notebook that failed is named with its error."""
    import yaml

    failures = failures or {}
    records = [json.loads(p.read_text()) for p in sorted((out_dir / "figures").glob("*.json"))]
    order = {p.stem: i for i, p in enumerate(pages)}
    records.sort(key=lambda r: (order.get(r["notebook"], 99), r["name"]))
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>k2bench report</title>", STYLE,
             "</head><body><h1>k2bench report</h1>"]
    verdicts = verdict_rows(runs)
    bad = [v for v in verdicts if v["bad"]]
    if bad:
        parts.append("<p class='bad'>" + "<br>".join(
            e(f"{v['run']} {v['system']} {v['point']} trial {v['trial']}: {', '.join(v['problems'])}") for v in bad)
            + "</p>")
    for nb, err in failures.items():
        parts.append(f"<p class='bad'>Notebook {e(nb)} failed ({e(err)}); its figures below may be missing. "
                     f"<a href='{e(nb)}.html'>What it ran</a>.</p>")
    parts.append("<h2>The paper and these runs</h2>")
    try:
        parts.append(claims_html(runs))
    except Exception as ex:  # noqa: BLE001 - the page stays; the note says what broke
        parts.append(f"<p class='bad'>The paper table could not be computed: {e(type(ex).__name__)}: {e(str(ex))}</p>")
    parts.append("<h2>Runs</h2><table><tr><th>run</th><th>experiment</th><th>status</th><th>deployment</th>"
                 "<th>systems</th><th>commit</th></tr>")
    for r in runs:
        m = r.manifest
        parts.append(f"<tr><td>{e(r.name)}</td><td>{e(r.experiment)}</td><td>{e(str(m.get('status')))}"
                     f"{e(': ' + m['reason']) if m.get('reason') else ''}</td>"
                     f"<td>{e(r.deployment)}</td>"
                     f"<td>{e(', '.join(m.get('systems', [])))}</td><td>{e(str(m.get('git_commit', ''))[:12])}"
                     f"{' (dirty)' if m.get('git_dirty') else ''}</td></tr>")
    parts.append("</table><h2>Consistency, errors, emulation</h2><table><tr><th>run</th><th>point</th>"
                 "<th>trial</th><th>system</th><th>consistency</th><th>errors</th><th>emulation lateness p99</th>"
                 "<th>warnings</th></tr>")
    for v in verdicts:
        parts.append("<tr>" + "".join(f"<td>{e(str(v[k]))}</td>" for k in
                                      ("run", "point", "trial", "system", "consistency", "errors", "lateness p99",
                                       "warnings")) + "</tr>")
    parts.append("</table><h2>Configuration</h2>")
    for r in runs:
        cfg = yaml.safe_dump(r.manifest.get("config"), sort_keys=False, default_flow_style=None)
        parts.append(f"<details><summary>{e(r.name)}: the resolved experiment</summary><pre>{e(cfg)}</pre></details>")
    parts.append("<h2>Figures</h2>")
    for rec in records:
        parts.append(f"<h3>{e(rec['title'])}</h3>")
        if "png" in rec:
            parts.append(f"<a href='{e(rec['png'])}'><img src='{e(rec['png'])}' alt='{e(rec['title'])}'></a>")
        else:
            parts.append(f"<p class='note'>{e(rec['note'])}</p>")
        parts.append(f"<p><small>from <a href='{e(rec['notebook'])}.html'>{e(rec['notebook'])}</a></small></p>")
    parts.append("<h2>Notebooks</h2><ul>")
    parts += [f"<li><a href='{e(p.name)}'>{e(p.stem)}</a>{' (failed)' if p.stem in failures else ''}</li>"
              for p in pages]
    parts.append("</ul></body></html>")
    path = out_dir / "index.html"
    path.write_text("\n".join(parts))
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="analysis.report", description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", default=[str(REPO / "runs" / "latest")], help="run directories")
    p.add_argument("--out", help="report directory (default: <first run>/report)")
    p.add_argument("--notebooks", help="only these notebooks, comma-separated (e.g. overview,rot-latency; "
                                       "default: all)")
    args = p.parse_args(argv)
    try:
        chosen = notebooks(args.notebooks)
    except ValueError as e:
        print(f"analyze: {e}", file=sys.stderr)
        return 2
    try:
        runs = load.load_runs(args.runs)
    except load.RunError as e:
        print(f"analyze: {e}", file=sys.stderr)
        return 2
    run_paths = [str(r.dir) for r in runs]
    out_dir = Path(args.out) if args.out else runs[0].dir / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in (out_dir / "figures").glob("*.json"):
        stale.unlink()
    with decoded_once(out_dir):
        return _write(runs, run_paths, out_dir, chosen)


@contextlib.contextmanager
def decoded_once(out_dir: Path):
    """The report's logs decoded once: its notebooks' kernels inherit the environment, and
    load keeps what it decodes in a directory removed when the report is written (a user's
    own setting of it is kept, and so is that directory)."""
    if os.environ.get(load.CACHE_ENV):
        yield
        return
    with tempfile.TemporaryDirectory(prefix=".decoded-", dir=out_dir) as cache:
        os.environ[load.CACHE_ENV] = cache
        try:
            yield
        finally:
            del os.environ[load.CACHE_ENV]


def _write(runs, run_paths: list[str], out_dir: Path, chosen: list[Path]) -> int:
    with one_kernel() as kernel:
        return _write_in(kernel, runs, run_paths, out_dir, chosen)


def _write_in(kernel, runs, run_paths: list[str], out_dir: Path, chosen: list[Path]) -> int:
    pages, failures = [], {}
    for nb in chosen:
        start = time.time()
        print(f"executing {nb.name} ...", flush=True)
        try:
            executed = execute(nb, out_dir, run_paths, kernel)
        except NotebookFailed as f:
            executed, failures[nb.stem] = f.executed, str(f)
            print(f"  {nb.stem} failed: {f}", file=sys.stderr, flush=True)
        if executed.exists():
            pages.append(to_html(executed, out_dir))
        else:  # the kernel never ran a cell: a page that says so
            pages.append(out_dir / f"{nb.stem}.html")
            pages[-1].write_text(f"<!doctype html><p>{html.escape(nb.stem)} did not run: "
                                 f"{html.escape(failures.get(nb.stem, ''))}</p>")
        print(f"  {pages[-1].name} ({time.time() - start:.0f} s)", flush=True)
    path = index(out_dir, runs, pages, failures)
    print(f"report: {path}" + (f" ({len(failures)} notebook(s) failed: {', '.join(failures)})" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
