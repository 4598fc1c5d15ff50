"""The slowest tests of one `make test`, Java and Python together: surefire's reports
(system/*/target/surefire-reports) and pytest's JUnit XML files, those written since
``--since`` (a file whose modification time marks the start of the run)."""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cases(paths: list[Path]) -> list[tuple[float, str]]:
    """(seconds, name) of every test case in the JUnit XML files ``paths``."""
    out = []
    for p in paths:
        try:
            root = ET.parse(p).getroot()
        except ET.ParseError as e:
            print(f"slowest: {p} is not JUnit XML ({e}); left out", file=sys.stderr)
            continue
        for c in root.iter("testcase"):
            name = f"{c.get('classname', '')}.{c.get('name', '')}".strip(".")
            out.append((float(c.get("time") or 0.0), name))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tests/slowest.py", description=__doc__.splitlines()[0])
    ap.add_argument("xml", nargs="*", type=Path, help="pytest's JUnit XML files")
    ap.add_argument("--since", type=Path, required=True, help="reports older than this file are left out")
    ap.add_argument("-n", type=int, default=10, help="how many (default 10)")
    ap.add_argument("--system", type=Path, default=REPO / "system", help="the Maven modules' parent (surefire's reports)")
    args = ap.parse_args(argv)
    since = args.since.stat().st_mtime
    reports = sorted(args.system.glob("*/target/surefire-reports/TEST-*.xml")) + args.xml
    found = cases([p for p in reports if p.exists() and p.stat().st_mtime >= since])
    if not found:
        print("slowest: no test reports written by this run")
        return 0
    found.sort(reverse=True)
    print(f"the {min(args.n, len(found))} slowest of {len(found)} tests:")
    for seconds, name in found[:args.n]:
        print(f"  {seconds:7.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
