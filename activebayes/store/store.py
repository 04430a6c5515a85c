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

This module opens and closes the store, begins its transactions and holds its round locks; the
methods that read and write are inherited, one class per area: `project_methods` (projects, items,
labels), `round_methods` (rounds, queries, scores), `labelling_methods` (checked label appends,
undo, leases).

Opening: `engine` (accepted URLs, SQLite settings, errors as `StoreError`); schema versions and
automatic upgrades: `schema_version`; one round at a time per project: `round_lock`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from activebayes.errors import StoreError
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
from activebayes.store.labelling_methods import LabellingMethods
from activebayes.store.project_methods import ProjectMethods
from activebayes.store.records import ProjectInfo, QueryInfo, RoundInfo
from activebayes.store.round_lock import LOCK_HEARTBEAT_S, LOCK_ORPHAN_S, LOCK_STALE_S, LockHolder, RoundLockInfo, RoundLocks
from activebayes.store.round_methods import RoundMethods
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


class PoolStore(ProjectMethods, RoundMethods, LabellingMethods):
    """The activebayes database at a SQLAlchemy `url` (see the module docstring); its reading and
    writing methods come from `ProjectMethods`, `RoundMethods` and `LabellingMethods`.

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

    def refresh_statistics(self) -> list[str]:
        """PostgreSQL: ANALYZE every activebayes table in one transaction, so that a database
        filled before imports refreshed the planner's statistics themselves (`bulk_sql.analyze`)
        plans its label joins by the rows it holds, not as nearly empty tables, without waiting
        for autovacuum; returns the tables analysed. Nothing on SQLite ([]): its plans here
        follow the indexes, and statistics (sqlite_stat1) would only add a way for them to change."""
        from activebayes.store.bulk_sql import analyze
        from activebayes.store.models import Base

        if self.engine.dialect.name != "postgresql":
            return []  # (no transaction: a read-only SQLite file stays readable by `migrate`)
        tables = Base.metadata.sorted_tables
        with self.transaction() as session:
            analyze(session, *tables)
        return [table.name for table in tables]

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
