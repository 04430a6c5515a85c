"""What moves the default model's accuracy on few labels: its training and prediction changed one
at a time, on baselines.py's labelled sets and test split (not a candidate default by itself:
the default is chosen by the benchmark's rule on all three table sets).

    .venv/bin/python studies/benchmark/baselines_probe.py --tables geepack_ohio,modeldata_steroidogenic_toxicity \
        --seeds 0,1,2 --out studies/benchmark/results/baselines/probe.md

Variants (`VARIANTS`), each the CLI's MC-dropout MLP (`activebayes.nets.mlp`, 128-128) trained by
`activebayes.training.sized_training`'s rule with one setting changed:

    default     dropout 0.5, λ = 1 (weight decay λ/N), ≥ 500 steps: `baselines.fit_ours` rebuilt
                from its parts (the report shows both, as a check that they agree)
    det         the same fit, scored with dropout off (`predict_proba_deterministic`)
    lam10       λ = 10         lam0.1   λ = 0.1       lam0     no weight decay
    p0.1        dropout 0.1    steps2000  ≥ 2,000 optimiser steps
    lamcv       λ of `LAMBDA_GRID` chosen by 3-fold cross-validation of this network on the
                labelled set (`baselines.cv_choice`), then fitted on all of it (10 fits instead of 1)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import baselines  # noqa: E402

#: name: (dropout, λ, min_steps, deterministic prediction)
VARIANTS: dict[str, tuple[float, float, int, bool]] = {
    "default": (0.5, 1.0, 500, False),
    "det": (0.5, 1.0, 500, True),
    "lam10": (0.5, 10.0, 500, False),
    "lam0.1": (0.5, 0.1, 500, False),
    "lam0": (0.5, 0.0, 500, False),
    "p0.1": (0.1, 1.0, 500, False),
    "steps2000": (0.5, 1.0, 2000, False),
}


LAMBDA_GRID = (0.1, 1.0, 10.0)


def lambda_cv_fit(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    """The default network with λ chosen by 3-fold cross-validation on (x, y) (`LAMBDA_GRID`)."""

    def fit_at(x_train: np.ndarray, y_train: np.ndarray, lam: float) -> Callable[[np.ndarray], np.ndarray]:
        return variant_fit(0.5, lam, 500, False)(x_train, y_train, n_classes, seed)

    return fit_at(x, y, baselines.cv_choice(x, y, seed, LAMBDA_GRID, fit_at, folds=3))


def variant_fit(dropout: float, prior_precision: float, min_steps: int, deterministic: bool) -> baselines.Fit:
    """A `baselines.Fit` of the MC-dropout MLP trained with these settings (module docstring)."""

    def fit(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
        from activebayes.nets import mlp
        from activebayes.posteriors import MCDropout
        from activebayes.training import TrainConfig, sized_training
        from activebayes_cli._model import TRAINING_DEFAULTS
        from activebayes_cli._threads import training_threads

        rule = {**TRAINING_DEFAULTS, "min_steps": min_steps, "prior_precision": prior_precision}
        record = sized_training(len(x), batch_size=TrainConfig().batch_size, **rule)
        train = TrainConfig(epochs=int(record["epochs"]), weight_decay=float(record["weight_decay"]))
        with training_threads(mlp(int(np.prod(x.shape[1:])), n_classes, dropout=dropout)) as model_fn:
            posterior = MCDropout(model_fn, seed=seed, train=train, device="cpu").fit(baselines.to_tensor(x), baselines.to_tensor(y))
        return baselines.network_predict(posterior.predict_proba_deterministic if deterministic else posterior.predict_proba)

    return fit


def markdown(rows: list[dict[str, Any]], names: list[str]) -> str:
    """Mean accuracy over seeds per table, label count and model; a last row of each model's mean over tables."""
    acc: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        acc[(r["table"], r["labels"])][r["model"]].append(r["accuracy"])
    lines = ["| table | labels | " + " | ".join(names) + " |", "|---|---:|" + "---:|" * len(names)]
    by_n: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (table, n), by_model in sorted(acc.items()):
        means = {m: statistics.mean(v) for m, v in by_model.items()}
        lines.append(f"| {table} | {n} | " + " | ".join(f"{means[m]:.3f}" for m in names) + " |")
        for m in names:
            by_n[n][m].append(means[m])
    for n, by_model in sorted(by_n.items()):
        lines.append(f"| mean over tables | {n} | " + " | ".join(f"{statistics.mean(by_model[m]):.3f}" for m in names) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", required=True, help="comma-separated names (tables.py's or the held-out set's), or 'heldout' or 'confirm'")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--sizes", default="20,50")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", type=Path, required=True, help="the markdown report")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    names = args.tables.split(",")
    sets = [n for n in names if n in ("heldout", "confirm")]
    records = baselines.table_records([n for n in names if n in baselines.benchmark_tables.TABLES], baselines.benchmark_tables.CACHE)
    unknown = [n for n in names if n not in records and n not in sets]
    for name in sets or (["heldout"] if unknown else []):  # a whole set, or held-out tables by name
        chosen = baselines.table_records([name], baselines.benchmark_tables.CACHE)
        records |= chosen
        names = [t for n in names for t in (chosen if n == name else [n])]
    models: dict[str, baselines.Fit] = {"ours": baselines.fit_ours, "lr": baselines.fit_lr, "lr-cv": baselines.fit_lr_cv}
    models |= {v: lambda_cv_fit if v == "lamcv" else variant_fit(*VARIANTS[v]) for v in args.variants.split(",")}
    rows = []
    for name in names:
        record = records[name]
        for seed in (int(s) for s in args.seeds.split(",")):
            table = baselines.prepare(baselines.benchmark_tables.CACHE / record["file"], record["label"], record["key"], seed)
            for r in baselines.evaluate(table, seed, models, [int(s) for s in args.sizes.split(",")]):
                rows.append({"table": name, **r})
            args.out.write_text(markdown(rows, list(models)))  # after every table and seed: a stopped run keeps its rows
            print(f"{name} seed {seed} done", flush=True)
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
