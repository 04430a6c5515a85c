"""The small context object every command finds on `ctx.obj`: database URL, project, output.

Opening the store (`CliState.store`) is where the CLI decides what a command may do to the
database:

    st.store()                 read-only: never creates tables, never upgrades the schema
                               (status, export, report); no database -> one line, exit 2
    st.store(upgrade=True)     a command that writes: an older schema is upgraded first
    st.store(create=True)      `init` (and `design`): creates the database when there is none

Hints for the user's next command come from `CliState.next_command("round", ...)`, which adds
`--project NAME` whenever the database holds more than one project. While the store is open, the
library's notes (warnings on the `activebayes` logger, such as a rebuilt feature cache) are
printed as the command's notes (`LibraryNotes`).
"""

from __future__ import annotations

import logging
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from activebayes_cli._app import CliError, closest
from activebayes_cli._output import Output

if TYPE_CHECKING:
    from activebayes.store import PoolStore

DEFAULT_DB = "sqlite:///activebayes.db"
DB_FIX = "use sqlite:///path/to/file.db or postgresql+psycopg://user@host/dbname (--db or ACTIVEBAYES_DB)"
_NAMED_COMMAND = re.compile(r"`activebayes (?!--db |--help`)")  # a command a line names, not naming its --db already


def shown_url(url: str) -> str:
    """A database URL for a message: the password hidden."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a malformed URL is shown as given
        return url


def check_db_url(url: str) -> None:
    """CliError unless `url` is a URL the CLI can use: SQLite on a file, or PostgreSQL through
    psycopg (3). Decided from the text alone, before any driver is imported or anything opened."""
    from sqlalchemy.engine import make_url

    from activebayes.store.store import unsupported_url

    reason = unsupported_url(url)
    if reason is not None:
        raise CliError(f"--db: {reason}", DB_FIX)
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() == "sqlite" and (
        database in ("", ":memory:") or database.startswith("file:") or "mode=memory" in str(parsed)
    ):
        raise CliError(
            f"--db: {url!r} is not a SQLite file (an in-memory or URI-form database does not outlive one command)",
            "use sqlite:///path/to/file.db",
        )


def check_device(device: str) -> None:
    """A --device the library refuses (`activebayes._device.resolve_device`) as a one-line
    mistake naming the flag, before anything is written."""
    from activebayes._device import resolve_device
    from activebayes.errors import ConfigError

    try:
        resolve_device(device)
    except ConfigError as exc:
        what = str(exc).split("; ")[0].split(": ", 1)[-1]  # the library names its argument `device`
        raise CliError(f"--device {device}: {what}", "pass --device cpu, or auto (CUDA when present)") from exc


def sqlite_path(url: str) -> Path | None:
    """The file behind an `sqlite:///…` URL, or None for another backend or an in-memory database."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise CliError(f"--db: {url!r} is not a database URL", DB_FIX) from exc
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


class LibraryNotes(logging.Handler):
    """Warnings the library logs on the `activebayes` logger, as one-line notes of the command."""

    def __init__(self, out: Output) -> None:
        super().__init__(logging.WARNING)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        self.out.note(record.getMessage())


