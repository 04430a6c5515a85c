"""`PoolStore`: the one class that opens, migrates, reads and writes the activebayes database.

    store = PoolStore("sqlite:///study.db")          # embedded default
    store = PoolStore("postgresql+psycopg://user@host/db")
    store.create_project("digits", task="classification", classes=range(10),
                         data_path="digits.npz")
    store.add_items("digits", rows=range(1797))
    store.record_observations("digits", [("0", 3), ("1", 7)], who="ann", source="cli")

Every public method is one transaction (`PoolStore.transaction`, the only `session.begin()`), so a
process killed at any instant leaves the database as it was before or after a whole change.

SQLite: WAL journal, `foreign_keys=ON`, `busy_timeout` (writers wait for each other instead of
failing), `synchronous=NORMAL` (durable against a killed process; a power cut may lose the last
commits). Write transactions start with BEGIN IMMEDIATE so concurrent writers serialise.

Schema versions (Alembic, `activebayes/store/migrations`): on open, an empty database is created
at the newest revision; a database at an OLDER revision is upgraded automatically, in one
transaction, before anything else runs (pass `upgrade=False` to get a StoreError instead); a
database at a revision this activebayes does not know (written by a newer version) is refused
with a StoreError that says to upgrade activebayes (both are `SchemaVersionError`).

`PoolStore(url, create=False)` opens only an existing activebayes database and writes nothing
when there is none: a missing or empty SQLite file, or a PostgreSQL database/schema without the
activebayes tables, raises `SchemaMissingError` (a SQLite file is probed read-only first, so it is
neither created nor switched to WAL). Only `sqlite:///path` and `postgresql+psycopg://...` URLs are
accepted (`unsupported_url`); any other driver is a StoreError naming both, before any import.

Round locks (`PoolStore.round_lock`, revision 0003): one process at a time runs a round of a
project; another gets a `RoundBusyError` naming the round and its holder (pid, host, since when).
PostgreSQL: a session advisory lock keyed by (database, schema, project), held on a connection of its own for
the round's duration (a killed holder's session ends and the server frees it); the
`round_locks` row only names the holder. SQLite: the `round_locks` row is the lock, written in a
BEGIN IMMEDIATE transaction and refreshed by a heartbeat thread; a row is stale, and taken over,
once its holder's pid is gone from this host (or a zombie), or its heartbeat is older than
LOCK_STALE_S for a holder on another host (LOCK_ORPHAN_S on this host: a pid reused meanwhile).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, delete, event, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from activebayes.errors import DataError, RoundBusyError, StoreError
from activebayes.store import access
from activebayes.store.models import Item, Project, Round, RoundLock, RoundStatus, utcnow
from activebayes.store.records import ProjectInfo, QueryInfo, RoundInfo, _project_info, _round_info

BUSY_TIMEOUT_MS = 60_000
CONNECT_TIMEOUT_S = 5  # PostgreSQL: seconds to wait for a server to answer a new connection
_PG_MIGRATION_LOCK = 74_261_007  # pg_advisory_xact_lock key while migrating
# pg_try_advisory_lock(key) while a round runs: advisory locks are server-wide, so the key hashes
# the database and schema with the project id (project 1 of one schema must not lock another's)
_PG_ROUND_LOCK_KEY = ("hashtextextended(current_database() || '/' || current_schema() || '/round/' || CAST(:p AS text), "
                      "74261008)")
LOCK_HEARTBEAT_S = 15.0  # a SQLite round lock's holder refreshes its heartbeat this often
LOCK_STALE_S = 120.0  # a holder on another host whose heartbeat is older is gone
LOCK_ORPHAN_S = 900.0  # a holder on this host whose pid runs but whose heartbeat is older: pid reused
_PG_DYING_S = 5.0  # PostgreSQL: wait this long for the server to free the lock of a holder that died
_HOST = socket.gethostname()
_HELD_TOKENS: set[str] = set()  # the round locks this process holds, through any PoolStore
SUPPORTED_URLS = "sqlite:///path/to/file.db or postgresql+psycopg://user@host/dbname"
_SUPPORTED_DRIVERS = ("sqlite", "sqlite+pysqlite", "postgresql+psycopg")


class SchemaMissingError(StoreError):
    """`PoolStore(url, create=False)` found no activebayes database at `url` (nothing was written)."""


class SchemaVersionError(StoreError):
    """The schema revision of the database is not this activebayes's newest: `newer` (written by a
    newer activebayes) or older (refused with `upgrade=False`). `current` is None at base."""

    def __init__(self, message: str, *, current: str | None, head: str, newer: bool) -> None:
        super().__init__(message)
        self.current, self.head, self.newer = current, head, newer


def unsupported_url(url: str) -> str | None:
    """Why `url` is not a database URL activebayes can open (see SUPPORTED_URLS), or None.
    Decided from the URL's text alone: no driver is imported."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return f"{url!r} is not a database URL"
    if parsed.drivername not in _SUPPORTED_DRIVERS:
        return (
            f"unsupported database URL scheme {parsed.drivername + '://'!r} "
            "(activebayes opens SQLite files, and PostgreSQL through psycopg 3)"
        )
    return None


