"""Options that several commands share, declared once as `Annotated` aliases.

    def command(ctx: typer.Context, device: Device = "auto", db: CommandDb = None) -> None: ...

The root options (--db, --project, --json, --quiet) are declared here and used by the root
callback in `main.py`; --json and --quiet reach every command through
`ActiveBayesGroup.install_late_flags`, so no command declares them again. A command that takes a
database of its own (`init --db`, `design memory-span --db`) uses `CommandDb`, which defaults to
None (the global --db). `given(ctx, name)` tells an option the user gave from its default.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Optional

import typer

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def database_url(value: str | None) -> str | None:
    """--db as given, or, for the path of a SQLite file (a name ending in .db, .sqlite or
    .sqlite3, and no `://`: `labels.db`, `/data/x.sqlite`), its URL `sqlite:///labels.db`."""
    if value is None or "://" in value or not value.lower().endswith(SQLITE_SUFFIXES):
        return value
    return f"sqlite:///{value}"


DbUrl = Annotated[
    str,
    typer.Option("--db", envvar="ACTIVEBAYES_DB", callback=database_url,
                 help="Database URL (sqlite:///file.db or postgresql+psycopg://…), or a SQLite file's path (file.db)."),
]
ProjectName = Annotated[
    Optional[str],
    typer.Option("--project", envvar="ACTIVEBAYES_PROJECT", help="Project name (default: the only one in the database)."),
]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or notes.")]

CommandDb = Annotated[
    Optional[str], typer.Option("--db", callback=database_url, help="Database URL or SQLite file for this command (default: the global --db).")
]
Device = Annotated[str, typer.Option("--device", help="auto (CUDA when present), cpu or cuda.")]


class EngineName(str, Enum):
    """The engines of --engine: a choice, so that a misspelt one gets the closest (`_app.close_choice`)."""

    local = "local"
    ray = "ray"


Engine = Annotated[EngineName, typer.Option("--engine", help="local (this machine) or ray (a Ray cluster; pip install 'activebayes[ray]').")]
Address = Annotated[Optional[str], typer.Option("--address", help="With --engine ray: auto or ray://host:port of a running cluster (default: a local Ray).")]

def show_model_guess(where: str) -> Any:
    """The --show-model-guess flag of a command where a person answers (the labelling page, the
    prompt, the round or evaluation file, Label Studio's tasks), its help naming `where` the guess
    shows: the round's prediction is hidden unless asked for."""
    return Annotated[bool, typer.Option(
        "--show-model-guess",
        help=f"Show the model's prediction for each item (class and probability, or mean ± sd) {where}. Off by default: "
             "the queries are the items the model is unsure or wrong about, and its guess pulls the answer towards it "
             "(the prediction is recorded either way).",
    )]  # fmt: skip


def given(ctx: Any, name: str) -> bool:
    """Whether the parameter `name` of `ctx`'s command was given (command line, environment,
    prompt) rather than left at its default. Reads the parameter source by its enum member's
    name, so no private Typer module is imported."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


__all__ = ["Address", "CommandDb", "DbUrl", "database_url", "Device", "Engine", "EngineName", "Json", "ProjectName", "Quiet", "show_model_guess", "given"]
