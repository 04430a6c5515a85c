"""NIPV: negative integrated posterior variance (BoTorch's `qNegIntegratedPosteriorVariance`),
an acquisition for Gaussian-process regression.

For a GP with latent posterior covariance k_D(·, ·) after the labelled data D and Gaussian
observation noise σ_ε², asking about x lowers the latent variance at every reference point x'
by the closed form
    Δ(x') = k_D(x', x)² / (k_D(x, x) + σ_ε²),
and NIPV scores x by the integrated variance after the (fantasised) observation,
    qNIPV(x) = −(1/M) Σ_m Var[f(x'_m) | D ∪ {(x, y_x)}],
over M reference points x'_m (here a seeded subset of the pool: the integral is over the
pool's own input distribution). The posterior variance of a GP does not depend on the observed
value y_x, so one fantasy is exact. The score recorded here is the REDUCTION of the integrated
variance, (1/M) Σ_m Δ(x'_m) = qNIPV(x) − qNIPV(∅) ≥ 0, in squared target units (larger = ask
first; the same ranking as qNIPV).

A batch of k is chosen greedily: step i scores every remaining candidate with the i − 1 chosen
ones as BoTorch's X_pending (fantasised too, so the batch spreads out) and takes the best; its
recorded score is the reduction it adds at that step.

The model: `botorch_view(posterior)` needs a BoTorch `Model` of the latent f. A posterior that
exposes `botorch_model` (an attribute or a zero-argument method returning a fitted BoTorch Model
taking inputs [.., D] in the ORIGINAL input units, float64, and giving f in original target
units; `GaussianProcess` does) is used as is. Anything else (the network posteriors, or a
GaussianProcess fitted as the variational GP, `approximate_`, which cannot fantasise exactly) is
refused with a ConfigError.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from activebayes.acquisition.batch import BatchSelection, check_k
from activebayes.errors import ConfigError, ShapeError

#: candidates per qNIPV evaluation (each one a fantasy model over the M reference points)
CHUNK = 64
#: default M, reference points drawn from the pool
REFERENCE_SIZE = 256


@dataclass(frozen=True)
class BoTorchView:
    """A BoTorch model of the latent f with the maps from and to the caller's units.

    model: the BoTorch Model (variances in squared original target units). to_inputs: original
    inputs [N, D] -> the model's inputs (float64, on the model's device).
    """

    model: Any
    to_inputs: Callable[[Tensor], Tensor]


def _device_of(model: Any) -> torch.device:
    try:
        return next(iter(model.parameters())).device
    except (StopIteration, AttributeError):
        return torch.device("cpu")


def botorch_view(posterior: Any) -> BoTorchView:
    """The BoTorch view of a fitted GP posterior (see the module docstring); ConfigError when
    the posterior has no BoTorch model (a network posterior)."""
    from botorch.models.model import Model

    if getattr(posterior, "approximate_", False):
        raise ConfigError(
            "nipv: needs the exact GP (fantasised observations); this fit is the variational GP used above "
            "`max_exact` labelled points: raise max_exact, or use acquisition 'variance'"
        )
    exposed = getattr(posterior, "botorch_model", None)
    model = exposed if isinstance(exposed, Model) or not callable(exposed) else exposed()
    if model is None:
        raise ConfigError(
            f"nipv: needs a Gaussian-process posterior (a BoTorch model to fantasise with), got {type(posterior).__name__}"
        )
    if not isinstance(model, Model):
        raise ConfigError(f"nipv: {type(posterior).__name__}.botorch_model is not a BoTorch Model ({type(model).__name__})")
    device = _device_of(model)
    return BoTorchView(model, lambda x: x.to(device=device, dtype=torch.float64))


def _integrated_variance(view: BoTorchView, reference: Tensor) -> float:
    """(1/M) Σ_m Var[f(x'_m) | D], model units."""
    with torch.no_grad():
        return float(view.model.posterior(reference).variance.mean())


def _qnipv(view: BoTorchView, reference: Tensor, candidates: Tensor, pending: Tensor | None, chunk: int) -> Tensor:
    """qNIPV of each candidate [N] (model units, float64) with `pending` [P, D] fantasised too."""
    from botorch.acquisition.active_learning import qNegIntegratedPosteriorVariance

    acq = qNegIntegratedPosteriorVariance(view.model, mc_points=reference, X_pending=pending)
    out = []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fantasising at inputs near the training data
        for block in candidates.split(chunk):
            out.append(acq(block.unsqueeze(-2)).reshape(-1).to(torch.float64))
    return torch.cat(out) if out else candidates.new_zeros(0, dtype=torch.float64)


def _prepare(posterior: Any, candidates: Tensor, reference: Tensor) -> tuple[BoTorchView, Tensor, Tensor]:
    for name, t in (("candidates", candidates), ("reference", reference)):
        if not isinstance(t, Tensor) or t.dim() != 2:
            got = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ShapeError(f"nipv: {name}: expected a tensor [N, D], got {got}")
    if reference.shape[0] == 0 or reference.shape[1] != candidates.shape[1]:
        raise ShapeError(f"nipv: reference: expected [M >= 1, {candidates.shape[1]}], got {tuple(reference.shape)}")
    view = botorch_view(posterior)
    return view, view.to_inputs(candidates), view.to_inputs(reference)


def nipv(posterior: Any, candidates: Tensor, reference: Tensor, *, chunk: int = CHUNK) -> Tensor:
    """Integrated-variance reduction (1/M) Σ_m Δ(x'_m) of asking about each candidate alone
    [N] (float64, squared target units): qNIPV(x) − qNIPV(∅), see the module docstring."""
    view, cand, ref = _prepare(posterior, candidates, reference)
    base = _integrated_variance(view, ref)
    return (_qnipv(view, ref, cand, None, chunk) + base).clamp_min(0.0).cpu()


def nipv_select(
    posterior: Any, candidates: Tensor, reference: Tensor, k: int, *, chunk: int = CHUNK
) -> tuple[BatchSelection, Tensor]:
    """(the greedy batch of k candidates with the reduction each added, the first step's
    reductions of every candidate [N]); see the module docstring. Deterministic (ties: the
    lowest index)."""
    check_k(k, candidates.shape[0])
    view, cand, ref = _prepare(posterior, candidates, reference)
    previous = -_integrated_variance(view, ref)  # qNIPV of the empty addition
    chosen: list[int] = []
    gains: list[float] = []
    first = None
    for _ in range(k):
        pending = cand[chosen] if chosen else None
        values = _qnipv(view, ref, cand, pending, chunk).cpu()
        if first is None:
            first = (values - previous).clamp_min(0.0).float()
        if chosen:
            values[chosen] = -torch.inf
        best = int(torch.argmax(values))
        chosen.append(best)
        gains.append(max(float(values[best]) - previous, 0.0))
        previous = float(values[best])
    selection = BatchSelection(torch.tensor(chosen, dtype=torch.long), torch.tensor(gains, dtype=torch.float32))
    return selection, first  # type: ignore[return-value]
