"""Posterior approximations, one module each, all following `base.Posterior`; the network
posteriors share the base `_network.NetworkPosterior`.

`POSTERIORS` maps the CLI name of each to "module:Class"; `resolve_posterior` imports it.
"""

from __future__ import annotations

import importlib

from activebayes.errors import unknown_name
from activebayes.posteriors._network import NetworkPosterior
from activebayes.posteriors.base import Posterior, check_fitted, clone
from activebayes.posteriors.standardised import StandardisedTargets

POSTERIORS: dict[str, str] = {
    "mc-dropout": "activebayes.posteriors.mc_dropout:MCDropout",
    "deep-ensemble": "activebayes.posteriors.ensembles:DeepEnsemble",
    "snapshot-ensemble": "activebayes.posteriors.ensembles:SnapshotEnsemble",
    "laplace": "activebayes.posteriors.laplace:Laplace",
    "swag": "activebayes.posteriors.swag:SWAG",
    "mfvi": "activebayes.posteriors.mfvi:MFVI",
    "batch-ensemble": "activebayes.posteriors.batch_ensemble:BatchEnsemble",
    "gp": "activebayes.posteriors.gp:GaussianProcess",
}


def resolve_posterior(name: str) -> type:
    """The posterior class registered under a CLI name such as "mc-dropout"."""
    try:
        target = POSTERIORS[name]
    except KeyError:
        raise unknown_name("posterior", name, POSTERIORS) from None
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def __getattr__(name: str):  # lazy access: activebayes.posteriors.MCDropout
    for target in POSTERIORS.values():
        module, attr = target.split(":")
        if attr == name:
            return getattr(importlib.import_module(module), attr)
    raise AttributeError(name)


__all__ = ["POSTERIORS", "NetworkPosterior", "Posterior", "StandardisedTargets", "check_fitted", "clone", "resolve_posterior"]
