"""Deep ensembles (Lakshminarayanan et al., 2017) and snapshot ensembles (Huang et al., 2017).

Both are equally weighted mixtures of M trained networks: θ_s is the s-th member, and

    p(y | x_n, θ_s) = softmax(f_s(x_n)),   s = 1..S,  S <= M.

Members run in eval mode (dropout off). When they share an architecture, which they do when
built by one `model_fn`, prediction runs all of them as ONE vectorised call (`torch.func`:
stacked parameters, `functional_call` under `vmap`); otherwise it loops over the members.

>>> import torch
>>> from activebayes.nets import mlp
>>> x = torch.randn(64, 2); y = (x[:, 0] > 0).long()
>>> ens = DeepEnsemble(mlp(2, 2, hidden=(16,)), n_members=3, epochs=2, seed=0, device="cpu").fit(x, y)
>>> ens.predict(x[:5]).probs.shape
torch.Size([3, 5, 2])

Regression (float targets y [N], networks with one output; `likelihood` below): member s predicts
y | x_n, θ_s ~ N(f_s(x_n), σ_s²), σ_s² its own noise fitted after training from its training
residuals (`training.fit_noise_variance`; Lakshminarayanan et al. also give each member its own
variance). `predict` returns a GaussianPredictive (mean [S, N], var[s, n] = σ_s²);
`predict_mean_var` the mixture's mean and the spread of the f_s (plus mean_s σ_s² with
observation_noise=True: the total variance of y).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import secrets
import warnings
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state

from activebayes._device import resolve_device
from activebayes.errors import ConfigError, ShapeError
from activebayes.posteriors.base import check_fitted
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.training import (
    TrainConfig,
    as_tensor,
    build_model,
    check_positive_int,
    classification_only,
    cosine_cycle_lr,
    fit_noise_variance,
    network_outputs,
    regression_only,
    regression_output,
    resolve_likelihood,
    resolve_train_config,
    train,
)


def _signature(model: nn.Module) -> list[tuple[str, str, tuple[int, ...]]]:
    """What must agree for members to be stacked: module types, parameter and buffer shapes."""
    types = [(name, type(module).__qualname__, ()) for name, module in model.named_modules()]
    tensors = [(name, "t", tuple(t.shape)) for name, t in [*model.named_parameters(), *model.named_buffers()]]
    return types + tensors


class MemberStack:
    """M trained networks evaluated together.

    `logits(x [N, ...], m)` returns [m, N, C] for the first m members: one `vmap`ped
    `functional_call` over stacked weights when the members share an architecture, else a loop.
    Members are deep-copied and put in eval mode; the caller's modules are not touched.
    """

    def __init__(self, members: Sequence[nn.Module]) -> None:
        if not members:
            raise ConfigError("members: expected at least one trained network, got none")
        self.members = [copy.deepcopy(member).eval() for member in members]
        first = _signature(self.members[0])
        self.vectorised = len(self.members) > 1 and all(_signature(m) == first for m in self.members[1:])
        self._stack()

    def _stack(self) -> None:
        if not self.vectorised:
            return
        params, buffers = stack_module_state(self.members)
        self.params = {name: p.detach() for name, p in params.items()}  # each [M, *shape]
        self.buffers = {name: b.detach() for name, b in buffers.items()}
        self.base = copy.deepcopy(self.members[0]).to("meta").eval()

    def __len__(self) -> int:
        return len(self.members)

    def to(self, device: torch.device) -> MemberStack:
        self.members = [member.to(device) for member in self.members]
        self._stack()
        return self

    def logits(self, x: Tensor, m: int) -> Tensor:
        if self.vectorised and m > 1:
            params = {name: p[:m] for name, p in self.params.items()}
            buffers = {name: b[:m] for name, b in self.buffers.items()}

            def one(p: dict[str, Tensor], b: dict[str, Tensor], inputs: Tensor) -> Tensor:
                return functional_call(self.base, (p, b), (inputs,))

            try:
                return torch.vmap(one, in_dims=(0, 0, None))(params, buffers, x)
            except (RuntimeError, NotImplementedError) as exc:  # an operation vmap cannot batch
                warnings.warn(f"MemberStack: vectorised prediction failed ({exc}); looping over members", stacklevel=3)
                self.vectorised = False
        return torch.stack([member(x) for member in self.members[:m]])


class _StackedEnsemble:
    """Prediction for ensembles whose members live in a fitted `stack_` (a `MemberStack`)."""

    stack_: MemberStack | None
    device_: torch.device
    likelihood_: str = "categorical"
    noise_: Tensor | None = None  # regression: σ_m² [M], one per member

    def _fit_noise(self, members: Sequence[nn.Module], x: Tensor, y: Tensor) -> None:
        """Regression: each member's noise σ_m² [M] from its training residuals (float32, on device_)."""
        self.noise_ = None
        if self.likelihood_ == "gaussian":
            noise = []
            for member in members:
                outputs = network_outputs(member, x)
                noise.append(fit_noise_variance(outputs - y.to(outputs.device), y))
            self.noise_ = torch.tensor(noise, dtype=torch.float32, device=self.device_)

    def to(self, device: str | torch.device) -> _StackedEnsemble:
        """Move the fitted members to `device`; returns self."""
        check_fitted(self, "stack_")
        self.device_ = resolve_device(device)
        self.stack_.to(self.device_)
        if self.noise_ is not None:
            self.noise_ = self.noise_.to(self.device_)
        return self

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """p(y | x_n, θ_s) for the first S members (all M by default): probs [S, N, C]; for
        regression a GaussianPredictive with mean [S, N] and var[s, n] = σ_s²."""
        check_fitted(self, "stack_")
        stack = self.stack_
        m = len(stack) if n_samples is None else n_samples
        if not isinstance(m, int) or isinstance(m, bool) or not 1 <= m <= len(stack):
            raise ConfigError(f"n_samples: expected an integer from 1 to the {len(stack)} members, got {n_samples!r}")
        dtype = next(stack.members[0].parameters()).dtype
        x = as_tensor("x", x, dtype).to(self.device_)
        with torch.no_grad():
            logits = stack.logits(x, m)
        if self.likelihood_ == "gaussian":
            outputs = regression_output(logits, 1)
            var = self.noise_[:m].to(outputs.dtype).unsqueeze(1).expand_as(outputs)  # type: ignore[index]
            return GaussianPredictive(outputs, var, check=False)
        if logits.dim() != 3:
            raise ShapeError(f"model_fn: expected the network to output logits [N, C], got [N, ...] = {tuple(logits.shape[1:])}")
        return Predictive(torch.softmax(logits, dim=-1), check=False)

    def predict_proba(self, x: Tensor) -> Tensor:
        """(1/M) Σ_m p(y | x_n, θ_m), [N, C] (classification only)."""
        check_fitted(self, "stack_")
        if self.likelihood_ == "gaussian":
            raise regression_only("predict_proba")
        return self.predict(x).mean()

    def predict_mean_var(self, x: Tensor, n_samples: int | None = None, *, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Regression: mean [N] and variance [N] of f, the spread of the members' outputs (as
        GaussianProcess.predict_mean_var and BoTorch's posterior); with observation_noise the
        total variance of y, the equally weighted mixture's (1/S) Σ_s σ_s² + that spread."""
        check_fitted(self, "stack_")
        if self.likelihood_ != "gaussian":
            raise classification_only("predict_mean_var")
        return self.predict(x, n_samples).moments(observation_noise=observation_noise)


class DeepEnsemble(_StackedEnsemble):
    """M networks trained independently, differing by initialisation and data order.

    Args:
        model_fn: a zero-argument callable returning a fresh network outputting logits [N, C].
        n_members: M; `predict(x, n_samples=S)` uses the first S <= M members.
        config: a `TrainConfig`; `epochs`, `lr`, `weight_decay`, `batch_size` override its fields.
        seed: member m is initialised and shuffled with the m-th seed drawn from a generator
            seeded with `seed`; None draws one at `fit`.
        device: "auto" (CUDA when present), "cpu" or "cuda[:i]"; `to(device)` moves a fitted one.
        likelihood: "categorical", "gaussian" (regression, one output per item) or None to infer
            it from y's dtype at `fit` (float targets -> gaussian).

    Fitted attributes: `stack_` (a `MemberStack`), `seed_`, `device_`, `likelihood_`, `noise_`
    (regression: σ_m² [M]; None for classification).
    """

    def __init__(
        self,
        model_fn: Callable[[], nn.Module],
        *,
        n_members: int = 5,
        config: TrainConfig | None = None,
        epochs: int | None = None,
        lr: float | None = None,
        weight_decay: float | None = None,
        batch_size: int | None = None,
        seed: int | None = None,
        device: str | torch.device = "auto",
        likelihood: str | None = None,
    ) -> None:
        self.model_fn = model_fn
        self.n_members = n_members
        self.likelihood = likelihood
        self.config = config
        self.epochs, self.lr, self.weight_decay, self.batch_size = epochs, lr, weight_decay, batch_size
        self.seed = seed
        self.device = device
        self.stack_: MemberStack | None = None

    def fit(self, x: Tensor, y: Tensor) -> DeepEnsemble:
        """Train M members on (x [N, ...], y [N]) with `activebayes.training.train`."""
        check_positive_int("n_members", self.n_members)
        config = resolve_train_config(
            self.config, epochs=self.epochs, lr=self.lr, weight_decay=self.weight_decay, batch_size=self.batch_size
        )
        seed = self.seed if self.seed is not None else secrets.randbits(62)
        generator = torch.Generator().manual_seed(seed)
        member_seeds = torch.randint(0, 2**62, (self.n_members,), generator=generator).tolist()
        x, y = as_tensor("x", x, torch.float32), as_tensor("y", y, None)
        likelihood, y = resolve_likelihood(self.likelihood, y)
        members = [
            train(build_model(self.model_fn, s), x, y, config, seed=s, device=self.device) for s in member_seeds
        ]
        self.stack_ = MemberStack(members)
        self.seed_ = seed
        self.device_ = resolve_device(self.device)
        self.likelihood_ = likelihood
        self._fit_noise(self.stack_.members, x, y)
        return self


class SnapshotEnsemble(_StackedEnsemble):
    """Snapshots of ONE training run with a cyclic cosine learning rate (Huang et al., 2017).

    The run lasts n_snapshots · epochs_per_cycle epochs; at step t the learning rate is
    lr_max / 2 · (cos(π · (t mod T) / T) + 1) with T the steps of one cycle
    (`activebayes.training.cosine_cycle_lr`), and the weights at the end of each cycle are a
    member. With `warm_start=True` a later `fit` starts from the previous fit's final weights
    instead of a fresh initialisation (Jung, Kim & Lee, ICLR 2023), which suits active learning
    where each round adds a few labels.

    Args:
        model_fn: a zero-argument callable returning a fresh network outputting logits [N, C].
        n_snapshots: M members, one per cycle.
        epochs_per_cycle: epochs of one cosine cycle.
        lr_max: the learning rate at the start of each cycle; None takes the config's `lr`.
        warm_start: start each `fit` after the first from the last fit's weights.
        config: a `TrainConfig` (optimizer, weight decay, batch size); its `epochs`, `lr` and
            `validation_fraction` are replaced by the schedule above.
        seed, device, likelihood: as for `DeepEnsemble` (regression: σ_m² per snapshot).

    Fitted attributes: `stack_`, `model_` (the final weights), `seed_`, `device_`, `likelihood_`,
    `noise_`.
    """

    def __init__(
        self,
        model_fn: Callable[[], nn.Module],
        *,
        n_snapshots: int = 5,
        epochs_per_cycle: int = 10,
        lr_max: float | None = None,
        warm_start: bool = False,
        config: TrainConfig | None = None,
        weight_decay: float | None = None,
        batch_size: int | None = None,
        seed: int | None = None,
        device: str | torch.device = "auto",
        likelihood: str | None = None,
    ) -> None:
        self.model_fn = model_fn
        self.n_snapshots = n_snapshots
        self.likelihood = likelihood
        self.epochs_per_cycle = epochs_per_cycle
        self.lr_max = lr_max
        self.warm_start = warm_start
        self.config = config
        self.weight_decay, self.batch_size = weight_decay, batch_size
        self.seed = seed
        self.device = device
        self.stack_: MemberStack | None = None
        self.model_: nn.Module | None = None

    def fit(self, x: Tensor, y: Tensor) -> SnapshotEnsemble:
        """One cyclic-learning-rate run on (x [N, ...], y [N]), a snapshot per cycle."""
        check_positive_int("n_snapshots", self.n_snapshots)
        check_positive_int("epochs_per_cycle", self.epochs_per_cycle)
        base = resolve_train_config(self.config, weight_decay=self.weight_decay, batch_size=self.batch_size)
        lr_max = base.lr if self.lr_max is None else float(self.lr_max)
        if not lr_max > 0:
            raise ConfigError(f"lr_max: expected a positive learning rate, got {self.lr_max!r}")
        config = dataclasses.replace(
            base, epochs=self.n_snapshots * self.epochs_per_cycle, lr=lr_max, validation_fraction=0.0
        )
        seed = self.seed if self.seed is not None else secrets.randbits(62)
        x, y = as_tensor("x", x, torch.float32), as_tensor("y", y, None)
        likelihood, y = resolve_likelihood(self.likelihood, y)
        steps_per_cycle = self.epochs_per_cycle * math.ceil(x.shape[0] / config.batch_size)
        if self.warm_start and self.model_ is not None:
            model = copy.deepcopy(self.model_)
        else:
            model = build_model(self.model_fn, seed)
        snapshots: list[nn.Module] = []

        def snapshot(epoch: int, current: nn.Module) -> None:
            if (epoch + 1) % self.epochs_per_cycle == 0:
                snapshots.append(copy.deepcopy(current).eval())

        model = train(
            model,
            x,
            y,
            config,
            seed=seed,
            device=self.device,
            lr_at=lambda step: cosine_cycle_lr(step, steps_per_cycle, lr_max),
            on_epoch_end=snapshot,
        )
        self.stack_ = MemberStack(snapshots)
        self.model_ = model
        self.seed_ = seed
        self.device_ = resolve_device(self.device)
        self.likelihood_ = likelihood
        self._fit_noise(self.stack_.members, x, y)
        return self

    def to(self, device: str | torch.device) -> SnapshotEnsemble:
        """Move the fitted snapshots and the final weights (for a warm start) to `device`."""
        super().to(device)
        self.model_.to(self.device_)
        return self


__all__ = ["DeepEnsemble", "MemberStack", "SnapshotEnsemble"]
