"""Turning `--model` and `--posterior` into the posterior factory the loop takes.

`--model` is `mlp`, `cnn` (activebayes.nets.default_model) or `pkg.mod:factory`, a user's
zero-argument callable returning a fresh `torch.nn.Module` that outputs logits [N, C] (it is
called once per network built). Everything is resolved and checked before a round starts.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from activebayes.errors import ConfigError
from activebayes_cli._app import CliError


def import_factory(spec: str) -> Callable[[], Any]:
    """The callable named by 'pkg.mod:factory' (dots after the colon walk attributes)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"--model: expected mlp, cnn or pkg.mod:factory, got {spec!r}", "pass e.g. --model mypkg.nets:make_net")
    if os.getcwd() not in sys.path:  # like `python -m`: modules in the working directory import
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(
            f"--model: cannot import module {module_name!r} ({exc})",
            "check the spelling and that the module is on PYTHONPATH (run from its folder)",
        ) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise CliError(f"--model: module {module_name!r} has no attribute {attr!r}", "check the name after the colon")
        target = getattr(target, part)
    if not callable(target):
        raise CliError(f"--model: {spec!r} is not callable", "point at a function returning a torch.nn.Module")
    return target


def model_factory(spec: str, input_shape: Sequence[int], n_classes: int) -> Callable[[], Any]:
    """The model factory for `--model` (checked: a user factory must build an nn.Module)."""
    from torch import nn

    from activebayes.nets import ModelKind, default_model

    if spec in {kind.value for kind in ModelKind}:
        try:
            return default_model(spec, input_shape, n_classes)
        except ConfigError as exc:
            raise CliError(
                f"--model {spec}: does not fit items of shape {tuple(input_shape)} ({exc})",
                "use --model mlp, or images [1, H, W] for cnn (pool add --image-layout chw)",
            ) from exc
    factory = import_factory(spec)
    try:
        model = factory()
    except Exception as exc:  # the user's code: report it in one line
        raise CliError(f"--model: calling {spec}() failed: {type(exc).__name__}: {exc}", "fix the factory") from exc
    if not isinstance(model, nn.Module):
        raise CliError(
            f"--model: {spec}() returned {type(model).__name__}, not a torch.nn.Module",
            "return a fresh network from the factory",
        )
    return factory


def posterior_factory(
    name: str, model_fn: Callable[[], Any], *, samples: int | None, epochs: int | None, device: str
) -> tuple[Callable[..., Any], dict[str, Any]]:
    """(factory(seed=...) -> unfitted posterior, the settings recorded with the round).

    `samples` sets the posterior's S: `n_samples` where the constructor takes it, else
    `n_members` (deep ensemble) or `n_snapshots` (snapshot ensemble). `epochs` sets `epochs` (or
    `epochs_per_cycle`).
    """
    from activebayes.posteriors import resolve_posterior

    cls = resolve_posterior(name)
    accepted = set(inspect.signature(cls).parameters)
    if "model_fn" not in accepted:
        raise CliError(
            f"--posterior: {name!r} is a regression posterior without a network",
            "choose one of mc-dropout, deep-ensemble, snapshot-ensemble, laplace, swag",
        )
    kwargs: dict[str, Any] = {"device": device} if "device" in accepted else {}
    if samples is not None:
        target = next((p for p in ("n_samples", "n_members", "n_snapshots") if p in accepted), None)
        if target is None:
            raise CliError(f"--samples: posterior {name!r} has no number of samples", "leave --samples out")
        kwargs[target] = samples
    if epochs is not None:
        target = next((p for p in ("epochs", "epochs_per_cycle") if p in accepted), None)
        if target is None:
            raise CliError(f"--epochs: posterior {name!r} takes no epochs", "leave --epochs out")
        kwargs[target] = epochs
    settings = {k: v for k, v in kwargs.items() if k != "device"}
    return functools.partial(cls, model_fn, **kwargs), settings
