"""The latest round as the commands read it: how many of its queries still wait for an answer,
and what the next `activebayes round` does with it (`RoundStatus.next_step`).

A round a person answers stays `queried` after its last answer: the next round run closes it
(queried → answered → done) before it starts a new one. Until then it is "answered", not
"waiting": every command that asks "does a round wait for answers?" asks `asking`, not
`RoundStatus.waiting`.

    state = latest_round_state(store, "digits")
    if state.asking: ...        # round state.round.number waits for state.open answers
    if state.answered: ...      # every answer is in; the next round closes it
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from activebayes.store.models import RoundStatus, RoundStep


def open_queries(store: Any, project: str, latest: Any) -> int:
    """How many queries of `latest` (a RoundInfo, or None) wait for an answer: none unless it is
    the round waiting for answers (queried)."""
    if latest is None or not latest.status.waiting:
        return 0
    return sum(q.value is None for q in store.queries(project, latest.number))


@dataclass(frozen=True)
class LatestRound:
    """The project's latest round (None: no round yet) and its `open` queries (0 unless queried)."""

    round: Any
    open: int

    @property
    def step(self) -> RoundStep:
        """What the next round run does: new, resume (ask the open queries, or compute again), close."""
        return RoundStatus.next_step(self.round.status if self.round is not None else None, self.open)

    @property
    def asking(self) -> bool:
        """The round waits for `open` (> 0) answers."""
        return self.round is not None and self.round.status.waiting and self.open > 0

    @property
    def answered(self) -> bool:
        """Queried with every answer in: the next round run closes it (nothing waits)."""
        return self.round is not None and self.round.status.waiting and self.open == 0

    @property
    def stopped(self) -> bool:
        """Stopped before its queries were asked (started, fitted, scored): the next round run
        computes it again."""
        return self.round is not None and self.round.status.computing


def latest_round_state(store: Any, project: str) -> LatestRound:
    latest = store.latest_round(project)
    return LatestRound(latest, open_queries(store, project, latest))
