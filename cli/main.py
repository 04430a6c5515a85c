"""Entry point: `activebayes`. Each command group lives in its own module and is joined here."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from activebayes import __version__

app = typer.Typer(
    name="activebayes",
    help="Bayesian active learning and experimental design: choose what to label or measure next.",
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"activebayes {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
) -> None:
    """activebayes: choose what to label or measure next."""


@app.command()
def demo(fast: Annotated[bool, typer.Option("--fast", help="Fewer rounds, for a quick look.")] = False) -> None:
    """Run the main job end to end on the embedded default (not built yet)."""
    typer.echo("activebayes demo: not built yet; the active-learning and memory-span demos land with the CLI issue.")
