"""`activebayes init`, `status` and `migrate`: create a project, see where it stands, bring an older
database's schema up to date and PostgreSQL's planner statistics with it (`export` is
`activebayes_cli.export`).

`status` only reads: it opens the store read-only (`CliState.store()`), so an empty or missing
database is a one-line mistake and nothing, not even the schema, is written.

`status` shows one column per metric recorded by any round (numbers right-aligned and never
wrapped); when that table does not fit the terminal, each round is listed as a block instead.
Below it, every round's estimated pool accuracy and NLL (regression: RMSE and NLL) from the
labels the round chose, with 95 % intervals, beside the test split's figures, the evaluation
set's estimate, and the stopping signal on the Next line (`activebayes_cli._estimates`).
"""

from __future__ import annotations

import shlex

from enum import Enum
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table

from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import CliState, check_db_url, shown_url, state
from activebayes_cli._options import CommandDb
from activebayes_cli._parse import parse_classes
from activebayes_cli._output import shown_source

app = command_group()


class TaskName(str, Enum):
    classification = "classification"
    regression = "regression"


@app.command(short_help="Create a project (and the database when there is none).")
def init(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="Project name (unique in the database).")],
    task: Annotated[TaskName, typer.Option("--task", help="What the oracle answers.")] = TaskName.classification,
    classes: Annotated[
        Optional[str], typer.Option("--classes", help="Class count N (classes 0..N-1) or comma-separated names (default: the distinct labels of the data, read at `pool add`).")
    ] = None,
    db: CommandDb = None,
) -> None:
    """Create a project (and the database when it does not exist yet)."""
    st = state(ctx)
    if db is not None:
        st.db, st.db_typed = db, True
    name = name.strip()
    if not name:
        raise CliError("--name: expected a non-empty project name", "pass e.g. --name digits")
    class_list: list[str] | None = None
    if task is TaskName.classification:
        class_list = parse_classes(classes) if classes is not None else None  # None: read at `pool add`
    elif classes is not None:
        raise CliError("--classes: only a classification project has classes", "leave --classes out for --task regression")
    store = st.store(create=True)
    if name in store.projects():
        raise CliError(f"project {name!r} already exists in {shown_url(st.db)}",
                       f"choose another --name, see where it stands with `{st.next_command('status', project=name)}`, "
                       f"or start it over with `{st.command_line('delete', shlex.quote(name))}`")  # fmt: skip
    info = store.create_project(name, task=task.value, classes=class_list, classes_from_data=task is TaskName.classification)
    next_hint = st.next_command("pool", "add", "FILE", project=info.name)
    st.out.result(
        {"project": info.name, "task": info.task, "classes": info.classes, "db": shown_url(st.db)},
        lambda c: c.print(
            f"Created project [bold]{escape(info.name)}[/] ({info.task}"
            + (f", {len(info.classes)} classes" if info.classes else "")
            + (", classes read from the labels at `pool add`" if info.task == "classification" and not info.classes else "")
            + f") in {escape(shown_url(st.db))}.\nNext: {escape(next_hint)}",
            markup=True,
        ),
    )


def _next_step(st: CliState, name: str, has_data: bool, latest: Any, unlabelled: int) -> str:
    """The next step of project `name`, given its LatestRound `latest`."""
    if not has_data:
        return f"add data with `{st.next_command('pool', 'add', 'FILE')}`"
    if latest.asking:
        return f"answer the {latest.open} open queries of round {latest.round.number}: {st.answer_commands(name, latest.round.number)}"
    if latest.stopped:
        return f"round {latest.round.number} stopped while {latest.round.status.value!r}: `{st.next_command('round')}` resumes it"
    if unlabelled == 0:
        return f"every pool item is labelled: `{st.next_command('export', 'FILE')}`"
    if latest.answered:
        return (f"round {latest.round.number} has all its answers: `{st.next_command('round')}` closes it and "
                "chooses the next items to label")  # fmt: skip
    return f"run `{st.next_command('round')}` to choose the next items to label"


def _metric_cell(value: Any) -> str | None:
    """A metric as table text (floats to 4 significant digits); None for a non-scalar."""
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return str(value)
    return None


def metric_columns(rounds: list[Any]) -> list[str]:
    """Every scalar metric name recorded by any round, in order of first appearance."""
    names: list[str] = []
    for r in rounds:
        for key, value in (r.metrics or {}).items():
            if key not in names and _metric_cell(value) is not None:
                names.append(key)
    return names


