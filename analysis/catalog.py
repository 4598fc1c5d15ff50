"""What a runs directory holds, for the results browser (``k2bench serve``): every run
directory (one with a ``manifest.json``) and every reproduction directory (one with a
``scorecard.json``, its experiments' runs inside it), each run described by its manifest
and its trials' summaries.

A point's figures are pooled over its trials the one correct way: latencies from the
trials' HdrHistogram logs merged (never averaged percentiles), the all-local fraction
from the merged round counts, throughput as the trials' mean with their min-max beside.
A point of one trial takes its summary's figures as they are (the same merge, done by the
harness). Merging reads logs, so its results are kept in ``<RUNS_DIR>/.site/cache.json``
under the trials' summaries' modification times.
"""
from __future__ import annotations

import json
import re
import time
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path

from k2bench.histograms import new_histogram
from k2bench.summary import latency

from . import load
from .scorecard import VERDICTS

SITE = ".site"  # the generated site inside RUNS_DIR (skipped when looking for runs)
MAX_DEPTH = 3  # RUNS_DIR/<reproduction>/<run>, RUNS_DIR/<bench>/<setting>: deep enough
STATUS_TEXT = {"completed": "finished", "failed": "failed", "interrupted": "interrupted", "running": "running"}
LISTED_VIOLATIONS = 5  # per trial on a run's page; consistency.json has the rest


def discover(runs_dir: Path) -> tuple[list[Path], list[Path]]:
    """The run directories and the reproduction directories under ``runs_dir``, sorted.
    Symbolic links (``latest``) only repeat what is listed, and hidden directories
    (``.site``, ``.deploy``, ``.placements``) hold no runs; a run's own subdirectories are
    its trials, not runs."""
    runs: list[Path] = []
    scorecards: list[Path] = []

    def walk(d: Path, depth: int) -> None:
        for child in sorted(d.iterdir()):
            if child.name.startswith(".") or child.is_symlink() or not child.is_dir():
                continue
            if (child / "manifest.json").is_file():
                runs.append(child)
                continue
            if (child / "scorecard.json").is_file():
                scorecards.append(child)
            if depth < MAX_DEPTH:
                walk(child, depth + 1)

    walk(runs_dir, 1)
    return runs, scorecards


def run_id(runs_dir: Path, d: Path) -> str:
    return d.relative_to(runs_dir).as_posix()


def slug(rid: str) -> str:
    """A run's or scorecard's id as one file name (nested ids hold a slash)."""
    return re.sub(r"[^A-Za-z0-9._=-]", "_", rid.replace("/", "--"))


def href(*parts: str) -> str:
    """A link to a file of RUNS_DIR, as the server maps it (``runs/<path>``)."""
    return "runs/" + urllib.parse.quote("/".join(parts), safe="/=,:@")


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _when(manifest: dict, d: Path) -> tuple[str | None, str]:
    """The run's start as ISO text and as shown: the manifest's, else the directory's
    stamp (``<YYYYMMDDTHHMMSSZ>_<experiment>``), else its modification time."""
    started = manifest.get("started")
    try:
        t = datetime.fromisoformat(started) if started else None
    except ValueError:
        t = None
    if t is None:
        m = re.match(r"(\d{8}T\d{6}Z)", d.name)
        t = (datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc) if m
             else datetime.fromtimestamp(d.stat().st_mtime, timezone.utc))
    t = t.astimezone(timezone.utc)
    return t.isoformat(), t.strftime("%Y-%m-%d %H:%M UTC")


def _duration_s(manifest: dict) -> float | None:
    try:
        a, b = (datetime.fromisoformat(manifest[k]) for k in ("started", "stopped"))
    except (KeyError, TypeError, ValueError):
        return None
    return (b - a).total_seconds()


def trial_entries(d: Path, manifest: dict) -> list[dict]:
    """The manifest's trials (each once), or for runs made before manifests listed them,
    every trial summary found (a point's median copy left out)."""
    entries = manifest.get("trials")
    if entries is None:
        entries = []
        for p in sorted(d.rglob("summary.json")):
            s = _json(p) or {}
            if "median_of_trials" not in s and (p.parent / "clients").is_dir():
                entries.append({"system": s.get("system", "?"), "point": s.get("point", ""),
                                "point_values": s.get("point_values", {}), "trial": s.get("trial", 1),
                                "dir": p.parent.relative_to(d).as_posix()})
    seen, out = set(), []
    for e in entries:
        if e.get("dir") not in seen:
            seen.add(e.get("dir"))
            out.append(e)
    return out


