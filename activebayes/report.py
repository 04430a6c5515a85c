"""Plots of a campaign, written as PNG files: pure functions, no global matplotlib state.

Figures are drawn on `matplotlib.figure.Figure` with the Agg canvas directly (no pyplot, no
backend switch), so calling them from a server, a test or a notebook changes nothing global.

    learning curve:        metric (e.g. test accuracy) against the number of labelled items,
                           one line per strategy
    acquisition histogram: the distribution of one round's scores over the pool, the chosen
                           items' scores marked
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from activebayes.errors import DataError

Curve = Sequence[tuple[float, float]]  # [(x = labelled items, y = metric), ...]


def _figure(width: float = 6.4, height: float = 4.2):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise DataError(f"path: expected a file name ending in .png, got {str(path)!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path


def curve_from_rounds(
    rounds: Sequence[Mapping[str, object]], *, metric: str = "accuracy", x_key: str = "n_labelled"
) -> list[tuple[float, float]]:
    """The (x, y) points of a learning curve from per-round metric dicts.

    Each round is a mapping holding `x_key` (labelled items when the round's model was fitted)
    and `metric`; rounds lacking either, or holding a non-finite value, are left out. Points come
    back sorted by x.

    >>> curve_from_rounds([{"n_labelled": 30, "accuracy": 0.8}, {"n_labelled": 20, "accuracy": 0.7}, {}])
    [(20.0, 0.7), (30.0, 0.8)]
    """
    points = []
    for entry in rounds:
        x, y = entry.get(x_key), entry.get(metric)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isfinite(x) and math.isfinite(y):
            points.append((float(x), float(y)))
    return sorted(points)


def plot_learning_curves(
    curves: Mapping[str, Curve],
    path: str | Path,
    *,
    ylabel: str = "test accuracy",
    xlabel: str = "labelled items",
    title: str | None = None,
) -> Path:
    """Write one line per named curve (metric against labelled items) to a PNG; returns its path.

    Args:
        curves: strategy name -> [(labelled items, metric value), ...]; at least one point in all.
        path: the PNG file to write (parent folders are created).
    """
    if not any(len(points) for points in curves.values()):
        raise DataError("curves: expected at least one (labelled, metric) point, got none")
    figure = _figure()
    axes = figure.add_subplot()
    for name, points in curves.items():
        if not points:
            continue
        xs, ys = zip(*sorted(points))
        axes.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.6, label=name)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    if len(curves) > 1:
        axes.legend()
    if title:
        axes.set_title(title)
    return _save(figure, path)


def plot_acquisition_histogram(
    scores: Sequence[float],
    path: str | Path,
    *,
    chosen: Sequence[float] = (),
    acquisition: str = "score",
    title: str | None = None,
    bins: int = 40,
) -> Path:
    """Write a histogram of acquisition scores [N] over the pool to a PNG; returns its path.

    Args:
        scores: the score of every scored candidate.
        chosen: the scores of the candidates the round asked about, drawn as vertical lines.
        acquisition: the acquisition's name, for the axis label (nats for information measures).
    """
    values = [float(s) for s in scores if math.isfinite(float(s))]
    if not values:
        raise DataError("scores: expected at least one finite acquisition score, got none")
    figure = _figure()
    axes = figure.add_subplot()
    axes.hist(values, bins=max(1, min(bins, len(values))), color="#4C72B0", alpha=0.85)
    for i, value in enumerate(chosen):
        axes.axvline(float(value), color="#C44E52", linewidth=0.8, alpha=0.7, label="chosen" if i == 0 else None)
    axes.set_xlabel(f"{acquisition} score")
    axes.set_ylabel("candidates")
    axes.grid(True, alpha=0.3)
    if len(chosen):
        axes.legend()
    if title:
        axes.set_title(title)
    return _save(figure, path)
