"""What the notebooks share: load the runs given as parameters and show each figure, saving
it as a PNG for the report, or a note saying which data is missing; every table and the
data behind every figure also land in ``<out_dir>/data/<name>.csv`` (tidy: plain values,
one row per observation)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Image, Markdown, display

from . import figures, frames, load


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]


class Report:
    """One notebook's part of a report: figures go to ``out_dir`` as PNG plus a small JSON
    record (title, notebook, file or note) that the index is built from. Relative paths
    (runs and ``out_dir``) that do not exist from the working directory are the
    repository's, so a notebook opened in Jupyter from its folder finds ``runs/latest``."""

    def __init__(self, runs: list[str], out_dir: str, notebook: str):
        self.runs = load.load_runs(runs)
        out = Path(out_dir)
        if not out.is_absolute() and not out.parent.exists():
            out = load.REPO / out
        self.out = out
        self.out.mkdir(parents=True, exist_ok=True)
        self.notebook = notebook

    def export(self, name: str, frame) -> Path | None:
        """Writes ``frame`` (histogram columns dropped) as ``data/<name>.csv``."""
        if frame is None or frame.empty:
            return None
        path = self.out / "data" / f"{name}.csv"
        path.parent.mkdir(exist_ok=True)
        frames.tidy(frame).to_csv(path, index=False)
        return path

    def figure(self, name: str, title: str, draw) -> None:
        record = {"name": name, "title": title, "notebook": self.notebook}
        try:
            fig = draw(self.runs)
        except figures.MissingData as e:
            record["note"] = f"Not drawn: {e}."
            display(Markdown(f"**{title}**: {record['note']}"))
        else:
            fig.savefig(self.out / f"{name}.png", dpi=110, bbox_inches="tight")
            plt.close(fig)
            record["png"] = f"{name}.png"
            if name in figures.DATA:
                csv = self.export(name, figures.DATA[name](self.runs))
                if csv is not None:
                    record["csv"] = f"data/{csv.name}"
            display(Image(filename=str(self.out / record["png"])))  # the saved file: drawn once, not twice
        (self.out / "figures").mkdir(exist_ok=True)
        (self.out / "figures" / f"{name}.json").write_text(json.dumps(record) + "\n")

    def table(self, title: str, make):
        """Shows a table (and saves it as data/<title>.csv), or a note if its data is
        missing; returns it (or None)."""
        try:
            frame = make(self.runs)
        except figures.MissingData as e:
            display(Markdown(f"**{title}**: Not computed: {e}."))
            return None
        display(Markdown(f"**{title}**"))
        self.export(_slug(title), frame)
        display(frame)
        return frame
