"""The Gaussian likelihood of regression: the noise variance σ² fitted from training residuals,
the likelihood inferred from the targets, and a network's one output per item.

The network posteriors (MC dropout, ensembles, Laplace, SWAG) take
    y_n | x_n, θ ~ N(f(x_n; θ), σ²)     (one output per item, homoscedastic noise σ² learnt)
for regression, chosen by their `likelihood` argument: "gaussian", "categorical", or None (the
default) to infer it from y's dtype as `training.task_loss` does: floating targets -> "gaussian",
integer targets -> "categorical".

The network is trained with the unchanged mean squared error of `training.task_loss`; σ² is then fitted in
closed form from the training residuals (`fit_noise_variance`). This is the joint MAP of the
Gaussian NLL over (θ, σ²), not an approximation of it: with homoscedastic noise the θ that
minimises the NLL does not depend on σ² (NLL = ½ log 2πσ² + MSE / 2σ²), and given θ the
maximiser over σ² is the residuals' mean square. Training σ² jointly as a parameter would reach
the same pair, but would rescale the gradients of θ by 1/σ² (SGD's step size then blows up as
the fit improves and σ² shrinks), add a parameter outside the network to stack, vmap and sample
(ensembles, SWAG), and make the result depend on the optimiser's path.

The noise does not collapse on a perfectly fitted small set: σ² carries a weak scaled
inverse-χ² prior of NOISE_PRIOR_COUNT pseudo-observations at NOISE_PRIOR_FRACTION of the
targets' variance s_y² (1 when the targets are constant), and a floor NOISE_FLOOR_FRACTION · s_y².
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError, ShapeError

NOISE_PRIOR_COUNT = 1.0
NOISE_PRIOR_FRACTION = 1e-2
NOISE_FLOOR_FRACTION = 1e-6
_OUTPUT_CHUNK = 4096  # rows per forward pass when computing training residuals


def resolve_likelihood(likelihood: str | None, y: Tensor) -> tuple[str, Tensor]:
    """("gaussian" | "categorical", y cast for it): float32 targets [N] or integer labels [N].

    likelihood None infers it from y's dtype (floating -> gaussian, integer or bool -> categorical).
    Gaussian targets may be [N] or [N, 1] (flattened to [N]); categorical float targets must hold
    whole numbers.
    """
    if likelihood is None:
        likelihood = "gaussian" if y.is_floating_point() else "categorical"
    if likelihood == "categorical":
        if y.is_floating_point():
            if not bool((y == y.round()).all()):
                raise ShapeError("y: likelihood='categorical' expects integer class labels, got non-integer floats")
            y = y.long()
        return "categorical", y
    if likelihood != "gaussian":
        raise ConfigError(f"likelihood: expected 'gaussian', 'categorical' or None (inferred from y's dtype), got {likelihood!r}")
    if y.dim() == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.dim() != 1:
        raise ShapeError(f"y: regression expects one real target per item, [N] or [N, 1], got shape {tuple(y.shape)}")
    y = y.to(torch.float32)
    if not bool(torch.isfinite(y).all()):
        raise ShapeError("y: regression targets contain NaN or infinite values")
    return "gaussian", y


def gaussian_nll(mean: Tensor, y: Tensor, log_var: Tensor | float) -> Tensor:
    """Mean Gaussian negative log-likelihood ½ (log 2π + log σ² + (y − mean)² / σ²), log σ² = `log_var`."""
    log_var = torch.as_tensor(log_var, dtype=mean.dtype, device=mean.device)
    return 0.5 * (math.log(2 * math.pi) + log_var + (y - mean.reshape(y.shape)).square() * torch.exp(-log_var)).mean()


def regression_output(output: Tensor, n_leading: int) -> Tensor:
    """A network's regression output [*lead, N, 1] or [*lead, N] as [*lead, N] (one value per item)."""
    if output.dim() == n_leading + 2 and output.shape[-1] == 1:
        return output[..., 0]
    if output.dim() != n_leading + 1:
        raise ShapeError(
            f"model_fn: for regression expected the network to output one value per item, [N, 1] or [N], "
            f"got [N, ...] = {tuple(output.shape[n_leading + 1 :])}"
        )
    return output


@torch.no_grad()
def network_outputs(model: nn.Module, x: Tensor) -> Tensor:
    """The model's regression outputs [N] on x, in chunks (the model as it is, eval mode expected)."""
    device = next(model.parameters()).device
    return torch.cat([regression_output(model(chunk.to(device)), 0) for chunk in x.split(_OUTPUT_CHUNK)])


def target_scale(y: Tensor) -> float:
    """s_y² = Var(y) of regression targets [N] (population variance), 1 when it is 0 or N = 1."""
    y64 = y.detach().to(torch.float64)
    scale = float(y64.var(correction=0)) if y64.numel() > 1 else 0.0
    return scale if scale > 0 else 1.0


def fit_noise_variance(residuals: Tensor, y: Tensor) -> float:
    """MAP noise variance from training residuals r [N] (this module's docstring):

        σ² = max((Σ_n r_n² + ν s0²) / (N + ν), NOISE_FLOOR_FRACTION · s_y²),
        ν = NOISE_PRIOR_COUNT, s0² = NOISE_PRIOR_FRACTION · s_y², s_y² = Var(y) (1 when 0 or N = 1).
    """
    scale = target_scale(y)
    sse = float(residuals.detach().to(torch.float64).square().sum())
    nu = NOISE_PRIOR_COUNT
    return max((sse + nu * NOISE_PRIOR_FRACTION * scale) / (residuals.numel() + nu), NOISE_FLOOR_FRACTION * scale)
