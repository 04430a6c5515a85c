"""`activebayes export`: the labels out (csv or JSON, to a file or to stdout with `-`), or a
round's queries as Label Studio tasks.

It only reads: the store is opened read-only (`CliState.store()`), so an empty or missing
database is a one-line mistake and nothing, not even the schema, is written.

`export --format label-studio` writes a round's queries (default: the round waiting for answers)
as Label Studio tasks (see `activebayes.data.label_studio`) and the matching labelling config;
`activebayes label --from` reads Label Studio's JSON export back, and `activebayes export`'s own
csv and JSON too.

Every file is written whole or not at all (`activebayes.atomic_files`): a failure or a kill
midway leaves the old file as it was. An existing file is never replaced without --force (`_parse.new_file`): the output file, the
--config file, a non-empty images folder; each is refused in one line before anything is
written. Stdout (`-`) is never refused.
"""

from __future__ import annotations

import csv
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from activebayes.atomic_files import write_json_atomic, write_text_atomic
from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import state
from activebayes_cli._design_project import refuse_design
from activebayes_cli._options import show_model_guess
from activebayes_cli._parse import new_file, writable_target

app = command_group()
ShowModelGuess = show_model_guess("in each Label Studio task, as a pre-annotation that Label Studio shows already chosen (with --format label-studio)")


class ExportFormat(str, Enum):
    csv = "csv"
    json = "json"
    label_studio = "label-studio"


EXPORT_HELP = (
    "Write the labelled items with their labels and provenance (who, source, round, time), and for a pool "
    "imported with --text-column each item's text as in the file, or, for a design "
    "project, every trial (participant, trial, digits, outcome, EIG, source, time); or with "
    "--format label-studio a round's queries as Label Studio tasks. A csv is written as the pool's csv came: "
    "with ';' between the cells when it had them, and with a UTF-8 byte-order mark when a spreadsheet saved it, "
    "so that Excel opens it in columns with its accents.\n\n"
    "Label Studio: `export --format label-studio --out tasks.json --config config.xml`, import tasks.json "
    "into a Label Studio project whose labelling config is config.xml (an Image or Text object and a Choices "
    "control named \"label\" over the classes; printed when --config is left out), label, export from "
    "Label Studio as JSON, and `activebayes label --from` that file. The tasks carry the round's prediction as a "
    "pre-annotation only with --show-model-guess. An image folder's images are copies in <out stem>-images/ (serve that "
    "folder, see --image-url), as the original paths may name the classes; where the keys are those paths (--truth), "
    "the tasks carry an opaque activebayes_query instead of the key, which `label --from` maps back."
)


