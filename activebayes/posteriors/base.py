"""The protocol every posterior approximation follows.

    fit(x [N, ...], y [N]) -> self
    predict(x [N, ...], n_samples=None) -> Predictive with probs [S, N, C]
    predict_proba(x [N, ...]) -> Tensor [N, C], the posterior predictive mean
    to(device) -> self, the fitted posterior moved ("auto", "cpu", "cuda[:i]")
    get_params() -> {argument: value}, the constructor arguments (scikit-learn style), so that
        type(p)(**p.get_params()) is an unfitted copy (`clone`)

Constructors store configuration only (checked there); `fit` does the work and sets attributes
ending in `_`. Sampling at prediction time is seeded from the posterior's `seed`, independently
of batching, so scores do not depend on how a pool is split into batches.
The network posteriors share one base, `_network.NetworkPosterior`.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol, TypeVar, runtime_checkable

import torch
from torch import Tensor

from activebayes.errors import NotFittedError
from activebayes.predictive import Predictive


@runtime_checkable
class Posterior(Protocol):
    """What the loop, the scorer and the acquisitions need of a posterior (module docstring)."""

    def fit(self, x: Tensor, y: Tensor) -> Posterior:
        """Fit on items x [N, ...] and labels y [N] (class indices, or targets for regression); returns self."""
        ...

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive:
        """S posterior samples of the predictive for x [N, ...]: probs [S, N, C] (a
        GaussianPredictive for regression); S = n_samples, or the posterior's default."""
        ...

    def predict_proba(self, x: Tensor) -> Tensor:
        """The posterior predictive mean [N, C] (closed form where one exists, e.g. Laplace's probit)."""
        ...

    def to(self, device: str | torch.device) -> Posterior:
        """The fitted posterior moved to `device` ("auto", "cpu", "cuda[:i]"); returns self."""
        ...

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments, so that type(p)(**p.get_params()) is an unfitted copy."""
        ...


P = TypeVar("P")


def clone(posterior: P) -> P:
    """An unfitted copy of `posterior`: type(posterior)(**posterior.get_params()). An object
    without `get_params` (outside the protocol) is deep-copied instead."""
    get_params = getattr(posterior, "get_params", None)
    if get_params is None:
        return copy.deepcopy(posterior)
    return type(posterior)(**get_params())


def check_fitted(posterior: object, attribute: str) -> None:
    """Raise NotFittedError unless `fit` has set `attribute`."""
    if getattr(posterior, attribute, None) is None:
        name = type(posterior).__name__
        raise NotFittedError(f"{name}: call fit(x, y) before predict")
