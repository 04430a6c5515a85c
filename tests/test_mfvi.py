"""MFVI (activebayes/posteriors/mfvi.py): the closed-form KL, the local reparameterisation's
moments, seeded pool-consistent predictions, the predictive's uncertainty off the data, the
get_params round trip, the fitted (μ, σ) per dense layer and regression."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from activebayes import ConfigError, GaussianPredictive, Predictive
from activebayes.nets import mlp
from activebayes.posteriors import resolve_posterior
from activebayes.posteriors.mfvi import MFVI, VariationalLinear, gaussian_kl, local_reparameterisation_moments
from activebayes.training import TrainConfig

_NET = mlp(2, 2, hidden=(32, 32), dropout=0.0)
_TRAIN = TrainConfig(epochs=100, lr=1e-2, batch_size=100)


@pytest.fixture(scope="module")
def fitted(moons):
    return MFVI(_NET, n_samples=16, kl_weight=0.1, train=_TRAIN, seed=0, device="cpu").fit(*moons)


def _far_points() -> torch.Tensor:
    """24 points on a circle of radius 2.5 around the moons' centre (at least 0.65 from the data)."""
    angle = torch.linspace(0, 2 * torch.pi, 25)[:-1]
    return torch.stack([0.5 + 2.5 * angle.cos(), 0.25 + 2.5 * angle.sin()], dim=1)


def test_registered_as_mfvi():
    assert resolve_posterior("mfvi") is MFVI


def test_gaussian_kl_against_hand_computation_and_torch():
    # KL(N(0.5, 0.2²) ‖ N(0, 1)) = log(1/0.2) + (0.04 + 0.25)/2 − ½
    hand = math.log(5.0) + 0.29 / 2 - 0.5
    assert gaussian_kl(torch.tensor([0.5]), torch.tensor([0.2]), 1.0).item() == pytest.approx(hand, rel=1e-6)
    # prior std 2: log(2/0.2) + (0.04 + 0.25)/8 − ½
    assert gaussian_kl(torch.tensor(0.5), torch.tensor(0.2), 2.0).item() == pytest.approx(math.log(10.0) + 0.29 / 8 - 0.5, rel=1e-6)
    g = torch.Generator().manual_seed(0)
    mean = torch.randn(5, 7, generator=g, dtype=torch.float64)
    std = torch.rand(5, 7, generator=g, dtype=torch.float64) + 0.05
    reference = torch.distributions.kl_divergence(torch.distributions.Normal(mean, std), torch.distributions.Normal(0.0, 1.5)).sum()
    torch.testing.assert_close(gaussian_kl(mean, std, 1.5), reference)
    # a layer's KL is its weight's plus its bias's
    layer = VariationalLinear(nn.Linear(3, 2), init_std=0.3)
    expected = gaussian_kl(layer.weight_mu, torch.full((2, 3), 0.3), 1.0) + gaussian_kl(layer.bias_mu, torch.full((2,), 0.3), 1.0)
    torch.testing.assert_close(layer.kl(1.0), expected)


def test_local_reparameterisation_moments_match_monte_carlo_over_weights():
    g = torch.Generator().manual_seed(1)
    draws = 10_000
    x = torch.randn(4, 3, generator=g, dtype=torch.float64)
    w_mean, b_mean = torch.randn(2, 3, generator=g, dtype=torch.float64), torch.randn(2, generator=g, dtype=torch.float64)
    w_std = torch.rand(2, 3, generator=g, dtype=torch.float64) + 0.1
    b_std = torch.rand(2, generator=g, dtype=torch.float64) + 0.1
    mean, var = local_reparameterisation_moments(x, w_mean, w_std, b_mean, b_std)
    assert mean.shape == var.shape == (4, 2)

    # Monte Carlo over sampled weights: y_d = x W_dᵀ + b_d, W_d, b_d ~ q
    w = w_mean + w_std * torch.randn(draws, 2, 3, generator=g, dtype=torch.float64)
    b = b_mean + b_std * torch.randn(draws, 2, generator=g, dtype=torch.float64)
    y = torch.einsum("ni,doi->dno", x, w) + b[:, None, :]  # [D, 4, 2]
    mc_mean, mc_var = y.mean(0), y.var(0)
    # standard errors: of a mean √(v/D); of a Gaussian sample variance v √(2/(D − 1)); 5 of them
    assert bool(((mc_mean - mean).abs() < 5 * (var / draws).sqrt()).all())
    assert bool(((mc_var - var).abs() < 5 * var * math.sqrt(2 / (draws - 1))).all())

    # the layer's train-mode forward samples pre-activations with these moments
    layer = VariationalLinear(nn.Linear(3, 2), init_std=0.1).double()
    with torch.no_grad():
        layer.weight_mu.copy_(w_mean)
        layer.bias_mu.copy_(b_mean)
        layer.weight_rho.copy_(torch.log(torch.expm1(w_std)))
        layer.bias_rho.copy_(torch.log(torch.expm1(b_std)))
    torch.testing.assert_close(layer.weight_std(), w_std)
    torch.manual_seed(2)
    with torch.no_grad():
        out = layer.train()(x.expand(draws, 4, 3))  # [D, 4, 2], fresh noise per item
        assert torch.equal(layer.eval()(x), mean)  # eval mode: the mean layer
    assert bool(((out.mean(0) - mean).abs() < 5 * (var / draws).sqrt()).all())
    assert bool(((out.var(0) - var).abs() < 5 * var * math.sqrt(2 / (draws - 1))).all())