@app.command(help=EXPORT_HELP, short_help="Write the labels (or trials), or a round as Label Studio tasks.")
def export(
    ctx: typer.Context,
    file: Annotated[Optional[Path], typer.Argument(metavar="FILE", help="Output file: .csv or .json (by suffix), or - for stdout (csv, or --format json); or give --out.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Output file (instead of FILE).")] = None,
    fmt_option: Annotated[
        Optional[ExportFormat],
        typer.Option("--format", help="csv or json (default: by the file's suffix): the labels; label-studio: a round's queries as Label Studio tasks (.json)."),
    ] = None,
    round_number: Annotated[Optional[int], typer.Option("--round", help="With --format label-studio: the round (default: the one waiting for answers).")] = None,
    config: Annotated[
        Optional[Path], typer.Option("--config", help="With --format label-studio: also write Label Studio's labelling config (.xml) here.")
    ] = None,
    image_url: Annotated[
        Optional[str],
        typer.Option("--image-url", help="With --format label-studio: how Label Studio reaches the images, a prefix to which each image's name "
                     "in the images folder written beside the tasks (<out stem>-images/: copies of an image folder's files, which "
                     "may name their classes by their paths, or PNGs of an image array) is added: e.g. http://localhost:8081/ for that "
                     "folder served over HTTP, or /data/local-files/?d=tasks-images/ for Label Studio's local files (the folder's path "
                     "under LOCAL_FILES_DOCUMENT_ROOT). Without it tasks name the files' paths, which a browser cannot load."),
    ] = None,
    show_model_guess: ShowModelGuess = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file (and with --format label-studio an existing "
                                                        "--config file and images folder); without it they are refused. - is never refused.")] = False,
) -> None:
    """Write the labelled items (CSV or JSON), or a round's queries as Label Studio tasks (see EXPORT_HELP)."""
    if file is not None and out is not None:
        raise CliError(f"FILE and --out both name an output file ({file}, {out})", "pass one of them")
    file = file if file is not None else out
    if file is None:
        raise CliError("export: expected an output file", "pass FILE, e.g. `activebayes export labels.csv`, `-` for stdout, or --out FILE")
    to_stdout = str(file) == "-"
    if to_stdout and fmt_option is ExportFormat.label_studio:
        raise CliError("export -: Label Studio tasks go to a file (their images sit beside it)", "name a .json file")
    if fmt_option is ExportFormat.label_studio:
        _export_label_studio(ctx, file, round_number, config, image_url, pre_annotate=show_model_guess, force=force)
        return
    for flag, given in (("--round", round_number is not None), ("--config", config is not None), ("--image-url", image_url is not None),
                        ("--show-model-guess", show_model_guess)):  # fmt: skip
        if given:
            raise CliError(f"{flag}: only applies to --format label-studio", f"add --format label-studio or leave {flag} out")
    if fmt_option is not None and not to_stdout and file.suffix.lower() != f".{fmt_option.value}":
        raise CliError(f"--format {fmt_option.value}: {file} does not end in .{fmt_option.value}", f"name a .{fmt_option.value} file")
    st = state(ctx)
    if to_stdout and st.out.json:
        raise CliError("export -: the labels themselves go to stdout", "leave --json out (or pass --format json)")
    fmt = (fmt_option.value if fmt_option is not None else "csv") if to_stdout else writable_target(file, "FILE", (".csv", ".json"))
    if not to_stdout:
        new_file(file, "the export file", "file name", force)
    store = st.store()
    name = st.project_name()
    if store.project(name).task == "design":  # its trials, one row each (not one "label" per list length)
        from activebayes_cli._design_project import export_trials

        return export_trials(st, store, name, file, fmt, to_stdout)
    from activebayes.store.models import utc_text

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
                    "time": utc_text(created),
                }
            )
    columns = ["key", "row", "split", "label", "who", "source", "round", "time"]
    files = image_files(store.project(name))
    if files is not None:  # keys that hide the images' paths: each item's file, for the researcher
        columns.insert(1, "path")
        for record in records:
            record["path"] = files.get(record["key"], "")
    texts, unread = item_texts(store, name, [record["row"] for record in records])
    for column, values in texts.items():  # `pool add --text-column`: the item's text as imported, before its row
        column_name = column
        while column_name in columns:
            column_name = f"text_{column_name}"
        columns.insert(columns.index("row"), column_name)
        for record, value in zip(records, values):
            record[column_name] = value
    if unread is not None and not st.out.quiet:
        st.out.err.print(f"note: the text of the items is left out of the export ({unread})")
    records = [{k: record[k] for k in columns} for record in records]  # JSON's keys in the csv's order
    if fmt == "csv":
        from activebayes.data.number_style import marked, project_writing
        from activebayes_cli._round_file import write_csv_like_pool

        info = store.project(name)
        table = (info.settings.get("feature_cache") or {}).get("table") or {}  # the pool's csv as read at `pool add`
        writing = project_writing(info.settings) if info.task == "regression" else "plain"  # 151,5 where the pool wrote numbers so
        rows = [["" if record[k] is None else marked(record[k], writing) if k == "label" else record[k] for k in columns] for record in records]
        if to_stdout:  # for a pipe: plain UTF-8 with commas, whatever the pool
            _to_stdout(lambda out: csv.writer(out, lineterminator="\n").writerows([columns, *rows]))
        else:
            write_csv_like_pool(file, columns, rows, table.get("encoding"), table.get("delimiter"))
    elif to_stdout:
        _to_stdout(lambda out: out.write(json.dumps({"project": name, "items": records}, indent=2) + "\n"))
    else:
        write_json_atomic(file, {"project": name, "items": records})
    if to_stdout:  # stdout holds the labels alone
        if not st.out.quiet:
            st.out.err.print(f"Wrote {len(records)} labelled items of {name} to stdout")
        return
    st.out.result(
        {"project": name, "file": str(file), "items": len(records)},
        lambda c: c.print(f"Wrote {len(records)} labelled items of {name} to {file}"),
    )


