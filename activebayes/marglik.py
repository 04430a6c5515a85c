"""Online marginal-likelihood training and the Laplace evidence of a trained network (Immer, Bauer,
Fortuin, Rätsch and Khan, "Scalable marginal likelihood estimation for model selection in deep
learning", ICML 2021, Algorithm 1; laplace-torch's `marglik_training`).

The prior over the weights is θ_l ~ N(0, δ_l⁻¹ I) for each parameter tensor l (a layer's weight and
its bias each get one δ: laplace-torch's "layerwise"; or one δ for all, "scalar"); regression also
learns the observation noise σ. Training alternates

    θ-steps (every mini-batch of B items out of N, `activebayes.training.train`):
        loss = mean NLL(batch) + ½ Σ_l δ_l ‖θ_l‖² / N / c,
        with c = 1 for the categorical likelihood (the mean cross-entropy) and c = 1/(2σ²) for the
        gaussian one (the loss is the mean squared error), i.e. the log joint divided by N·c;
    hyper-steps (after epoch e = 1, 2, ... when e mod F = 0 and e ≥ B, the burn-in):
        a Laplace approximation of the whole network on all N training items (KFAC or diagonal
        GGN, `posteriors._kfac`, or the exact GGN in dual form, `posteriors._gram`), then K Adam
        steps (learning rate `hyper_lr`) on log δ (and log σ) maximising the Laplace evidence
            log q(D | δ, σ) = log p(D | θ) − ½ (log det(φH + δ) − Σ_l P_l log δ_l + Σ_l δ_l ‖θ_l‖²).
The network and (δ, σ) with the best evidence seen (the value at the last of each K steps) are
kept (laplace-torch's choice). There is no validation split: the evidence is the model-selection
criterion. Weight decay is not applied: the learnt prior replaces it.

Equality with laplace-torch: with the same network, the same mini-batches in the same order and
the same schedule, the θ-step losses are the same expression (evaluated as laplace-torch does) and
the curvature and evidence agree to rounding (`tests/test_marglik.py`). Bit-identity of a whole
trajectory holds only as far as those rounding differences (our curvature is summed in another
order and decomposed in float64) stay below the optimiser's resolution.

`log_evidence(model, x, y, prior_precision)` is the evidence of any trained network (e.g. to
compare candidate architectures); `train_marglik` trains one and returns its learnt precisions.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from activebayes._device import resolve_device
from activebayes._optimizers import Adam
from activebayes.errors import ConfigError
from activebayes.posteriors._curvature import maximise_scalar_evidence
from activebayes.posteriors._gram import fit_network_curvature
from activebayes.posteriors._kfac import log_marginal_likelihood
from activebayes.training import check_non_negative_int, check_positive_int, task_loss, train

PRIOR_STRUCTURES = ("layerwise", "scalar")
STRUCTURES = ("kron", "diag", "full")  # "full": the exact GGN in dual form (`posteriors._gram`), for few items


@dataclass(frozen=True)
class MarglikConfig:
    """The schedule of online marginal-likelihood training (module docstring); defaults are
    laplace-torch's `marglik_training`'s.

    Attributes:
        hessian: "kron" (KFAC), "diag" (diagonal GGN) or "full" (the exact GGN in its N·C-row dual
            form, `posteriors._gram`: for a few hundred items, where KFAC's Occam factor counts
            rank(B)·rank(A) directions the data never touched) for the Laplace approximations.
        frequency: F, a Laplace fit and K hyper-steps every F epochs.
        burn_in: B, no hyper-steps before epoch B (epochs count from 1).
        hyper_steps: K, Adam steps on the hyper-parameters per Laplace fit.
        hyper_lr: Adam's learning rate on log δ and log σ.
        prior_structure: "layerwise" (one δ per parameter tensor) or "scalar".
        prior_precision_init: δ at the start.
        sigma_noise_init: σ at the start (regression).
        learn_noise: regression: learn σ (True) or keep `sigma_noise_init`.
        keep_best: end with the network and hyper-parameters of the best evidence (True), or
            with the last ones.
    """

    hessian: str = "kron"
    frequency: int = 1
    burn_in: int = 0
    hyper_steps: int = 10
    hyper_lr: float = 0.1
    prior_structure: str = "layerwise"
    prior_precision_init: float = 1.0
    sigma_noise_init: float = 1.0
    learn_noise: bool = True
    keep_best: bool = True

    def __post_init__(self) -> None:
        for name, choices in (("hessian", STRUCTURES), ("prior_structure", PRIOR_STRUCTURES)):
            if getattr(self, name) not in choices:
                raise ConfigError(f"MarglikConfig.{name}: expected one of {', '.join(map(repr, choices))}, got {getattr(self, name)!r}")
        check_positive_int("MarglikConfig.frequency", self.frequency)
        check_non_negative_int("MarglikConfig.burn_in", self.burn_in)
        check_positive_int("MarglikConfig.hyper_steps", self.hyper_steps)
        for name in ("hyper_lr", "prior_precision_init", "sigma_noise_init"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"MarglikConfig.{name}: expected a positive number, got {value!r}")
        for name in ("learn_noise", "keep_best"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"MarglikConfig.{name}: expected true or false, got {getattr(self, name)!r}")


@dataclass
class MarglikFit:
    """What `train_marglik` returns.

    model: the trained network (eval mode). prior_precision: δ_l per parameter tensor [L] (float64,
    in `model.parameters()` order of the trainable ones; "scalar": L equal values). sigma_noise: σ
    (regression) or None. log_evidence: the evidence of the kept state (None without hyper-steps).
    evidences: the evidence at every hyper-step. losses: the mean θ-step loss of every epoch.
    best_epoch: the epoch (from 1) whose state was kept, None without hyper-steps.
    """

    model: nn.Module
    prior_precision: Tensor
    sigma_noise: float | None
    log_evidence: float | None
    evidences: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    best_epoch: int | None = None


def likelihood_of(y: Tensor) -> str:
    """"gaussian" for float targets (the squared-error loss of `train`), else "categorical"."""
    return "gaussian" if y.is_floating_point() else "categorical"


class OnlineMarglik:
    """The state of one marglik run: log δ [H], log σ, their Adam, the best state (module docstring)."""

    def __init__(self, model: nn.Module, x: Tensor, y: Tensor, config: MarglikConfig) -> None:
        self.model, self.x, self.y, self.config = model, x, y, config
        self.likelihood = likelihood_of(y)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.n = x.shape[0]
        dev = self.params[0].device
        count = len(self.params) if config.prior_structure == "layerwise" else 1
        self.log_prior = torch.full((count,), math.log(config.prior_precision_init), dtype=torch.float64, device=dev, requires_grad=True)
        self.log_sigma = torch.full((1,), math.log(config.sigma_noise_init), dtype=torch.float64, device=dev, requires_grad=True)
        learn_sigma = self.likelihood == "gaussian" and config.learn_noise
        self.optimizer = Adam([self.log_prior, *([self.log_sigma] if learn_sigma else [])], lr=config.hyper_lr)
        self.owner = torch.cat([torch.full((p.numel(),), i if count > 1 else 0, device=dev) for i, p in enumerate(self.params)])
        self.evidences: list[float] = []
        self.best: tuple[float, dict[str, Tensor], Tensor, Tensor, int] | None = None
        self.last_epoch: int | None = None

    def penalty(self) -> Tensor:
        """½ Σ_l δ_l ‖θ_l‖² / N / c (laplace-torch's expression: (0.5 (δ ⊙ θ) · θ) / N / c)."""
        theta = nn.utils.parameters_to_vector(self.params)
        delta = torch.exp(self.log_prior.detach()).to(theta.dtype)[self.owner]
        penalty = (0.5 * (delta * theta) @ theta) / self.n
        if self.likelihood == "gaussian":
            sigma = float(torch.exp(self.log_sigma.detach())) if self.config.learn_noise else self.config.sigma_noise_init
            penalty = penalty / (1.0 / (2 * sigma**2))
        return penalty

    def sigma(self) -> Tensor | None:
        """σ as the evidence takes it: None (classification), learnt or fixed."""
        if self.likelihood != "gaussian":
            return None
        return torch.exp(self.log_sigma[0]) if self.config.learn_noise else torch.tensor(self.config.sigma_noise_init, dtype=torch.float64)

    def after_epoch(self, epoch: int, model: nn.Module) -> None:
        """Hyper-steps after epoch `epoch` + 1 when the schedule says so (module docstring)."""
        done = epoch + 1
        if done % self.config.frequency != 0 or done < self.config.burn_in:
            return
        model.eval()
        curvature = fit_network_curvature(model, self.x, self.y, self.config.hessian, self.likelihood)
        for _ in range(self.config.hyper_steps):
            self.optimizer.zero_grad()
            prior, sigma = torch.exp(self.log_prior), self.sigma()
            evidence = log_marginal_likelihood(curvature, prior, sigma)
            (-evidence).backward()
            self.optimizer.step()
            self.evidences.append(float(evidence.detach()))
        self.last_epoch = done
        if self.best is None or self.evidences[-1] > self.best[0]:
            held_sigma = sigma.detach().clone() if sigma is not None else torch.ones(())
            self.best = (self.evidences[-1], copy.deepcopy(model.state_dict()), prior.detach().clone(), held_sigma, done)

    def finish(self, model: nn.Module, losses: list[float]) -> MarglikFit:
        """Restore the best state (`keep_best`) and report it."""
        prior, sigma = torch.exp(self.log_prior.detach()), self.sigma()
        evidence, epoch = None, None
        if self.best is not None:
            evidence, epoch = self.best[0], self.best[4]
            if self.config.keep_best:
                model.load_state_dict(self.best[1])
                prior, sigma = self.best[2], self.best[3]
            else:
                evidence, epoch = self.evidences[-1], self.last_epoch
        count = len(self.params)
        return MarglikFit(model.eval(), prior.expand(count).clone() if prior.shape[0] == 1 else prior.clone(),
                          None if sigma is None else float(sigma), evidence, list(self.evidences), losses, epoch)  # fmt: skip


def train_marglik(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    config: Any,
    *,
    seed: int | None = None,
    device: str | torch.device = "auto",
    lr_at: Callable[[int], float] | None = None,
    on_epoch_end: Callable[[int, nn.Module], None] | None = None,
    on_epoch_loss: Callable[[int, float], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    param_groups: list[dict] | None = None,
) -> MarglikFit:
    """Train `model` in place on (x [N, ...], y [N]) by online marglik (module docstring), with
    `config` a TrainConfig whose `marglik` is a MarglikConfig (epochs, lr, batches, schedule and
    the seeded mini-batch order are `train`'s). The callbacks are `train`'s."""
    marglik = config.marglik
    if not isinstance(marglik, MarglikConfig):
        raise ConfigError(f"TrainConfig.marglik: expected an activebayes.marglik.MarglikConfig, got {type(marglik).__name__}")
    if config.validation_fraction > 0 or config.validation_data is not None:
        raise ConfigError("TrainConfig.marglik: online marginal-likelihood training uses every item (the evidence replaces a "
                          "validation split); leave validation_fraction and validation_data out")
    if loss_fn is not None or param_groups is not None:
        raise ConfigError("TrainConfig.marglik: online marginal-likelihood training needs the task loss (cross-entropy or squared "
                          "error) over every weight; this posterior trains with its own loss; set marglik=None")
    dev = resolve_device(device)
    model = model.to(dev)
    x, y = x.to(dev), y.to(dev)
    state = OnlineMarglik(model, x, y, marglik)
    losses: list[float] = []

    def epoch_end(epoch: int, net: nn.Module) -> None:
        state.after_epoch(epoch, net)
        if on_epoch_end is not None:
            on_epoch_end(epoch, net)

    def epoch_loss(epoch: int, loss: float) -> None:
        losses.append(loss)
        if on_epoch_loss is not None:
            on_epoch_loss(epoch, loss)

    plain = dataclasses.replace(config, marglik=None, weight_decay=0.0)
    train(model, x, y, plain, seed=seed, device=dev, lr_at=lr_at, on_epoch_end=epoch_end, on_epoch_loss=epoch_loss,
          progress=progress, loss_fn=lambda out, target: task_loss(out, target) + state.penalty())  # fmt: skip
    return state.finish(model, losses)


def log_evidence(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    prior_precision: float | Sequence[float] | Tensor | str = 1.0,
    *,
    hessian: str = "kron",
    likelihood: str | None = None,
    sigma_noise: float | None = None,
) -> Tensor:
    """The Laplace evidence log q(D | δ, σ) of a trained network (`posteriors._kfac`; laplace-torch's
    `Laplace(model, ..., subset_of_weights="all", hessian_structure=hessian).log_marginal_likelihood`).

    Args:
        model: the trained network (used in eval mode; not changed); every parameter tensor that
            requires grad (all of them when none does) must belong to an nn.Linear or nn.Conv2d.
        x, y: its training inputs [N, ...] and targets [N] (labels, or floats for regression).
        prior_precision: δ for every tensor, one δ per trainable parameter tensor, or "marglik":
            the scalar δ that maximises the evidence (MacKay's fixed point, `maximise_scalar_evidence`).
        hessian: "kron", "diag" or "full" (`posteriors._gram`).
        likelihood: "categorical" or "gaussian"; None infers it from y's dtype.
        sigma_noise: σ for the gaussian likelihood (default: the training residuals' root mean
            square, the maximiser of log p(D | θ, σ)).
    Returns a float64 scalar tensor.
    """
    likelihood = likelihood or likelihood_of(y)
    if likelihood not in ("categorical", "gaussian"):
        raise ConfigError(f"likelihood: expected 'categorical', 'gaussian' or None, got {likelihood!r}")
    was_training, params = model.training, list(model.parameters())
    frozen = not any(p.requires_grad for p in params)  # e.g. a fitted posterior's model_: cover every tensor
    model.eval()
    try:
        for p in params if frozen else ():
            p.requires_grad_(True)
        x = x.to(device=params[0].device, dtype=params[0].dtype if x.is_floating_point() else torch.float32)
        curvature = fit_network_curvature(model, x, y.to(params[0].device), hessian, likelihood)
    finally:
        model.train(was_training)
        for p in params if frozen else ():
            p.requires_grad_(False)
    sigma = None
    if likelihood == "gaussian":
        sigma = sigma_noise if sigma_noise is not None else math.sqrt(2 * float(curvature.loss) / (curvature.n_data * curvature.n_outputs))
    if isinstance(prior_precision, str):
        if prior_precision != "marglik":
            raise ConfigError(f"prior_precision: expected a positive number, one per parameter tensor, or 'marglik', got {prior_precision!r}")
        factor = 1.0 if sigma is None else 1.0 / sigma**2
        norm2 = float(sum(m.square().sum() for m in curvature.mean))
        prior_precision = maximise_scalar_evidence(curvature.eigenvalues(factor), norm2)
    return log_marginal_likelihood(curvature, prior_precision, sigma)


__all__ = ["MarglikConfig", "MarglikFit", "OnlineMarglik", "likelihood_of", "log_evidence", "train_marglik"]
