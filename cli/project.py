"""`activebayes init`, `status`, `export` and `migrate`: create a project, see where it stands, take
the labels out, bring an older database's schema up to date.

`status` and `export` only read: they open the store read-only (`CliState.store()`), so an empty
or missing database is a one-line mistake and nothing, not even the schema, is written.

`export --format label-studio` writes a round's queries (default: the round waiting for answers)
as Label Studio tasks (see `activebayes.data.label_studio`) and the matching labelling config;
`activebayes label --from` reads Label Studio's JSON export back.

`status` shows one column per metric recorded by any round (numbers right-aligned and never
wrapped); when that table does not fit the terminal, each round is listed as a block instead.
Below it, every round's estimated pool accuracy and NLL (regression: RMSE and NLL) from the
labels the round chose, with 95 % intervals, beside the test split's figures, the evaluation
set's estimate, and the stopping signal on the Next line (`activebayes_cli._estimates`).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table

from activebayes_cli._app import CliError
from activebayes_cli._context import CliState, check_db_url, shown_url, state
from activebayes_cli._options import CommandDb
from activebayes_cli._parse import parse_classes, writable_target

app = typer.Typer(rich_markup_mode=None)  # help texts as written: "activebayes[ray]" is no style


class ExportFormat(str, Enum):
    csv = "csv"
    json = "json"
    label_studio = "label-studio"


class TaskName(str, Enum):
    classification = "classification"
    regression = "regression"


@app.command()
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
    info = st.store(create=True).create_project(
        name, task=task.value, classes=class_list, classes_from_data=task is TaskName.classification
    )
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


def _next_step(st: CliState, name: str, has_data: bool, latest: Any, unlabelled: int, pending: int) -> str:
    if not has_data:
        return f"add data with `{st.next_command('pool', 'add', 'FILE')}`"
    from activebayes.store import RoundStatus, RoundStep

    resumes = latest is not None and RoundStatus.next_step(latest.status, pending) is RoundStep.resume
    if resumes and latest.status.waiting:
        from activebayes_cli._output import round_csv_name  # the file `activebayes round` wrote

        return (
            f"answer the {pending} open queries of round {latest.number}: "
            f"`{st.next_command('label', '--from', round_csv_name(name, latest.number))}` or `{st.next_command('label')}`"
        )
    if resumes:
        return f"round {latest.number} stopped while {latest.status.value!r}: `{st.next_command('round')}` resumes it"
    if unlabelled == 0:
        return f"every pool item is labelled: `{st.next_command('export', 'FILE')}`"
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


def _round_fields(r: Any, metrics: list[str]) -> list[tuple[str, str, bool]]:
    """(column, text, numeric) of one round, metrics last; '-' where a round lacks a metric."""
    status_text = r.status + (f" ({r.failure_reason})" if r.failure_reason else "")
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


def render_rounds(console: Console, rounds: list[Any]) -> None:
    """The rounds as a table with one column per metric; numbers never wrap. When the table does
    not fit the console with every number whole (text columns may fold down to TEXT_COLUMN_MIN),
    one block per round instead."""
    metrics = metric_columns(rounds)
    rows = [_round_fields(r, metrics) for r in rounds]
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


@app.command()
def status(ctx: typer.Context) -> None:
    """Rounds, labelled and unlabelled counts, metrics per round, and the next step."""
    st = state(ctx)
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    n_pool = store.count_items(name, split="pool")
    n_test = store.count_items(name, split="test")
    labelled = store.count_labelled(name, split="pool")
    rounds = store.rounds(name)
    latest = rounds[-1] if rounds else None
    pending = 0
    if latest is not None and latest.status.waiting:
        pending = sum(q.value is None for q in store.queries(name, latest.number))
    next_step = _next_step(st, name, info.data_path is not None and n_pool > 0, latest, n_pool - labelled, pending)
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
        "pool_items": n_pool,
        "test_items": n_test,
        "labelled": labelled,
        "unlabelled": n_pool - labelled,
        "open_queries": pending,
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
        console.print(f"[bold]{escape(name)}[/] ({info.task}) — data: {escape(info.data_path or 'none yet')}", markup=True)
        counts = [f"pool items: {n_pool}", f"labelled: {labelled}", f"unlabelled: {n_pool - labelled}", f"test items: {n_test}"]
        line = "   ".join(counts)
        for text in [line] if len(line) <= console.width else counts:  # a count never splits
            console.print(text, no_wrap=True, overflow="ignore")
        if rounds:
            render_rounds(console, rounds)
            render_estimates(console, estimates, info.task, evaluation)
        else:
            console.print("no rounds yet")
        console.print(f"next: {next_step}")

    st.out.result(data, render)


EXPORT_HELP = (
    "Write the labelled items with their labels and provenance (who, source, round, time), or with "
    "--format label-studio a round's queries as Label Studio tasks. A csv is written as the pool's csv came: "
    "with ';' between the cells when it had them, and with a UTF-8 byte-order mark when a spreadsheet saved it, "
    "so that Excel opens it in columns with its accents.\n\n"
    "Label Studio: `export --format label-studio --out tasks.json --config config.xml`, import tasks.json "
    "into a Label Studio project whose labelling config is config.xml (an Image or Text object and a Choices "
    "control named \"label\" over the classes; printed when --config is left out), label, export from "
    "Label Studio as JSON, and `activebayes label --from` that file."
)


@app.command(help=EXPORT_HELP)
def export(
    ctx: typer.Context,
    file: Annotated[Optional[Path], typer.Argument(help="Output file: .csv or .json (by suffix); or give --out.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Output file (instead of FILE).")] = None,
    fmt_option: Annotated[
        Optional[ExportFormat],
        typer.Option("--format", help="csv or json (default: by the file's suffix): the labels; label-studio: a round's queries as Label Studio tasks (.json)."),
    ] = None,
    round_number: Annotated[Optional[int], typer.Option("--round", help="With --format label-studio: the round (default: the one waiting for answers).")] = None,
    config: Annotated[
        Optional[Path], typer.Option("--config", help="With --format label-studio: also write Label Studio's labelling config (.xml) here.")
    ] = None,
) -> None:
    """Write the labelled items (CSV or JSON), or a round's queries as Label Studio tasks (see EXPORT_HELP)."""
    if file is not None and out is not None:
        raise CliError(f"FILE and --out both name an output file ({file}, {out})", "pass one of them")
    file = file if file is not None else out
    if file is None:
        raise CliError("export: expected an output file", "pass FILE, e.g. `activebayes export labels.csv`, or --out FILE")
    if fmt_option is ExportFormat.label_studio:
        _export_label_studio(ctx, file, round_number, config)
        return
    for flag, given in (("--round", round_number is not None), ("--config", config is not None)):
        if given:
            raise CliError(f"{flag}: only applies to --format label-studio", f"add --format label-studio or leave {flag} out")
    if fmt_option is not None and file.suffix.lower() != f".{fmt_option.value}":
        raise CliError(f"--format {fmt_option.value}: {file} does not end in .{fmt_option.value}", f"name a .{fmt_option.value} file")
    st = state(ctx)
    fmt = writable_target(file, "FILE", (".csv", ".json"))
    store = st.store()
    name = st.project_name()
    round_numbers = {r.id: r.number for r in store.rounds(name)}
    latest: dict[str, dict[str, Any]] = {}
    for obs in store.observations(name):  # in recording order: the last one per key is the label
        latest[obs["key"]] = obs
    records = []
    for split in ("pool", "test", "eval"):  # eval: the evaluation set's items (`activebayes evaluate`)
        rows, keys, values = store.labels(name, split=split)
        for row, key, value in zip(rows.tolist(), keys, values):
            obs = latest.get(key, {})
            created = obs.get("created_at")
            records.append(
                {
                    "key": key,
                    "row": int(row),
                    "split": split,
                    "label": value,
                    "who": obs.get("who", ""),
                    "source": obs.get("source", ""),
                    "round": round_numbers.get(obs.get("round_id")) if obs.get("round_id") is not None else None,
                    "time": created.isoformat() if created is not None else None,
                }
            )
    columns = ["key", "row", "split", "label", "who", "source", "round", "time"]
    if fmt == "csv":
        from activebayes.data.number_style import marked, project_writing
        from activebayes_cli._round_file import write_csv_like_pool

        info = store.project(name)
        table = (info.settings.get("feature_cache") or {}).get("table") or {}  # the pool's csv as read at `pool add`
        writing = project_writing(info.settings) if info.task == "regression" else "plain"  # 151,5 where the pool wrote numbers so
        rows = [["" if record[k] is None else marked(record[k], writing) if k == "label" else record[k] for k in columns] for record in records]
        write_csv_like_pool(file, columns, rows, table.get("encoding"), table.get("delimiter"))
    else:
        file.write_text(json.dumps({"project": name, "items": records}, indent=2) + "\n", encoding="utf-8")
    st.out.result(
        {"project": name, "file": str(file), "items": len(records)},
        lambda c: c.print(f"Wrote {len(records)} labelled items of {name} to {file}"),
    )


