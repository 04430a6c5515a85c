"""The small-sample interval of `activebayes.estimates.lure_estimate`: Korn & Graubard's
degrees-of-freedom adjustment (closed forms) and its coverage by simulation on a seeded pool."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from activebayes.acquisition.batch import uniform_draw_probabilities
from activebayes.estimates import (
    MIN_SQUARED_CV,
    Z95,
    chi2_interval,
    df_adjusted_size,
    effective_trials,
    lure_estimate,
    lure_weights,
    proposal_weights,
    satterthwaite_dof,
    t_quantile,
    wilson_interval,
)

T9 = 2.262157162798205  # Student's t_{0.975, 9}


# ---- closed forms -----------------------------------------------------------------------------
def test_t_quantile_has_m_minus_one_degrees_of_freedom():
    assert t_quantile(10) == pytest.approx(T9, rel=1e-12)
    assert t_quantile(4) == pytest.approx(stats.t.ppf(0.975, 3), rel=1e-12)
    assert t_quantile(10, z=stats.norm.ppf(0.95)) == pytest.approx(stats.t.ppf(0.95, 9), rel=1e-12)  # a 90 % level
    assert t_quantile(1) == math.inf


def test_the_quantiles_are_scipy_stats_own_to_the_bit():
    """t_quantile and chi2_interval call scipy.special (importing scipy.stats takes seconds):
    the same numbers as scipy.stats' t, norm and chi2, exactly."""
    for m in (2, 3, 5, 10, 31, 200, 5000):
        for z in (Z95, 2.241402727604945, 1.0):
            assert t_quantile(m, z) == float(stats.t.ppf(stats.norm.cdf(z), m - 1))
            for value, var in ((0.35, 0.02), (1.0, 0.25), (3.0, 10.0)):
                nu = min(satterthwaite_dof(value, var, m), 2.0 * m / MIN_SQUARED_CV)
                tail = float(stats.norm.sf(z))
                high = nu * value / float(stats.chi2.ppf(tail, nu)) if 2.0 * m >= MIN_SQUARED_CV else math.inf
                assert chi2_interval(value, var, m, z) == (nu * value / float(stats.chi2.isf(tail, nu)), high)


def test_the_intervals_leave_scipy_stats_unimported():
    """`status` shows each round's interval: scipy.stats, which the quantiles need not, would
    add seconds to its start (a structural check, not a timing)."""
    probe = (
        "import sys; from activebayes.estimates import chi2_interval, lure_estimate, t_quantile; "
        "t_quantile(10); chi2_interval(1.0, 0.25, 8); print('scipy.stats' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False"]


def test_the_effective_size_is_scaled_by_z_over_t_squared():
    assert df_adjusted_size(8.0, 10) == pytest.approx(8.0 * (Z95 / T9) ** 2, rel=1e-12)
    assert (Z95 / T9) ** 2 == pytest.approx(0.750673, abs=1e-6)  # the interval widens by about 1/0.866
    assert df_adjusted_size(8.0, 1) == 0.0  # one draw: no variance, Wilson's interval is [0, 1]
    assert wilson_interval(0.3, df_adjusted_size(8.0, 1)) == (0.0, 1.0)


def test_wilson_on_the_adjusted_size_is_wilson_with_t_for_z():
    for p, n, m in ((0.2, 7.5, 10), (0.0, 10.0, 10), (0.9, 3.2, 4)):
        adjusted = wilson_interval(p, df_adjusted_size(n, m))
        assert adjusted == pytest.approx(wilson_interval(p, n, z=t_quantile(m)), abs=1e-14)


def test_a_bounded_estimate_is_wilson_on_the_adjusted_effective_size():
    losses, q, pool = np.array([1.0, 0.0, 0.0, 1.0, 0.0]), np.array([0.1, 0.02, 0.3, 0.05, 0.04]), 40
    v = lure_weights(q, pool)
    terms = v * losses
    p = terms.mean()
    n = p * (1 - p) / (terms.var(ddof=1) / 5)
    estimate = lure_estimate(losses, q, pool, bounded=True)
    assert effective_trials(p, terms.var(ddof=1) / 5, v) == pytest.approx(n)
    assert (estimate.low, estimate.high) == pytest.approx(wilson_interval(p, n * (Z95 / stats.t.ppf(0.975, 4)) ** 2), abs=1e-14)


