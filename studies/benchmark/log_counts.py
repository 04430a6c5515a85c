"""Heavy-tailed counts and the greedy arms: a benchmark table as it is and with log(1 + x) of each
non-negative numeric feature column, random against power-epig/auto and margin/auto.

On spam7 (counts of characters, `$`, `!` and words per e-mail, with medians of 0 and maxima up to
15,841) the greedy arms trail random after a random first batch; whether a log of such columns
changes that is a question about the features, asked here on one table at a time, outside the
benchmark's protocol (its default arm and rules are unchanged):

    .venv/bin/python studies/benchmark/log_counts.py --tables spam7 --seeds 0,1,2,3,4 --jobs 2

prints, per table and form, random's mean accuracy over 10-100 labels and each arm's Δ area
against it (mean ± SE over seeds, paired by seed). Runs go to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402
import tables as benchmark_tables  # noqa: E402

ARMS = ("random", "power-epig/auto", "margin/auto")


def log_counts(frame: Any, label: str) -> Any:
    """A copy of the pandas `frame` with log(1 + x) of every numeric column but `label` whose
    values are all non-negative (gaps stay gaps); other columns as they are."""
    import pandas as pd

    out = frame.copy()
    for column in frame.columns:
        values = frame[column]
        if column != label and pd.api.types.is_numeric_dtype(values) and not (values < 0).any():
            out[column] = np.log1p(values)
    return out


def delta_rows(records: list[dict[str, Any]]) -> list[tuple[str, str, float, float, float]]:
    """(table form, arm, random's mean area, Δ mean, Δ SE) per form and non-random arm, Δ paired by seed."""
    area: dict[tuple[str, str], dict[int, float]] = {}
    for r in records:
        area.setdefault((r["table"], r["arm"]), {})[r["seed"]] = statistics.mean(p["accuracy"] for p in r["curve"])
    rows = []
    for form in dict.fromkeys(t for t, _ in area):
        base = area[(form, "random")]
        for arm in ARMS[1:]:
            deltas = [area[(form, arm)][s] - base[s] for s in sorted(base)]
            se = statistics.stdev(deltas) / len(deltas) ** 0.5 if len(deltas) > 1 else float("nan")
            rows.append((form, arm, statistics.mean(base.values()), statistics.mean(deltas), se))
    return rows


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="spam7", help="comma-separated benchmark tables")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    cfg = json.loads((Path(__file__).resolve().parent / "config.json").read_text())
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory(prefix="ab-log-counts-") as tmp:
        work = Path(tmp)
        names = args.tables.split(",")
        records = benchmark_tables.write_tables(work, names, cfg["max_rows"])
        jobs = []
        for name in names:
            rec = records[name]
            if rec["task"] != "classification":
                raise SystemExit(f"{name}: a classification table is needed")
            raw = work / rec["file"]
            logged = work / f"{name}-log1p.csv"
            log_counts(pd.read_csv(raw), rec["label"]).to_csv(logged, index=False)
            for form, path in ((name, raw), (f"{name} log1p", logged)):
                for arm in ARMS:
                    for seed in seeds:
                        jobs.append({"table": form, "arm": arm, "seed": seed, "task": rec["task"], "label": rec["label"],
                                     "key": rec["key"], "csv": str(path), "settings": bench.fingerprint(cfg, rec),
                                     "path": str(work / "runs" / form / arm.replace("/", "+") / f"seed{seed}.json")})  # fmt: skip
        with ProcessPoolExecutor(args.jobs, initializer=bench._init_worker) as pool:
            done = list(pool.map(bench.run_one, jobs))
    print("| table | arm | random, mean accuracy 10-100 labels | Δ area against random |")
    print("|---|---|---:|---:|")
    for form, arm, base, delta, se in delta_rows(done):
        print(f"| {form} | {arm} | {base:.3f} | {delta:+.3f} ± {se:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
