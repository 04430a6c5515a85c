"""`PreparedMCDropout`: the `MCDropout` a batched run's loop fits and scores with, whose work was
done beforehand for all runs at once.

    posterior = PreparedMCDropout(model_fn, n_samples=S, seed=round_seed, ...)
    job = posterior.defer_fit(x, y)          # the network built from the seed, not trained
    train_stacked([job.model, ...], ...)     # with the other runs' jobs
    posterior.install(job.model)             # fitted; a later fit(x, y) on the same data keeps it
    posterior.remember("deterministic", x_test, probs)
    loop.step()                              # fit, evaluate, score: the loop's own code, unchanged

`fit(x, y)` on the data of the installed fit leaves the installed network in place; on other data
it fits as `MCDropout` does. `predict_logits(x, S)` and `predict_proba_deterministic(x)` return
the output remembered for the same inputs (found by the SHA-256 of their bytes, shape and dtype),
else compute it as `MCDropout` does. So a lookup that misses costs time, never correctness.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from activebayes.batched_runs.stacked_network import MASKED
from activebayes.posteriors._network import inputs_for
from activebayes.posteriors.mc_dropout import MCDropout, _check_dropout, flatten_sequential
from activebayes.training import TrainConfig


@dataclass
class FitJob:
    """One run's deferred fit: the network built from its seed, its training data (x cast to the
    network's dtype, y [N]), the TrainConfig and seed its `train` call would get, and its device."""

    model: nn.Module
    x: Tensor
    y: Tensor
    config: TrainConfig
    seed: int
    device: torch.device


def digest(x: Tensor) -> tuple[tuple[int, ...], str, str]:
    """(shape, dtype, SHA-256 of the bytes) of a tensor: the key of a remembered output."""
    data = x.detach().to("cpu").contiguous()
    return tuple(data.shape), str(data.dtype), hashlib.sha256(data.numpy().reshape(-1).view(np.uint8)).hexdigest()


class PreparedMCDropout(MCDropout):
    """`MCDropout` whose fit can be deferred and installed, and whose outputs can be remembered
    (module docstring). Same constructor, options and fitted attributes as `MCDropout`."""

    _defer = False
    _job: FitJob | None = None
    _installed: FitJob | None = None

    def defer_fit(self, x: Tensor, y: Tensor) -> FitJob:
        """Do what `fit(x, y)` does up to training, which is left to the caller: the `FitJob`."""
        self._defer, self._job = True, None
        try:
            self.fit(x, y)
        finally:
            self._defer = False
        assert self._job is not None
        return self._job

    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        if self._defer:
            config = self.train_config
            if self.weight_decay_scale is not None:  # as MCDropout: c / N, N the training items
                config = dataclasses.replace(config, weight_decay=float(self.weight_decay_scale) / max(int(len(x)), 1))
            model = self._network(self.seed_)
            _check_dropout(model, self._network_argument)
            self._job = FitJob(model, inputs_for(model, x), y, config, self.seed_, self.device_)
            return
        job = self._installed
        if job is not None and self.model_ is not None and _same(job.x, inputs_for(self.model_, x)) and _same(job.y, y):
            return  # the installed network was trained on these data with this seed
        self._installed, self._outputs = None, {}
        super()._fit_network(x, y)

    def install(self, model: nn.Module) -> None:
        """Take `model`, the deferred job's network trained as `train` would, as the fit."""
        if self._job is None:
            raise RuntimeError("install: no deferred fit; call defer_fit(x, y) first")
        layers = flatten_sequential(model)
        self.model_ = model.to(self.device_).eval()
        self.split_ = None if layers is None else next(i for i, layer in enumerate(layers) if isinstance(layer, MASKED))
        self._masks, self._outputs = {}, {}
        self._installed, self._job = self._job, None

    def remember(self, kind: str, x: Tensor, output: Tensor, n_samples: int | None = None) -> None:
        """Keep `output` as this posterior's answer for inputs x: kind "deterministic"
        (probabilities [n, C]) or "logits" (with S = n_samples: [S, n, C])."""
        self._outputs[(kind, n_samples, digest(x))] = output

    def _recalled(self, kind: str, x: Tensor, n_samples: int | None) -> Tensor | None:
        outputs = getattr(self, "_outputs", None)
        return outputs.get((kind, n_samples, digest(x))) if outputs else None

    def predict_logits(self, x: Tensor, n_samples: int | None = None) -> Tensor:
        found = self._recalled("logits", torch.as_tensor(x), self._sample_count(n_samples))
        return found if found is not None else super().predict_logits(x, n_samples)

    def predict_proba_deterministic(self, x: Tensor) -> Tensor:
        found = self._recalled("deterministic", torch.as_tensor(x), None)
        return found if found is not None else super().predict_proba_deterministic(x)


def _same(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.to(b.device), b))


__all__ = ["FitJob", "PreparedMCDropout", "digest"]
