"""Registering a pool in a project, shared by `pool add` (a data file or an image folder, see
`_pool_folder.py`) and the tabular study: check the file whole, then record its path, sha256,
items, test split and truth (`register_pool`). A csv table's or an image folder's features are
written once to the feature cache (`activebayes.data.feature_cache`), recorded with the rest.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from activebayes_cli._app import CliError
from activebayes_cli._output import shown_source


TARGET_NAMES = ("class", "target", "y", "outcome", "labels")  # a column named so is likely the labels: `pool add` says so
# A label that is a number, maybe with a unit after it ("42", "3,5", "1,234.5", "25 mg", "12 %").
_QUANTITY = re.compile(r"^[-+]?[$€£¥]?\s?\d[\d.,\u00a0\u202f ]*\s?[^\W\d_%°$€£¥/]{0,6}[%°$€£¥/]?[^\W\d_]{0,3}$")
MANY_NUMBER_CLASSES, MANY_NUMBER_SHARE = 20, 0.05  # more distinct numeric labels than max(20, 5 % of the labels): a quantity


class ImageLayout(str, Enum):
    flat = "flat"
    chw = "chw"


class Categorical(str, Enum):
    auto = "auto"
    error = "error"
    force = "force"


def quantity_labels(labels: list[str], found: list[str]) -> bool:
    """Whether the distinct labels `found` (of the non-empty `labels`) are numbers, maybe with a
    unit ("25", "25.0", "25 mg"), and more than max(MANY_NUMBER_CLASSES, MANY_NUMBER_SHARE of the
    labels): a measurement such as a disease's progression, not a set of classes."""
    many = len(found) > max(MANY_NUMBER_CLASSES, MANY_NUMBER_SHARE * len(labels))
    return many and all(_QUANTITY.match(c) for c in found)


def infer_classes(labels: list[str] | None, file: Path, truth: Path | None, project: str = "PROJECT") -> list[str]:
    """The classes of a project created without `--classes`: the distinct labels, naturally
    sorted; refused when they are many numbers (`quantity_labels`), a regression target, or
    nearly one per row (`looks_like_identifier`: at least 20, 90 % of them different), a name or
    an id taken for the labels."""
    from activebayes.data import natural_sorted
    from activebayes.data.frequent_levels import looks_like_identifier

    p = shlex.quote(project)
    named = f"`activebayes delete {p}`, `activebayes init --name {p} --classes A,B,...` and `pool add` again"
    if labels is None:
        raise CliError(
            f"--classes: the project was created without classes and {file} has no labels to read them from",
            f"pass --label-column C (or --truth FILE), or name the classes: {named}",
        )
    found = natural_sorted(labels)
    if len(found) < 2:
        source = truth if truth is not None else file
        raise CliError(
            f"--classes: the labels of {source} hold {len(found)} distinct value(s) {found}, a classifier needs at least 2",
            f"check the label column, or name the classes: {named}",
        )
    if quantity_labels(labels, found):
        raise CliError(
            f"the labels of {truth if truth is not None else file} are {len(found)} different numbers ({', '.join(found[:3])}, ..., "
            f"{found[-1]}) in {len(labels)} rows: a quantity to predict, not classes, and this is a classification project",
            f"run `activebayes delete {p}`, then `activebayes init --name {p} --task regression` (a quantity) or "
            f"`activebayes init --name {p} --classes A,B,...` (classes), and `pool add` again",
        )
    if looks_like_identifier(len(found), len(labels)):
        raise CliError(
            f"the labels of {truth if truth is not None else file} are {len(found)} different values ({', '.join(found[:3])}, ...) in "
            f"{len(labels)} rows, nearly one class per row: a name or an identifier, not classes to learn",
            f"check that --label-column names the labels; if these are the classes, name them: {named}",
        )
    return found


def ignored_columns(plan: Any, label_column: str | None, key_column: str | None) -> list[str]:
    """The named columns of a planned table that are neither features, nor the label or key."""
    return list(not_features(plan, label_column, key_column))


