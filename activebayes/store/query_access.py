"""What a round asked: its queries (item, score, rank, the model's prediction, the probability
of its draw) with their answers, and every candidate's score (packed arrays, revision 0002). Each function takes an open
`Session` inside a transaction and never commits."""

from __future__ import annotations

import collections
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from activebayes.errors import DataError, StoreError
from activebayes.store.bulk_sql import KEY_CHUNK
from activebayes.store.label_access import latest_values
from activebayes.store.models import Item, Observation, Query, Round, RoundScores


def insert_queries(
    session: Session,
    round_id: int,
    item_ids: Sequence[int],
    scores: Sequence[float],
    predictions: Sequence[Mapping[str, Any] | None] | None = None,
    probabilities: Sequence[float | None] | None = None,
) -> None:
    """Record a round's queries; rank 0 is the first selected. `predictions` (one per item, or
    None for none at all): the round's predictive for each item, a flat mapping of names to
    finite numbers or strings (see `Query.prediction`), or None for an item without one.
    `probabilities` (one per item, or None for none at all): the probability q in (0, 1] with
    which a stochastic acquisition drew each item at its draw (`Query.probability`), None for an
    item chosen deterministically.

    Refused before anything is written: DataError unless the scores (and predictions) pair one
    to one with the items, or for a prediction that is not such a mapping; StoreError for an
    item queried twice or one outside the pool of the round's own project (another project's
    item, a test item, no item at all)."""
    ids, values = [int(i) for i in item_ids], [float(s) for s in scores]
    if len(ids) != len(values):
        raise DataError(f"queries: {len(ids)} item ids but {len(values)} scores; pass one score per item")
    guesses = [None] * len(ids) if predictions is None else [_checked_prediction(p) for p in predictions]
    if len(guesses) != len(ids):
        raise DataError(f"queries: {len(ids)} item ids but {len(guesses)} predictions; pass one per item (None for none)")
    drawn = [None] * len(ids) if probabilities is None else [_checked_probability(q) for q in probabilities]
    if len(drawn) != len(ids):
        raise DataError(f"queries: {len(ids)} item ids but {len(drawn)} probabilities; pass one per item (None for none)")
    if len(set(ids)) != len(ids):
        twice = next(i for i, n in collections.Counter(ids).items() if n > 1)
        raise StoreError(f"queries: item id {twice} is queried twice in one round")
    _check_pool_items(session, round_id, ids)
    rows = [
        {"round_id": round_id, "item_id": i, "score": s if math.isfinite(s) else 0.0, "rank": r, "prediction": g, "probability": q}
        for r, (i, s, g, q) in enumerate(zip(ids, values, guesses, drawn))
    ]
    if rows:
        session.execute(insert(Query.__table__), rows)


