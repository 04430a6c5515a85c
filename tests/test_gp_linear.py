"""GaussianProcess with the centred linear part ("rbf+linear", "matern52+linear"): the closed form
with the learnt hyper-parameters, the units of `linear_variance_`, an exact line recovered far
outside the data, and the 95 % interval of a new observation."""

import math

import pytest
import torch

from activebayes.errors import ConfigError
from activebayes.posteriors.gp import GaussianProcess


def _data(n=25, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=torch.float64) * torch.tensor([2.0, 5.0], dtype=torch.float64)
    y = torch.sin(3 * x[:, 0]) + 0.8 * x[:, 1] + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)
    xq = torch.rand(30, 2, generator=g, dtype=torch.float64) * 8.0 - 2.0  # in and far out of the data
    return x, y, xq


def _learnt(gp):
    """(lengthscales [D] or [1], slope variances [D], both original units, float64) of a fitted GP."""
    covar = gp.model_.covar_module
    scaled, linear = covar.kernels
    bounds = gp.model_.input_transform.bounds
    span = bounds[1] - bounds[0] if gp.ard else (bounds[1] - bounds[0])[:1]
    scale2 = float(gp.model_.outcome_transform.stdvs.reshape(())) ** 2
    ls = scaled.base_kernel.lengthscale.detach().reshape(-1) * span
    return ls, linear.variance.detach().reshape(()) * scale2 / (bounds[1] - bounds[0]) ** 2


def _closed_form(gp, x, y, xq, smooth):
    """μ, σ², log p(y) with k(u, v) = a k_s(|u − v|/ℓ) + Σ_d V_d (u_d − x̄_d)(v_d − x̄_d), textbook formulas,
    original units (V_d: the slope variance of feature d): the linear part is centred at the mean x̄ of the training inputs."""
    ls, lin = _learnt(gp)
    a, s2, centre = gp.outputscale_, gp.noise_, x.mean(0)

    def k(u, v):
        r = torch.cdist(u / ls, v / ls)
        stationary = torch.exp(-0.5 * r**2) if smooth == "rbf" else (1 + math.sqrt(5) * r + 5 * r**2 / 3) * torch.exp(-math.sqrt(5) * r)
        return a * stationary + ((u - centre) * lin) @ (v - centre).T

    ybar = y.mean()
    c = torch.linalg.cholesky(k(x, x) + s2 * torch.eye(len(x), dtype=torch.float64))
    ks = k(x, xq)
    alpha = torch.cholesky_solve((y - ybar)[:, None], c)[:, 0]
    v = torch.linalg.solve_triangular(c, ks, upper=False)
    mean, var = ybar + ks.T @ alpha, torch.diagonal(k(xq, xq)) - (v * v).sum(0)
    lml = -0.5 * (y - ybar) @ alpha - torch.log(torch.diagonal(c)).sum() - 0.5 * len(x) * math.log(2 * math.pi)
    return mean, var, float(lml)


@pytest.mark.parametrize("kernel", ["rbf+linear", "matern52+linear"])
@pytest.mark.parametrize("ard", [True, False])
def test_learnt_posterior_and_evidence_match_the_closed_form(kernel, ard):
    x, y, xq = _data()
    gp = GaussianProcess(kernel=kernel, ard=ard, seed=0, device="cpu").fit(x, y)
    mean, var, lml = _closed_form(gp, x, y, xq, kernel.split("+")[0])
    mu64, var64 = gp._latent(xq)
    torch.testing.assert_close(mu64, mean, atol=1e-8, rtol=0)
    torch.testing.assert_close(var64, var, atol=1e-8, rtol=0)
    assert gp.log_marginal_likelihood_ == pytest.approx(lml, abs=1e-6)
    assert gp.linear_variance_.shape == (2,)


def test_the_95_interval_of_an_observation_adds_the_noise():
    """predict_mean_var(observation_noise=True) and predict().moments() give σ_n² + σ_ε², so the
    interval of a new y is μ ± 1.96 sqrt(σ_n² + σ_ε²), not the latent f's μ ± 1.96 σ_n."""
    x, y, xq = _data()
    gp = GaussianProcess(kernel="matern52+linear", seed=0, device="cpu").fit(x, y)
    mu, latent = gp.predict_mean_var(xq)
    _, observed = gp.predict_mean_var(xq, observation_noise=True)
    torch.testing.assert_close(observed, latent + gp.noise_)
    m, v = gp.predict(xq).moments(observation_noise=True)
    torch.testing.assert_close(m, mu)
    torch.testing.assert_close(v, latent + gp.noise_)
    assert gp.noise_ > 0 and bool((observed > latent).all())