def not_features(plan: Any, label_column: str | None, key_column: str | None) -> dict[str, str]:
    """{column: why it is no feature} of a planned table's named columns other than its features,
    label and key: row names, --ignore, left out of --features, no values, a saved index."""
    from activebayes.data.csv_table import ROW_NAMES

    if plan is None:
        return {}
    used = {c.name for c in plan.columns} | {label_column, key_column}
    options = plan.options

    def why(name: str) -> str:
        if name in plan.left_out:
            return plan.left_out[name]
        if name in options.ignore:
            return "--ignore"
        if name == ROW_NAMES and plan.table.row_names:
            return "row names"
        return "not in --features" if options.features is not None else "left out"

    return {h: why(h) for h in plan.table.header if h and h not in used}


def feature_columns(spec: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """{column: {"kind", "features"}} of a table's recorded spec (`activebayes.data.table_spec`),
    in file order: how many features each column became (a number 1, a date 5 or 7, a category
    one per level, and one for "other" where rare levels share it, a text its SVD dimensions; a
    gap indicator one more); a many-level column's also says how many categories were kept and
    how many share "other" ({"categories": 12, "other": 61}); a number read as log(1 + x) has
    "log": true."""
    out = {}
    for c in (spec or {}).get("columns", []):
        width = {"numeric": 1, "date": 7 if c.get("clock") else 5, "time": 2}.get(c["kind"]) or len(c.get("categories") or ()) or int(c.get("dims", 0))
        out[c["name"]] = {"kind": c["kind"], "features": width + bool(c.get("other")) + bool(c.get("indicator"))}
        if c.get("other"):
            out[c["name"]].update(categories=len(c["categories"]), other=int(c["other"]))
        if c.get("log"):
            out[c["name"]]["log"] = True
    return out


def look_alike_classes(classes: list[str], project: str) -> list[str]:
    """A note for each group of classes that differ only in case or spacing ('Yes', 'yes',
    'y es'): two spellings of one answer, more often than two classes."""
    from activebayes.data.label_spellings import spelling_key

    groups: dict[str, list[str]] = {}
    for c in classes:
        groups.setdefault(spelling_key(c), []).append(c)
    again = f"`activebayes delete {shlex.quote(project)}`, `activebayes init --name {shlex.quote(project)}` and `pool add` again"
    return [f"the classes {', '.join(repr(c) for c in group)} differ only in {_how_they_differ(group)}; if they are one class, "
            f"correct them in the file (or add --merge-label-spellings), then {again}" for group in groups.values() if len(group) > 1]  # fmt: skip


def _how_they_differ(group: list[str]) -> str:
    """"case or spacing", or "a trailing .0" for classes such as '1' and '1.0' (and both when both)."""
    numbers = {c for c in group if c.replace(".", "", 1).lstrip("+-").isdigit()}
    return "case or spacing" if not numbers else "a trailing .0" if len(numbers) == len(group) else "case, spacing or a trailing .0"


class Missing(str, Enum):
    impute = "impute"
    drop = "drop"
    error = "error"


def feature_settings(data: Any, fmt: str, pool_rows: np.ndarray, standardize: bool) -> dict[str, Any] | None:
    """settings["features"] of a new npz table ([N, D]) unless --no-standardize: each feature's
    mean and scale over the pool rows (the test split excluded), applied at every load
    (`activebayes.data.fit_features`). A csv table's spec comes from `csv_pool`."""
    from activebayes.data.features import can_standardize, fit_features

    if not (standardize and can_standardize(fmt, data.x)):
        return None
    return fit_features(np.asarray(data.x)[pool_rows], standardize_features=True)


def remove_text_models(spec: dict[str, Any] | None) -> None:
    """Delete the text models a spec's fit wrote (a `pool add` that records nothing leaves none)."""
    for column in (spec or {}).get("columns", ()):
        if column.get("kind") == "text":
            Path(column["file"]).unlink(missing_ok=True)


def csv_pool(table: Any, options: Any, *, classes: Any, test_fraction: float, seed: int, standardize: bool, text_folder: Path,
             task: str, labels_are_known: bool = False, merge_spellings: bool = False, log_skewed: bool = False) -> dict[str, Any]:  # fmt: skip
    """A read csv table (`activebayes.data.csv_table.CsvTable`) planned, split and encoded as
    `pool add` does it (`activebayes.data.tabular`): the feature pipeline fitted on the pool rows
    only; rows with a gap left out under --missing drop. Returns {"data", "spec", "plan",
    "pool_rows", "test_rows", "dropped"}. `task`: the project's ("classification" or "regression").
    `labels_are_known`: an empty label cell marks a row still to label, and the test split is
    drawn from the labelled rows only; otherwise an empty label is refused. `merge_spellings`: the
    spellings of one class label ('Yes', 'yes ') are read as one class (`merged_spellings`), at
    every load (spec "label_spellings"). With `log_skewed`, a heavy-tailed non-negative numeric
    column is read as log(1 + x), with a note; without it, one note names such columns
    (`activebayes.data.skewed_columns`)."""
    from activebayes.data.loaders import check_labels, dataset_from_table
    from activebayes.data.parsed_columns import UNIT_PREFIX, number_writing, written_numbers
    from activebayes.data.table_spec import fit_table_spec
    from activebayes.data.skewed_columns import logged_columns, skewed_hint, skewed_note
    from activebayes.data.csv_table import shown
    from activebayes.data.class_balance import classes_only_in_test
    from activebayes.data.table_gaps import formula_errors, label_gap_markers
    from activebayes.data.tabular import plan_table
    from activebayes.data.label_spellings import merged_spellings, spelled_as

    file = table.path
    plan = plan_table(table, options)
    dropped = plan.rows_with_gaps() if options.missing == "drop" else np.zeros(0, dtype=np.int64)
    kept = np.setdiff1d(np.arange(len(table)), dropped)
    if kept.size == 0:
        raise CliError(f"--missing drop: every row of {file} has a missing value", "use --missing impute")
    labels = np.asarray(table.column(options.label_column)) if options.label_column is not None else None
    label_writing = number_writing(labels.tolist(), table.delimiter) if labels is not None and task == "regression" else None
    if label_writing is not None:  # regression targets written like amounts or with decimal commas: read as the features are
        labels = np.asarray(written_numbers(labels.tolist(), label_writing))
        how = {"units": "amounts written as text", "decimal comma": "written with decimal commas"}.get(label_writing, f"written with the unit {label_writing.removeprefix(UNIT_PREFIX)!r}")
        plan.notes.append(f"the labels in {options.label_column!r} are {how}: read as numbers")
    written_labels = labels
    label_na = label_gap_markers(classes, options.na_values)
    if labels is not None:  # a gap marker (N/A, ?, #N/A from a failed lookup, --na-values) is no label, as an empty cell is not
        failed = formula_errors(labels, label_na)
        markers = Counter(str(v).strip() for v in labels[failed & ~formula_errors(labels)].tolist())
        if markers:
            plan.notes.append(f"the labels {', '.join(f'{m!r} ({n} rows)' for m, n in markers.most_common())} mark gaps, as in the features: "
                              "read as no label (name the class in `init --classes` if it is one)")  # fmt: skip
        labels = np.where(failed, "", labels.astype(str)) if failed.any() else labels
    spellings = merged_spellings(labels.tolist(), classes) if merge_spellings and labels is not None and task == "classification" else {}
    if spellings:
        labels = spelled_as(labels, spellings)
        plan.notes.append("labels spelled another way read as one class: " + ", ".join(f"{a!r} as {b!r}" for a, b in spellings.items()))
    unlabelled = np.char.str_len(np.char.strip(labels.astype(str))) == 0 if labels is not None else np.zeros(len(table), dtype=bool)
    if unlabelled.any() and not labels_are_known:
        at = int(np.argmax(unlabelled))
        count = f" ({int(unlabelled.sum())} rows in all)" if unlabelled.sum() > 1 else ""
        marker = str(written_labels[at]).strip()
        formula = bool(marker) and bool(formula_errors([marker])[0])
        what = f"no label but the {'formula error' if formula else 'gap marker'} {shown(marker)}" if marker else "an empty label"
        example = " (NA for North America)" if marker.upper() == "NA" else ""  # the one marker that is often a real class
        a_class = f"; if {shown(marker)} is a class{example}, name it in `activebayes init --classes`" if marker and not formula else ""
        raise CliError(f"{str(file)!r}: row {at} has {what} (line {table.lines[at]}){count}",
                       f"fill it in, drop the rows without one, or pass --labels-are-known if they are the ones still to label{a_class}")  # fmt: skip
    if labels is not None:  # without classes: no gap to become a class; a regression's: numbers throughout
        check_labels(labels, classes, file, table.lines, numeric=task == "regression", empty_ok=labels_are_known)
    candidates = kept[~unlabelled[kept]]  # the test split needs labels
    if labels is not None and task == "classification":
        from activebayes.data.class_balance import rare_class_note
        from activebayes.data.label_leaks import leak_note, leaking_columns

        plan.notes.extend(leak_note(c, options.label_column, one) for c, one in leaking_columns(plan, labels.astype(str), candidates))
        plan.notes.extend(n for n in [rare_class_note(labels[candidates].astype(str).tolist())] if n)
    _, test_at = split_rows(candidates.size, test_fraction, seed)
    test_rows = candidates[test_at]
    tested_only = classes_only_in_test(labels, np.setdiff1d(kept, test_rows), test_rows) if labels is not None and task == "classification" else []
    if tested_only:
        plan.notes.append(f"every labelled row of the class{'es' if len(tested_only) > 1 else ''} {', '.join(map(repr, tested_only))} went to the test split, so the pool holds "
                          "none to learn from; a test split drawn with another --seed, or a smaller --test-fraction, may keep some")  # fmt: skip
    if test_rows.size and unlabelled[kept].any():
        plan.notes.append(f"the test split ({test_rows.size} rows) is drawn from the {candidates.size} rows labelled already, not from the whole "
                          "table: if those were chosen rather than drawn at random, its figures describe rows like them; "
                          "`activebayes evaluate` estimates the model on the unlabelled pool")  # fmt: skip
    pool_rows = np.setdiff1d(kept, test_rows)
    skewed = logged_columns(plan, pool_rows) if standardize else {}
    logged = skewed if log_skewed else {}
    plan.notes.extend(skewed_note(column, g1) for column, g1 in logged.items())
    if skewed and not log_skewed:
        plan.notes.append(skewed_hint(skewed))
    spec = fit_table_spec(plan, pool_rows, standardize=standardize, text_folder=text_folder, logged=logged)  # on the pool rows
    if label_writing is not None:
        spec["label_written"] = label_writing
    spec["label_na"] = label_na  # every load reads these labels as no label (`dataset_from_table`)
    if spellings:
        spec["label_spellings"] = spellings  # and these as the class they spell
    try:
        data = dataset_from_table(table, spec, options.label_column, plan.key_column)
    except BaseException:
        remove_text_models(spec)
        raise
    return {"data": data, "spec": spec, "plan": plan, "pool_rows": pool_rows, "test_rows": test_rows, "dropped": dropped}


def repeated_rows_note(x: np.ndarray, pool_rows: np.ndarray) -> list[str]:
    """A note on the pool rows `pool_rows` [N] of the features `x` whose features repeat an earlier pool row's
    (`activebayes.same_rows`), or none. Every row of `x` is fingerprinted and the pool's picked (no copy of x[pool_rows])."""
    from activebayes.same_rows import first_of_each, row_fingerprints

    distinct = len(first_of_each(row_fingerprints(x)[pool_rows]))
    if distinct == len(pool_rows):
        return []
    repeats = len(pool_rows) - distinct
    says = "pool row repeats" if repeats == 1 else "pool rows repeat"
    return [f"{repeats} {says} another row's features (the same text or values under another key; {distinct} "
            "different rows in all): a round asks about one of each at a time, and its estimates count every row"]  # fmt: skip


def refuse_constant_target(labels: list[str], rows: np.ndarray, column: str) -> None:
    """A one-line CliError when the regression labels at `rows` (those given; "" is a row still to
    label) all take one value (`activebayes.data.plausible.constant_value`): nothing can be learnt."""
    from activebayes.data.plausible import constant_value

    given = [labels[i] for i in rows if labels[i]]
    value = constant_value(given)
    if value is not None:
        raise CliError(
            f"{column}: all {len(given)} labels are {value:g}; a target that does not vary cannot be learnt",
            "pass the --label-column of the quantity to predict, or give rows where it varies",
        )


def split_rows(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows, test rows), sorted; the test rows are a seeded uniform sample of round(f·n)."""
    n_test = int(round(test_fraction * n))
    if test_fraction > 0 and not 1 <= n_test < n:
        raise CliError(
            f"--test-fraction: {test_fraction} of {n} rows leaves {n_test} test and {n - n_test} pool items",
            "choose a fraction that keeps at least one item in each",
        )
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def refuse_second_pool(store: Any, name: str, info: Any) -> None:
    """A CliError when project `name` has a pool already (one data file a project)."""
    if info.data_path is not None and store.count_items(name) > 0:
        raise CliError(f"project {name!r} already has a pool from {shown_source(info)}",
                       ("to add rows of the same table run `activebayes pool add FILE --append`; for other data, " if info.data_format == "csv" else "")
                       + "create another project with `activebayes init --name NAME`")  # fmt: skip


def register_pool(
    store: Any,
    name: str,
    file: Path,
    *,
    key_column: str | None = None,
    label_column: str | None = None,
    test_fraction: float = 0.0,
    labels_are_known: bool = False,
    truth: Path | None = None,
    image_layout: str = "flat",
    seed: int = 0,
    who: str = "import",
    standardize: bool = True,
    categorical: str = "auto",
    missing: str = "impute",
    features: tuple[str, ...] | None = None,
    ignore: tuple[str, ...] = (),
    text_columns: tuple[str, ...] = (),
    na_values: tuple[str, ...] = (),
    text_folder: Path | None = None,
    merge_spellings: bool = False,
    log_skewed: bool = False,
) -> dict[str, Any]:
    """Validate `file` whole, then record it and its items in the store; returns a summary.

    Shared by `pool add` and `demo`. A csv table is read by `csv_pool` (key column: --key-column,
    else `key` or `id` in any case, else the row number); `text_folder` takes the fitted model of
    a --text-column and the feature cache (default: `activebayes-cache/` next to a SQLite
    database, else in the current folder). `log_skewed`: heavy-tailed columns are read as log(1 + x)
    (`activebayes.data.skewed_columns`; refused with --no-standardize).
    """
    from activebayes.data import detect_format, load_dataset, sha256_file, truth_labels
    from activebayes.data.project import label_texts
    from activebayes.data.feature_cache import CACHED_FORMATS, remove_feature_cache, write_feature_cache
    from activebayes.data.tabular import TableOptions
    from activebayes.errors import DataError
    from activebayes_cli._pool_folder import cache_folder

    folder = text_folder if text_folder is not None else cache_folder(str(store.url))

    info = store.project(name)
    refuse_second_pool(store, name, info)
    fmt = detect_format(file)
    notes: list[str] = []
    classes = info.classes if info.task == "classification" else None
    table_options = features is not None or ignore or text_columns or na_values or merge_spellings or log_skewed
    if fmt != "csv" and (key_column is not None or label_column is not None or table_options):
        raise CliError(
            f"--key-column/--label-column/--features/--ignore/--text-column/--na-values/--merge-label-spellings/--log-skewed: only a .csv file has columns, "
            f"got a .{fmt} file",
            "leave them out",
        )
    table = None
    if fmt == "csv":
        from activebayes.data.csv_table import csv_header, named_header, read_csv_table
        from activebayes.data.key_columns import key_column_of

        written = csv_header(file, name_row_names=False)
        header = named_header(written)
        if label_column is None and "label" in header and "label" not in ignore:
            label_column = "label"
            notes.append("using the column 'label' as labels (--label-column)")
        target_like = [h for h in header if h.lower() in TARGET_NAMES and h not in ignore]
        if label_column is None and target_like:
            notes.append(f"no labels: the column {target_like[0]!r} is taken as a feature; pass --label-column {target_like[0]} if it is what to predict")
        as_text = {label_column, key_column_of(header, key_column, ignore, header != written), *text_columns} - {None}
        csv_file = read_csv_table(file, text_columns=tuple(as_text))  # read once: planned, split and encoded by csv_pool
        options = TableOptions(
            label_column=label_column, key_column=key_column, features=features, ignore=tuple(ignore),
            text_columns=tuple(text_columns), categorical=categorical, missing=missing, na_values=tuple(na_values),
        )  # fmt: skip
        table = csv_pool(
            csv_file, options, classes=classes, test_fraction=test_fraction, seed=seed, standardize=standardize,
            text_folder=folder, task=info.task, labels_are_known=labels_are_known, merge_spellings=merge_spellings, log_skewed=log_skewed,
        )  # fmt: skip
        data, plan = table["data"], table["plan"]
        key_column = plan.key_column
        notes = plan.notes + notes + repeated_rows_note(data.x, table["pool_rows"])
    else:
        data = load_dataset(file, format=fmt, classes=classes, image_layout=image_layout)
    cache = None
    try:
        n = len(data)
        keys = data.keys if data.keys is not None else [str(i) for i in range(n)]
        labels = label_texts(data.y) if data.y is not None else None
        if truth is not None:
            if labels is not None:
                raise CliError(f"--truth: {file} already holds labels", "leave --truth out, or drop the labels from FILE")
            try:
                labels = truth_labels(truth, keys, classes)
            except DataError as exc:
                raise DataError(f"--truth: {exc}") from exc
        if labels is None and (labels_are_known or test_fraction > 0):
            option = "--labels-are-known" if labels_are_known else "--test-fraction"
            raise CliError(f"{option}: {file} has no labels", "pass --label-column C for a csv, or leave the option out")
        new_classes = None
        if info.task == "classification" and classes is None:
            if labels is not None and table is not None:  # the rows --missing drop left out say nothing of the classes
                labels_seen = [labels[i] for i in np.sort(np.concatenate([table["pool_rows"], table["test_rows"]])) if labels[i]]
            else:
                labels_seen = labels
            new_classes = infer_classes([s for s in labels_seen if s] if labels_seen is not None else None, file, truth, name)
            notes.append(f"classes read from the labels: {', '.join(new_classes[:20])}" + (" ..." if len(new_classes) > 20 else ""))
            notes.extend(look_alike_classes(new_classes, name))
        if table is not None:
            pool_rows, test_rows, spec = table["pool_rows"], table["test_rows"], table["spec"]
        else:
            pool_rows, test_rows = split_rows(n, test_fraction, seed)
            spec = feature_settings(data, fmt, pool_rows, standardize)
        if info.task == "regression" and labels is not None:
            refuse_constant_target(labels, np.concatenate([pool_rows, test_rows]), label_column or "label")
        truth_kind = "none" if labels is None else ("known" if labels_are_known else "held-back")
        settings = {
            "label_column": label_column,
            "key_column": key_column,
            "image_layout": image_layout,
            "truth": truth_kind,
            "test_fraction": test_fraction,
            "split_seed": seed,
        }
        if spec is not None:
            settings["features"] = spec
        if truth is not None:
            settings.update(truth_path=str(truth.resolve()), truth_sha256=sha256_file(truth))
        if fmt in CACHED_FORMATS:  # what every later load memory-maps instead of parsing the file again
            cache = write_feature_cache(data, folder, stem=name, data_format=fmt, settings=settings, data_sha256=sha256_file(file))
            settings["feature_cache"] = cache
        # Everything is validated: one transaction records the file, the items and the known labels
        # (the test split's always, the pool's with --labels-are-known).
        known_rows = [i for i in [*test_rows, *(pool_rows if labels_are_known else ())] if labels[i]]  # "": a row still to label
        if labels is not None and len(known_rows) < len(test_rows) + len(pool_rows) * labels_are_known:
            notes.append(f"{len(pool_rows) + len(test_rows) - len(known_rows)} rows without a label are the pool to label; {len(known_rows)} labels imported")
        store.import_pool(
            name, file, data_format=fmt, settings=settings,
            pool_rows=pool_rows, pool_keys=[keys[i] for i in pool_rows],
            test_rows=test_rows, test_keys=[keys[i] for i in test_rows],
            observations=[(keys[i], labels[i]) for i in known_rows], who=who, source="import", classes=new_classes,
        )  # fmt: skip
    except BaseException:
        remove_text_models(table["spec"] if table is not None else None)
        remove_feature_cache(cache)
        raise
    plan = table["plan"] if table is not None else None
    return {
        "project": name,
        "file": str(file.resolve()),
        "format": fmt,
        "rows": n,
        "pool_items": int(len(pool_rows)),
        "test_items": int(len(test_rows)),
        "truth": truth_kind,
        "features": list(data.x.shape[1:]),
        "standardized": bool(spec and spec["standardize"]),
        "categorical": dict(data.categories or {}),
        "text_columns": [c.name for c in plan.columns if c.kind == "text"] if plan else [],
        "ignored": ignored_columns(plan, label_column, key_column),
        "not_features": not_features(plan, label_column, key_column),
        "columns": feature_columns(spec) if plan else {},
        "key_column": key_column,
        "missing": plan.missing_counts() if plan else {},
        "missing_mode": missing if plan else None,
        "dropped_rows": [int(r) for r in table["dropped"]] if table is not None else [],
        "classes": new_classes if new_classes is not None else classes,
        "notes": notes,
    }