def _op(summaries: list[dict]) -> str | None:
    """The operation a point's headline latency is of: read-only transactions, else
    read-write transactions (PaRiS, BPR, NoCC run only those), else none."""
    for op in ("rot", "rwt"):
        if any(((s.get("ops") or {}).get(op) or {}).get("count") for s in summaries):
            return op
    return None


def _logs(tdir: Path, entry: dict) -> list[Path]:
    if "client_logs" in entry:
        return [tdir / rel for rels in entry["client_logs"].values() for rel in rels]
    return sorted((tdir / "clients").glob("client-*.hlog"))


def _merged_figures(trials: list[tuple[Path, dict, dict]], op: str) -> dict | None:
    """Latency, all-local fraction and staleness of several trials from their merged
    logs, each trial's logs cut to its own window; None when a log is missing."""
    hist = {tag: new_histogram() for tag in (op, f"{op}_rounds", "staleness")}
    for tdir, entry, s in trials:
        logs = _logs(tdir, entry)
        if not logs or not all(p.is_file() for p in logs) or not s.get("window_ms"):
            return None
        intervals = [iv for p in logs for iv in load._read_compact(p)]
        for tag, h in hist.items():
            h.add(load.merge(intervals, tag, tuple(s["window_ms"])))
    lat = latency(hist[op], (50, 99, 99.9))
    rounds = hist[f"{op}_rounds"]
    n = rounds.get_total_count()
    return {"count": hist[op].get_total_count(), "mean_ms": lat["mean"], "p50_ms": lat["p50"],
            "p99_ms": lat["p99"], "p999_ms": lat["p999"],
            "all_local": rounds.get_count_at_value(0) / n if op == "rot" and n else None,
            "staleness_p99_ms": latency(hist["staleness"], (99,))["p99"]}


def _summary_figures(s: dict, op: str) -> dict:
    block = (s.get("ops") or {}).get(op) or {}
    lat = block.get("latency_ms") or {}
    return {"count": block.get("count"), "mean_ms": lat.get("mean"), "p50_ms": lat.get("p50"),
            "p99_ms": lat.get("p99"), "p999_ms": lat.get("p999"),
            "all_local": block.get("all_local_fraction") if op == "rot" else None,
            "staleness_p99_ms": (s.get("staleness_ms") or {}).get("p99")}


def point_figures(trials: list[tuple[Path, dict, dict]], median: dict | None = None) -> dict:
    """One system at one point over its trials (trial directory, manifest entry, summary):
    the figures the browser shows, and ``pooled``, how they were made."""
    summaries = [s for _, _, s in trials]
    op = _op(summaries)
    out: dict = {"op": op, "trials": len(trials)}
    if op is None:
        pass
    elif len(trials) == 1:
        out |= _summary_figures(summaries[0], op) | {"pooled": "one trial"}
    else:
        merged = _merged_figures(trials, op)
        if merged is not None:
            out |= merged | {"pooled": f"{len(trials)} trials' logs merged"}
        else:  # logs not kept: the point's median trial, never an average of percentiles
            out |= _summary_figures(median or summaries[0], op) | {
                "pooled": f"the median trial of {len(trials)} (logs missing)"}
    tps = [s["throughput_ops_per_s"] for s in summaries if s.get("throughput_ops_per_s") is not None]
    lateness = [(s.get("emulation_lateness_ms") or {}).get("worst_p99") for s in summaries]
    lateness = [x for x in lateness if x is not None]
    out |= {"throughput": sum(tps) / len(tps) if tps else None,
            "throughput_min": min(tps) if len(tps) > 1 else None,
            "throughput_max": max(tps) if len(tps) > 1 else None,
            "errors": sum(s.get("errors") or 0 for s in summaries),
            "lateness_p99_ms": max(lateness) if lateness else None,
            "degraded": any((s.get("emulation_lateness_ms") or {}).get("degraded") for s in summaries)}
    return out