def test_linear_variance_is_in_the_original_units():
    """x → 10 x + 3, y → 7 y − 2: the same fit in the internal units, so V_d → V_d · 49 / 100, the
    noise · 49, and the predictions follow the map. Tolerance 1 %: the optimiser's path differs by
    round-off (6e-4 seen), a slip in the units by a factor 7 to 100."""
    x, y, xq = _data()
    gp = GaussianProcess(kernel="rbf+linear", seed=0, device="cpu").fit(x, y)
    scaled = GaussianProcess(kernel="rbf+linear", seed=0, device="cpu").fit(10 * x + 3, 7 * y - 2)
    torch.testing.assert_close(scaled.linear_variance_, gp.linear_variance_ * 49 / 100, rtol=1e-2, atol=0)
    assert scaled.noise_ == pytest.approx(gp.noise_ * 49, rel=1e-2)
    mu, var = gp.predict_mean_var(xq)
    mu_s, var_s = scaled.predict_mean_var(10 * xq + 3)
    torch.testing.assert_close(mu_s, 7 * mu - 2, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(var_s, 49 * var, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("kernel", ["rbf+linear", "matern52+linear"])
def test_an_exact_line_is_recovered_far_outside_the_data(kernel):
    """y = 2 x₀ − 3 x₁ + 1 on 12 points of [0, 1]²: at points up to 5 ranges away the prediction is
    the line to 1e-3 of the labels' spread (the linear part's weights are pinned by the data; a
    stationary kernel would fall back to the mean there), with the noise at its floor."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(12, 2, generator=g, dtype=torch.float64)
    line = lambda u: 2 * u[:, 0] - 3 * u[:, 1] + 1  # noqa: E731
    far = torch.rand(50, 2, generator=g, dtype=torch.float64) * 10 - 4.5
    gp = GaussianProcess(kernel=kernel, seed=0, device="cpu").fit(x, line(x))
    mean, _ = gp.predict_mean_var(far)
    spread = float(line(x).max() - line(x).min())
    assert float((mean.double() - line(far)).abs().max()) < 1e-3 * spread
    assert gp.noise_ < 1e-3 * line(x).var().item()


def test_an_unknown_kernel_names_every_choice():
    with pytest.raises(ConfigError, match="'rbf', 'matern52', 'rbf\\+linear', 'matern52\\+linear'"):
        GaussianProcess(kernel="linear")


def test_the_variational_gp_takes_the_linear_part():
    """Above max_exact the same kernel goes into SingleTaskVariationalGP: fitted, V_d reported."""
    x, y, xq = _data(n=30)
    gp = GaussianProcess(kernel="matern52+linear", max_exact=10, n_inducing=30, seed=0, device="cpu").fit(x, y)
    assert gp.approximate_ and gp.linear_variance_.shape == (2,) and bool((gp.linear_variance_ > 0).all())
    mean, var = gp.predict_mean_var(xq)
    assert mean.shape == var.shape == (30,) and bool(torch.isfinite(mean).all()) and bool((var >= 0).all())


@pytest.mark.parametrize("prior", [(-4.0, 1.0), (-1.0, 1.5)])
def test_the_learnt_noise_is_the_map_of_its_log_normal_prior(prior):
    """Lengthscale and outputscale fixed, the noise learnt: σ̃² maximises, in the standardised
    units, log N(ỹ; 0, K̃ + σ̃² I) + log LogNormal(σ̃²; μ, σ), found here on a grid by hand."""
    x, y, _ = _data(n=20)
    gp = GaussianProcess(lengthscale=0.7, outputscale=1.8, noise_prior=prior, seed=0, device="cpu").fit(x, y)
    s_y = float(y.std())
    yt = (y - y.mean()) / s_y
    k = 1.8 / s_y**2 * torch.exp(-0.5 * torch.cdist(x / 0.7, x / 0.7) ** 2)
    mu, sigma = prior

    def objective(s2):
        gauss = torch.distributions.MultivariateNormal(torch.zeros(len(x), dtype=torch.float64), k + s2 * torch.eye(len(x), dtype=torch.float64))
        log_s2 = math.log(s2)
        return float(gauss.log_prob(yt)) - log_s2 - math.log(sigma) - 0.5 * math.log(2 * math.pi) - (log_s2 - mu) ** 2 / (2 * sigma**2)

    grid = torch.logspace(-4, 1, 2001, dtype=torch.float64).tolist()  # steps of 0.6 %
    best = max(grid, key=objective)
    assert gp.noise_ / s_y**2 == pytest.approx(best, rel=0.01)


def test_a_bad_noise_prior_is_refused():
    for bad in ((-1.0, 0.0), (-1.0,), "wide", (math.nan, 1.0), (True, 1.0)):
        with pytest.raises(ConfigError, match="noise_prior"):
            GaussianProcess(noise_prior=bad)
    assert GaussianProcess(noise_prior=[-1, 1.5]).get_params()["noise_prior"] == (-1.0, 1.5)
