"""SWAG: stochastic weight averaging Gaussian (Maddox et al. 2019).

After pre-training (the shared `train`), SGD continues at a constant (or cyclic) learning rate
and, at each of T snapshots θ_1..θ_T (one per SWA epoch, of at least `snapshot_steps` optimiser
steps), updates

    θ̄_t  = θ̄_{t-1} + (θ_t − θ̄_{t-1}) / t        (first moment, the SWA mean)
    θ̄²_t = θ̄²_{t-1} + (θ_t² − θ̄²_{t-1}) / t      (second moment)
    D    = [θ_i − θ̄_i]_{i = T−K+1..T}  [P, K]     (the last K deviations, each from the running
                                                    mean after θ_i, as in the authors' code)

and samples θ ~ N(θ̄, scale · (Σ_diag + D Dᵀ / (K − 1))), Σ_diag = max(θ̄² − θ̄², eps):
    θ = θ̄ + √scale · (√Σ_diag ⊙ z₁ + D z₂ / √(K − 1)),  z₁ ~ N(0, I_P), z₂ ~ N(0, I_K),
exactly the sampler of Maddox et al.'s reference code (swa_gaussian, `SWAG.sample(scale, cov=True)`),
where the default scale = 0.5 is the paper's ½ in Σ_SWAG = ½ (Σ_diag + D Dᵀ / (K − 1)). K is the
number of deviation columns held, min(rank, T); the reference divides by its `max_num_models − 1`
even while fewer columns are held, which only differs when T < rank.
`diag_only=True` samples θ ~ N(θ̄, scale · Σ_diag) (SWAG-Diagonal).

The SWA phase continues with the training optimizer (SGD with its momentum, as Maddox et al., or
Adam; `swa_optimizer` overrides it) and weight decay at its own constant learning rate `swa_lr`
(or a cosine cycle per epoch), whatever schedule pre-training used; by default
swa_lr = `swa_lr_ratio` × the training lr = ½ × the training lr (Maddox et al.'s SWA learning
rate is 0.2-0.5 of their initial one), one snapshot per SWA epoch (Maddox et al.'s recipe), where
an SWA epoch lasts max(⌈N/B⌉, `snapshot_steps` = 100) optimiser steps (the items drawn as
`TrainConfig.epoch_samples` draws them). Maddox et al.'s epochs are ~390 steps (CIFAR, 50,000
images, B = 128); one epoch over an active-learning set of 600 items is ~10 steps, after which
the iterates have barely moved, and 20 such snapshots gave a spread no wider than the MAP
network's (mean test BALD 0.0004 nats on a digits MLP at 600 labels; 0.0023 with these defaults,
README_EXPERIMENTS "SWAG's spread").
A divergence guard watches the SWA phase's mean training loss per epoch: a non-finite loss, or one
above L_last + ½ (L_first − L_last) (having lost half of what pre-training gained; L_first, L_last
the first and last pre-training epochs' losses; 2 max(L_first, L_last) where pre-training did not
halve its loss, so a short or noisy pre-training is not mistaken for divergence), stops
`fit` with a ConfigError naming swa_lr and the loss seen: the snapshots of a diverged run are no
posterior.

S samples are drawn once per `predict` call from a generator seeded with `seed` (so batches and
calls agree) and run as one vectorised call (torch.func.functional_call + vmap). A network with
BatchNorm gets its running statistics recomputed for each sample (one pass over the training data
in train mode with momentum=None, a cumulative average), after which the S networks run in turn.

>>> import torch
>>> from torch import nn
>>> x, y = torch.randn(64, 2), torch.randint(0, 3, (64,))
>>> swag = SWAG(lambda: nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 3)),
...             rank=5, n_snapshots=6, swa_lr=0.05, seed=0).fit(x, y)
>>> swag.predict(x[:4], n_samples=7).probs.shape
torch.Size([7, 4, 3])

Regression (float targets y [N], a network with one output; `likelihood`): each weight sample
predicts y | x_n, θ_s ~ N(f(x_n; θ_s), σ²), σ² fitted after the SWA phase from the training
residuals of the SWA mean θ̄ (the centre of the posterior; BatchNorm statistics refreshed for it)
with `gaussian_likelihood.fit_noise_variance`. `predict` returns a GaussianPredictive (mean [S, N],
var [S, N] = σ²); `predict_mean_var` the mixture's mean and the spread (σ² + spread with
observation_noise=True).
`likelihood="heteroscedastic"` (a network with two outputs, `activebayes.likelihoods`): trained
on the Gaussian NLL of the natural parameters (standardised targets), each weight sample predicts its own
y | x_n, θ_s ~ N(μ_s(x_n), σ²_s(x_n)): var [S, N] varies with x, and no σ² is fitted.

`predictive="analytic"` predicts without sampling: each weight gets its SWAG marginal
N(θ̄_i, scale · (Σ_diag,i + Σ_k D_ik² / (K − 1))) — the diagonal of the SWAG covariance; with
diag_only=True exactly SWAG-Diagonal, otherwise the low-rank part's correlations between weights
are dropped (its contribution to each weight's variance is kept) — and this mean-field Gaussian
is propagated through the network at θ̄ in one forward pass (`_moment_propagation`: exact
moments through Linear and Conv2d layers and ReLU, other activations linearised at the mean,
max-pool at the mean's argmax), giving f(x) ≈ N(μ_f, diag σ_f²); `predict_proba` is its
mean-field softmax approximation,
`predict` S seeded, pool-consistent draws μ_f + σ_f ⊙ ε_s (one ε [S, C] per call), and
`predict_mean_var` (regression) (μ_f, σ_f²). Networks with BatchNorm are refused (use "sampled").
"""

