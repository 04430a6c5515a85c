"""`PoolStore`'s methods on projects, their items and their labels (the class that opens the
database is `activebayes.store.store.PoolStore`; it inherits these).

Each method is one transaction (`PoolStore.transaction`); the work inside it is done by the access
functions of `project_access`, `item_access` and `label_access`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from activebayes.store import item_access, label_access, project_access, round_access
from activebayes.store.bulk_sql import analyze
from activebayes.store.models import Item, Project
from activebayes.store.pool_append import insert_rows
from activebayes.store.records import ProjectInfo, _project_info


class ProjectMethods:
    """Projects (create, attach data, import a pool, read, delete), items and labels."""

    url: str  # set by `PoolStore.__init__`
    transaction: Callable[..., AbstractContextManager[Session]]  # `PoolStore.transaction`

    # ---- projects -----------------------------------------------------------------------
    def create_project(
        self,
        name: str,
        *,
        task: str = "classification",
        classes: Iterable[Any] | None = None,
        data_path: str | Path | None = None,
        data_format: str | None = None,
        settings: dict[str, Any] | None = None,
        classes_from_data: bool = False,
    ) -> ProjectInfo:
        """Create a project; `classes` are stored as text ("0".."9" for range(10)). With
        `classes_from_data` a classification project may start without classes: `import_pool`
        records them (read from the data's labels)."""
        class_list = project_access.checked_classes(task, classes, classes_from_data)
        with self.transaction() as s:
            project = project_access.insert_project(s, name, task=task, classes=class_list, settings=settings, where=self.url)
            if data_path is not None:
                project_access.attach_data(project, data_path, data_format)
            return _project_info(project)

    def attach_data(
        self, name: str, data_path: str | Path, *, data_format: str | None = None, settings: dict[str, Any] | None = None
    ) -> ProjectInfo:
        """Record the project's data file (path, format, sha256) and merge `settings` (the loader
        options the loop reads: `label_column`, `key_column`, `image_layout`) into the project's;
        refused once items exist."""
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            project_access.attach_data_checked(s, project, data_path, data_format, settings)
            return _project_info(project)

    def import_pool(
        self,
        name: str,
        data_path: str | Path,
        *,
        pool_rows: Sequence[int] | np.ndarray,
        pool_keys: Sequence[str] | None = None,
        test_rows: Sequence[int] | np.ndarray | None = None,
        test_keys: Sequence[str] | None = None,
        observations: Sequence[tuple[str, Any]] = (),
        who: str = "",
        source: str = "import",
        data_format: str | None = None,
        settings: dict[str, Any] | None = None,
        classes: Sequence[Any] | None = None,
    ) -> int:
        """`attach_data` + `add_items` (pool, then test split) + `record_observations`, all in ONE
        transaction: a failure anywhere leaves the project as it was. Returns the items added.
        `classes` records the classes of a project created without them (`classes_from_data`)."""
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            if classes is not None:
                project_access.set_classes(project, classes)
            project_access.attach_data_checked(s, project, data_path, data_format, settings)
            return insert_rows(s, project, pool_rows, pool_keys, test_rows, test_keys, observations, who=who, source=source)

    def project(self, name: str) -> ProjectInfo:
        """Project `name`'s settings (StoreError naming the known projects when there is none)."""
        with self.transaction(write=False) as s:
            return _project_info(project_access.get_project(s, name))

    def projects(self) -> list[str]:
        """The names of every project in the database, sorted."""
        with self.transaction(write=False) as s:
            return list(s.scalars(select(Project.name).order_by(Project.name)))

    def delete_project(self, name: str) -> None:
        """Delete a project and everything recorded for it."""
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            s.execute(delete(Project).where(Project.id == project.id))

    def verify_data(self, name: str) -> Path:
        """The project's data file, after checking it still has the recorded sha256."""
        return project_access.verified_data_file(self.project(name))

    # ---- items and labels ---------------------------------------------------------------
    def add_items(
        self,
        name: str,
        *,
        rows: Sequence[int] | np.ndarray,
        keys: Sequence[str] | None = None,
        split: str = "pool",
        consumable: bool = True,
    ) -> int:
        """Add one item per data-file row, in one transaction (Core executemany in chunks; then
        PostgreSQL's statistics refreshed, `bulk_sql.analyze`)."""
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            added = item_access.insert_items(s, project.id, rows, keys, split=split, consumable=consumable)
            analyze(s, Item.__table__)
            return added

    def count_items(self, name: str, *, split: str | None = None) -> int:
        """How many items the project has ("pool", "test" or "eval" `split`; every split for None)."""
        with self.transaction(write=False) as s:
            return item_access.count_items(s, project_access.get_project(s, name).id, split)

    def record_observations(
        self,
        name: str,
        answers: Iterable[tuple[str, Any]] | Any,
        *,
        who: str = "",
        source: str = "",
        round_number: int | None = None,
        after: int | None = None,
    ) -> int:
        """Append answers `(key, value)` (or `Answer`s; skipped ones, value None, are ignored) in one
        transaction; returns how many were recorded (`label_access.record_observations`). `after`: the
        observations of `who` the project must hold, counted in it (`label_access.check_recorded_count`)."""
        pairs = [(a.key, a.value) if hasattr(a, "key") else (a[0], a[1]) for a in answers]
        pairs = [(k, v) for k, v in pairs if v is not None]
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            if after is not None:
                label_access.check_recorded_count(s, project.id, who, after)
            round_id = round_access.get_round(s, project, round_number).id if round_number is not None else None
            return label_access.record_observations(s, project, pairs, who=who, source=source, round_id=round_id)

    def labels(self, name: str, *, split: str = "pool") -> tuple[np.ndarray, list[str], list[str]]:
        """(rows [L], keys, values) of the labelled items of `split`, in item order."""
        with self.transaction(write=False) as s:
            return label_access.labelled(s, project_access.get_project(s, name).id, split)

    def candidates(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(item ids [N], rows [N]) of the items a round may query (see `item_access.candidates`)."""
        with self.transaction(write=False) as s:
            return item_access.candidates(s, project_access.get_project(s, name).id)

    def items(self, name: str, *, split: str | None = None, keys: Sequence[str] | None = None, with_keys: bool = True) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(item ids [N], rows [N], keys; [] without `with_keys`) of every item of the project (of `split`; with one of `keys`), by item id."""
        with self.transaction(write=False) as s:
            return item_access.all_items(s, project_access.get_project(s, name).id, split, keys, with_keys=with_keys)

    def record_evaluation_set(self, name: str, item_ids: Sequence[int], record: Mapping[str, Any], *, extends: int | None = None) -> None:
        """Move unlabelled pool items to the "eval" split (neither candidates nor training labels)
        and keep `record` (`activebayes.active_testing`) as settings["evaluation"], in one
        transaction; StoreError when one exists (unless `extends` = B, its size: `record` then
        continues it, and the candidates and eval items must still number its pool N) or an item
        is no unlabelled pool item."""
        with self.transaction() as s:
            item_access.make_evaluation_set(s, project_access.get_project(s, name), item_ids, record, extends=extends)

    def item_keys(self, name: str) -> set[str]:
        """Every item key of the project (e.g. for `FileOracle(..., keys=store.item_keys(name))`)."""
        with self.transaction(write=False) as s:
            return item_access.item_keys(s, project_access.get_project(s, name).id)

    def count_candidates(self, name: str) -> int:
        """How many items a round may still query."""
        with self.transaction(write=False) as s:
            return item_access.count_candidates(s, project_access.get_project(s, name).id)

    def count_labelled(self, name: str, *, split: str = "pool") -> int:
        """How many items of `split` have at least one observation."""
        with self.transaction(write=False) as s:
            return label_access.count_labelled(s, project_access.get_project(s, name).id, split)

    def observations(self, name: str) -> list[dict[str, Any]]:
        """Every observation of the project in recording order (for export and checks)."""
        with self.transaction(write=False) as s:
            return label_access.observations(s, project_access.get_project(s, name).id)
