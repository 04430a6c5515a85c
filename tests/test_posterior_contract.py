"""The contract every posterior follows (activebayes/posteriors/base.py), run over all of them.

To add a posterior, append one entry to POSTERIOR_CASES:

    pytest.param(factory, id="cli-name")

where factory(seed: int) returns an UNFITTED posterior for 2-feature, 2-class inputs (the
two-moons data of the `moons` fixture, 200 points), configured so that `fit` takes about a
second on a CPU core and `predict` returns S >= 2 samples.
"""

from __future__ import annotations

import pytest
import torch

from activebayes import NotFittedError, Predictive
from activebayes.nets import mlp
from activebayes.posteriors import SWAG, DeepEnsemble, Laplace, MCDropout, SnapshotEnsemble

_NET = mlp(2, 2, hidden=(32, 32), dropout=0.2)

POSTERIOR_CASES = [
    pytest.param(
        lambda seed: MCDropout(_NET, n_samples=16, epochs=100, lr=1e-2, batch_size=100, seed=seed, device="cpu"),
        id="mc-dropout",
    ),
    pytest.param(
        lambda seed: DeepEnsemble(_NET, n_members=4, epochs=60, lr=1e-2, batch_size=100, seed=seed, device="cpu"),
        id="deep-ensemble",
    ),
    pytest.param(
        lambda seed: SnapshotEnsemble(
            _NET, n_snapshots=4, epochs_per_cycle=25, lr_max=2e-2, batch_size=100, seed=seed, device="cpu"
        ),
        id="snapshot-ensemble",
    ),
    pytest.param(
        lambda seed: Laplace(_NET, hessian="full", prior_precision=1.0, n_samples=16, epochs=100, lr=1e-2, batch_size=100, seed=seed, device="cpu"),
        id="laplace",
    ),
    pytest.param(
        lambda seed: SWAG(
            _NET, rank=10, n_snapshots=20, n_samples=16, epochs=100, lr=1e-2, batch_size=100, seed=seed,
            device="cpu",
        ),
        id="swag",
    ),
]

_FITTED: dict[str, object] = {}


@pytest.fixture(params=POSTERIOR_CASES)
def case(request):
    return request.node.callspec.id, request.param


@pytest.fixture
def fitted(case, moons):
    """The case's posterior fitted on two moons with seed 0, fitted once per test session."""
    name, factory = case
    if name not in _FITTED:
        _FITTED[name] = factory(0).fit(*moons)
    return _FITTED[name]


def _far_points() -> torch.Tensor:
    """24 points on a circle of radius 2.5 around the moons' centre (0.5, 0.25); the data lie
    within 1.85 of that centre, so every point is at least 0.65 away from them."""
    angle = torch.linspace(0, 2 * torch.pi, 25)[:-1]
    return torch.stack([0.5 + 2.5 * angle.cos(), 0.25 + 2.5 * angle.sin()], dim=1)


def test_predict_before_fit_raises(case, moons):
    _, factory = case
    posterior = factory(0)
    with pytest.raises(NotFittedError, match="fit"):
        posterior.predict(moons[0][:3])
    with pytest.raises(NotFittedError):
        posterior.predict_proba(moons[0][:3])


def test_predictive_shapes_and_rows(fitted, moons):
    x = moons[0][:7]
    pred = fitted.predict(x)
    assert isinstance(pred, Predictive)
    S, N, C = pred.probs.shape
    assert S >= 2 and N == 7 and C == 2
    assert torch.allclose(pred.probs.sum(-1), torch.ones(S, N), atol=1e-5)
    assert bool((pred.probs >= 0).all())
    Predictive(pred.probs)  # passes the validating constructor
    proba = fitted.predict_proba(x)
    assert proba.shape == (7, 2)
    assert torch.allclose(proba.sum(-1), torch.ones(7), atol=1e-5)
    assert fitted.predict(x, n_samples=2).probs.shape == (2, 7, 2)


def test_fitted_posterior_classifies_training_data(fitted, moons):
    x, y = moons
    accuracy = (fitted.predict_proba(x).argmax(-1) == y).float().mean()
    assert accuracy > 0.95


def test_fit_returns_self_and_same_seed_gives_identical_predictions(case, fitted, moons):
    _, factory = case
    again = factory(0)
    assert again.fit(*moons) is again
    x = torch.cat([moons[0][:20], _far_points()])
    assert torch.equal(fitted.predict(x).probs, again.predict(x).probs)
    assert torch.equal(fitted.predict(x).probs, fitted.predict(x).probs)  # predict itself is repeatable


def test_to_device_keeps_the_predictions(case, fitted, moons):
    """Every posterior has to(device) -> self; moving a fitted posterior (here to the CPU it is on;
    tests/test_devices.py moves them to CUDA when present) keeps its samples."""
    _, factory = case
    with pytest.raises(NotFittedError):
        factory(0).to("cpu")
    posterior = fitted
    x = moons[0][:11]
    before = posterior.predict(x).probs
    assert posterior.to("cpu") is posterior
    after = posterior.predict(x).probs
    assert after.device.type == "cpu"
    torch.testing.assert_close(after, before)


def test_predictions_independent_of_batch_split(fitted, moons):
    x = torch.cat([moons[0][:50], _far_points()])
    whole = fitted.predict(x).probs
    parts = torch.cat([fitted.predict(x[i : i + 9]).probs for i in range(0, x.shape[0], 9)], dim=1)
    reversed_order = fitted.predict(x.flip(0)).probs.flip(1)
    torch.testing.assert_close(parts, whole, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(reversed_order, whole, rtol=1e-5, atol=1e-6)


def test_bald_far_from_data_exceeds_bald_on_training_points(fitted, moons, bald):
    train_bald = bald(fitted.predict(moons[0]))
    far_bald = bald(fitted.predict(_far_points()))
    # ReLU networks stay confident in many directions far away, so compare averages: the
    # posterior disagrees with itself off the data, on average, well beyond its disagreement on it
    assert far_bald.mean() > 2 * train_bald.mean()
    assert far_bald.max() > train_bald.max()