from __future__ import annotations

import copy
import functools
import math
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Unpack

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap

from activebayes.errors import ConfigError, ShapeError
from activebayes.gaussian_likelihood import fit_noise_variance, regression_output
from activebayes.posteriors._moment_propagation import PREDICTIVES, AnalyticPredictive, check_propagatable, propagate_in_chunks
from activebayes.likelihoods import HETEROSCEDASTIC
from activebayes.posteriors._network import (
    REGRESSION_LIKELIHOODS,
    ModelFn,
    NetworkArgs,
    NetworkPosterior,
    check_bool,
    check_choice,
    check_positive_number,
    inputs_for,
)
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.training import (
    TrainConfig,
    check_non_negative_int,
    check_positive_int,
    cosine_cycle_lr,
    epoch_steps,
    task_loss,
    train,
)

_BN_TYPES = (nn.modules.batchnorm._BatchNorm,)
_BN_BATCH = 1024  # rows per forward pass when refreshing BatchNorm statistics


class SWAGMoments:
    """Running SWAG statistics over flattened parameter vectors θ_t [P] (formulas: module doc).

    Attributes:
        n: snapshots seen; mean θ̄ [P]; sq_mean θ̄² [P]; deviations: the last `rank` columns of D.
    """

    def __init__(self, n_params: int, *, rank: int, dtype: torch.dtype = torch.float64,
                 device: torch.device | str = "cpu") -> None:
        if rank < 0:
            raise ConfigError(f"rank: expected a non-negative integer, got {rank}")
        self.rank = rank
        self.n = 0
        self.mean = torch.zeros(n_params, dtype=dtype, device=device)
        self.sq_mean = torch.zeros(n_params, dtype=dtype, device=device)
        self.deviations: deque[Tensor] = deque(maxlen=rank) if rank > 0 else deque(maxlen=0)

    def update(self, theta: Tensor) -> None:
        """Add one snapshot θ_t [P]."""
        if theta.shape != self.mean.shape:
            raise ShapeError(f"theta: expected shape {tuple(self.mean.shape)}, got {tuple(theta.shape)}")
        theta = theta.detach().to(self.mean)
        self.n += 1
        self.mean += (theta - self.mean) / self.n
        self.sq_mean += (theta.square() - self.sq_mean) / self.n
        if self.rank > 0:
            self.deviations.append(theta - self.mean)

    def to(self, device: torch.device | str) -> SWAGMoments:
        """Move the moments and deviations to `device`; returns self."""
        self.mean, self.sq_mean = self.mean.to(device), self.sq_mean.to(device)
        self.deviations = deque((d.to(device) for d in self.deviations), maxlen=self.deviations.maxlen)
        return self

    def variance(self, eps: float = 1e-30) -> Tensor:
        """Σ_diag = max(θ̄² − θ̄², eps) [P]."""
        return (self.sq_mean - self.mean.square()).clamp_min(eps)

    def deviation_matrix(self) -> Tensor:
        """D [P, K], oldest column first."""
        if not self.deviations:
            return self.mean.new_zeros(self.mean.shape[0], 0)
        return torch.stack(list(self.deviations), dim=1)

    def covariance(self, *, scale: float = 1.0, diag_only: bool = False, eps: float = 1e-30) -> Tensor:
        """The dense sampling covariance [P, P] (for tests and small models)."""
        var = self.variance(eps)
        if diag_only:
            return scale * torch.diag(var)
        dev = self.deviation_matrix()
        k = dev.shape[1]
        return scale * (torch.diag(var) + dev @ dev.T / (k - 1))

    def sample(self, n_samples: int, generator: torch.Generator, *, scale: float = 1.0,
               diag_only: bool = False, eps: float = 1e-30) -> Tensor:
        """θ_s [S, P]; noise is drawn on the CPU from `generator` (z₁ [S, P] then z₂ [S, K])."""
        if self.n == 0:
            raise ConfigError("SWAGMoments: expected at least one snapshot before sampling, got none")
        var = self.variance(eps)
        p = var.shape[0]
        z1 = torch.randn(n_samples, p, generator=generator, dtype=torch.float64).to(var)
        if diag_only:
            return self.mean + scale**0.5 * var.sqrt() * z1
        dev = self.deviation_matrix()
        k = dev.shape[1]
        if k < 2:
            raise ConfigError(f"SWAG: the low-rank part needs at least 2 snapshots, got {k}; collect more or use diag_only")
        z2 = torch.randn(n_samples, k, generator=generator, dtype=torch.float64).to(var)
        return self.mean + scale**0.5 * (var.sqrt() * z1 + z2 @ dev.T / (k - 1) ** 0.5)


