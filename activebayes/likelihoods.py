"""Heteroscedastic Gaussian regression in natural parameters: pure functions.

A network with TWO outputs per item, f = (f₁, f₂) [..., 2], predicts both the mean and the
variance of y | x ~ N(μ(x), σ²(x)) through the natural parameters of the Gaussian,

    η₁ = μ / σ²,   η₂ = −1 / (2σ²)   (η₂ < 0),        so   σ² = −1 / (2η₂),   μ = −η₁ / (2η₂),

with the link  η₁ = f₁,  η₂ = −½ exp(f₂)  (f₂ = log 1/σ², the log precision: η₂ < 0 for every
f₂, and a step on f₂ scales the precision by a factor, so noise levels orders of magnitude apart
are a few units of f₂ apart, where a softplus link would put them as far apart as the precisions).

Negative log-likelihood. As an exponential family with sufficient statistics T(y) = (y, y²),
log N(y; μ, σ²) = η₁ y + η₂ y² − A(η) − ½ log 2π, with the log-partition function

    A(η) = μ² / (2σ²) + ½ log σ² = −η₁² / (4η₂) − ½ log(−2η₂),

so, exactly,

    NLL(η; y) = −log N(y; μ, σ²)
              = −η₁ y − η₂ y² − η₁² / (4η₂) − ½ log(−2η₂) + ½ log 2π
              = −η₁ y − η₂ y² − η₁² / (4η₂) − ½ log(−η₂) + ½ log π.

Gradient and Hessian in η (those of A; the data enter the gradient only):

    ∇_η NLL  = E[T] − T(y) = (μ − y,  μ² + σ² − y²)
    ∇²_η NLL = Cov[T]      = [[σ²,      2μσ²          ],
                              [2μσ²,    2σ⁴ + 4μ²σ²   ]]          (positive definite: det = 2σ⁶)

so the NLL is convex in (η₁, η₂) on η₂ < 0, and its Hessian does not depend on y: the
generalised Gauss-Newton of a network in the natural parameters is Σ_n J_nᵀ ∇²_η NLL J_n with
J_n = ∂η(x_n) / ∂θ [2, P] (the link is part of the network), and it is the Fisher information.
Through the link, ∂η/∂f = diag(1, η₂), so in the network's outputs f the GGN's per-item block is

    Λ(f) = diag(1, η₂) ∇²_η NLL diag(1, η₂) = [[σ², −μ], [−μ, ½ + μ²/σ²]]    (det = σ²/2 > 0),

the Hessian of the NLL in f less the link's own curvature (μ² + σ² − y²) η₂ on f₂, and its
expectation under the model (`heteroscedastic_ggn`; what a Laplace approximation of such a
network puts where the softmax's diag(p) − p pᵀ goes). Its Cholesky factor has the columns
v₁ = (σ, −μ/σ), v₂ = (0, 1/√2) (`heteroscedastic_ggn_square_root`): a KFAC or diagonal GGN
backpropagates these two vectors per item (`posteriors._kfac`, `posteriors._hetero_laplace`).
Setting the mean gradient over items y_1..y_N to 0 gives the maximum-likelihood estimate of a
constant model: μ = ȳ, σ² = mean(y²) − ȳ² (the sample mean and the biased sample variance).

>>> import torch
>>> mean, var = mean_variance(natural_parameters(torch.tensor([[1.0, 0.0]])))
>>> float(mean[0]), float(var[0])
(1.0, 1.0)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from activebayes.errors import ShapeError

#: The likelihoods' names as the posteriors' `likelihood` argument takes them.
HETEROSCEDASTIC = "heteroscedastic"
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _split(output: Tensor) -> tuple[Tensor, Tensor]:
    if output.dim() == 0 or output.shape[-1] != 2:
        raise ShapeError(
            "model_fn: likelihood='heteroscedastic' expects the network to output two values per item "
            f"(the natural parameters' f₁, f₂), [N, 2], got [..., {output.shape[-1] if output.dim() else ''}] = {tuple(output.shape)}"
        )
    return output[..., 0], output[..., 1]


def natural_parameters(output: Tensor) -> tuple[Tensor, Tensor]:
    """(η₁, η₂) [...] from a network's outputs f [..., 2]: η₁ = f₁, η₂ = −½ exp(f₂) < 0."""
    f1, f2 = _split(output)
    return f1, -0.5 * torch.exp(f2)


