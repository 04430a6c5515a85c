"""`activebayes report`: the learning curve and the acquisition scores of a project, as PNG files.

    learning-curve.png  the test metric (accuracy; regression: RMSE) against labelled items;
                        one colour per posterior + acquisition, each change marked
                        (`activebayes.report.learning_figure`), and the estimate from each
                        round's chosen labels with its 95 % band (in the metric's possible
                        range, as `status` shows it; a round still open, or failed before all
                        its answers came in, is left out, noted; no band at all, noted why)
    acquisition.png     one panel per acquisition function: the scores of every candidate of the
                        latest round that used it, on its own axis and unit, the queried items
                        marked (`activebayes.report.acquisition_figure`)

Read-only: the command writes nothing to the database, and checks everything it can before
writing a file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import state
from activebayes_cli._design_project import refuse_design

app = command_group()

METRIC_PREFERENCE = ("accuracy", "test_accuracy", "rmse", "test_rmse", "nll", "test_nll")


def pick_metric(rounds) -> str | None:
    """The metric a learning curve shows: test accuracy (regression: test RMSE) when the rounds
    recorded it, as the estimate from the chosen labels is of it; NLL only for rounds that
    recorded neither. One figure on one axis, as `--all` overlays projects: the NLL stays in
    `status`."""
    recorded = {key for r in rounds for key, value in r.metrics.items() if isinstance(value, (int, float))}
    return next((m for m in METRIC_PREFERENCE if m in recorded), None)


def _check_out(out: Path) -> None:
    """--out must be a folder, or creatable as one (no file on its way)."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise CliError(f"--out: {folder} is a file", "pass a folder")
            return


def latest_scored_rounds(rounds: list[Any], scored: set[int]) -> dict[str, Any]:
    """acquisition name -> the latest round of it that stored every candidate's score, ordered by
    that round's number."""
    latest = {r.acquisition: r for r in rounds if r.number in scored}
    return dict(sorted(latest.items(), key=lambda item: item[1].number))


def histogram_panels(store: Any, name: str, rounds: list[Any], task: str) -> tuple[list[Any], list[str]]:
    """(one `HistogramSeries` per acquisition, notes about acquisitions that have none)."""
    from activebayes.report import histogram_series

    latest = latest_scored_rounds(rounds, set(store.scored_rounds(name)))
    panels = []
    for acquisition, rnd in latest.items():
        ids, scores = store.round_scores(name, rnd.number)
        queried = [q.item_id for q in store.queries(name, rnd.number)]
        title = f"{acquisition}: round {rnd.number} ({rnd.posterior}, {rnd.labelled_count} labelled)"
        panels.append(histogram_series(acquisition, rnd.number, ids, scores, queried, task=task, title=title))
    scoring = {r.acquisition for r in rounds if r.labelled_count > 0 and r.acquisition != "random"}
    notes = [
        f"no stored candidate scores for {acquisition} (its rounds predate them or did not finish scoring);"
        " no histogram for it"
        for acquisition in sorted(scoring - set(latest))
    ]
    return panels, notes


def estimate_band(store: Any, name: str, rounds: list[Any], metric: str | None) -> tuple[list[tuple[float, float, float, float]], list[str]]:
    """([(labelled, estimate, low, high)] of each round's estimate from its chosen labels
    (`activebayes_cli._estimates`) of the plotted metric (accuracy or rmse; none for another),
    notes on the rounds left out). The estimate is drawn inside the metric's possible range, as
    `status` shows it (`activebayes.round_estimates.nearest_possible`); an estimate on part of
    its round's answers (the round still open, or failed before the rest came in) is left out,
    with a note, as is one whose interval has no upper end (an RMSE from under 3 random draws)."""
    from activebayes.round_estimates import RANGES, nearest_possible
    from activebayes_cli._estimates import round_estimates

    info = store.project(name)
    figure = "accuracy" if info.task == "classification" else "rmse"
    if metric not in (None, figure):
        return [], []
    band, notes = [], []
    estimates = round_estimates(store, name, info, rounds)
    for r, estimate in estimates:
        e = getattr(estimate, figure)
        if e is None:
            continue
        if estimate.partial:
            notes.append(f"round {r.number}'s estimate is left out of the learning curve ({estimate.note})")
            continue
        if not math.isfinite(e.high):
            notes.append(f"round {r.number}'s estimate is left out of the learning curve (its interval has no upper end: fewer than 3 of its labels were drawn at random)")
            continue
        band.append((r.labelled_count, nearest_possible(e.value, RANGES[figure]), e.low, e.high))
    if not band and not notes:  # say why there is no band at all
        why = "no round fitted a model yet"
        if estimates:
            r, estimate = estimates[-1]
            why = f"no round has an estimate from its chosen labels (round {r.number}: {estimate.reason or 'none'})"
        notes.append(f"no estimate band in the learning curve: {why}")
    return band, notes


@app.command(short_help="Write the learning-curve and acquisition plots.")
def report(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="Folder for the PNG files (created).")] = Path("activebayes-report"),
    all_projects: Annotated[bool, typer.Option("--all", help="One learning curve per project of the database, on one plot.")] = False,
) -> None:
    """Write learning-curve.png (metric against labelled items, each posterior/acquisition change
    marked) and acquisition.png (one histogram of every candidate's score per acquisition)."""
    from activebayes.report import combination_segments, plot_acquisition_histograms, plot_learning_segments, round_mapping

    st = state(ctx)
    _check_out(out)
    store = st.store()
    name = st.project_name()
    refuse_design(st, name, store.project(name), "report")
    rounds = store.rounds(name)
    if not rounds:
        raise CliError(f"project {name!r} has no rounds yet", f"run `{st.next_command('round', project=name)}` first")
    metric = pick_metric(rounds)
    band, band_notes = estimate_band(store, name, rounds, metric)
    metric = metric or (("accuracy" if store.project(name).task == "classification" else "rmse") if band else None)
    curves = {}
    if metric is not None:
        for project in store.projects() if all_projects else [name]:
            project_rounds = rounds if project == name else store.rounds(project)
            curves[project] = combination_segments([round_mapping(r) for r in project_rounds], metric=metric)
    panels, notes = histogram_panels(store, name, rounds, store.project(name).task)
    written: list[str] = []
    try:
        if metric is not None:
            title = "learning curves" if all_projects else name
            path = out / "learning-curve.png"
            written.append(str(plot_learning_segments(curves, path, ylabel=metric.replace("_", " "), title=title, estimate=band)))
        if panels:
            path = out / "acquisition.png"
            title = f"{name}: every candidate's score, latest round of each acquisition"
            written.append(str(plot_acquisition_histograms(panels, path, title=title)))
    except OSError as exc:
        raise CliError(f"--out: cannot write {exc.filename or out}: {exc.strerror or exc}", "choose a writable folder") from exc
    if metric is None:
        st.out.note("no round recorded a test metric (add a test split with `pool add --test-fraction`); no learning curve")
    for note in [*band_notes, *notes] if metric is not None else notes:  # no curve: nothing was left out of it
        st.out.note(note)
    if not panels:
        st.out.note("no round stored its candidates' acquisition scores yet; no acquisition histogram")
    histograms = [
        {"acquisition": p.acquisition, "round": p.round, "candidates": p.n_candidates, "queried": len(p.queried)}
        for p in panels
    ]
    st.out.result(
        {"project": name, "files": written, "histograms": histograms},
        lambda c: [c.print(f"Wrote {path}") for path in written],
    )