@dataclass
class CliState:
    """Global options, shared by every command through `ctx.obj`."""

    db: str = DEFAULT_DB
    project: str | None = None
    out: Output = field(default_factory=Output)
    db_typed: bool = False  # --db was given on the command line: the hints repeat it, so that they work as typed
    db_given: bool = False  # --db or ACTIVEBAYES_DB was given (not the default file): a simulation records there
    command: str | None = None  # the command run (`round`; `pool` for `pool add`), for hints that name it
    _store: PoolStore | None = field(default=None, repr=False)
    _notes: LibraryNotes | None = field(default=None, repr=False)

    def store(self, *, create: bool = False, upgrade: bool = False) -> PoolStore:
        """Open the store at --db (once per command; later calls return the same store).

        Default: read-only use — a missing or empty database (SQLite file or PostgreSQL
        database/schema) is a CliError and nothing is written, not even the schema; a database at
        an older schema revision is refused with the fix `activebayes migrate`. `upgrade`: the
        command writes anyway, so an older schema is upgraded first. `create` (init): the database
        and its tables are created when absent (implies `upgrade`)."""
        if self._store is not None:
            return self._store
        check_db_url(self.db)
        path = sqlite_path(self.db)
        if path is not None and create and not path.parent.exists():
            raise CliError(f"--db: the folder {path.parent} does not exist", "create it or choose another path")
        from activebayes.errors import StoreError
        from activebayes.store import PoolStore
        from activebayes.store.store import SchemaMissingError, SchemaVersionError

        shown = shown_url(self.db)
        try:
            self._store = PoolStore(self.db, create=create, upgrade=create or upgrade)
        except SchemaMissingError:
            init = self.command_line("init", "--name", "NAME")
            other = "or check the --db you gave" if self.db_typed else "or pass --db / ACTIVEBAYES_DB"
            raise CliError(f"no activebayes database at {shown}", f"run `{init}` first, {other}") from None
        except SchemaVersionError as exc:
            if exc.newer:
                raise CliError(
                    f"the database at {shown} has schema revision {exc.current!r}, newer than this activebayes "
                    f"knows (newest {exc.head!r})",
                    "upgrade activebayes (e.g. pip install -U activebayes) to use it",
                ) from None
            raise CliError(
                f"the database at {shown} has schema revision {exc.current or 'base'!r}, older than this "
                f"activebayes ({exc.head!r})",
                "upgrade it with `activebayes migrate`",
            ) from None
        except StoreError as exc:
            if not str(exc).startswith("url: "):
                raise
            raise CliError(f"--db: {str(exc).removeprefix('url: ').split('; ')[0]}", DB_FIX) from exc  # the library's `url`
        if self._notes is None:
            self._notes = LibraryNotes(self.out)
            logging.getLogger("activebayes").addHandler(self._notes)
        return self._store

    def project_name(self) -> str:
        """--project, or the only project in the database (else an error listing the names)."""
        store = self.store()
        names = store.projects()
        if self.project is not None:
            if self.project not in names:
                known = ", ".join(names) if names else "none yet"
                meant = closest(self.project, names)
                raise CliError(
                    f"no project named {self.project!r} in {shown_url(self.db)} (projects: {known})",
                    (f"did you mean --project {shlex.quote(meant)}? " if meant else "")
                    + "pass --project NAME with one of them, or create it with `activebayes init --name NAME`",
                )
            return self.project
        if len(names) == 1:
            return names[0]
        if not names:
            raise CliError(f"the database {shown_url(self.db)} holds no project", "run `activebayes init --name NAME` first")
        example = self.command_line("--project", shlex.quote(names[0]), self.command or "COMMAND")
        raise CliError(
            f"the database holds {len(names)} projects ({', '.join(names)})",
            f"choose one with --project NAME before the command (`{example} ...`) or ACTIVEBAYES_PROJECT",
        )

    def db_words(self) -> list[str]:
        """["--db", URL] when the command line gave --db (a hint repeats it so as to work as typed), else []."""
        return ["--db", shlex.quote(shown_url(self.db))] if self.db_typed else []

    def command_line(self, *words: str) -> str:
        """"activebayes [--db URL] WORDS": a command a hint names, with the --db the command line
        gave (`db_words`); the words as given (shell-quote a name first)."""
        return " ".join(["activebayes", *self.db_words(), *words])

    def as_typed(self, line: str) -> str:
        """`line` (an error's or a note's text) with each command it names in backquotes
        (`activebayes init --name NAME`) given the --db the command line gave, as `command_line`
        gives it to the hints built here; unchanged when the database came from ACTIVEBAYES_DB or
        the default, and for a command that names its --db already."""
        return _NAMED_COMMAND.sub(lambda _: f"`{self.command_line()} ", line) if self.db_typed else line

    def next_command(self, *words: str, project: str | None = None) -> str:
        """The command line a hint suggests, e.g. next_command("round", "--oracle", "truth") ->
        "activebayes round --oracle truth", or "activebayes --project digits round --oracle truth"
        when the database holds more than one project, with `--db URL` first when the command
        line gave it (so that the hint works as typed).

        `project`: the project the hint is about (default: --project, or the only one). Each word
        is shell-quoted; pass placeholders such as "FILE" as they are."""
        parts = []
        if len(self.store().projects()) > 1:
            parts += ["--project", shlex.quote(project if project is not None else self.project_name())]
        return self.command_line(*parts, *(shlex.quote(word) for word in words))

    def answer_commands(self, project: str, number: int) -> str:
        """The two ways to answer round `number`'s open queries, as a hint: "`activebayes label
        --from <project>-round-N.csv` or `activebayes label`" (the file `activebayes round` wrote
        by default); "`activebayes label --from FILE` (the round's file)" where no file of that
        name is here (`round --csv PATH` wrote another, or it was written in another folder)."""
        from activebayes_cli._output import round_csv_name

        default = round_csv_name(project, number)
        if Path(default).exists():
            return f"`{self.next_command('label', '--from', default)}` or `{self.next_command('label')}`"
        return f"`{self.next_command('label', '--from')} FILE` (the round's file) or `{self.next_command('label')}`"

    def close(self) -> None:
        if self._notes is not None:
            logging.getLogger("activebayes").removeHandler(self._notes)
            self._notes = None
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
