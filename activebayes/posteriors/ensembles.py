"""Deep ensembles (Lakshminarayanan et al., 2017) and snapshot ensembles (Huang et al., 2017).

Both are equally weighted mixtures of M trained networks: θ_s is the s-th member, and

    p(y | x_n, θ_s) = softmax(f_s(x_n)),   s = 1..S,  S <= M.

Members run in eval mode (dropout off). When they share an architecture, which they do when
built by one `model_fn`, prediction runs all of them as ONE vectorised call (`torch.func`:
stacked parameters, `functional_call` under `vmap`); otherwise it loops over the members.

>>> import torch
>>> from activebayes import TrainConfig, nets
>>> ens = DeepEnsemble(nets.mlp(2, 2, hidden=(16,)), n_samples=3, train=TrainConfig(epochs=2), seed=0, device="cpu")
>>> x = torch.randn(64, 2)
>>> ens.fit(x, (x[:, 0] > 0).long()).predict(x[:5]).probs.shape
torch.Size([3, 5, 2])

Regression (float targets y [N], networks with one output; `likelihood` below): member s predicts
y | x_n, θ_s ~ N(f_s(x_n), σ_s²), σ_s² its own noise fitted after training from its training
residuals (`gaussian_likelihood.fit_noise_variance`; Lakshminarayanan et al. also give each member its own
variance). `predict` returns a GaussianPredictive (mean [S, N], var[s, n] = σ_s²);
`predict_mean_var` the mixture's mean and the spread of the f_s (plus mean_s σ_s² with
observation_noise=True: the total variance of y).
`likelihood="heteroscedastic"` (a network with two outputs, `activebayes.likelihoods`): trained
on the Gaussian NLL of the natural parameters (standardised targets), each member predicts its own
y | x_n, θ_s ~ N(μ_s(x_n), σ²_s(x_n)): var [S, N] varies with x, and no σ² is fitted.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Unpack

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state

from activebayes.errors import ConfigError
from activebayes.gaussian_likelihood import fit_noise_variance, network_outputs
from activebayes.posteriors._network import (
    REGRESSION_LIKELIHOODS,
    ModelFn,
    NetworkArgs,
    NetworkPosterior,
    check_bool,
    check_positive_number,
    inputs_for,
)
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.training import (
    TrainConfig,
    as_tensor,
    check_positive_int,
    cosine_cycle_lr,
    epoch_steps,
    train,
)


LossFn = Callable[[Tensor, Tensor], Tensor]


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


class _StackedEnsemble(NetworkPosterior):
    """Prediction for ensembles whose members live in a fitted `stack_` (a `MemberStack`)."""

    _fitted_attribute = "stack_"
    likelihoods = ("categorical", *REGRESSION_LIKELIHOODS)
    stack_: MemberStack | None = None
    noise_: Tensor | None = None  # regression: σ_m² [M], one per member

    def _fit_members(self, members: Sequence[nn.Module], x: Tensor, y: Tensor) -> None:
        """Stack the trained members; regression: each member's noise σ_m² [M] from its
        training residuals (float32, on device_)."""
        self.stack_ = MemberStack(members)
        if self.likelihood_ == "gaussian":
            noise = []
            for member in self.stack_.members:
                outputs = network_outputs(member, x)
                noise.append(fit_noise_variance(outputs - y.to(outputs.device), y))
            self.noise_ = torch.tensor(noise, dtype=torch.float32, device=self.device_)

    def _move(self, device: torch.device) -> None:
        self.stack_.to(device)
        if self.noise_ is not None:
            self.noise_ = self.noise_.to(device)

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """p(y | x_n, θ_s) for the first S members (all M by default): probs [S, N, C]; for
        regression a GaussianPredictive with mean [S, N] and var[s, n] = σ_s²."""
        self._check_fitted()
        stack = self.stack_
        m = len(stack) if n_samples is None else n_samples
        if not isinstance(m, int) or isinstance(m, bool) or not 1 <= m <= len(stack):
            raise ConfigError(f"n_samples: expected an integer from 1 to the {len(stack)} members, got {n_samples!r}")
        dtype = next(stack.members[0].parameters()).dtype
        x = as_tensor("x", x, dtype).to(self.device_)
        with torch.no_grad():
            logits = stack.logits(x, m)
        return self._predictive(logits)


class DeepEnsemble(_StackedEnsemble):
    """M networks trained independently, differing by initialisation and data order.

    Args (beyond `NetworkPosterior`'s shared ones):
        n_samples: M, the members (default: as many as `model` holds, else 5);
            `predict(x, n_samples=S)` uses the first S <= M.
        model: instead of `model_fn`, a sequence of M trained networks, used as the members as
            they are (copied; `fit` only fits a regression's noise σ_m²).
        seed: member m is initialised and shuffled with the m-th seed drawn from a generator
            seeded with `seed`; None draws one at `fit`.
        engine: "local" trains the members one after the other here; "ray" trains each as a
            Ray task (one GPU each where the cluster has GPUs; `device` is resolved on the
            worker): the same members, bit-identical on the same device.
        address: engine="ray" only: None (a local Ray), "auto" or "ray://host:port".

    Fitted attributes: `stack_` (a `MemberStack`), `seed_`, `device_`, `likelihood_`, `noise_`
    (regression: σ_m² [M]; None for classification).
    """

    options = ("engine", "address")

    def __init__(
        self, model_fn: ModelFn | None = None, *, n_samples: int | None = None, engine: str = "local", address: str | None = None,
        **shared: Unpack[NetworkArgs],
    ) -> None:  # fmt: skip
        from activebayes.distributed import check_engine

        if n_samples is None:
            given = shared.get("model")
            n_samples = len(given) if isinstance(given, Sequence) and not isinstance(given, nn.Module) else 5
        super().__init__(model_fn, n_samples=n_samples, **shared)
        check_engine(engine, address)
        self.engine, self.address = engine, address

    def _check_model(self, model: object) -> None:
        if isinstance(model, nn.Module) or not isinstance(model, Sequence):
            raise ConfigError(
                f"model: a deep ensemble takes a sequence of trained networks (its members), got {type(model).__name__}; "
                "wrap one network in a list, or pass model_fn to train the members"
            )
        if not all(isinstance(member, nn.Module) for member in model):
            raise ConfigError("model: expected every member to be a trained torch.nn.Module")
        if len(model) != self.n_samples:
            raise ConfigError(f"n_samples: model holds {len(model)} trained networks, so pass n_samples={len(model)}; got {self.n_samples}")

    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """Train M members on (x, y) with `activebayes.training.train` (or copy the given ones)."""
        if self.model is not None:
            members = [copy.deepcopy(member).to(self.device_) for member in self.model]
        else:
            generator = torch.Generator().manual_seed(self.seed_)
            member_seeds = torch.randint(0, 2**62, (self.n_samples,), generator=generator).tolist()
            networks = [self._network(s) for s in member_seeds]
            x = inputs_for(networks[0], x)
            if self.engine == "ray":
                members = self._train_on_ray(networks, member_seeds, x, y)
            else:
                members = [train(net, x, y, self.train_config, seed=s, device=self.device_, loss_fn=self._train_loss)
                           for net, s in zip(networks, member_seeds)]
        self._fit_members(members, inputs_for(members[0], x), y)

    def _train_on_ray(self, networks: list[nn.Module], seeds: list[int], x: Tensor, y: Tensor) -> list[nn.Module]:
        """The members trained as Ray tasks (x, y and the config shipped once), back on device_."""
        from activebayes.distributed import gpu_share, run_tasks

        gpus = gpu_share(self.address, self.device, 1)
        calls = [(net, s) for net, s in zip(networks, seeds)]
        common = (x.cpu(), y.cpu(), self.train_config, self.device, torch.get_num_threads(), self._train_loss)
        trained = dict(run_tasks(_train_member, calls, common=common, address=self.address, gpus_per_task=gpus))
        return [trained[i].to(self.device_) for i in range(len(networks))]


def _train_member(x: Tensor, y: Tensor, config: TrainConfig, device: str | torch.device, threads: int, loss_fn: LossFn | None,
                  net: nn.Module, seed: int) -> nn.Module:
    """One member, trained in a Ray task on `device` (resolved there) with the driver's intra-op
    `threads` (so CPU results are bit-identical to the local fit) and its loss (None: the task
    loss); returned on the CPU."""
    torch.set_num_threads(threads)
    return train(net, x, y, config, seed=seed, device=device, loss_fn=loss_fn).cpu()


class SnapshotEnsemble(_StackedEnsemble):
    """Snapshots of ONE training run with a cyclic cosine learning rate (Huang et al., 2017).

    The run lasts n_samples · epochs_per_cycle epochs; at step t the learning rate is
    lr_max / 2 · (cos(π · (t mod T) / T) + 1) with T the steps of one cycle
    (`activebayes.training.cosine_cycle_lr`), and the weights at the end of each cycle are a
    member. With `warm_start=True` a later `fit` starts from the previous fit's final weights
    instead of a fresh initialisation (Jung, Kim & Lee, ICLR 2023), which suits active learning
    where each round adds a few labels.

    Args (beyond `NetworkPosterior`'s shared ones):
        n_samples: M members, one per cycle.
        model: instead of `model_fn`, a trained network the run starts from (copied) in place
            of a fresh initialisation: the cycles still train, as they must to give snapshots.
        epochs_per_cycle: epochs of one cosine cycle.
        lr_max: the learning rate at the start of each cycle; None takes `train.lr`.
        warm_start: start each `fit` after the first from the last fit's weights.
        train: the optimizer, weight decay and batch size; its `epochs`, `lr` and
            `validation_fraction` / `validation_data` are replaced by the schedule above.
        seed, device, likelihood: as for `DeepEnsemble` (regression: σ_m² per snapshot).

    Fitted attributes: `stack_`, `model_` (the final weights), `seed_`, `device_`, `likelihood_`,
    `noise_`.
    """

    options = ("epochs_per_cycle", "lr_max", "warm_start")
    epochs_option = "epochs_per_cycle"

    def __init__(
        self, model_fn: ModelFn | None = None, *, n_samples: int = 5, epochs_per_cycle: int = 10,
        lr_max: float | None = None, warm_start: bool = False, **shared: Unpack[NetworkArgs],
    ) -> None:  # fmt: skip
        super().__init__(model_fn, n_samples=n_samples, **shared)
        check_positive_int("epochs_per_cycle", epochs_per_cycle)
        check_positive_number("lr_max", lr_max, allow_none=True)
        check_bool("warm_start", warm_start)
        self.epochs_per_cycle, self.lr_max, self.warm_start = epochs_per_cycle, lr_max, warm_start
        self.model_: nn.Module | None = None

    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """One cyclic-learning-rate run on (x, y), a snapshot per cycle."""
        base = self.train_config
        lr_max = base.lr if self.lr_max is None else float(self.lr_max)
        config = dataclasses.replace(
            base, epochs=self.n_samples * self.epochs_per_cycle, lr=lr_max, validation_fraction=0.0, validation_data=None
        )
        steps_per_cycle = self.epochs_per_cycle * epoch_steps(x.shape[0], config)
        if self.warm_start and self.model_ is not None:
            model = copy.deepcopy(self.model_)
        else:
            model = self._network(self.seed_)
        x = inputs_for(model, x)
        snapshots: list[nn.Module] = []

        def snapshot(epoch: int, current: nn.Module) -> None:
            if (epoch + 1) % self.epochs_per_cycle == 0:
                snapshots.append(copy.deepcopy(current).eval())

        self.model_ = train(
            model,
            x,
            y,
            config,
            seed=self.seed_,
            device=self.device_,
            lr_at=lambda step: cosine_cycle_lr(step, steps_per_cycle, lr_max),
            on_epoch_end=snapshot,
            loss_fn=self._train_loss,
        )
        self._fit_members(snapshots, x, y)

    def _move(self, device: torch.device) -> None:
        """Move the fitted snapshots and the final weights (for a warm start) to `device`."""
        super()._move(device)
        self.model_.to(device)


__all__ = ["DeepEnsemble", "MemberStack", "SnapshotEnsemble"]
