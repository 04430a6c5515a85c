"""Matplotlib figures on the Agg canvas, without pyplot: nothing global changes (no backend
switch, no current figure), so a server, a test or a notebook can draw them."""

from __future__ import annotations

from pathlib import Path

from activebayes.atomic_files import atomic_write
from activebayes.errors import DataError


def agg_figure(width: float = 6.4, height: float = 4.2):
    """A `matplotlib.figure.Figure` of width × height inches (dpi 110, constrained layout) on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_png(figure, path: str | Path, **savefig: object) -> Path:
    """Write `figure` to `path` (a .png name, else DataError; its folder made), whole or not at all
    (`atomic_write`); `savefig`: matplotlib's other options (dpi); returns the path."""
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise DataError(f"path: expected a file name ending in .png, got {str(path)!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as fh:  # whole or not at all: a failure leaves the old file
        figure.savefig(fh, format="png", **savefig)
    return path
