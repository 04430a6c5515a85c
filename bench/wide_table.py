"""Wide tables: fitting the recorded features of a table with thousands of numeric columns
(gene expression, spectra, pixels saved as csv), ours against scikit-learn's ColumnTransformer.

    .venv/bin/python bench/wide_table.py [--rows 1000] [--columns 3000] [--repeats 3]

The table (seeded): an `id` key, `--columns` numeric features with about 5 % gaps, a 2-class
label. Ours: `fit_table_spec` of the planned table (numeric columns fitted a block at a time,
column-major). Peer: the spec's own reference, `build_pipeline(plan)` (a ColumnTransformer of one
SimpleImputer + StandardScaler per column and a MissingIndicator per gappy column) fitted on the
[N, M] matrix, as scikit-learn would be used on the same plan. Both fits must give the same
fill, mean and scale; the ratio is peer / ours (the least time of the repeats, one thread).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def write_table(path: Path, rows: int, columns: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, columns)) * rng.uniform(0.1, 100.0, columns)
    gaps = rng.random((rows, columns)) < 0.05
    with path.open("w") as fh:
        fh.write("id," + ",".join(f"g{j}" for j in range(columns)) + ",label\n")
        for i in range(rows):
            cells = ["" if gap else f"{v:.5g}" for v, gap in zip(x[i], gaps[i])]
            fh.write(f"s{i}," + ",".join(cells) + f",{'ab'[i % 2]}\n")


def least(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--columns", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from activebayes.data.csv_table import read_csv_table
    from activebayes.data.table_spec import _object_matrix, build_pipeline, fit_table_spec
    from activebayes.data.tabular import TableOptions, plan_table

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "wide.csv"
        write_table(path, args.rows, args.columns)
        start = time.perf_counter()
        plan = plan_table(read_csv_table(path, text_columns=("id", "label")), TableOptions(label_column="label", missing="impute"))
        read_s = time.perf_counter() - start
        rows = np.arange(args.rows)
        fit_table_spec(plan, rows[:10])  # warm up: scikit-learn's imports are no part of either fit
        ours_s, spec = least(lambda: fit_table_spec(plan, rows), args.repeats)
        matrix = _object_matrix(plan)
        peer_s, fitted = least(lambda: build_pipeline(plan).fit(matrix), args.repeats)
    steps = [step for name, step, _ in fitted.transformers_ if not name.endswith("(missing)") and name != "remainder"]
    for entry, step in zip(spec["columns"], steps):
        assert (entry["fill"], entry["mean"], entry["scale"]) == (step[0].statistics_[0], step[1].mean_[0], step[1].scale_[0]), entry["name"]
    print(f"{args.rows} rows x {args.columns} numeric columns (read and planned in {read_s:.2f} s); the same statistics in both")
    print("| fit | seconds | peer / ours |")
    print("|---|---:|---:|")
    print(f"| ours: fit_table_spec (blocks of columns) | {ours_s:.3f} | |")
    print(f"| peer: scikit-learn ColumnTransformer of the same plan | {peer_s:.3f} | {peer_s / ours_s:.1f}x |")


if __name__ == "__main__":
    main()
