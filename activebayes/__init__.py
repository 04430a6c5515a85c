"""activebayes: choose what to label or measure next.

Posterior approximations give a `Predictive` [S, N, C]; acquisition functions score it; the loop
asks an oracle about the best candidates and records every answer in a database.

    from activebayes import ActiveLearningLoop, MCDropout, PoolStore, SimulatedOracle
    from activebayes.acquisition import bald, batch_bald, top_k

The names below are what a user needs; everything else stays importable from its module.
Heavier modules (posteriors, store, loop, design) load on first use.
"""

from __future__ import annotations

import importlib

from activebayes.errors import (
    ActiveBayesError,
    ConfigError,
    DataError,
    NotFittedError,
    ShapeError,
    StoreError,
    WorkerError,
)

__version__ = "0.1.0"

_LAZY = {
    "Predictive": "activebayes.predictive",
    "GaussianPredictive": "activebayes.predictive",
    "MCDropout": "activebayes.posteriors.mc_dropout",
    "DeepEnsemble": "activebayes.posteriors.ensembles",
    "SnapshotEnsemble": "activebayes.posteriors.ensembles",
    "Laplace": "activebayes.posteriors.laplace",
    "SWAG": "activebayes.posteriors.swag",
    "MFVI": "activebayes.posteriors.mfvi",
    "BatchEnsemble": "activebayes.posteriors.batch_ensemble",
    "GaussianProcess": "activebayes.posteriors.gp",
    "TrainConfig": "activebayes.training",
    "score_pool": "activebayes.scoring",
    "PoolScores": "activebayes.scoring",
    "check_engine_store": "activebayes.distributed",
    "PoolStore": "activebayes.store",
    "ActiveLearningLoop": "activebayes.loop",
    "RoundResult": "activebayes.loop",
    "Answer": "activebayes.oracles",
    "SimulatedOracle": "activebayes.oracles",
    "FileOracle": "activebayes.oracles",
    "PromptOracle": "activebayes.oracles",
    "SimulatedParticipant": "activebayes.design",
    "load_dataset": "activebayes.data",
    "MemorySpanModel": "activebayes.design",
    "GridPosterior": "activebayes.design",
    "EIGTable": "activebayes.design",
    "nmc_eig": "activebayes.design",
    "run_design_session": "activebayes.design",
    "StudyConfig": "activebayes.study",
    "run_study": "activebayes.study",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'activebayes' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ActiveBayesError",
    "ConfigError",
    "DataError",
    "GaussianPredictive",
    "NotFittedError",
    "Predictive",
    "ShapeError",
    "StoreError",
    "WorkerError",
    "__version__",
    *_LAZY,
]
