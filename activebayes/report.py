"""Plots of a campaign, written as PNG files: pure functions, no global matplotlib state.

Figures are drawn on `matplotlib.figure.Figure` with the Agg canvas directly (no pyplot, no
backend switch), so calling them from a server, a test or a notebook changes nothing global.

    learning curve:          metric (e.g. test accuracy) against the number of labelled items,
                             and beside it the estimate from the chosen labels with its 95 %
                             interval as a shaded band (`learning_figure(estimate=...)`).
                             `combination_segments` cuts a project's rounds into runs of one
                             posterior + acquisition; `plot_learning_segments` colours each
                             combination and marks every change (a dashed vertical line and a
                             dotted connector), so no line runs unmarked through two of them.
    acquisition histograms:  `activebayes.score_histograms` (its names are importable from here too).

The data functions (`combination_segments`, `change_points`) are pure and return plain values, so
what a report shows can be tested without reading pixels; `learning_figure` returns the Figure
before it is saved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activebayes.errors import DataError
from activebayes.figures import agg_figure, save_png
from activebayes.score_histograms import (  # noqa: F401  (re-exported: `activebayes.report` names every plot)
    HistogramSeries,
    acquisition_figure,
    histogram_series,
    plot_acquisition_histogram,
    plot_acquisition_histograms,
    score_axis,
)

Curve = Sequence[tuple[float, float]]  # [(x = labelled items, y = metric), ...]

_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")


# ---- learning curve -----------------------------------------------------------------------------
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
    return sorted(p for p in (_point(entry, metric, x_key) for entry in rounds) if p is not None)


def _point(entry: Mapping[str, object], metric: str, x_key: str) -> tuple[float, float] | None:
    x, y = entry.get(x_key), entry.get(metric)
    ok = isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(y, bool)
    if ok and math.isfinite(x) and math.isfinite(y):  # type: ignore[arg-type]
        return float(x), float(y)  # type: ignore[arg-type]
    return None


def combination(entry: Mapping[str, object]) -> str:
    """A round's "posterior + acquisition" label."""
    return f"{entry.get('posterior', '?')} + {entry.get('acquisition', '?')}"


@dataclass(frozen=True)
class Segment:
    """A run of consecutive rounds (with a point) that used one posterior + acquisition.

    `rounds` are the round numbers of `points` [(labelled items, metric), ...], in round order.
    """

    label: str
    rounds: tuple[int, ...]
    points: tuple[tuple[float, float], ...]


def combination_segments(
    rounds: Sequence[Mapping[str, object]], *, metric: str = "accuracy", x_key: str = "labelled"
) -> list[Segment]:
    """Cut a project's rounds (in round order, each a mapping with "number", "posterior",
    "acquisition", `x_key` and the metric) into runs of one posterior + acquisition.

    Rounds without a finite point (the cold-start round, a round that recorded no test metric)
    add nothing; a change of combination starts a new segment even when it comes after such a
    round. A round's point is its posterior's metric on `x_key` labels; the round's acquisition
    chooses the labels that the NEXT round's point adds.

    >>> rounds = [{"number": 1, "posterior": "p", "acquisition": "bald", "labelled": 0},
    ...           {"number": 2, "posterior": "p", "acquisition": "bald", "labelled": 5, "accuracy": 0.5},
    ...           {"number": 3, "posterior": "p", "acquisition": "entropy", "labelled": 10, "accuracy": 0.6}]
    >>> [(s.label, s.rounds) for s in combination_segments(rounds)]
    [('p + bald', (2,)), ('p + entropy', (3,))]
    """
    segments: list[Segment] = []
    label: str | None = None
    numbers: list[int] = []
    points: list[tuple[float, float]] = []
    for position, entry in enumerate(rounds):
        here = combination(entry)
        if here != label:
            if points:
                segments.append(Segment(label or "", tuple(numbers), tuple(points)))
            label, numbers, points = here, [], []
        point = _point(entry, metric, x_key)
        if point is not None:
            number = entry.get("number", position + 1)
            numbers.append(int(number) if isinstance(number, (int, float)) else position + 1)
            points.append(point)
    if points:
        segments.append(Segment(label or "", tuple(numbers), tuple(points)))
    return segments


def change_points(segments: Sequence[Segment]) -> list[tuple[float, str, str]]:
    """Where the combination changes between consecutive segments: (x, from, to), x halfway
    between the last point of one segment and the first of the next.

    >>> change_points([Segment("a", (1, 2), ((5, .5), (10, .6))), Segment("b", (3,), ((15, .7),))])
    [(12.5, 'a', 'b')]
    """
    return [
        ((before.points[-1][0] + after.points[0][0]) / 2.0, before.label, after.label)
        for before, after in zip(segments, segments[1:])
    ]


Band = Sequence[tuple[float, float, float, float]]  # [(labelled items, estimate, low, high), ...]
ESTIMATE_COLOUR = "#2F2F2F"


