"""Unbiased estimates of a model's loss over a pool from labels chosen actively.

A pool holds N items with losses L_1 .. L_N under a fixed model (0-1 loss, NLL, squared error).
M of them are drawn one at a time without replacement, the m-th from a proposal q_m over the
items still left (it may depend on the draws before it), and labelled. Their plain mean loss is
biased: an acquisition prefers the items the model gets wrong. LURE (the levelled unbiased risk
estimator of Farquhar, Gal & Rainforth, "On statistical bias in active learning: how and when to
fix it", ICLR 2021, eq. 4) weights each draw:

    R̂_LURE = (1/M) Σ_{m=1..M} v_m L_{i_m},
    v_m = 1 + (N − M)/(N − m) · (1 / ((N − m + 1) q_m(i_m)) − 1),

and E[R̂_LURE] = (1/N) Σ_i L_i exactly, for any proposal that gives every item left a positive
probability. A uniform draw has q_m = 1/(N − m + 1), so v_m = 1: the plain mean. With M = N every
item is drawn and R̂ is the pool mean itself (v ≡ 1). The weights agree with the authors' active
testing code (`FancyUnbiasedRiskEstimator` of github.com/jlko/active-testing).

Active testing (Kossen, Farquhar, Gal & Rainforth, ICML 2021) draws labels for evaluation alone,
with q ∝ the loss the model is expected to make on each item under a surrogate of the truth (here
the model's own predictive: `expected_loss`), mixed with a uniform share so that no weight is
unbounded (`proposal_weights`), and estimates with the same R̂_LURE.

Intervals (`lure_estimate`): the summands z_m = v_m L_{i_m} are treated as exchangeable, so
Var R̂ ≈ s_z² / M (s_z² their sample variance, M − 1 degrees of freedom). With M = 10 draws and
weights that vary by an order of magnitude, s_z² is itself noisy, and an interval that treats it
as the true variance (a normal quantile z = 1.96) is too short: the studentised
(R̂ − R)/(s_z/√M) has heavier tails than the normal. So the quantile is Student's
t = t_{0.975, M−1} (`t_quantile`; 2.262 at M = 10, → z as M grows). A loss of either sign (a
Gaussian NLL) gets the Wald interval R̂ ± t · s_z/√M. A loss in [0, 1] (the 0-1 loss, whose
mean is 1 − accuracy) gets Wilson's score interval of p̂ = clip(R̂, 0, 1) on the effective number
of trials that gives the same variance, n = p̂(1 − p̂) / (s_z²/M), scaled by Korn & Graubard's
degrees-of-freedom factor (`df_adjusted_size`):

    n_df = n · (z / t_{0.975, M−1})²

(Korn & Graubard 1998, "Confidence intervals for proportions with small expected number of
positive counts estimated from survey data", Survey Methodology 24(2); their factor is
(t_{n−1}/t_d)² for n observations and a variance on d degrees of freedom, calibrated against the
exact binomial of a simple random sample of n. Here every draw is its own unit, so n − 1 = d =
M − 1 and that ratio is 1; the reference here is Wilson's interval, which assumes the variance
known, so the numerator is the normal quantile z.) Wilson's interval depends on (n, z) only
through z²/n, so Wilson(p̂, n_df, z) = Wilson(p̂, n, t): the score interval with t in place of z,
as the Wald interval has. It stays inside [0, 1] and is not symmetric near its ends. Korn &
Graubard form Clopper–Pearson's interval; Wilson's is kept: over the benchmark's 910 stored
rounds of studies/estimates it covered more often than Clopper–Pearson's on n (their factor of 1
here; 0.92 against 0.91 of the test accuracy) with shorter intervals (0.45 against 0.48), while
Clopper–Pearson's on n_df over-covered (0.94 there, 0.99 on digits and MNIST) at a width about
1.2 times Wilson's (studies/estimates/results/results.md). Where s_z² = 0
(every drawn item right, or every one wrong) or p̂ ∈ {0, 1}, n is Kish's effective sample size
of the weights, (Σ v)² / Σ v², so that 10 right answers still leave an interval, scaled by the
same factor. Kish's size alone would ignore that a good proposal draws the costly items often,
so gives them small weights, and would give a wider interval than the variance warrants. How
often the intervals covered the test and pool accuracy on the rounds of `studies/estimates`
(10 labels each) is in README_EXPERIMENTS.md.

Nonnegative unbounded losses (`lure_estimate(skewed=True)`: squared errors, whose mean is the MSE
and its root a regression's RMSE, and categorical NLLs) get neither: their summands are far from
normal (a Gaussian residual's square is σ²χ²_1, skewness 2√2; an NLL is near 0 on most items and
large on the few the model gets confidently wrong), and s_z² rises and falls with R̂, so a few
small draws give a low R̂ *and* a short Wald interval. With M = 8 uniform draws of Gaussian
residuals the Wald interval R̂ ± t·s_z/√M missed the pool's MSE from below about 15 % of the time
(nominal 2.5 %), and on classifiers' NLLs it held the pool's NLL in 48-91 % of seeded draws of 2 to
60 labels (figures below). They get Satterthwaite's scaled-χ² interval instead (Satterthwaite 1946,
"An approximate distribution of estimates of variance components", Biometrics Bulletin 2(6)): R̂ is
taken as R·χ²_ν/ν with ν matching its mean and variance, ν̂ = 2R̂² / (s_z²/M), so

    [ν R̂ / χ²_{0.975, ν},  ν R̂ / χ²_{0.025, ν}],   ν = min(ν̂, 2M / κ),   κ = MIN_SQUARED_CV = 6

(`chi2_interval`; no upper end while 2M/κ < 1, under 3 draws). ν̂ = 2M / ĉ² where ĉ² = s_z²/R̂² is
the summands' squared coefficient of variation, and the cap says: take ĉ² to be at least κ whatever
M draws show. Gaussian residuals of one variance have c² = 2 (M R̂/σ² ~ χ²_M, and ν = M would be
exact); residuals of unequal variances σ_i² have c² = 3 E[σ⁴]/E[σ²]² − 1 > 2, unequal LURE weights
raise it further, and a skewed pool's sample ĉ² is biased low because its few large losses are
usually not drawn: a handful of draws cannot show the tail that carries the mean. The cap at κ = 6
(ν ≤ M/3) is what seeded simulations needed (a pool of 1,000 items, 1,000 draws of M = 2, 5, 10,
20, 60 labels each, uniform, by the active-testing proposal, or auto's fixed items plus M random;
`studies/estimates/coverage.py 1000 --kappa K`, and with the code before this interval for the t
interval's figures; `tests/test_estimate_coverage.py` asserts κ = 6's): with κ = 2 (ν ≤ M) the interval of the MSE held the pool's in
85-91 % of uniform draws of residuals with log-normal scales (σ_i = exp(0.5·N(0, 1))) and in 71-90
% of draws of t_3 residuals, and the t interval of a categorical NLL held it in 48-91 %; κ = 4
still left 85 % (t_3, auto, 20 draws) and 83 % (NLL, 10 draws). With κ = 6: 96-100 % and 92-98 %
for those residuals, 91-99 % for the NLL, and one-variance Gaussian residuals, where ν = M was
exact, over-cover (99-100 %): the price is width (an RMSE's upper end at most 3.4 times the
estimate at 10 draws where ν = M gave 1.75). Heavier tails than these (residual scales exp(N(0,
1)), whose squares have c² ≈ 160: 62 % at 60 draws; a classifier confidently wrong on 2 % of items
that its own proposal rarely draws: 79 % at 60) are still missed below: no interval from the draws
alone can see a tail it has not drawn (Bahadur & Savage 1956).

The RMSE shown is not √R̂: √ is concave, so E[√R̂] < √R (Jensen), by 11 % at two Gaussian draws.
Under the same scaled-χ² model, E[√(R·X)] = c(ν)·√R with X ~ χ²_ν/ν and c(ν) = √(2/ν)·Γ((ν+1)/2) /
Γ(ν/2), so √R̂ / c(ν) is unbiased for √R (`root_value`, `Estimate.root`; ν = min(ν̂, M), the
model's best fit, not the interval's cautious one). After D exact items (`stratified_estimate`) the
MSE is a + b·R̂ with a known, and the value shown is √(a + bR̂)² / E[√(a + bR̂·X)] (the same
correction of the random part alone). The interval is the χ² interval's root: a monotone map keeps
coverage.

Shapes: M drawn items; every array argument is [M] unless said otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from activebayes.errors import ConfigError, ShapeError
from activebayes.row_weights import row_shares

Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile
Z95_OF_TWO = 2.241402727604945  # its 98.75 % quantile: each of two intervals whose sum is 95 % (`summed_estimate`)
PROBABILITY_FLOOR = 1e-12  # p(y) below this counts as this in a categorical NLL
UNIFORM_SHARE = 0.1  # the uniform part of the active-testing proposal (`proposal_weights`)
MIN_SQUARED_CV = 6.0  # κ: a skewed loss's summands are taken as at least this dispersed (`chi2_interval`)


def _vector(name: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ShapeError(f"{name}: expected a vector [M], got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ShapeError(f"{name}: expected finite numbers, got {array[~np.isfinite(array)][:3].tolist()}")
    return array


def lure_weights(probabilities: Sequence[float] | np.ndarray, pool_size: int) -> np.ndarray:
    """v [M] of M sequential draws from a pool of N = `pool_size` (module docstring):

        v_m = 1 + (N − M)/(N − m) · (1/((N − m + 1) q_m) − 1),   m = 1 .. M;   v ≡ 1 when M = N.

    probabilities: q_m of each drawn item at its draw, in draw order, each in (0, 1].

    >>> lure_weights([0.25, 1 / 3], 4)        # uniform draws: all weights 1
    array([1., 1.])
    >>> lure_weights([0.5], 4).round(4)        # drawn twice as often as uniform: weight 1/2
    array([0.5])
    """
    q = _vector("probabilities", probabilities)
    m_total, n = q.shape[0], int(pool_size)
    if isinstance(pool_size, bool) or n < m_total or n < 1:
        raise ShapeError(f"pool_size: expected N >= M = {m_total} items, got {pool_size!r}")
    if np.any(q <= 0) or np.any(q > 1 + 1e-9):
        raise ShapeError(f"probabilities: expected each q_m in (0, 1], got {q[(q <= 0) | (q > 1 + 1e-9)][:3].tolist()}")
    if m_total == n:
        return np.ones(m_total)
    m = np.arange(1, m_total + 1, dtype=np.float64)
    return 1.0 + (n - m_total) / (n - m) * (1.0 / ((n - m + 1.0) * q) - 1.0)


@dataclass(frozen=True)
class Estimate:
    """An estimate of a pool's mean loss and its 95 % interval.

    value: the estimate. low, high: the interval. n: labels it rests on (M). pool: the pool
    size N it speaks for. interval: "wilson" (a loss in [0, 1]), "chi2" (a skewed nonnegative
    loss), "wald" (module docstring) or "sum" (`summed_estimate`). dof: a "chi2" estimate's ν = min(ν̂, M) of its drawn part
    (None otherwise). known: the part of `value` known exactly (`stratified_estimate`'s fixed
    items; 0 without them).
    """

    value: float
    low: float
    high: float
    n: int
    pool: int
    interval: str
    dof: float | None = None
    known: float = 0.0

    @property
    def half_width(self) -> float:
        """Half the interval's width (the "±" of a report)."""
        return (self.high - self.low) / 2.0

    def covers(self, truth: float) -> bool:
        """The interval holds `truth` (ends included)."""
        return self.low <= truth <= self.high

    def map(self, f, *, increasing: bool = True) -> Estimate:  # noqa: ANN001
        """The estimate of f(loss) for a monotone f (e.g. accuracy = 1 − 0-1 loss, decreasing;
        RMSE = √MSE, increasing): the value and both ends mapped, the ends swapped for a
        decreasing f. A monotone map keeps the interval's coverage."""
        low, high = (f(self.low), f(self.high)) if increasing else (f(self.high), f(self.low))
        return Estimate(float(f(self.value)), float(low), float(high), self.n, self.pool, self.interval)

    def root(self) -> Estimate:
        """The estimate of √(mean loss) (an RMSE from an MSE): the interval's ends mapped by √ and
        the value corrected for Jensen's bias (`root_value`, module docstring)."""
        mapped = self.map(math.sqrt)
        if self.dof is None or self.value <= 0.0:
            return mapped
        value = root_value(self.value, self.known, self.dof)
        return Estimate(min(max(value, mapped.low), mapped.high), mapped.low, mapped.high, self.n, self.pool, self.interval)


