"""The interval of an MSE (`lure_estimate(skewed=True)`, a regression's RMSE): Satterthwaite's
scaled χ² on ν = min(2R̂²/(s_z²/M), 2M/κ) degrees of freedom (κ = 6), against hand computations
and a seeded simulation of 8 labels, where the Wald interval it replaces was far too short above;
the RMSE's value corrected for Jensen's bias (`root_value`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from activebayes.acquisition.batch import uniform_draw_probabilities
from activebayes.estimates import MIN_SQUARED_CV, chi2_interval, lure_estimate, root_value, satterthwaite_dof, t_quantile
from activebayes.round_estimates import LossTable, pool_estimate


def test_gaussian_like_draws_give_the_variance_interval_on_m_over_three_degrees_of_freedom():
    # 12 uniform draws (v = 1): R̂ = 0.35, ν̂ = 2 R̂² M / s² > M, so ν = 2M/κ = 4 (κ = 6)
    losses = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.1, 0.6, 0.35, 0.35, 0.3, 0.4])
    estimate = lure_estimate(losses, uniform_draw_probabilities(100, 12).numpy(), 100, skewed=True)
    assert estimate.value == pytest.approx(0.35) and estimate.interval == "chi2"
    assert 2 * 0.35**2 * 12 / losses.var(ddof=1) > 12 and MIN_SQUARED_CV == 6.0
    # χ²_{.975,4} = 11.1433, χ²_{.025,4} = 0.484419 (tables)
    assert (estimate.low, estimate.high) == pytest.approx((4 * 0.35 / 11.1433, 4 * 0.35 / 0.484419), rel=1e-4)
    assert estimate.dof == 12.0  # the point value's ν: min(ν̂, M)
    # κ = 2 is the textbook interval of σ² from 8 residuals of known mean: χ²_{.975,8} = 17.5345, χ²_{.025,8} = 2.17973
    var8 = losses[:8].var(ddof=1) / 8
    assert chi2_interval(0.35, var8, 8, kappa=2.0) == pytest.approx((8 * 0.35 / 17.5345, 8 * 0.35 / 2.17973), rel=1e-4)


def test_spread_draws_get_fewer_degrees_of_freedom():
    # one large square among small ones: ν̂ = 2 R̂² / (s²/M) = 2.21 < M/2, and the interval is that of a
    # gamma with R̂'s mean and variance (shape ν/2, scale 2R̂/ν)
    losses = np.array([0.01, 0.04, 0.02, 0.03, 0.05, 0.01, 0.02, 4.0])
    m, value = len(losses), float(losses.mean())
    var = losses.var(ddof=1) / m
    nu = 2 * value**2 / var
    assert nu == pytest.approx(2.2122, abs=1e-4) and satterthwaite_dof(value, var, m) == pytest.approx(nu)
    low, high = chi2_interval(value, var, m)
    gamma = stats.gamma(nu / 2, scale=2 / nu)  # R̂/R ~ χ²_ν/ν
    assert (low, high) == pytest.approx((value / gamma.ppf(0.975), value / gamma.ppf(0.025)), rel=1e-9)
    wald_high = value + t_quantile(m) * math.sqrt(var)
    assert high > wald_high  # the skewed draw widens the upper end beyond the symmetric one


def test_edges():
    assert chi2_interval(0.0, 0.0, 5) == (0.0, 0.0)  # every draw exact
    assert chi2_interval(2.0, math.inf, 1) == (0.0, math.inf)  # one draw: no variance
    low, high = chi2_interval(2.0, 0.0, 6)  # every draw alike: ν = 2M/κ = 2, χ²_2's p-quantile −2 log(1 − p)
    assert (low, high) == pytest.approx((2 * 2.0 / (-2 * math.log(0.025)), 2 * 2.0 / (-2 * math.log(0.975))), rel=1e-9)
    low, high = chi2_interval(2.0, 0.5, 2)  # two draws: 2M/κ < 1, no upper end; the lower end on ν = 2/3
    assert high == math.inf and low == pytest.approx((2 / 3) * 2.0 / stats.chi2.ppf(0.975, 2 / 3), rel=1e-9)
    with pytest.raises(Exception, match="nonnegative"):
        lure_estimate([-1.0, 1.0], [0.5, 1.0], 2, skewed=True)
    one = pool_estimate(None, LossTable(squared=np.array([4.0]), normal_nll=np.zeros(1)), [0.01], 100, 1).rmse
    assert one.value == pytest.approx(2.0) and one.high == math.inf  # one draw: no upper end, no correction


def test_the_rmse_is_the_root_of_the_mse_interval_with_its_value_corrected():
    squares = np.array([0.3, 0.05, 1.2, 0.4, 0.02, 0.6, 0.9, 0.1])
    q = uniform_draw_probabilities(40, 8).numpy()
    table = LossTable(squared=squares, normal_nll=np.zeros(8))
    rmse = pool_estimate(None, table, q, 40, 8).rmse
    mse = lure_estimate(squares, q, 40, skewed=True)
    nu = satterthwaite_dof(mse.value, squares.var(ddof=1) / 8, 8)
    c = math.sqrt(2 / nu) * math.gamma((nu + 1) / 2) / math.gamma(nu / 2)  # E √(χ²_ν/ν)
    assert (rmse.value, rmse.low, rmse.high) == pytest.approx((math.sqrt(mse.value) / c, math.sqrt(mse.low), math.sqrt(mse.high)))


def test_root_value_by_hand():
    # ν = 2: χ²_2/2 is Exp(1), E √X = Γ(3/2) = √π/2, so the corrected root of R̂ = 1 is 2/√π
    assert root_value(1.0, 0.0, 2.0) == pytest.approx(2 / math.sqrt(math.pi), rel=1e-12)
    # a known part a and the rest b·X, X ~ Exp(1): E √(a + bX) = √a + √(πb)/2 · e^{a/b} erfc(√(a/b))
    a, b = 0.6, 0.4
    mean_root = math.sqrt(a) + math.sqrt(math.pi * b) / 2 * math.exp(a / b) * math.erfc(math.sqrt(a / b))
    assert root_value(a + b, a, 2.0) == pytest.approx((a + b) / mean_root, rel=1e-7)
    assert root_value(2.5, 2.5, 3.0) == pytest.approx(math.sqrt(2.5))  # all known: the plain root
    assert root_value(0.0, 0.0, 3.0) == 0.0
    assert root_value(1.0, 0.0, 1e6) == pytest.approx(1.0, abs=1e-6)  # many degrees of freedom: no bias left


def test_eight_gaussian_residuals_cover_the_pool_mse():
    """Seeded: 4,000 uniform draws of M = 8 from a pool of 500 Gaussian residuals. The scaled-χ²
    interval (ν ≤ M/2 here, where ν = M would be exact) misses less than 2.5 % on each side; the
    t-based Wald interval it replaced missed the pool's MSE from below about 15 % of the time."""
    rng = np.random.default_rng(0)
    n, m, reps = 500, 8, 4000
    squares = rng.normal(size=n) ** 2
    truth = squares.mean()
    q = uniform_draw_probabilities(n, m).numpy()
    below = above = wald_above = 0
    for _ in range(reps):
        drawn = squares[rng.choice(n, m, replace=False)]
        e = lure_estimate(drawn, q, n, skewed=True)
        below += truth < e.low
        above += truth > e.high
        wald_above += truth > lure_estimate(drawn, q, n).high
    assert below / reps < 0.045 and above / reps < 0.045
    assert wald_above / reps > 0.10