def _checked_prediction(prediction: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A query's prediction as a plain dict of str -> finite float or str; DataError otherwise."""
    if prediction is None:
        return None
    if not isinstance(prediction, Mapping):
        raise DataError(f"queries: a prediction must be a mapping or None, got {prediction!r}")
    out: dict[str, Any] = {}
    for name, value in prediction.items():
        if isinstance(value, str):
            out[str(name)] = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[str(name)] = float(value)
        else:
            raise DataError(f"queries: prediction {name!r} must be a finite number or a string, got {value!r}")
    return out


def _checked_probability(probability: float | None) -> float | None:
    """A draw probability as a float in (0, 1], or None; DataError otherwise."""
    if probability is None:
        return None
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0.0 < float(probability) <= 1.0:
        raise DataError(f"queries: a draw probability must be a number in (0, 1] or None, got {probability!r}")
    return float(probability)


def _check_pool_items(session: Session, round_id: int, ids: Sequence[int]) -> None:
    """StoreError naming the first of `ids` that is not a pool item of round `round_id`'s project."""
    if not ids:
        return
    project_id = session.scalar(select(Round.project_id).where(Round.id == round_id))
    found: set[int] = set()
    for start in range(0, len(ids), KEY_CHUNK):
        part = ids[start : start + KEY_CHUNK]
        stmt = select(Item.id).where(Item.id.in_(part), Item.project_id == project_id, Item.split == "pool")
        found.update(session.scalars(stmt))
    missing = [i for i in ids if i not in found]
    if missing:
        raise StoreError(
            f"queries: item id {missing[0]} is not in this project's pool"
            + (f" ({len(missing)} of the {len(ids)} ids are not)" if len(missing) > 1 else "")
        )


def round_queries(
    session: Session, round_id: int
) -> list[tuple[int, str, int, float, int, str | None, dict[str, Any] | None, float | None]]:
    """(item id, key, row, score, rank, answer or None, prediction or None, draw probability or
    None) of a round's queries, by rank.

    The answer of a consumable item is its latest observation; a reusable item (a design asked
    again and again) counts as answered only by an observation recorded for this round.
    """
    stmt = (
        select(Query.item_id, Item.key, Item.row, Query.score, Query.rank, Item.consumable, Query.prediction, Query.probability)
        .join(Item, Item.id == Query.item_id)
        .where(Query.round_id == round_id)
        .order_by(Query.rank)
    )
    result = session.execute(stmt).all()
    values = latest_values(session, [r[0] for r in result if r[5]])
    reusable = [r[0] for r in result if not r[5]]
    if reusable:
        inner = (
            select(func.max(Observation.id))
            .where(Observation.item_id.in_(reusable), Observation.round_id == round_id)
            .group_by(Observation.item_id)
        )
        stmt = select(Observation.item_id, Observation.value).where(Observation.id.in_(inner))
        values.update({item: value for item, value in session.execute(stmt)})
    return [(r[0], r[1], r[2], r[3], r[4], values.get(r[0]), r[6], r[7]) for r in result]


# ---- every candidate's score of a round (revision 0002) ----------------------------------------
def pack_round_scores(item_ids: Sequence[int] | np.ndarray, scores: Sequence[float] | np.ndarray) -> tuple[bytes, bytes, int]:
    """(item ids as little-endian int32 bytes, scores as little-endian float32 bytes, N) of a
    round's N scored candidates; DataError for mismatched lengths or an id outside int32."""
    ids = np.asarray(item_ids, dtype=np.int64).reshape(-1)
    values = np.asarray(scores, dtype=np.float64).reshape(-1)
    if ids.shape != values.shape:
        raise DataError(f"candidate scores: expected one score per item id ({len(ids)}), got {len(values)}")
    if len(ids) and (ids.min() < 0 or ids.max() > np.iinfo(np.int32).max):
        raise DataError(f"candidate scores: item ids must fit int32, got {ids.min()}..{ids.max()}")
    return ids.astype("<i4").tobytes(), values.astype("<f4").tobytes(), len(ids)


def insert_round_scores(session: Session, round_id: int, item_ids: Any, scores: Any) -> None:
    """Store every candidate's score of a round as one `round_scores` row (packed arrays)."""
    packed_ids, packed_scores, n = pack_round_scores(item_ids, scores)
    session.execute(
        insert(RoundScores.__table__),
        {"round_id": round_id, "n_candidates": n, "item_ids": packed_ids, "scores": packed_scores},
    )


def read_round_scores(session: Session, round_id: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(item ids [N] int64, scores [N] float32) stored for a round, or None when it has none."""
    stmt = select(RoundScores.n_candidates, RoundScores.item_ids, RoundScores.scores).where(
        RoundScores.round_id == round_id
    )
    found = session.execute(stmt).one_or_none()
    if found is None:
        return None
    n, packed_ids, packed_scores = found
    ids = np.frombuffer(bytes(packed_ids), dtype="<i4", count=n).astype(np.int64)
    return ids, np.frombuffer(bytes(packed_scores), dtype="<f4", count=n).astype(np.float32)


def scored_round_numbers(session: Session, project_id: int) -> list[int]:
    """The numbers of the project's rounds that stored every candidate's score, ascending."""
    stmt = (
        select(Round.number)
        .join(RoundScores, RoundScores.round_id == Round.id)
        .where(Round.project_id == project_id)
        .order_by(Round.number)
    )
    return list(session.scalars(stmt))
