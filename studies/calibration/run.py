"""Calibration study: does last-layer Laplace / SWAG fix an overconfident MAP network?

    .venv/bin/python studies/calibration/run.py [--out studies/calibration/results.md] [--seeds 0 1 2]

sklearn digits (8x8, 1,797 images, 10 classes): 100 training images, the other 1,697 for testing.
MAP: ReLU MLP 64 → 128 → 128 → 10 (activebayes.nets.mlp, dropout 0) trained with the shared
`train` (Adam, lr 1e-2, weight decay 5e-4, batch 32, 300 epochs), which drives the training loss
to ~0 and leaves the network overconfident on the test set.
Posteriors around it: last-layer Laplace (kron / diag / full GGN, probit predictive) at the
marginal-likelihood prior precision and at δ = 30; SWAG with its defaults (the training
optimizer, Adam, at 0.5 × the training lr; 20 snapshots each at least 100 optimiser steps apart,
rank 20, scale 0.5, 30 samples), SWAG with the previous defaults (0.3 × the training lr, one
snapshot per epoch, here 4 steps), SWAG-diagonal, and SWAG with Maddox et al.'s SGD at swa_lr
0.1, all pre-trained with the same factory, config and seed, so they start from the MAP network.
"SWA last iterate" is the default SWAG's network after its SWA epochs. Reports accuracy, NLL (nats), Brier, ECE (15 bins) and the
mean BALD (nats; the spread of the posterior samples) on the test set, mean ± sd over seeds (the
seed sets the data split, the network initialisation, the training order and the samples).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from sklearn.datasets import load_digits

from activebayes.acquisition import bald
from activebayes.metrics import accuracy, brier, expected_calibration_error, nll
from activebayes.nets import mlp
from activebayes.posteriors.laplace import Laplace
from activebayes.posteriors.swag import SWAG
from activebayes.predictive import Predictive
from activebayes.training import TrainConfig, build_model, train

CONFIG = TrainConfig(epochs=300, lr=1e-2, batch_size=32, weight_decay=5e-4)
MODEL_FN = mlp(64, 10, hidden=(128, 128), dropout=0.0)
N_TRAIN = 100


def metrics(probs: torch.Tensor, labels: torch.Tensor, pred: Predictive | None = None) -> dict[str, float]:
    out = {
        "acc": float(accuracy(probs, labels)),
        "nll": float(nll(probs, labels)),
        "brier": float(brier(probs, labels)),
        "ece": float(expected_calibration_error(probs, labels)),
    }
    if pred is not None:
        out["bald"] = float(bald(pred).mean())
    return out


def run_seed(seed: int) -> dict[str, dict[str, float]]:
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    x_tr, y_tr, x_te, y_te = x[perm[:N_TRAIN]], y[perm[:N_TRAIN]], x[perm[N_TRAIN:]], y[perm[N_TRAIN:]]
    rows: dict[str, dict[str, float]] = {}
    net = train(build_model(MODEL_FN, seed), x_tr, y_tr, CONFIG, seed=seed, device="cpu")
    with torch.no_grad():
        rows["MAP"] = metrics(torch.softmax(net(x_te), -1), y_te)
    for hessian in ("kron", "diag", "full"):
        for prior in ("marglik", 30.0):
            la = Laplace(model=net, hessian=hessian, prior_precision=prior, seed=seed, device="cpu").fit(x_tr, y_tr)
            name = f"Laplace {hessian}, δ={'marglik' if prior == 'marglik' else f'{prior:g}'}"
            rows[name] = metrics(la.predict_proba(x_te), y_te)
            if prior == "marglik":
                rows[name]["δ"] = la.prior_precision_
    variants = {"SWAG": {}, "SWAG, previous defaults": {"swa_lr_ratio": 0.3, "snapshot_steps": None},
                "SWAG-diag": {"diag_only": True}, "SWAG, SGD swa_lr 0.1": {"swa_optimizer": "sgd", "swa_lr": 0.1}}
    for name, options in variants.items():
        swag = SWAG(MODEL_FN, train=CONFIG, seed=seed, device="cpu", **options).fit(x_tr, y_tr)
        pred = swag.predict(x_te)
        rows[name] = metrics(pred.mean(), y_te, pred)
        if not options:
            with torch.no_grad():
                rows["SWA last iterate"] = metrics(torch.softmax(swag.model_(x_te), -1), y_te)
    return rows


def fmt(values: list[float], digits: int = 3) -> str:
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def study_arguments(doc: str) -> argparse.Namespace:
    """--seeds, --out (results.md beside this script) and --threads (set here), described by `doc`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results.md"))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    return args


def write_block(path: Path, name: str, block: str) -> None:
    """Put `block` between the markers <!-- name:start --> and <!-- name:end --> of the file at
    `path` (appended, with its markers, where they are not there yet)."""
    text = path.read_text() if path.exists() else ""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{block}\n{end}"
    if start in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text + ("\n" if text else "") + block + "\n"
    path.write_text(text)


def publish(args: argparse.Namespace, block: str, caption: str, lines: list[str], start: float) -> None:
    """Print the table of `lines` and the time since `start`; write it with `caption` between the
    `block` markers of --out."""
    table = "\n".join(lines)
    print(table)
    print(f"seeds {args.seeds}, {args.threads} thread(s), {time.perf_counter() - start:.0f} s")
    if args.out:
        write_block(args.out, block, f"{caption}\n\n{table}")


def main() -> None:
    args = study_arguments(__doc__)
    start = time.perf_counter()
    per_seed = [run_seed(s) for s in args.seeds]
    names = list(per_seed[0])
    lines = [
        "| method | accuracy | NLL | Brier | ECE (15 bins) | mean BALD | δ |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        cols = [fmt([r[name][k] for r in per_seed]) for k in ("acc", "nll", "brier", "ece")]
        cols.append(fmt([r[name]["bald"] for r in per_seed], digits=4) if "bald" in per_seed[0][name] else "")
        delta = fmt([r[name]["δ"] for r in per_seed]) if "δ" in per_seed[0][name] else ""
        lines.append(f"| {name} | " + " | ".join(cols) + f" | {delta} |")
    publish(args, "table", f"Seeds {args.seeds}; mean ± sd over seeds.", lines, start)


if __name__ == "__main__":
    main()
