"""The report of baselines.py's runs: accuracy per table, model and label count, and the ratios
of the default model's accuracy to each baseline's.

    .venv/bin/python studies/benchmark/baselines_report.py studies/benchmark/results/baselines/heldout

`<out>/results.md` and `<out>/summary.json` from `<out>/runs/<table>/seed<S>.json`:

* per table and label count n, each model's test accuracy, mean over seeds;
* the ratio ours ÷ baseline per table (of those means, as README_EXPERIMENTS.md's small-table
  section) and, per n, its median over tables, its lowest value and the number of tables where
  it is below 0.97 and above 1 / 0.97; the mean over tables of the difference in accuracy and
  the number of tables where it is above and below 0; only tables where every seed has that n (a pool smaller than n has none).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

OURS = "ours"
#: a ratio below this counts as trailing the baseline
BEHIND = 0.97


def load_runs(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*/seed*.json"))]


def mean_accuracy(runs: list[dict[str, Any]]) -> dict[str, dict[int, dict[str, float]]]:
    """{table: {n: {model: mean accuracy over the table's seeds}}}, for the n every seed of the table has."""
    acc: dict[str, dict[int, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    seeds: dict[str, int] = defaultdict(int)
    for run in runs:
        seeds[run["table"]] += 1
        for r in run["results"]:
            acc[run["table"]][r["labels"]][r["model"]].append(r["accuracy"])
    return {t: {n: {m: statistics.mean(v) for m, v in by_model.items()} for n, by_model in sorted(by_n.items())
                if all(len(v) == seeds[t] for v in by_model.values())}
            for t, by_n in acc.items()}  # fmt: skip


def ratios(means: dict[str, dict[int, dict[str, float]]], baseline: str) -> dict[str, dict[int, float]]:
    """{table: {n: mean accuracy of OURS ÷ that of `baseline`}} where both have one above 0."""
    return {t: {n: m[OURS] / m[baseline] for n, m in by_n.items() if m.get(baseline) and OURS in m} for t, by_n in means.items()}


def ratio_summary(by_table: dict[str, dict[int, float]]) -> dict[int, dict[str, Any]]:
    """{n: {"median", "min", "min_table", "behind" (tables below BEHIND), "ahead" (above 1 / BEHIND),
    "tables"}} over the tables."""
    out: dict[int, dict[str, Any]] = {}
    for n in sorted({n for r in by_table.values() for n in r}):
        values = {t: r[n] for t, r in by_table.items() if n in r}
        low = min(values, key=values.__getitem__)
        out[n] = {"median": statistics.median(values.values()), "min": values[low], "min_table": low,
                  "behind": sum(v < BEHIND for v in values.values()), "ahead": sum(v > 1 / BEHIND for v in values.values()),
                  "tables": len(values)}  # fmt: skip
    return out


def difference_summary(means: dict[str, dict[int, dict[str, float]]], baseline: str) -> dict[int, dict[str, Any]]:
    """{n: {"mean": mean over tables of accuracy(OURS) − accuracy(`baseline`) (seed means), "above",
    "below": tables where the difference is > 0 / < 0, "tables"}}."""
    diffs: dict[int, list[float]] = defaultdict(list)
    for by_n in means.values():
        for n, m in by_n.items():
            if OURS in m and baseline in m:
                diffs[n].append(m[OURS] - m[baseline])
    return {n: {"mean": statistics.mean(d), "above": sum(v > 0 for v in d), "below": sum(v < 0 for v in d), "tables": len(d)}
            for n, d in sorted(diffs.items())}  # fmt: skip


def markdown(runs: list[dict[str, Any]]) -> str:
    means = mean_accuracy(runs)
    models = list(dict.fromkeys(r["model"] for run in runs for r in run["results"]))
    sizes = sorted({r["labels"] for run in runs for r in run["results"]})
    seeds = sorted({run["seed"] for run in runs})
    baselines = [m for m in models if m != OURS]
    lines = [f"# The default model against baselines on the same labels ({len(means)} tables, seeds {seeds})", ""]
    if OURS in models:
        lines += [f"Median over tables of accuracy({OURS}) ÷ accuracy(baseline) (means over seeds); "
                  f"lowest ratio (table); tables below {BEHIND} / above {1 / BEHIND:.2f}, of all:", "",
                  "| baseline | " + " | ".join(f"{n} labels" for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]  # fmt: skip
        for b in baselines:
            s = ratio_summary(ratios(means, b))
            cells = [f"{s[n]['median']:.3f} (min {s[n]['min']:.2f} {s[n]['min_table']}; {s[n]['behind']} / {s[n]['ahead']} of {s[n]['tables']})"
                     if n in s else "–" for n in sizes]  # fmt: skip
            lines.append(f"| {b} | " + " | ".join(cells) + " |")
        lines += ["", f"Mean over tables of accuracy({OURS}) − accuracy(baseline); tables where it is above / below 0:", "",
                  "| baseline | " + " | ".join(f"{n} labels" for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]  # fmt: skip
        for b in baselines:
            d = difference_summary(means, b)
            lines.append(f"| {b} | " + " | ".join(f"{d[n]['mean']:+.4f} ({d[n]['above']} / {d[n]['below']})" if n in d else "–" for n in sizes) + " |")
        lines.append("")
    lines += ["Test accuracy, mean over seeds (" + ", ".join(models) + "), and ours ÷ lr:", "",
              "| table | classes | pool | " + " | ".join(f"{n} labels" for n in sizes) + " |", "|---|---:|---:|" + "---|" * len(sizes)]  # fmt: skip
    info = {run["table"]: run for run in runs}
    for t, by_n in sorted(means.items()):
        cells = []
        for n in sizes:
            m = by_n.get(n)
            if not m:
                cells.append("–")
                continue
            ratio = f" ({m[OURS] / m['lr']:.2f})" if OURS in m and m.get("lr") else ""
            cells.append(" / ".join(f"{m[k]:.3f}" for k in models if k in m) + ratio)
        lines.append(f"| {t} | {info[t]['classes']} | {info[t]['pool']} | " + " | ".join(cells) + " |")
    seconds = defaultdict(float)
    for run in runs:
        for r in run["results"]:
            seconds[r["model"]] += r["seconds"]
    lines += ["", "Fit + test time over all runs: " + ", ".join(f"{m} {s:.0f} s" for m, s in seconds.items()) + ".", ""]
    return "\n".join(lines)


def write_report(out: Path) -> dict[str, Any]:
    runs = load_runs(out)
    means = mean_accuracy(runs)
    baselines = sorted({r["model"] for run in runs for r in run["results"]} - {OURS})
    summary = {"means": means, "ratios": {b: {"tables": ratios(means, b), "summary": ratio_summary(ratios(means, b)),
                                              "differences": difference_summary(means, b)} for b in baselines}}  # fmt: skip
    (out / "results.md").write_text(markdown(runs))
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    write_report(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "results" / "baselines")
