"""`activebayes pool add FILE`: register a data file as the project's pool of candidates.

The file is checked whole before anything is written (format, numeric finite features, unique
keys, every label among the classes); then its path and sha256 are recorded and one item is
created per row. A label column is held back as the truth that `round --oracle truth` answers
from, or imported as observations with --labels-are-known (then an empty label cell marks a row
still to label, and the test split comes from the labelled rows). With --test-fraction F a seeded
random share of the rows becomes the test split, whose labels are recorded so that every round
reports test accuracy.

Tables are made ready for a network (`activebayes.data.tabular`). The key column is
--key-column, else a column named `key` or `id` (any case), else the first one named like an
identifier (customer_id, PassengerId) whose values are distinct whole numbers or text with no
gap, else the row number; --features and
--ignore choose the feature columns. A text column is one-hot encoded (--categorical auto; `error`
refuses text); one of prose (5 words a value or more, as a rule) is refused, naming --text-column;
one that looks like an identifier (90 % distinct values) is left out with a note,
and one with more levels than max(50, 5 % of rows) is encoded on its levels on 5 rows or more
(at most that many), the rest sharing one "other" feature, with a note, unless --categorical
force encodes every level (`activebayes.data.frequent_levels`); any other numeric column named
like an identifier (customer_id) holding distinct whole numbers is left out with a note naming
--key-column and --features, unless --features names it (`activebayes.data.key_columns`);
numbers among a text column's values are levels when under half of them, else refused (a typo
or a gap marker: --na-values) unless the text values are codes of letters and digits (a ticket's
PC 17599 among 113803: `activebayes.data.code_columns`), read as categories with a note;
amounts written as text ($1,578.50, 53%) are numbers and ISO dates calendar features;
clock times without a date (08:30, 7:15 PM) the time of day as (sin, cos), and durations with an
hour over 23 (95:10) hours;
--text-column reads prose as TF-IDF + SVD features. Missing values (empty, NA, N/A, NaN, null, ?, #DIV/0! and the like,
and --na-values) are imputed (--missing impute: the median or most frequent level, plus a 0/1
indicator per column with gaps), dropped with their rows (drop) or refused (error). The features of a csv/npz table are
standardised (z = (x - mean) / sd); --log-skewed reads a heavy-tailed csv number column of counts or amounts (none below 0,
10 or more distinct values, skewness over 2) as log(1 + x) first, and without it a note names such columns
(`activebayes.data.skewed_columns`). Every statistic is learnt on the pool rows only, recorded in
the project's settings and applied at every fit and score; --no-standardize keeps numbers raw. A
project created without --classes reads its classes from the labels here (naturally sorted).

With --append, the rows of a csv with the project's columns and new keys join the pool of a
project that has one, read with the first import's options and frozen feature encoding
(`activebayes_cli._pool_append`); for an image folder, the images put in it since
(`activebayes_cli._pool_folder_append`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from activebayes.errors import DataError
from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import state
from activebayes_cli._design_project import refuse_design
from activebayes_cli._output import TRUTH_TEXT, after_pool_add, items_from
from activebayes_cli._parse import column_options, existing_file, fraction
from activebayes_cli._pool_import import Categorical, ImageLayout, Missing, register_pool

app = command_group(no_args_is_help=True)


@app.command("add", short_help="Register a data file or an image folder as the pool.")
def add(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Data file: .npy, .npz (x, y, keys), .csv (.tsv, .txt; the separator is read from the header) or MNIST IDX; or a FOLDER of images.")],
    key_column: Annotated[Optional[str], typer.Option("--key-column", help="csv column of item keys (default: one named key or id, else the row names: a first column without a name, else the first column named like an identifier, customer_id or PassengerId, whose values are distinct whole numbers or text, else the row number).")] = None,
    label_column: Annotated[Optional[str], typer.Option("--label-column", help="csv column of labels (default: 'label' if present).")] = None,
    test_fraction: Annotated[float, typer.Option("--test-fraction", help="Share of rows held out as a labelled test split (for metrics); with --append, a share of the new labelled rows.")] = 0.0,
    labels_are_known: Annotated[bool, typer.Option("--labels-are-known", help="Import the labels as observations instead of holding them back as the truth; rows with an empty label are the pool to label.")] = False,
    truth: Annotated[Optional[Path], typer.Option("--truth", help="Labels in a separate file (e.g. MNIST *-labels-idx1-ubyte, .npy, or a key,label csv).")] = None,
    image_layout: Annotated[ImageLayout, typer.Option("--image-layout", help="IDX images as flat rows or [1, H, W] (for --model cnn).")] = ImageLayout.flat,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the test split.")] = 0,
    standardize: Annotated[bool, typer.Option("--standardize/--no-standardize", help="Standardise a table's features (mean 0, sd 1 over the pool; recorded, applied at every fit and score).")] = True,
    categorical: Annotated[Categorical, typer.Option("--categorical", help="csv text columns: auto (one-hot encoded, categories recorded; an identifier-like column left out, a many-level one encoded on its levels on 5+ rows with one 'other' feature, each with a note), force (every level encoded) or error (text refused).")] = Categorical.auto,
    missing: Annotated[Missing, typer.Option("--missing", help="csv missing values: impute (median / most frequent level, plus a 0/1 indicator per column with gaps), drop (leave those rows out) or error.")] = Missing.impute,
    na_values: Annotated[Optional[list[str]], typer.Option("--na-values", metavar="<str>", help="More csv cells that mean 'missing' (besides empty, NA, N/A, NaN, null, ? and a formula's error values such as #DIV/0!); repeat it or separate with commas.")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option("--ignore", metavar="<str>", help="A csv column to leave out (repeat it), e.g. a note, or a column the model must not see.")] = None,
    features: Annotated[Optional[str], typer.Option("--features", help="The csv columns to use as features, comma-separated (default: all but the key, label and --ignore columns).")] = None,
    text_column: Annotated[Optional[list[str]], typer.Option("--text-column", metavar="<str>", help="A csv column of free text, read as TF-IDF + SVD features and shown as text (repeat it).")] = None,
    log_skewed: Annotated[bool, typer.Option("--log-skewed", help="Read heavy-tailed csv number columns (counts or amounts: no value below 0, 10+ distinct values, skewness over 2) as log(1 + x) before standardising, with a note; off by default (the benchmark: README).")] = False,
    merge_label_spellings: Annotated[bool, typer.Option("--merge-label-spellings", help="csv labels spelled several ways ('Yes', 'yes ', 'YES'): read each as one class, the project's or the most frequent spelling.")] = False,
    skip_unreadable: Annotated[bool, typer.Option("--skip-unreadable", help="FOLDER of images: leave out (and name) files that cannot be read, instead of refusing the folder.")] = False,
    image_size: Annotated[Optional[str], typer.Option("--image-size", help="FOLDER of images: resize every image to HxW (e.g. 32x32); default: their common size.")] = None,
    labels_from_folders: Annotated[bool, typer.Option("--labels-from-folders", help="FOLDER of images: each image's label is its sub-folder's name.")] = False,
    append: Annotated[bool, typer.Option("--append", help="Add FILE's rows to the project's pool: a csv with the same columns and new keys, read with the first import's options and feature encoding; labels are taken as then; for a FOLDER of images (the project's own), the images put in it since, every recorded one unchanged; with --test-fraction a share of the new labelled rows becomes test items, else every new row is a pool item.")] = False,
) -> None:
    """Register a data file (path + sha256), or a FOLDER of images (PNG, JPEG, WebP, BMP, GIF, TIFF), and create one item per row/image;
    with --append, add a new batch of rows of the same table to the project's pool."""
    st = state(ctx)
    if append and file.is_dir():  # new images in the project's image folder: see cli/_pool_folder_append.py
        return add_images(st, file, test_fraction=test_fraction, seed=seed, image_size=image_size, skip_unreadable=skip_unreadable,
                          labels_from_folders=labels_from_folders, labels_are_known=labels_are_known,
                          options={"--key-column": key_column, "--label-column": label_column, "--features": features, "--ignore": ignore,
                                   "--text-column": text_column, "--na-values": na_values, "--truth": truth,
                                   "--merge-label-spellings": merge_label_spellings, "--no-standardize": not standardize, "--log-skewed": log_skewed,
                                   "--categorical": categorical != Categorical.auto, "--missing": missing != Missing.impute,
                                   "--image-layout": image_layout != ImageLayout.flat})  # fmt: skip
    if append:
        given = {"--features": features, "--ignore": ignore, "--text-column": text_column, "--na-values": na_values, "--truth": truth,
                 "--merge-label-spellings": merge_label_spellings, "--no-standardize": not standardize, "--log-skewed": log_skewed,
                 "--categorical": categorical != Categorical.auto,
                 "--missing": missing != Missing.impute, "--image-layout": image_layout != ImageLayout.flat, "--image-size": image_size,
                 "--labels-from-folders": labels_from_folders, "--skip-unreadable": skip_unreadable}  # fmt: skip
        return add_rows(st, file, test_fraction=test_fraction, seed=seed, labels_are_known=labels_are_known, key_column=key_column,
                        label_column=label_column, options=[flag for flag, value in given.items() if value])  # fmt: skip
    if file.is_dir() or image_size is not None or labels_from_folders:  # images: see cli/_pool_folder.py
        from activebayes_cli._pool_folder import add_folder

        return add_folder(
            st, file, image_size=image_size, labels_from_folders=labels_from_folders, truth=truth, key_column=key_column,
            label_column=label_column, test_fraction=test_fraction, labels_are_known=labels_are_known, seed=seed,
            skip_unreadable=skip_unreadable,
        )  # fmt: skip
    existing_file(file, "FILE")
    if truth is not None:
        existing_file(truth, "--truth")
    fraction(test_fraction, "--test-fraction")
    if log_skewed and not standardize:
        raise CliError("--log-skewed reads columns as log(1 + x) before standardising, and --no-standardize keeps the numbers raw",
                       "give one of them")  # fmt: skip
    store = st.store(upgrade=True)  # writes: an older schema is upgraded first
    name = st.project_name()
    refuse_design(st, name, store.project(name), "pool add")
    from activebayes_cli._pool_folder import cache_folder

    try:
        summary = register_pool(
            store, name, file, key_column=key_column, label_column=label_column, test_fraction=test_fraction,
            labels_are_known=labels_are_known, truth=truth, image_layout=image_layout.value, seed=seed,
            standardize=standardize, categorical=categorical.value, missing=missing.value,
            features=column_list(features, "--features") if features is not None else None, ignore=tuple(ignore or ()),
            text_columns=tuple(text_column or ()), na_values=tuple(v for item in na_values or () for v in item.split(",")),
            text_folder=cache_folder(st.db), merge_spellings=merge_label_spellings, log_skewed=log_skewed,
        )  # fmt: skip
    except DataError as exc:  # a column the options name, by its option (the library names its parameter)
        raise DataError(column_options(str(exc))) from exc
    for note in summary["notes"]:
        st.out.note(st.as_typed(note))  # a note's commands work as typed too
    next_hint = after_pool_add(st, summary["truth"])

    def render(console) -> None:
        console.print(
            items_from("Added", summary, file)
            + f" ({summary['format']}, features {summary['features']}"
            + ("; standardised" if summary["standardized"] else "")
            + (f"; one-hot: {', '.join(summary['categorical'])}" if summary["categorical"] else "")
            + (f"; text: {', '.join(summary['text_columns'])}" if summary["text_columns"] else "")
            + f"; {TRUTH_TEXT[summary['truth']]})."
        )
        for line in table_lines(summary):
            console.print(line)
        console.print(f"Next: {next_hint}")

    st.out.result(summary, render)


