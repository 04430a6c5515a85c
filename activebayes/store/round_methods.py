"""`PoolStore`'s methods on rounds: start and advance one, record and read its queries, its
answers and the score of every candidate it scored (the class that opens the database is
`activebayes.store.store.PoolStore`; it inherits these).

Each method is one transaction (`PoolStore.transaction`); the work inside it is done by the access
functions of `round_access`, `query_access` and `label_access`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from activebayes.errors import DataError
from activebayes.store import label_access, project_access, query_access, round_access
from activebayes.store.models import RoundStatus
from activebayes.store.records import QueryInfo, RoundInfo, _round_info


class RoundMethods:
    """Rounds, their queries and answers, and every candidate's score of a round."""

    transaction: Callable[..., AbstractContextManager[Session]]  # `PoolStore.transaction`

    # ---- rounds -------------------------------------------------------------------------
    def rounds(self, name: str) -> list[RoundInfo]:
        """Every round of the project, by number (discarded and failed ones included)."""
        with self.transaction(write=False) as s:
            return [_round_info(r) for r in round_access.project_rounds(s, project_access.get_project(s, name).id)]

    def latest_round(self, name: str) -> RoundInfo | None:
        """The project's round with the highest number, whatever its status; None before the first."""
        with self.transaction(write=False) as s:
            found = round_access.latest_round(s, project_access.get_project(s, name).id)
            return _round_info(found) if found is not None else None

    def start_round(
        self,
        name: str,
        *,
        posterior: str,
        acquisition: str,
        seed: int,
        posterior_settings: dict[str, Any] | None = None,
        acquisition_settings: dict[str, Any] | None = None,
    ) -> RoundInfo:
        """Create the next round (status "started"); StoreError while the latest is unfinished."""
        with self.transaction() as s:
            rnd = round_access.start_round(
                s, project_access.get_project(s, name), posterior=posterior, acquisition=acquisition, seed=seed,
                posterior_settings=posterior_settings, acquisition_settings=acquisition_settings,
            )  # fmt: skip
            return _round_info(rnd)

    def advance_round(self, name: str, number: int, status: str, **fields: Any) -> RoundInfo:
        """Move round `number` to `status`, updating `metrics`, `timings` (merged) or `failure_reason`."""
        with self.transaction() as s:
            rnd = round_access.get_round(s, project_access.get_project(s, name), number)
            if "timings" in fields:
                fields["timings"] = {**(rnd.timings or {}), **fields["timings"]}
            round_access.set_status(s, rnd, status, **fields)
            return _round_info(rnd)

    def record_queries(
        self,
        name: str,
        number: int,
        item_ids: Sequence[int],
        scores: Sequence[float],
        *,
        timings: dict[str, float],
        predictions: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> RoundInfo:
        """Record a round's queries (rank = position) and move it to "scored", in one transaction.
        `predictions`: the round's prediction per item (`QueryInfo.prediction`), or None."""
        return self.record_queries_and_scores(name, number, item_ids, scores, timings=timings, predictions=predictions)

    def queries(self, name: str, number: int) -> list[QueryInfo]:
        """Round `number`'s queries by rank (StoreError for a round that does not exist)."""
        with self.transaction(write=False) as s:
            rnd = round_access.get_round(s, project_access.get_project(s, name), number)
            return [QueryInfo(*q) for q in query_access.round_queries(s, rnd.id)]

    def record_answers(
        self, name: str, number: int, answers: Iterable[tuple[str, Any]], *, who: str, source: str, complete: bool
    ) -> int:
        """Record a round's answers and, when `complete`, move it to "answered" — one transaction."""
        pairs = [(k, v) for k, v in answers if v is not None]
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            rnd = round_access.get_round(s, project, number)
            recorded = label_access.record_observations(s, project, pairs, who=who, source=source, round_id=rnd.id)
            if complete:
                round_access.set_status(s, rnd, RoundStatus.answered)
            return recorded

    # ---- every candidate's score of a round (revision 0002) --------------------------------
    def record_queries_and_scores(
        self,
        name: str,
        number: int,
        item_ids: Sequence[int],
        scores: Sequence[float],
        *,
        timings: dict[str, float],
        candidate_ids: Sequence[int] | np.ndarray | None = None,
        candidate_scores: Sequence[float] | np.ndarray | None = None,
        predictions: Sequence[Mapping[str, Any] | None] | None = None,
        probabilities: Sequence[float | None] | None = None,
        candidates: int | None = None,
        groups: Mapping[str, Any] | None = None,
    ) -> RoundInfo:
        """`record_queries`, and in the same transaction the score of every candidate the round
        scored (`candidate_ids` [N] item ids, `candidate_scores` [N]; see `RoundScores`).
        Without them (a random round) this is `record_queries` exactly. `probabilities`: each
        query's draw probability (`QueryInfo.probability`); `candidates`: how many items the round
        drew from, kept in its acquisition_settings["candidates"] (the estimates' N), and `groups`
        beside it ({"candidate_rows": R, "copies": [m per query]}: `activebayes.row_weights`)."""
        if (candidate_ids is None) != (candidate_scores is None):
            raise DataError("candidate_ids, candidate_scores: pass both or neither")
        with self.transaction() as s:
            rnd = round_access.get_round(s, project_access.get_project(s, name), number)
            query_access.insert_queries(s, rnd.id, item_ids, scores, predictions, probabilities)
            if candidate_ids is not None:
                query_access.insert_round_scores(s, rnd.id, candidate_ids, candidate_scores)
            drawn_from = {} if candidates is None else {"acquisition_settings": {**(rnd.acquisition_settings or {}), "candidates": int(candidates), **(groups or {})}}
            round_access.set_status(s, rnd, RoundStatus.scored, timings={**(rnd.timings or {}), **timings}, **drawn_from)
            return _round_info(rnd)

    def round_scores(self, name: str, number: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(item ids [N] int64, scores [N] float32) of every candidate round `number` scored, in
        candidate order; None for a round without stored scores (random, or recorded before 0002)."""
        with self.transaction(write=False) as s:
            rnd = round_access.get_round(s, project_access.get_project(s, name), number)
            return query_access.read_round_scores(s, rnd.id)

    def scored_rounds(self, name: str) -> list[int]:
        """The numbers of the rounds that stored every candidate's score, ascending (no arrays read)."""
        with self.transaction(write=False) as s:
            return query_access.scored_round_numbers(s, project_access.get_project(s, name).id)