def _consistency(tdir: Path, s: dict) -> dict | None:
    """A trial's checker verdict: consistency.json, else its summary's digest; None when
    the history was not checked."""
    c = _json(tdir / "consistency.json")
    if c is not None:
        v = c.get("violations") or {}
        return {"count": v.get("count", 0), "by_kind": v.get("by_kind") or {},
                "listed": [x.get("message", "") for x in (v.get("listed") or [])[:LISTED_VIOLATIONS]]}
    if s.get("consistency"):
        return {"count": s["consistency"].get("violations", 0), "by_kind": s["consistency"].get("by_kind") or {},
                "listed": []}
    return None


def _stamp(d: Path, entries: list[dict]) -> list:
    """What a run's pooled figures depend on: its trials' summaries, as modification times."""
    out = []
    for e in entries:
        p = d / e["dir"] / "summary.json"
        try:
            out.append([e["dir"], p.stat().st_mtime_ns])
        except OSError:
            out.append([e["dir"], None])
    return out


def describe(runs_dir: Path, d: Path, cache: dict, parent: str | None = None) -> dict:
    """One run as the browser shows it (JSON-ready): provenance, status, per system and
    point its figures, warnings, violations and files."""
    rid = run_id(runs_dir, d)
    manifest = _json(d / "manifest.json")
    iso, shown = _when(manifest or {}, d)
    base = {"id": rid, "slug": slug(rid), "name": d.name, "parent": parent, "started": iso, "date": shown,
            "href": href(rid) + "/"}
    if not isinstance(manifest, dict):
        return base | {"experiment": "?", "status": "unreadable", "status_text": "unreadable",
                       "reason": "manifest.json is not valid JSON", "systems": [], "points": [], "headline": {},
                       "warnings": [], "violations": [], "violations_total": None, "degraded": False,
                       "trials_present": 0, "trials_expected": 0, "files": [], "report": None, "labels": {}}
    entries = trial_entries(d, manifest)
    present = [e for e in entries if (d / e["dir"] / "summary.json").is_file()]
    status = manifest.get("status", "unknown")
    labels = {i.get("name"): i.get("label") or i.get("name") for i in manifest.get("systems_info") or []}
    systems = list(manifest.get("systems") or dict.fromkeys(e.get("system", "?") for e in entries))
    files = [{"label": "manifest.json", "href": href(rid, "manifest.json")}]
    if (d / "inventory.json").is_file():
        files.append({"label": "inventory.json", "href": href(rid, "inventory.json")})

    # Trials grouped by (system, point), in the manifest's order.
    groups: dict[tuple[str, str], list] = {}
    warnings, violations = [], []
    for e in present:
        tdir = d / e["dir"]
        s = _json(tdir / "summary.json") or {}
        key = (e.get("system") or s.get("system", "?"), e.get("point", s.get("point", "")))
        groups.setdefault(key, []).append((tdir, e, s))
        where = {"system": key[0], "point": key[1], "trial": e.get("trial", 1), "dir": e["dir"]}
        files.append({"label": f"{e['dir']}/summary.json", "href": href(rid, e["dir"], "summary.json")})
        warnings += [where | {"text": w} for w in s.get("warnings") or []]
        c = _consistency(tdir, s)
        if c is not None:
            if (tdir / "consistency.json").is_file():
                files.append({"label": f"{e['dir']}/consistency.json",
                              "href": href(rid, e["dir"], "consistency.json")})
            violations.append(where | c)

    stamp = _stamp(d, present)
    cached = cache.get(rid)
    if cached and cached.get("stamp") == stamp:
        figures = cached["figures"]
    else:
        figures = {}
        for (system, point), trials in groups.items():
            median = _json(d / Path(trials[0][1]["dir"]).parent / "summary.json") if len(trials) > 1 else None
            figures[f"{system}\t{point}"] = point_figures(trials, median)
        cache[rid] = {"stamp": stamp, "figures": figures}
    points = []
    for (system, point), trials in groups.items():
        counts = [v["count"] for v in violations if (v["system"], v["point"]) == (system, point)]
        points.append({"system": system, "label": labels.get(system, system), "point": point,
                       "point_values": trials[0][1].get("point_values", {}),
                       "figures": figures[f"{system}\t{point}"], "violations": sum(counts) if counts else None})
    headline = {}
    for p in points:  # each system's first point (in run order): the index and compare show it
        headline.setdefault(p["system"], p["figures"] | {"point": p["point"], "points": 0})["points"] += 1
    checked = [v["count"] for v in violations]
    report = d / "report" / "index.html"
    return base | {
        "experiment": manifest.get("experiment", "?"),
        "description": (manifest.get("config") or {}).get("description", ""),
        "stopped": manifest.get("stopped"), "duration_s": _duration_s(manifest),
        "commit": str(manifest.get("git_commit") or "")[:10], "dirty": bool(manifest.get("git_dirty")),
        "deployment": (manifest.get("deployment") or {}).get("provider")
        or (manifest.get("deployment") or {}).get("kind", "local"),
        "status": status, "status_text": STATUS_TEXT.get(status, status), "reason": manifest.get("reason"),
        "trials_present": len(present), "trials_expected": len(entries),
        "systems": systems, "labels": {s: labels.get(s, s) for s in systems},
        "points": points, "headline": headline,
        "warnings": warnings, "violations": violations,
        "violations_total": sum(checked) if checked else None,
        "degraded": any(p["figures"].get("degraded") for p in points),
        "problems": [f"{k}: {v}" for k, v in (manifest.get("unreachable_hosts") or {}).items()]
        + [f"fetching {f.get('host')}'s files of {f.get('trial')} failed: {f.get('error')}"
           for f in manifest.get("fetch_failures") or []],
        "files": files, "report": href(rid, "report", "index.html") if report.is_file() else None,
    }


