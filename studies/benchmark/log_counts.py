"""Heavy-tailed columns and active learning: a benchmark table as it is and with log(1 + x) of its
heavy-tailed non-negative numeric columns, random against the default arm (and others).

On spam7 (counts of characters, `$`, `!` and words per e-mail, with medians of 0 and maxima up to
15,841) the greedy arms trail random after a random first batch; whether a log of such columns
changes that is a question about the features, asked here outside the benchmark's protocol (its
default arm and rules are unchanged):

    .venv/bin/python studies/benchmark/log_counts.py --tables spam7 --seeds 0,1,2,3,4 --jobs 2
    .venv/bin/python studies/benchmark/log_counts.py --tables skewed --arms random,power-margin/auto \
        --columns skewed --seeds 0,1,2 --jobs 2

prints, per table and form, random's mean accuracy over 10-100 labels and each arm's Δ area
against it (mean ± SE over seeds, paired by seed), and with `--tables skewed` the comparison of
the two forms per arm. Runs go to a temporary folder.

`--columns all` logs every non-negative numeric column but the label (the first study, spam7
only); `--columns skewed` only those `skewed_columns` names: at least MIN_DISTINCT distinct
values, none negative, and a sample skewness g1 = m3 / m2^1.5 over SKEWNESS_LIMIT (2, an
exponential distribution's), the rule proposed for `pool add` (computed here on the whole table,
where `pool add` would decide on the pool rows). `--tables skewed` takes every classification
table of the benchmark's config, the held-out set and the confirmation set (heldout.py) with at
least one such column.

**The rule for making it `pool add`'s default, fixed before the `--tables skewed` run:** over
those tables, 3 seeds, paired by table and seed, the logged form's mean accuracy over 10-100
labels minus the form as imported: (1) random's median over tables is above 0, (2) the default
arm's (power-margin/auto) is at least 0, and (3) for each arm, the tables where the logged form
is worse by more than 2 SE are no more than those where it is better by more than 2 SE.
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
from activebayes.data.skewed_columns import MIN_DISTINCT, SKEWNESS_LIMIT, skewness  # noqa: E402  (the rule of pool add --log-skewed)

ARMS = ("random", "power-epig/auto", "margin/auto")


def skewed_columns(frame: Any, label: str) -> list[str]:
    """The numeric columns of the pandas `frame` but `label` that the proposed rule logs (module docstring)."""
    import pandas as pd

    out = []
    for column in frame.columns:
        values = frame[column].dropna()
        if column == label or not pd.api.types.is_numeric_dtype(values) or (values < 0).any() or values.nunique() < MIN_DISTINCT:
            continue
        if skewness(values.to_numpy(dtype=np.float64)) > SKEWNESS_LIMIT:
            out.append(column)
    return out


def log_counts(frame: Any, label: str, columns: str = "all") -> Any:
    """A copy of the pandas `frame` with log(1 + x) of its non-negative numeric columns but
    `label` (`columns="all"`), or of its `skewed_columns` (`"skewed"`); gaps stay gaps."""
    import pandas as pd

    out = frame.copy()
    chosen = skewed_columns(frame, label) if columns == "skewed" else [
        c for c in frame.columns if c != label and pd.api.types.is_numeric_dtype(frame[c]) and not (frame[c] < 0).any()]  # fmt: skip
    for column in chosen:
        out[column] = np.log1p(frame[column])
    return out


def _areas(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[int, float]]:
    """{(table form, arm): {seed: mean accuracy over the curve}}."""
    area: dict[tuple[str, str], dict[int, float]] = {}
    for r in records:
        area.setdefault((r["table"], r["arm"]), {})[r["seed"]] = statistics.mean(p["accuracy"] for p in r["curve"])
    return area


def _paired(a: dict[int, float], b: dict[int, float]) -> tuple[float, float]:
    """(mean, SE) over the seeds of a − b."""
    deltas = [a[s] - b[s] for s in sorted(b)]
    se = statistics.stdev(deltas) / len(deltas) ** 0.5 if len(deltas) > 1 else float("nan")
    return statistics.mean(deltas), se


def delta_rows(records: list[dict[str, Any]], arms: tuple[str, ...] = ARMS) -> list[tuple[str, str, float, float, float]]:
    """(table form, arm, random's mean area, Δ mean, Δ SE) per form and non-random arm, Δ paired by seed."""
    area = _areas(records)
    rows = []
    for form in dict.fromkeys(t for t, _ in area):
        base = area[(form, "random")]
        rows += [(form, arm, statistics.mean(base.values()), *_paired(area[(form, arm)], base)) for arm in arms if arm != "random"]
    return rows


def form_rows(records: list[dict[str, Any]], names: list[str], arms: tuple[str, ...]) -> dict[str, list[tuple[str, float, float]]]:
    """{arm: [(table, logged − as imported mean, SE)]}: each arm's mean accuracy over the curve with
    the table's heavy-tailed columns logged minus as imported, paired by seed."""
    area = _areas(records)
    return {arm: [(n, *_paired(area[(f"{n} log1p", arm)], area[(n, arm)])) for n in names] for arm in arms}


def form_summary(rows: list[tuple[str, float, float]]) -> str:
    """"median Δ m over T tables; better / worse by > 2 SE: b / w" of one arm's `form_rows`."""
    better = sum(d > 2 * se for _, d, se in rows)
    worse = sum(d < -2 * se for _, d, se in rows)
    return f"median {statistics.median(d for _, d, _ in rows):+.4f} over {len(rows)} tables; better / worse by > 2 SE: {better} / {worse}"


def skewed_tables(max_rows: int) -> list[str]:
    """The classification tables of the config, the held-out and the confirmation sets with a
    column `skewed_columns` logs (written to the benchmark's cache to read them)."""
    import pandas as pd

    import heldout

    cfg = json.loads((Path(__file__).resolve().parent / "config.json").read_text())
    names = [n for n in cfg["tables"] if benchmark_tables.TABLES[n].task == "classification"]
    for name in ("heldout", "confirm"):
        chosen, _ = heldout.heldout_tables(name)
        benchmark_tables.TABLES.update(chosen)
        names += list(chosen)
    records = benchmark_tables.write_tables(benchmark_tables.CACHE, names, max_rows)
    return [n for n in names if skewed_columns(pd.read_csv(benchmark_tables.CACHE / records[n]["file"], low_memory=False), records[n]["label"])]


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="spam7", help="comma-separated benchmark tables, or 'skewed' (module docstring)")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms, random first")
    parser.add_argument("--columns", choices=("all", "skewed"), default="all", help="which non-negative numeric columns to log")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    cfg = json.loads((Path(__file__).resolve().parent / "config.json").read_text())
    seeds = [int(s) for s in args.seeds.split(",")]
    arms = tuple(args.arms.split(","))
    names = skewed_tables(cfg["max_rows"]) if args.tables == "skewed" else args.tables.split(",")
    print(f"{len(names)} table(s): {', '.join(names)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="ab-log-counts-") as tmp:
        work = Path(tmp)
        records = benchmark_tables.write_tables(work, names, cfg["max_rows"])
        jobs = []
        for name in names:
            rec = records[name]
            if rec["task"] != "classification":
                raise SystemExit(f"{name}: a classification table is needed")
            raw = work / rec["file"]
            logged = work / f"{name}-log1p.csv"
            log_counts(pd.read_csv(raw, low_memory=False), rec["label"], args.columns).to_csv(logged, index=False)
            for form, path in ((name, raw), (f"{name} log1p", logged)):
                for arm in arms:
                    for seed in seeds:
                        jobs.append({"table": form, "arm": arm, "seed": seed, "task": rec["task"], "label": rec["label"],
                                     "key": rec["key"], "csv": str(path), "settings": bench.fingerprint(cfg, rec),
                                     "path": str(work / "runs" / form / arm.replace("/", "+") / f"seed{seed}.json")})  # fmt: skip
        with ProcessPoolExecutor(args.jobs, initializer=bench._init_worker) as pool:
            done = list(pool.map(bench._safe_run, jobs))
    failed = sorted({r["table"].removesuffix(" log1p") for r in done if "error" in r})
    for name in failed:
        print(f"{name}: left out, a run failed: {next(r['error'] for r in done if 'error' in r and r['table'].startswith(name))}")
    done = [r for r in done if r["table"].removesuffix(" log1p") not in failed]
    names = [n for n in names if n not in failed]
    print("| table | arm | random, mean accuracy 10-100 labels | Δ area against random |")
    print("|---|---|---:|---:|")
    for form, arm, base, delta, se in delta_rows(done, arms):
        print(f"| {form} | {arm} | {base:.3f} | {delta:+.3f} ± {se:.3f} |")
    if len(names) > 1:
        rows = form_rows(done, names, arms)
        print("\n| table | " + " | ".join(f"{arm}: logged − as imported" for arm in arms) + " |")
        print("|---|" + "---:|" * len(arms))
        for i, name in enumerate(names):
            print(f"| {name} | " + " | ".join(f"{rows[arm][i][1]:+.4f} ± {rows[arm][i][2]:.4f}" for arm in arms) + " |")
        for arm in arms:
            print(f"{arm}: {form_summary(rows[arm])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
