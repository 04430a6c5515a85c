"""Entry point: `activebayes`. Each command group lives in its own module and is joined here.

Global options: --db URL (env ACTIVEBAYES_DB), --project NAME (env ACTIVEBAYES_PROJECT) and
--version go before the command; the flags --json and --quiet/-q go before OR after it
(`activebayes --json status` = `activebayes status --json`). That is implemented once, in
`activebayes_cli._app.ActiveBayesGroup.install_late_flags`: before parsing, every command that
does not define the flag itself is given a copy of the root option whose callback switches the
shared `Output` on, so click parses it like any other option (an option's value is never taken
for it) and each command's --help lists it. No command module declares --json or --quiet.

--db accepts sqlite:///path/to/file.db and postgresql+psycopg://user@host/dbname only; anything
else (mysql://, postgresql+asyncpg://, postgresql:// (psycopg2), sqlite:// in memory) is a
one-line mistake naming both, decided before any driver is imported.

Errors are turned into one line and exit code 2 in one place, `ActiveBayesGroup.main`: `error:
what; fix` on stderr, or under --json `{"error": "what; fix", "exit_code": 2}`.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from activebayes import __version__
from activebayes_cli import delete, demo, design, evaluate, export, label, pool, project, report, round_, serve, study
from activebayes_cli._app import ActiveBayesGroup, command_group
from activebayes_cli._context import DEFAULT_DB, CliState
from activebayes_cli._options import DbUrl, Json, ProjectName, Quiet
from activebayes_cli._output import Output

app = command_group(
    name="activebayes",
    cls=ActiveBayesGroup,
    help="Bayesian active learning and experimental design: choose what to label or measure next.",
    epilog="\b\nA first project (README.md, 'Quick start on the command line'):\n"
    "  activebayes init --name NAME\n  activebayes pool add FILE.csv --label-column LABEL\n"
    "  activebayes round       (writes NAME-round-1.csv to fill in)\n  activebayes label --from NAME-round-1.csv\n"
    "  activebayes status      (where it stands, and what to do next)",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's help, as most tools take it
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"activebayes {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    db: DbUrl = DEFAULT_DB,
    project: ProjectName = None,
    json_output: Json = False,
    quiet: Quiet = False,
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
) -> None:
    """activebayes: choose what to label or measure next."""
    source = ctx.get_parameter_source("db")
    typed = source is not None and source.name == "COMMANDLINE"
    given = typed or (source is not None and source.name == "ENVIRONMENT")
    out = Output(json=json_output, quiet=quiet)
    cli_state = CliState(db=db, project=project, out=out, db_typed=typed, db_given=given, command=ctx.invoked_subcommand)
    ctx.obj = cli_state
    ctx.call_on_close(cli_state.close)


app.add_typer(project.app)
app.add_typer(export.app)
app.add_typer(pool.app, name="pool", help="Register data files as the pool of candidates.")
app.add_typer(round_.app)
app.add_typer(label.app)
app.add_typer(evaluate.app)
app.add_typer(report.app)
app.add_typer(delete.app)
app.add_typer(demo.app)
app.add_typer(design.design_app, name="design", short_help="Bayesian experimental design (memory span).")
app.add_typer(study.app, name="study")
app.add_typer(serve.app)


if __name__ == "__main__":
    app()
