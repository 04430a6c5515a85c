"""Typed errors. Library code raises these; only the CLI prints them and exits.

Every message names the argument, what was expected and what came.
"""

from __future__ import annotations


class ActiveBayesError(Exception):
    """Root of every error activebayes raises on purpose."""


class ShapeError(ActiveBayesError, ValueError):
    """A tensor or array has the wrong rank, size or dtype."""


class NotFittedError(ActiveBayesError, RuntimeError):
    """A posterior was asked to predict before `fit`."""


class StoreError(ActiveBayesError):
    """The database refused an operation, or holds something unexpected."""


class DataError(ActiveBayesError, ValueError):
    """A data file or label is malformed, changed, or out of range."""


class ConfigError(ActiveBayesError, ValueError):
    """An option, name or `module:factory` path does not resolve."""
