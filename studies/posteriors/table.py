"""Compare the posterior study's runs (run.sh): OUT/<posterior>/results.json → OUT/table.md and
OUT/posteriors.png.

    python studies/posteriors/table.py OUT [LABELS ...]

For each posterior: test accuracy at each of LABELS (default 50 100 200 300), NLL and ECE at the
second and the last of them (mean ± sd over the seeds, each seed's first round at or past the
count), labels to reach 90 % accuracy on the mean curve, and the median seconds of a round
(fit + score + evaluate) over all rounds of all seeds. A folder's row is named by its
posterior and options (run.sh's folder names tell apart two runs of one posterior).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

MILESTONES = (50, 100, 200, 300)
METRICS = ("accuracy", "nll", "ece")


def at(run: list[dict], labels: int) -> dict | None:
    """The run's first round with at least `labels` labels (None when it stopped before)."""
    return next((r for r in run if r["labels"] >= labels), None)


def summary(runs: list[list[dict]], seconds: list[list[dict]], milestones: tuple[int, ...] = MILESTONES) -> dict:
    """{metric: {labels: (mean, sd, n)}, "to_90": labels or None, "round_s": median seconds}, from
    results.json's rounds (`runs`) and timings.json's (`seconds`)."""
    out: dict = {m: {} for m in METRICS}
    for metric in METRICS:
        for labels in milestones:
            values = [r[metric] for r in (at(run, labels) for run in runs) if r is not None and metric in r]
            if values:
                out[metric][labels] = (float(np.mean(values)), float(np.std(values)), len(values))
    grid = sorted({r["labels"] for run in runs for r in run})
    out["to_90"] = None
    for labels in grid:
        values = [at(run, labels) for run in runs]
        if all(v is not None for v in values) and np.mean([v["accuracy"] for v in values]) >= 0.90:
            out["to_90"] = labels
            break
    per_round = [sum(r.get(k, 0.0) for k in ("fit_s", "score_s", "evaluate_s")) for run in seconds for r in run]
    out["round_s"] = float(np.median(per_round)) if per_round else None
    out["seeds"] = len(runs)
    out["last"] = min((run[-1]["labels"] for run in runs if run), default=0)
    return out


def cell(entry: tuple[float, float, int] | None, digits: int = 3) -> str:
    return "—" if entry is None else f"{entry[0]:.{digits}f} ± {entry[1]:.{digits}f}"


def main(out: Path, milestones: tuple[int, ...] = MILESTONES) -> int:
    studies = {}
    for results in sorted(out.glob("*/results.json")):
        document = json.loads(results.read_text(encoding="utf-8"))
        runs = document.get("rounds", {}).get("bald", [])
        if runs:
            config = document["config"]
            options = ", ".join(f"{k}={v}" for k, v in config.get("posterior_options", {}).items())
            seconds = json.loads((results.parent / document["timings"]).read_text(encoding="utf-8"))["rounds"]["bald"]
            studies[results.parent.name] = (config | {"label": config["posterior"] + (f" ({options})" if options else "")},
                                            summary(runs, seconds, milestones))  # fmt: skip
    if not studies:
        print(f"table.py: no results.json with rounds under {out}", file=sys.stderr)
        return 2
    mid, last = milestones[min(1, len(milestones) - 1)], milestones[-1]
    lines = ["| posterior | S | seeds | " + " | ".join(f"acc. {n}" for n in milestones)
             + f" | NLL {mid} | NLL {last} | ECE {mid} | ECE {last} | labels to 90 % | median s / round |",
             "|---|---:|---:|" + "---:|" * (len(milestones) + 6)]  # fmt: skip
    for name, (config, s) in studies.items():
        accuracy = " | ".join(cell(s["accuracy"].get(n)) for n in milestones)
        lines.append(
            f"| {config['label']} | {config['n_samples']} | {s['seeds']} | {accuracy} | {cell(s['nll'].get(mid), 2)} | "
            f"{cell(s['nll'].get(last), 2)} | {cell(s['ece'].get(mid))} | {cell(s['ece'].get(last))} | "
            f"{s['to_90'] or '—'} | {s['round_s']:.2f} |"
        )
    (out / "table.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    plot(out, studies)
    return 0


def plot(out: Path, studies: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for name, (config, _) in studies.items():
        document = json.loads((out / name / "results.json").read_text(encoding="utf-8"))
        runs = document["rounds"]["bald"]
        grid = sorted({r["labels"] for run in runs for r in run})
        for axis, metric in zip(axes, METRICS):
            mean, sd, xs = [], [], []
            for labels in grid:
                values = [v[metric] for v in (at(run, labels) for run in runs) if v is not None and metric in v]
                if len(values) == len(runs):
                    xs.append(labels), mean.append(np.mean(values)), sd.append(np.std(values))
            line = axis.plot(xs, mean, label=config["label"])[0]
            axis.fill_between(xs, np.subtract(mean, sd), np.add(mean, sd), color=line.get_color(), alpha=0.15)
    for axis, metric in zip(axes, ("test accuracy", "test NLL (nats)", "test ECE")):
        axis.set_xlabel("labelled images"), axis.set_ylabel(metric), axis.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle("BALD on MNIST with each posterior: mean ± sd over seeds")
    fig.tight_layout()
    fig.savefig(out / "posteriors.png", dpi=120)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "studies/posteriors/mnist-results"),
                  tuple(int(n) for n in sys.argv[2:]) or MILESTONES))  # fmt: skip