def scorecard(runs_dir: Path, d: Path, run_ids: set[str]) -> dict:
    """A reproduction directory's scorecard.json as shown: its experiments' runs linked
    where their directories are runs."""
    sid = run_id(runs_dir, d)
    card = _json(d / "scorecard.json")
    if not isinstance(card, dict):
        card = {"title": d.name, "error": "scorecard.json is not valid JSON", "runs": [], "claims": []}
    runs = []
    for r in card.get("runs") or []:
        rid = f"{sid}/{r.get('dir', '')}".rstrip("/")
        runs.append(r | {"id": rid if rid in run_ids else None, "slug": slug(rid)})
    by_experiment = {r.get("experiment"): r for r in runs}
    claims = []
    for c in card.get("claims") or []:
        linked = [by_experiment.get(x) or {"experiment": x, "id": None} for x in c.get("experiments") or []]
        doc = c.get("doc") or ""
        claims.append(c | {"runs": linked, "doc_href": doc if doc.startswith("docs/") else None})
    counts = card.get("counts") or {v: sum(c.get("verdict") == v for c in claims) for v in VERDICTS}
    return card | {"id": sid, "slug": slug(sid), "runs": runs, "claims": claims, "counts": counts,
                   "paper": card.get("paper") or d.name, "href": href(sid, "scorecard.json")}


def catalog(runs_dir: Path, cache: dict) -> dict:
    """Everything under ``runs_dir``: runs (a reproduction's nested under it, after it in
    order) and scorecards."""
    run_dirs, card_dirs = discover(runs_dir)
    cards = {run_id(runs_dir, c): c for c in card_dirs}

    def parent(d: Path) -> str | None:
        for p in d.relative_to(runs_dir).parents:
            if p.as_posix() in cards:
                return p.as_posix()
        return None

    groups: dict[str, list] = {}  # a run alone, or a reproduction's runs
    for d in run_dirs:
        r = describe(runs_dir, d, cache, parent(d))
        groups.setdefault(r["parent"] or r["id"], []).append(r)
    # Newest first; a reproduction's runs together, in its directories' order.
    runs = [r for g in sorted(groups.values(), key=lambda g: max(r["started"] for r in g), reverse=True)
            for r in sorted(g, key=lambda r: r["id"])]
    ids = {r["id"] for r in runs}
    return {"runs_dir": str(runs_dir), "generated": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "runs": runs, "scorecards": [scorecard(runs_dir, c, ids) for c in card_dirs]}