def acquisition_text(r: Any) -> str:
    """A round's acquisition as status shows it: auto with its chosen arm, its probability and its
    random share ("auto: bald p=0.45, 2 random"); a TypiClust round of `--first auto` ("bald,
    typical: 10 labels, 10 classes"); a cold start's first batch ("bald, first: typical");
    a round drawn uniformly while classes had no label ("bald, uniform: 3 of 10 classes unlabelled")."""
    settings = r.acquisition_settings or {}
    auto = settings.get("auto")
    if auto:
        p = auto["probabilities"][auto["arms"].index(auto["arm"])]
        return f"{r.acquisition}: {auto['arm']} p={p:.2f}, {auto['random']} random"
    if settings.get("typical"):
        return f"{r.acquisition}, typical: {settings['typical']['labels']} labels, {settings['typical']['classes']} classes"
    if settings.get("first"):  # auto without a typical batch: uniform
        return f"{r.acquisition}, first: {'random' if settings['first'] == 'auto' else settings['first']}"
    if settings.get("cover"):
        cover = settings["cover"]
        return f"{r.acquisition}, uniform: {cover['classes'] - cover['seen']} of {cover['classes']} classes unlabelled"
    return r.acquisition


def posterior_text(r: Any) -> str:
    """A round's posterior as status shows it, with the network `--model auto` chose by evidence
    ("mc-dropout, auto: mlp-2x128")."""
    choice = (r.posterior_settings or {}).get("model_choice")
    return f"{r.posterior}, auto: {choice['model']}" if choice else r.posterior


def _round_fields(r: Any, metrics: list[str], answered: bool = False) -> list[tuple[str, str, bool]]:
    """(column, text, numeric) of one round, metrics last; '-' where a round lacks a metric.
    answered: a queried round with every answer in (its status says so: the next round closes it)."""
    status_text = r.status + (f" ({r.failure_reason})" if r.failure_reason else "") + (", all answered" if answered else "")
    fields = [
        ("round", str(r.number), True),
        ("status", status_text, False),
        ("posterior", posterior_text(r), False),
        ("acquisition", acquisition_text(r), False),
        ("labelled", str(r.labelled_count), True),
    ]
    for name in metrics:
        cell = _metric_cell((r.metrics or {}).get(name))
        fields.append((name, "-" if cell is None else cell, True))
    return fields


TEXT_COLUMN_MIN = 8  # a text column (status, posterior, ...) may be folded down to this width


def render_rounds(console: Console, rounds: list[Any], answered: int | None = None) -> None:
    """The rounds as a table with one column per metric; numbers never wrap. When the table does
    not fit the console with every number whole (text columns may fold down to TEXT_COLUMN_MIN),
    one block per round instead. answered: the number of a queried round with every answer in."""
    metrics = metric_columns(rounds)
    rows = [_round_fields(r, metrics, r.number == answered) for r in rounds]
    table = Table(title="rounds")
    needed = len(rows[0]) + 1  # the vertical rules
    for i, (column, _, numeric) in enumerate(rows[0]):
        natural = max(cell_len(column), *(cell_len(fields[i][1]) for fields in rows))
        needed += 2 + (natural if numeric else min(natural, TEXT_COLUMN_MIN))  # 2: cell padding
        if numeric:
            table.add_column(column, justify="right", no_wrap=True)
        else:
            table.add_column(column, overflow="fold")
    for fields in rows:
        table.add_row(*(text for _, text, _ in fields))
    if needed <= console.width:
        console.print(table)
        return
    for fields in rows:  # narrow: "round 2: status=done  posterior=...  accuracy=0.6667 ..."
        (_, number, _), *rest = fields
        tokens = [(f"round {number}:", True)]
        for column, text, numeric in rest:
            if text == "-":
                continue
            pair = f"{column}={text}"
            if numeric:  # whole, or the value alone on a line
                tokens += [(pair, True)] if cell_len(pair) <= console.width - 2 else [(f"{column}=", True), (text, False)]
            else:  # text (a failure reason) may break between its words
                words = pair.split()
                tokens += [(words[0], True), *((word, False) for word in words[1:])]
        for i, line in enumerate(_pack(tokens, console.width - 2)):
            console.print(("  " if i else "") + line, overflow="fold")


def _pack(tokens: list[tuple[str, bool]], width: int) -> list[str]:
    """Tokens (text, starts a field) into lines of at most `width` cells, two spaces before a field
    and one inside it, breaking only between tokens (a token wider than `width` gets its own line)."""
    lines: list[str] = []
    line = ""
    for token, starts in tokens:
        gap = "  " if starts else " "
        if line and cell_len(line) + len(gap) + cell_len(token) > width:
            lines.append(line)
            line = ""
        line = f"{line}{gap}{token}" if line else token
    return [*lines, line] if line else lines