def add_rows(st, file: Path, *, test_fraction: float, seed: int, labels_are_known: bool, key_column: str | None,
             label_column: str | None, options: list[str]) -> None:
    """`pool add FILE --append` (`activebayes_cli._pool_append`): the table options are the
    first import's; one given anyway is refused unless it says the same."""
    from activebayes.errors import RoundBusyError
    from activebayes_cli._app import CliError
    from activebayes_cli._pool_append import append_table
    from activebayes_cli._pool_folder import cache_folder

    if options:
        raise CliError(f"--append: {', '.join(options)} cannot be given; the new rows are read as the first import read its table",
                       "leave them out")  # fmt: skip
    existing_file(file, "FILE")
    fraction(test_fraction, "--test-fraction")
    store = st.store(upgrade=True)
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "pool add")
    recorded = info.settings or {}
    for option, value, was in (("--key-column", key_column, recorded.get("key_column")), ("--label-column", label_column, recorded.get("label_column"))):
        if value is not None and value != was:
            raise CliError(f"{option}: project {name!r} was imported with {option} {was}, not {value}", f"leave {option} out with --append")
    if labels_are_known and recorded.get("truth") != "known":
        raise CliError(f"--labels-are-known: project {name!r} holds its labels back as the truth", "leave --labels-are-known out with --append")
    try:  # no round reads the data file while it is replaced, nor starts before the new items are in
        with store.round_lock(name):
            summary = append_table(store, name, file, test_fraction=test_fraction, seed=seed, folder=cache_folder(st.db))
    except RoundBusyError as exc:
        raise CliError(str(exc).partition("; ")[0], "wait for it to finish, then run this command again") from exc
    next_hint = after_pool_add(st, summary["truth"])

    def render(console) -> None:
        console.print(
            items_from("Appended", summary, file)
            + f" to project {name}"
            + (f" ({summary['labels']} labels imported)" if summary["labels"] else "")
            + (f"; {summary['left_out']} rows with a missing value left out" if summary["left_out"] else "")
            + f"; now {summary['total_pool_items']} pool items"
            + (f" and {summary['total_test_items']} test items" if summary["total_test_items"] else "")
            + "; features encoded as at the first import."
        )
        console.print(f"Next: {next_hint}")

    st.out.result(summary, render)