def mean_variance(eta: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    """(μ, σ²) of the Gaussian with natural parameters (η₁, η₂): σ² = −1/(2η₂), μ = η₁ σ²."""
    eta1, eta2 = eta
    var = -0.5 / eta2
    return eta1 * var, var


def mean_variance_of_output(output: Tensor) -> tuple[Tensor, Tensor]:
    """(μ, σ²) [...] of a network's outputs f [..., 2] (`natural_parameters` then `mean_variance`;
    σ² = exp(−f₂) without the round trip through η₂)."""
    f1, f2 = _split(output)
    var = torch.exp(-f2)
    return f1 * var, var


def natural_nll(eta1: Tensor, eta2: Tensor, y: Tensor) -> Tensor:
    """−log N(y; μ, σ²) elementwise, in natural parameters (module docstring):
    −η₁ y − η₂ y² − η₁²/(4η₂) − ½ log(−2η₂) + ½ log 2π. Shapes broadcast."""
    return -eta1 * y - eta2 * y.square() - eta1.square() / (4.0 * eta2) - 0.5 * torch.log(-2.0 * eta2) + _HALF_LOG_2PI


def natural_nll_gradient(eta1: Tensor, eta2: Tensor, y: Tensor) -> Tensor:
    """∇_η NLL = (μ − y, μ² + σ² − y²), [..., 2]."""
    mean, var = mean_variance((eta1, eta2))
    return torch.stack((mean - y, mean.square() + var - y.square()), dim=-1)


def natural_nll_hessian(eta1: Tensor, eta2: Tensor) -> Tensor:
    """∇²_η NLL = Cov[(y, y²)] = [[σ², 2μσ²], [2μσ², 2σ⁴ + 4μ²σ²]], [..., 2, 2]; independent of y."""
    mean, var = mean_variance((eta1, eta2))
    cross = 2.0 * mean * var
    row1 = torch.stack((var, cross), dim=-1)
    row2 = torch.stack((cross, 2.0 * var.square() + 4.0 * mean.square() * var), dim=-1)
    return torch.stack((row1, row2), dim=-2)


def heteroscedastic_ggn(output: Tensor) -> Tensor:
    """Λ(f) = [[σ², −μ], [−μ, ½ + μ²/σ²]] [..., 2, 2], the GGN block of the NLL in a network's
    outputs f [..., 2] (module docstring); positive definite, independent of y."""
    mean, var = mean_variance_of_output(output)
    row1 = torch.stack((var, -mean), dim=-1)
    row2 = torch.stack((-mean, 0.5 + mean.square() / var), dim=-1)
    return torch.stack((row1, row2), dim=-2)


def heteroscedastic_ggn_square_root(output: Tensor) -> Tensor:
    """Two vectors v [2, ..., 2] with v₁v₁ᵀ + v₂v₂ᵀ = Λ(f) (`heteroscedastic_ggn`), its Cholesky
    factor's columns: v₁ = (σ, −μ/σ), v₂ = (0, 1/√2); what a KFAC or diagonal GGN backpropagates
    through the network in place of the softmax's sqrt(p_k)(e_k − p)."""
    mean, var = mean_variance_of_output(output)
    sd = var.sqrt()
    first = torch.stack((sd, -mean / sd), dim=-1)
    second = torch.stack((torch.zeros_like(sd), torch.full_like(sd, math.sqrt(0.5))), dim=-1)
    return torch.stack((first, second))


def heteroscedastic_nll(output: Tensor, y: Tensor) -> Tensor:
    """Elementwise NLL [...] of targets y [...] under a network's outputs f [..., 2], written in
    f for numerical stability (the same value as `natural_nll` at η(f)):
    ½ exp(f₂) (y − μ)² − ½ f₂ + ½ log 2π, with μ = f₁ exp(−f₂)."""
    f1, f2 = _split(output)
    if f1.shape != y.shape:
        raise ShapeError(f"y: expected one target per item, shape {tuple(f1.shape)}, got {tuple(y.shape)}")
    mean = f1 * torch.exp(-f2)
    return 0.5 * torch.exp(f2) * (y - mean).square() - 0.5 * f2 + _HALF_LOG_2PI


def heteroscedastic_loss(output: Tensor, y: Tensor) -> Tensor:
    """The training loss: the mean NLL over a mini-batch, outputs [N, 2], targets [N]."""
    return heteroscedastic_nll(output, y.reshape(output.shape[:-1])).mean()


__all__ = [
    "HETEROSCEDASTIC",
    "heteroscedastic_ggn",
    "heteroscedastic_ggn_square_root",
    "heteroscedastic_loss",
    "heteroscedastic_nll",
    "mean_variance",
    "mean_variance_of_output",
    "natural_nll",
    "natural_nll_gradient",
    "natural_nll_hessian",
    "natural_parameters",
]
