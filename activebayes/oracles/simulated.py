"""`SimulatedOracle`: answers from a held-back truth, for simulated studies; `truth_oracle` builds
one from a store project's held-back labels (looking up only the keys asked, so that a pool of a
million items costs nothing until it is asked)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from activebayes.errors import DataError
from activebayes.oracles.base import Answer


class SimulatedOracle:
    """Answers each key with its held-back true label.

    Args:
        truth: a mapping key -> label; a sequence/array of labels indexed by `keys`; or a
            function `keys -> {key: label}` of the asked keys it knows, called at each ask.
        keys: the keys of `truth` when it is a sequence (default: "0", "1", ... its row indices).
        missing: what to do with a key the truth lacks: "raise" (DataError) or "skip" (None).

    >>> SimulatedOracle([3, 1, 4]).ask(["2", "0"])
    [Answer(key='2', value=4), Answer(key='0', value=3)]
    """

    stop_requested = False

    def __init__(self, truth: Mapping[str, Any] | Sequence[Any] | np.ndarray | Callable[[list[str]], Mapping[str, Any]], *,
                 keys: Sequence[str] | None = None, missing: str = "raise") -> None:  # fmt: skip
        if missing not in ("raise", "skip"):
            raise DataError(f"missing: expected 'raise' or 'skip', got {missing!r}")
        self.missing = missing
        self.asked = 0
        self._known: Callable[[list[str]], Mapping[str, Any]]  # the asked keys -> {key: label} of those it knows
        if callable(truth) and not isinstance(truth, (Mapping, np.ndarray)):
            self._known = lambda keys: {str(k): _plain(v) for k, v in truth(keys).items()}
            return
        if isinstance(truth, Mapping):
            table = {str(k): _plain(v) for k, v in truth.items()}
        else:
            values = np.asarray(truth).tolist()
            keys = [str(k) for k in keys] if keys is not None else [str(i) for i in range(len(values))]
            if len(keys) != len(values):
                raise DataError(f"keys: expected one key per truth value ({len(values)}), got {len(keys)}")
            table = dict(zip(keys, values))
        self._known = lambda keys: table

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        keys = [str(key) for key in keys]
        known = self._known(keys)
        answers = []
        for key in keys:
            if key not in known:
                if self.missing == "raise":
                    raise DataError(f"SimulatedOracle: no true label for key {key!r}")
                answers.append(Answer(key, None))
            else:
                answers.append(Answer(key, known[key]))
        self.asked += len(answers)
        return answers


class NoTruthError(DataError):
    """`truth_oracle`: the project holds back no labels (its data file has none, and no truth
    file was recorded)."""


def truth_oracle(store: Any, project: str, data: Any = None) -> SimulatedOracle:
    """A SimulatedOracle answering from the labels held back when the project's pool was added:
    the data file's labels, or its truth file (checked against its recorded sha256; DataError
    when missing or changed). `data`: the project's data already loaded by
    `activebayes.data.load_project_data` (loaded here when None). NoTruthError without any.

    The data file's labels y [N] are looked up per ask: the asked keys' items give their rows
    (`store.items(project, keys=...)`, an indexed select of those keys), the answers are
    `label_text(y[row])`; no dict of the whole pool is built."""
    from activebayes.data import load_project_data, project_truth
    from activebayes.data.project import label_texts

    if store.project(project).settings.get("truth") == "known":
        raise NoTruthError(f"project {project!r} imported its labels as answers (--labels-are-known): none is held back")
    data = data if data is not None else load_project_data(store, project)
    if data.y is None:
        truth = project_truth(store, project, data)  # the truth file's labels, if any
        if truth is None:
            raise NoTruthError(f"project {project!r} has no held-back truth (its data file has no labels)")
        return SimulatedOracle(truth)
    labels = data.y

    def lookup(keys: list[str]) -> dict[str, str]:
        _, rows, found = store.items(project, keys=keys)
        return dict(zip(found, label_texts(np.asarray(labels[rows]))))

    return SimulatedOracle(lookup)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