def draw_estimate_band(axes: Any, band: Band, label: str) -> None:
    """An estimate and its interval against labelled items: a dashed line over a shaded band."""
    xs, values, lows, highs = zip(*sorted(band))
    axes.fill_between(xs, lows, highs, color=ESTIMATE_COLOUR, alpha=0.15, linewidth=0)
    axes.plot(xs, values, linestyle="--", marker=".", color=ESTIMATE_COLOUR, linewidth=1.4, label=label)


def learning_figure(
    curves: Mapping[str, Sequence[Segment]],
    *,
    ylabel: str = "test accuracy",
    xlabel: str = "labelled items",
    title: str | None = None,
    estimate: Band | None = None,
    estimate_label: str = "estimate from the chosen labels (LURE), 95 % interval",
):
    """The learning-curve Figure: one colour per posterior + acquisition (shared by every curve),
    one marker per curve; segments of a curve are joined by a dotted grey connector, and with a
    single curve every change is also a dashed vertical line. `estimate`: [(labelled items,
    estimate, low, high)] of the same metric without a test split (`activebayes.round_estimates`),
    drawn as a dashed line over its shaded interval beside the test curve. DataError without any
    point."""
    if not any(seg.points for segments in curves.values() for seg in segments) and not estimate:
        raise DataError("curves: expected at least one (labelled, metric) point, got none")
    labels = list(dict.fromkeys(seg.label for segments in curves.values() for seg in segments if seg.points))
    colour = {label: _COLOURS[i % len(_COLOURS)] for i, label in enumerate(labels)}
    named = [(name, segments) for name, segments in curves.items() if any(s.points for s in segments)]
    several = len(named) > 1
    figure = agg_figure()
    axes = figure.add_subplot()
    changed = False
    for index, (name, segments) in enumerate(named):
        marker = _MARKERS[index % len(_MARKERS)] if several else "o"
        segments = [s for s in segments if s.points]
        for before, after in zip(segments, segments[1:]):
            (x0, y0), (x1, y1) = before.points[-1], after.points[0]
            axes.plot([x0, x1], [y0, y1], linestyle=":", color="0.45", linewidth=1.2)
        for seg in segments:
            xs, ys = zip(*seg.points)
            axes.plot(xs, ys, marker=marker, markersize=4, linewidth=1.8, color=colour[seg.label])
        if not several:
            for x, _, _ in change_points(segments):
                axes.axvline(x, color="0.3", linestyle="--", linewidth=1.0)
                changed = True
    from matplotlib.lines import Line2D

    combo_marker = "none" if several else "o"  # with several curves the marker names the curve
    handles = [Line2D([], [], color=colour[label], linewidth=1.8, marker=combo_marker, markersize=4, label=label)
               for label in labels]  # fmt: skip
    if changed:
        handles.append(Line2D([], [], color="0.3", linestyle="--", linewidth=1.0, label="posterior/acquisition changes"))
    if estimate:
        draw_estimate_band(axes, estimate, estimate_label)
        handles.append(Line2D([], [], color=ESTIMATE_COLOUR, linestyle="--", linewidth=1.4, label=estimate_label))
    if several:
        handles += [
            Line2D([], [], color="0.2", marker=_MARKERS[i % len(_MARKERS)], linestyle="none", label=name)
            for i, (name, _) in enumerate(named)
        ]
    axes.legend(handles=handles, fontsize="small")
    from matplotlib.ticker import MaxNLocator

    axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # a count of labels: no 9.6 labelled items
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    if title:
        axes.set_title(title)
    return figure


def plot_learning_segments(
    curves: Mapping[str, Sequence[Segment]],
    path: str | Path,
    *,
    ylabel: str = "test accuracy",
    xlabel: str = "labelled items",
    title: str | None = None,
    estimate: Band | None = None,
) -> Path:
    """Write `learning_figure(curves, ...)` (curve name -> its `combination_segments`) to a PNG."""
    return save_png(learning_figure(curves, ylabel=ylabel, xlabel=xlabel, title=title, estimate=estimate), path)


def plot_learning_curves(
    curves: Mapping[str, Curve],
    path: str | Path,
    *,
    ylabel: str = "test accuracy",
    xlabel: str = "labelled items",
    title: str | None = None,
) -> Path:
    """Write one line per named curve (metric against labelled items) to a PNG; returns its path.

    For curves whose rounds changed posterior or acquisition use `plot_learning_segments`.

    Args:
        curves: strategy name -> [(labelled items, metric value), ...]; at least one point in all.
        path: the PNG file to write (parent folders are created).
    """
    if not any(len(points) for points in curves.values()):
        raise DataError("curves: expected at least one (labelled, metric) point, got none")
    figure = agg_figure()
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
    return save_png(figure, path)


def round_mapping(info: Any) -> dict[str, Any]:
    """A `RoundInfo` as the mapping `combination_segments` reads (number, posterior, acquisition,
    labelled, and its metrics)."""
    return {
        **dict(info.metrics or {}), "number": info.number, "posterior": info.posterior,
        "acquisition": info.acquisition, "labelled": info.labelled_count,
    }  # fmt: skip
