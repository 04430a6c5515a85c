"""activebayes.report: learning-curve and acquisition-histogram PNGs, written without global state."""

from __future__ import annotations

import math

import matplotlib
import pytest
from matplotlib.image import imread

from activebayes.errors import DataError
from activebayes.report import (
    Segment,
    curve_from_rounds,
    histogram_series,
    plot_acquisition_histogram,
    plot_acquisition_histograms,
    plot_learning_curves,
    plot_learning_segments,
)


def test_curve_from_rounds_sorts_and_skips_incomplete_rounds():
    rounds = [
        {"labelled": 30, "accuracy": 0.8},
        {"labelled": 0},  # the cold-start round has no metric
        {"labelled": 20, "accuracy": 0.7},
        {"labelled": 40, "accuracy": math.nan},
        {"labelled": 50, "accuracy": "n/a"},
        {"accuracy": 0.9},
    ]
    assert curve_from_rounds(rounds, x_key="labelled") == [(20.0, 0.7), (30.0, 0.8)]
    assert curve_from_rounds([{"n_labelled": 5, "nll": 1.5}], metric="nll") == [(5.0, 1.5)]


def test_learning_curves_png(tmp_path):
    backend = matplotlib.get_backend()
    path = plot_learning_curves(
        {"bald": [(20, 0.6), (30, 0.7), (40, 0.8)], "random": [(20, 0.6), (30, 0.65)], "empty": []},
        tmp_path / "sub" / "curve.png",
        title="t",
    )
    assert path == tmp_path / "sub" / "curve.png"
    image = imread(path)
    assert image.shape[:2] == (round(4.2 * 110), round(6.4 * 110))  # figsize x dpi
    assert image[..., :3].std() > 0.05  # something is drawn
    assert matplotlib.get_backend() == backend  # no global backend switch


def test_acquisition_histogram_png(tmp_path):
    scores = [0.01 * i for i in range(100)] + [math.nan]
    path = plot_acquisition_histogram(scores, tmp_path / "h.png", chosen=[0.99, 0.98], acquisition="bald")
    assert imread(path).shape[:2] == (462, 704)
    one = plot_acquisition_histogram([0.5], tmp_path / "one.png")  # a single score still plots
    assert one.exists()


@pytest.mark.parametrize(
    "call",
    [
        lambda d: plot_learning_curves({}, d / "a.png"),
        lambda d: plot_learning_curves({"x": []}, d / "a.png"),
        lambda d: plot_learning_curves({"x": [(1, 0.5)]}, d / "a.jpg"),
        lambda d: plot_acquisition_histogram([], d / "a.png"),
        lambda d: plot_acquisition_histogram([math.nan, math.inf], d / "a.png"),
        lambda d: plot_learning_segments({"x": []}, d / "a.png"),
        lambda d: plot_learning_segments({"x": [Segment("p + a", (1,), ((1.0, 0.5),))]}, d / "a.jpg"),
        lambda d: plot_acquisition_histograms([], d / "a.png"),
    ],
)
def test_bad_input_raises_data_error_and_writes_nothing(tmp_path, call):
    with pytest.raises(DataError):
        call(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_segment_and_panel_pngs(tmp_path):
    backend = matplotlib.get_backend()
    segments = [Segment("mc + bald", (2, 3), ((10, 0.5), (20, 0.6))), Segment("mc + entropy", (4,), ((30, 0.7),))]
    curve = plot_learning_segments({"p": segments}, tmp_path / "curve.png", title="p")
    assert imread(curve).shape[:2] == (462, 704) and imread(curve)[..., :3].std() > 0.05
    panels = [histogram_series("bald", 2, range(300), [i / 300 for i in range(300)], [299, 298]),
              histogram_series("margin", 3, range(50), [0.5] * 50, [7])]  # fmt: skip
    hist = plot_acquisition_histograms(panels, tmp_path / "deep" / "acq.png", title="p")
    assert imread(hist).shape[:2] == (round((1.0 + 2.9 * 2) * 110), 704)  # one panel per acquisition
    assert matplotlib.get_backend() == backend
