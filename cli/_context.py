"""The small context object every command finds on `ctx.obj`: database URL, project, output."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from activebayes_cli._app import CliError
from activebayes_cli._output import Output

if TYPE_CHECKING:
    from activebayes.store import PoolStore

DEFAULT_DB = "sqlite:///activebayes.db"


def sqlite_path(url: str) -> Path | None:
    """The file behind an `sqlite:///…` URL, or None for another backend or an in-memory database."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise CliError(f"--db: {url!r} is not a database URL", "use e.g. sqlite:///activebayes.db") from exc
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


@dataclass
class CliState:
    """Global options, shared by every command through `ctx.obj`."""

    db: str = DEFAULT_DB
    project: str | None = None
    out: Output = field(default_factory=Output)
    _store: PoolStore | None = field(default=None, repr=False)

    def store(self, *, create: bool = False) -> PoolStore:
        """Open the store at --db. Unless `create`, an sqlite file must already exist: a
        read-only or failing command never leaves a new empty database behind."""
        if self._store is not None:
            return self._store
        path = sqlite_path(self.db)
        if path is not None and not create and not path.exists():
            raise CliError(f"no database at {path}", "run `activebayes init` first, or pass --db / ACTIVEBAYES_DB")
        if path is not None and create and not path.parent.exists():
            raise CliError(f"--db: the folder {path.parent} does not exist", "create it or choose another path")
        from activebayes.store import PoolStore

        self._store = PoolStore(self.db)
        return self._store

    def project_name(self) -> str:
        """--project, or the only project in the database (else an error listing the names)."""
        store = self.store()
        names = store.projects()
        if self.project is not None:
            if self.project not in names:
                known = ", ".join(names) if names else "none yet"
                raise CliError(
                    f"no project named {self.project!r} in {self.db} (projects: {known})",
                    "pass --project NAME with one of them, or create it with `activebayes init --name NAME`",
                )
            return self.project
        if len(names) == 1:
            return names[0]
        if not names:
            raise CliError(f"the database {self.db} holds no project", "run `activebayes init --name NAME` first")
        raise CliError(
            f"the database holds {len(names)} projects ({', '.join(names)})",
            "choose one with --project NAME or ACTIVEBAYES_PROJECT",
        )

    def close(self) -> None:
        if self._store is not None:
            close = getattr(self._store, "close", None)
            if close is not None:
                close()
            self._store = None


def state(ctx: typer.Context) -> CliState:
    """The CliState of the current invocation (set by the root callback)."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj
