"""Acquisition histograms of a campaign, written as PNG files.

`histogram_series` bins the scores of EVERY candidate one round scored (`PoolStore.round_scores`),
the queried items located among them; `plot_acquisition_histograms` draws one panel per
acquisition, each with its own x-axis and unit (`score_axis`: nats for the information measures,
probability for the variance-type ones), the queried items as a rug and the k-th best score as a
line.

`histogram_series` and `score_axis` are pure and return plain values (testable without reading
pixels); `acquisition_figure` returns the Figure before it is saved.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from activebayes.errors import DataError
from activebayes.figures import agg_figure, save_png

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
    figure = agg_figure(6.4, 1.0 + 2.9 * len(panels))
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
    return save_png(acquisition_figure(panels, title=title), path)


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
    figure = agg_figure()
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
    return save_png(figure, path)
