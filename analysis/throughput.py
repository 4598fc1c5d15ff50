"""The K2 paper's Fig. 9 beside a ``make bench-throughput`` run: K2/RAD and K2/PaRiS* at each
system's peak on this machine, against the paper's 24 servers.

    python -m analysis.throughput runs/<stamp>_bench-throughput

(``make bench-throughput`` prints it after the climbs.) The climbs themselves, their peaks
and CPU tables are the harness's (k2bench/bench.py, ``throughput.json``)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from k2bench.bench import Climb, busiest_server_ratio, ratio

from . import paper
from .paper import K2, PARIS_STAR, RAD

TITLE = ("Fig. 9 ratios at peak (this machine vs the paper's 24 servers; the paper has no PaRiS* column; "
         "order: K2/RAD within 10% here, 5% in the paper, is a tie; "
         "by busiest server: the ratio if each system's busiest server thread, on a core of its own, "
         "set its peak; *: a peak in it is DISTURBED)")
COLUMNS = ("setting", "K2/RAD here", "K2/RAD by busiest server", "K2/RAD paper", "order here / paper",
           "K2/PaRiS* here")


def climbs_of(run_dir: Path) -> tuple[list[str], list[Climb]]:
    """The settings and climbs a bench run wrote (its ``throughput.json``)."""
    path = Path(run_dir) / "throughput.json"
    if not path.exists():
        raise SystemExit(f"throughput: {path} not found; give a bench-throughput run directory "
                         "(runs/<stamp>_bench-throughput)")
    saved = json.loads(path.read_text())
    climbs = []
    for c in saved["climbs"]:
        climb = Climb(c["setting"], c["system"], c["points"], c["stop"], c["peak"], c["failed"], c["disturbed"])
        climbs.append(climb)
    return saved["settings"], climbs


def ratio_rows(climbs: list[Climb], settings: list[str]) -> list[tuple[str, ...]]:
    """The ratio table's rows: per setting K2/RAD here, by busiest server and in the paper,
    the orders here and in the paper (``paper.order``: a tie within 10% here, 5% there;
    "DIFFERS" when they differ; not judged unless both K2's and RAD's climbs reached a peak)
    and K2/PaRiS*; a ratio with a DISTURBED peak in it is starred."""
    by = {(c.setting, c.system): c.peak for c in climbs}
    shaky = {(c.setting, c.system) for c in climbs if c.disturbed}
    peaked = {(c.setting, c.system) for c in climbs if c.is_peak}

    def mark(v, setting, *systems):
        return "-" if v is None else f"{v:.2f}" + ("*" if any((setting, x) in shaky for x in systems) else "")
    rows = []
    for s in settings:
        here, theirs = ratio(by.get((s, K2)), by.get((s, RAD))), paper.fig9_ratio(s)
        bound = busiest_server_ratio(by.get((s, K2)), by.get((s, RAD)))
        kp = ratio(by.get((s, K2)), by.get((s, PARIS_STAR)))
        orders = "-"
        if here is not None and not {(s, K2), (s, RAD)} <= peaked:
            orders = "not judged: " + " and ".join(x.upper() for x in (K2, RAD) if (s, x) not in peaked) \
                + " not a peak"
        elif here is not None and theirs is not None:
            a, b = paper.order(here, paper.TIE_HERE), paper.order(theirs, paper.TIE_PAPER)
            orders = f"{a} / {b}" + ("" if a == b else ": DIFFERS")
        rows.append((s, mark(here, s, K2, RAD), mark(bound, s, K2, RAD), mark(theirs, s), orders,
                     mark(kp, s, K2, PARIS_STAR)))
    return rows


def main(argv=None) -> int:
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser(prog="python -m analysis.throughput", description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a bench-throughput run directory (runs/<stamp>_bench-throughput)")
    args = ap.parse_args(argv)
    settings, climbs = climbs_of(Path(args.run))
    quick = json.loads((Path(args.run) / "throughput.json").read_text()).get("quick", False)
    t = Table(title=TITLE + (" (quick bench: coarse peaks, for checking a change)" if quick else ""))
    for col in COLUMNS:
        t.add_column(col, justify="right" if col != "setting" else "left")
    for row in ratio_rows(climbs, settings):
        t.add_row(*row)
    (Console() if sys.stdout.isatty() else Console(width=200)).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