def _export_label_studio(ctx: typer.Context, file: Path, round_number: int | None, config: Path | None, image_url: str | None, *,
                         pre_annotate: bool = False, force: bool = False) -> None:  # fmt: skip
    """`export --format label-studio`: the round's queries as Label Studio tasks (JSON), and the
    labelling config (written to --config, else shown); the round's predictions as pre-annotations
    only with `pre_annotate` (--show-model-guess). An image-folder pool's tasks name copies of
    the original files in `<out stem>-images/`, as the originals' paths may name their class
    folders; where the keys are those paths, the tasks carry opaque ids instead of the keys, and
    the copies are named after them (`_task_ids`). An image array's tasks get PNGs there (as the
    round file does); with `image_url` each image is that prefix and its path relative to that
    folder (URL-quoted); a table's rows are `name: value` lines of text. An existing tasks file,
    --config file or non-empty images folder is refused (before anything is written) unless `force`."""
    import numpy as np

    from activebayes.data.label_studio import labelling_config, tasks_from_queries
    from activebayes.data import load_project_data
    from activebayes_cli._output import safe_name
    from activebayes_cli._round_file import copy_original, feature_columns, image_shape, images_folder, refuse_filled_folder, write_png
    from activebayes_cli._task_ids import query_ids

    st = state(ctx)
    writable_target(file, "--out", (".json",))
    if config is not None:
        writable_target(config, "--config", (".xml",))
    if image_url is not None and not image_url.endswith(("/", "=")):
        raise CliError(f"--image-url {image_url!r}: expected a prefix ending in / or = (each image's path is added to it)",
                       "e.g. --image-url http://localhost:8081/ or --image-url '/data/local-files/?d=shapes/'")  # fmt: skip
    new_file(file, "the Label Studio tasks file", "file name", force)
    if config is not None:
        new_file(config, "the labelling config", "--config FILE", force)
    store = st.store()
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "export --format label-studio")
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
    ids = query_ids(info, number, queries)  # keys that are paths, which may name the class: opaque ids instead
    folder = images_folder(file)
    if (getattr(data, "folder", None) is not None or shape is not None) and not force:
        refuse_filled_folder(folder, "images folder", f"tasks file {file}", "choose another file name")
    if getattr(data, "folder", None) is not None:  # `pool add FOLDER`: copies, as an original's path may name its class
        images = {q.key: image_address(copy_original(data, q.key, q.rank, folder, ids[q.key] if ids else None), folder, image_url) for q in queries}
    elif shape is not None:  # an image array (IDX, .npy/.npz): one PNG per query next to the tasks
        folder.mkdir(exist_ok=True)
        images = {}
        for q in queries:
            png = folder / f"{q.rank + 1:03d}-{safe_name(q.key)}.png"
            write_png(png, np.asarray(data.x[q.row]).reshape(shape))
            images[q.key] = image_address(png, folder, image_url)
    else:
        columns = feature_columns(info, data)
        shown = data.raw if getattr(data, "raw", None) is not None else data.x  # as in the file, not standardised
        texts = {
            q.key: "\n".join(f"{c}: {_feature_text(v)}" for c, v in zip(columns, np.asarray(shown[q.row]).reshape(-1)))
            for q in queries
        }
    posterior = next((r.posterior for r in rounds if r.number == number), "")
    model_version = " ".join(filter(None, ["activebayes", posterior, f"round {number}"]))  # names the pre-annotations
    tasks = tasks_from_queries(queries, project=name, round_number=number, images=images, texts=texts, model_version=model_version,
                               pre_annotate=pre_annotate, ids=ids)  # fmt: skip
    classes = info.classes if info.task == "classification" else None
    xml = labelling_config(classes, kind="image" if images is not None else "text")
    write_json_atomic(file, tasks)
    if config is not None:
        write_text_atomic(config, xml)
    open_queries = sum(q.value is None for q in queries)
    summary = {
        "project": name, "round": number, "file": str(file), "tasks": len(tasks), "open": open_queries,
        "config": str(config) if config is not None else None, "labelling_config": xml,
        "predictions": sum("predictions" in t for t in tasks),  # tasks pre-annotated with the round's prediction
        "images": str(folder) if images is not None else None,  # the folder of the tasks' images, to serve
        "opaque_ids": ids is not None,  # the tasks carry activebayes_query instead of the keys (paths)
    }  # fmt: skip

    def render(console: Console) -> None:
        predicted = summary["predictions"]
        notes = (f"{predicted} pre-annotated with the round's prediction" if predicted else
                 "no pre-annotations (a round without a fitted model)" if pre_annotate else
                 "no pre-annotations: the model's guesses stay hidden unless --show-model-guess")  # fmt: skip
        console.print(f"Wrote {len(tasks)} Label Studio tasks of round {number} of {name} to {file} "
                      f"({open_queries} still open; {notes}).")  # fmt: skip
        if ids is not None:
            console.print("The items' keys are their files' paths, which may name their classes: the tasks carry an opaque "
                          "activebayes_query instead, and the images are copies named after it.")  # fmt: skip
        if images is not None and image_url is None:
            console.print(f"The tasks name the images by their paths on this machine, which Label Studio's page cannot load: "
                          f"serve {folder} and pass --image-url (see --help).")  # fmt: skip
        if config is not None:
            console.print(f"Labelling config written to {config}.")
        else:
            console.print("Labelling config (Settings > Labeling Interface > Code):")
            console.print(xml.rstrip(), highlight=False)
        console.print(f"Then export from Label Studio as JSON and run: {st.next_command('label', '--from', 'EXPORT.json')}")

    st.out.result(summary, render)


