"""Model variants the benchmark can run in place of the CLI's default network posterior
(`run.py --model-variant NAME`; the default variant is exactly what `activebayes round` builds).

    default   `activebayes_cli._model.posterior_factory` as it is: the network trained with
              `sized_training`'s weight decay λ/N, λ = 1 (the 1/N heuristic).
    marglik   the same network, posterior, epochs and mini-batches, but no weight decay: online
              marginal-likelihood training (`activebayes.marglik`, Immer et al. 2021) learns one
              prior precision δ_l per parameter tensor (init 1, i.e. the heuristic's λ) from the
              Laplace evidence of the whole network (KFAC), a Laplace fit and K = 10 Adam steps
              on log δ every F = ⌈epochs / 10⌉ epochs (at most 10 fits per training, as
              `Laplace(prior_precision="online")` does), keeping the network of the best evidence.

A variant changes the training only; the posterior (mc-dropout for classification) predicts as
before. Its name is part of a run's settings (`run.fingerprint`), so runs of different variants
never stand in for each other.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

VARIANTS = ("default", "marglik")
#: At most this many Laplace fits per training run (`activebayes.posteriors.laplace.MAX_MARGLIK_FITS`).
MAX_FITS = 10


class MarglikSizedFit:
    """`activebayes_cli._model.SizedFit` with online marglik training in place of weight decay:
    the same epochs (`training_record`), `TrainConfig(marglik=MarglikConfig(frequency=F))`."""

    def __init__(self, cls: Any, model_fn: Callable[[], Any], kwargs: dict[str, Any], seed: int | None = None, *,
                 epochs: int | None = None) -> None:  # fmt: skip
        self.cls, self.model_fn, self.kwargs, self.seed, self.epochs = cls, model_fn, dict(kwargs), seed, epochs
        self.training: dict[str, Any] | None = None

    def fit(self, x: Any, y: Any) -> Any:
        from activebayes.marglik import MarglikConfig
        from activebayes.training import TrainConfig
        from activebayes_cli._model import training_record

        record = training_record(self.cls, len(x), self.epochs)
        epochs = int(record["epochs"]) if self.epochs is None else int(self.epochs)
        every = max(1, math.ceil(epochs / MAX_FITS))
        self.training = {**record, "rule": f"marglik ({record['rule']} epochs)", "weight_decay": 0.0, "marglik_frequency": every}
        train = TrainConfig(epochs=epochs, marglik=MarglikConfig(hessian="kron", frequency=every))
        return self.cls(self.model_fn, seed=self.seed, train=train, **self.kwargs).fit(x, y)


def apply_variant(variant: str, factory: Callable[..., Any], settings: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any]]:
    """(factory, settings) of `variant` from those `posterior_factory` returned (a SizedFit
    partial for a network posterior; a GP's factory is left as it is)."""
    if variant not in VARIANTS:
        raise ValueError(f"model variant: expected one of {', '.join(VARIANTS)}, got {variant!r}")
    if variant == "default" or not isinstance(factory, functools.partial) or factory.func.__name__ != "SizedFit":
        return factory, settings
    cls, model_fn, kwargs = factory.args
    return functools.partial(MarglikSizedFit, cls, model_fn, kwargs, **factory.keywords), {**settings, "variant": variant}


__all__ = ["MAX_FITS", "VARIANTS", "MarglikSizedFit", "apply_variant"]