def wilson_interval(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion p observed on n (possibly fractional) trials:
    (p + z²/2n ± z √(p(1 − p)/n + z²/4n²)) / (1 + z²/n)."""
    if n <= 0:
        return 0.0, 1.0
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n))
    denominator = 1 + z * z / n
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


def t_quantile(m: int, z: float = Z95) -> float:
    """Student's t quantile with M − 1 degrees of freedom at the level of the normal quantile z
    (t_{0.975, M−1} for z = Z95): the quantile for a mean whose variance is estimated from M
    draws. inf for M < 2 (no variance can be estimated).

    >>> round(t_quantile(10), 4)
    2.2622
    """
    if m < 2:
        return math.inf
    from scipy import stats

    return float(stats.t.ppf(stats.norm.cdf(z), m - 1))


def df_adjusted_size(n_eff: float, m: int, z: float = Z95) -> float:
    """Korn & Graubard's degrees-of-freedom adjusted effective size n · (z / t_{M−1})² (module
    docstring): Wilson's interval on it is Wilson's interval on n with t_{M−1} in place of z.
    0 for M < 2 (Wilson's interval on it is [0, 1])."""
    t = t_quantile(m, z)
    return n_eff * (z / t) ** 2 if math.isfinite(t) else 0.0


def effective_trials(p: float, wald_var: float, v: np.ndarray) -> float:
    """The effective number of trials of a proportion p̂ = `p` in [0, 1] whose estimate has
    variance `wald_var` = s_z²/M, before the degrees-of-freedom adjustment (module docstring):
    p̂(1 − p̂) / wald_var, or Kish's (Σ v)² / Σ v² of the weights v [M] where p̂ ∈ {0, 1} or the
    variance is 0 or unknown."""
    kish = float(v.sum() ** 2 / np.square(v).sum()) if np.any(v > 0) else float(v.shape[0])
    degenerate = p in (0.0, 1.0) or not 0.0 < wald_var < math.inf
    return kish if degenerate else p * (1 - p) / wald_var


def satterthwaite_dof(value: float, wald_var: float, m: int) -> float:
    """ν̂ = 2R̂² / wald_var of a mean R̂ = `value` of M = `m` draws whose estimate has variance
    `wald_var` = s_z²/M (module docstring), taken at most M (Gaussian residuals of one variance);
    M where wald_var is 0 (every draw alike).

    >>> satterthwaite_dof(1.0, 0.5, 8), satterthwaite_dof(1.0, 0.1, 8)
    (4.0, 8.0)
    """
    return float(m) if wald_var <= 0.0 else min(2.0 * value * value / wald_var, float(m))


def chi2_interval(value: float, wald_var: float, m: int, z: float = Z95, kappa: float = MIN_SQUARED_CV) -> tuple[float, float]:
    """Satterthwaite's scaled-χ² interval of a mean R̂ = `value` ≥ 0 of M = `m` draws of a skewed
    nonnegative loss whose estimate has variance `wald_var` = s_z²/M (module docstring):

        ν = min(2R̂² / wald_var, 2M/κ),   [ν R̂ / χ²_{1−α/2, ν},  ν R̂ / χ²_{α/2, ν}],   α/2 = 1 − Φ(z).

    ν = 2M/κ where wald_var is 0 (every draw alike); [0, inf] for M < 2 (no variance known);
    no upper end (inf) while 2M/κ < 1 (M < 3 draws at κ = 6: the upper end would be 10⁴ times
    R̂ or more); [0, 0] for R̂ = 0 (every draw exact, as the Wald interval gives).

    >>> [round(x, 4) for x in chi2_interval(1.0, 0.25, 8, kappa=2)]   # ν = 8: the interval of σ² from χ²_8
    [0.4562, 3.6702]
    >>> [round(x, 4) for x in chi2_interval(1.0, 0.25, 6)]            # κ = 6: ν = 2
    [0.2711, 39.4979]
    >>> chi2_interval(1.0, 0.25, 2)[1]                                 # 2 draws: no upper end
    inf
    """
    from scipy import stats

    if m < 2 or not math.isfinite(wald_var):
        return 0.0, math.inf
    if value <= 0.0:
        return 0.0, 0.0
    nu = min(satterthwaite_dof(value, wald_var, m), 2.0 * m / kappa)
    tail = float(stats.norm.sf(z))
    low = nu * value / float(stats.chi2.isf(tail, nu))
    return low, (nu * value / float(stats.chi2.ppf(tail, nu)) if 2.0 * m >= kappa else math.inf)


def root_value(value: float, known: float, dof: float) -> float:
    """The Jensen-corrected root of a mean loss R = a + (R − a) with a = `known` exact and the rest
    R̂ − a taken as (R − a)·χ²_ν/ν, ν = `dof` (module docstring):

        √R̂ · √R̂ / E[√(a + (R̂ − a)·X)],   X ~ χ²_ν/ν   (= √R̂ / c(ν) for a = 0)

    >>> round(root_value(1.0, 0.0, 2.0), 4)     # 1 / c(2) = 1 / (Γ(3/2)/Γ(1)) = 2/√π
    1.1284
    >>> root_value(4.0, 4.0, 2.0)               # all of it known: no correction
    2.0
    """
    from scipy import integrate

    if value <= 0.0:
        return 0.0
    rest = max(value - known, 0.0)
    if rest == 0.0:
        return math.sqrt(value)
    if known <= 0.0:
        c = math.exp(0.5 * math.log(2.0 / dof) + math.lgamma((dof + 1.0) / 2.0) - math.lgamma(dof / 2.0))
        return math.sqrt(value) / c
    shape, scale = dof / 2.0, 2.0 / dof  # χ²_ν/ν is Gamma(ν/2, scale 2/ν)
    log_norm = math.lgamma(shape) + shape * math.log(scale)

    def integrand(x: float) -> float:  # √(a + (R̂ − a)x) times the Gamma density, in floats (scipy's frozen pdf: 100x the time)
        if x <= 0.0:  # the density at 0: 1/scale for ν = 2 (an exponential), else 0 (ν > 2) or a pole quad never evaluates
            return math.sqrt(known) / scale if shape == 1.0 else 0.0
        return math.sqrt(known + rest * x) * math.exp((shape - 1.0) * math.log(x) - x / scale - log_norm)

    mean_root = integrate.quad(integrand, 0.0, math.inf, limit=200)[0]
    return value / mean_root


def lure_estimate(
    losses: Sequence[float] | np.ndarray,
    probabilities: Sequence[float] | np.ndarray,
    pool_size: int,
    *,
    bounded: bool = False,
    nonnegative: bool = True,
    skewed: bool = False,
    z: float = Z95,
    sizes: Sequence[int] | np.ndarray | None = None,
    rows: int | None = None,
) -> Estimate:
    """R̂_LURE of the pool's mean loss and its interval (module docstring).

    losses: L [M] of the drawn items, in draw order. probabilities: q [M] at each draw.
    sizes, rows: when the N = `pool_size` items drawn from are distinct inputs standing for
    groups of rows, the rows m [M] of each drawn input's group and R the rows of all N; the
    estimate is then of the mean over the R rows, R̂_rows = (1/M) Σ v_m ρ_m L_m, ρ_m = N m_m / R
    (`activebayes.row_weights`), and its `pool` is R. None: every item one row (ρ ≡ 1).
    bounded: the loss lies in [0, 1] (Wilson interval). nonnegative: clip the interval at 0.
    skewed: the losses are nonnegative and right-skewed, squared errors or NLLs (the scaled-χ²
    interval, `chi2_interval`; `dof` kept for `Estimate.root`).
    z: the normal quantile of the level (Z95: 95 %); the interval uses t_{M−1} at that level.

    >>> e = lure_estimate([0.0, 1.0, 0.0, 0.0], [0.25, 1 / 3, 0.5, 1.0], 4, bounded=True)
    >>> e.value                               # M = N: the pool mean
    0.25
    """
    losses_a = _vector("losses", losses)
    q = _vector("probabilities", probabilities)
    if losses_a.shape != q.shape:
        raise ShapeError(f"losses, probabilities: expected one probability per loss, got {losses_a.shape[0]} and {q.shape[0]}")
    m = losses_a.shape[0]
    if m == 0:
        raise ShapeError("losses: expected at least one labelled draw, got none")
    v = lure_weights(q, pool_size)
    population = int(pool_size if rows is None else rows)
    if sizes is not None or rows is not None:  # distinct inputs standing for groups of rows
        shares = row_shares(np.ones(m) if sizes is None else sizes, population, int(pool_size))
        if shares.shape != q.shape:
            raise ShapeError(f"sizes: expected one group size per loss, got {shares.shape[0]} and {m}")
        v = v * shares  # [M] the per-row weights v_m ρ_m
    z_terms = v * losses_a  # [M]
    value = float(z_terms.mean())
    wald_var = float(z_terms.var(ddof=1)) / m if m > 1 else math.inf
    if bounded:
        if np.any((losses_a < 0) | (losses_a > 1)):
            raise ShapeError("losses: a bounded loss must lie in [0, 1]")
        p = min(max(value, 0.0), 1.0)
        low, high = wilson_interval(p, df_adjusted_size(effective_trials(p, wald_var, v), m, z), z)
        return Estimate(value, low, high, m, population, "wilson")
    if skewed:
        if np.any(losses_a < 0):
            raise ShapeError("losses: a skewed loss (squared errors, NLLs) must be nonnegative")
        low, high = chi2_interval(value, wald_var, m, z)
        return Estimate(value, low, high, m, population, "chi2", dof=satterthwaite_dof(value, wald_var, m) if m > 1 else None)
    half = t_quantile(m, z) * math.sqrt(wald_var) if math.isfinite(wald_var) else math.inf
    low = value - half
    return Estimate(value, max(low, 0.0) if nonnegative else low, value + half, m, population, "wald")


def stratified_estimate(fixed_losses: Sequence[float] | np.ndarray, drawn_losses: Sequence[float] | np.ndarray,
                        probabilities: Sequence[float] | np.ndarray, pool_size: int, *, fixed_sizes: Sequence[int] | None = None,
                        drawn_sizes: Sequence[int] | None = None, rows: int | None = None, **options: Any) -> Estimate:  # fmt: skip
    """The pool's mean loss when D items were chosen deterministically first (their losses known:
    `fixed_losses` [D]) and M more drawn at random from the N − D left (`drawn_losses` [M],
    `probabilities` [M]; `options`: `lure_estimate`'s bounded, nonnegative, skewed, z), as `auto`'s batch
    (an arm's top-k, then a uniform random share) is:

        R̂ = (Σ_fixed L + (N − D) · R̂_LURE(drawn; N − D)) / N

    unbiased because the deterministic part is known exactly given the model, and its interval
    is R̂_LURE's mapped by the same affine map (`known` = Σ_fixed L / N). D = 0 is `lure_estimate`.
    With `rows` R (the N items distinct inputs standing for groups of rows; `fixed_sizes` [D] and
    `drawn_sizes` [M] their groups' rows, None for one each) it is the mean over the R rows:
    (Σ_fixed m L + R' · R̂_rows(drawn; N − D, R')) / R, R' = R − Σ_fixed m (`activebayes.row_weights`).
    """
    fixed = _vector("fixed_losses", fixed_losses)
    d, n = fixed.shape[0], int(pool_size)
    fixed_m = np.ones(d) if fixed_sizes is None else _vector("fixed_sizes", fixed_sizes)
    if fixed_m.shape != fixed.shape:
        raise ShapeError(f"fixed_sizes: expected one group size per fixed loss, got {fixed_m.shape[0]} and {d}")
    total = n if rows is None else int(rows)
    rest_rows = total - int(fixed_m.sum())
    per_row = {} if rows is None else {"sizes": drawn_sizes, "rows": rest_rows}
    rest = lure_estimate(drawn_losses, probabilities, n - d, **per_row, **options)
    if d == 0:
        return rest
    share = rest_rows / total
    known = float(fixed_m @ fixed) / total
    return Estimate(known + share * rest.value, known + share * rest.low, known + share * rest.high,
                    d + rest.n, total, rest.interval, rest.dof, known)  # fmt: skip


# ---- per-item losses ---------------------------------------------------------------------------
def zero_one_loss(predicted: Sequence[object], labels: Sequence[object]) -> np.ndarray:
    """[M] 1 where the predicted class differs from the label, else 0 (compared as text)."""
    if len(predicted) != len(labels):
        raise ShapeError(f"predicted, labels: expected as many predictions as labels, got {len(predicted)} and {len(labels)}")
    return np.asarray([float(str(p) != str(y)) for p, y in zip(predicted, labels)], dtype=np.float64)


def categorical_nll(label_probabilities: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] −log p(y_m | x_m), p clamped below at PROBABILITY_FLOOR."""
    p = _vector("label_probabilities", label_probabilities)
    return -np.log(np.clip(p, PROBABILITY_FLOOR, 1.0))


def squared_error(means: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] (y_m − μ_m)²."""
    return np.square(_vector("targets", targets) - _vector("means", means))


def gaussian_nll(means: Sequence[float] | np.ndarray, sds: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] −log N(y_m; μ_m, σ_m²) = ½ log 2πσ_m² + (y_m − μ_m)² / 2σ_m² (σ clamped at 1e-12)."""
    var = np.square(np.maximum(_vector("sds", sds), 1e-12))
    return 0.5 * np.log(2 * np.pi * var) + gaussian_misfit(means, sds, targets)


def gaussian_misfit(means: Sequence[float] | np.ndarray, sds: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray) -> np.ndarray:
    """[M] (y_m − μ_m)² / 2σ_m², the Gaussian NLL's nonnegative, skewed part (½χ²_1 for a calibrated
    predictive); the rest, ½ log 2πσ_m², is a log of the predictive variance (σ clamped at 1e-12)."""
    var = np.square(np.maximum(_vector("sds", sds), 1e-12))
    return squared_error(means, targets) / (2 * var)


def summed_estimate(first: Estimate, second: Estimate) -> Estimate:
    """The estimate of the sum of two pool means from theirs, each formed at level 1 − α/2
    (z = Z95_OF_TWO for 95 %): value a + b, interval [low_a + low_b, high_a + high_b]. It holds
    a + b with probability ≥ 1 − α whatever the two estimates' dependence (Bonferroni: it can
    miss only where one of the two misses). A Gaussian NLL is summed so (`round_estimates`): its
    log-variance part gets the Wald interval, its skewed misfit part the scaled-χ² one, where a
    t interval on the whole held the pool's NLL in 84-92 % of seeded draws of Gaussian residuals.

    >>> e = summed_estimate(Estimate(1.0, 0.5, 1.5, 4, 10, "wald"), Estimate(0.5, 0.2, 2.0, 4, 10, "chi2", 3.0))
    >>> (e.value, e.low, e.high, e.interval, e.dof)
    (1.5, 0.7, 3.5, 'sum', None)
    """
    return Estimate(first.value + second.value, first.low + second.low, first.high + second.high, first.n, first.pool, "sum")


# ---- active testing's proposal ----------------------------------------------------------------
LOSSES = ("zero-one", "nll", "squared-error")


def expected_loss(probs_or_var: np.ndarray, loss: str = "zero-one") -> np.ndarray:
    """[N] the loss the model expects to make on each item when its own predictive is the
    surrogate of the truth (Kossen et al. 2021, section 3, with the model as its own surrogate):

        zero-one:       E_{y ~ p}[1(ŷ ≠ y)] = 1 − max_c p_c            (probs [N, C])
        nll:            E_{y ~ p}[−log p_y] = H[p] = −Σ_c p_c log p_c     (probs [N, C])
        squared-error:  E_{y ~ N(μ, σ²)}[(y − μ)²] = σ²                 (predictive variances [N])
    """
    array = np.asarray(probs_or_var, dtype=np.float64)
    if loss == "squared-error":
        if array.ndim != 1:
            raise ShapeError(f"probs_or_var: squared-error expects predictive variances [N], got shape {array.shape}")
        return np.maximum(array, 0.0)
    if loss not in LOSSES:
        raise ConfigError(f"loss: expected one of {', '.join(LOSSES)}, got {loss!r}")
    if array.ndim != 2:
        raise ShapeError(f"probs_or_var: {loss} expects class probabilities [N, C], got shape {array.shape}")
    if loss == "zero-one":
        return 1.0 - array.max(axis=1)
    return -(array * np.log(np.clip(array, PROBABILITY_FLOOR, 1.0))).sum(axis=1)


def proposal_weights(expected: np.ndarray, uniform_share: float = UNIFORM_SHARE) -> np.ndarray:
    """[N] the active-testing proposal over the pool, summing to 1:

        w_i = (1 − ε) e_i / Σ_j e_j + ε / N        (e = `expected`, ε = `uniform_share`)

    The uniform share bounds every weight's 1/q by N/ε (the unbiased estimator needs q > 0
    wherever the loss is not 0, and a surrogate that is sure it is right is sometimes wrong).
    Draws without replacement renormalise w over the items left (`lure_weights`' q_m).
    """
    e = _vector("expected", expected)
    if not 0.0 < uniform_share <= 1.0:
        raise ConfigError(f"uniform_share: expected a share in (0, 1], got {uniform_share!r}")
    e = np.maximum(e, 0.0)
    n = e.shape[0]
    if n == 0:
        raise ShapeError("expected: the pool is empty")
    total = e.sum()
    informed = e / total if total > 0 else np.full(n, 1.0 / n)
    return (1.0 - uniform_share) * informed + uniform_share / n
