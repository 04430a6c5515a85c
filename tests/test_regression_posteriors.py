"""Regression (Gaussian likelihood, float targets) through the network posteriors.

Closed forms and hand-computed cases: the Gaussian NLL, the MAP noise, the mixture moments, and
last-layer Laplace against exact Bayesian linear regression on fixed features (and against
laplace-torch's regression GLM predictive). Then the regression contract over every network
posterior (shapes, devices, seeding, batch independence), with the only training-outcome check
a noise estimate within a factor 2 on an easy problem.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from activebayes import ConfigError, NotFittedError, ShapeError
from activebayes.gaussian_likelihood import (
    NOISE_FLOOR_FRACTION,
    NOISE_PRIOR_COUNT,
    NOISE_PRIOR_FRACTION,
    fit_noise_variance,
    gaussian_nll,
    resolve_likelihood,
)
from activebayes.nets import mlp
from activebayes.posteriors import SWAG, DeepEnsemble, Laplace, MCDropout, SnapshotEnsemble
from activebayes.predictive import GaussianPredictive
from activebayes.training import TrainConfig

F64 = torch.float64
NOISE_STD = 0.3


# ------------------------------------------------------------------------ the pieces, closed form
def test_gaussian_nll_is_the_formula():
    g = torch.Generator().manual_seed(0)
    mean, y = torch.randn(7, 1, generator=g, dtype=F64), torch.randn(7, generator=g, dtype=F64)
    for log_var in (-2.0, 0.0, 1.5):
        var = math.exp(log_var)
        expected = sum(0.5 * math.log(2 * math.pi * var) + (float(y[i]) - float(mean[i, 0])) ** 2 / (2 * var) for i in range(7)) / 7
        assert float(gaussian_nll(mean, y, log_var)) == pytest.approx(expected, rel=1e-12)
        torch_ref = nn.functional.gaussian_nll_loss(mean[:, 0], y, torch.full((7,), var, dtype=F64), full=True)
        assert float(gaussian_nll(mean, y, torch.tensor(log_var))) == pytest.approx(float(torch_ref), rel=1e-12)


def test_noise_variance_map_with_prior_and_floor():
    y = torch.tensor([0.0, 1.0, 2.0, 3.0])  # Var(y) = 1.25
    r = torch.tensor([0.1, -0.2, 0.3, 0.0])
    expected = (0.14 + NOISE_PRIOR_COUNT * NOISE_PRIOR_FRACTION * 1.25) / (4 + NOISE_PRIOR_COUNT)
    assert fit_noise_variance(r, y) == pytest.approx(expected, rel=1e-6)
    # a perfectly fitted set keeps the prior's share, never 0
    perfect = fit_noise_variance(torch.zeros(4), y)
    assert perfect == pytest.approx(NOISE_PRIOR_COUNT * NOISE_PRIOR_FRACTION * 1.25 / (4 + NOISE_PRIOR_COUNT), rel=1e-6)
    assert perfect >= NOISE_FLOOR_FRACTION * 1.25
    # constant targets (and a single one) take the scale 1
    assert fit_noise_variance(torch.zeros(1), torch.tensor([3.0])) == pytest.approx(NOISE_PRIOR_FRACTION / 2)
    assert fit_noise_variance(torch.zeros(3), torch.full((3,), 2.0)) > 0
    # many points: the prior vanishes, σ² -> mean squared residual
    big = torch.full((10_000,), 0.3)
    assert fit_noise_variance(big, torch.randn(10_000, generator=torch.Generator().manual_seed(0))) == pytest.approx(0.09, rel=1e-3)


def test_mixture_mean_and_total_variance_by_hand():
    mean = torch.tensor([[0.0, 1.0], [2.0, 1.0]])
    var = torch.tensor([[1.0, 0.5], [3.0, 0.5]])
    mu, total = GaussianPredictive(mean, var).moments()
    torch.testing.assert_close(mu, torch.tensor([1.0, 1.0]))
    torch.testing.assert_close(total, torch.tensor([2.0 + 1.0, 0.5]))  # E var + Var mean
    torch.testing.assert_close(GaussianPredictive(mean, var).moments(observation_noise=False)[1], torch.tensor([1.0, 0.0]))
    noise = torch.tensor([[1.0, 0.5], [1.0, 0.5]])  # the latent contract: the same σ² in every sample
    latent = GaussianPredictive(mean, noise, latent_mean=torch.tensor([5.0, 6.0]), latent_var=torch.tensor([0.1, 0.2]))
    torch.testing.assert_close(latent.moments()[1], torch.tensor([0.1 + 1.0, 0.2 + 0.5]))  # exact: latent + σ²
    torch.testing.assert_close(latent.moments(observation_noise=False), (torch.tensor([5.0, 6.0]), torch.tensor([0.1, 0.2])))
    mu, total = GaussianPredictive(mean, var, torch.tensor([0.25, 0.75])).moments()
    torch.testing.assert_close(mu, torch.tensor([1.5, 1.0]))
    torch.testing.assert_close(total, torch.tensor([0.25 + 2.25 + 0.25 * 2.25 + 0.75 * 0.25, 0.5]))


def test_resolve_likelihood():
    lik, y = resolve_likelihood(None, torch.tensor([0.5, 1.5], dtype=F64))
    assert lik == "gaussian" and y.dtype == torch.float32
    lik, y = resolve_likelihood(None, torch.tensor([0, 1]))
    assert lik == "categorical" and y.dtype == torch.int64
    lik, y = resolve_likelihood("gaussian", torch.tensor([[1], [2]]))
    assert lik == "gaussian" and y.shape == (2,) and y.dtype == torch.float32
    lik, y = resolve_likelihood("categorical", torch.tensor([0.0, 2.0]))
    assert lik == "categorical" and y.dtype == torch.int64
    with pytest.raises(ShapeError, match="integer"):
        resolve_likelihood("categorical", torch.tensor([0.5]))
    with pytest.raises(ShapeError, match=r"\[N\]"):
        resolve_likelihood("gaussian", torch.zeros(3, 2))
    with pytest.raises(ConfigError, match="likelihood"):
        resolve_likelihood("poisson", torch.zeros(3))


# ------------------------------------------------- Laplace = Bayesian linear regression on features
def _fixed_net(seed: int = 0, d_in: int = 2, hidden: int = 6) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, 1))


def _toy(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g)
    return x, torch.sin(x[:, 0]) + 0.5 * x[:, 1] + 0.2 * torch.randn(n, generator=g)


def _features(net: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """φ̃ = [φ, 1] [N, D+1] in float64: the input of the last layer, with the bias column."""
    with torch.no_grad():
        phi = net[:-1](x)
    return torch.cat([phi, torch.ones(x.shape[0], 1)], dim=1).to(F64)


def _ridge_net(net: nn.Sequential, x: torch.Tensor, y: torch.Tensor, lam: float) -> nn.Sequential:
    """A copy of `net` whose last layer is the ridge solution θ = (Φ̃ᵀΦ̃ + λI)⁻¹ Φ̃ᵀ y."""
    tilde = _features(net, x)
    theta = torch.linalg.solve(tilde.T @ tilde + lam * torch.eye(tilde.shape[1], dtype=F64), tilde.T @ y.to(F64))
    out = copy.deepcopy(net)
    with torch.no_grad():
        out[-1].weight.copy_(theta[:-1].unsqueeze(0))
        out[-1].bias.copy_(theta[-1:])
    return out


def test_laplace_full_is_exact_bayesian_linear_regression():
    x, y = _toy(60, seed=1)
    net = _fixed_net()
    delta = 0.7
    la = Laplace(model=net, hessian="full", prior_precision=delta, n_samples=4000, seed=0, device="cpu").fit(x, y)
    assert la.likelihood_ == "gaussian"
    tilde = _features(net, x)
    with torch.no_grad():
        f_train = net(x)[:, 0].to(F64)
    residuals = f_train - y.to(F64)
    s_y2 = float(y.to(F64).var(correction=0))
    sigma2 = (float(residuals.square().sum()) + NOISE_PRIOR_COUNT * NOISE_PRIOR_FRACTION * s_y2) / (60 + NOISE_PRIOR_COUNT)
    assert la.noise_ == pytest.approx(sigma2, rel=1e-6)
    # precision φ̃ᵀφ̃/σ² + δI, covariance its inverse, f_var = φ̃ Σ φ̃ᵀ
    cov = torch.linalg.inv(tilde.T @ tilde / sigma2 + delta * torch.eye(7, dtype=F64))
    torch.testing.assert_close(la.posterior_.covariance(delta), cov, rtol=1e-6, atol=1e-10)
    x_test = 3 * torch.randn(25, 2, generator=torch.Generator().manual_seed(9))
    t_test = _features(net, x_test)
    f_var = torch.einsum("nd,de,ne->n", t_test, cov, t_test)
    with torch.no_grad():
        f_map = net(x_test)[:, 0]
    mean, var = la.predict_mean_var(x_test, observation_noise=True)
    torch.testing.assert_close(mean, f_map)
    torch.testing.assert_close(var, (f_var + sigma2).float(), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(la.predict_mean_var(x_test)[1], f_var.float(), rtol=1e-5, atol=1e-7)  # latent f
    pred = la.predict(x_test)
    assert isinstance(pred, GaussianPredictive) and pred.has_latent
    assert pred.mean.shape == pred.var.shape == (4000, 25) and pred.weights is None
    torch.testing.assert_close(pred.latent_mean, f_map)
    torch.testing.assert_close(pred.latent_var, f_var.float(), rtol=1e-5, atol=1e-7)
    assert bool((pred.var == pred.var[0, 0]).all()) and float(pred.var[0, 0]) == pytest.approx(sigma2, rel=1e-6)
    GaussianPredictive(pred.mean, pred.var, latent_mean=pred.latent_mean, latent_var=pred.latent_var)  # validates
    # the samples mean[s] = φ̃ᵀθ_s with θ_s = θ_MAP + Σ^{1/2} z_s: the same linear map of the weight samples
    weight, bias = la.weight_samples()
    theta = torch.cat([weight[:, 0, :], bias], dim=1).to(F64)  # [S, D+1]
    torch.testing.assert_close(pred.mean.to(F64), theta @ t_test.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("hessian", ["diag", "kron"])
def test_laplace_diag_and_kron_curvature_closed_form(hessian):
    x, y = _toy(40, seed=2)
    net = _fixed_net(seed=3)
    delta = 1.3
    la = Laplace(model=net, hessian=hessian, prior_precision=delta, seed=0, device="cpu").fit(x, y)
    tilde, sigma2 = _features(net, x), la.noise_
    ggn = tilde.T @ tilde / sigma2
    if hessian == "diag":
        expected = torch.diag(1.0 / (torch.diagonal(ggn) + delta))
    else:  # KFAC: weight block φᵀφ/σ² (exact for one output), bias block N/σ², no cross terms
        d = tilde.shape[1] - 1
        blocks = torch.block_diag(ggn[:d, :d], torch.tensor([[40 / sigma2]], dtype=F64))
        expected = torch.linalg.inv(blocks + delta * torch.eye(d + 1, dtype=F64))
    torch.testing.assert_close(la.posterior_.covariance(delta), expected, rtol=1e-6, atol=1e-10)
    x_test = torch.randn(10, 2, generator=torch.Generator().manual_seed(4))
    t_test = _features(net, x_test)
    _, var = la.predict_mean_var(x_test, observation_noise=True)
    torch.testing.assert_close(var, (torch.einsum("nd,de,ne->n", t_test, expected, t_test) + sigma2).float(),
                               rtol=1e-5, atol=1e-7)


def test_laplace_evidence_is_the_exact_marginal_likelihood_at_the_mode():
    """At the posterior mode (the ridge solution with λ = δσ²) the Laplace evidence of a linear-Gaussian
    model is exact: log N(y; 0, Φ̃Φ̃ᵀ/δ + σ²I)."""
    x, y = _toy(50, seed=5)
    net = _ridge_net(_fixed_net(seed=6), x, y, lam=0.3)
    la = Laplace(model=net, hessian="full", prior_precision=1.0, device="cpu").fit(x, y)
    sigma2 = la.noise_
    delta = 0.3 / sigma2
    tilde = _features(net, x)
    cov_y = tilde @ tilde.T / delta + sigma2 * torch.eye(50, dtype=F64)
    exact = torch.distributions.MultivariateNormal(torch.zeros(50, dtype=F64), cov_y).log_prob(y.to(F64))
    assert float(la.log_marginal_likelihood(delta)) == pytest.approx(float(exact), rel=1e-6)


def test_laplace_matches_laplace_torch_regression_glm():
    laplace = pytest.importorskip("laplace")
    x, y = _toy(80, seed=7)
    net = _fixed_net(seed=8)
    ours = Laplace(model=net, hessian="full", prior_precision=2.0, seed=0, device="cpu").fit(x, y)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y.unsqueeze(-1)), batch_size=32)
    ref = laplace.Laplace(copy.deepcopy(net), "regression", subset_of_weights="last_layer", hessian_structure="full",
                          sigma_noise=math.sqrt(ours.noise_), prior_precision=2.0)
    ref.fit(loader)
    x_test = 2 * torch.randn(30, 2, generator=torch.Generator().manual_seed(10))
    f_mu, f_var = ref(x_test, pred_type="glm")
    mean, var = ours.predict_mean_var(x_test, observation_noise=True)
    torch.testing.assert_close(mean, f_mu[:, 0].float(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(var, (f_var[:, 0, 0] + ours.noise_).float(), atol=1e-6, rtol=1e-4)
    torch.testing.assert_close(ours.predict(x_test).latent_var, f_var[:, 0, 0].float(), atol=1e-6, rtol=1e-4)
    for delta in (2.0, 0.1, 10.0):
        theirs = float(ref.log_marginal_likelihood(torch.tensor(delta)))
        assert float(ours.log_marginal_likelihood(delta)) == pytest.approx(theirs, rel=1e-4)


def test_laplace_regression_scores_use_the_closed_form():
    from activebayes.acquisition import bald, eig

    x, y = _toy(40, seed=11)
    la = Laplace(model=_fixed_net(seed=12), hessian="full", prior_precision=1.0, n_samples=8, seed=0, device="cpu").fit(x, y)
    pred = la.predict(x[:6])
    expected = 0.5 * torch.log1p(pred.latent_var.double() / la.noise_)
    torch.testing.assert_close(eig(pred).double(), expected, rtol=1e-4, atol=1e-7)
    torch.testing.assert_close(bald(pred).double(), expected, rtol=1e-4, atol=1e-7)


def test_laplace_regression_explicit_likelihood_and_bad_models():
    x, y = _toy(30, seed=13)
    labels = (y > 0).long()
    la = Laplace(model=_fixed_net(), hessian="diag", prior_precision=1.0, likelihood="gaussian", device="cpu").fit(x, labels)
    assert la.likelihood_ == "gaussian" and la.noise_ > 0
    with pytest.raises(ConfigError, match="one output"):
        Laplace(model=nn.Sequential(nn.Linear(2, 3)), prior_precision=1.0, device="cpu").fit(x, y)


# ------------------------------------------------------ the regression contract of every posterior
_NET = mlp(1, 1, hidden=(32, 32), dropout=0.1)
_TRAIN = {"train": TrainConfig(epochs=100, lr=1e-2, batch_size=100)}

REGRESSORS = [
    pytest.param(lambda seed, device="cpu": MCDropout(_NET, n_samples=16, **_TRAIN, seed=seed, device=device), id="mc-dropout"),
    pytest.param(lambda seed, device="cpu": DeepEnsemble(_NET, n_samples=3, **_TRAIN, seed=seed, device=device), id="deep-ensemble"),
    pytest.param(
        lambda seed, device="cpu": SnapshotEnsemble(_NET, n_samples=3, epochs_per_cycle=30, lr_max=1e-2, train=TrainConfig(batch_size=100),
                                                    seed=seed, device=device),
        id="snapshot-ensemble",
    ),
    pytest.param(lambda seed, device="cpu": Laplace(_NET, hessian="kron", n_samples=16, **_TRAIN, seed=seed, device=device), id="laplace"),
    pytest.param(
        lambda seed, device="cpu": SWAG(_NET, rank=5, n_snapshots=10, snapshot_steps=None, n_samples=16, **_TRAIN, seed=seed, device=device),
        id="swag",
    ),
    # whole-network Laplace trained by online marglik (δ per tensor and the noise σ learnt)
    pytest.param(lambda seed, device="cpu": Laplace(_NET, subset="all", prior_precision="online", n_samples=16, **_TRAIN, seed=seed,
                                                    device=device), id="laplace-all-online"),
]


@pytest.fixture(scope="module")
def wave() -> tuple[torch.Tensor, torch.Tensor]:
    """y = sin(2x) + N(0, 0.3²), x ~ U[-2, 2], 500 points, float32 (fixed data)."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(500, 1, generator=g) * 4 - 2
    return x, torch.sin(2 * x[:, 0]) + NOISE_STD * torch.randn(500, generator=g)


