"""`activebayes report`: the learning curve and the acquisition scores of a project, as PNG files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from activebayes_cli._app import CliError
from activebayes_cli._context import state

app = typer.Typer()

METRIC_PREFERENCE = ("accuracy", "test_accuracy", "nll", "test_nll")


def pick_metric(rounds) -> str | None:
    """The metric a learning curve shows: test accuracy when the rounds recorded it."""
    recorded = {key for r in rounds for key, value in r.metrics.items() if isinstance(value, (int, float))}
    return next((m for m in METRIC_PREFERENCE if m in recorded), None)


@app.command()
def report(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="Folder for the PNG files (created).")] = Path("activebayes-report"),
    all_projects: Annotated[bool, typer.Option("--all", help="One learning curve per project of the database, on one plot.")] = False,
) -> None:
    """Write learning-curve.png (metric against labelled items) and acquisition.png (scores)."""
    from activebayes.report import curve_from_rounds, plot_acquisition_histogram, plot_learning_curves

    st = state(ctx)
    if out.exists() and not out.is_dir():
        raise CliError(f"--out: {out} is a file", "pass a folder")
    store = st.store()
    name = st.project_name()
    rounds = store.rounds(name)
    if not rounds:
        raise CliError(f"project {name!r} has no rounds yet", "run `activebayes round` first")
    written: list[str] = []
    metric = pick_metric(rounds)
    if metric is not None:
        names = store.projects() if all_projects else [name]
        curves = {}
        for project in names:
            project_rounds = store.rounds(project)
            label = project if all_projects else f"{rounds[-1].posterior} + {rounds[-1].acquisition}"
            curves[label] = curve_from_rounds(
                [{"labelled": r.labelled_count, **r.metrics} for r in project_rounds], metric=metric, x_key="labelled"
            )
        title = "learning curves" if all_projects else name
        written.append(
            str(plot_learning_curves(curves, out / "learning-curve.png", ylabel=metric.replace("_", " "), title=title))
        )
    else:
        st.out.note("no round recorded a test metric (add a test split with `pool add --test-fraction`); no learning curve")
    scored = [r for r in rounds if r.labelled_count > 0 and r.acquisition != "random"]  # cold start/random: no scores
    per_round = {r.number: [q.score for q in store.queries(name, r.number)] for r in scored}
    scores = [s for values in per_round.values() for s in values]
    if scores:
        last = max(per_round)
        written.append(
            str(
                plot_acquisition_histogram(
                    scores, out / "acquisition.png", chosen=per_round[last], acquisition=rounds[-1].acquisition,
                    title=f"{name}: scores of the queried items (lines: round {last})",
                )
            )
        )  # fmt: skip
    else:
        st.out.note("no round scored the pool with an acquisition function yet; no acquisition histogram")
    st.out.result({"project": name, "files": written}, lambda c: [c.print(f"wrote {path}") for path in written])