def add_images(st, folder: Path, *, test_fraction: float, seed: int, image_size: str | None, skip_unreadable: bool,
               labels_from_folders: bool, labels_are_known: bool, options: dict) -> None:  # fmt: skip
    """`pool add FOLDER --append` (`activebayes_cli._pool_folder_append`): a table's options are
    refused, and --labels-are-known unless the project's labels were imported so."""
    from activebayes_cli._app import CliError
    from activebayes_cli._pool_folder_append import append_folder

    given = [flag for flag, value in options.items() if value]
    if given:
        raise CliError(f"--append: {', '.join(given)} cannot be given with a folder of images", "leave them out")
    if labels_are_known and (st.store().project(st.project_name()).settings or {}).get("truth") != "known":
        raise CliError("--labels-are-known: the project holds its labels back as the truth", "leave --labels-are-known out with --append")
    append_folder(st, folder, test_fraction=test_fraction, seed=seed, image_size=image_size, skip_unreadable=skip_unreadable,
                  labels_from_folders=labels_from_folders)  # fmt: skip


def column_list(text: str, option: str) -> tuple[str, ...]:
    """The column names of a comma-separated option; CliError when it names none."""
    from activebayes_cli._app import CliError

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise CliError(f"{option}: no column names in {text!r}", f"give them comma-separated, e.g. {option} age,height")
    return names