def _flat_params(model: nn.Module) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _unflatten(model: nn.Module, thetas: Tensor) -> dict[str, Tensor]:
    """Split θ [S, P] into {name: [S, *shape]} in model.named_parameters() order."""
    out, start = {}, 0
    for name, p in model.named_parameters():
        out[name] = thetas[:, start : start + p.numel()].reshape(thetas.shape[0], *p.shape).to(p.dtype)
        start += p.numel()
    return out


def divergence_limit(pre_losses: list[float]) -> float:
    """The highest SWA-phase epoch loss still taken as converged (module docstring).

    Where pre-training at least halved its loss (L_last <= L_first / 2), L_last + ½ (L_first −
    L_last): losing half of that gain is divergence. Where it gained less (a few epochs, a noisy
    dropout loss), the SWA loss fluctuates around L_first and only 2 max(L_first, L_last) counts;
    with both 0, only a non-finite loss does.
    """
    first, last = pre_losses[0], pre_losses[-1]
    if first > 0 and last <= 0.5 * first:
        return last + 0.5 * (first - last)
    return 2.0 * max(first, last) if max(first, last) > 0 else math.inf


def check_swa_loss(epoch: int, loss: float, *, limit: float, swa_lr: float, optimizer: str) -> None:
    """Raise ConfigError when an SWA epoch's mean training loss is non-finite or above `limit`."""
    if not math.isfinite(loss) or loss > limit:
        raise ConfigError(
            f"swa_lr: the SWA phase ({optimizer}, swa_lr={swa_lr:g}) diverged in SWA epoch {epoch + 1}: training loss {loss:.4g}, "
            f"above the {limit:.4g} that pre-training had got below; lower swa_lr (or swa_lr_ratio)"
        )