def _export_label_studio(ctx: typer.Context, file: Path, round_number: int | None, config: Path | None) -> None:
    """`export --format label-studio`: the round's queries as Label Studio tasks (JSON), and the
    labelling config (written to --config, else shown). An image-folder pool's tasks name the
    original files; an image array's get PNGs in `<out stem>-images/` (as the round file does);
    a table's rows are `name: value` lines of text."""
    import numpy as np

    from activebayes.data.images import source_path
    from activebayes.data.label_studio import labelling_config, tasks_from_queries
    from activebayes.data import load_project_data
    from activebayes_cli._output import safe_name
    from activebayes_cli._round_file import feature_columns, image_shape, images_folder, write_png

    st = state(ctx)
    writable_target(file, "--out", (".json",))
    if config is not None:
        writable_target(config, "--config", (".xml",))
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    rounds = store.rounds(name)
    if round_number is not None:
        if not any(r.number == round_number for r in rounds):
            known = ", ".join(str(r.number) for r in rounds) or "none yet"
            raise CliError(f"--round: project {name!r} has no round {round_number} (rounds: {known})", "pass one of them or leave --round out")
        number = round_number
    elif rounds and rounds[-1].status.waiting:
        number = rounds[-1].number
    else:
        raise CliError(f"no round of project {name!r} waits for answers", "run `activebayes round` first, or pass --round N")
    queries = store.queries(name, number)
    if not queries:
        raise CliError(f"round {number} of project {name!r} asked no queries", "pass --round N of a round that asked some")
    data = load_project_data(store, name)  # checked against its sha256 (an image folder: every image)
    images = texts = None
    shape = image_shape(info, data)
    if getattr(data, "folder", None) is not None:  # `pool add FOLDER`: the original files
        images = {q.key: str(source_path(data, q.key)) for q in queries}
    elif shape is not None:  # an image array (IDX, .npy/.npz): one PNG per query next to the tasks
        folder = images_folder(file)
        folder.mkdir(exist_ok=True)
        images = {}
        for q in queries:
            png = folder / f"{q.rank + 1:03d}-{safe_name(q.key)}.png"
            write_png(png, np.asarray(data.x[q.row]).reshape(shape))
            images[q.key] = str(png.resolve())
    else:
        columns = feature_columns(info, data)
        shown = data.raw if getattr(data, "raw", None) is not None else data.x  # as in the file, not standardised
        texts = {
            q.key: "\n".join(f"{c}: {_feature_text(v)}" for c, v in zip(columns, np.asarray(shown[q.row]).reshape(-1)))
            for q in queries
        }
    posterior = next((r.posterior for r in rounds if r.number == number), "")
    model_version = " ".join(filter(None, ["activebayes", posterior, f"round {number}"]))  # names the pre-annotations
    tasks = tasks_from_queries(queries, project=name, round_number=number, images=images, texts=texts, model_version=model_version)
    classes = info.classes if info.task == "classification" else None
    xml = labelling_config(classes, kind="image" if images is not None else "text")
    file.write_text(json.dumps(tasks, indent=2) + "\n", encoding="utf-8")
    if config is not None:
        config.write_text(xml, encoding="utf-8")
    open_queries = sum(q.value is None for q in queries)
    summary = {
        "project": name, "round": number, "file": str(file), "tasks": len(tasks), "open": open_queries,
        "config": str(config) if config is not None else None, "labelling_config": xml,
        "predictions": sum("predictions" in t for t in tasks),  # tasks pre-annotated with the round's prediction
    }  # fmt: skip

    def render(console: Console) -> None:
        predicted = summary["predictions"]
        notes = f"{predicted} pre-annotated with the round's prediction" if predicted else "no pre-annotations (a round without a fitted model)"
        console.print(f"Wrote {len(tasks)} Label Studio tasks of round {number} of {name} to {file} "
                      f"({open_queries} still open; {notes}).")  # fmt: skip
        if config is not None:
            console.print(f"Labelling config written to {config}.")
        else:
            console.print("Labelling config (Settings > Labeling Interface > Code):")
            console.print(xml.rstrip(), highlight=False)
        console.print(f"Then export from Label Studio as JSON and run: {st.next_command('label', '--from', 'EXPORT.json')}")

    st.out.result(summary, render)


def _feature_text(value: Any) -> str:
    """A feature as its shortest exact text (float32 keeps its own short repr), as in the round file."""
    import numpy as np

    return str(value.item()) if isinstance(value, np.integer) else str(value)


@app.command()
def migrate(ctx: typer.Context) -> None:
    """Upgrade the database's schema to this activebayes version (projects, labels and rounds are kept)."""
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
    st.out.result(
        {"db": shown_url(st.db), "from": before, "to": after, "upgraded": before != after},
        lambda c: c.print(
            f"Upgraded the schema of {shown_url(st.db)} from {before} to {after}."
            if before != after
            else f"The schema of {shown_url(st.db)} is up to date ({after})."
        ),
    )
