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
    acquisition histograms:  `histogram_series` bins the scores of EVERY candidate one round
                             scored (`PoolStore.round_scores`), the queried items located among
                             them; `plot_acquisition_histograms` draws one panel per acquisition,
                             each with its own x-axis and unit (`score_axis`: nats for the
                             information measures, probability for the variance-type ones), the
                             queried items as a rug and the k-th best score as a line.

The data functions (`combination_segments`, `change_points`, `histogram_series`, `score_axis`)
are pure and return plain values, so what a report shows can be tested without reading pixels;
`learning_figure` / `acquisition_figure` return the Figure before it is saved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.errors import DataError

Curve = Sequence[tuple[float, float]]  # [(x = labelled items, y = metric), ...]

NATS = "nats"
PROBABILITY = "probability"

# acquisition name -> (what its score is, its unit). Every score is "larger = more worth asking".
_SCORE_AXES: dict[str, tuple[str, str]] = {
    "bald": ("BALD I[y; θ | x]", NATS),
    "batch-bald": ("BALD I[y; θ | x] (batch-bald's pre-filter score)", NATS),
    "power-bald": ("BALD I[y; θ | x] (power sampling)", NATS),
    "softmax-bald": ("BALD I[y; θ | x] (softmax sampling)", NATS),
    "softrank-bald": ("BALD I[y; θ | x] (softrank sampling)", NATS),
    "eig": ("expected information gain", NATS),
    "entropy": ("predictive entropy H[y | x]", NATS),
    "power-entropy": ("predictive entropy H[y | x] (power sampling)", NATS),
    "epig": ("EPIG E_x* I[y; y* | x, x*]", NATS),
    "power-epig": ("EPIG E_x* I[y; y* | x, x*] (power sampling)", NATS),
    "variance": ("total variance 1 − Σ p̄²", PROBABILITY),
    "mean-std": ("mean STD of the class probabilities", PROBABILITY),
    "variation-ratio": ("variation ratio 1 − modal vote share", PROBABILITY),
    "margin": ("1 − margin of the two likeliest classes", PROBABILITY),
    "power-margin": ("1 − margin of the two likeliest classes (power sampling)", PROBABILITY),
    "least-confidence": ("1 − largest mean class probability", PROBABILITY),
    "nipv": ("integrated posterior variance reduction", "squared target units"),
    "auto": ("score of the round's chosen strategy (0: its random share)", "the strategy's unit"),
}
_REGRESSION_AXES: dict[str, tuple[str, str]] = {
    "variance": ("predictive variance", "squared target units"),
    "entropy": ("predictive differential entropy", NATS),
    "power-entropy": ("predictive differential entropy (power sampling)", NATS),
}
_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")


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


# ---- units --------------------------------------------------------------------------------------
def score_axis(acquisition: str, task: str = "classification") -> str:
    """The x-axis label of an acquisition's scores, naming the quantity and its unit.

    >>> score_axis("bald")
    'BALD I[y; θ | x] (nats)'
    >>> score_axis("variation_ratio")
    'variation ratio 1 − modal vote share (probability)'
    >>> score_axis("variance", task="regression")
    'predictive variance (squared target units)'
    >>> score_axis("my_score")
    'my_score score (unit unknown)'
    """
    key = acquisition.strip().lower().replace("_", "-")
    found = (_REGRESSION_AXES.get(key) if task == "regression" else None) or _SCORE_AXES.get(key)
    quantity, unit = found or (f"{acquisition} score", "unit unknown")
    return f"{quantity} ({unit})"


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
    figure = _figure()
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
    return _save(learning_figure(curves, ylabel=ylabel, xlabel=xlabel, title=title, estimate=estimate), path)


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


# ---- acquisition histograms ---------------------------------------------------------------------
@dataclass(frozen=True)
class HistogramSeries:
    """One acquisition's panel: the scores of every candidate of one round, binned.

    counts [bins] over edges [bins + 1] (finite scores only; `n_nonfinite` counts the rest);
    `queried` the scores of the round's queried items among those candidates, by rank;
    `threshold` the k-th best candidate score for k = len(queried) (what a top-k would cut at).
    """

    acquisition: str
    round: int
    xlabel: str
    counts: np.ndarray
    edges: np.ndarray
    queried: np.ndarray
    threshold: float | None
    n_candidates: int
    n_nonfinite: int = 0
    title: str = ""


