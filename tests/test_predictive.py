import pytest
import torch

from activebayes import GaussianPredictive, Predictive, ShapeError
from activebayes.predictive import as_predictive


def test_mean_is_weighted_average_of_samples():
    probs = torch.tensor([[[0.9, 0.1]], [[0.1, 0.9]]])
    assert torch.allclose(Predictive(probs).mean(), torch.tensor([[0.5, 0.5]]))
    weighted = Predictive(probs, torch.tensor([0.75, 0.25]))
    assert torch.allclose(weighted.mean(), torch.tensor([[0.7, 0.3]]))


@pytest.mark.parametrize(
    "probs, weights, message",
    [
        (torch.rand(2, 3), None, "3 dimensions"),
        (torch.tensor([[[0.5, float("nan")]]]), None, "NaN"),
        (torch.tensor([[[1.5, -0.5]]]), None, "negative"),
        (torch.tensor([[[0.5, 0.2]]]), None, "sum to 1"),
        (torch.full((2, 1, 2), 0.5), torch.tensor([0.5, 0.6]), "summing to 1"),
        (torch.full((2, 1, 2), 0.5), torch.tensor([1.0]), "S=2"),
        (torch.full((2, 1, 2), 0.5), torch.tensor([1.5, -0.5]), "non-negative"),
        (torch.ones(1, 1, 2, dtype=torch.long), None, "floating-point"),
    ],
)
def test_invalid_input_raises_clear_error(probs, weights, message):
    with pytest.raises(ShapeError, match=message):
        Predictive(probs, weights)


def test_gaussian_validation():
    GaussianPredictive(torch.zeros(3, 4), torch.ones(3, 4))
    with pytest.raises(ShapeError, match="shape of mean"):
        GaussianPredictive(torch.zeros(3, 4), torch.ones(3, 5))
    with pytest.raises(ShapeError, match="negative"):
        GaussianPredictive(torch.zeros(1, 1), -torch.ones(1, 1))
    with pytest.raises(ShapeError, match="NaN"):
        GaussianPredictive(torch.zeros(1, 1), torch.full((1, 1), float("inf")))


def test_bare_tensor_becomes_equal_weight_predictive():
    pred = as_predictive(torch.full((4, 2, 3), 1 / 3))
    assert isinstance(pred, Predictive)
    assert torch.allclose(pred.sample_weights(), torch.full((4,), 0.25))
    with pytest.raises(ShapeError, match="Predictive"):
        as_predictive([1, 2])
