"""Rows appended to a project's pool (`pool add FILE --append`): the project's data file, its
settings and the new items with their known labels recorded in ONE transaction.

The caller has written the combined data file (old rows, then the new ones) and its feature
cache under new names beside the database; this records them. A failure or a kill anywhere
before the commit leaves the project exactly as it was (its old data file, settings and items);
the files written for it are then unreferenced, and a later append writes files of its own.
`insert_rows` adds a table's items and known labels, here and at the first import.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from activebayes.errors import StoreError
from activebayes.store import item_access, label_access, project_access
from activebayes.store.bulk_sql import analyze
from activebayes.store.models import Item, Observation, Project


def append_pool(
    store: Any,
    name: str,
    data_path: str | Path,
    *,
    data_sha256: str,
    replaces_sha256: str,
    settings: dict[str, Any],
    pool_rows: Sequence[int] | np.ndarray,
    pool_keys: Sequence[str] | None,
    test_rows: Sequence[int] | np.ndarray = (),
    test_keys: Sequence[str] | None = None,
    observations: Sequence[tuple[str, Any]] = (),
    who: str = "import",
) -> int:
    """Point project `name` at `data_path` (sha256 `data_sha256`, computed by the caller from
    the file it wrote), merge `settings` into its settings, add the pool and test items of the
    new rows and record `observations` [(key, label)], all in one transaction; returns the items
    added. StoreError, nothing written, when the project's data file is no longer the one
    (`replaces_sha256`) the new file was made from: another append came first."""
    with store.transaction() as s:
        project = project_access.get_project(s, name)
        if project.data_sha256 != replaces_sha256:
            raise StoreError(f"project {name!r}: its data file changed while rows were appended to it (another `pool add --append`?); "
                             "run the command again")  # fmt: skip
        project.data_path = str(Path(data_path).resolve())
        project.data_sha256 = data_sha256
        project.settings = {**(project.settings or {}), **settings}
        return insert_rows(s, project, pool_rows, pool_keys, test_rows, test_keys, observations, who=who, source="import")


def insert_rows(session: Session, project: Project, pool_rows: Sequence[int] | np.ndarray, pool_keys: Sequence[str] | None,
                test_rows: Sequence[int] | np.ndarray | None, test_keys: Sequence[str] | None,
                observations: Sequence[tuple[str, Any]], *, who: str, source: str) -> int:  # fmt: skip
    """The items of a table's rows, pool then test split, and their known labels, inside the
    caller's transaction (`PoolStore.import_pool`, `append_pool`); returns the items added.
    PostgreSQL's statistics of both tables are refreshed after (`bulk_sql.analyze`)."""
    added = item_access.insert_items(session, project.id, pool_rows, pool_keys)
    if test_rows is not None and len(test_rows):
        added += item_access.insert_items(session, project.id, test_rows, test_keys, split="test")
    if observations:
        label_access.record_observations(session, project, observations, who=who, source=source)
    analyze(session, Item.__table__, Observation.__table__)
    return added
