"""Data-access functions. Each takes an open `Session` inside a transaction and never commits:
`PoolStore` owns the one `with session.begin():` and calls these inside it.

Labels are stored as text: for classification the class name (one of the project's `classes`),
for regression the float's `repr`, for design whatever string the outcome is. An item's label is
its latest observation (largest id).
"""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import and_, exists, func, insert, select, update
from sqlalchemy.orm import Session

from activebayes.data.loaders import label_text
from activebayes.errors import DataError, StoreError
from activebayes.store.models import TRANSITIONS, Item, Observation, Project, Query, Round, RoundStatus, utcnow

CHUNK = 10_000  # rows per executemany batch
KEY_CHUNK = 900  # keys per IN (...) list (SQLite allows 32766 variables, PG 65535)


def get_project(session: Session, name: str) -> Project:
    """The project called `name`; StoreError listing the names that exist otherwise."""
    project = session.scalar(select(Project).where(Project.name == name))
    if project is None:
        names = session.scalars(select(Project.name).order_by(Project.name)).all()
        known = ", ".join(repr(n) for n in names) if names else "none yet (create one with `PoolStore.create_project`)"
        raise StoreError(f"project: no project named {name!r}; the database has {known}")
    return project


def normalize_value(project: Project, value: Any) -> str:
    """The stored text of a label `value` for `project`; DataError when it is not allowed.

    classification: `label_text(value)` must be one of `project.classes` (3, 3.0 and "3" are the same);
    regression: a finite number, stored as `repr(float(value))`; design: `str(value)`.
    """
    if project.task == "classification":
        text = label_text(value)
        classes = [str(c) for c in (project.classes or [])]
        if text not in classes:
            shown = ", ".join(classes[:20]) + (" ..." if len(classes) > 20 else "")
            raise DataError(f"label: expected one of the classes of project {project.name!r} ({shown}), got {value!r}")
        return text
    if project.task == "regression":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise DataError(f"label: expected a number for regression project {project.name!r}, got {value!r}") from None
        if not math.isfinite(number):
            raise DataError(f"label: expected a finite number, got {value!r}")
        return repr(number)
    return str(value)


def insert_items(
    session: Session,
    project_id: int,
    rows: Sequence[int] | np.ndarray,
    keys: Sequence[str] | None = None,
    *,
    split: str = "pool",
    consumable: bool = True,
) -> int:
    """Insert one item per row with Core executemany in chunks of `CHUNK` (no ORM objects).

    `keys` default to the row index as text. Returns the number inserted.
    """
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    if keys is not None and len(keys) != len(rows):
        raise DataError(f"keys: expected one key per row ({len(rows)}), got {len(keys)}")
    if split not in ("pool", "test"):
        raise DataError(f"split: expected 'pool' or 'test', got {split!r}")
    row_list = rows.tolist()
    key_list = [str(r) for r in row_list] if keys is None else [str(k) for k in keys]
    values = {"project_id": project_id, "key": key_list, "row": row_list, "consumable": bool(consumable), "split": split}
    bulk_insert(session, Item.__table__, values, len(row_list))
    return len(row_list)


def bulk_insert(session: Session, table: Any, values: dict[str, Any], n: int) -> None:
    """Insert `n` rows into `table`; `values` maps each column to a list of n values or to one
    scalar shared by every row.

    The Core `insert(table)` is compiled once for the session's dialect and run as one DBAPI
    executemany per chunk of `CHUNK` rows, skipping SQLAlchemy's per-row parameter processing
    (which costs more than SQLite's own insert). Only plain int/str/bool/float/None values.
    """
    conn = session.connection()
    names = list(values)
    if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        _copy_rows(conn, table, values, n)
        return
    compiled = insert(table).compile(dialect=conn.dialect, column_keys=names)
    sql = str(compiled)
    order = list(compiled.positiontup) if compiled.positional else names
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        cols = [
            values[name][start:stop] if isinstance(values[name], list) else itertools.repeat(values[name], stop - start)
            for name in order
        ]
        if compiled.positional:
            conn.exec_driver_sql(sql, list(zip(*cols)))
        else:
            conn.exec_driver_sql(sql, [dict(zip(order, r)) for r in zip(*cols)])


