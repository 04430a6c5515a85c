"""The 95 % intervals of a LURE estimate R̂ of a pool's mean loss (`activebayes.estimates`).

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

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile
Z95_OF_TWO = 2.241402727604945  # its 98.75 % quantile: each of two intervals whose sum is 95 % (`summed_estimate`)
MIN_SQUARED_CV = 6.0  # κ: a skewed loss's summands are taken as at least this dispersed (`chi2_interval`)


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
    from scipy import special  # stdtrit and ndtr are scipy.stats.t.ppf's and norm.cdf's own, without importing scipy.stats (seconds)

    return float(special.stdtrit(m - 1, special.ndtr(z)))


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
    from scipy import special  # scipy.stats' norm.sf, chi2.isf and chi2.ppf are these (see t_quantile)

    if m < 2 or not math.isfinite(wald_var):
        return 0.0, math.inf
    if value <= 0.0:
        return 0.0, 0.0
    nu = min(satterthwaite_dof(value, wald_var, m), 2.0 * m / kappa)
    tail = float(special.ndtr(-z))  # 1 − Φ(z)
    low = nu * value / float(special.chdtri(nu, tail))  # χ²_{1−α/2, ν}
    return low, (nu * value / float(2.0 * special.gammaincinv(nu / 2.0, tail)) if 2.0 * m >= kappa else math.inf)  # χ²_{α/2, ν}


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
