"""Opening a database: which URLs are accepted, the checks made on a SQLite file before it is
opened, the SQLAlchemy engine with its connection settings, and the one transaction wrapper that
turns database errors into `StoreError`s.

SQLite: WAL journal, `foreign_keys=ON`, `busy_timeout` (writers wait for each other instead of
failing), `synchronous=NORMAL` (durable against a killed process; a power cut may lose the last
commits). Write transactions (an engine with the execution option `activebayes_write=True`)
start with BEGIN IMMEDIATE so concurrent writers serialise.

Only `sqlite:///path` and `postgresql+psycopg://...` URLs are accepted (`unsupported_url`); any
other driver is a StoreError naming both, before any import.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from activebayes.errors import DatabaseAwayError, StoreError

BUSY_TIMEOUT_MS = 60_000
CONNECT_TIMEOUT_S = 5  # PostgreSQL: seconds to wait for a server to answer a new connection
SUPPORTED_URLS = "sqlite:///path/to/file.db or postgresql+psycopg://user@host/dbname"
_SUPPORTED_DRIVERS = ("sqlite", "sqlite+pysqlite", "postgresql+psycopg")
DATABASE_AWAY = (DatabaseAwayError, OperationalError, InterfaceError)  # a server away, a connection dropped, a locked file


def database_cause(exc: BaseException) -> str:
    """The first line of why the database could not be used: its driver's message."""
    inner = exc.__cause__ if isinstance(exc, DatabaseAwayError) and exc.__cause__ is not None else exc
    return (str(getattr(inner, "orig", None) or inner).strip().splitlines() or [type(inner).__name__])[0]


def database_gone(exc: BaseException) -> str:
    """"the database cannot be reached (<its driver's first line>)", for one of DATABASE_AWAY."""
    return f"the database cannot be reached ({database_cause(exc)})"


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


def shown_url(url: str) -> str:
    """`url` for a message: the password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite `url`; None for another backend or an in-memory database."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def sqlite_tables(path: Path) -> set[str]:
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


def check_sqlite_file(url: str) -> None:
    """For a write: StoreError when the existing, non-empty SQLite file at `url` is not an SQLite
    database (random bytes, another format), before it is opened for writing (which would
    leave -wal and -shm files beside it)."""
    path = sqlite_file(url)
    if path is not None and (path.is_dir() or (path.is_file() and path.stat().st_size > 0)):
        sqlite_tables(path)


def is_disk_problem(orig: BaseException | None) -> bool:
    """Whether the driver error `orig` says the disk is full or the file too large."""
    text = str(orig or "").lower()
    return any(w in text for w in ("disk i/o error", "disk is full", "database or disk is full", "no space left", "file too large"))


def is_read_only_problem(orig: BaseException | None) -> bool:
    """Whether the driver error `orig` says the file or its folder cannot be written."""
    text = str(orig or "").lower()
    return "readonly" in text or "read-only" in text or "unable to open database file" in text


def write_failure(url: str, orig: BaseException | None) -> str:
    """The message of a write the database at `url` could not make (a full disk, a file size
    limit, a read-only file or folder); the transaction was rolled back."""
    reason = " ".join(str(orig).split())
    if is_disk_problem(orig):
        return (f"cannot write the database {shown_url(url)!r} ({reason}: the disk is full or the file too large), "
                "nothing was changed; free some space and run the command again")  # fmt: skip
    return (f"cannot write the database {shown_url(url)!r} ({reason}: the file or its folder is read-only), "
            "nothing was changed; make both writable (SQLite writes -wal and -shm files beside it)")  # fmt: skip


def make_engine(url: str) -> Engine:
    """The engine of `url`, with the connection settings of the module docstring."""
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


def session_factories(engine: Engine) -> tuple[sessionmaker, sessionmaker]:
    """(write, read) session factories of `engine`: the write one begins with BEGIN IMMEDIATE
    on SQLite; neither expires its objects on commit (they are read after the transaction)."""
    write = sessionmaker(engine.execution_options(activebayes_write=True), expire_on_commit=False)
    return write, sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_transaction(factory: sessionmaker, url: str) -> Iterator[Session]:
    """A session of `factory` inside one transaction: commit on success, roll back on any error.
    Database errors surface as StoreError (a unique-key clash names the constraint; a full disk
    or a read-only file says what to do)."""
    try:
        with factory() as session, session.begin():
            yield session
    except IntegrityError as exc:
        raise StoreError(f"database refused a duplicate or dangling reference: {exc.orig}") from exc
    except OperationalError as exc:
        if is_disk_problem(exc.orig) or is_read_only_problem(exc.orig):
            raise StoreError(write_failure(url, exc.orig)) from exc
        raise DatabaseAwayError(f"database error: {exc.orig}") from exc
    except InterfaceError as exc:  # a connection closed under the session
        raise DatabaseAwayError(f"database error: {exc.orig}") from exc
