"""The protocol every posterior approximation follows.

    fit(x [N, ...], y [N]) -> self
    predict(x [N, ...], n_samples=None) -> Predictive with probs [S, N, C]
    predict_proba(x [N, ...]) -> Tensor [N, C], the posterior predictive mean

Constructors store configuration only; `fit` does the work and sets attributes ending in `_`.
Sampling at prediction time is seeded from the posterior's `seed`, independently of batching, so
scores do not depend on how a pool is split into batches.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from torch import Tensor

from activebayes.errors import NotFittedError
from activebayes.predictive import Predictive


@runtime_checkable
class Posterior(Protocol):
    def fit(self, x: Tensor, y: Tensor) -> Posterior: ...

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive: ...

    def predict_proba(self, x: Tensor) -> Tensor: ...


def check_fitted(posterior: object, attribute: str) -> None:
    """Raise NotFittedError unless `fit` has set `attribute`."""
    if getattr(posterior, attribute, None) is None:
        name = type(posterior).__name__
        raise NotFittedError(f"{name}: call fit(x, y) before predict")
