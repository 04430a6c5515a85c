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
        (torch.empty(0, 3, 2), None, r"at least one of S, posterior samples"),  # bald of it divided by S = 0
        (torch.empty(2, 3, 0), None, r"at least one of C, outcome classes"),
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
    with pytest.raises(ShapeError, match="at least one of S"):
        GaussianPredictive(torch.zeros(0, 4), torch.ones(0, 4))
    assert Predictive(torch.empty(3, 0, 2)).n_candidates == 0  # an empty pool batch is fine


def test_empty_pools_and_k_0_give_empty_selections():
    from activebayes.acquisition import bald, batch_bald

    assert len(batch_bald(torch.empty(4, 0, 3), 0)) == 0  # was torch.cat's "expected a non-empty list"
    assert len(batch_bald(torch.full((4, 5, 3), 1 / 3), 0)) == 0
    assert bald(torch.empty(2, 0, 3)).shape == (0,)


def test_bare_tensor_becomes_equal_weight_predictive():
    pred = as_predictive(torch.full((4, 2, 3), 1 / 3))
    assert isinstance(pred, Predictive)
    assert torch.allclose(pred.sample_weights(), torch.full((4,), 0.25))
    with pytest.raises(ShapeError, match="Predictive"):
        as_predictive([1, 2])


def _latent_pred(**kw):
    mean = torch.tensor([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
    var = torch.full((2, 3), 0.25)
    latent = {"latent_mean": torch.tensor([0.5, 1.5, 2.5]), "latent_var": torch.tensor([0.25, 0.0, 4.0])}
    return GaussianPredictive(mean, var, torch.tensor([0.5, 0.5]), **{**latent, **kw})


def test_gaussian_latent_fields_default_to_none_and_are_carried():
    plain = GaussianPredictive(torch.zeros(2, 3), torch.ones(2, 3))
    assert plain.latent_mean is None and plain.latent_var is None and not plain.has_latent
    assert not plain.to("cpu").has_latent and not plain.candidates([0]).has_latent
    pred = _latent_pred()
    assert pred.has_latent
    moved = pred.to("cpu")
    assert torch.equal(moved.latent_mean, pred.latent_mean) and torch.equal(moved.latent_var, pred.latent_var)
    picked = pred.candidates(torch.tensor([2, 0]))
    assert torch.equal(picked.latent_mean, torch.tensor([2.5, 0.5]))
    assert torch.equal(picked.latent_var, torch.tensor([4.0, 0.25]))
    assert torch.equal(picked.mean, pred.mean[:, [2, 0]])
    sliced = pred.candidates(slice(1, 3))
    assert torch.equal(sliced.latent_var, torch.tensor([0.0, 4.0]))


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"latent_var": None}, "latent_var: expected it together with latent_mean"),
        ({"latent_mean": None}, "latent_mean: expected it together with latent_var"),
        ({"latent_mean": torch.zeros(3, 1)}, "latent_mean: expected 1 dimensions"),
        ({"latent_var": torch.ones(4)}, "latent_var: expected N=3"),
        ({"latent_mean": torch.tensor([0.0, float("nan"), 0.0])}, "latent_mean: contains NaN"),
        ({"latent_var": torch.tensor([1.0, float("inf"), 1.0])}, "latent_var: contains NaN"),
        ({"latent_var": torch.tensor([1.0, -1e-3, 1.0])}, "latent_var: expected variances >= 0"),
        ({"latent_mean": torch.zeros(3, dtype=torch.long)}, "latent_mean: expected a floating-point"),
        ({"latent_var": [1.0, 1.0, 1.0]}, "latent_var: expected a torch.Tensor"),
    ],
)
def test_gaussian_bad_latent_fields_raise(fields, message):
    with pytest.raises(ShapeError, match=message):
        _latent_pred(**fields)


def test_gaussian_latent_fields_need_equal_noise_across_samples():
    latent = {"latent_mean": torch.zeros(2), "latent_var": torch.ones(2)}
    with pytest.raises(ShapeError, match="same noise variance"):
        GaussianPredictive(torch.zeros(2, 2), torch.tensor([[1.0, 1.0], [1.0, 2.0]]), **latent)
    GaussianPredictive(torch.zeros(2, 2), torch.tensor([[1.0, 2.0], [1.0, 2.0]]), **latent)  # may vary over n
