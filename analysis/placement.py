"""A placement run's figures into its run directory: ``placement.png`` (the placement
paper's Fig. 7/8 shape: CDFs of read latency per placement, normal and after the kill,
measured beside predicted) and ``placement-buckets.png`` (per key bucket, predicted against
measured), from the run's ``placement.json`` (k2bench/placement_report.py writes it).

    k2bench placement-figures RUN      (or python -m analysis.placement RUN)

``k2bench run`` and ``k2bench placement-report`` draw them through this command when
analysis is installed beside the harness."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

from k2bench.placement_report import BUCKETS_FIGURE_FILE, FIGURE_FILE


def draw(run_dir: Path) -> list[Path]:
    """The figures drawn (none without data); one that cannot be drawn is a warning, never a
    failure of the finished run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import figures

    runs = [SimpleNamespace(dir=Path(run_dir), name=Path(run_dir).name)]  # the figures read placement.json only
    out = []
    for name, draw_figure in ((FIGURE_FILE, figures.placement_latency),
                              (BUCKETS_FIGURE_FILE, figures.placement_buckets)):
        try:
            fig = draw_figure(runs)
        except figures.MissingData:
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
