"""Labels: observations appended (plain, or checked against what the labeller saw), taken back,
and read. Each function takes an open `Session` inside a transaction and never commits.

Labels are stored as text: for classification the class name (one of the project's `classes`),
for regression the float's `repr`, for design whatever string the outcome is. An item's label is
its latest observation (largest id).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import and_, delete, func, insert, not_, select
from sqlalchemy.orm import Session

from activebayes.data.dataset import label_text
from activebayes.errors import DataError, RecordedCountError, StoreError
from activebayes.store.bulk_sql import CHUNK, KEY_CHUNK, core_rows
from activebayes.store.item_access import item_ids_for_keys
from activebayes.store.models import Item, Observation, Project, Round, RoundStatus, utcnow


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


def _known_item_ids(session: Session, project: Project, keys: Iterable[str]) -> dict[str, int]:
    """{key: item id} of `keys`; DataError naming the keys that are not items of `project`.
    On PostgreSQL the items' rows are then locked (FOR UPDATE, in id order) so that concurrent
    writers serialise per item; SQLite write transactions are BEGIN IMMEDIATE already."""
    keys = list(keys)
    ids = item_ids_for_keys(session, project.id, keys)
    unknown = list(dict.fromkeys(k for k in keys if k not in ids))
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise DataError(f"answers: {len(unknown)} key(s) are not items of project {project.name!r}: {shown}")
    if session.get_bind().dialect.name == "postgresql":
        id_list = sorted(set(ids.values()))
        for start in range(0, len(id_list), KEY_CHUNK):
            lock = select(Item.id).where(Item.id.in_(id_list[start : start + KEY_CHUNK])).order_by(Item.id)
            session.execute(lock.with_for_update()).all()
    return ids


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
    ids = _known_item_ids(session, project, pairs)
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
    result = core_rows(session, stmt)
    rows = np.fromiter((r[0] for r in result), dtype=np.int64, count=len(result))
    return rows, [r[1] for r in result], [r[2] for r in result]


def count_labelled(session: Session, project_id: int, split: str = "pool") -> int:
    """How many items of `split` have at least one observation (driven by the observations:
    `id IN (SELECT item_id ...)` costs the labels, not the pool)."""
    labelled_ids = select(Observation.item_id)
    stmt = select(func.count(Item.id)).where(Item.project_id == project_id, Item.split == split, Item.id.in_(labelled_ids))
    return int(session.scalar(stmt) or 0)


def check_recorded_count(session: Session, project_id: int, who: str, expected: int) -> None:
    """RecordedCountError unless the project holds exactly `expected` observations of `who`.

    Called in the transaction that then writes, so the count and the write cannot interleave with
    another writer's: on PostgreSQL the project's row is locked first (FOR NO KEY UPDATE, held to
    the commit; a second writer waits, then counts the first one's rows), and SQLite write
    transactions are BEGIN IMMEDIATE, which serialises writers."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(Project.id).where(Project.id == project_id).with_for_update(key_share=True)).all()
    mine = select(func.count(Observation.id)).join(Item, Item.id == Observation.item_id)
    found = int(session.scalar(mine.where(Item.project_id == project_id, Observation.who == who)) or 0)
    if found != expected:
        raise RecordedCountError(f"{who!r} has {found} recorded observations where {expected} were expected", who=who, expected=expected, found=found)


def observations(session: Session, project_id: int) -> list[dict[str, Any]]:
    """Every observation of the project in recording order: {"id", "key", "value", "who",
    "source", "round_id", "created_at"}."""
    stmt = (
        select(Observation.id, Item.key, Observation.value, Observation.who, Observation.source,
               Observation.round_id, Observation.created_at)
        .join(Item, Item.id == Observation.item_id)
        .where(Item.project_id == project_id)
        .order_by(Observation.id)
    )  # fmt: skip
    cols = ("id", "key", "value", "who", "source", "round_id", "created_at")
    return [dict(zip(cols, r)) for r in session.execute(stmt)]


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


def _reusable(session: Session, item_ids: Sequence[int]) -> set[int]:
    """The ids among `item_ids` of reusable (non-consumable) items: designs asked again and again."""
    ids, out = sorted(set(item_ids)), set()
    for start in range(0, len(ids), KEY_CHUNK):
        stmt = select(Item.id).where(Item.id.in_(ids[start : start + KEY_CHUNK]), Item.consumable.is_(False))
        out.update(session.scalars(stmt))
    return out


def append_checked(
    session: Session,
    project: Project,
    rows: Sequence[tuple[str, Any, int | None]],
    *,
    expected: dict[str, str | None],
    who: str,
    source: str,
    return_ids: bool = True,
    relabel: bool = False,
    per_labeller: bool = False,
) -> tuple[list[int | None], dict[str, tuple[str | None, str | None]]]:
    """Append one observation per `(key, value, round id or None)` as if this writer came after
    every writer that committed since the caller read the labels (`expected`), so that concurrent
    labellers end as some order of them run one by one:

    * a row whose value is already the item's current label is a repeat: not written (the
      current label of a reusable item, for a row with a round, is its answer in that round).
      With `per_labeller` (several answers per item) a repeat is a value that `who` gave the item
      already (in that round, for a row with one): another labeller's equal answer is not one;
    * a row whose item's current label is no longer `expected[key]` (another writer changed it)
      is a conflict unless `relabel` (the caller may replace labels): then nothing is written.

    Returns (one entry per row: its new observation's id, None for a repeat — [] instead unless
    `return_ids`; {}) or ([], {key: (expected, now)}) having written nothing. Unknown keys and
    bad values raise DataError. The items' rows are locked first on PostgreSQL (FOR UPDATE); SQLite write
    transactions are BEGIN IMMEDIATE: the labels read here are the ones the write follows.
    """
    values = [(str(k), normalize_value(project, v), r) for k, v, r in rows]
    if not values:
        return [], {}
    ids = _known_item_ids(session, project, (k for k, _, _ in values))
    current = latest_values(session, list(set(ids.values())))
    reusable = _reusable(session, ids.values())
    rounds = {r for _, _, r in values}
    scoped = {r: latest_values(session, [ids[k] for k, _, rr in values if rr == r], who=who if per_labeller else None, round_id=r)
              for r in rounds if r is not None}  # fmt: skip
    mine = latest_values(session, [ids[k] for k, _, r in values if r is None], who=who) if per_labeller else {}

    def before(key: str, number: int | None) -> str | None:
        item = ids[key]
        if per_labeller:
            return mine.get(item) if number is None else scoped[number].get(item)
        return scoped[number].get(item) if number is not None and item in reusable else current.get(item)

    repeats = [before(k, r) == v for k, v, r in values]
    todo = [row for row, repeat in zip(values, repeats) if not repeat]
    conflicts = {} if relabel else {
        k: (expected.get(k), current.get(ids[k])) for k in dict.fromkeys(k for k, _, _ in todo)
        if k in expected and current.get(ids[k]) != expected[k]
    }  # fmt: skip
    if conflicts:
        return [], conflicts
    now = utcnow()
    new = [{"item_id": ids[k], "value": v, "who": who, "source": source, "round_id": r, "created_at": now} for k, v, r in todo]
    table = Observation.__table__
    out: list[int] = []
    for start in range(0, len(new), CHUNK):
        if return_ids:  # RETURNING costs about twice a plain executemany: only when asked
            stmt = insert(table).returning(table.c.id, sort_by_parameter_order=True)
            out.extend(row[0] for row in session.execute(stmt, new[start : start + CHUNK]))
        else:
            session.execute(insert(table), new[start : start + CHUNK])
    if not return_ids:
        return [], {}
    written = iter(out)
    return [None if repeat else next(written) for repeat in repeats], {}


def round_answers(session: Session, round_id: int) -> dict[str, list[tuple[str, str]]]:
    """{key: [(who, value)] in the order given} of the observations recorded for a round."""
    stmt = (
        select(Item.key, Observation.who, Observation.value)
        .join(Item, Item.id == Observation.item_id)
        .where(Observation.round_id == round_id)
        .order_by(Observation.id)
    )
    out: dict[str, list[tuple[str, str]]] = {}
    for key, who, value in session.execute(stmt):
        out.setdefault(key, []).append((who, value))
    return out


def answer_counts(session: Session, project_id: int) -> list[tuple[str, int, datetime, datetime]]:
    """(who, answers, first, last) of each labeller of the project, most answers first: the
    people, not the labels that came with the data file (source "import") nor the simulated
    truth's answers (`round --oracle truth`: source "oracle", who "truth")."""
    simulated = and_(Observation.source == "oracle", Observation.who == "truth")
    stmt = (
        select(Observation.who, func.count(Observation.id), func.min(Observation.created_at), func.max(Observation.created_at))
        .join(Item, Item.id == Observation.item_id)
        .where(Item.project_id == project_id, Observation.source != "import", not_(simulated))
        .group_by(Observation.who)
        .order_by(func.count(Observation.id).desc(), Observation.who)
    )
    return [(who, int(n), first, last) for who, n, first, last in session.execute(stmt)]


def delete_observation(session: Session, project: Project, observation_id: int) -> str:
    """Delete observation `observation_id` of `project` (an answer taken back at once); returns
    its item's key. StoreError when it is not there (already taken back) or when its round is no
    longer waiting for answers (closed meanwhile: a later fit may have used the answer)."""
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
