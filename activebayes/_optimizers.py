"""Adam and SGD with momentum, the updates of `torch.optim.Adam` and `torch.optim.SGD` without
their `Optimizer` base class.

Every `torch.optim.Optimizer` call (the constructor's `add_param_group`, `zero_grad`, `step`) is
wrapped in `torch._disable_dynamo`, which imports `torch._dynamo` on first use: about 1.6-2.4 s
of CPU in every process that trains a network, for a compiler the training never uses. These two
classes run the same arithmetic, op for op (`torch._foreach_*` over the parameters that have a
gradient, as torch's multi-tensor path; on the CPU the same kernels as its single-tensor path),
so the parameters after N steps are those torch's optimisers give (tests/test_optimizers.py).

For parameter θ with gradient g, L2 penalty λ (weight_decay, added to the gradient), the step t
of that parameter (counted per parameter: a step where it has no gradient leaves it alone):

    Adam:  g' = g + λθ,  m ← β₁ m + (1 − β₁) g',  v ← β₂ v + (1 − β₂) g'²,
           θ ← θ − lr/(1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε)                 (β = (0.9, 0.999), ε = 1e-8)
    SGD:   g' = g + λθ,  b ← g' at its first step, else μ b + g',  θ ← θ − lr · b    (μ = momentum;
           μ = 0: θ ← θ − lr · g')

`param_groups` is torch's list of dicts ("params", "lr", "weight_decay", ...), options a group
leaves out taking the constructor's, so that a schedule can set group["lr"] before a step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor


def param_groups(params: Iterable[Tensor] | Iterable[dict[str, Any]], defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """torch's parameter groups: one group of `params` (tensors), or each given dict with its
    "params" as a list and `defaults` under the options it leaves out."""
    given = list(params)
    groups = given if given and isinstance(given[0], dict) else [{"params": given}]
    out = []
    for group in groups:
        tensors = group["params"]
        tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
        out.append({**defaults, **group, "params": tensors})
    return out


class _Optimizer(ABC):
    """The shared part: parameter groups, per-parameter state, zero_grad, and the step up to the
    weight decay; a subclass implements `_update`."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], defaults: dict[str, Any]) -> None:
        self.param_groups = param_groups(params, defaults)
        self.state: dict[Tensor, dict[str, Any]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (set_to_none), or zero it in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().requires_grad_(False)
                    p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient, group by group: g' = g + λθ, then
        the subclass's `_update`."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            if group["weight_decay"] != 0:
                grads = torch._foreach_add(grads, params, alpha=group["weight_decay"])
            self._update(group, params, grads)  # type: ignore[arg-type]

    @abstractmethod
    def _update(self, group: dict[str, Any], params: list[Tensor], grads: list[Tensor]) -> None:
        """Update `params` (those of `group` with a gradient) in place from `grads` (weight decay added)."""


class Adam(_Optimizer):
    """`torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, betas=betas, eps=eps)`'s update
    (module docstring), without amsgrad, maximize or decoupled weight decay."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], *, lr: float, weight_decay: float = 0.0,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:  # fmt: skip
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps})

    def _update(self, group: dict[str, Any], params: list[Tensor], grads: list[Tensor]) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        states = []
        for p in params:
            if p not in self.state:
                self.state[p] = {"step": 0, "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                                 "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}  # fmt: skip
            state = self.state[p]
            state["step"] += 1
            states.append(state)
        exp_avgs, exp_avg_sqs = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        step_size = [(lr / (1 - beta1 ** s["step"])) * -1 for s in states]
        correction2_sqrt = [(1 - beta2 ** s["step"]) ** 0.5 for s in states]
        denom = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(denom, correction2_sqrt)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, exp_avgs, denom, step_size)


class SGD(_Optimizer):
    """`torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)`'s update
    (module docstring), without dampening, Nesterov momentum or maximize."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], *, lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0) -> None:  # fmt: skip
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    def _update(self, group: dict[str, Any], params: list[Tensor], grads: list[Tensor]) -> None:
        momentum = group["momentum"]
        if momentum != 0:
            buffers = []
            for p, g in zip(params, grads):
                buffer = self.state.setdefault(p, {}).get("momentum_buffer")
                if buffer is None:
                    buffer = self.state[p]["momentum_buffer"] = g.detach().clone()
                else:
                    buffer.mul_(momentum).add_(g)
                buffers.append(buffer)
            grads = buffers
        torch._foreach_add_(params, grads, alpha=-group["lr"])
