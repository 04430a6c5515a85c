"""Monte Carlo dropout (Gal & Ghahramani, 2016) with consistent masks and a cached prefix.

A posterior sample θ_s is the trained network with one set of dropout masks m_s, drawn once per
`predict` call from a generator seeded from (seed, S, layer index) and shared by every candidate
(consistent MC dropout): a mask depends on the feature index only, never on the item, so the
scores of a pool do not depend on how it is split into batches or in which order they come.

    p(y | x_n, θ_s) = softmax(f(x_n; W, m_s)),   m_s[i] ~ Bernoulli(1 − p) / (1 − p)

Fast path, for any `nn.Sequential` (nested ones are flattened):
  * the layers before the first dropout (the deterministic prefix) run once per input;
  * a mask on a Linear layer's input folds into its weights,
        (h ⊙ m_s) Wᵀ + b = h (W ⊙ m_s)ᵀ + b,
    so the S tails start with ONE wide matmul h [N, D] @ W_allᵀ [D, S·out] and each later masked
    Linear is one batched matmul over S; no random numbers are drawn per item;
  * a mask commutes with the layers it passes unchanged: ReLU (f(m·x) = m·f(x) for m ≥ 0) and,
    for a channel mask (Dropout2d), pooling; they run once on the N shared items;
  * a channel mask on a Conv's input folds into its weights, conv(h ⊙ m_s; W) = conv(h; W ⊙ m_s),
    so the S samples are ONE conv with S·out output channels on the shared [N, C, ...] input;
  * a mask before any other layer (e.g. a Conv after an elementwise Dropout) is applied by
    broadcasting over the items, and the layer then runs on the S·N stacked inputs.
The masks, the prefix and the tail live in `activebayes.posteriors.dropout_tail` (with the CPU
fast paths: a channels-last prefix, and the first masked Linear folded by its dropped features).
Models that are not `nn.Sequential` run S full passes with the same masks applied through
forward hooks (a warning says so once per fit); `prefix_cache=False` forces that reference path.

>>> import torch
>>> from activebayes.nets import mlp
>>> from activebayes.training import TrainConfig
>>> x = torch.randn(64, 2); y = (x[:, 0] > 0).long()
>>> post = MCDropout(mlp(2, 2, hidden=(16,)), n_samples=8, train=TrainConfig(epochs=2), seed=0, device="cpu").fit(x, y)
>>> post.predict(x[:5]).probs.shape
torch.Size([8, 5, 2])

Independent masks (`masks="independent"`, as Keras/Theano dropout at test time in the code of
Gal et al. 2017): every item gets its own S mask sets, drawn per `predict` call from a generator
on the model's device seeded from (seed, S), so the same call on the same inputs gives the same
result (reproducible; a different batching or device draws other masks). The deterministic
prefix still runs once; the tail runs S times. `masks="shared"` (default) is the consistent
scheme above.

Gal et al.'s N-scaled weight decay: `weight_decay_scale=c` sets the weight decay to c / N at `fit`
(N the number of training items), overriding `train.weight_decay`.

Regression (float targets y [N], a network with one output): the mask sets are samples of the
function, y | x_n, θ_s ~ N(f(x_n; W, m_s), σ²) with σ² the noise fitted after training from the
residuals of the deterministic (eval-mode, dropout off) network (`gaussian_likelihood.fit_noise_variance`).
`predict` returns a GaussianPredictive (mean [S, N], var [S, N] = σ²); `predict_mean_var` the
mixture's mean and the spread of the S outputs (σ² + spread with observation_noise=True).
`likelihood="heteroscedastic"` (a network with two outputs, `activebayes.likelihoods`): trained
on the Gaussian NLL of the natural parameters (standardised targets), each mask set predicts its own
y | x_n, θ_s ~ N(μ_s(x_n), σ²_s(x_n)): var [S, N] varies with x, and no σ² is fitted.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Unpack

import torch
from torch import Tensor, nn

from activebayes.errors import ConfigError, ShapeError, regression_only
from activebayes.gaussian_likelihood import fit_noise_variance, network_outputs, regression_output
from activebayes.posteriors.dropout_tail import _MASKED, DropoutMasks, _mix_seed, flatten_sequential, run_prefix, stochastic_tail
from activebayes.posteriors._network import REGRESSION_LIKELIHOODS, ModelFn, NetworkArgs, NetworkPosterior, check_bool, check_choice, inputs_for
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.training import as_tensor, train

MASK_MODES = ("shared", "independent")
#: The most bytes of [S, n, *F] activations `predict` lets the shared-mask tail hold at once
#: (F: the prefix's output per item); larger batches run n items at a time. Kirsch et al.'s CNN
#: (channel dropout right after the first conv, F = 32·24·24) at S = 100 needs 7.4 MB an item:
#: a 1,024-item batch in one go took 11 GB per process.
TAIL_BYTES = 2 << 30


#: A keep probability whose drop probability is a multiple of 1/256 (p = 0.5, 0.25, 0.125, ...)
#: draws one uniform byte per entry: eight entries per 64-bit word of the generator.
BYTE_GRAIN = 256


def keep_mask_(out: Tensor, keep: float, generator: torch.Generator) -> Tensor:
    """Fills `out` in place with m ~ Bernoulli(keep) as 1.0 / 0.0, in `out`'s memory order, and returns it.

    When p = 1 − keep is a multiple of 1/256 (dropout's usual 0.5, 0.25, 0.125) and `out` is
    contiguous: m = [b ≥ 256 p] from one uniform byte b of the generator's 64-bit words per
    entry, Bernoulli(keep) exactly; on the CPU about 5x faster than a float uniform per entry
    (1.7 against 8.2 ms for 4 M entries, one thread), since the generator makes one word per
    eight entries. Otherwise m = [u < keep] from one u ~ U[0, 1) per entry, the same law to the
    2⁻²⁴ grain of a float32 u. Either is a third or less of torch's `bernoulli_` (its CPU kernel
    is serial and draws more than one number per entry)."""
    dropped = (1.0 - keep) * BYTE_GRAIN
    if 0.0 < keep < 1.0 and dropped == round(dropped) and out.is_contiguous():
        n = out.numel()
        words = torch.empty((n + 7) // 8, dtype=torch.int64, device=out.device).random_(-(2**63), None, generator=generator)
        return out.view(-1).copy_(words.view(torch.uint8)[:n]).ge_(round(dropped)).view(out.shape)
    return out.uniform_(generator=generator).lt_(keep)


def _drop(module: nn.Module, x: Tensor, generator: torch.Generator, out: Tensor | None = None) -> Tensor:
    """(x ⊙ m) / (1 − p) for dropout layer `module`, m drawn by `keep_mask_` per entry (nn.Dropout)
    or per item and channel (Dropout1d/2d/3d, broadcast); written into `out` (x's shape, not
    sharing x's memory) when given: an elementwise mask is then drawn into it directly."""
    keep = 1.0 - float(module.p)
    if keep <= 0.0:
        return torch.zeros_like(x)
    if out is not None and isinstance(module, nn.Dropout):
        return keep_mask_(out, keep, generator).mul_(x).div_(keep)
    shape = tuple(x.shape) if isinstance(module, nn.Dropout) else tuple(x.shape[:2]) + (1,) * (x.dim() - 2)
    m = keep_mask_(torch.empty(shape, device=x.device, dtype=x.dtype), keep, generator)
    return torch.mul(x, m, out=out).div_(keep)


def independent_passes(model: nn.Module, x: Tensor, n_samples: int, generator: torch.Generator) -> Tensor:
    """S forward passes of `model` (eval mode) with a fresh dropout mask per item, per pass and per
    dropout layer, drawn from `generator` by `keep_mask_` (channel-wise for Dropout1d/2d/3d);
    applied as (h ⊙ m) / (1 − p); returns [S, N, *out]."""

    def apply_mask(module: nn.Module, args: tuple, output: Tensor) -> Tensor:
        return _drop(module, args[0], generator)

    handles = [module.register_forward_hook(apply_mask) for module in model.modules() if isinstance(module, _MASKED)]
    try:
        outputs = [model(x) for _ in range(n_samples)]
    finally:
        for handle in handles:
            handle.remove()
    return torch.stack(outputs)


def independent_tail(layers: list[nn.Module], h: Tensor, n_samples: int, generator: torch.Generator) -> Tensor:
    """`independent_passes(nn.Sequential(*layers), h, S, generator)`, the same masks and the same
    numbers bit for bit, for a flat list of layers whose first dropout sees h [N, *F] (the
    prefix's output): [S, N, *out].

    Faster on the S passes: each dropout layer writes m ⊙ x / (1 − p) into one buffer of its own,
    kept across the passes (a pass's output that still shares a buffer's memory is copied), so
    no pass allocates or faults in fresh pages; an elementwise mask is drawn into that buffer
    and multiplied in place; and where a dropout layer's input is h itself, h / (1 − p) is formed
    once ((h / k) · m equals (h · m) / k exactly for m ∈ {0, 1})."""
    buffers: dict[int, Tensor] = {}
    scaled: dict[int, Tensor] = {}
    outputs = []
    for _ in range(n_samples):
        out = h
        for i, layer in enumerate(layers):
            if not isinstance(layer, _MASKED):
                out = layer(out)
                continue
            buffer = buffers.get(i)
            if buffer is None or buffer.shape != out.shape:
                buffer = buffers[i] = torch.empty(out.shape, device=out.device, dtype=out.dtype)
            keep = 1.0 - float(layer.p)
            if out is h and isinstance(layer, nn.Dropout) and keep > 0.0:
                if i not in scaled:
                    scaled[i] = h / keep
                out = keep_mask_(buffer, keep, generator).mul_(scaled[i])
            else:
                out = _drop(layer, out, generator, out=buffer)
        if any(out.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() for b in buffers.values()):
            out = out.clone()
        outputs.append(out)
    return torch.stack(outputs)


def full_passes(model: nn.Module, x: Tensor, masks: DropoutMasks) -> Tensor:
    """The reference path: S complete forward passes, the j-th dropout call of pass s applying
    masks.mask(j, ...)[s]. Works for any model; returns [S, N, *out]."""
    state = {"s": 0, "j": 0}

    def apply_mask(module: nn.Module, args: tuple, output: Tensor) -> Tensor:
        inputs = args[0]
        m = masks.mask(state["j"], module, inputs.shape[1:])[state["s"]]
        state["j"] += 1
        return inputs * m

    handles = [module.register_forward_hook(apply_mask) for module in model.modules() if isinstance(module, _MASKED)]
    try:
        outputs = []
        for s in range(masks.n_samples):
            state.update(s=s, j=0)
            outputs.append(model(x))
    finally:
        for handle in handles:
            handle.remove()
    return torch.stack(outputs)


class MCDropout(NetworkPosterior):
    """MC dropout posterior: one trained network, S dropout mask sets at prediction.

    Args (beyond `NetworkPosterior`'s shared ones):
        model_fn: a factory of a fresh network with `nn.Dropout` (or Dropout1d/2d/3d) layers.
        model: instead, a trained network with dropout layers: `fit` copies it and skips
            training (only a regression fit's noise σ² is fitted, from its residuals).
        n_samples: S, mask sets per prediction.
        masks: "shared" (consistent masks, the default) or "independent" (module docstring).
        weight_decay_scale: c >= 0 sets the weight decay to c / N at `fit` (Gal et al.), in
            place of `train.weight_decay`; None keeps it.
        prefix_cache: False runs S full passes (the reference path) instead of the fast path.

    Fitted attributes: `model_` (eval mode), `seed_`, `device_`, `likelihood_`, `noise_` (σ², a
    float, regression only; None for classification), `split_` (index of the first
    dropout in the flattened Sequential, None when the fast path does not apply). The masks and
    the weights with masks folded in are kept per (S, device) until the next `fit` or `to`.
    """

    options = ("masks", "weight_decay_scale", "prefix_cache")
    likelihoods = ("categorical", *REGRESSION_LIKELIHOODS)

    def __init__(
        self,
        model_fn: ModelFn | None = None,
        *,
        n_samples: int = 20,
        masks: str = "shared",
        weight_decay_scale: float | None = None,
        prefix_cache: bool = True,
        **shared: Unpack[NetworkArgs],
    ) -> None:
        super().__init__(model_fn, n_samples=n_samples, **shared)
        check_choice("masks", masks, MASK_MODES)
        if weight_decay_scale is not None and not (
            isinstance(weight_decay_scale, (int, float)) and not isinstance(weight_decay_scale, bool) and weight_decay_scale >= 0
        ):
            raise ConfigError(f"weight_decay_scale: expected a non-negative number or None, got {weight_decay_scale!r}")
        check_bool("prefix_cache", prefix_cache)
        self.masks, self.weight_decay_scale, self.prefix_cache = masks, weight_decay_scale, prefix_cache
        self.model_: nn.Module | None = None
        self._masks: dict[tuple, DropoutMasks] = {}  # (S, device, dtype) -> masks and folded weights

    def _check_model(self, model: nn.Module) -> None:
        super()._check_model(model)
        _check_dropout(model, "model")

    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """Train the network once on (x, y) with `activebayes.training.train` (or copy the trained
        `model`); for regression, then fit the noise σ² from the training residuals."""
        config = self.train_config
        if self.weight_decay_scale is not None:  # Gal et al. 2017: c / N, N the training items
            config = dataclasses.replace(config, weight_decay=float(self.weight_decay_scale) / max(int(len(x)), 1))
        model = self._network(self.seed_)
        _check_dropout(model, self._network_argument)
        layers = flatten_sequential(model)
        split = None if layers is None else next(i for i, layer in enumerate(layers) if isinstance(layer, _MASKED))
        if split is None and self.prefix_cache:
            warnings.warn(
                f"MCDropout: {type(model).__name__} is not an nn.Sequential, so the deterministic prefix cannot be "
                "cached; predicting with S full forward passes",
                stacklevel=3,
            )
        x = inputs_for(model, x)
        if self.model is None:
            self.model_ = train(model, x, y, config, seed=self.seed_, device=self.device_, loss_fn=self._train_loss)
        else:
            self.model_ = model.to(self.device_).eval()
        if self.likelihood_ == "gaussian":
            outputs = network_outputs(self.model_, x)
            self.noise_ = fit_noise_variance(outputs - y.to(outputs.device), y)
        self.split_ = split
        self._masks = {}

    def _move(self, device: torch.device) -> None:
        if device != self.device_:
            self.model_.to(device)
            self._masks = {}

    def predict_logits(self, x: Tensor, n_samples: int | None = None) -> Tensor:
        """Logits [S, N, C] of the network under S mask sets (regression: the outputs [S, N])."""
        self._check_fitted()
        S = self._sample_count(n_samples)
        dtype = next(self.model_.parameters()).dtype
        x = as_tensor("x", x, dtype).to(self.device_)
        key = (S, self.device_, dtype)
        masks = self._masks.get(key)
        if masks is None:  # masks (and folded weights) depend on (seed, S) only: keep them
            masks = self._masks[key] = DropoutMasks(self.seed_, S, device=self.device_, dtype=dtype)
        with torch.no_grad():
            if self.masks == "independent":
                generator = torch.Generator(device=self.device_).manual_seed(_mix_seed(self.seed_, S, -2) & 0x7FFFFFFFFFFFFFFF)
                if self.split_ is None or not self.prefix_cache:
                    logits = independent_passes(self.model_, x, S, generator)
                else:
                    layers = flatten_sequential(self.model_)
                    # in the standard layout once (the fast prefix may leave it channels-last), not
                    # once a pass where the tail flattens it
                    h = run_prefix(layers[: self.split_], x).contiguous()
                    logits = independent_tail(layers[self.split_ :], h, S, generator)
            elif self.split_ is None or not self.prefix_cache:
                logits = full_passes(self.model_, x, masks)
            else:
                layers = flatten_sequential(self.model_)
                h = run_prefix(layers[: self.split_], x)
                # the tail may hold [S, n, *F] activations: n items at a time keep them under the budget
                n = max(1, TAIL_BYTES // (S * max(h[0].numel(), 1) * h.element_size())) if h.shape[0] else 1
                parts = [stochastic_tail(layers[self.split_ :], part, masks) for part in h.split(n)] if h.shape[0] > n else None
                logits = torch.cat(parts, dim=1) if parts else stochastic_tail(layers[self.split_ :], h, masks)
        if self.likelihood_ == "gaussian":
            return regression_output(logits, 1)
        if logits.dim() != 3:
            raise ShapeError(
                f"{self._network_argument}: expected the network to output logits [N, C], got [N, ...] = {tuple(logits.shape[1:])}"
            )
        return logits

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """p(y | x_n, θ_s) for S mask sets: Predictive with probs [S, N, C]; for regression a
        GaussianPredictive with mean [S, N] (each mask set's output) and var [S, N] = σ²."""
        return self._predictive(self.predict_logits(x, n_samples))

    def predict_proba_deterministic(self, x: Tensor) -> Tensor:
        """Standard dropout's test-time prediction, softmax(f(x; θ)) with every dropout layer off,
        [N, C] (classification only). Inverted dropout scales the kept units by 1/(1−p) while
        training, so the network without masks is the weight-scaling rule (Srivastava et al.
        2014): what Keras' `model.evaluate` reports, and what Gal et al. (2017) score test
        accuracy with. The MC average `predict_proba` is the Bayesian predictive instead. An
        `nn.Sequential` runs its dropout-free layers through `run_prefix` (the CPU fast path:
        the same function, up to float rounding)."""
        self._check_fitted()
        if self.likelihood_ in REGRESSION_LIKELIHOODS:
            raise regression_only("predict_proba_deterministic")
        dtype = next(self.model_.parameters()).dtype
        x = as_tensor("x", x, dtype).to(self.device_)
        self.model_.eval()
        layers = flatten_sequential(self.model_)
        with torch.no_grad():
            if layers is None:
                return torch.softmax(self.model_(x), dim=-1)
            return torch.softmax(run_prefix([layer for layer in layers if not isinstance(layer, _MASKED)], x), dim=-1)


def _check_dropout(model: nn.Module, argument: str) -> None:
    if not any(isinstance(module, _MASKED) for module in model.modules()):
        raise ConfigError(
            f"{argument}: MC dropout expects a network with nn.Dropout/Dropout1d/2d/3d layers, got one without any"
        )


__all__ = ["DropoutMasks", "MCDropout", "flatten_sequential", "full_passes", "independent_passes", "independent_tail", "keep_mask_", "stochastic_tail"]