def histogram_series(
    acquisition: str,
    round_number: int,
    item_ids: Sequence[int] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    queried_ids: Sequence[int] = (),
    *,
    task: str = "classification",
    bins: int = 50,
    title: str = "",
) -> HistogramSeries:
    """Bin one round's candidate scores (`item_ids` [N], `scores` [N], as `PoolStore.round_scores`
    returns them) and locate the queried items (`queried_ids`, by rank) among them; queried ids
    that are not among the candidates are left out. DataError without a finite score.

    >>> s = histogram_series("bald", 3, [10, 11, 12, 13], [0.0, 3.0, 1.0, 2.0], [11, 13], bins=3)
    >>> s.counts.tolist(), s.edges.tolist(), s.queried.tolist(), s.threshold, s.xlabel
    ([1, 1, 2], [0.0, 1.0, 2.0, 3.0], [3.0, 2.0], 2.0, 'BALD I[y; θ | x] (nats)')
    """
    ids = np.asarray(item_ids, dtype=np.int64).reshape(-1)
    values = np.asarray(scores, dtype=np.float64).reshape(-1)
    if ids.shape != values.shape:
        raise DataError(f"scores: expected one score per item id ({len(ids)}), got {len(values)}")
    finite = np.isfinite(values)
    if not finite.any():
        raise DataError(f"scores: round {round_number} ({acquisition}) has no finite candidate score")
    kept = values[finite]
    low, high = float(kept.min()), float(kept.max())
    if high <= low:  # every score equal: one bin around it
        low, high = low - 0.5 * (abs(low) or 1.0) * 1e-3, high + 0.5 * (abs(high) or 1.0) * 1e-3
    counts, edges = np.histogram(kept, bins=max(1, min(int(bins), kept.size)), range=(low, high))
    position = {int(i): p for p, i in enumerate(ids.tolist())}
    found = [position[int(q)] for q in queried_ids if int(q) in position]
    queried = values[np.asarray(found, dtype=np.int64)] if found else np.empty(0)
    queried = queried[np.isfinite(queried)]
    k = len(queried)
    threshold = float(np.sort(kept)[::-1][min(k, kept.size) - 1]) if k else None
    return HistogramSeries(
        acquisition, int(round_number), score_axis(acquisition, task), counts, edges, queried, threshold,
        int(values.size), int((~finite).sum()), title,
    )  # fmt: skip


def acquisition_figure(panels: Sequence[HistogramSeries], *, title: str | None = None):
    """One histogram panel per `HistogramSeries`, stacked, each on its own x-axis with its unit;
    the queried items drawn as a red rug, the k-th best score as a dashed line; y is on a log
    scale (a few queried items sit in the tail of tens of thousands of candidates)."""
    if not panels:
        raise DataError("panels: expected at least one acquisition histogram, got none")
    figure = _figure(6.4, 1.0 + 2.9 * len(panels))
    grid = figure.subplots(len(panels), 1, squeeze=False)
    for axes, panel in zip(grid[:, 0], panels):
        axes.stairs(panel.counts, panel.edges, fill=True, color="#4C72B0", alpha=0.85,
                    label=f"all {panel.n_candidates:,} candidates")  # fmt: skip
        if panel.counts.max() > 0:
            axes.set_yscale("log")
            axes.set_ylim(0.7, panel.counts.max() * 1.6)
        if len(panel.queried):
            axes.vlines(panel.queried, 0.0, 0.12, transform=axes.get_xaxis_transform(), color="#C44E52",
                        linewidth=1.2, label=f"queried ({len(panel.queried)})")  # fmt: skip
        if panel.threshold is not None:
            axes.axvline(panel.threshold, color="#C44E52", linestyle="--", linewidth=1.0,
                         label=f"top-{len(panel.queried)} cut-off")  # fmt: skip
        axes.set_xlabel(panel.xlabel)
        axes.set_ylabel("candidates")
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
        head = panel.title or f"{panel.acquisition}: round {panel.round}"
        if panel.n_nonfinite:
            head += f" ({panel.n_nonfinite} non-finite scores left out)"
        axes.set_title(head, fontsize="medium")
    if title:
        figure.suptitle(title)
    return figure


def plot_acquisition_histograms(panels: Sequence[HistogramSeries], path: str | Path, *, title: str | None = None) -> Path:
    """Write `acquisition_figure(panels)` to a PNG; returns its path."""
    return _save(acquisition_figure(panels, title=title), path)


def plot_acquisition_histogram(
    scores: Sequence[float],
    path: str | Path,
    *,
    chosen: Sequence[float] = (),
    acquisition: str = "score",
    title: str | None = None,
    bins: int = 40,
) -> Path:
    """Write a histogram of one acquisition's scores [N] over the pool to a PNG; returns its path.

    Args:
        scores: the score of every scored candidate (of ONE acquisition: one unit on the axis).
        chosen: the scores of the candidates the round asked about, drawn as vertical lines.
        acquisition: the acquisition's name, for the axis label and its unit (`score_axis`).
    """
    values = [float(s) for s in scores if math.isfinite(float(s))]
    if not values:
        raise DataError("scores: expected at least one finite acquisition score, got none")
    figure = _figure()
    axes = figure.add_subplot()
    axes.hist(values, bins=max(1, min(bins, len(values))), color="#4C72B0", alpha=0.85)
    for i, value in enumerate(chosen):
        axes.axvline(float(value), color="#C44E52", linewidth=0.8, alpha=0.7, label="chosen" if i == 0 else None)
    axes.set_xlabel(score_axis(acquisition) if acquisition != "score" else "score")
    axes.set_ylabel("candidates")
    axes.grid(True, alpha=0.3)
    if len(chosen):
        axes.legend()
    if title:
        axes.set_title(title)
    return _save(figure, path)


def round_mapping(info: Any) -> dict[str, Any]:
    """A `RoundInfo` as the mapping `combination_segments` reads (number, posterior, acquisition,
    labelled, and its metrics)."""
    return {
        **dict(info.metrics or {}), "number": info.number, "posterior": info.posterior,
        "acquisition": info.acquisition, "labelled": info.labelled_count,
    }  # fmt: skip
