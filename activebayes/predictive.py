"""The tensor every posterior returns and every acquisition function reads.

Glossary used throughout activebayes: S posterior samples, N candidates, C outcome classes,
D features, K batch size.

A `Predictive` holds p(y | x_n, θ_s) for S posterior samples θ_s with weights w_s (equal when
`weights` is None), so the posterior predictive is p(y | x_n) = Σ_s w_s p(y | x_n, θ_s).
A `GaussianPredictive` holds, for regression, y | x_n, θ_s ~ N(mean[s, n], var[s, n]).

>>> import torch
>>> pred = Predictive(torch.tensor([[[0.9, 0.1]], [[0.1, 0.9]]]))
>>> pred.mean()
tensor([[0.5000, 0.5000]])
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from activebayes.errors import ShapeError

_ROW_TOLERANCE = 1e-3  # float32 softmax rows sum to 1 within ~1e-6; users' tables may be rounded
_WEIGHT_TOLERANCE = 1e-4


def _check_rank(name: str, tensor: Tensor, rank: int, layout: str) -> None:
    if not isinstance(tensor, Tensor):
        raise ShapeError(f"{name}: expected a torch.Tensor {layout}, got {type(tensor).__name__}")
    if tensor.dim() != rank:
        raise ShapeError(f"{name}: expected {rank} dimensions {layout}, got shape {tuple(tensor.shape)}")
    if not tensor.is_floating_point():
        raise ShapeError(f"{name}: expected a floating-point tensor, got {tensor.dtype}")


def _check_finite(name: str, tensor: Tensor) -> None:
    if not bool(torch.isfinite(tensor).all()):
        raise ShapeError(f"{name}: contains NaN or infinite values")


def _check_weights(weights: Tensor | None, n_samples: int, like: Tensor) -> Tensor | None:
    if weights is None:
        return None
    if not isinstance(weights, Tensor):
        weights = torch.as_tensor(weights, dtype=like.dtype, device=like.device)
    _check_rank("weights", weights, 1, "[S]")
    if weights.shape[0] != n_samples:
        raise ShapeError(f"weights: expected S={n_samples} entries to match the samples, got {weights.shape[0]}")
    _check_finite("weights", weights)
    if bool((weights < 0).any()):
        raise ShapeError("weights: expected non-negative weights, got a negative one")
    total = float(weights.sum())
    if abs(total - 1.0) > _WEIGHT_TOLERANCE:
        raise ShapeError(f"weights: expected weights summing to 1, got a sum of {total:.6g}")
    return weights.to(device=like.device, dtype=like.dtype)


@dataclass(frozen=True)
class Predictive:
    """Per-sample categorical predictive distributions.

    Args:
        probs: [S, N, C] with each probs[s, n] a distribution over C outcomes.
        weights: [S] non-negative, summing to 1, or None for equal weights 1/S.
        check: validate on construction (rank, finiteness, rows summing to 1). Posteriors that
            build probabilities with a softmax pass False to stay free of host syncs.
    """

    probs: Tensor
    weights: Tensor | None = None
    check: bool = True

    def __post_init__(self) -> None:
        if not self.check:
            return
        _check_rank("probs", self.probs, 3, "[S, N, C]")
        _check_finite("probs", self.probs)
        if bool((self.probs < 0).any()):
            raise ShapeError("probs: expected probabilities >= 0, got a negative entry")
        worst = float((self.probs.sum(-1) - 1).abs().max()) if self.probs.numel() else 0.0
        if worst > _ROW_TOLERANCE:
            raise ShapeError(f"probs: expected each [s, n] row to sum to 1, a row is off by {worst:.3g}")
        object.__setattr__(self, "weights", _check_weights(self.weights, self.probs.shape[0], self.probs))

    @property
    def n_samples(self) -> int:
        return self.probs.shape[0]

    @property
    def n_candidates(self) -> int:
        return self.probs.shape[1]

    @property
    def n_classes(self) -> int:
        return self.probs.shape[2]

    def sample_weights(self) -> Tensor:
        """w [S]: the given weights, or 1/S each."""
        if self.weights is not None:
            return self.weights
        return torch.full((self.n_samples,), 1.0 / self.n_samples, dtype=self.probs.dtype, device=self.probs.device)

    def mean(self) -> Tensor:
        """Posterior predictive p(y | x_n) = Σ_s w_s p(y | x_n, θ_s), [N, C]."""
        return torch.einsum("s,snc->nc", self.sample_weights(), self.probs)

    def to(self, device: torch.device | str) -> Predictive:
        weights = None if self.weights is None else self.weights.to(device)
        return Predictive(self.probs.to(device), weights, check=False)

    def candidates(self, index: Tensor | slice) -> Predictive:
        """The same samples restricted to some candidates: probs[:, index]."""
        return Predictive(self.probs[:, index], self.weights, check=False)


@dataclass(frozen=True)
class GaussianPredictive:
    """Per-sample Gaussian predictive distributions for regression.

    Args:
        mean: [S, N], the mean of y | x_n, θ_s.
        var: [S, N], its variance (>= 0; noise-free samples may be 0).
        weights: [S] summing to 1, or None for equal weights.
    """

    mean: Tensor
    var: Tensor
    weights: Tensor | None = None
    check: bool = True

    def __post_init__(self) -> None:
        if not self.check:
            return
        _check_rank("mean", self.mean, 2, "[S, N]")
        _check_rank("var", self.var, 2, "[S, N]")
        if self.mean.shape != self.var.shape:
            raise ShapeError(f"var: expected the shape of mean {tuple(self.mean.shape)}, got {tuple(self.var.shape)}")
        _check_finite("mean", self.mean)
        _check_finite("var", self.var)
        if bool((self.var < 0).any()):
            raise ShapeError("var: expected variances >= 0, got a negative entry")
        object.__setattr__(self, "weights", _check_weights(self.weights, self.mean.shape[0], self.mean))

    @property
    def n_samples(self) -> int:
        return self.mean.shape[0]

    @property
    def n_candidates(self) -> int:
        return self.mean.shape[1]

    def sample_weights(self) -> Tensor:
        """w [S]: the given weights, or 1/S each."""
        if self.weights is not None:
            return self.weights
        return torch.full((self.n_samples,), 1.0 / self.n_samples, dtype=self.mean.dtype, device=self.mean.device)

    def to(self, device: torch.device | str) -> GaussianPredictive:
        weights = None if self.weights is None else self.weights.to(device)
        return GaussianPredictive(self.mean.to(device), self.var.to(device), weights, check=False)

    def candidates(self, index: Tensor | slice) -> GaussianPredictive:
        return GaussianPredictive(self.mean[:, index], self.var[:, index], self.weights, check=False)


def as_predictive(pred: Predictive | GaussianPredictive | Tensor) -> Predictive | GaussianPredictive:
    """Accept a bare probs tensor [S, N, C] as a Predictive with equal weights."""
    if isinstance(pred, (Predictive, GaussianPredictive)):
        return pred
    if isinstance(pred, Tensor):
        return Predictive(pred)
    raise ShapeError(f"pred: expected a Predictive, GaussianPredictive or a probs tensor [S, N, C], got {type(pred).__name__}")
