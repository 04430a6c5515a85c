"""Checks of the network a `--model module:factory` builds, made once when the factory is
resolved, before anything is recorded: what would otherwise fail later with a message about
something else (a dtype named as a shape mismatch), or not fail at all (one network shared by
every member of an ensemble).

  * weights in float32: activebayes feeds float32 items (an image folder's pixels in [0, 1]), so a
    `.double()` or `.half()` network fails its first forward pass with "mat1 and mat2 must have the
    same dtype";
  * weights with values: a network built on the meta device has shapes only;
  * a new network at each call: an ensemble trains several members and each round fits afresh,
    so a factory returning one module kept in a global would train one network for all.

A network on the GPU is fine: training and prediction move it to the round's `--device`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activebayes_cli._app import CliError


def check_user_network(spec: str, model: Any, factory: Callable[[], Any]) -> None:
    """A one-line CliError when the nn.Module `model` that `factory` (named `spec`) built has
    weights other than float32, weights on the meta device, or is what a second call returns."""
    import torch

    params = list(model.parameters())
    other = sorted({str(p.dtype).removeprefix("torch.") for p in params if p.is_floating_point() and p.dtype != torch.float32})
    if other:
        raise CliError(
            f"--model {spec}: the network's weights are {', '.join(other)}, and activebayes trains and predicts on float32 items",
            "build it in float32 (leave out .double(), .half() or .to(dtype) in the factory)",
        )
    if any(p.is_meta for p in [*params, *model.buffers()]):
        raise CliError(
            f"--model {spec}: the network's weights are on the meta device (shapes without values)",
            "build it on the CPU (a round moves it to --device)",
        )
    try:
        again = factory()
    except (Exception, SystemExit) as exc:  # the user's code, failing on a second call only
        raise CliError(f"--model: calling {spec}() a second time failed: {type(exc).__name__}: {exc}", "fix the factory") from exc
    if again is model:
        raise CliError(
            f"--model {spec}: each call returns the same network object",
            "build a new network inside the factory (an ensemble trains several, and each round fits one afresh)",
        )


__all__ = ["check_user_network"]