@pytest.fixture(params=REGRESSORS)
def regressor(request):
    return request.node.callspec.id, request.param


_FITTED: dict[str, object] = {}


@pytest.fixture
def fitted_regressor(regressor, wave, test_seed):
    name, factory = regressor
    if name not in _FITTED:
        _FITTED[name] = factory(test_seed).fit(*wave)
    return _FITTED[name]


def _grid() -> torch.Tensor:
    return torch.linspace(-3, 3, 41).unsqueeze(1)  # beyond the data on both sides


def test_regression_predictive_shapes_values_and_mean_var(fitted_regressor):
    x = _grid()
    pred = fitted_regressor.predict(x)
    assert isinstance(pred, GaussianPredictive)
    S, N = pred.mean.shape
    assert S >= 2 and N == 41 and pred.var.shape == (S, N)
    assert pred.mean.dtype == pred.var.dtype == torch.float32 and pred.mean.device.type == "cpu"
    GaussianPredictive(pred.mean, pred.var, pred.weights, latent_mean=pred.latent_mean, latent_var=pred.latent_var)
    noise = fitted_regressor.noise_
    expected_var = noise.unsqueeze(1).expand(S, N) if isinstance(noise, torch.Tensor) else torch.full((S, N), noise)
    torch.testing.assert_close(pred.var, expected_var.float())
    assert fitted_regressor.predict(x, n_samples=2).mean.shape == (2, N)
    mean, var = fitted_regressor.predict_mean_var(x, observation_noise=True)
    assert mean.shape == var.shape == (N,)
    latent_mean, latent_var = fitted_regressor.predict_mean_var(x)  # f, as the GP's: without the noise
    torch.testing.assert_close(latent_mean, mean)
    torch.testing.assert_close(latent_var, var - pred.var.mean(0), rtol=1e-4, atol=1e-6)
    if pred.has_latent:  # Laplace: exact
        torch.testing.assert_close(mean, pred.latent_mean)
        torch.testing.assert_close(var, pred.latent_var + pred.var[0])
    else:
        ref_mean, ref_var = pred.moments()
        torch.testing.assert_close(mean, ref_mean)
        torch.testing.assert_close(var, ref_var)
    assert bool((var >= pred.var.min(0).values - 1e-6).all())  # total >= noise


