"""Items: adding a pool (or test split) in bulk, mapping keys to ids, the candidates a round
may query, and moving items to the evaluation split. Each function takes an open `Session` inside a transaction and never commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import and_, exists, func, select, update
from sqlalchemy.orm import Session

from activebayes.errors import DataError, StoreError
from activebayes.store.bulk_sql import KEY_CHUNK, bulk_insert, column_arrays, core_rows
from activebayes.store.models import Item, Observation, Project


def insert_items(
    session: Session,
    project_id: int,
    rows: Sequence[int] | np.ndarray,
    keys: Sequence[str] | None = None,
    *,
    split: str = "pool",
    consumable: bool = True,
) -> int:
    """Insert one item per row with Core executemany in chunks (no ORM objects; see `bulk_insert`).

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


def count_items(session: Session, project_id: int, split: str | None = None) -> int:
    """How many items the project has (of `split`, when given)."""
    stmt = select(func.count(Item.id)).where(Item.project_id == project_id)
    if split is not None:
        stmt = stmt.where(Item.split == split)
    return int(session.scalar(stmt) or 0)


def item_keys(session: Session, project_id: int) -> set[str]:
    """Every item key of the project."""
    return {row[0] for row in core_rows(session, select(Item.key).where(Item.project_id == project_id))}


def item_ids_for_keys(session: Session, project_id: int, keys: Sequence[str]) -> dict[str, int]:
    """Map each known key to its item id (unknown keys are absent from the result)."""
    found: dict[str, int] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), KEY_CHUNK):
        chunk = unique[start : start + KEY_CHUNK]
        stmt = select(Item.key, Item.id).where(Item.project_id == project_id, Item.key.in_(chunk))
        found.update({k: i for k, i in session.execute(stmt)})
    return found


def all_items(session: Session, project_id: int, split: str | None = None, keys: Sequence[str] | None = None, *,
              with_keys: bool = True) -> tuple[np.ndarray, np.ndarray, list[str]]:  # fmt: skip
    """(item ids [N], rows [N], keys: [] when not `with_keys`) of the project's items (of `split`,
    when given; only those with one of `keys`, when given), by item id. Read in bulk
    (`column_arrays`); the keys, a million strings for a million items, only when asked for."""
    where = Item.project_id == project_id
    if split is not None:
        where = and_(where, Item.split == split)
    if keys is None:
        ids, (rows,), found = column_arrays(session, Item.id, [Item.row], where, text=Item.key if with_keys else None)
        return ids, rows, found
    result = []
    unique = list(dict.fromkeys(str(k) for k in keys))
    for start in range(0, len(unique), KEY_CHUNK):
        result += session.execute(select(Item.id, Item.row, Item.key).where(where, Item.key.in_(unique[start : start + KEY_CHUNK]))).all()
    result.sort()
    return (np.asarray([r[0] for r in result], dtype=np.int64), np.asarray([r[1] for r in result], dtype=np.int64),
            [r[2] for r in result] if with_keys else [])  # fmt: skip


def move_to_split(session: Session, project_id: int, item_ids: Sequence[int], split: str, *, from_split: str = "pool") -> None:
    """Move unlabelled `from_split` items to `split` (the evaluation split "eval" of active
    testing); StoreError, nothing moved, unless every id is an unlabelled `from_split` item of the
    project."""
    ids = [int(i) for i in item_ids]
    has_obs = exists().where(Observation.item_id == Item.id)
    found: set[int] = set()
    for start in range(0, len(ids), KEY_CHUNK):
        part = ids[start : start + KEY_CHUNK]
        stmt = select(Item.id).where(Item.id.in_(part), Item.project_id == project_id, Item.split == from_split, ~has_obs)
        found.update(session.scalars(stmt))
    missing = [i for i in ids if i not in found]
    if missing:
        raise StoreError(f"items: item id {missing[0]} is not an unlabelled {from_split} item of this project (labelled or moved meanwhile?)")
    for start in range(0, len(ids), KEY_CHUNK):
        stmt = update(Item).where(Item.id.in_(ids[start : start + KEY_CHUNK])).values(split=split)
        session.execute(stmt.execution_options(synchronize_session=False))


def make_evaluation_set(session: Session, project: Project, item_ids: Sequence[int], record: Any, *, extends: int | None = None) -> None:
    """Move `item_ids` (unlabelled pool items) to the "eval" split and keep `record` as the
    project's settings["evaluation"] (`PoolStore.record_evaluation_set`); StoreError when an
    evaluation set exists, unless `extends` = B, its size: `record` then continues it, and the
    candidates and eval items must still number its pool N."""
    existing = (project.settings or {}).get("evaluation")
    if extends is None and existing:
        raise StoreError(f"project {project.name!r} already has an evaluation set")
    if extends is not None and len((existing or {}).get("items", [])) != extends:
        raise StoreError(f"project {project.name!r}: the evaluation set changed meanwhile (expected {extends} items)")
    move_to_split(session, project.id, item_ids, "eval")
    if extends is not None:
        now = count_candidates(session, project.id) + len(all_items(session, project.id, "eval", with_keys=False)[0])
        if now != int(record["pool"]):
            raise StoreError(f"project {project.name!r}: the pool changed meanwhile ({now} items, the draw's pool is {record['pool']})")
    project.settings = {**(project.settings or {}), "evaluation": dict(record)}


def _pool(project_id: int) -> Any:
    return and_(Item.project_id == project_id, Item.split == "pool")


def _taken(project_id: int) -> Any:
    """The pool items that are no longer candidates: consumable ones with an observation. Driven
    by the observations (`id IN (SELECT item_id ...)`), so it costs the labels, not the pool."""
    return and_(_pool(project_id), Item.consumable.is_(True), Item.id.in_(select(Observation.item_id)))


def count_candidates(session: Session, project_id: int) -> int:
    """How many items a round may query (see `candidates`): the pool less its labelled consumable items."""
    pool = session.scalar(select(func.count(Item.id)).where(_pool(project_id))) or 0
    return int(pool) - int(session.scalar(select(func.count(Item.id)).where(_taken(project_id))) or 0)


def candidates(session: Session, project_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(item ids [N], rows [N]) of the pool's candidates, by item id: consumable items without an
    observation, and every reusable (non-consumable) item. The pool is read in bulk
    (`column_arrays`) and the few labelled items dropped with numpy."""
    ids, (rows,), _ = column_arrays(session, Item.id, [Item.row], _pool(project_id))
    taken = np.fromiter(session.scalars(select(Item.id).where(_taken(project_id))), dtype=np.int64)
    if len(taken):
        keep = ~np.isin(ids, taken)
        ids, rows = ids[keep], rows[keep]
    return ids, rows