def _shown(url: str) -> str:
    """`url` for a message: the password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def _require_sqlite_schema(url: str) -> None:
    """For `create=False`: SchemaMissingError unless the SQLite file at `url` exists and holds an
    activebayes schema, checked through a read-only connection (the file is not created or
    changed). Other backends and in-memory databases are checked after connecting."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return
    path = Path(database)
    if not path.is_file():
        raise SchemaMissingError(f"no activebayes database at {_shown(url)} (no file {str(path)!r})")
    tables = _sqlite_tables(path)
    if not tables & {"alembic_version", "projects"}:
        raise SchemaMissingError(f"no activebayes database at {_shown(url)} (the file holds no activebayes tables)")


def _sqlite_tables(path: Path) -> set[str]:
    """The table names of the SQLite file at `path`, read through a read-only connection (the
    file is not created or changed); StoreError when the file is not an SQLite database."""
    if path.is_dir():
        raise StoreError(f"url: {str(path)!r} is a folder, not an SQLite database file; check the url")
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.OperationalError as exc:
        if "unable to open" not in str(exc):
            raise StoreError(f"url: {str(path)!r} is not an SQLite database ({exc}); check the url") from exc
        raise StoreError(  # a WAL database is read through its -shm file, made beside it on first use
            f"url: cannot open {str(path)!r} ({exc}): the file is unreadable or its folder read-only; "
            "make the file readable and its folder writable (SQLite writes -wal and -shm files beside it)"
        ) from exc
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"url: {str(path)!r} is not an SQLite database ({exc}); check the url") from exc


def _check_sqlite_file(url: str) -> None:
    """For a write: StoreError when the existing, non-empty SQLite file at `url` is not an SQLite
    database (random bytes, another format), before it is opened for writing (which would
    leave -wal and -shm files beside it)."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return
    path = Path(database)
    if path.is_dir() or (path.is_file() and path.stat().st_size > 0):
        _sqlite_tables(path)


def _disk_problem(orig: BaseException | None) -> bool:
    text = str(orig or "").lower()
    return any(w in text for w in ("disk i/o error", "disk is full", "database or disk is full", "no space left", "file too large"))


def _read_only_problem(orig: BaseException | None) -> bool:
    text = str(orig or "").lower()
    return "readonly" in text or "read-only" in text or "unable to open database file" in text


def alembic_config() -> Config:
    """An Alembic Config pointing at the packaged migrations (no alembic.ini needed)."""
    cfg = Config()
    location = str(Path(__file__).resolve().parent / "migrations")
    cfg.set_main_option("script_location", location.replace("%", "%%"))
    return cfg


def _make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        # a server that accepts the connection but never answers (or a host that drops packets)
        # fails after CONNECT_TIMEOUT_S instead of hanging; a connect_timeout in the URL wins
        connect_args = {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_TIMEOUT_S}
        return create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    database = parsed.database or ""
    memory = database in ("", ":memory:") or "mode=memory" in str(parsed)
    if not memory and not Path(database).parent.exists():
        raise StoreError(f"url: the folder of the SQLite file {database!r} does not exist")
    kwargs: dict[str, Any] = {"poolclass": StaticPool} if memory else {}
    engine = create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000}, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, below
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        if not memory:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("activebayes_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) a round lock: `pid` on `host`, since `started_at`, last heard of at
    `heartbeat` (SQLite only; PostgreSQL's advisory lock needs none)."""

    pid: int
    host: str
    started_at: datetime
    heartbeat: datetime

    def text(self) -> str:
        return f"pid {self.pid} on host {self.host} at {_utc(self.started_at):%Y-%m-%d %H:%M:%S} UTC"


@dataclass
class RoundLockInfo:
    """A round lock this process holds (what `PoolStore.round_lock` yields). `taken_over`: the
    holder of a stale lock this one replaced, and `stale_reason` why it was stale (None when the
    lock was free). `lost`: SQLite only, another process took the lock over meanwhile (this
    holder's heartbeat stopped for longer than the stale timeout)."""

    project: str
    project_id: int
    token: str
    holder: LockHolder
    taken_over: LockHolder | None = None
    stale_reason: str | None = None
    lost: bool = False
    depth: int = field(default=0, repr=False)
    _conn: Any = field(default=None, repr=False)
    _stop: threading.Event | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)