def item_texts(store: Any, name: str, rows: list[int]) -> tuple[dict[str, list[str]], str | None]:
    """({column: [R] texts}, None): the text columns of a table pool (`pool add --text-column`) at
    data rows `rows`, each cell as in the file (a gap empty); ({}, None) for a pool without one;
    ({}, why) when the data file cannot be read (moved or changed since `pool add`)."""
    spec = store.project(name).settings.get("features") or {}
    text_columns = [c["name"] for c in spec.get("columns", ()) if c.get("kind") == "text"]
    if not text_columns or not rows:
        return {}, None
    import numpy as np

    from activebayes.data import load_project_data
    from activebayes.errors import DataError

    try:
        data = load_project_data(store, name)  # checked against its sha256
    except DataError as exc:
        return {}, str(exc)
    cells = np.asarray(data.raw[rows], dtype=object)  # [R, M] the feature columns as in the file
    positions = {c: list(data.raw_columns).index(c) for c in text_columns}
    return {c: [str(v) for v in cells[:, j]] for c, j in positions.items()}, None


def image_files(info: Any) -> dict[str, str] | None:
    """{key: path relative to the image folder} of a project whose keys hide its images' paths
    (`pool add FOLDER --labels-from-folders`), read from its converted folder; None otherwise."""
    if info.data_format != "image-folder" or not info.data_path:
        return None
    from activebayes.data.image_manifest import read_manifest

    manifest, _ = read_manifest(info.data_path)
    return None if manifest.paths is None else dict(zip(manifest.keys, manifest.paths))


def image_address(path: Path, folder: Path, prefix: str | None) -> str:
    """Where a Label Studio task finds an image: `prefix` + its path relative to `folder`
    (POSIX separators, URL-quoted), or its absolute path without a prefix."""
    from urllib.parse import quote

    if prefix is None:
        return str(Path(path).resolve())
    return prefix + quote(Path(path).resolve().relative_to(folder.resolve()).as_posix(), safe="/")


def _to_stdout(write: Any) -> None:
    """`write(sys.stdout)`, then flush; a reader that stops early (`| head`) ends the command
    quietly, as a pipe's writer should."""
    import os

    try:
        write(sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        raise typer.Exit(0) from None


def _feature_text(value: Any) -> str:
    """A feature as its shortest exact text (float32 keeps its own short repr), as in the round file."""
    import numpy as np

    return str(value.item()) if isinstance(value, np.integer) else str(value)
