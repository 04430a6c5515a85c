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


@dataclass(frozen=True)
class Answer:
    """One answer: the item's `key` and its `value`, None when skipped."""

    key: str
    value: Any = None

    @property
    def skipped(self) -> bool:
        return self.value is None


@runtime_checkable
class Oracle(Protocol):
    stop_requested: bool

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]: ...
