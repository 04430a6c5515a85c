"""The oracle protocol: who answers the queries.

    ask(keys [K], candidates [K, ...] or None) -> list[Answer]   (one per key, same order)

`Answer.value` is the label (a class name or number), or None when the oracle skipped the item.
An oracle that wants the study to pause (a human pressing `q`) sets `stop_requested = True`
after answering; the loop then records the answers it got and stops, leaving the round
"queried" so the next run asks the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from activebayes.errors import DataError


@dataclass(frozen=True)
class Answer:
    """One answer: the item's `key` and its `value`, None when skipped."""

    key: str
    value: Any = None

    @property
    def skipped(self) -> bool:
        return self.value is None


def checked_answers(answers: Any, keys: Sequence[str]) -> list[Answer]:
    """`answers` as the protocol has them (a list of Answer, one per key of `keys`, in any order),
    else DataError naming what came back: a dict, (key, value) tuples, a count that is not the
    keys' or keys that were not asked."""
    answers = list(answers) if isinstance(answers, (list, tuple)) else answers
    if not isinstance(answers, list) or not all(isinstance(a, Answer) for a in answers):
        got = type(answers).__name__ if not isinstance(answers, list) else next(type(a).__name__ for a in answers if not isinstance(a, Answer))
        raise DataError(f"oracle: ask() returned {got}; it must return a list of Answer(key, value), "
                        "one per key asked (value None to skip an item)")  # fmt: skip
    asked, answered = [str(k) for k in keys], [str(a.key) for a in answers]
    if sorted(answered) != sorted(asked):
        missing = sorted(set(asked) - set(answered))
        extra = sorted(set(answered) - set(asked))
        repeated = sorted({k for k in answered if answered.count(k) > 1})
        what = "; ".join(part for part in (
            f"{len(missing)} keys unanswered (e.g. {missing[0]!r})" if missing else "",
            f"keys not asked (e.g. {extra[0]!r})" if extra else "",
            f"keys answered twice (e.g. {repeated[0]!r})" if repeated else "",
        ) if part)  # fmt: skip
        raise DataError(f"oracle: ask() answered {len(answers)} items for {len(asked)} keys asked ({what}); "
                        "return one Answer per key, with value None to skip an item")  # fmt: skip
    return answers


@runtime_checkable
class Oracle(Protocol):
    """Who answers the loop's queries (module docstring); `stop_requested` pauses the study."""

    stop_requested: bool

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        """One Answer per key of `keys` [K] (any order; value None to skip), given the items
        `candidates` [K, ...] (features or images) or None; `checked_answers` holds it to that."""
        ...
