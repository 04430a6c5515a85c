"""BoTorch over the exact grid EIG: discrete (`optimize_acqf_discrete`) or continuous (`optimize_acqf`)
design spaces, e.g. digits x presentation rate. Kept apart from `eig` so that importing the
grid maths does not import BoTorch.
"""

from __future__ import annotations

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from torch import Tensor

from activebayes.design.eig import grid_eig
from activebayes.design.grid import GridPosterior
from activebayes.design.model import binary_entropy
from activebayes.errors import ConfigError, ShapeError


class EIGAcquisition(AcquisitionFunction):
    """Exact grid EIG as a BoTorch acquisition function, differentiable in the design.

    forward(X): X a `batch_shape x q x d` tensor with q = 1 and d = 1 (digits) or 2 (digits,
    rate); returns a `batch_shape` tensor of EIG in nats. Designs may be continuous (fractional
    digits are a relaxation the optimiser uses; round for a real list).
    """

    def __init__(self, posterior: GridPosterior) -> None:
        super().__init__(model=None)  # type: ignore[arg-type]  # no BoTorch surrogate: the grid is exact
        self.posterior = posterior

    def forward(self, X: Tensor) -> Tensor:
        if X.dim() < 2 or X.shape[-2] != 1 or X.shape[-1] not in (1, 2):
            raise ShapeError(f"X: expected batch_shape x q=1 x d (d = 1 or 2), got shape {tuple(X.shape)}")
        post = self.posterior
        batch_shape = X.shape[:-2]
        flat = X.reshape(-1, X.shape[-1]).to(post.theta.dtype)  # [B, d]
        p = post.model.prob_recall(post.theta, flat if flat.shape[-1] == 2 else flat[:, 0], post.slope)  # [G, B]
        w = post.weights
        return grid_eig(w, p, binary_entropy(p)).reshape(batch_shape).to(X.dtype)


def best_design(posterior: GridPosterior, designs: Tensor) -> tuple[Tensor, float]:
    """argmax of EIG over a discrete set [D] or [D, d], via BoTorch's `optimize_acqf_discrete`.

    Returns the design ([d]) and its EIG in nats.
    """
    choices = torch.as_tensor(designs, dtype=posterior.theta.dtype, device=posterior.theta.device)
    choices = choices[:, None] if choices.dim() == 1 else choices
    x, value = optimize_acqf_discrete(EIGAcquisition(posterior), q=1, choices=choices)
    return x[0], float(value.reshape(-1)[0])


def optimize_design(
    posterior: GridPosterior,
    bounds: Tensor,
    *,
    num_restarts: int = 8,
    raw_samples: int = 256,
    seed: int = 0,
) -> tuple[Tensor, float]:
    """argmax of EIG over a box of continuous designs, via BoTorch's `optimize_acqf`.

    Args:
        bounds: [2, d] lower and upper bounds (d = 1 digits, or 2 digits and rate).
        num_restarts, raw_samples: BoTorch's multi-start L-BFGS-B settings.
        seed: seeds BoTorch's initial-condition sampling (passed through `options`).
    Returns the design [d] and its EIG in nats.
    """
    bounds = torch.as_tensor(bounds, dtype=posterior.theta.dtype, device=posterior.theta.device)
    if bounds.dim() != 2 or bounds.shape[0] != 2 or bounds.shape[1] not in (1, 2):
        raise ShapeError(f"bounds: expected [2, d] with d = 1 or 2, got shape {tuple(bounds.shape)}")
    if bool((bounds[1] <= bounds[0]).any()):
        raise ConfigError("bounds: expected each upper bound above its lower bound")
    x, value = optimize_acqf(
        EIGAcquisition(posterior),
        bounds=bounds,
        q=1,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        options={"seed": seed},
    )
    return x.reshape(-1), float(value.reshape(-1)[0])