def table_lines(summary: dict) -> list[str]:
    """The import summary's lines about a table's columns: key, how each feature column was
    read, columns left out, gaps."""
    lines = []
    if summary.get("key_column"):
        lines.append(f"Keys: column {summary['key_column']!r}.")
    if summary.get("columns"):
        lines.append(f"Features: {read_as(summary['columns'])}.")
    if summary.get("not_features"):
        lines.append(f"Not features: {', '.join(f'{name} ({why})' for name, why in summary['not_features'].items())}.")
    gaps = summary.get("missing") or {}
    if gaps:
        listed = ", ".join(f"{name} {count}" for name, count in gaps.items())
        texts = [name for name in gaps if name in (summary.get("text_columns") or ())]
        imputed = [part for part, wanted in (("imputed, with an indicator per column", len(texts) < len(gaps)),
                                             ("an empty text reads as no words", bool(texts))) if wanted]  # fmt: skip
        done = {"impute": "; ".join(imputed), "drop": f"{len(summary['dropped_rows'])} row(s) left out"}
        lines.append(f"Missing values: {sum(gaps.values())} ({listed}); {done.get(summary['missing_mode'], '')}.")
    return lines


KIND_WORDS = {"numeric": "numbers", "date": "dates", "time": "times of day", "categorical": "categories", "text": "text"}
LISTED = 8  # names shown per kind; the rest are counted


def read_as(columns: dict[str, dict]) -> str:
    """How the feature columns were read, by kind, with the features each became:
    "numbers (2): age, bmi; categories (1): sex (2 features); ..."."""
    parts = []
    for kind, word in KIND_WORDS.items():
        names = [(n, c["features"]) for n, c in columns.items() if c["kind"] == kind]
        if not names:
            continue
        shown = [f"{n}{logged(columns[n], w == 1)}" if (w == 1 and kind == "numeric") else f"{n} ({logged(columns[n], w == 1)}{w} feature{'s' * (w != 1)}{pooled(columns[n])})"
                 for n, w in names[:LISTED]]  # fmt: skip
        more = f", ... ({len(names) - LISTED} more)" if len(names) > LISTED else ""
        parts.append(f"{word} ({len(names)}): {', '.join(shown)}{more}")
    return "; ".join(parts) + f"; {sum(c['features'] for c in columns.values())} in all"


def logged(column: dict, alone: bool) -> str:
    """How a number column read as log(1 + x) (`activebayes.data.skewed_columns`) is marked:
    " (log)" after its name when it is one feature, "log; " before the count of its features
    (with a gap indicator); "" for any other column."""
    if not column.get("log"):
        return ""
    return " (log)" if alone else "log; "


def pooled(column: dict) -> str:
    """", its 12 frequent categories and 'other' for 61 more" for a many-level column encoded on
    its frequent levels (`activebayes.data.frequent_levels`), else ""."""
    if not column.get("other"):
        return ""
    return f": its {column['categories']} frequent categories and '(other)' for {column['other']} more; --categorical force encodes all"