def _copy_rows(conn: Any, table: Any, values: dict[str, Any], n: int) -> None:
    """PostgreSQL + psycopg 3: the same rows through COPY ... FROM STDIN (about 3x faster than a
    pipelined executemany), on the session's connection, so inside its transaction."""
    names = list(values)
    prep = conn.dialect.identifier_preparer
    columns = ", ".join(prep.quote(name) for name in names)
    cols = [values[name] if isinstance(values[name], list) else itertools.repeat(values[name], n) for name in names]
    import psycopg

    cursor = conn.connection.driver_connection.cursor()
    try:
        with cursor.copy(f"COPY {prep.format_table(table)} ({columns}) FROM STDIN") as copy:
            for row in zip(*cols):
                copy.write_row(row)
    except psycopg.IntegrityError as exc:
        raise StoreError(f"database refused a duplicate or dangling reference: {exc}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"database error: {exc}") from exc
    finally:
        cursor.close()


def item_ids_for_keys(session: Session, project_id: int, keys: Sequence[str]) -> dict[str, int]:
    """Map each known key to its item id (unknown keys are absent from the result)."""
    found: dict[str, int] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), KEY_CHUNK):
        chunk = unique[start : start + KEY_CHUNK]
        stmt = select(Item.key, Item.id).where(Item.project_id == project_id, Item.key.in_(chunk))
        found.update({k: i for k, i in session.execute(stmt)})
    return found


def latest_values(
    session: Session, item_ids: Sequence[int], who: str | None = None, round_id: int | None = None
) -> dict[int, str]:
    """The latest observation's value for each item (by `who`, in round `round_id`, when given)."""
    out: dict[int, str] = {}
    ids = list(item_ids)
    for start in range(0, len(ids), KEY_CHUNK):
        chunk = ids[start : start + KEY_CHUNK]
        inner = select(func.max(Observation.id)).where(Observation.item_id.in_(chunk))
        if who is not None:
            inner = inner.where(Observation.who == who)
        if round_id is not None:
            inner = inner.where(Observation.round_id == round_id)
        inner = inner.group_by(Observation.item_id)
        stmt = select(Observation.item_id, Observation.value).where(Observation.id.in_(inner))
        out.update({i: v for i, v in session.execute(stmt)})
    return out


def record_observations(
    session: Session,
    project: Project,
    answers: Iterable[tuple[str, Any]],
    *,
    who: str,
    source: str,
    round_id: int | None = None,
) -> int:
    """Append observations; return how many were recorded.

    Every pair is validated before anything is written (unknown key, label outside the classes,
    one key given two different labels). A pair whose value equals the latest observation of the
    same item by the same `who` (within round `round_id` when one is given, so that a design
    asked again in a later round records its new answer) is not recorded again, so resubmitting
    is harmless. On PostgreSQL
    the items' rows are locked (FOR UPDATE) so that concurrent submitters serialise per item; on
    SQLite the store's write transactions are BEGIN IMMEDIATE, which serialises writers.
    """
    pairs: dict[str, str] = {}
    for key, value in answers:
        key = str(key)
        text = normalize_value(project, value)
        if key in pairs and pairs[key] != text:
            raise DataError(f"answers: key {key!r} was given two different labels, {pairs[key]!r} and {text!r}")
        pairs[key] = text
    if not pairs:
        return 0
    ids = item_ids_for_keys(session, project.id, list(pairs))
    unknown = [k for k in pairs if k not in ids]
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise DataError(f"answers: {len(unknown)} key(s) are not items of project {project.name!r}: {shown}")
    if session.get_bind().dialect.name == "postgresql":
        id_list = sorted(ids.values())
        for start in range(0, len(id_list), KEY_CHUNK):
            lock = select(Item.id).where(Item.id.in_(id_list[start : start + KEY_CHUNK])).order_by(Item.id)
            session.execute(lock.with_for_update()).all()
    previous = latest_values(session, list(ids.values()), who=who, round_id=round_id)
    now = utcnow()
    new = [
        {"item_id": ids[k], "value": v, "who": who, "source": source, "round_id": round_id, "created_at": now}
        for k, v in pairs.items()
        if previous.get(ids[k]) != v
    ]
    for start in range(0, len(new), CHUNK):
        session.execute(insert(Observation.__table__), new[start : start + CHUNK])
    return len(new)


