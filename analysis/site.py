"""The results browser's static pages (``k2bench serve``, ``make serve``): written into
``<RUNS_DIR>/.site/`` from what analysis/catalog.py finds there.

    index.html              every run (a reproduction's nested under it) with its status, systems,
                            headline figures and flags; the scorecards; a form to compare two runs
    run-<id>.html           one run: its end table per system and point, warnings, violations, files,
                            its report (make analyze)
    scorecard-<id>.html     one reproduction's scorecard.json: its runs and the paper's claims
    compare.html            two runs side by side (?a=<run>&b=<run>), drawn from runs.json
    runs.json               each run's headline figures, for compare.html

Links to a run's own files go through the server's ``runs/`` (RUNS_DIR) and the
repository's documentation through ``docs/`` (analysis/serve.py).
"""
from __future__ import annotations

import json
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from . import catalog
from .compare import SAME_WITHIN  # a change within 1% reads "same", as in k2bench compare

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = ("site.css", "index.js", "compare.js")

# The headline figures of one system (its first point), as the index and compare show
# them: (key in the point's figures, what, unit, whether higher is better).
HEADLINE = [
    ("mean_ms", "mean", "ms", False),
    ("p50_ms", "p50", "ms", False),
    ("p99_ms", "p99", "ms", False),
    ("all_local", "all-local", "%", True),
    ("throughput", "throughput", "ops/s", True),
]
OPS = {"rot": "ROT", "rwt": "RWT", None: "-"}


def fmt(value, unit: str = "ms") -> str:
    """A figure as the pages show it."""
    if value is None:
        return "-"
    if unit == "%":
        return f"{100 * value:.1f}%"
    if unit == "ops/s":
        return f"{value:,.1f}"
    if unit == "int":
        return f"{value:,}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt
    env.globals |= {"HEADLINE": HEADLINE, "OPS": OPS}
    return env


def runs_json(cat: dict) -> dict:
    """What compare.html reads: each run's provenance and headline figures."""
    keep = ("id", "slug", "experiment", "date", "status", "status_text", "commit", "dirty", "systems", "labels",
            "headline", "violations_total", "degraded", "trials_present", "trials_expected")
    return {"generated": cat["generated"], "same_within": SAME_WITHIN,
            "metrics": [{"key": k, "what": w, "unit": u, "higher_is_better": b} for k, w, u, b in HEADLINE],
            "runs": [{k: r.get(k) for k in keep} for r in cat["runs"]]}


def _load_cache(path: Path) -> dict:
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}


def build(runs_dir: Path, shown_as: str | None = None) -> tuple[Path, dict]:
    """Writes the site into ``runs_dir/.site`` (pages of runs gone since are removed);
    returns its directory and what it shows (``catalog.catalog``). ``shown_as``: how the runs directory is named in the pages'
    commands (``make analyze RUN=<shown_as>/<run>``; default its path)."""
    runs_dir = Path(runs_dir)
    out = runs_dir / catalog.SITE
    out.mkdir(exist_ok=True)
    cache_path = out / "cache.json"
    cache = _load_cache(cache_path)
    cat = catalog.catalog(runs_dir, cache)
    live = {r["id"] for r in cat["runs"]}
    cache_path.write_text(json.dumps({k: v for k, v in cache.items() if k in live}))
    for old in [*out.glob("run-*.html"), *out.glob("scorecard-*.html")]:
        old.unlink()

    env = _environment()
    shown = (shown_as or str(runs_dir)).rstrip("/")
    cards = {c["id"]: c for c in cat["scorecards"]}

    def write(name: str, template: str, **kw) -> None:
        (out / name).write_text(env.get_template(template).render(cat=cat, page=name, **kw))

    write("index.html", "index.html", cards=cards)
    write("compare.html", "compare.html")
    for r in cat["runs"]:
        write(f"run-{r['slug']}.html", "run.html", run=r, card=cards.get(r["parent"]),
              analyze=f"make analyze RUN={shown}/{r['id']}")
    for c in cat["scorecards"]:
        write(f"scorecard-{c['slug']}.html", "scorecard.html", card=c, runs={r["id"]: r for r in cat["runs"]})
    (out / "runs.json").write_text(json.dumps(runs_json(cat), indent=1))
    for name in STATIC:
        (out / name).write_text((TEMPLATES / name).read_text())
    return out, cat