def test_learnt_noise_within_a_factor_two(fitted_regressor):
    noise = fitted_regressor.noise_
    values = noise.tolist() if isinstance(noise, torch.Tensor) else [noise]
    for value in values:
        assert NOISE_STD**2 / 2 < value < 2 * NOISE_STD**2


def test_predict_proba_refuses_regression(fitted_regressor):
    with pytest.raises(ConfigError, match="predict_mean_var"):
        fitted_regressor.predict_proba(_grid())


def test_regression_same_seed_same_predictions_and_batch_independent(regressor, fitted_regressor, wave, test_seed):
    _, factory = regressor
    x = _grid()
    again = factory(test_seed).fit(*wave)
    torch.testing.assert_close(again.predict(x).mean, fitted_regressor.predict(x).mean, rtol=0, atol=0)
    assert again.noise_ == pytest.approx(fitted_regressor.noise_) if not isinstance(again.noise_, torch.Tensor) \
        else torch.equal(again.noise_, fitted_regressor.noise_)
    whole = fitted_regressor.predict(x)
    parts = [fitted_regressor.predict(x[i : i + 7]) for i in range(0, 41, 7)]
    torch.testing.assert_close(torch.cat([p.mean for p in parts], 1), whole.mean, rtol=1e-5, atol=1e-6)
    flipped = fitted_regressor.predict(x.flip(0))
    torch.testing.assert_close(flipped.mean.flip(1), whole.mean, rtol=1e-5, atol=1e-6)
    if whole.has_latent:
        torch.testing.assert_close(torch.cat([p.latent_var for p in parts]), whole.latent_var, rtol=1e-5, atol=1e-7)


