"""The model `test_store_properties.StoreMachine` checks `PoolStore` against: what each project
should hold (items, observations, rounds and their queries) after the operations run so far, and
the values the operations draw from."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

CLASSES = ["0", "1", "2"]
NAMES = ("p", "q")
KEYS = tuple(str(i) for i in range(6))  # items added without keys are keyed str(row): rows are 0..5 too
UNKNOWN = "zz"  # never an item's key
MISSING_ITEM_ID = 2**30  # never an item's id
STATUSES = ("started", "fitted", "scored", "queried", "answered", "done", "failed")
ALLOWED = {"started": {"fitted", "failed"}, "fitted": {"scored", "failed"}, "scored": {"queried", "failed"},
           "queried": {"answered", "failed"}, "answered": {"done", "failed"}, "done": set(), "failed": set()}  # fmt: skip
NEXT = {"started": "fitted", "fitted": "scored", "scored": "queried", "queried": "answered", "answered": "done"}
SCORES = [0.0, 0.5, -1.5, math.inf, math.nan]
TABLES = ("round_locks", "observations", "round_scores", "queries", "rounds", "items", "projects")  # children first

BUSY = ("p", "p", "p", "q")  # "p" (made by `first_project`) mostly
WHO = ("ann", "bob")
#: a label as given and its stored text, None when the project's classes refuse it (1 in 11 draws)
LABELS = [(0, "0"), (1, "1"), (2.0, "2"), ("1", "1"), (" 0", "0")] * 2 + [(3, None)]
FAULTS = (None,) * 8 + ("unknown", "repeat")  # 1 batch of keys in 5 is broken


@dataclass
class Obs:
    key: str
    value: str
    who: str
    source: str
    round: int | None


@dataclass
class RoundM:
    number: int
    labelled_count: int
    status: str = "started"
    failure_reason: str | None = None
    queries: list[tuple[str, float]] = field(default_factory=list)  # (key, stored score) by rank
    scored: bool = False  # stored every candidate's score


@dataclass
class ProjectM:
    settings: dict[str, Any] = field(default_factory=dict)
    items: dict[str, tuple[int, str, bool]] = field(default_factory=dict)  # key -> (row, split, consumable), by id
    obs: list[Obs] = field(default_factory=list)  # by id
    rounds: list[RoundM] = field(default_factory=list)

    def latest(self, key: str, *, who: str | None = None, round: int | None = None) -> str | None:
        """The value of `key`'s latest observation (by `who`, in round `round`, when given)."""
        for o in reversed(self.obs):
            if o.key == key and who in (None, o.who) and round in (None, o.round):
                return o.value
        return None

    def round(self, number: int) -> RoundM | None:
        return self.rounds[number - 1] if 1 <= number <= len(self.rounds) else None

    def labelled(self, split: str) -> list[str]:
        return [k for k, (_, sp, _) in self.items.items() if sp == split and self.latest(k) is not None]