@app.command(short_help="Where a project stands, and what to do next.")
def status(ctx: typer.Context) -> None:
    """Rounds, labelled and unlabelled counts, metrics per round, and the next step (a design
    project: its participants, trials and span estimates)."""
    st = state(ctx)
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    if info.task == "design":  # trials of participants, not a pool
        from activebayes_cli._design_project import design_status

        return design_status(st, store, name, info)
    n_pool = store.count_items(name, split="pool")
    n_test = store.count_items(name, split="test")
    labelled = store.count_labelled(name, split="pool")
    rounds = store.rounds(name)
    from activebayes.store.latest_round import LatestRound, open_queries

    last = rounds[-1] if rounds else None
    latest = LatestRound(last, open_queries(store, name, last))
    next_step = _next_step(st, name, info.data_path is not None and n_pool > 0, latest, n_pool - labelled)
    from activebayes_cli._estimates import (
        estimates_data, evaluation_estimate_of, latest_figure, render_estimates, round_estimates, stop_reading, stop_sentence)

    estimates = round_estimates(store, name, info, rounds)
    evaluation = evaluation_estimate_of(store, name, info)
    signal = stop_reading(rounds, info.task)
    if estimates:
        next_step += " — " + stop_sentence(signal, latest_figure(estimates, info.task))
    data = {
        "project": name,
        "task": info.task,
        "classes": info.classes,
        "data_path": info.data_path,
        "appended": (info.settings or {}).get("appended", []),
        "pool_items": n_pool,
        "test_items": n_test,
        "labelled": labelled,
        "unlabelled": n_pool - labelled,
        "open_queries": latest.open,
        "rounds": [
            {
                "number": r.number,
                "status": r.status,
                "posterior": r.posterior,
                "acquisition": r.acquisition,
                **{key: (r.acquisition_settings or {})[key] for key in ("auto", "first", "cover", "typical")
                   if (r.acquisition_settings or {}).get(key)},
                "labelled_count": r.labelled_count,
                "metrics": r.metrics,
                "failure_reason": r.failure_reason,
            }
            for r in rounds
        ],
        **estimates_data(estimates, evaluation, signal),
        "next": next_step,
    }

    def render(console: Console) -> None:
        console.print(f"[bold]{escape(name)}[/] ({info.task}) — data: {escape(shown_source(info))}", markup=True)
        counts = [f"pool items: {n_pool}", f"labelled: {labelled}", f"unlabelled: {n_pool - labelled}", f"test items: {n_test}"]
        line = "   ".join(counts)
        for text in [line] if len(line) <= console.width else counts:  # a count never splits
            console.print(text, no_wrap=True, overflow="ignore")
        if rounds:
            render_rounds(console, rounds, latest.round.number if latest.answered else None)
            render_estimates(console, estimates, info.task, evaluation, st.next_command("evaluate", "--budget", "30"))
        else:
            console.print("no rounds yet")
        console.print(f"next: {next_step}")

    st.out.result(data, render)


@app.command(short_help="Upgrade an older database's schema (nothing is lost).")
def migrate(ctx: typer.Context) -> None:
    """Upgrade the database's schema to this activebayes version (projects, labels and rounds are
    kept); on PostgreSQL also refresh the planner's statistics of its tables (ANALYZE)."""
    from activebayes.store import PoolStore
    from activebayes.store.store import SchemaMissingError, SchemaVersionError

    st = state(ctx)
    check_db_url(st.db)
    try:  # the revision before, read without writing
        with PoolStore(st.db, create=False, upgrade=False) as probe:
            before = probe.schema_revision()
    except SchemaVersionError as exc:
        before = exc.current or "base"
    except SchemaMissingError:
        before = None  # st.store() below says so in one line
    store = st.store(upgrade=True)  # a missing or newer database: one line, nothing written
    after = store.schema_revision()
    analyzed = store.refresh_statistics()  # PostgreSQL: a pool imported before imports analysed plans by its rows
    st.out.result(
        {"db": shown_url(st.db), "from": before, "to": after, "upgraded": before != after, "analyzed": analyzed},
        lambda c: c.print(
            (f"Upgraded the schema of {shown_url(st.db)} from {before} to {after}."
             if before != after else f"The schema of {shown_url(st.db)} is up to date ({after}).")
            + (f" Refreshed the planner's statistics of its {len(analyzed)} tables (ANALYZE)." if analyzed else "")
        ),
    )  # fmt: skip