def _latest_observation_ids():
    return select(func.max(Observation.id).label("oid")).group_by(Observation.item_id).subquery()


def labelled(session: Session, project_id: int, split: str = "pool") -> tuple[np.ndarray, list[str], list[str]]:
    """(rows [L] int64, keys, values) of the items of `split` that have a label, by item id."""
    latest = _latest_observation_ids()
    stmt = (
        select(Item.row, Item.key, Observation.value)
        .join(Observation, Observation.item_id == Item.id)
        .join(latest, latest.c.oid == Observation.id)
        .where(Item.project_id == project_id, Item.split == split)
        .order_by(Item.id)
    )
    result = _core_rows(session, stmt)
    rows = np.fromiter((r[0] for r in result), dtype=np.int64, count=len(result))
    return rows, [r[1] for r in result], [r[2] for r in result]


def count_labelled(session: Session, project_id: int, split: str = "pool") -> int:
    has_obs = exists().where(Observation.item_id == Item.id)
    stmt = select(func.count(Item.id)).where(Item.project_id == project_id, Item.split == split, has_obs)
    return int(session.scalar(stmt) or 0)


def _candidate_filter(project_id: int) -> Any:
    has_obs = exists().where(Observation.item_id == Item.id)
    return and_(Item.project_id == project_id, Item.split == "pool", (Item.consumable.is_(False)) | ~has_obs)


def count_candidates(session: Session, project_id: int) -> int:
    """How many items a round may query (see `candidates`)."""
    return int(session.scalar(select(func.count(Item.id)).where(_candidate_filter(project_id))) or 0)