def test_regression_to_device_keeps_predictions(regressor, wave, device):
    """Fitted once on the CPU, moved to `device` (CUDA on the GPU lane): same predictive there."""
    _, factory = regressor
    posterior = factory(0).fit(*wave)
    x = _grid()
    before = posterior.predict(x)
    mean_before, var_before = posterior.predict_mean_var(x)
    assert posterior.to(device) is posterior
    after = posterior.predict(x)
    assert after.mean.device.type == device and after.var.device.type == device
    if after.has_latent:
        assert after.latent_var.device.type == device
    torch.testing.assert_close(after.mean.cpu(), before.mean, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(after.var.cpu(), before.var)
    mean_after, var_after = posterior.predict_mean_var(x)
    assert mean_after.device.type == device
    torch.testing.assert_close(mean_after.cpu(), mean_before, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(var_after.cpu(), var_before, atol=1e-4, rtol=1e-4)


def test_regression_fit_on_device(regressor, wave, device):
    _, factory = regressor
    posterior = factory(0, device).fit(*wave)
    pred = posterior.predict(_grid())
    assert pred.mean.device.type == device and pred.var.device.type == device
    mean, var = posterior.predict_mean_var(_grid())
    assert mean.device.type == device and var.device.type == device


def test_regression_before_fit_raises(regressor):
    _, factory = regressor
    with pytest.raises(NotFittedError):
        factory(0).predict_mean_var(_grid())


def test_classifier_refuses_predict_mean_var(moons):
    post = MCDropout(mlp(2, 2, hidden=(8,)), n_samples=4, train=TrainConfig(epochs=1), seed=0, device="cpu").fit(*moons)
    assert post.likelihood_ == "categorical" and post.noise_ is None
    with pytest.raises(ConfigError, match="classification"):
        post.predict_mean_var(moons[0][:3])


def test_regression_network_must_have_one_output(wave):
    post = DeepEnsemble(mlp(1, 3, hidden=(8,)), n_samples=2, train=TrainConfig(epochs=1), seed=0, device="cpu")
    with pytest.raises(ShapeError, match="one value per item"):
        post.fit(*wave)
