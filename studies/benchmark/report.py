"""The benchmark's report, from the finished runs in `<out>/runs` (written by run.py).

    .venv/bin/python studies/benchmark/report.py [--out studies/benchmark/results] [--config studies/benchmark/config.json]

Writes, into `<out>`:

* `curves.png`: a panel per table, the mean test accuracy (classification) or RMSE (regression)
  over seeds against the number of labels, a ±1 standard-error band per arm.
* `results.md`: per task, a row per table and a column per arm, plus the median over tables:
  - Δ area: the area under the arm's curve relative to random's, i.e. the mean of the metric over
    the label counts 10, 20, ..., 100 minus random's, per seed (a seed shares the test split and
    the first 10 labels between arms, so the difference is paired), then the mean ± standard
    error over seeds. Regression uses the RMSE, lower is better, reported as random's minus the
    arm's, so a positive Δ is better in both tasks.
  - labels to reach random: the labels the arm's mean curve needs to reach random's mean at 100
    labels (linearly interpolated between label counts; "> 100" when it never does).
  - the mean seconds per run.
  The arm the CLI's defaults make is marked "(default)" (arms.py reads it from the CLI's constants).
* in a held-out or confirmation set's folder (run.py `--tables heldout|confirm`, which keeps the
  set's selection there as `selection.md`): after the above, the summary rows in the benchmark's
  format and the selection (heldout.py), the same whether run.py or report.py alone writes it.
* `summary.json`: all of it, machine-readable (per table and arm: the mean curve, its standard
  errors, the seeds, Δ area ± SE, labels to reach random, seconds per run; per task the medians).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import heldout  # noqa: E402
from arms import default_arm, is_default  # noqa: E402


def load_runs(out: Path, cfg: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], int]:
    """(finished runs in `out`/runs matching `cfg`'s k, max_labels and test_fraction, runs left out)."""
    runs, stale = [], 0
    for path in sorted((out / "runs").glob("*/*/seed*.json")):
        try:
            run = json.loads(path.read_text())
        except (OSError, ValueError):
            stale += 1
            continue
        s = run.get("settings", {})
        if cfg is not None and (s.get("k"), s.get("max_labels"), s.get("test_fraction")) != (
            int(cfg["k"]), int(cfg["max_labels"]), float(cfg["test_fraction"])
        ):
            stale += 1
            continue
        runs.append(run)
    return runs, stale


def _se(values: list[float]) -> float | None:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None


def labels_to_reach(labels: list[int], means: list[float], target: float, higher_is_better: bool) -> float | None:
    """The first label count at which the curve reaches `target`, interpolated linearly between
    the recorded counts; None when it never does."""
    def reached(m: float) -> bool:
        return m >= target if higher_is_better else m <= target

    for i, (n, m) in enumerate(zip(labels, means)):
        if reached(m):
            if i == 0 or means[i] == means[i - 1]:
                return float(n)
            n0, m0 = labels[i - 1], means[i - 1]
            return n0 + (target - m0) / (m - m0) * (n - n0)
    return None


def _order(names: list[str], preferred: list[str]) -> list[str]:
    return [n for n in preferred if n in names] + sorted(n for n in names if n not in preferred)


def summarise(runs: list[dict[str, Any]], cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary (see the module docstring) of `runs`."""
    max_labels = int(cfg["max_labels"]) if cfg else max(p["labels"] for r in runs for p in r["curve"])
    by_table: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_table.setdefault(run["table"], []).append(run)
    table_order = _order(list(by_table), list(cfg.get("tables", [])) if cfg else [])
    tables: dict[str, Any] = {}
    for name in table_order:
        trs = by_table[name]
        task, metric = trs[0]["task"], trs[0]["metric"]
        higher = task == "classification"
        sign = 1.0 if higher else -1.0
        arm_order = _order(sorted({r["arm"] for r in trs}), list(cfg["arms"][task]) if cfg else ["random"])
        # per arm and seed: the curve {labels: value} (only complete curves count)
        curves: dict[str, dict[int, dict[int, float]]] = {}
        seconds: dict[str, list[float]] = {}
        for r in trs:
            curve = {int(p["labels"]): float(p[metric]) for p in r["curve"]}
            if max_labels not in curve:
                continue
            curves.setdefault(r["arm"], {})[int(r["seed"])] = curve
            seconds.setdefault(r["arm"], []).append(float(r["seconds"]))
        labels = sorted({n for arm in curves.values() for c in arm.values() for n in c})
        area = {arm: {s: statistics.mean(c[n] for n in labels if n in c) for s, c in seeds.items()} for arm, seeds in curves.items()}
        arms: dict[str, Any] = {}
        random_curve = None
        if "random" in curves:
            random_curve = [statistics.mean(c[n] for c in curves["random"].values() if n in c) for n in labels]
        for arm in arm_order:
            if arm not in curves:
                continue
            seeds = curves[arm]
            per_label = [[c[n] for c in seeds.values() if n in c] for n in labels]
            mean = [statistics.mean(v) for v in per_label]
            entry: dict[str, Any] = {
                "seeds": sorted(seeds),
                "labels": labels,
                "mean": mean,
                "se": [_se(v) for v in per_label],
                "area": statistics.mean(area[arm].values()),
                "area_se": _se(list(area[arm].values())),
                "seconds_per_run": statistics.mean(seconds[arm]),
            }
            if "random" in area:
                paired = [sign * (area[arm][s] - area["random"][s]) for s in sorted(set(area[arm]) & set(area["random"]))]
                entry["delta_vs_random"] = statistics.mean(paired) if paired else None
                base = statistics.mean(area["random"].values())
                entry["delta_relative"] = entry["delta_vs_random"] / abs(base) if paired and base else None
                entry["delta_se"] = _se(paired) if arm != "random" else 0.0
                entry["delta_seeds"] = len(paired)
                target = random_curve[labels.index(max_labels)]
                entry["labels_to_reach_random"] = labels_to_reach(labels, mean, target, higher)
            arms[arm] = entry
        some = trs[0]
        tables[name] = {
            "task": task,
            "metric": metric,
            "higher_is_better": higher,
            "rows": some["pool"]["rows"],
            "pool_items": some["pool"]["pool_items"],
            "test_items": some["pool"]["test_items"],
            "classes": some["pool"]["classes"],
            "random_at_max": random_curve[labels.index(max_labels)] if random_curve else None,
            "arms": arms,
        }
    tasks: dict[str, Any] = {}
    for task in ("classification", "regression"):
        names = [n for n, t in tables.items() if t["task"] == task]
        if not names:
            continue
        arm_names = _order(sorted({a for n in names for a in tables[n]["arms"]}), list(cfg["arms"][task]) if cfg else ["random"])
        medians = {}
        for arm in arm_names:
            entries = [tables[n]["arms"][arm] for n in names if arm in tables[n]["arms"]]
            deltas = [e["delta_vs_random"] for e in entries if e.get("delta_vs_random") is not None]
            relative = [e["delta_relative"] for e in entries if e.get("delta_relative") is not None]
            reach = [e["labels_to_reach_random"] if e["labels_to_reach_random"] is not None else math.inf
                     for e in entries if "labels_to_reach_random" in e]  # fmt: skip
            better = sum(1 for e in entries if e.get("delta_se") and e["delta_vs_random"] > 2 * e["delta_se"])
            worse = sum(1 for e in entries if e.get("delta_se") and e["delta_vs_random"] < -2 * e["delta_se"])
            trails = sum(1 for e in entries if e.get("delta_se") is not None and e["delta_vs_random"] < -e["delta_se"])
            median_reach = statistics.median(reach) if reach else None
            medians[arm] = {
                "tables": len(entries),
                "median_delta_vs_random": statistics.median(deltas) if deltas else None,
                "mean_delta_vs_random": statistics.mean(deltas) if deltas else None,
                "median_delta_relative": statistics.median(relative) if relative else None,
                "median_labels_to_reach_random": None if median_reach is None or math.isinf(median_reach) else median_reach,
                "never_reach": sum(1 for r in reach if math.isinf(r)),
                "better_than_random_2se": better,
                "worse_than_random_2se": worse,
                "worse_than_random_1se": trails,
                "seconds_per_run": statistics.mean(e["seconds_per_run"] for e in entries),
            }
        tasks[task] = {"tables": names, "arms": arm_names, "summary": medians}
    return {"max_labels": max_labels, "tables": tables, "tasks": tasks}


# ---- output ------------------------------------------------------------------------------------
def _fmt_delta(e: dict[str, Any], digits: int) -> str:
    if e.get("delta_vs_random") is None:
        return "–"
    se = e.get("delta_se")
    return f"{e['delta_vs_random']:+.{digits}f}" + (f" ± {se:.{digits}f}" if se else "")


def _fmt_reach(value: float | None, max_labels: int) -> str:
    return f"> {max_labels}" if value is None else f"{value:.0f}"


def _digits(task: str, tables: dict[str, Any], names: list[str]) -> int:
    if task == "classification":
        return 3
    scale = max((abs(tables[n]["random_at_max"] or 0.0) for n in names), default=1.0)
    return max(0, 3 - int(math.floor(math.log10(scale))) - 1) if scale > 0 else 3


def markdown(summary: dict[str, Any], cfg: dict[str, Any] | None, notes: list[str], meta: dict[str, Any]) -> str:
    L = summary["max_labels"]
    tables = summary["tables"]
    lines = ["# Active-learning benchmark on real tables", ""]
    lines.append(
        "Written by `studies/benchmark/report.py` from the runs in `runs/` (`studies/benchmark/run.py`). Each run is "
        f"what the CLI does: `pool add TABLE.csv --label-column L [--key-column K] --test-fraction "
        f"{cfg['test_fraction'] if cfg else 0.3} --seed S`, then `round --oracle truth --acquisition ARM --k "
        f"{cfg['k'] if cfg else 10} --seed S` with the default model (classification: mlp + mc-dropout; regression: gp) "
        f"until a round has been fitted on {L} labels; the first round is the tool's cold start. Mean over seeds; "
        "± is one standard error over seeds."
    )
    lines += ["", f"{meta.get('runs', 0)} runs; seeds per cell in summary.json. {meta.get('timing', '')}".rstrip(), ""]
    for task, block in summary["tasks"].items():
        names, arms = block["tables"], block["arms"]
        digits = 3 if task == "classification" else 4
        metric = "test accuracy" if task == "classification" else "test RMSE (lower is better)"
        lines += [f"## {task.capitalize()}: {metric}", ""]
        sign_text = "arm − random" if task == "classification" else "random − arm (so positive is better)"
        lines += [f"### Δ area under the curve: mean {('accuracy' if task == 'classification' else 'RMSE')} over 10–{L} labels, "
                  f"{sign_text}, mean ± SE over seeds", ""]  # fmt: skip
        shown = {a: f"**{a} (default)**" if is_default(a, task) else a for a in arms}
        if not any(is_default(a, task) for a in arms):
            lines += [f"The CLI's default arm, {default_arm(task)}, has no runs here.", ""]
        lines.append("| table | rows | random (mean over the curve) | " + " | ".join(shown[a] for a in arms if a != "random") + " |")
        lines.append("|---|---:|---:|" + "---:|" * (len(arms) - (1 if "random" in arms else 0)))
        for n in names:
            t = tables[n]
            rnd = t["arms"].get("random")
            d = _digits(task, tables, [n]) if task == "regression" else digits
            cells = [(f"{rnd['area']:.{d}f}" if rnd else "–")]
            cells += [_fmt_delta(t["arms"][a], d) if a in t["arms"] else "–" for a in arms if a != "random"]
            lines.append(f"| {n} | {t['rows']} | " + " | ".join(cells) + " |")
        med = block["summary"]
        if task == "classification":
            cells = ["" if a == "random" else (f"{med[a]['median_delta_vs_random']:+.3f}" if med[a]["median_delta_vs_random"] is not None else "–")
                     for a in arms]  # fmt: skip
            lines.append("| **median over tables** | | " + " | ".join(cells) + " |")
        else:  # the tables' RMSEs are in their own units: the median of Δ / random's mean RMSE
            cells = [f"{100 * med[a]['median_delta_relative']:+.1f} %" if med[a]["median_delta_relative"] is not None else "–"
                     for a in arms if a != "random"]  # fmt: skip
            lines.append("| **median over tables of Δ / random's mean RMSE** | | | " + " | ".join(cells) + " |")
        cells = ["" if a == "random" else f"{med[a]['better_than_random_2se']} / {med[a]['worse_than_random_2se']} of {med[a]['tables']}" for a in arms]
        lines.append("| better / worse than random by > 2 SE | | " + " | ".join(cells) + " |")
        cells = ["" if a == "random" else f"{med[a]['worse_than_random_1se']} of {med[a]['tables']}" for a in arms]
        lines.append("| trails random by > 1 SE | | " + " | ".join(cells) + " |")
        lines += ["", f"### Labels needed to reach random's mean {('accuracy' if task == 'classification' else 'RMSE')} at {L} labels", ""]
        lines.append("| table | random at " + f"{L} | " + " | ".join(shown[a] for a in arms) + " |")
        lines.append("|---|---:|" + "---:|" * len(arms))
        for n in names:
            t = tables[n]
            d = _digits(task, tables, [n]) if task == "regression" else digits
            target = f"{t['random_at_max']:.{d}f}" if t["random_at_max"] is not None else "–"
            cells = [_fmt_reach(t["arms"][a].get("labels_to_reach_random"), L) if a in t["arms"] else "–" for a in arms]
            lines.append(f"| {n} | {target} | " + " | ".join(cells) + " |")
        cells = [_fmt_reach(med[a]["median_labels_to_reach_random"], L) for a in arms]
        lines.append("| **median over tables** | | " + " | ".join(cells) + " |")
        lines += ["", "### Seconds per run (mean; one torch thread)", ""]
        lines.append("| table | " + " | ".join(arms) + " |")
        lines.append("|---|" + "---:|" * len(arms))
        for n in names:
            t = tables[n]
            lines.append(f"| {n} | " + " | ".join(f"{t['arms'][a]['seconds_per_run']:.1f}" if a in t["arms"] else "–" for a in arms) + " |")
        lines.append("| **mean over tables** | " + " | ".join(f"{med[a]['seconds_per_run']:.1f}" for a in arms) + " |")
        lines.append("")
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    lines += ["The curves: `curves.png`. Everything above, machine-readable: `summary.json`.", ""]
    return "\n".join(lines)


def plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["tables"])
    if not names:
        return
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    all_arms = sorted({a for t in summary["tables"].values() for a in t["arms"]})
    colours = {a: plt.cm.tab10(i % 10) for i, a in enumerate(_order(all_arms, ["random"]))}
    for ax, name in zip(axes.flat, names):
        t = summary["tables"][name]
        for arm, e in t["arms"].items():
            x, m = e["labels"], e["mean"]
            se = [s or 0.0 for s in e["se"]]
            style = "--" if arm == "random" else "-"
            ax.plot(x, m, style, color=colours[arm], label=arm, lw=1.4)
            ax.fill_between(x, [a - b for a, b in zip(m, se)], [a + b for a, b in zip(m, se)], color=colours[arm], alpha=0.15, lw=0)
        ax.set_title(f"{name} ({t['rows']} rows)", fontsize=10)
        ax.set_xlabel("labels", fontsize=8)
        ax.set_ylabel("test accuracy" if t["task"] == "classification" else "test RMSE", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out: Path, cfg: dict[str, Any] | None = None, notes: list[str] | tuple[str, ...] = (), timing: str = "") -> dict[str, Any]:
    """Write results.md, summary.json and curves.png into `out`; returns the summary."""
    runs, stale = load_runs(out, cfg)
    notes = list(notes)
    if stale:
        notes.append(f"{stale} run file(s) in {out / 'runs'} were made with other settings (k, max_labels or test_fraction) and are left out")
    summary = summarise(runs, cfg) if runs else {"max_labels": cfg["max_labels"] if cfg else None, "tables": {}, "tasks": {}}
    total = sum(float(r["seconds"]) for r in runs)
    timing_text = " ".join(t for t in (f"Sum of the runs' own times {total:.0f} s ({total / max(len(runs), 1):.1f} s per run)." if runs else "", timing) if t)
    summary["runs"] = len(runs)
    summary["run_seconds_total"] = total
    summary["notes"] = notes
    summary["config"] = cfg
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "results.md").write_text(markdown(summary, cfg, notes, {"runs": len(runs), "timing": timing_text}))
    selection = out / heldout.SELECTION_FILE
    if selection.exists():  # a held-out or confirmation set's folder (run.py --tables heldout|confirm)
        heldout.append_heldout_summary(out, summary, selection.read_text())
    plot(summary, out / "curves.png")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--config", type=Path, default=HERE / "config.json")
    args = parser.parse_args()
    cfg = json.loads(args.config.read_text()) if args.config.exists() else None
    write_report(args.out, cfg)
    print(f"wrote {args.out / 'results.md'}, {args.out / 'summary.json'}, {args.out / 'curves.png'}")


if __name__ == "__main__":
    main()