def test_all_right_uses_kish_size_adjusted():
    # 10 uniform draws, all right: n = Kish = 10; Wilson's upper end at p = 0 is c / (1 + c), c = t²/n
    estimate = lure_estimate(np.zeros(10), uniform_draw_probabilities(100, 10).numpy(), 100, bounded=True)
    c = T9**2 / 10
    assert estimate.low == 0.0 and estimate.high == pytest.approx(c / (1 + c), rel=1e-12)


def test_the_wald_interval_uses_t():
    losses = np.array([0.5, 1.5, 1.0, 2.0])
    estimate = lure_estimate(losses, uniform_draw_probabilities(50, 4).numpy(), 50)
    half = stats.t.ppf(0.975, 3) * losses.std(ddof=1) / 2
    assert (estimate.low, estimate.high) == pytest.approx((1.25 - half, 1.25 + half), rel=1e-12)


def test_many_draws_give_the_normal_interval():
    m = 4000
    losses = (np.arange(m) % 5 == 0).astype(float)  # p = 0.2
    q = uniform_draw_probabilities(10 * m, m).numpy()
    estimate = lure_estimate(losses, q, 10 * m, bounded=True)
    normal = wilson_interval(0.2, effective_trials(0.2, losses.var(ddof=1) / m, np.ones(m)))
    assert (estimate.low, estimate.high) == pytest.approx(normal, abs=2e-5)  # t_{3999} = z (1 + 3e-4)
    assert df_adjusted_size(5.0, 10**7) == pytest.approx(5.0, rel=1e-6)
    wald = lure_estimate(losses, q, 10 * m)
    assert wald.half_width == pytest.approx(Z95 * losses.std(ddof=1) / math.sqrt(m), rel=5e-4)


# ---- coverage by simulation -------------------------------------------------------------------
def sequential_draws(w: np.ndarray, m: int, reps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """reps sequential draws of m items without replacement, p ∝ w (Gumbel top-m: the order of
    log w + Gumbel noise is such a draw): positions [reps, m] and each q_m [reps, m]."""
    keys = np.log(w)[None, :] + rng.gumbel(size=(reps, len(w)))
    positions = np.argsort(-keys, axis=1)[:, :m]
    drawn = w[positions]
    left = w.sum() - np.concatenate([np.zeros((reps, 1)), np.cumsum(drawn, axis=1)[:, :-1]], axis=1)
    return positions, drawn / left


def test_the_adjusted_interval_covers_with_ten_unequal_weights():
    # N = 100 items, 20 wrong (pool error 0.2). The surrogate expects loss 0.5 on 10 of the wrong
    # items and 0.05 on every other item (it misses the other 10 errors): proposal weights 9x
    # apart, LURE weights an order of magnitude apart. 2,000 seeded draws of M = 10.
    n, m, reps = 100, 10, 2000
    losses = np.zeros(n)
    losses[:20] = 1.0
    expected = np.full(n, 0.05)
    expected[:10] = 0.5
    w = proposal_weights(expected)
    positions, q = sequential_draws(w, m, reps, np.random.default_rng(0))
    truth = losses.mean()
    adjusted = normal = 0
    for rows, qs in zip(positions, q):
        estimate = lure_estimate(losses[rows], qs, n, bounded=True)
        adjusted += estimate.covers(truth)
        v = lure_weights(qs, n)
        terms = v * losses[rows]
        p = min(max(terms.mean(), 0.0), 1.0)
        low, high = wilson_interval(p, effective_trials(p, terms.var(ddof=1) / m, v))
        normal += low <= truth <= high
    tolerance = 3 * math.sqrt(0.9 * 0.1 / reps)  # three binomial standard errors at 0.90
    assert adjusted / reps >= 0.90 - tolerance  # 0.94 with this seed (and a mean estimate of 0.199)
    assert normal / reps < 0.85  # the normal quantile's interval on the same draws: 0.81
