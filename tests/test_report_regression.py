"""`activebayes report` of a regression project: the learning curve is the test RMSE with the
band of the RMSE estimated from each round's chosen labels (or a note saying why there is none),
and auto's random share keeps the arm's score of its items, so that the round's table and
acquisition.png agree. Assertions are on what is drawn and recorded, not on how well a model fits."""

from __future__ import annotations

import json

import pytest

from cli_checks import ok
from test_cli_regression import regression  # noqa: F401  (the fixture)


@pytest.fixture
def drawn(monkeypatch):
    """The matplotlib figures `report` saves, in order."""
    import activebayes.report as report_module
    import activebayes.score_histograms as histograms_module
    from activebayes.figures import save_png

    figures = []
    for module in (report_module, histograms_module):
        monkeypatch.setattr(module, "save_png", lambda figure, path: (figures.append(figure), save_png(figure, path))[1])
    return figures


def test_report_draws_the_test_rmse_and_the_estimates_band(regression, drawn):  # noqa: F811
    for _ in range(3):
        ok("round", "--oracle", "truth", "--k", "4", "--acquisition", "random")
    estimates = json.loads(ok("--json", "status").stdout)["estimates"]
    assert [len(e["rmse"]) for e in estimates] == [3, 3]  # rounds 2 and 3 fitted a model
    result = ok("report", "--out", "plots")
    assert "no estimate band" not in result.stdout
    axes = drawn[0].axes[0]
    assert axes.get_ylabel() == "rmse"
    band = next(line for line in axes.lines if line.get_linestyle() == "--" and line.get_label().startswith("estimate"))
    assert list(band.get_xdata()) == [e["labelled"] for e in estimates]
    assert list(band.get_ydata()) == pytest.approx([e["rmse"][0] for e in estimates])


def test_report_says_why_a_regression_curve_has_no_band(regression, drawn):  # noqa: F811
    for _ in range(2):
        ok("round", "--oracle", "truth", "--k", "4", "--acquisition", "variance")  # top-k: no draws
    result = ok("report", "--out", "plots")
    text = " ".join(result.stdout.split())
    assert "no estimate band in the learning curve: no round has an estimate from its chosen labels (round 2: not available: the acquisition is deterministic" in text
    assert drawn[0].axes[0].get_ylabel() == "rmse"


def test_an_estimate_with_no_upper_end_is_left_out_of_the_band_and_said_so(regression, drawn):  # noqa: F811
    """Rounds of 2 random draws: the RMSE's interval has no upper end (null in --json, said in the
    text), and report leaves those rounds out of the band with a note instead of drawing to inf."""
    for _ in range(2):
        ok("round", "--oracle", "truth", "--k", "2", "--acquisition", "random")
    estimates = json.loads(ok("--json", "status").stdout)["estimates"]
    assert [e["rmse"][2] for e in estimates] == [None]  # round 2 fitted a model on 2 labels, drew 2
    shown = " ".join(ok("status").stdout.split())
    assert shown.count("no upper end: fewer than 3 of the round's labels were drawn at random") == 1  # one footnote, not one per cell
    assert "`activebayes evaluate --budget 30` sets items apart for an estimate with both ends" in shown
    text = " ".join(ok("report", "--out", "plots").stdout.split())
    assert "round 2's estimate is left out of the learning curve (its interval has no upper end: fewer than 3 of its labels were drawn at random)" in text


def test_auto_random_share_keeps_the_arms_scores():
    """auto's r random draws record the arm's pool score of their items (what acquisition.png
    marks them at), not 0; the arm's own items keep its selection scores."""
    import numpy as np
    import torch

    from activebayes._selection import PoolSelection

    pool_scores = torch.tensor([0.5, 0.1, 0.036, 0.2, 0.9, 0.07])

    class Stub(PoolSelection):
        def _select(self, posterior, rows, k, gen, acq=None):  # the arm: top-k of the pool's scores
            self._pool_scores = pool_scores
            self._draw_probabilities = None
            chosen = torch.topk(pool_scores, k).indices
            return chosen, pool_scores[chosen] + 1.0  # a selection score of its own (e.g. a batch gain)

    stub = Stub()
    chosen, scores = stub._select_auto(None, np.arange(6), 4, torch.Generator().manual_seed(0), {"arm": "variance", "random": 2})
    assert chosen[:2].tolist() == [4, 0] and scores[:2].tolist() == pytest.approx([1.9, 1.5])
    assert scores[2:].tolist() == pytest.approx(pool_scores[chosen[2:]].tolist())  # the random share: pool scores
    assert set(chosen[2:].tolist()) <= {1, 2, 3, 5}
    assert stub._take_draw_probabilities(4) == [None, None, pytest.approx(1 / 4), pytest.approx(1 / 3)]

    class Unscored(Stub):  # an arm that scored no whole pool: the random share is 0, as before
        def _select(self, posterior, rows, k, gen, acq=None):
            chosen, scores = super()._select(posterior, rows, k, gen, acq)
            self._pool_scores = None
            return chosen, scores

    _, scores = Unscored()._select_auto(None, np.arange(6), 4, torch.Generator().manual_seed(0), {"arm": "variance", "random": 2})
    assert scores[2:].tolist() == [0.0, 0.0]
