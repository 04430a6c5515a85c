"""Acquisition: pure functions of a Predictive that say which candidates to ask about next.

Scores f(pred) -> Tensor[N] (larger = ask first; nats where an information) live in `scores`;
batch selectors returning a `BatchSelection` in `batch` and `batch_bald`; EPIG (scores against
target inputs, f(pred, target_pred) -> Tensor[N]) in `epig`; CLI names in `registry`.
Imports nothing of activebayes but `predictive` and `errors`.

>>> import torch
>>> from activebayes.acquisition import bald, top_k
>>> probs = torch.tensor([[[0.9, 0.1], [1.0, 0.0]], [[0.1, 0.9], [1.0, 0.0]]])  # [S=2, N=2, C=2]
>>> top_k(bald(probs), 1).indices
tensor([0])
"""

from activebayes.acquisition._entropy import MixtureEntropy
from activebayes.acquisition.batch import BatchSelection, StochasticMode, bald_prefilter, stochastic_batch, top_k
from activebayes.acquisition.batch_bald import batch_bald, joint_mutual_information
from activebayes.acquisition.epig import epig
from activebayes.acquisition.nipv import nipv, nipv_select
from activebayes.acquisition.registry import ACQUISITIONS, Acquisition, resolve_acquisition
from activebayes.acquisition.scores import (
    VariancePart,
    bald,
    eig,
    entropy,
    least_confidence,
    margin,
    mean_std,
    random_scores,
    variance,
    variation_ratio,
)

# DESIGN's name for it (the CLI's `random`); left out of __all__ so that a star import does not
# hide the standard library's `random`
random = random_scores

__all__ = [
    "ACQUISITIONS",
    "Acquisition",
    "BatchSelection",
    "MixtureEntropy",
    "StochasticMode",
    "VariancePart",
    "bald",
    "bald_prefilter",
    "batch_bald",
    "eig",
    "entropy",
    "epig",
    "joint_mutual_information",
    "least_confidence",
    "margin",
    "mean_std",
    "nipv",
    "nipv_select",
    "random_scores",
    "resolve_acquisition",
    "stochastic_batch",
    "top_k",
    "variance",
    "variation_ratio",
]
