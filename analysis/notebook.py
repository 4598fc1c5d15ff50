"""What the notebooks share: load the runs given as parameters and show each figure, saving
it as a PNG for the report, or a note saying which data is missing."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from . import figures, load


class Report:
    """One notebook's part of a report: figures go to ``out_dir`` as PNG plus a small JSON
    record (title, notebook, file or note) that the index is built from."""

    def __init__(self, runs: list[str], out_dir: str, notebook: str):
        self.runs = load.load_runs(runs)
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.notebook = notebook

    def figure(self, name: str, title: str, draw) -> None:
        record = {"name": name, "title": title, "notebook": self.notebook}
        try:
            fig = draw(self.runs)
        except figures.MissingData as e:
            record["note"] = f"Not drawn: {e}."
            display(Markdown(f"**{title}**: {record['note']}"))
        else:
            fig.savefig(self.out / f"{name}.png", dpi=110, bbox_inches="tight")
            record["png"] = f"{name}.png"
            plt.show()
            plt.close(fig)
        (self.out / "figures").mkdir(exist_ok=True)
        (self.out / "figures" / f"{name}.json").write_text(json.dumps(record) + "\n")

    def table(self, title: str, make):
        """Shows a table, or a note if its data is missing; returns it (or None)."""
        try:
            frame = make(self.runs)
        except figures.MissingData as e:
            display(Markdown(f"**{title}**: Not computed: {e}."))
            return None
        display(Markdown(f"**{title}**"))
        display(frame)
        return frame
