"""What every figure module draws with: the missing-data error, a system's label and a
grid of panels (figures.py and placement.py both use them; neither imports the other's
helpers)."""
from __future__ import annotations

import matplotlib.pyplot as plt

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