def candidates(session: Session, project_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(item ids [N], rows [N]) of the pool's candidates, by item id: consumable items without an
    observation, and every reusable (non-consumable) item."""
    stmt = select(Item.id, Item.row).where(_candidate_filter(project_id)).order_by(Item.id)
    result = _core_rows(session, stmt)
    flat = np.fromiter(itertools.chain.from_iterable(result), dtype=np.int64, count=2 * len(result))
    return flat[0::2].copy(), flat[1::2].copy()


def _core_rows(session: Session, stmt: Any) -> list[tuple]:
    """All rows of a select of plain int/str columns, as DBAPI tuples.

    The statement is compiled by SQLAlchemy and run on the session's own DBAPI connection (so in
    its transaction); skipping SQLAlchemy's Row objects makes reading a 1M-item pool ~3x faster.
    Only for statements without expanding (IN-list) parameters or type-converted columns.
    """
    conn = session.connection()
    compiled = stmt.compile(dialect=conn.dialect)
    params = compiled.params
    args = [params[name] for name in compiled.positiontup] if compiled.positional else params
    cursor = conn.connection.driver_connection.cursor()
    try:
        cursor.execute(str(compiled), args)
        return cursor.fetchall()
    finally:
        cursor.close()


def latest_round(session: Session, project_id: int) -> Round | None:
    stmt = select(Round).where(Round.project_id == project_id).order_by(Round.number.desc()).limit(1)
    return session.scalar(stmt)


def get_round(session: Session, project: Project, number: int) -> Round:
    found = session.scalar(select(Round).where(Round.project_id == project.id, Round.number == number))
    if found is None:
        raise StoreError(f"round: project {project.name!r} has no round {number}")
    return found


def set_status(session: Session, rnd: Round, status: str, **fields: Any) -> None:
    """Move `rnd` to `status` (checked against TRANSITIONS) and update the given columns.

    The UPDATE is guarded by the old status, so two processes cannot both make the same move.
    """
    status = str(status)  # a RoundStatus's value: the database stores the plain string
    if status not in TRANSITIONS.get(rnd.status, frozenset()):
        raise StoreError(f"round {rnd.number}: cannot go from status {rnd.status!r} to {status!r}")
    values = {"status": status, "updated_at": utcnow(), **fields}
    stmt = update(Round).where(and_(Round.id == rnd.id, Round.status == rnd.status)).values(**values)
    if session.execute(stmt.execution_options(synchronize_session=False)).rowcount != 1:
        raise StoreError(f"round {rnd.number}: another process changed its status meanwhile; run again")
    session.expire(rnd)


def insert_queries(
    session: Session,
    round_id: int,
    item_ids: Sequence[int],
    scores: Sequence[float],
    predictions: Sequence[Mapping[str, Any] | None] | None = None,
) -> None:
    """Record a round's queries; rank 0 is the first selected. `predictions` (one per item, or
    None for none at all): the round's predictive for each item, a flat mapping of names to
    finite numbers or strings (see `Query.prediction`), or None for an item without one.

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
    if len(set(ids)) != len(ids):
        twice = next(i for i, n in collections.Counter(ids).items() if n > 1)
        raise StoreError(f"queries: item id {twice} is queried twice in one round")
    _check_pool_items(session, round_id, ids)
    rows = [
        {"round_id": round_id, "item_id": i, "score": s if math.isfinite(s) else 0.0, "rank": r, "prediction": g}
        for r, (i, s, g) in enumerate(zip(ids, values, guesses))
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
) -> list[tuple[int, str, int, float, int, str | None, dict[str, Any] | None]]:
    """(item id, key, row, score, rank, answer or None, prediction or None) of a round's queries,
    by rank.

    The answer of a consumable item is its latest observation; a reusable item (a design asked
    again and again) counts as answered only by an observation recorded for this round.
    """
    stmt = (
        select(Query.item_id, Item.key, Item.row, Query.score, Query.rank, Item.consumable, Query.prediction)
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
    return [(r[0], r[1], r[2], r[3], r[4], values.get(r[0]), r[6]) for r in result]


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
    from activebayes.store.models import RoundScores

    packed_ids, packed_scores, n = pack_round_scores(item_ids, scores)
    session.execute(
        insert(RoundScores.__table__),
        {"round_id": round_id, "n_candidates": n, "item_ids": packed_ids, "scores": packed_scores},
    )


def read_round_scores(session: Session, round_id: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(item ids [N] int64, scores [N] float32) stored for a round, or None when it has none."""
    from activebayes.store.models import RoundScores

    stmt = select(RoundScores.n_candidates, RoundScores.item_ids, RoundScores.scores).where(
        RoundScores.round_id == round_id
    )
    found = session.execute(stmt).one_or_none()
    if found is None:
        return None
    n, packed_ids, packed_scores = found
    ids = np.frombuffer(bytes(packed_ids), dtype="<i4", count=n).astype(np.int64)
    return ids, np.frombuffer(bytes(packed_scores), dtype="<f4", count=n).astype(np.float32)


# ---- labelling: checked appends and undo (`activebayes label`) ----------------------------------
def label_states(session: Session, project_id: int, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """For each known key: {"item_id", "split", "consumable", "label"} where "label" is the
    item's current label (its latest observation) or None. Unknown keys are absent."""
    found: dict[str, tuple[int, str, bool]] = {}
    unique = list(dict.fromkeys(str(k) for k in keys))
    for start in range(0, len(unique), KEY_CHUNK):
        chunk = unique[start : start + KEY_CHUNK]
        stmt = select(Item.key, Item.id, Item.split, Item.consumable).where(
            Item.project_id == project_id, Item.key.in_(chunk)
        )
        found.update({k: (i, sp, bool(c)) for k, i, sp, c in session.execute(stmt)})
    current = latest_values(session, [v[0] for v in found.values()])
    return {
        k: {"item_id": i, "split": sp, "consumable": c, "label": current.get(i)} for k, (i, sp, c) in found.items()
    }


def append_checked(
    session: Session,
    project: Project,
    rows: Sequence[tuple[str, Any, int | None]],
    *,
    expected: dict[str, str | None],
    who: str,
    source: str,
    return_ids: bool = True,
) -> tuple[list[int], dict[str, tuple[str | None, str | None]]]:
    """Append one observation per `(key, value, round id or None)` unless some key's current label
    is no longer `expected[key]` (another writer changed it since the caller looked).

    Returns (new observation ids in row order, or [] unless `return_ids`; {}) or
    ([], {key: (expected, now)}) when anything changed, having written nothing. Unknown keys and bad values raise DataError. The items' rows
    are locked first on PostgreSQL (FOR UPDATE); SQLite write transactions are BEGIN IMMEDIATE.
    Unlike `record_observations` nothing is skipped as a repeat: the caller has already left out
    the rows whose label would not change.
    """
    values = [(str(k), normalize_value(project, v), r) for k, v, r in rows]
    if not values:
        return [], {}
    ids = item_ids_for_keys(session, project.id, [k for k, _, _ in values])
    unknown = list(dict.fromkeys(k for k, _, _ in values if k not in ids))
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise DataError(f"answers: {len(unknown)} key(s) are not items of project {project.name!r}: {shown}")
    if session.get_bind().dialect.name == "postgresql":
        id_list = sorted(set(ids.values()))
        for start in range(0, len(id_list), KEY_CHUNK):
            lock = select(Item.id).where(Item.id.in_(id_list[start : start + KEY_CHUNK])).order_by(Item.id)
            session.execute(lock.with_for_update()).all()
    current = latest_values(session, list(set(ids.values())))
    conflicts = {
        k: (expected.get(k), current.get(ids[k]))
        for k in dict.fromkeys(k for k, _, _ in values)
        if k in expected and current.get(ids[k]) != expected[k]
    }
    if conflicts:
        return [], conflicts
    now = utcnow()
    new = [
        {"item_id": ids[k], "value": v, "who": who, "source": source, "round_id": r, "created_at": now}
        for k, v, r in values
    ]
    table = Observation.__table__
    out: list[int] = []
    for start in range(0, len(new), CHUNK):
        if return_ids:  # RETURNING costs about twice a plain executemany: only when asked
            stmt = insert(table).returning(table.c.id, sort_by_parameter_order=True)
            out.extend(row[0] for row in session.execute(stmt, new[start : start + CHUNK]))
        else:
            session.execute(insert(table), new[start : start + CHUNK])
    return out, {}


def delete_observation(session: Session, project: Project, observation_id: int) -> str:
    """Delete observation `observation_id` of `project` (an answer taken back at once); returns
    its item's key. StoreError when it is not there (already taken back) or when its round is no
    longer waiting for answers (closed meanwhile: a later fit may have used the answer)."""
    from sqlalchemy import delete

    stmt = (
        select(Observation.round_id, Item.key)
        .join(Item, Item.id == Observation.item_id)
        .where(Observation.id == observation_id, Item.project_id == project.id)
    )
    found = session.execute(stmt).one_or_none()
    if found is None:
        raise StoreError(f"observation {observation_id}: no such answer in project {project.name!r} (taken back already?)")
    round_id, key = found
    if round_id is not None:
        lock = select(Round.number, Round.status).where(Round.id == round_id)
        if session.get_bind().dialect.name == "postgresql":
            lock = lock.with_for_update()
        number, status = session.execute(lock).one()
        if not RoundStatus(status).waiting:
            raise StoreError(
                f"the answer for {key!r} belongs to round {number}, which is {status!r} now, no longer waiting for answers; "
                "correct it with a new label instead (`PoolStore.record_labels`)"
            )
    session.execute(delete(Observation).where(Observation.id == observation_id))
    return key