def test_predictions_are_seeded_and_pool_consistent(fitted, moons):
    x = torch.cat([moons[0][:40], _far_points()])
    whole = fitted.predict(x)
    assert isinstance(whole, Predictive) and whole.probs.shape == (16, 64, 2)
    halves = torch.cat([fitted.predict(x[:23]).probs, fitted.predict(x[23:]).probs], dim=1)
    torch.testing.assert_close(halves, whole.probs, rtol=1e-5, atol=1e-6)
    assert torch.equal(fitted.predict(x).probs, whole.probs)
    # the S samples differ from one another, and a different S draws a fresh, seeded set
    assert not torch.allclose(whole.probs[0], whole.probs[1])
    assert torch.equal(fitted.predict(x, n_samples=5).probs, fitted.predict(x, n_samples=5).probs)
    # weight samples: θ_s = μ + σ ε_s, shape [S, *shape] for every dense weight and bias
    samples = fitted.sample_weights(16)
    assert set(samples) == set(fitted.std_)
    assert samples["1.weight"].shape == (16, 32, 2)


def test_predictive_entropy_is_higher_far_from_the_data(fitted, moons):
    def entropy(p: torch.Tensor) -> torch.Tensor:
        return -(p * p.clamp_min(1e-12).log()).sum(-1)

    at_data = entropy(fitted.predict(moons[0]).mean())
    far = entropy(fitted.predict(_far_points()).mean())
    assert far.mean() > at_data.mean()


def test_get_params_and_clone_round_trip(fitted, moons):
    params = fitted.get_params()
    assert params["prior_std"] == 1.0 and params["kl_weight"] == 0.1 and params["kl_anneal_epochs"] == 0
    copy = fitted.clone()
    assert type(copy) is MFVI and copy.get_params() == params and copy.std_ is None
    again = MFVI(**params).fit(*moons)
    x = moons[0][:10]
    assert torch.equal(again.predict(x).probs, fitted.predict(x).probs)


def test_mean_std_gives_each_dense_layer_its_diagonal_gaussian(fitted):
    q = fitted.mean_std()
    assert list(q) == ["1", "4", "7"]  # mlp: Flatten, then Linear / ReLU / Dropout per hidden layer
    layer = q["4"]
    assert layer.weight_mean.shape == layer.weight_std.shape == (32, 32)
    assert layer.bias_mean.shape == layer.bias_std.shape == (32,)
    assert torch.equal(layer.weight_mean, fitted.model_[4].weight.detach())
    assert bool((layer.weight_std > 0).all()) and bool((layer.bias_std > 0).all())
    # training moved σ away from its initial value
    assert not torch.allclose(layer.weight_std, torch.full_like(layer.weight_std, 0.05))


