"""The interval of an MSE (`lure_estimate(squares=True)`, a regression's RMSE): Satterthwaite's
scaled χ² on ν = min(2R̂²/(s_z²/M), M) degrees of freedom, against hand computations and a seeded
simulation of 8 labels, where the Wald interval it replaces was far too short above."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from activebayes.acquisition.batch import uniform_draw_probabilities
from activebayes.estimates import chi2_interval, lure_estimate, t_quantile
from activebayes.round_estimates import LossTable, pool_estimate


def test_gaussian_like_draws_give_the_variance_interval_on_m_degrees_of_freedom():
    # 8 uniform draws (v = 1): R̂ = 0.35, s² = 0.0866..., ν̂ = 2 R̂² M / s² = 22.6 > M, so ν = M = 8:
    # the textbook interval of σ² from 8 residuals of known mean, [8 R̂/χ²_{.975,8}, 8 R̂/χ²_{.025,8}]
    losses = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.1, 0.6])
    estimate = lure_estimate(losses, uniform_draw_probabilities(100, 8).numpy(), 100, squares=True)
    assert estimate.value == pytest.approx(0.35) and estimate.interval == "chi2"
    assert 2 * 0.35**2 * 8 / losses.var(ddof=1) > 8
    # χ²_{.975,8} = 17.5345, χ²_{.025,8} = 2.17973 (tables)
    assert (estimate.low, estimate.high) == pytest.approx((8 * 0.35 / 17.5345, 8 * 0.35 / 2.17973), rel=1e-4)


def test_spread_draws_get_fewer_degrees_of_freedom():
    # one large square among small ones: ν̂ = 2 R̂² / (s²/M) < M, and the interval is that of a
    # gamma with R̂'s mean and variance (shape ν/2, scale 2R̂/ν)
    losses = np.array([0.01, 0.04, 0.02, 0.03, 0.05, 0.01, 0.02, 4.0])
    m, value = len(losses), float(losses.mean())
    var = losses.var(ddof=1) / m
    nu = 2 * value**2 / var
    assert nu < m
    low, high = chi2_interval(value, var, m)
    gamma = stats.gamma(nu / 2, scale=2 / nu)  # R̂/R ~ χ²_ν/ν
    assert (low, high) == pytest.approx((value / gamma.ppf(0.975), value / gamma.ppf(0.025)), rel=1e-9)
    wald_high = value + t_quantile(m) * math.sqrt(var)
    assert high > wald_high  # the skewed draw widens the upper end beyond the symmetric one


def test_edges():
    assert chi2_interval(0.0, 0.0, 5) == (0.0, 0.0)  # every draw exact
    assert chi2_interval(2.0, math.inf, 1) == (0.0, math.inf)  # one draw: no variance
    low, high = chi2_interval(2.0, 0.0, 4)  # every draw alike: ν = M
    assert (low, high) == pytest.approx((4 * 2.0 / stats.chi2.ppf(0.975, 4), 4 * 2.0 / stats.chi2.ppf(0.025, 4)))
    with pytest.raises(Exception, match="nonnegative"):
        lure_estimate([-1.0, 1.0], [0.5, 1.0], 2, squares=True)


def test_the_rmse_of_a_pool_estimate_is_the_root_of_the_mse_interval():
    squares = np.array([0.3, 0.05, 1.2, 0.4, 0.02, 0.6, 0.9, 0.1])
    q = uniform_draw_probabilities(40, 8).numpy()
    table = LossTable(squared=squares, normal_nll=np.zeros(8))
    rmse = pool_estimate(None, table, q, 40, 8).rmse
    mse = lure_estimate(squares, q, 40, squares=True)
    assert (rmse.value, rmse.low, rmse.high) == pytest.approx((math.sqrt(mse.value), math.sqrt(mse.low), math.sqrt(mse.high)))


def test_eight_gaussian_residuals_cover_the_pool_mse():
    """Seeded: 4,000 uniform draws of M = 8 from a pool of 500 Gaussian residuals. The scaled-χ²
    interval misses about 2.5 % on each side; the t-based Wald interval it replaced missed the
    pool's MSE from below about 15 % of the time."""
    rng = np.random.default_rng(0)
    n, m, reps = 500, 8, 4000
    squares = rng.normal(size=n) ** 2
    truth = squares.mean()
    q = uniform_draw_probabilities(n, m).numpy()
    below = above = wald_above = 0
    for _ in range(reps):
        drawn = squares[rng.choice(n, m, replace=False)]
        e = lure_estimate(drawn, q, n, squares=True)
        below += truth < e.low
        above += truth > e.high
        wald_above += truth > lure_estimate(drawn, q, n).high
    assert below / reps < 0.045 and above / reps < 0.045
    assert wald_above / reps > 0.10
