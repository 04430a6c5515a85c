"""Typed errors. Library code raises these; only the CLI prints them and exits.

Every message names the argument, what was expected and what came.
"""

from __future__ import annotations

from collections.abc import Iterable


class ActiveBayesError(Exception):
    """Root of every error activebayes raises on purpose."""


class ShapeError(ActiveBayesError, ValueError):
    """A tensor or array has the wrong rank, size or dtype."""


class NotFittedError(ActiveBayesError, RuntimeError):
    """A posterior was asked to predict before `fit`."""


class StoreError(ActiveBayesError):
    """The database refused an operation, or holds something unexpected."""


class DatabaseAwayError(StoreError):
    """The database could not be used for a moment: its server away, the connection dropped, a
    SQLite file locked past the busy timeout. The transaction did not commit, or, when the
    connection dropped during the commit itself, may have: doing the same again is safe for the
    checked appends (`PoolStore.record_labels` finds a repeat)."""


class RoundNotWaitingError(StoreError):
    """A round named as waiting for answers no longer does (closed, or discarded, meanwhile)."""


class DataError(ActiveBayesError, ValueError):
    """A data file or label is malformed, changed, or out of range."""


class ConfigError(ActiveBayesError, ValueError):
    """An option, name or `module:factory` path does not resolve."""


class WorkerError(ActiveBayesError, RuntimeError):
    """A remote worker (a Ray actor or task) died more often than its restarts and retries allow."""


class RoundBusyError(StoreError):
    """Another process runs a round of the project now (`PoolStore.round_lock`): `number` is
    that round, `pid`/`host`/`started_at` its holder (None where the database does not say)."""

    def __init__(self, message: str, *, project: str, number: int, pid: int | None = None,
                 host: str | None = None, started_at: object = None) -> None:  # fmt: skip
        super().__init__(message)
        self.project, self.number, self.pid, self.host, self.started_at = project, number, pid, host, started_at


class RecordedCountError(StoreError):
    """A write meant to follow `expected` observations of one person found `found` (another
    writer recorded some meanwhile); nothing was written."""

    def __init__(self, message: str, *, who: str, expected: int, found: int) -> None:
        super().__init__(message)
        self.who, self.expected, self.found = who, expected, found


def closest_name(name: object, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The one of `choices` that `name` is likely a misspelling of ('bladd' -> 'bald'), or None."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=cutoff) if isinstance(name, str) else []
    return close[0] if close else None


def unknown_name(what: str, name: object, choices: Iterable[str]) -> ConfigError:
    """The refusal of a name that no registry entry has: "{what}: unknown name 'bladd'; choose one
    of random, ..., bald, ... (did you mean bald?)", the closest spelling named where there is one."""
    choices = list(choices)
    close = closest_name(name, choices)
    hint = f" (did you mean {close}?)" if close else ""
    return ConfigError(f"{what}: unknown name {name!r}; choose one of {', '.join(choices)}{hint}")


def regression_only(name: str) -> ConfigError:
    """The error a regression posterior raises for a classifier-only method."""
    return ConfigError(
        f"{name}: the posterior was fitted for regression (float targets, Gaussian likelihood), which has no class "
        "probabilities; use predict(x) -> GaussianPredictive or predict_mean_var(x) -> (mean [N], var [N])"
    )


def classification_only(name: str) -> ConfigError:
    """The error a classifier raises for a regression-only method."""
    return ConfigError(
        f"{name}: the posterior was fitted for classification (integer labels); use predict_proba(x) or "
        "predict(x) -> Predictive, or fit it on float targets for regression"
    )
