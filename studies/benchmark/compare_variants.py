"""Two model variants on the same benchmark runs, paired by table, arm and seed.

    .venv/bin/python studies/benchmark/compare_variants.py \
        [--base studies/benchmark/results] [--variant studies/benchmark/results/marglik] [--name marglik]

`--base` and `--variant` are run.py `--out` folders (the base normally the default variant's
results). For every table × arm that both hold, and the seeds both hold (a seed fixes the test
split, the cold start and the rounds' seeds, so the two runs of a seed share the split and the
first 10 labels), the paired Δ area is

    Δ_seed = mean over 10, 20, ..., 100 labels of (variant's metric − base's metric)

(classification: accuracy; regression: base's RMSE − variant's, so positive favours the variant in
both), reported as mean ± standard error over seeds, with the median over tables per arm and the
tables where the variant wins or trails by more than 2 SE. Also per variant: the arm's Δ area
against random (report.py's), to see whether a variant keeps active learning's gain.

Writes `<variant>/comparison.md` and `<variant>/comparison.json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from report import _se, load_runs  # noqa: E402


def curve_mean(run: dict[str, Any]) -> float:
    """The run's mean metric over its label counts (its area, up to the count), signed so that higher
    is better (RMSE negated)."""
    values = [p[run["metric"]] for p in run["curve"]]
    sign = -1.0 if run["metric"] == "rmse" else 1.0
    return sign * statistics.fmean(values)


def index(runs: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(r["table"], r["arm"], int(r["seed"])): r for r in runs}


def paired(a: dict[tuple, dict], b: dict[tuple, dict], table: str, arm_a: str, arm_b: str) -> list[float]:
    """Per seed both hold: area(b's arm_b run) − area(a's arm_a run)."""
    seeds = sorted({s for (t, arm, s) in a if t == table and arm == arm_a} & {s for (t, arm, s) in b if t == table and arm == arm_b})
    return [curve_mean(b[(table, arm_b, s)]) - curve_mean(a[(table, arm_a, s)]) for s in seeds]


def entry(deltas: list[float]) -> dict[str, Any]:
    return {"delta": statistics.fmean(deltas) if deltas else None, "se": _se(deltas), "seeds": len(deltas)}


def compare(base_runs: list[dict[str, Any]], variant_runs: list[dict[str, Any]]) -> dict[str, Any]:
    """{"variant_vs_base": {arm: {table: entry}}, "vs_random": {"base"|"variant": {arm: {table: entry}}},
    "medians": {...}} over the tables × arms both hold (module docstring)."""
    base, var = index(base_runs), index(variant_runs)
    tables = sorted({t for (t, _, _) in var} & {t for (t, _, _) in base})
    arms = sorted({a for (_, a, _) in var} & {a for (_, a, _) in base})
    out: dict[str, Any] = {"tables": tables, "arms": arms, "variant_vs_base": {}, "vs_random": {"base": {}, "variant": {}}, "medians": {}}
    for arm in arms:
        rows = {t: entry(paired(base, var, t, arm, arm)) for t in tables}
        out["variant_vs_base"][arm] = rows
        deltas = [r["delta"] for r in rows.values() if r["delta"] is not None]
        out["medians"][arm] = {
            "median": statistics.median(deltas) if deltas else None,
            "mean": statistics.fmean(deltas) if deltas else None,
            "wins": [t for t, r in rows.items() if r["se"] is not None and r["delta"] > 2 * r["se"]],
            "losses": [t for t, r in rows.items() if r["se"] is not None and r["delta"] < -2 * r["se"]],
            "positive": sum(d > 0 for d in deltas),
            "tables": len(deltas),
        }
        if arm != "random":
            for name, runs in (("base", base), ("variant", var)):
                out["vs_random"][name][arm] = {t: entry(paired(runs, runs, t, "random", arm)) for t in tables}
    return out


def _cell(e: dict[str, Any]) -> str:
    if e["delta"] is None:
        return "–"
    se = f" ± {e['se']:.3f}" if e["se"] is not None else ""
    return f"{e['delta']:+.3f}{se} ({e['seeds']})"


def markdown(result: dict[str, Any], name: str) -> str:
    arms = result["arms"]
    lines = [f"# {name} against the default training, paired by seed", "",
             f"Δ area = mean over 10..100 labels of ({name}'s metric − the default's), mean ± SE over seeds "
             "(the number of seeds in brackets); positive favours " + name + ".", "",
             "| table | " + " | ".join(arms) + " |", "|---|" + "---:|" * len(arms)]  # fmt: skip
    for t in result["tables"]:
        lines.append(f"| {t} | " + " | ".join(_cell(result["variant_vs_base"][a][t]) for a in arms) + " |")
    med = result["medians"]
    lines.append("| **median over tables** | " + " | ".join(f"{med[a]['median']:+.4f}" if med[a]["median"] is not None else "–" for a in arms) + " |")
    lines.append("| mean over tables | " + " | ".join(f"{med[a]['mean']:+.4f}" if med[a]["mean"] is not None else "–" for a in arms) + " |")
    lines.append("| tables with Δ > 0 | " + " | ".join(f"{med[a]['positive']} of {med[a]['tables']}" for a in arms) + " |")
    lines.append("| wins / losses > 2 SE | " + " | ".join(
        f"{', '.join(med[a]['wins']) or 'none'} / {', '.join(med[a]['losses']) or 'none'}" for a in arms) + " |")  # fmt: skip
    for arm in (a for a in arms if a != "random"):
        lines += ["", f"## {arm} against random, per training", "", "| table | default | " + name + " |", "|---|---:|---:|"]
        for t in result["tables"]:
            lines.append(f"| {t} | {_cell(result['vs_random']['base'][arm][t])} | {_cell(result['vs_random']['variant'][arm][t])} |")
        for key in ("base", "variant"):
            deltas = [e["delta"] for e in result["vs_random"][key][arm].values() if e["delta"] is not None]
            result["medians"][f"{arm} vs random ({key})"] = statistics.median(deltas) if deltas else None
        lines.append(f"| **median** | {result['medians'][f'{arm} vs random (base)']:+.4f} | {result['medians'][f'{arm} vs random (variant)']:+.4f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, default=HERE / "results")
    parser.add_argument("--variant", type=Path, default=HERE / "results" / "marglik")
    parser.add_argument("--name", default="marglik")
    args = parser.parse_args(argv)
    base_runs, _ = load_runs(args.base)
    variant_runs, _ = load_runs(args.variant)
    result = compare(base_runs, variant_runs)
    text = markdown(result, args.name)
    (args.variant / "comparison.md").write_text(text)
    (args.variant / "comparison.json").write_text(json.dumps(result, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