def test_kl_annealing_changes_the_fit_and_conv_layers_stay_deterministic(moons):
    x, y = moons
    config = TrainConfig(epochs=4, lr=1e-2, batch_size=50)
    plain = MFVI(_NET, n_samples=4, train=config, seed=3, device="cpu").fit(x, y)
    annealed = MFVI(_NET, n_samples=4, kl_anneal_epochs=4, train=config, seed=3, device="cpu").fit(x, y)
    assert not torch.equal(plain.predict(x[:5]).probs, annealed.predict(x[:5]).probs)

    def conv_net() -> nn.Module:
        return nn.Sequential(nn.Unflatten(1, (1, 2)), nn.Conv1d(1, 4, 2), nn.Flatten(), nn.ReLU(), nn.Linear(4, 2))

    conv = MFVI(conv_net, n_samples=4, train=config, seed=0, device="cpu").fit(x, y)
    assert set(conv.std_) == {"4.weight", "4.bias"}  # the convolution is a point estimate
    assert conv.predict(x[:3]).probs.shape == (4, 3, 2)
    with pytest.raises(ConfigError, match="^model_fn: .*nn.Linear"):
        MFVI(lambda: nn.Sequential(nn.Flatten()), train=config, seed=0, device="cpu").fit(x, y)


def mean_field_optimum(x: torch.Tensor, y: torch.Tensor, prior_std: float = 1.0):
    """The closed-form optimum of MFVI's objective for Bayesian linear regression y = [x, 1] w + ε
    with the noise σ² learnt: for a fixed σ² the mean-field q has the exact posterior's mean
    m = Λ⁻¹ Xᵀy / σ² and variances 1 / Λ_ii (Λ = XᵀX / σ² + I / s²), and σ² = (Σ_n E_q (y_n − x_nᵀw)²
    + ν s0²) / (N + ν) for that q; iterated to the fixed point. Returns (m, sd, σ²) in float64."""
    from activebayes.gaussian_likelihood import NOISE_PRIOR_COUNT, NOISE_PRIOR_FRACTION, target_scale

    X, yd = torch.cat([x, torch.ones(len(x), 1)], 1).double(), y.double()
    nu, s0 = NOISE_PRIOR_COUNT, NOISE_PRIOR_FRACTION * target_scale(y)
    noise = 1.0
    for _ in range(200):
        precision = X.T @ X / noise + torch.eye(X.shape[1], dtype=torch.float64) / prior_std**2
        m, v = torch.linalg.solve(precision, X.T @ yd / noise), 1 / torch.diagonal(precision)
        noise = float((((yd - X @ m) ** 2).sum() + ((X**2) @ v).sum() + nu * s0) / (len(y) + nu))
    return m, v.sqrt(), noise


@pytest.mark.parametrize("seed", [0, 1])
def test_regression_noise_is_learnt_with_q_to_the_closed_form_optimum(seed):
    """One dense layer on a linear-Gaussian problem: MFVI's q and σ² reach the mean-field optimum
    (noise sd 0.5, N = 200: σ² within 3 %, means within a posterior sd, sds within 20 %). With σ²
    fixed at 1 in training, as before, the sds came out at twice the optimum's."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(200, 3, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.3 + 0.5 * torch.randn(200, generator=g)
    m, sd, noise = mean_field_optimum(x, y)
    vi = MFVI(lambda: nn.Linear(3, 1), n_samples=8, seed=seed, device="cpu",
              train=TrainConfig(epochs=600, lr=1e-2, batch_size=200)).fit(x, y)  # fmt: skip
    q = vi.mean_std()[""]
    mean = torch.cat([q.weight_mean.reshape(-1), q.bias_mean]).double()
    std = torch.cat([q.weight_std.reshape(-1), q.bias_std]).double()
    assert vi.noise_ == pytest.approx(noise, rel=0.03)
    assert bool(((mean - m).abs() < sd).all()), (mean, m, sd)
    assert bool(((std / sd - 1).abs() < 0.2).all()), (std, sd)
    assert bool((vi.predict(x[:4]).var == vi.noise_).all())  # the σ² q was trained with is the one predicted


def test_regression_predicts_a_gaussian_with_the_fitted_noise():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(80, 1, generator=g) * 4 - 2
    y = torch.sin(2 * x[:, 0]) + 0.1 * torch.randn(80, generator=g)
    vi = MFVI(lambda: nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1)), n_samples=8, kl_weight=0.1,
              train=TrainConfig(epochs=150, lr=1e-2, batch_size=40), seed=0, device="cpu").fit(x, y)
    assert vi.likelihood_ == "gaussian" and 0 < vi.noise_ < float(y.var())
    pred = vi.predict(x[:6])
    assert isinstance(pred, GaussianPredictive) and pred.mean.shape == pred.var.shape == (8, 6)
    assert torch.allclose(pred.var, torch.full((8, 6), vi.noise_))
    mean, var = vi.predict_mean_var(x[:6])
    assert mean.shape == var.shape == (6,) and bool((var > 0).all())
