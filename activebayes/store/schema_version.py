"""Schema versions (Alembic, `activebayes/store/migrations`): whether a database holds an
activebayes schema, at which revision, and bringing it to the newest.

On open, an empty database is created at the newest revision; a database at an OLDER revision is
upgraded automatically, in one transaction, before anything else runs (`upgrade=False` gives a
`SchemaVersionError` instead); a database at a revision this activebayes does not know (written
by a newer version) is refused with a `SchemaVersionError` that says to upgrade activebayes.

`create=False` opens only an existing activebayes database and writes nothing when there is
none: a missing or empty SQLite file, or a PostgreSQL database/schema without the activebayes
tables, raises `SchemaMissingError` (a SQLite file is probed read-only first, so it is neither
created nor switched to WAL).

Alembic itself (a third of a second to import) is loaded only when a database is not at the
newest revision: an open first reads the recorded revision with one select and compares it with
HEAD_REVISION, the newest migration's (a test checks it against the migrations).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, inspect, text

from activebayes.errors import StoreError
from activebayes.store.engine import shown_url, sqlite_file, sqlite_tables

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

_PG_MIGRATION_LOCK = 74_261_007  # pg_advisory_xact_lock key while migrating
#: the revision of the newest migration in `migrations/versions` (update it with each new one)
HEAD_REVISION = "0005"


class SchemaMissingError(StoreError):
    """`PoolStore(url, create=False)` found no activebayes database at `url` (nothing was written)."""


class SchemaVersionError(StoreError):
    """The schema revision of the database is not this activebayes's newest: `newer` (written by a
    newer activebayes) or older (refused with `upgrade=False`). `current` is None at base."""

    def __init__(self, message: str, *, current: str | None, head: str, newer: bool) -> None:
        super().__init__(message)
        self.current, self.head, self.newer = current, head, newer


def alembic_config() -> Config:
    """An Alembic Config pointing at the packaged migrations (no alembic.ini needed)."""
    from alembic.config import Config

    cfg = Config()
    location = str(Path(__file__).resolve().parent / "migrations")
    cfg.set_main_option("script_location", location.replace("%", "%%"))
    return cfg


def require_sqlite_schema(url: str) -> None:
    """For `create=False`: SchemaMissingError unless the SQLite file at `url` exists and holds an
    activebayes schema, checked through a read-only connection (the file is not created or
    changed). Other backends and in-memory databases are checked after connecting (`migrate`)."""
    path = sqlite_file(url)
    if path is None:
        return
    if not path.is_file():
        raise SchemaMissingError(f"no activebayes database at {shown_url(url)} (no file {str(path)!r})")
    if not sqlite_tables(path) & {"alembic_version", "projects"}:
        raise SchemaMissingError(f"no activebayes database at {shown_url(url)} (the file holds no activebayes tables)")


def revision_state(conn: Any, script: ScriptDirectory, url: str) -> tuple[str | None, str]:
    """(the database's revision, None at base; the newest revision); SchemaVersionError when the
    database's revision is one this activebayes does not know."""
    from alembic.runtime.migration import MigrationContext

    current = MigrationContext.configure(conn).get_current_revision()
    head = script.get_current_head()
    if current is not None and current != head:
        try:
            script.get_revision(current)
        except Exception:  # alembic raises several kinds for an unknown revision
            raise SchemaVersionError(
                f"database: schema revision {current!r} is newer than this activebayes knows "
                f"(newest {head!r}); upgrade activebayes to open {shown_url(url)!r}",
                current=current, head=head, newer=True,
            ) from None
    return current, head


def migrate(engine: Engine, write_engine: Engine, url: str, *, upgrade: bool, create: bool = True) -> None:
    """Bring the database of `engine` to the newest revision (see the module docstring):
    checked on a read transaction first, upgraded on `write_engine` in one transaction (on
    PostgreSQL under a transaction advisory lock, so concurrent openers migrate once)."""
    if recorded_revision(engine) == HEAD_REVISION:
        return  # at the newest revision: nothing for Alembic to check or do
    from alembic import command
    from alembic.script import ScriptDirectory

    cfg = alembic_config()
    script = ScriptDirectory.from_config(cfg)
    with engine.connect() as conn, conn.begin():
        current, head = revision_state(conn, script, url)
        if current is None and not create and not inspect(conn).has_table("alembic_version"):
            if not inspect(conn).has_table("projects"):
                raise SchemaMissingError(f"no activebayes database at {shown_url(url)} (it has no activebayes tables)")
    if current == head:
        return
    with write_engine.connect() as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        current, head = revision_state(conn, script, url)  # again, under the lock
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


def schema_revision(engine: Engine) -> str | None:
    """The revision of the database of `engine`, None at base."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn, conn.begin():
        return MigrationContext.configure(conn).get_current_revision()


def recorded_revision(engine: Engine) -> str | None:
    """The one revision recorded in the database's alembic_version table, read without Alembic;
    None when there is no such table or it holds no row or several (Alembic then decides)."""
    with engine.connect() as conn, conn.begin():
        if not inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(text("SELECT version_num FROM alembic_version")).fetchall()
    return str(rows[0][0]) if len(rows) == 1 else None
