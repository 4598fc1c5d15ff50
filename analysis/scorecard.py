"""One paper's claims on one card: per claim the paper's figure or sentence, the value
measured here with its spread over trials, and a verdict with its reason.

A claim's check reads runs and returns, per workload that covers it, what it measured and
whether that agrees with the paper. The card runs it on all trials pooled (merged
histograms) and again on each trial alone: the spread is the trials' range, and the
verdict is

- **agrees**: the pooled value and every trial agree;
- **differs**: the pooled value and every trial differ (with the mechanism, and the docs
  page that measured it, when it is known);
- **within noise**: the trials disagree among themselves (or the check's own comparison of
  spreads says so): more trials, or a quieter machine, would decide it;
- **not covered**: no run measured it (with what would).

A claim covered by several workloads agrees only where each does; one that differs makes
the claim differ. The papers' claims are in ``analysis/scorecards.py``; ``k2bench
reproduce`` runs a paper's experiments and writes its card (``analysis/reproduce.py``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

VERDICTS = ("agrees", "differs", "within noise", "not covered")


@dataclass(frozen=True)
class Got:
    """What a check measured on one workload: its text, whether it agrees with the paper
    (None: within noise, the check's own comparison of the trials' spreads), and the number
    the spread over trials is taken of."""
    text: str
    ok: bool | None
    value: float | None = None


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str  # what the paper claims, in a line
    paper: str  # the paper's figure or sentence
    where: str  # its section and figure
    experiments: tuple  # the experiment files (workloads/) that measure it
    check: Callable  # runs -> [(workload name, Got)], one per covering workload; [] = not covered
    unit: str = ""  # how the spread is shown: "%" (a fraction), "ms", "x" (a ratio), "" (a count)
    spread_of: str = ""  # what the spread is of, where the text shows several figures ("Karma/COPS-PR")
    per_trial: bool = True  # False: the check gives its own spread and verdict (placement.json's)
    differs: str = ""  # the mechanism, when it differs here (one line)
    doc: str = ""  # the docs page that measured it (repository-relative, with an anchor)
    covers: str = ""  # what would cover it where its experiments cannot (one line)
    note: str = ""  # what of the paper's figure is shown but not checked, or how the bound reads it


def select(runs: list, keep) -> list:
    """The runs with only the trials ``keep(trial)`` accepts."""
    return [dataclasses.replace(r, trials=[t for t in r.trials if keep(t)]) for r in runs]


def only_trial(runs: list, k: int) -> list:
    """The runs with only their trial number ``k`` (of every point and system)."""
    return select(runs, lambda t: t.trial == k)


def _shown(unit: str, v: float) -> str:
    if unit == "%":
        return f"{100 * v:.1f}%"
    if unit == "ms":
        return f"{v:.0f} ms" if abs(v) >= 10 else f"{v:.1f} ms"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v:g}"


def spread(unit: str, values: list, of: str = "") -> str:
    """The trials' range of a claim's value: "51.0% to 57.0% over 2 trials" ("" for one trial)."""
    vs = [v for v in values if v is not None]
    if len(vs) < 2:
        return ""
    return f"{of + ' ' if of else ''}{_shown(unit, min(vs))} to {_shown(unit, max(vs))} over {len(vs)} trials"


def item_verdict(pooled: Got, trials: list[Got]) -> str:
    """A workload's verdict from its pooled result and each trial's (module doc)."""
    if pooled.ok is None:
        return "within noise"
    oks = [pooled.ok] + [g.ok for g in trials]
    if all(o is True for o in oks):
        return "agrees"
    if not any(o is True for o in oks):
        return "differs"
    return "within noise"


def claim_verdict(items: list[str]) -> str:
    if not items:
        return "not covered"
    for v in ("differs", "within noise"):
        if v in items:
            return v
    return "agrees"


def evaluate(claim: Claim, runs: list) -> dict:
    """The claim's row of a scorecard (the format the results browser and docs read)."""
    pooled = claim.check(runs)
    per: dict[str, list[Got]] = {}
    numbers = sorted({t.trial for r in runs for t in r.trials})
    if claim.per_trial and len(numbers) > 1:
        for k in numbers:
            for name, got in claim.check(only_trial(runs, k)):
                per.setdefault(name, []).append(got)
    items = []
    for name, got in pooled:
        trials = per.get(name, [])
        items.append({"workload": name, "measured": got.text, "spread": spread(claim.unit, [g.value for g in trials], claim.spread_of),
                      "trials": len(trials) or None, "verdict": item_verdict(got, trials)})
    verdict = claim_verdict([i["verdict"] for i in items])
    measured = "; ".join(f"{i['workload']}: {i['measured']}" + (f" [{i['spread']}]" if i["spread"] else "")
                         for i in items)
    if verdict == "not covered":
        why = claim.covers or ("run " + ", ".join(claim.experiments) + " (k2bench reproduce)")
    elif verdict == "differs":
        why = claim.differs or "not traced yet: " + ", ".join(i["workload"] for i in items if i["verdict"] == "differs")
    elif verdict == "within noise":
        noisy = [i["workload"] for i in items if i["verdict"] == "within noise"]
        why = "the pooled value and the trials disagree (" + ", ".join(noisy) + "): more trials would decide it"
    else:
        why = ""
    return {"id": claim.id, "claim": claim.claim, "paper": claim.paper, "where": claim.where,
            "measured": measured or "-", "verdict": verdict, "why": why, "note": claim.note,
            "doc": claim.doc if verdict in ("differs", "within noise") else "",
            "experiments": list(claim.experiments), "items": items}


def card(paper: str, title: str, claims: list[Claim], loaded: list, **about) -> dict:
    """A paper's scorecard: every claim evaluated on the loaded runs, with the counts per
    verdict. ``about`` adds the card's context (scale, scale_note, created, commit, and
    ``runs``: each experiment's run directory and status)."""
    rows = [evaluate(c, loaded) for c in claims]
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    return {"paper": paper, "title": title, **about, "claims": rows, "counts": counts}


def markdown(sc: dict) -> str:
    """The card as a Markdown table (scorecard.md): to paste, or read in a terminal."""
    out = [f"# {sc['title']}: does the paper hold here?", ""]
    if sc.get("scale_note"):
        out += [f"Scale: {sc['scale_note']}", ""]
    if sc.get("runs"):
        out += ["Runs: " + "; ".join(f"{r['experiment']} ({r['status']}, {r['trials']} trial(s))"
                                     for r in sc["runs"]), ""]
    out += ["Verdicts: " + ", ".join(f"{n} {v}" for v, n in sc["counts"].items()), "",
            "| claim | paper | where | measured here | verdict | why | note |",
            "| --- | --- | --- | --- | --- | --- | --- |"]

    def cell(x):
        return str(x).replace("|", "\\|").replace("\n", " ")
    for r in sc["claims"]:
        why = r["why"] + (f" ({r['doc']})" if r["doc"] else "")
        out.append("| " + " | ".join(cell(x) for x in (r["claim"], r["paper"], r["where"], r["measured"],
                                                          r["verdict"], why, r.get("note", ""))) + " |")
    return "\n".join(out) + "\n"
