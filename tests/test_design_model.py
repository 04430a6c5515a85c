"""MemorySpanModel and GridPosterior against closed forms, scipy and brute-force quadrature."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from activebayes.design import GridPosterior, MemorySpanModel
from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import Predictive


def test_likelihood_hand_values_logit_probit_lapse_guess():
    theta = torch.tensor([7.0, 5.0], dtype=torch.float64)
    xi = torch.tensor([7.0, 6.0], dtype=torch.float64)
    p = MemorySpanModel(slope=2.0).prob_recall(theta, xi)  # [G, D]
    expected = [[0.5, 1 / (1 + math.exp(-2.0))], [1 / (1 + math.exp(4.0)), 1 / (1 + math.exp(2.0))]]
    np.testing.assert_allclose(p.numpy(), expected, atol=1e-12)
    probit = MemorySpanModel(slope=1.0, link="probit").prob_recall(theta, xi)
    np.testing.assert_allclose(probit.numpy(), stats.norm.cdf(theta.numpy()[:, None] - xi.numpy()[None, :]), atol=1e-12)
    mixed = MemorySpanModel(slope=1.0, lapse=0.1, guess=0.05)
    p1 = mixed.prob_recall(theta, xi)
    np.testing.assert_allclose(p1.numpy(), 0.05 + 0.85 / (1 + np.exp(-(theta.numpy()[:, None] - xi.numpy()[None, :]))))
    np.testing.assert_allclose((mixed.prob_miss(theta, xi) + p1).numpy(), 1.0, atol=1e-12)


def test_predictive_shape_and_rate_extension():
    model = MemorySpanModel(rate_cost=1.0, reference_rate=1.0)
    theta = torch.linspace(3, 11, 5, dtype=torch.float64)
    designs_2d = torch.tensor([[6.0, 2.0], [7.0, 1.0], [5.0, 1.5]], dtype=torch.float64)
    pred = model.predictive(theta, designs_2d)
    assert isinstance(pred, Predictive) and pred.probs.shape == (5, 3, 2)
    # 6 digits at 2/s are as hard as 7 at 1/s under rate_cost 1
    torch.testing.assert_close(pred.probs[:, 0], pred.probs[:, 1])
    torch.testing.assert_close(pred.probs[:, 2], model.probs(theta, torch.tensor([5.5], dtype=torch.float64))[:, 0])


def test_bad_configuration_raises_typed_errors():
    with pytest.raises(ConfigError, match="slope"):
        MemorySpanModel(slope=0.0)
    with pytest.raises(ConfigError, match="lapse"):
        MemorySpanModel(lapse=1.2)
    with pytest.raises(ConfigError, match="link"):
        MemorySpanModel(link="cauchit")
    with pytest.raises(ShapeError, match="theta_grid"):
        GridPosterior(MemorySpanModel(), theta_grid=torch.tensor([3.0, 2.0]))
    with pytest.raises(ConfigError, match="outcome"):
        GridPosterior(MemorySpanModel()).update(7.0, 2)


def test_prior_moments_and_interval_match_the_normal():
    post = GridPosterior(MemorySpanModel(), n_theta=801)
    assert post.mean == pytest.approx(7.0, abs=1e-9)
    assert post.sd == pytest.approx(2.0, abs=1e-3)
    lo, hi = post.interval(0.9)
    assert lo == pytest.approx(stats.norm.ppf(0.05, 7, 2), abs=2e-3)
    assert hi == pytest.approx(stats.norm.ppf(0.95, 7, 2), abs=2e-3)


def test_step_likelihood_gives_the_truncated_normal():
    # slope 400: recalled 6 digits -> θ > 6, missed 9 digits -> θ < 9, so θ | data ~ N(7, 2²) on (6, 9)
    model = MemorySpanModel(slope=400.0)
    post = GridPosterior(model, theta_grid=torch.linspace(-3, 17, 8001, dtype=torch.float64))
    post.update(6.0, 1).update(9.0, 0)
    a, b = (6 - 7) / 2, (9 - 7) / 2
    assert post.mean == pytest.approx(stats.truncnorm.mean(a, b, loc=7, scale=2), abs=2e-3)
    assert post.sd == pytest.approx(stats.truncnorm.std(a, b, loc=7, scale=2), abs=2e-3)
    lo, hi = post.interval(0.9)
    assert lo == pytest.approx(stats.truncnorm.ppf(0.05, a, b, loc=7, scale=2), abs=5e-3)
    assert hi == pytest.approx(stats.truncnorm.ppf(0.95, a, b, loc=7, scale=2), abs=5e-3)


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_posterior_matches_brute_force_quadrature(link):
    model = MemorySpanModel(slope=1.3, lapse=0.05, guess=0.02, link=link)
    trials = [(7.0, 1), (9.0, 0), (8.0, 1), (10.0, 0), (5.0, 1)]
    post = GridPosterior(model, n_theta=1201)
    for xi, y in trials:
        post.update(xi, y)

    def density(t: float) -> float:
        value = stats.norm.pdf(t, 7, 2)
        for xi, y in trials:
            p1 = float(model.prob_recall(torch.tensor([t], dtype=torch.float64), torch.tensor([xi], dtype=torch.float64)))
            value *= p1 if y else 1 - p1
        return value

    z = integrate.quad(density, -20, 35, limit=200)[0]
    m = integrate.quad(lambda t: t * density(t), -20, 35, limit=200)[0] / z
    v = integrate.quad(lambda t: (t - m) ** 2 * density(t), -20, 35, limit=200)[0] / z
    assert post.mean == pytest.approx(m, abs=1e-4)
    assert post.sd == pytest.approx(math.sqrt(v), abs=1e-4)


def test_joint_slope_grid_prior_and_update():
    post = GridPosterior(MemorySpanModel(), learn_slope=True, n_theta=201, n_slope=100)
    assert post.n_points == 201 * 100 and post.shape == (201, 100)
    # the slope grid is uniform in log s, so the weight of s_j is the N(0, 0.5²) density of log s_j
    log_s = post.slope_grid.log().numpy()
    expected = stats.norm.pdf(log_s, 0, 0.5)
    np.testing.assert_allclose(post.slope_marginal().numpy(), expected / expected.sum(), rtol=1e-9)
    assert post.mean == pytest.approx(7.0, abs=1e-9)
    # a joint update equals the quadrature over (θ, log s) of the same grid
    post.update(8.0, 1).update(10.0, 0)
    w = post.weights.reshape(post.shape)
    t, s = post.theta_grid[:, None], post.slope_grid[None, :]
    lik = torch.sigmoid(s * (t - 8.0)) * torch.sigmoid(-s * (t - 10.0))
    prior = torch.exp(-0.5 * ((t - 7) / 2) ** 2 - 0.5 * (s.log() / 0.5) ** 2)
    brute = lik * prior
    torch.testing.assert_close(w, brute / brute.sum(), rtol=1e-9, atol=1e-15)
    assert post.slope_mean > 0


def test_log_space_survives_many_updates():
    post = GridPosterior(MemorySpanModel(slope=3.0))
    for _ in range(500):
        post.update(6.0, 1).update(8.0, 0)
    assert math.isfinite(post.mean) and 6.0 < post.mean < 8.0 and post.sd < 0.1
    assert float(post.weights.sum()) == pytest.approx(1.0, abs=1e-12)


def test_copy_is_independent_and_sample_follows_the_weights():
    post = GridPosterior(MemorySpanModel(), n_theta=201)
    twin = post.copy()
    post.update(9.0, 1)
    assert twin.mean == pytest.approx(7.0, abs=1e-9) and post.mean > 7.5
    theta, slope = post.sample(20000, torch.Generator().manual_seed(0))
    assert slope is None and float(theta.mean()) == pytest.approx(post.mean, abs=0.05)
