"""The tensor every posterior returns and every acquisition function reads.

Glossary used throughout activebayes: S posterior samples, N candidates, C outcome classes,
D features, K batch size.

A `Predictive` holds p(y | x_n, θ_s) for S posterior samples θ_s with weights w_s (equal when
`weights` is None), so the posterior predictive is p(y | x_n) = Σ_s w_s p(y | x_n, θ_s).
A `GaussianPredictive` holds, for regression, y | x_n, θ_s ~ N(mean[s, n], var[s, n]); when its
optional `latent_mean`, `latent_var` [N] are set, the samples are quadrature nodes of a Gaussian
latent f(x_n) ~ N(latent_mean[n], latent_var[n]) and the predictive is exactly
N(latent_mean[n], latent_var[n] + var[·, n]), which the acquisition scores then use in closed form.

>>> import torch
>>> pred = Predictive(torch.tensor([[[0.9, 0.1]], [[0.1, 0.9]]]))
>>> pred.mean()
tensor([[0.5000, 0.5000]])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from activebayes.errors import ShapeError

_ROW_TOLERANCE = 1e-3  # float32 softmax rows sum to 1 within ~1e-6; users' tables may be rounded
_WEIGHT_TOLERANCE = 1e-4


def _check_not_empty(name: str, tensor: Tensor, axes: dict[int, str]) -> None:
    """Each axis in `axes` (position: what it counts) has at least one entry; N may be 0."""
    for axis, what in axes.items():
        if tensor.shape[axis] == 0:
            raise ShapeError(f"{name}: expected at least one of {what} (axis {axis}), got shape {tuple(tensor.shape)}")


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
        check: validate on construction (rank, at least one sample and one class, finiteness,
            rows summing to 1 within 1e-3, as rounded tables do; rows are not renormalised).
            Posteriors that build probabilities with a softmax pass False to stay free of host syncs.
    """

    probs: Tensor
    weights: Tensor | None = None
    check: bool = True

    def __post_init__(self) -> None:
        if not self.check:
            return
        _check_rank("probs", self.probs, 3, "[S, N, C]")
        _check_not_empty("probs", self.probs, {0: "S, posterior samples", 2: "C, outcome classes"})
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
        check: validate on construction (posteriors pass False to stay free of host syncs).
        latent_mean, latent_var: [N] each (keyword-only; both or neither, None by default). They
            declare a Gaussian latent: f_n ~ N(latent_mean[n], latent_var[n]) and
            y_n | f_n ~ N(f_n, σ²_n) with σ²_n = var[s, n] the same for every sample s, the S
            samples (mean[s, n], weights w_s) being quadrature nodes of f_n (e.g. Gauss–Hermite:
            Σ_s w_s mean[s, n] = latent_mean[n], Σ_s w_s (mean[s, n] − latent_mean[n])² =
            latent_var[n]). The predictive is then exactly N(latent_mean, latent_var + σ²) and the
            scores use closed forms (`acquisition.scores`: eig = ½ log(1 + latent_var / σ²)).
            Checked: rank 1 with N entries, finite, latent_var >= 0, var equal across samples.
    """

    mean: Tensor
    var: Tensor
    weights: Tensor | None = None
    check: bool = True
    latent_mean: Tensor | None = field(default=None, kw_only=True)
    latent_var: Tensor | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not self.check:
            return
        _check_rank("mean", self.mean, 2, "[S, N]")
        _check_not_empty("mean", self.mean, {0: "S, posterior samples"})
        _check_rank("var", self.var, 2, "[S, N]")
        if self.mean.shape != self.var.shape:
            raise ShapeError(f"var: expected the shape of mean {tuple(self.mean.shape)}, got {tuple(self.var.shape)}")
        _check_finite("mean", self.mean)
        _check_finite("var", self.var)
        if bool((self.var < 0).any()):
            raise ShapeError("var: expected variances >= 0, got a negative entry")
        object.__setattr__(self, "weights", _check_weights(self.weights, self.mean.shape[0], self.mean))
        self._check_latent()

    def _check_latent(self) -> None:
        if (self.latent_mean is None) != (self.latent_var is None):
            given, missing = ("latent_mean", "latent_var") if self.latent_var is None else ("latent_var", "latent_mean")
            raise ShapeError(f"{missing}: expected it together with {given} (both or neither), got None")
        if self.latent_mean is None:
            return
        n = self.mean.shape[1]
        for name in ("latent_mean", "latent_var"):
            tensor = getattr(self, name)
            _check_rank(name, tensor, 1, "[N]")
            if tensor.shape[0] != n:
                raise ShapeError(f"{name}: expected N={n} entries to match the candidates, got {tensor.shape[0]}")
            _check_finite(name, tensor)
            object.__setattr__(self, name, tensor.to(self.mean.device))
        if bool((self.latent_var < 0).any()):
            raise ShapeError("latent_var: expected variances >= 0, got a negative entry")
        if self.var.numel() and not torch.allclose(self.var, self.var[:1].expand_as(self.var), rtol=1e-5, atol=0.0):
            raise ShapeError("var: with latent_mean/latent_var, expected the same noise variance var[s, n] for every sample s")

    @property
    def n_samples(self) -> int:
        return self.mean.shape[0]

    @property
    def n_candidates(self) -> int:
        return self.mean.shape[1]

    @property
    def has_latent(self) -> bool:
        """Whether `latent_mean`, `latent_var` declare an exactly Gaussian predictive."""
        return self.latent_var is not None

    def sample_weights(self) -> Tensor:
        """w [S]: the given weights, or 1/S each."""
        if self.weights is not None:
            return self.weights
        return torch.full((self.n_samples,), 1.0 / self.n_samples, dtype=self.mean.dtype, device=self.mean.device)

    def moments(self, *, observation_noise: bool = True) -> tuple[Tensor, Tensor]:
        """Mean [N] and variance [N] of the predictive, in mean's dtype.

        With observation_noise, of y: the mixture Σ_s w_s N(μ_s, σ²_s) has mean μ̄ = Σ_s w_s μ_s
        and variance Σ_s w_s σ²_s + Σ_s w_s (μ_s − μ̄)²; with latent fields it is exactly
        N(latent_mean, latent_var + Σ_s w_s σ²_s). Without, of the latent f: the spread
        Σ_s w_s (μ_s − μ̄)², or latent_var (BoTorch's `observation_noise=False`).
        """
        w = self.sample_weights().to(self.mean.dtype)
        noise = torch.einsum("s,sn->n", w, self.var.to(self.mean.dtype)) if observation_noise else 0.0
        if self.has_latent:
            return self.latent_mean.to(self.mean.dtype), self.latent_var.to(self.mean.dtype) + noise  # type: ignore[union-attr]
        centre = torch.einsum("s,sn->n", w, self.mean)
        return centre, torch.einsum("s,sn->n", w, (self.mean - centre).square()) + noise

    def to(self, device: torch.device | str) -> GaussianPredictive:
        def move(tensor: Tensor | None) -> Tensor | None:
            return None if tensor is None else tensor.to(device)

        return GaussianPredictive(
            self.mean.to(device), self.var.to(device), move(self.weights), check=False,
            latent_mean=move(self.latent_mean), latent_var=move(self.latent_var),
        )  # fmt: skip

    def candidates(self, index: Tensor | slice) -> GaussianPredictive:
        """The same samples restricted to some candidates: mean[:, index], latent_mean[index], ..."""

        def pick(tensor: Tensor | None) -> Tensor | None:
            return None if tensor is None else tensor[index]

        return GaussianPredictive(
            self.mean[:, index], self.var[:, index], self.weights, check=False,
            latent_mean=pick(self.latent_mean), latent_var=pick(self.latent_var),
        )  # fmt: skip


def as_predictive(pred: Predictive | GaussianPredictive | Tensor) -> Predictive | GaussianPredictive:
    """Accept a bare probs tensor [S, N, C] as a Predictive with equal weights."""
    if isinstance(pred, (Predictive, GaussianPredictive)):
        return pred
    if isinstance(pred, Tensor):
        return Predictive(pred)
    raise ShapeError(f"pred: expected a Predictive, GaussianPredictive or a probs tensor [S, N, C], got {type(pred).__name__}")
