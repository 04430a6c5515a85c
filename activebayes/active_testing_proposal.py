"""Active testing's proposal: where to draw the labels that measure a model.

Active testing (Kossen, Farquhar, Gal & Rainforth, ICML 2021) draws labels for evaluation alone,
with q ∝ the loss the model is expected to make on each item under a surrogate of the truth (here
the model's own predictive: `expected_loss`), mixed with a uniform share so that no weight is
unbounded (`proposal_weights`), and estimates with the same R̂_LURE.

Shapes: N items of the pool, C classes.
"""

from __future__ import annotations

import numpy as np

from activebayes.errors import ConfigError, ShapeError
from activebayes.per_item_losses import PROBABILITY_FLOOR, finite_vector

UNIFORM_SHARE = 0.1  # the uniform part of the active-testing proposal (`proposal_weights`)
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
    e = finite_vector("expected", expected)
    if not 0.0 < uniform_share <= 1.0:
        raise ConfigError(f"uniform_share: expected a share in (0, 1], got {uniform_share!r}")
    e = np.maximum(e, 0.0)
    n = e.shape[0]
    if n == 0:
        raise ShapeError("expected: the pool is empty")
    total = e.sum()
    informed = e / total if total > 0 else np.full(n, 1.0 / n)
    return (1.0 - uniform_share) * informed + uniform_share / n
