"""SWAG's spread on a digits MLP at 600 labels: the previous defaults against the current ones.

    .venv/bin/python studies/calibration/swag_spread.py [--seeds 0 1 2] [--out studies/calibration/results.md]

sklearn digits (x / 16), 600 training images drawn by the seed, the other 1,197 for testing; the
CLI's default network (`nets.mlp(64, 10)`: 128-128 ReLU, dropout 0.5) trained as a round trains
it on 600 labels (50 Adam epochs at lr 1e-3, batch 64, weight decay 1/600). SWAG with
    previous defaults  Adam at 0.3 × the lr, one snapshot per epoch (⌈600/64⌉ = 10 steps);
    defaults           Adam at 0.5 × the lr, one snapshot per 100 optimiser steps;
    SGD swa_lr 0.05    Maddox et al.'s optimizer (momentum 0.9), 100 steps per snapshot;
all with rank 20, 20 snapshots, scale 0.5 and 30 samples; and, for the size of a real spread on
this case, MC dropout (20 mask sets) and a deep ensemble (5 members) trained the same way.
Reports the mean test BALD (nats), accuracy, NLL and ECE (15 bins), mean ± sd over seeds (the seed
draws the split, the initialisation, the data order and the samples), and the minimum BALD over
seeds; writes the table between the `swag-spread` markers of --out.
"""

from __future__ import annotations

import time

import torch
from sklearn.datasets import load_digits

from activebayes.nets import mlp
from activebayes.posteriors import DeepEnsemble, MCDropout
from activebayes.posteriors.swag import SWAG
from activebayes.training import TrainConfig
from run import fmt, metrics, publish, study_arguments

N_TRAIN = 600
CONFIG = TrainConfig(epochs=50, weight_decay=1 / N_TRAIN)
POSTERIORS = {
    "SWAG, previous defaults": lambda seed: SWAG(mlp(64, 10), train=CONFIG, seed=seed, device="cpu", swa_lr_ratio=0.3, snapshot_steps=None),
    "SWAG, defaults": lambda seed: SWAG(mlp(64, 10), train=CONFIG, seed=seed, device="cpu"),
    "SWAG, SGD swa_lr 0.05": lambda seed: SWAG(mlp(64, 10), train=CONFIG, seed=seed, device="cpu", swa_optimizer="sgd", swa_lr=0.05),
    "MC dropout": lambda seed: MCDropout(mlp(64, 10), train=CONFIG, seed=seed, device="cpu"),
    "deep ensemble (5)": lambda seed: DeepEnsemble(mlp(64, 10), train=CONFIG, seed=seed, device="cpu"),
}


def run_seed(seed: int) -> dict[str, dict[str, float]]:
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    train, test = perm[:N_TRAIN], perm[N_TRAIN:]
    rows = {}
    for name, make in POSTERIORS.items():
        pred = make(seed).fit(x[train], y[train]).predict(x[test])
        rows[name] = metrics(pred.mean(), y[test], pred)
    return rows


def main() -> None:
    args = study_arguments(__doc__)
    start = time.perf_counter()
    per_seed = [run_seed(s) for s in args.seeds]
    lines = ["| posterior | mean test BALD | min over seeds | accuracy | NLL | ECE (15 bins) |", "|---|---|---|---|---|---|"]
    for name in POSTERIORS:
        spread = [r[name]["bald"] for r in per_seed]
        cols = [fmt(spread, digits=4), f"{min(spread):.4f}", *(fmt([r[name][k] for r in per_seed]) for k in ("acc", "nll", "ece"))]
        lines.append(f"| {name} | " + " | ".join(cols) + " |")
    publish(args, "swag-spread", f"Digits, 600 labels; seeds {args.seeds}; mean ± sd over seeds.", lines, start)


if __name__ == "__main__":
    main()
