"""`PoolStore`: the one class that opens, migrates, reads and writes the activebayes database.

    store = PoolStore("sqlite:///study.db")          # embedded default
    store = PoolStore("postgresql+psycopg://user@host/db")
    store.create_project("digits", task="classification", classes=range(10),
                         data_path="digits.npz")
    store.add_items("digits", rows=range(1797))
    store.record_observations("digits", [("0", 3), ("1", 7)], who="ann", source="cli")

Every public method is one transaction (`PoolStore.transaction`, the only `session.begin()`), so a
process killed at any instant leaves the database as it was before or after a whole change. The
work inside it is done by the access functions, one module per concept: `project_access`,
`item_access`, `label_access`, `round_access`, `query_access` (and `bulk_sql` below them).

Opening: `engine` (accepted URLs, SQLite settings, errors as `StoreError`); schema versions and
automatic upgrades: `schema_version`; one round at a time per project: `round_lock`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from activebayes.errors import DataError, StoreError
from activebayes.store import item_access, label_access, lease_access, project_access, query_access, round_access
from activebayes.store.engine import (
    SUPPORTED_URLS,
    check_sqlite_file,
    is_disk_problem,
    is_read_only_problem,
    make_engine,
    session_factories,
    session_transaction,
    shown_url,
    unsupported_url,
    write_failure,
)
from activebayes.store.models import Project, RoundStatus
from activebayes.store.pool_append import insert_rows
from activebayes.store.records import ProjectInfo, QueryInfo, RoundInfo, _project_info, _round_info
from activebayes.store.round_lock import LOCK_HEARTBEAT_S, LOCK_ORPHAN_S, LOCK_STALE_S, LockHolder, RoundLockInfo, RoundLocks
from activebayes.store.schema_version import (
    SchemaMissingError,
    SchemaVersionError,
    alembic_config,
    migrate,
    require_sqlite_schema,
    schema_revision,
)

__all__ = [
    "LOCK_HEARTBEAT_S", "LOCK_ORPHAN_S", "LOCK_STALE_S", "SUPPORTED_URLS", "LockHolder", "PoolStore", "ProjectInfo",
    "QueryInfo", "RoundInfo", "RoundLockInfo", "SchemaMissingError", "SchemaVersionError", "alembic_config",
    "unsupported_url",
]  # fmt: skip


class PoolStore:
    """The activebayes database at a SQLAlchemy `url` (see the module docstring).

    Args:
        url: `sqlite:///path.db` (embedded default) or `postgresql+psycopg://...`; a bare path is
            taken as a SQLite file.
        upgrade: upgrade an older schema on open (default); False raises SchemaVersionError instead.
        create: create the schema in an empty database (default); False raises SchemaMissingError
            instead and writes nothing (for read-only use).
    """

    def __init__(
        self, url: str | Path = "sqlite:///activebayes.db", *, upgrade: bool = True, create: bool = True
    ) -> None:
        url = str(url)
        if "://" not in url:
            url = f"sqlite:///{url}"
        self.url = url
        reason = unsupported_url(url)
        if reason is not None:
            raise StoreError(f"url: {reason}; use {SUPPORTED_URLS}")
        if not create:
            require_sqlite_schema(url)
        else:
            check_sqlite_file(url)
        self.engine = None  # type: ignore[assignment]
        try:
            self.engine = make_engine(url)
            self._write_engine = self.engine.execution_options(activebayes_write=True)
            self._sessions, self._read_sessions = session_factories(self.engine)
            self._round_locks = RoundLocks(self.engine, url, self.transaction)
            migrate(self.engine, self._write_engine, url, upgrade=upgrade, create=create)
        except BaseException as exc:
            if self.engine is not None:
                self.engine.dispose()  # a store that failed to open keeps no connection
            if isinstance(exc, SQLAlchemyError):
                orig = getattr(exc, "orig", None)
                if is_disk_problem(orig) or is_read_only_problem(orig):
                    raise StoreError(write_failure(url, orig)) from exc
                reason = " ".join(str(orig or exc).split())
                raise StoreError(f"url: cannot open the database {shown_url(url)!r}: {reason}") from exc
            raise

    def schema_revision(self) -> str | None:
        """The database's schema revision (Alembic), None at base."""
        return schema_revision(self.engine)

    # ---- transactions -------------------------------------------------------------------
    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Session]:
        """The one place a transaction begins: commit on success, roll back on any error.

        Database errors surface as StoreError (a unique-key clash names the constraint).
        """
        with session_transaction(self._sessions if write else self._read_sessions, self.url) as session:
            yield session

    def close(self) -> None:
        """Stop the round lock's heartbeat and release the database connections."""
        if getattr(self, "_round_locks", None) is not None:
            self._round_locks.close()
        self.engine.dispose()

    def __enter__(self) -> PoolStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        """Add one item per data-file row, in one transaction (Core executemany in chunks)."""
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            return item_access.insert_items(s, project.id, rows, keys, split=split, consumable=consumable)

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

    # ---- labelling: checked appends and undo (`activebayes label`) ------------------------
    def label_states(self, name: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For each of `keys` that is an item: {"item_id", "split" ("pool"|"test"), "consumable",
        "label" (its current label, None when unlabelled)}; unknown keys are left out."""
        with self.transaction(write=False) as s:
            return label_access.label_states(s, project_access.get_project(s, name).id, keys)

    def record_labels(
        self,
        name: str,
        rows: Sequence[tuple[str, Any, int | None]],
        *,
        who: str,
        source: str,
        expected: dict[str, str | None],
        return_ids: bool = True,
        relabel: bool = False,
        per_labeller: bool = False,
    ) -> tuple[list[int | None], dict[str, tuple[str | None, str | None]]]:
        """Append `(key, label, round number or None)` rows in ONE transaction, as if after every
        writer that changed a label since the caller read `expected[key]` (with `label_states`):
        a row whose label the item has already is a repeat and is not written; a row whose item
        another writer relabelled meanwhile is refused unless `relabel` (`per_labeller`: each
        labeller's answer is their own). See `label_access.append_checked`.

        Returns (per row its new observation's id, None for a repeat — [] with `return_ids=False`
        — and {}); or ([], {key: (expected, now)}) having written nothing.
        """
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            round_ids: dict[int, int] = {}
            resolved = []
            for key, value, number in rows:
                if number is not None and number not in round_ids:
                    round_ids[number] = round_access.get_round(s, project, number).id
                resolved.append((key, value, round_ids[number] if number is not None else None))
            return label_access.append_checked(s, project, resolved, expected=expected, who=who, source=source,
                                               return_ids=return_ids, relabel=relabel, per_labeller=per_labeller)  # fmt: skip

    def retract_observation(self, name: str, observation_id: int) -> str:
        """Take back an answer just given (the prompt's `u`): delete observation `observation_id`,
        returning its item's key, so the item's label is what it was before. Refused (StoreError)
        once the answer's round is no longer waiting for answers. See `label_access.delete_observation`."""
        with self.transaction() as s:
            return label_access.delete_observation(s, project_access.get_project(s, name), int(observation_id))

    def round_answers(self, name: str, number: int) -> dict[str, list[tuple[str, str]]]:
        """{key: [(who, value)] in recording order} of the answers recorded for round `number`."""
        with self.transaction(write=False) as s:
            return label_access.round_answers(s, round_access.get_round(s, project_access.get_project(s, name), number).id)

    def answer_counts(self, name: str) -> list[tuple[str, int, Any, Any]]:
        """(who, answers, first, last) of each labeller of the project, most answers first."""
        with self.transaction(write=False) as s:
            return label_access.answer_counts(s, project_access.get_project(s, name).id)

    # ---- item leases of the labelling page (revision 0005; see `lease_access`) -------------------
    def lease_item(self, name: str, labeller: str, item_ids: Sequence[int], *, seconds: float, holders: int = 1,
                   round_number: int | None = None, waiting: bool = False) -> int | None:  # fmt: skip
        """Lease `labeller` the first of `item_ids` that fewer than `holders` others hold and that
        is still open in round `round_number` (its id; see `lease_access.lease_item`). With
        `waiting`, RoundNotWaitingError, nothing leased, when that round waits no longer."""
        with self.transaction() as s:
            project = project_access.get_project(s, name)
            find = round_access.waiting_round if waiting else round_access.get_round
            round_id = find(s, project, round_number).id if round_number is not None else None
            return lease_access.lease_item(s, project.id, labeller, item_ids, seconds=seconds, holders=holders, round_id=round_id)

    def release_leases(self, name: str, labeller: str) -> None:
        """End every lease `labeller` holds on the project's items (a page or prompt that stops)."""
        with self.transaction() as s:
            lease_access.release_leases(s, project_access.get_project(s, name).id, labeller)

    # ---- round locks (revision 0003; see `round_lock`) ------------------------------------------
    def round_lock(self, name: str) -> AbstractContextManager[RoundLockInfo]:
        """Hold project `name`'s round lock for the `with` block: no other process runs a round of
        it meanwhile (see `activebayes.store.round_lock`). Re-entrant within this store. Raises
        `RoundBusyError` (a StoreError) at once when another process holds it; a stale lock (its
        holder killed) is taken over, and the yielded `RoundLockInfo.taken_over` says whose."""
        return self._round_locks.hold(name)

    def round_lock_holder(self, name: str) -> LockHolder | None:
        """Who the database says holds project `name`'s round lock (stale or not), or None."""
        return self._round_locks.holder(name)
