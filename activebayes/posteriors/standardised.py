"""`StandardisedTargets`: a network posterior fitted to regression targets in units of their own
spread, its predictions given back in the targets' units.

The network posteriors' defaults (initialisation, weight decay 1/N, the training length, the
prior precisions of Laplace, MFVI's prior and noise, SWAG's learning rates) assume targets of
order one: on scikit-learn's diabetes as prices (y × 1000 + 3e5), four rounds of `round --posterior
mc-dropout` left a test RMSE of 434,928, where the same rounds on diabetes itself gave 64.59
(64,586 on the prices, fitted as below). So, with
m and s the training targets' mean and standard deviation (s = 1 when they are constant),

    fit(x, y)         fits the posterior to ỹ = (y − m) / s,
    predict(x)        GaussianPredictive(m + s μ, s² σ²)   (latent_mean, latent_var alike),
    predict_mean_var  (m + s μ, s² σ²),       noise_ = s² σ̃²   (target units),

an affine map, under which variance and entropy scores scale uniformly and mutual informations
(BALD, EPIG) do not change. The wrapper applies to a `NetworkPosterior` with a Gaussian
likelihood only: classification targets, the GP (which standardises its own targets) and the
heteroscedastic likelihood (which does too) pass through unchanged (m = 0, s = 1).
`ActiveLearningLoop` wraps every round's network posterior in it, so a project's targets may come
in any units; everything else (attributes, `predict_proba`) is the wrapped posterior's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import Tensor

from activebayes.likelihoods import HETEROSCEDASTIC
from activebayes.posteriors._network import NetworkPosterior
from activebayes.posteriors.base import clone
from activebayes.predictive import GaussianPredictive
from activebayes.target_units import in_target_units, standardise_targets
from activebayes.training import as_tensor


def _applies(posterior: Any, y: Tensor) -> bool:
    return isinstance(posterior, NetworkPosterior) and y.is_floating_point() and getattr(posterior, "likelihood", None) != HETEROSCEDASTIC


class StandardisedTargets:
    """`posterior` fitted on standardised regression targets (module docstring).

    Fitted attributes: `location_` (m) and `scale_` (s), 0 and 1 where it passes through.
    """

    def __init__(self, posterior: Any) -> None:
        self.posterior = posterior
        self.location_, self.scale_ = 0.0, 1.0

    def __getattr__(self, name: str) -> Any:  # the wrapped posterior's attributes (seed_, model_, ...)
        if name == "posterior" or name.startswith("__"):  # unpickling looks these up before __dict__ is set
            raise AttributeError(name)
        return getattr(self.posterior, name)

    def fit(self, x: Tensor, y: Tensor) -> StandardisedTargets:
        """Fit the posterior to (y − m) / s, or to y as it is where the wrapper does not apply."""
        y = as_tensor("y", y)
        self.location_, self.scale_ = 0.0, 1.0
        if _applies(self.posterior, y):
            y, self.location_, self.scale_ = standardise_targets(y)
        self.posterior.fit(x, y)
        return self

    def _in_units(self, mean: Tensor, var: Tensor) -> tuple[Tensor, Tensor]:
        return in_target_units(mean, var, self.location_, self.scale_)

    def predict(self, x: Tensor, n_samples: int | None = None) -> Any:
        """The wrapped posterior's predictive, a GaussianPredictive in target units."""
        pred = self.posterior.predict(x, n_samples)
        if not isinstance(pred, GaussianPredictive) or (self.location_, self.scale_) == (0.0, 1.0):
            return pred
        mean, var = self._in_units(pred.mean, pred.var)
        latent = {}
        if pred.latent_mean is not None:
            latent["latent_mean"], latent["latent_var"] = self._in_units(pred.latent_mean, pred.latent_var)
        return replace(pred, mean=mean, var=var, **latent)

    def predict_mean_var(self, x: Tensor, n_samples: int | None = None, **options: Any) -> tuple[Tensor, Tensor]:
        """The wrapped posterior's (mean, variance) [N] in target units."""
        return self._in_units(*self.posterior.predict_mean_var(x, n_samples, **options))

    def predict_proba(self, x: Tensor) -> Tensor:
        return self.posterior.predict_proba(x)

    @property
    def noise_(self) -> Any:
        """The observation noise σ² in target units (per member for an ensemble), None without one."""
        noise = self.posterior.noise_
        return None if noise is None else noise * self.scale_**2

    def to(self, device: str | torch.device) -> StandardisedTargets:
        self.posterior.to(device)
        return self

    def get_params(self) -> dict[str, Any]:
        """{"posterior": an unfitted copy of the wrapped posterior}."""
        return {"posterior": clone(self.posterior)}


def standardised(posterior: Any) -> Any:
    """A `NetworkPosterior` wrapped in `StandardisedTargets`; any other posterior as it is (a GP
    standardises its own targets, and a posterior of the user's keeps the protocol it has)."""
    return StandardisedTargets(posterior) if isinstance(posterior, NetworkPosterior) else posterior


def unwrapped(posterior: Any) -> Any:
    """The posterior inside a `StandardisedTargets`, or `posterior` itself."""
    return posterior.posterior if isinstance(posterior, StandardisedTargets) else posterior


__all__ = ["StandardisedTargets", "standardised", "unwrapped"]