def _utc(moment: datetime) -> datetime:
    """`moment` as aware UTC (SQLite hands back naive datetimes, written as UTC)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def _pid_running(pid: int) -> bool:
    """Whether process `pid` of this host runs (a zombie, killed but not yet reaped, does not)."""
    if os.name == "nt":  # os.kill(pid, 0) would end it: trust the heartbeat there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X", "x")
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(0) answered


def _holder(row: RoundLock) -> LockHolder:
    return LockHolder(int(row.pid), str(row.host), _utc(row.started_at), _utc(row.heartbeat))


def _stale_reason(holder: LockHolder, token: str) -> str | None:
    """Why the lock row of `holder` (with `token`) no longer holds, or None while it does."""
    silent = (utcnow() - holder.heartbeat).total_seconds()
    if holder.host != _HOST:
        return f"no heartbeat from host {holder.host} for {silent:.0f} s" if silent > LOCK_STALE_S else None
    if holder.pid == os.getpid():
        return None if token in _HELD_TOKENS else "left by this process"
    if not _pid_running(holder.pid):
        return f"process {holder.pid} is no longer running"
    return f"no heartbeat for {silent:.0f} s (pid {holder.pid} reused)" if silent > LOCK_ORPHAN_S else None


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
        self._round_locks: dict[str, RoundLockInfo] = {}  # held by this store, by project name
        self._lock_engine: Engine | None = None  # SQLite file: the round locks' own connections
        reason = unsupported_url(url)
        if reason is not None:
            raise StoreError(f"url: {reason}; use {SUPPORTED_URLS}")
        if not create:
            _require_sqlite_schema(url)
        else:
            _check_sqlite_file(url)
        self.engine = None  # type: ignore[assignment]
        try:
            self.engine = _make_engine(url)
            self._write_engine = self.engine.execution_options(activebayes_write=True)
            self._sessions = sessionmaker(self._write_engine, expire_on_commit=False)
            self._read_sessions = sessionmaker(self.engine, expire_on_commit=False)
            self._migrate(upgrade, create)
        except BaseException as exc:
            if self.engine is not None:
                self.engine.dispose()  # a store that failed to open keeps no connection
            if isinstance(exc, SQLAlchemyError):
                orig = getattr(exc, "orig", None)
                if _disk_problem(orig) or _read_only_problem(orig):
                    raise StoreError(self._write_failure(orig)) from exc
                reason = " ".join(str(orig or exc).split())
                raise StoreError(f"url: cannot open the database {_shown(url)!r}: {reason}") from exc
            raise

    # ---- schema -------------------------------------------------------------------------
    def _revision_state(self, conn: Any, script: ScriptDirectory) -> tuple[str | None, str]:
        current = MigrationContext.configure(conn).get_current_revision()
        head = script.get_current_head()
        if current is not None and current != head:
            try:
                script.get_revision(current)
            except Exception:  # alembic raises several kinds for an unknown revision
                raise SchemaVersionError(
                    f"database: schema revision {current!r} is newer than this activebayes knows "
                    f"(newest {head!r}); upgrade activebayes to open {_shown(self.url)!r}",
                    current=current, head=head, newer=True,
                ) from None
        return current, head

    def _migrate(self, upgrade: bool, create: bool = True) -> None:
        cfg = alembic_config()
        script = ScriptDirectory.from_config(cfg)
        with self.engine.connect() as conn, conn.begin():
            current, head = self._revision_state(conn, script)
            if current is None and not create and not inspect(conn).has_table("alembic_version"):
                if not inspect(conn).has_table("projects"):
                    raise SchemaMissingError(f"no activebayes database at {_shown(self.url)} (it has no activebayes tables)")
        if current == head:
            return
        with self._write_engine.connect() as conn, conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            current, head = self._revision_state(conn, script)  # again, under the lock
            if current == head:
                return
            if current is None and inspect(conn).has_table("projects"):
                raise StoreError("database: has a 'projects' table but no activebayes schema version; use another database")
            older = current is not None or inspect(conn).has_table("alembic_version")  # base = downgraded
            if older and not upgrade:
                raise SchemaVersionError(
                    f"database: schema revision {current or 'base'!r} is older than {head!r}; open with upgrade=True",
                    current=current, head=head, newer=False,
                )
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def schema_revision(self) -> str | None:
        with self.engine.connect() as conn, conn.begin():
            return MigrationContext.configure(conn).get_current_revision()

    # ---- transactions -------------------------------------------------------------------
    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Session]:
        """The one place a transaction begins: commit on success, roll back on any error.

        Database errors surface as StoreError (a unique-key clash names the constraint).
        """
        factory = self._sessions if write else self._read_sessions
        with self._transaction(factory) as session:
            yield session

    @contextmanager
    def _transaction(self, factory: sessionmaker) -> Iterator[Session]:
        try:
            with factory() as session, session.begin():
                yield session
        except IntegrityError as exc:
            raise StoreError(f"database refused a duplicate or dangling reference: {exc.orig}") from exc
        except OperationalError as exc:
            if _disk_problem(exc.orig) or _read_only_problem(exc.orig):
                raise StoreError(self._write_failure(exc.orig)) from exc
            raise StoreError(f"database error: {exc.orig}") from exc

    def _write_failure(self, orig: BaseException | None) -> str:
        """The message of a write the database could not make (a full disk, a file size limit,
        a read-only file or folder); the transaction was rolled back."""
        reason = " ".join(str(orig).split())
        if _disk_problem(orig):
            return (f"cannot write the database {_shown(self.url)!r} ({reason}: the disk is full or the file too large), "
                    "nothing was changed; free some space and run the command again")  # fmt: skip
        return (f"cannot write the database {_shown(self.url)!r} ({reason}: the file or its folder is read-only), "
                "nothing was changed; make both writable (SQLite writes -wal and -shm files beside it)")  # fmt: skip

    def close(self) -> None:
        for lock in list(getattr(self, "_round_locks", {}).values()):
            self._round_locks.pop(lock.project, None)
            self._release_round_lock(lock)
        if getattr(self, "_lock_engine", None) is not None:
            self._lock_engine.dispose()
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
        if task not in ("classification", "regression", "design"):
            raise StoreError(f"task: expected classification, regression or design, got {task!r}")
        class_list = [str(c) for c in classes] if classes is not None else None
        if task == "classification" and not class_list and not (classes_from_data and class_list is None):
            raise StoreError("classes: a classification project needs its class names (e.g. range(10))")
        if class_list is not None and len(set(class_list)) != len(class_list):
            raise StoreError(f"classes: expected distinct names, got {class_list}")
        with self.transaction() as s:
            if s.scalar(select(Project.id).where(Project.name == name)) is not None:
                raise StoreError(f"project: {name!r} already exists in {self.url!r}")
            project = Project(name=name, task=task, classes=class_list, settings=dict(settings or {}))
            s.add(project)
            s.flush()
            if data_path is not None:
                self._attach(project, data_path, data_format)
            return _project_info(project)

    @staticmethod
    def _attach(project: Project, data_path: str | Path, data_format: str | None) -> None:
        from activebayes.data import detect_format, sha256_file

        path = Path(data_path).resolve()
        project.data_path = str(path)
        project.data_format = data_format or detect_format(path)
        project.data_sha256 = sha256_file(path)

    def attach_data(
        self, name: str, data_path: str | Path, *, data_format: str | None = None, settings: dict[str, Any] | None = None
    ) -> ProjectInfo:
        """Record the project's data file (path, format, sha256) and merge `settings` (the loader
        options the loop reads: `label_column`, `key_column`, `image_layout`) into the project's;
        refused once items exist."""
        with self.transaction() as s:
            project = access.get_project(s, name)
            self._attach_checked(s, project, data_path, data_format, settings)
            return _project_info(project)

    def _attach_checked(self, s: Session, project: Project, data_path: str | Path, data_format: str | None,
                        settings: dict[str, Any] | None) -> None:  # fmt: skip
        if project.data_path is not None and s.scalar(select(Item.id).where(Item.project_id == project.id).limit(1)):
            raise StoreError(f"project {project.name!r}: already has items from {project.data_path!r}; create a new project")
        self._attach(project, data_path, data_format)
        if settings:
            project.settings = {**(project.settings or {}), **settings}

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
            project = access.get_project(s, name)
            if classes is not None:
                class_list = [str(c) for c in classes]
                if project.classes is not None and [str(c) for c in project.classes] != class_list:
                    raise StoreError(f"project {name!r}: already has the classes {project.classes}, not {class_list}")
                if len(class_list) < 1 or len(set(class_list)) != len(class_list):
                    raise StoreError(f"classes: expected distinct names, got {class_list}")
                project.classes = class_list
            self._attach_checked(s, project, data_path, data_format, settings)
            added = access.insert_items(s, project.id, pool_rows, pool_keys)
            if test_rows is not None and len(test_rows):
                added += access.insert_items(s, project.id, test_rows, test_keys, split="test")
            if observations:
                access.record_observations(s, project, observations, who=who, source=source)
            return added

    def project(self, name: str) -> ProjectInfo:
        with self.transaction(write=False) as s:
            return _project_info(access.get_project(s, name))

    def projects(self) -> list[str]:
        with self.transaction(write=False) as s:
            return list(s.scalars(select(Project.name).order_by(Project.name)))

    def delete_project(self, name: str) -> None:
        """Delete a project and everything recorded for it."""
        with self.transaction() as s:
            project = access.get_project(s, name)
            s.execute(delete(Project).where(Project.id == project.id))

    def verify_data(self, name: str) -> Path:
        """The project's data file, after checking it still has the recorded sha256."""
        from activebayes.data import sha256_file

        info = self.project(name)
        if info.data_path is None:
            raise DataError(f"project {name!r}: has no data file; add one with `PoolStore.attach_data` and `add_items`")
        path = Path(info.data_path)
        if not path.is_file():
            raise DataError(
                f"data file {str(path)!r} of project {name!r} is missing" + (" (a folder is there)" if path.exists() else "")
                + "; restore the file the pool was added from, or create a new project"
            )
        digest = sha256_file(path)
        if digest != info.data_sha256:
            raise DataError(
                f"data file {str(path)!r} changed since project {name!r} recorded it "
                f"(sha256 {info.data_sha256[:12]}... now {digest[:12]}...); restore it or create a new project"
            )
        return path

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
            project = access.get_project(s, name)
            return access.insert_items(s, project.id, rows, keys, split=split, consumable=consumable)

    def count_items(self, name: str, *, split: str | None = None) -> int:
        from sqlalchemy import func

        with self.transaction(write=False) as s:
            project = access.get_project(s, name)
            stmt = select(func.count(Item.id)).where(Item.project_id == project.id)
            if split is not None:
                stmt = stmt.where(Item.split == split)
            return int(s.scalar(stmt) or 0)

    def record_observations(
        self,
        name: str,
        answers: Iterable[tuple[str, Any]] | Any,
        *,
        who: str = "",
        source: str = "",
        round_number: int | None = None,
    ) -> int:
        """Append answers `(key, value)` (or `Answer`s; skipped ones, value None, are ignored) in one
        transaction; returns how many were recorded. See `access.record_observations`."""
        pairs = [(a.key, a.value) if hasattr(a, "key") else (a[0], a[1]) for a in answers]
        pairs = [(k, v) for k, v in pairs if v is not None]
        with self.transaction() as s:
            project = access.get_project(s, name)
            round_id = access.get_round(s, project, round_number).id if round_number is not None else None
            return access.record_observations(s, project, pairs, who=who, source=source, round_id=round_id)

    def labels(self, name: str, *, split: str = "pool") -> tuple[np.ndarray, list[str], list[str]]:
        """(rows [L], keys, values) of the labelled items of `split`, in item order."""
        with self.transaction(write=False) as s:
            return access.labelled(s, access.get_project(s, name).id, split)

    def candidates(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(item ids [N], rows [N]) of the items a round may query (see `access.candidates`)."""
        with self.transaction(write=False) as s:
            return access.candidates(s, access.get_project(s, name).id)

    def item_keys(self, name: str) -> set[str]:
        """Every item key of the project (e.g. for `FileOracle(..., keys=store.item_keys(name))`)."""
        with self.transaction(write=False) as s:
            stmt = select(Item.key).where(Item.project_id == access.get_project(s, name).id)
            return {row[0] for row in access._core_rows(s, stmt)}

    def count_candidates(self, name: str) -> int:
        """How many items a round may still query."""
        with self.transaction(write=False) as s:
            return access.count_candidates(s, access.get_project(s, name).id)

    def count_labelled(self, name: str, *, split: str = "pool") -> int:
        """How many items of `split` have at least one observation."""
        with self.transaction(write=False) as s:
            return access.count_labelled(s, access.get_project(s, name).id, split)

    def observations(self, name: str) -> list[dict[str, Any]]:
        """Every observation of the project in recording order (for export and checks)."""
        from activebayes.store.models import Observation

        with self.transaction(write=False) as s:
            project = access.get_project(s, name)
            stmt = (
                select(Observation.id, Item.key, Observation.value, Observation.who, Observation.source,
                       Observation.round_id, Observation.created_at)
                .join(Item, Item.id == Observation.item_id)
                .where(Item.project_id == project.id)
                .order_by(Observation.id)
            )  # fmt: skip
            cols = ("id", "key", "value", "who", "source", "round_id", "created_at")
            return [dict(zip(cols, r)) for r in s.execute(stmt)]

    # ---- rounds -------------------------------------------------------------------------
    def rounds(self, name: str) -> list[RoundInfo]:
        with self.transaction(write=False) as s:
            project = access.get_project(s, name)
            stmt = select(Round).where(Round.project_id == project.id).order_by(Round.number)
            return [_round_info(r) for r in s.scalars(stmt)]

    def latest_round(self, name: str) -> RoundInfo | None:
        with self.transaction(write=False) as s:
            found = access.latest_round(s, access.get_project(s, name).id)
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
            project = access.get_project(s, name)
            last = access.latest_round(s, project.id)
            if last is not None and not RoundStatus(last.status).finished:
                raise StoreError(f"project {name!r}: round {last.number} is still {last.status!r}; finish it first")
            rnd = Round(
                project_id=project.id, number=(last.number + 1) if last else 1, posterior=posterior,
                posterior_settings=dict(posterior_settings or {}), acquisition=acquisition,
                acquisition_settings=dict(acquisition_settings or {}), status=RoundStatus.started.value,
                labelled_count=access.count_labelled(s, project.id), seed=int(seed), metrics={}, timings={},
            )  # fmt: skip
            s.add(rnd)
            s.flush()
            return _round_info(rnd)

    def advance_round(self, name: str, number: int, status: str, **fields: Any) -> RoundInfo:
        """Move round `number` to `status`, updating `metrics`, `timings` (merged) or `failure_reason`."""
        with self.transaction() as s:
            rnd = access.get_round(s, access.get_project(s, name), number)
            if "timings" in fields:
                fields["timings"] = {**(rnd.timings or {}), **fields["timings"]}
            access.set_status(s, rnd, status, **fields)
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
        with self.transaction(write=False) as s:
            rnd = access.get_round(s, access.get_project(s, name), number)
            return [QueryInfo(*q) for q in access.round_queries(s, rnd.id)]

    def record_answers(
        self, name: str, number: int, answers: Iterable[tuple[str, Any]], *, who: str, source: str, complete: bool
    ) -> int:
        """Record a round's answers and, when `complete`, move it to "answered" — one transaction."""
        pairs = [(k, v) for k, v in answers if v is not None]
        with self.transaction() as s:
            project = access.get_project(s, name)
            rnd = access.get_round(s, project, number)
            recorded = access.record_observations(s, project, pairs, who=who, source=source, round_id=rnd.id)
            if complete:
                access.set_status(s, rnd, RoundStatus.answered)
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
    ) -> RoundInfo:
        """`record_queries`, and in the same transaction the score of every candidate the round
        scored (`candidate_ids` [N] item ids, `candidate_scores` [N]; see `RoundScores`).
        Without them (a random round) this is `record_queries` exactly."""
        if (candidate_ids is None) != (candidate_scores is None):
            raise DataError("candidate_ids, candidate_scores: pass both or neither")
        with self.transaction() as s:
            rnd = access.get_round(s, access.get_project(s, name), number)
            access.insert_queries(s, rnd.id, item_ids, scores, predictions)
            if candidate_ids is not None:
                access.insert_round_scores(s, rnd.id, candidate_ids, candidate_scores)
            access.set_status(s, rnd, RoundStatus.scored, timings={**(rnd.timings or {}), **timings})
            return _round_info(rnd)

    def round_scores(self, name: str, number: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(item ids [N] int64, scores [N] float32) of every candidate round `number` scored, in
        candidate order; None for a round without stored scores (random, or recorded before 0002)."""
        with self.transaction(write=False) as s:
            rnd = access.get_round(s, access.get_project(s, name), number)
            return access.read_round_scores(s, rnd.id)

    def scored_rounds(self, name: str) -> list[int]:
        """The numbers of the rounds that stored every candidate's score, ascending (no arrays read)."""
        from activebayes.store.models import RoundScores

        with self.transaction(write=False) as s:
            project = access.get_project(s, name)
            stmt = (
                select(Round.number)
                .join(RoundScores, RoundScores.round_id == Round.id)
                .where(Round.project_id == project.id)
                .order_by(Round.number)
            )
            return list(s.scalars(stmt))

    # ---- labelling: checked appends and undo (`activebayes label`) ------------------------
    def label_states(self, name: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For each of `keys` that is an item: {"item_id", "split" ("pool"|"test"), "consumable",
        "label" (its current label, None when unlabelled)}; unknown keys are left out."""
        with self.transaction(write=False) as s:
            return access.label_states(s, access.get_project(s, name).id, keys)

    def record_labels(
        self,
        name: str,
        rows: Sequence[tuple[str, Any, int | None]],
        *,
        who: str,
        source: str,
        expected: dict[str, str | None],
        return_ids: bool = True,
    ) -> tuple[list[int], dict[str, tuple[str | None, str | None]]]:
        """Append `(key, label, round number or None)` rows in ONE transaction, provided every
        key's current label is still `expected[key]` (as the caller read it with `label_states`).

        Returns (the new observations' ids — [] with `return_ids=False`, faster for a big file —
        and {}); or ([], {key: (expected, now)}) having written nothing when another writer
        changed a label meanwhile. See `access.append_checked`.
        """
        with self.transaction() as s:
            project = access.get_project(s, name)
            round_ids: dict[int, int] = {}
            resolved = []
            for key, value, number in rows:
                if number is not None and number not in round_ids:
                    round_ids[number] = access.get_round(s, project, number).id
                resolved.append((key, value, round_ids[number] if number is not None else None))
            return access.append_checked(
                s, project, resolved, expected=expected, who=who, source=source, return_ids=return_ids
            )

    def retract_observation(self, name: str, observation_id: int) -> str:
        """Take back an answer just given (the prompt's `u`): delete observation `observation_id`,
        returning its item's key, so the item's label is what it was before. Refused (StoreError)
        once the answer's round is no longer waiting for answers. See `access.delete_observation`."""
        with self.transaction() as s:
            return access.delete_observation(s, access.get_project(s, name), int(observation_id))

    # ---- round locks (revision 0003) ------------------------------------------------------------
    @contextmanager
    def round_lock(self, name: str) -> Iterator[RoundLockInfo]:
        """Hold project `name`'s round lock for the `with` block: no other process runs a round of
        it meanwhile (see the module docstring). Re-entrant within this store. Raises
        `RoundBusyError` (a StoreError) at once when another process holds it; a stale lock (its
        holder killed) is taken over, and the yielded `RoundLockInfo.taken_over` says whose."""
        held = self._round_locks.get(name)
        if held is not None:
            held.depth += 1
            try:
                yield held
            finally:
                held.depth -= 1
            return
        with self._lock_transaction(write=False) as s:
            project_id = access.get_project(s, name).id
        me = LockHolder(os.getpid(), _HOST, utcnow(), utcnow())
        lock = RoundLockInfo(name, project_id, uuid.uuid4().hex, me)
        if self.engine.dialect.name == "postgresql":
            self._acquire_pg_lock(lock)
        else:
            self._acquire_sqlite_lock(lock)
        self._round_locks[name] = lock
        try:
            yield lock
        finally:
            if self._round_locks.get(name) is lock:
                del self._round_locks[name]
                self._release_round_lock(lock)

    def _lock_transaction(self, *, write: bool = True) -> Any:
        """`transaction` for the round locks. A SQLite file: on an engine of their own, so that
        the lock's statements and heartbeat never share a connection with the caller's work."""
        if self.engine.dialect.name != "sqlite" or isinstance(self.engine.pool, StaticPool):
            return self.transaction(write=write)
        if self._lock_engine is None:
            self._lock_engine = _make_engine(self.url)
            self._lock_sessions = (sessionmaker(self._lock_engine.execution_options(activebayes_write=True), expire_on_commit=False),
                                   sessionmaker(self._lock_engine, expire_on_commit=False))  # fmt: skip
        return self._transaction(self._lock_sessions[0] if write else self._lock_sessions[1])

    def round_lock_holder(self, name: str) -> LockHolder | None:
        """Who the database says holds project `name`'s round lock (stale or not), or None."""
        with self._lock_transaction(write=False) as s:
            row = s.get(RoundLock, access.get_project(s, name).id)
            return _holder(row) if row is not None else None

    def _busy(self, s: Session, lock: RoundLockInfo, holder: LockHolder | None) -> RoundBusyError:
        latest = access.latest_round(s, lock.project_id)
        if latest is None:
            number = 1
        else:
            number = latest.number + 1 if RoundStatus(latest.status).finished else latest.number
        who = f"started by {holder.text()}" if holder is not None else "started by another session"
        return RoundBusyError(
            f"round {number} of project {lock.project!r} is running ({who}); wait for it to finish, or stop "
            "that process (the next round takes over a lock left by a killed process)",
            project=lock.project, number=number, pid=holder.pid if holder else None,
            host=holder.host if holder else None, started_at=holder.started_at if holder else None,
        )  # fmt: skip

    def _write_lock_row(self, s: Session, lock: RoundLockInfo, row: RoundLock | None) -> None:
        me = lock.holder
        if row is None:
            s.add(RoundLock(project_id=lock.project_id, token=lock.token, pid=me.pid, host=me.host,
                            started_at=me.started_at, heartbeat=me.heartbeat))  # fmt: skip
        else:
            row.token, row.pid, row.host, row.started_at, row.heartbeat = lock.token, me.pid, me.host, me.started_at, me.heartbeat

    def _acquire_sqlite_lock(self, lock: RoundLockInfo) -> None:
        with self._lock_transaction() as s:  # BEGIN IMMEDIATE: one writer decides at a time
            row = s.get(RoundLock, lock.project_id)
            if row is not None:
                holder = _holder(row)
                reason = _stale_reason(holder, row.token)
                if reason is None:
                    raise self._busy(s, lock, holder)
                lock.taken_over, lock.stale_reason = holder, reason
            self._write_lock_row(s, lock, row)
        _HELD_TOKENS.add(lock.token)
        if not isinstance(self.engine.pool, StaticPool):  # an in-memory database has no other process
            lock._stop = threading.Event()
            lock._thread = threading.Thread(target=self._heartbeat, args=(lock,), name="activebayes-round-lock", daemon=True)
            lock._thread.start()

    def _heartbeat(self, lock: RoundLockInfo) -> None:
        table = RoundLock.__table__
        assert lock._stop is not None
        while not lock._stop.wait(LOCK_HEARTBEAT_S):
            try:
                with self._lock_transaction() as s:
                    stmt = (table.update().where(table.c.project_id == lock.project_id, table.c.token == lock.token)
                            .values(heartbeat=utcnow()))  # fmt: skip
                    if s.execute(stmt).rowcount == 0:
                        lock.lost = True
                        return
            except Exception:  # noqa: BLE001 - a busy or vanished database: try again at the next beat
                continue

    def _acquire_pg_lock(self, lock: RoundLockInfo) -> None:
        conn = self.engine.connect()  # holds the session advisory lock until released or the process dies
        try:
            deadline = time.monotonic() + _PG_DYING_S
            while True:
                got = conn.execute(text(f"SELECT pg_try_advisory_lock({_PG_ROUND_LOCK_KEY})"), {"p": lock.project_id}).scalar()
                conn.commit()  # the lock is the session's: no transaction stays open
                if got:
                    break
                with self._lock_transaction(write=False) as s:
                    row = s.get(RoundLock, lock.project_id)
                    holder = _holder(row) if row is not None else None
                    # no row: its holder is between taking the lock and naming itself (milliseconds),
                    # or was killed there and the server has not yet ended its session
                    dying = holder is None or (holder.host == _HOST and not _pid_running(holder.pid))
                    if not dying or time.monotonic() > deadline:
                        raise self._busy(s, lock, holder)
                time.sleep(0.1)  # its holder died: the server frees the lock when it notices
            with self._lock_transaction() as s:
                row = s.get(RoundLock, lock.project_id)
                if row is not None:  # its writer no longer holds the advisory lock
                    lock.taken_over = _holder(row)
                    if lock.taken_over.host == _HOST and not _pid_running(lock.taken_over.pid):
                        lock.stale_reason = f"process {lock.taken_over.pid} is no longer running"
                    else:
                        lock.stale_reason = "its database session ended"
                self._write_lock_row(s, lock, row)
        except BaseException:
            conn.close()
            raise
        lock._conn = conn
        _HELD_TOKENS.add(lock.token)

    def _release_round_lock(self, lock: RoundLockInfo) -> None:
        """Give the lock up, best effort: a lock row left behind is stale once this process ends."""
        _HELD_TOKENS.discard(lock.token)
        if lock._stop is not None and lock._thread is not None:
            lock._stop.set()
            lock._thread.join(timeout=BUSY_TIMEOUT_MS / 1000)
        table = RoundLock.__table__
        try:
            with self._lock_transaction() as s:
                s.execute(table.delete().where(table.c.project_id == lock.project_id, table.c.token == lock.token))
        except (StoreError, SQLAlchemyError):
            pass
        if lock._conn is not None:
            try:
                lock._conn.execute(text(f"SELECT pg_advisory_unlock({_PG_ROUND_LOCK_KEY})"), {"p": lock.project_id})
                lock._conn.commit()
            except SQLAlchemyError:
                pass
            finally:
                lock._conn.close()
                lock._conn = None
