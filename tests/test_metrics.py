import math

import pytest
import torch
from sklearn.metrics import roc_auc_score

from activebayes.errors import ShapeError
from activebayes.metrics import accuracy, auroc, brier, expected_calibration_error, nll

PROBS = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.4, 0.35, 0.25], [0.05, 0.05, 0.9]])
LABELS = torch.tensor([0, 2, 1, 2])


def test_accuracy_nll_brier_by_hand():
    assert float(accuracy(PROBS, LABELS)) == pytest.approx(0.5)
    expected_nll = -(math.log(0.7) + math.log(0.3) + math.log(0.35) + math.log(0.9)) / 4
    assert float(nll(PROBS, LABELS)) == pytest.approx(expected_nll)
    rows = [
        0.3**2 + 0.2**2 + 0.1**2,
        0.1**2 + 0.6**2 + 0.7**2,
        0.4**2 + 0.65**2 + 0.25**2,
        0.05**2 + 0.05**2 + 0.1**2,
    ]
    assert float(brier(PROBS, LABELS)) == pytest.approx(sum(rows) / 4)


def test_brier_extremes_and_nll_clamp():
    onehot = torch.eye(3)
    assert float(brier(onehot, torch.arange(3))) == 0.0
    assert float(brier(onehot, torch.tensor([1, 2, 0]))) == pytest.approx(2.0)
    assert math.isfinite(float(nll(onehot, torch.tensor([1, 2, 0]))))


def test_ece_by_hand():
    # confidences 0.7, 0.6, 0.4, 0.9 with 5 bins (0.2 wide): bins 3, 2, 1, 4 (0-based), all singletons;
    # correct: yes, no, no, yes -> ECE = (|1-0.7| + |0-0.6| + |0-0.4| + |1-0.9|) / 4
    assert float(expected_calibration_error(PROBS, LABELS, n_bins=5)) == pytest.approx((0.3 + 0.6 + 0.4 + 0.1) / 4)
    # one bin: |accuracy - mean confidence|
    assert float(expected_calibration_error(PROBS, LABELS, n_bins=1)) == pytest.approx(abs(0.5 - (0.7 + 0.6 + 0.4 + 0.9) / 4))


def test_ece_shared_bin_and_edges():
    probs = torch.tensor([[0.62, 0.38], [0.66, 0.34], [1.0, 0.0], [0.5, 0.5]])
    labels = torch.tensor([0, 1, 0, 1])
    # 10 bins: 0.62 and 0.66 share (0.6, 0.7]: acc 0.5, conf 0.64; 1.0 in the last bin; 0.5 in (0.4, 0.5]
    expected = 2 / 4 * abs(0.5 - 0.64) + 1 / 4 * 0.0 + 1 / 4 * abs(0.0 - 0.5)
    assert float(expected_calibration_error(probs, labels, n_bins=10)) == pytest.approx(expected)


def test_perfectly_calibrated_ece_zero():
    probs = torch.tensor([[0.75, 0.25]] * 4)
    labels = torch.tensor([0, 0, 0, 1])
    assert float(expected_calibration_error(probs, labels)) == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_matches_sklearn_with_ties(seed):
    g = torch.Generator().manual_seed(seed)
    scores_in = torch.randint(0, 6, (40,), generator=g).double()
    scores_out = torch.randint(2, 9, (25,), generator=g).double()
    y_true = [0] * 40 + [1] * 25
    expected = roc_auc_score(y_true, torch.cat([scores_in, scores_out]).numpy())
    assert float(auroc(scores_in, scores_out)) == pytest.approx(expected, abs=1e-12)


def test_auroc_closed_forms():
    assert float(auroc(torch.tensor([0.1, 0.2]), torch.tensor([0.3, 0.4]))) == 1.0
    assert float(auroc(torch.tensor([0.3, 0.4]), torch.tensor([0.1, 0.2]))) == 0.0
    assert float(auroc(torch.tensor([0.5, 0.5]), torch.tensor([0.5]))) == 0.5


def test_shape_errors_name_the_argument():
    with pytest.raises(ShapeError, match="probs"):
        nll(torch.ones(3), LABELS)
    with pytest.raises(ShapeError, match="labels"):
        brier(PROBS, LABELS[:2])
    with pytest.raises(ShapeError, match="labels"):
        accuracy(PROBS, torch.tensor([0, 1, 2, 3]))
    with pytest.raises(ShapeError, match="scores_out"):
        auroc(torch.ones(3), torch.ones(0))