class SWAG(AnalyticPredictive, NetworkPosterior):
    """SWAG posterior over all weights of a network.

    Args (beyond `NetworkPosterior`'s shared ones):
        model_fn: factory of a fresh network, pre-trained by `fit` with `train`.
        model: instead, an already-trained network (copied): `fit` skips pre-training and runs
            the SWA phase from it, with `train`'s lr, optimizer, batch size and weight decay as
            if it had trained it; the divergence guard takes the loss of knowing nothing (log C
            for C classes, the targets' variance for regression) as the first pre-training loss
            and the network's own training loss as the last.
        rank: K, the number of deviation columns kept.
        n_snapshots: T, SWA epochs (one snapshot at the end of each).
        snapshot_steps: the fewest optimiser steps in an SWA epoch, so between two snapshots
            (default 100); None: one epoch of `train` (⌈N/B⌉ steps, or its `epoch_samples`).
        swa_lr: learning rate of the SWA phase (the peak of each cycle when cyclic), or None for
            `swa_lr_ratio` × the training lr.
        swa_lr_ratio: swa_lr relative to the training lr when swa_lr is None (default 0.5;
            Maddox et al. ran SWA at 0.2-0.5 of the initial SGD learning rate).
        swa_optimizer: "sgd" (Maddox et al.), "adam", or None for the training optimizer, so that
            swa_lr stays in the units the network was trained with. After Adam pre-training SGD
            barely moves a network whose training loss is ~0 (the gradients vanish) and the samples
            are the MAP network; Adam's normalised steps keep exploring.
        schedule: "constant", or "cyclic" (a cosine cycle per epoch, snapshots at its end); the
            pre-training schedule never carries over.
        scale: multiplies the covariance (0.5, the paper's ½, as in the reference code).
        diag_only: sample from the diagonal part alone.
        n_samples: default S of weight samples for `predict`.
        train: pre-training; the SWA epochs reuse its batch size, momentum and weight decay.
            The default TrainConfig (Adam, lr 1e-3) gives swa_lr 5e-4 with Adam.
        var_clamp: eps under Σ_diag.
        predictive: "sampled" (S weight samples) or "analytic" (moment propagation of the
            weights' SWAG marginals and the mean-field softmax approximation, module docstring).

    Fitted attributes: `model_`, `moments_`, `swa_lr_`, `seed_`, `device_`, `likelihood_`,
    `noise_` (σ², regression only; None for classification).
    """

    options = ("rank", "n_snapshots", "snapshot_steps", "swa_lr", "swa_lr_ratio", "swa_optimizer", "schedule", "scale", "diag_only", "var_clamp", "predictive")
    _fitted_attribute = "moments_"
    likelihoods = ("categorical", *REGRESSION_LIKELIHOODS)

    def __init__(
        self,
        model_fn: ModelFn | None = None,
        *,
        n_samples: int = 30,
        rank: int = 20,
        n_snapshots: int = 20,
        snapshot_steps: int | None = 100,
        swa_lr: float | None = None,
        swa_lr_ratio: float = 0.5,
        swa_optimizer: str | None = None,
        schedule: str = "constant",
        scale: float = 0.5,
        diag_only: bool = False,
        var_clamp: float = 1e-30,
        predictive: str = "sampled",
        **shared: Unpack[NetworkArgs],
    ) -> None:
        super().__init__(model_fn, n_samples=n_samples, **shared)
        check_choice("swa_optimizer", swa_optimizer, ("sgd", "adam", None))
        check_choice("schedule", schedule, ("constant", "cyclic"))
        check_bool("diag_only", diag_only)
        check_non_negative_int("rank", rank)
        check_positive_int("n_snapshots", n_snapshots)
        if snapshot_steps is not None:
            check_positive_int("snapshot_steps", snapshot_steps)
        check_positive_number("var_clamp", var_clamp)
        if not diag_only and min(rank, n_snapshots) < 2:
            raise ConfigError(f"n_snapshots: expected >= 2 snapshots and rank >= 2 (or diag_only=True), "
                              f"got n_snapshots={n_snapshots}, rank={rank}")
        check_positive_number("scale", scale)
        check_positive_number("swa_lr", swa_lr, allow_none=True)
        check_positive_number("swa_lr_ratio", swa_lr_ratio)
        check_choice("predictive", predictive, PREDICTIVES)
        if predictive == "analytic" and shared.get("likelihood") == HETEROSCEDASTIC:
            raise ConfigError("predictive: 'analytic' propagates one Gaussian output, not the heteroscedastic likelihood's two; "
                              "use predictive='sampled'")
        self.predictive = predictive
        self.rank, self.n_snapshots, self.snapshot_steps = rank, n_snapshots, snapshot_steps
        self.swa_lr, self.swa_lr_ratio, self.swa_optimizer = swa_lr, swa_lr_ratio, swa_optimizer
        self.schedule, self.scale, self.diag_only, self.var_clamp = schedule, scale, diag_only, var_clamp
        self.moments_: SWAGMoments | None = None
        self.model_: nn.Module | None = None

    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """Pre-train (or copy `model`), run T SWA epochs collecting the moments, keep x for
        BatchNorm refreshes. Raises ConfigError when the SWA phase diverges (module docstring)."""
        dev, seed = self.device_, self.seed_
        seeds = torch.Generator().manual_seed(seed)
        swa_seed, self._sample_seed = (int(s) for s in torch.randint(0, 2**62, (2,), generator=seeds))
        config = self.train_config
        net = self._network(seed)
        if self.predictive == "analytic":
            check_propagatable(net)
        x = inputs_for(net, x)
        self._analytic_state: tuple[nn.Module, dict[str, Tensor]] | None = None
        if self.model is None:
            pre_losses: list[float] = []
            net = train(net, x, y, config, seed=seed, device=dev, on_epoch_loss=lambda _epoch, loss: pre_losses.append(loss),
                        loss_fn=self._train_loss)
        else:
            net = net.to(dev)
            pre_losses = [_uninformed_loss(net, x, y, self.likelihood_), _training_loss(net, x, y, self._train_loss or task_loss)]
        swa_lr = self.swa_lr if self.swa_lr is not None else self.swa_lr_ratio * config.lr
        moments = SWAGMoments(sum(p.numel() for p in net.parameters()), rank=self.rank, device=dev)
        swa_config = replace(config, epochs=self.n_snapshots, lr=swa_lr, optimizer=self.swa_optimizer or config.optimizer,
                             validation_fraction=0.0, validation_data=None, schedule="constant",
                             epoch_samples=snapshot_interval_items(x.shape[0], config, self.snapshot_steps))
        lr_at = None
        if self.schedule == "cyclic":
            steps = epoch_steps(x.shape[0], swa_config)
            lr_at = lambda step: cosine_cycle_lr(step, steps, swa_lr)  # noqa: E731
        guard = functools.partial(check_swa_loss, limit=divergence_limit(pre_losses), swa_lr=swa_lr,
                                  optimizer=swa_config.optimizer)
        train(net, x, y, swa_config, seed=swa_seed, device=dev, lr_at=lr_at,
              on_epoch_end=lambda _epoch, model: moments.update(_flat_params(model)),
              on_epoch_loss=guard, loss_fn=self._train_loss)
        self.swa_lr_ = swa_lr
        self.moments_, self.model_ = moments, net.eval()
        self._has_bn = any(isinstance(m, _BN_TYPES) for m in net.modules())
        self._x_train = x.to(dev) if self._has_bn else None
        self._cache: dict[int, tuple[dict[str, Tensor], list[dict[str, Tensor]] | None]] = {}
        if self.likelihood_ == "gaussian":
            outputs = self._swa_mean_outputs(x.to(dev))
            self.noise_ = fit_noise_variance(outputs - y.to(outputs.device), y)

    @torch.no_grad()
    def _swa_mean_outputs(self, x: Tensor) -> Tensor:
        """Regression outputs [N] of the network at the SWA mean θ̄ (BatchNorm refreshed for it)."""
        params = {k: v[0] for k, v in _unflatten(self.model_, self.moments_.mean.unsqueeze(0)).items()}  # type: ignore[arg-type, union-attr]
        buffers = self._refresh_bn(params) if self._has_bn else dict(self.model_.named_buffers())  # type: ignore[union-attr]
        return torch.cat([regression_output(functional_call(self.model_, (params, buffers), (chunk,)), 0)  # type: ignore[arg-type]
                          for chunk in x.split(_BN_BATCH)])

    def _move(self, device: torch.device) -> None:
        """Move the network, the SWAG moments and the BatchNorm data; the weight samples are
        drawn on the CPU from the seeded generator, so they do not change."""
        self.model_ = self.model_.to(device)  # type: ignore[union-attr]
        self.moments_ = self.moments_.to(device)  # type: ignore[union-attr]
        if self._x_train is not None:
            self._x_train = self._x_train.to(device)
        self._cache = {}
        self._analytic_state = None

    def _samples(self, n_samples: int) -> tuple[dict[str, Tensor], list[dict[str, Tensor]] | None]:
        """Parameters {name: [S, ...]} and, with BatchNorm, each sample's refreshed buffers."""
        if n_samples not in self._cache:
            generator = torch.Generator().manual_seed(self._sample_seed)
            thetas = self.moments_.sample(n_samples, generator, scale=self.scale,  # type: ignore[union-attr]
                                          diag_only=self.diag_only, eps=self.var_clamp)
            params = _unflatten(self.model_, thetas)  # type: ignore[arg-type]
            buffers = [self._refresh_bn({k: v[s] for k, v in params.items()}) for s in range(n_samples)] if self._has_bn else None
            self._cache = {n_samples: (params, buffers)}
        return self._cache[n_samples]

    @torch.no_grad()
    def _refresh_bn(self, params: dict[str, Tensor]) -> dict[str, Tensor]:
        """BatchNorm running statistics of the network with `params` over the training data (a
        chunk of one item passed as that item twice, which BatchNorm in training mode needs)."""
        net = copy.deepcopy(self.model_)
        net.load_state_dict(params, strict=False)  # type: ignore[union-attr]
        for m in net.modules():  # type: ignore[union-attr]
            if isinstance(m, _BN_TYPES):
                m.reset_running_stats()
                m.momentum = None
        net.train()  # type: ignore[union-attr]
        for chunk in self._x_train.split(_BN_BATCH):  # type: ignore[union-attr]
            net(chunk if len(chunk) > 1 else chunk.expand(2, *chunk.shape[1:]))  # type: ignore[misc]  # one item: twice, as BatchNorm needs two
        return {k: v.clone() for k, v in net.named_buffers()}  # type: ignore[union-attr]

    def marginal_variances(self) -> Tensor:
        """Each weight's SWAG marginal variance [P]: scale · (Σ_diag + diag(D Dᵀ) / (K − 1)), or
        scale · Σ_diag with diag_only (module docstring)."""
        self._check_fitted()
        moments = self.moments_
        var = moments.variance(self.var_clamp)  # type: ignore[union-attr]
        if not self.diag_only:
            dev = moments.deviation_matrix()  # type: ignore[union-attr]
            var = var + dev.square().sum(1) / (dev.shape[1] - 1)
        return self.scale * var

    def output_moments(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and variance [N, C] (regression [N, 1] or [N]) of the network's outputs under the
        weights' SWAG marginals, by moment propagation at θ̄ (module docstring)."""
        self._check_fitted()
        if self._analytic_state is None:
            if self._has_bn:
                raise ConfigError("predictive: 'analytic' cannot propagate moments through BatchNorm; use predictive='sampled'")
            net = copy.deepcopy(self.model_)
            means = {k: v[0] for k, v in _unflatten(net, self.moments_.mean.unsqueeze(0)).items()}  # type: ignore[arg-type, union-attr]
            net.load_state_dict(means, strict=False)  # type: ignore[union-attr]
            variances = {k: v[0] for k, v in _unflatten(net, self.marginal_variances().unsqueeze(0)).items()}  # type: ignore[arg-type]
            self._analytic_state = (net.eval(), variances)  # type: ignore[union-attr]
        net, variances = self._analytic_state
        x = inputs_for(net, torch.as_tensor(x)).to(next(net.parameters()).device)
        return propagate_in_chunks(net, x, variances)

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """Predictive [S, N, C] of S weight samples shared by every x; for regression a
        GaussianPredictive with mean [S, N] (each sample's output) and var [S, N] = σ².
        With predictive="analytic", S draws from the propagated Gaussian over the outputs."""
        self._check_fitted()
        if self.predictive == "analytic":
            return self._analytic_predict(x, n_samples)
        s = self._sample_count(n_samples)
        params, buffers = self._samples(s)
        net = self.model_
        x = x.to(next(net.parameters()).device)  # type: ignore[union-attr]
        with torch.no_grad():
            if buffers is None:
                fixed = dict(net.named_buffers())  # type: ignore[union-attr]
                logits = vmap(lambda p: functional_call(net, (p, fixed), (x,)))(params)
            else:
                logits = torch.stack([functional_call(net, ({k: v[i] for k, v in params.items()}, buffers[i]), (x,))
                                      for i in range(s)])
        return self._predictive(logits)  # [S, N, C], or regression's mean and var [S, N]


def snapshot_interval_items(n: int, config: TrainConfig, steps: int | None) -> int | None:
    """`TrainConfig.epoch_samples` of the SWA phase: an SWA epoch (one snapshot) of max(n, L,
    steps · B) items, so ⌈max(n, L, steps · B) / B⌉ optimiser steps separate two snapshots however
    few the n items (L = config.epoch_samples; steps None: the training config's own epochs)."""
    if steps is None or steps * config.batch_size <= max(n, config.epoch_samples or 0):
        return config.epoch_samples
    return steps * config.batch_size


@torch.no_grad()
def _training_loss(net: nn.Module, x: Tensor, y: Tensor, loss_fn: Callable[[Tensor, Tensor], Tensor]) -> float:
    """The trained network's mean training loss (`loss_fn`: cross-entropy, squared error or the
    heteroscedastic NLL)."""
    net.eval()
    device = next(net.parameters()).device
    losses = [loss_fn(net(xs.to(device)), ys.to(device)) * len(xs) for xs, ys in zip(x.split(_BN_BATCH), y.split(_BN_BATCH))]
    return float(sum(losses)) / x.shape[0]


@torch.no_grad()
def _uninformed_loss(net: nn.Module, x: Tensor, y: Tensor, likelihood: str) -> float:
    """The loss of knowing nothing, standing in for an untrained network's first epoch: log C
    for C classes (the uniform prediction), the targets' variance for regression (their mean),
    ½ log(2πe) for the heteroscedastic NLL of standardised targets (N(0, 1) for all)."""
    if likelihood == HETEROSCEDASTIC:
        return 0.5 * math.log(2 * math.pi * math.e)
    if y.is_floating_point():
        return float(y.to(torch.float64).var(correction=0))
    device = next(net.parameters()).device
    return math.log(net.eval()(x[:1].to(device)).shape[-1])
