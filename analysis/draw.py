"""What every figure module draws with: the missing-data error, a system's label and a
grid of panels (figures.py and placement.py both use them; neither imports the other's
helpers)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from . import load


class MissingData(Exception):
    """The runs lack what a figure needs; the message says what."""


def label(system: str) -> str:
    return load.systems().label(system)


def panels(n: int, width: float = 5.0, height: float = 3.6):
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def heatmap(ax, m) -> None:
    """An annotated heatmap of a square frame (whole numbers), as ``sns.heatmap(m, annot=True,
    fmt=".0f", cmap="viridis", cbar=False, square=True)`` draws it, without its full draw of
    the figure on every call (to check its tick labels for overlap): Fig. 6's twelve panels
    took 5 s that way, most of a report's notebook."""
    values = m.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap="viridis", aspect="equal")
    ax.set_xticks(range(len(m.columns)), [str(c) for c in m.columns])
    ax.set_yticks(range(len(m.index)), [str(i) for i in m.index])
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):  # dark text on viridis' light end, light on its dark end
            ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=9,
                    color="black" if image.norm(v) > 0.5 else "white")
