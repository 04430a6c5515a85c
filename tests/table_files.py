"""Small csv tables the table tests write (`test_table_plan.py`, `test_pool_add_tables.py`)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from activebayes.data.csv_table import read_csv_table
from activebayes.data.tabular import TableOptions, plan_table


WORDS = {"a": "good great lovely fine fun excellent".split(), "b": "bad awful poor dull boring terrible".split()}


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def people(path: Path, n: int = 60, *, seed: int = 0) -> Path:
    """id (unique text), age (gaps at rows 0, 7, 14 ...: '' / NA / ? / null), height, colour
    (3 levels, gaps at rows 5, 16, ...: N/A), note (unique free text), label a/b."""
    rng = np.random.default_rng(seed)
    gap = ["", "NA", "?", "null", "NaN"]
    rows = []
    for i in range(n):
        label = "ab"[i % 2]
        age = gap[(i // 7) % len(gap)] if i % 7 == 0 else f"{30 + 10 * rng.normal():.2f}"
        colour = "N/A" if i % 11 == 5 else ("red", "green", "blue")[i % 3]
        note = " ".join(rng.choice(WORDS[label], 4)) + f" visit {i}"
        rows.append([f"P-{i:04d}", age, f"{170 + 5 * rng.normal():.2f}", colour, note, label])
    return write_csv(path, ["id", "age", "height", "colour", "note", "label"], rows)


def plan(path: Path, **options) -> object:
    return plan_table(read_csv_table(path), TableOptions(label_column="label", **options))


def row_named(path: Path, first: list[str], header_first: str = "", extra: tuple[str, ...] = ()) -> Path:
    """A table whose first column is `first` under the name `header_first` ('' as R and pandas
    write row names), then `extra` columns, x and label."""
    header = [header_first, *extra, "x", "label"]
    rows = [[name, *(f"{e}{i}" for e in extra), f"{(i * 0.37) % 1:.3f}", "ab"[i % 2]] for i, name in enumerate(first)]
    return write_csv(path, header, rows)
