"""activebayes: choose what to measure next.

Posterior approximations give a `Predictive` [S, N, C]; acquisition functions score it; the loop
asks an oracle about the best candidates and records every answer in a database.
"""

from activebayes.errors import (
    ActiveBayesError,
    ConfigError,
    DataError,
    NotFittedError,
    ShapeError,
    StoreError,
)
from activebayes.predictive import GaussianPredictive, Predictive

__version__ = "0.1.0"

__all__ = [
    "ActiveBayesError",
    "ConfigError",
    "DataError",
    "GaussianPredictive",
    "NotFittedError",
    "Predictive",
    "ShapeError",
    "StoreError",
    "__version__",
]
