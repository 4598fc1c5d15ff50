"""``make analyze``: executes every notebook of analysis/notebooks headless (papermill) on
one or more runs and writes ``report/index.html``, one HTML page per notebook and a PNG per
figure into the report directory (by default ``<first run>/report``).

    python -m analysis.report [RUN ...] [--out DIR]
"""
from __future__ import annotations

import argparse
import html
import json
import sys
import time
from pathlib import Path

from . import load

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
REPO = NOTEBOOKS.parent.parent


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def execute(nb: Path, out_dir: Path, runs: list[str]) -> Path:
    """Runs one notebook with the runs as parameters; returns the executed copy."""
    import papermill

    target = out_dir / "notebooks" / nb.name
    target.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(nb), str(target), parameters={"runs": runs, "out_dir": str(out_dir)},
                               cwd=str(REPO), progress_bar=False, kernel_name="python3")
    return target


def to_html(executed: Path, out_dir: Path) -> Path:
    import nbformat
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(exclude_input_prompt=True, exclude_output_prompt=True).from_notebook_node(
        nbformat.read(str(executed), as_version=4))
    page = out_dir / f"{executed.stem}.html"
    page.write_text(body)
    return page


def index(out_dir: Path, runs: list[load.Run], pages: list[Path]) -> Path:
    """report/index.html: what was analysed, every figure (or why it is missing), the notebooks."""
    records = [json.loads(p.read_text()) for p in sorted((out_dir / "figures").glob("*.json"))]
    order = {p.stem: i for i, p in enumerate(pages)}
    records.sort(key=lambda r: (order.get(r["notebook"], 99), r["name"]))
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>k2bench report</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
             "img{max-width:100%;border:1px solid #ddd}.note{background:#fff4e5;padding:.6em;border-left:4px solid"
             " #f0a020}td,th{padding:.2em .8em;text-align:left}</style></head><body>",
             "<h1>k2bench report</h1><table><tr><th>run</th><th>experiment</th><th>status</th><th>systems</th>"
             "<th>commit</th></tr>"]
    for r in runs:
        m = r.manifest
        parts.append(f"<tr><td>{e(r.name)}</td><td>{e(r.experiment)}</td><td>{e(str(m.get('status')))}</td>"
                     f"<td>{e(', '.join(m.get('systems', [])))}</td><td>{e(str(m.get('git_commit', ''))[:12])}"
                     f"{' (dirty)' if m.get('git_dirty') else ''}</td></tr>")
    parts.append("</table><h2>Notebooks</h2><ul>")
    parts += [f"<li><a href='{e(p.name)}'>{e(p.stem)}</a></li>" for p in pages]
    parts.append("</ul><h2>Figures</h2>")
    for rec in records:
        parts.append(f"<h3>{e(rec['title'])}</h3>")
        if "png" in rec:
            parts.append(f"<a href='{e(rec['png'])}'><img src='{e(rec['png'])}' alt='{e(rec['title'])}'></a>")
        else:
            parts.append(f"<p class='note'>{e(rec['note'])}</p>")
        parts.append(f"<p><small>from <a href='{e(rec['notebook'])}.html'>{e(rec['notebook'])}</a></small></p>")
    parts.append("</body></html>")
    path = out_dir / "index.html"
    path.write_text("\n".join(parts))
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="analysis.report", description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", default=[str(REPO / "runs" / "latest")], help="run directories")
    p.add_argument("--out", help="report directory (default: <first run>/report)")
    args = p.parse_args(argv)
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
    pages = []
    for nb in notebooks():
        start = time.time()
        print(f"executing {nb.name} ...", flush=True)
        pages.append(to_html(execute(nb, out_dir, run_paths), out_dir))
        print(f"  {pages[-1].name} ({time.time() - start:.0f} s)", flush=True)
    path = index(out_dir, runs, pages)
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
