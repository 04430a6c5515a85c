"""Why whole-network Laplace trained by online marginal likelihood is underconfident at 200 labels.

    OMP_NUM_THREADS=1 .venv/bin/python studies/posteriors/marglik_calibration.py [MNIST_FOLDER] [--hessians kron,full]

One network per structure, trained as the CPU posterior study trains it (`cpu-200.toml`: the MLP
784-128-128-10 with dropout 0.5, 50 epochs of 10 Adam steps at lr 1e-3, batch 128) by online marglik
with the KFAC ("kron") or the exact GGN in dual form ("full") on 200 MNIST training images (20 per
class, seed 0), then `Laplace(subset="all", prior_precision="online")` around it. Printed per
structure: the learnt precisions δ (W1, b1, W2, b2, W3, b3), the epoch kept, the evidence of the
trained network under both curvatures at those δ, and on the first 2,000 test images the accuracy,
mean top-class probability, NLL and ECE (15 bins) of the MAP network's softmax and of the probit
GLM predictive, with the mean logit variance J Σ Jᵀ; then the same confidence on the 200 training
images themselves. --variants: the KFAC run again with other schedules (a fit every epoch, 150
epochs, the last state instead of the best, no dropout, the diagonal GGN), and its GLM with an MC
link (2,000 samples of the full C x C covariance) instead of the probit.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from activebayes.data import read_idx
from activebayes.marglik import MarglikConfig, log_evidence
from activebayes.metrics import expected_calibration_error
from activebayes.nets import mlp
from activebayes.posteriors.laplace import Laplace
from activebayes.study import mnist_files
from activebayes.training import TrainConfig


def load(folder: Path) -> tuple[torch.Tensor, ...]:
    files = mnist_files(folder)
    pool_x = read_idx(files["train_x"]).reshape(-1, 784).astype(np.float32) / 255.0
    pool_y = read_idx(files["train_y"]).astype(np.int64)
    rng = np.random.default_rng(0)
    rows = np.concatenate([rng.choice(np.flatnonzero(pool_y == c), 20, replace=False) for c in range(10)])
    test_x = read_idx(files["test_x"])[:2000].reshape(-1, 784).astype(np.float32) / 255.0
    test_y = read_idx(files["test_y"])[:2000].astype(np.int64)
    return tuple(torch.from_numpy(a) for a in (pool_x[rows], pool_y[rows], test_x, test_y))


def line(name: str, probs: torch.Tensor, y: torch.Tensor, variance: torch.Tensor | None = None) -> str:
    confidence, predicted = probs.max(1)
    nll = -probs[torch.arange(len(y)), y].clamp_min(1e-12).log().mean()
    ece = expected_calibration_error(probs, y)
    extra = "" if variance is None else f"  mean logit variance {float(variance.mean()):.2f}"
    return (f"  {name:<24} accuracy {(predicted == y).float().mean():.3f}  confidence {confidence.mean():.3f}  "
            f"NLL {nll:.3f}  ECE {ece:.3f}{extra}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mnist", nargs="?", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist")
    parser.add_argument("--hessians", default="kron,full")
    parser.add_argument("--variants", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    x, y, test_x, test_y = load(args.mnist)
    if args.variants:
        variants(x, y, test_x, test_y)
        return
    for hessian in args.hessians.split(","):
        train = TrainConfig(epochs=50, lr=1e-3, batch_size=128, epoch_samples=1280, marglik=MarglikConfig(hessian=hessian, frequency=5))
        start = time.perf_counter()
        la = Laplace(mlp(784, 10, hidden=(128, 128), dropout=0.5), subset="all", hessian=hessian, prior_precision="online",
                     train=train, seed=0, device="cpu").fit(x, y)  # fmt: skip
        fit, net = la.marglik_, la.model_
        deltas = fit.prior_precision
        evidences = {h: float(log_evidence(net, x, y, deltas, hessian=h)) for h in ("kron", "full")}
        print(f"marglik with hessian={hessian} ({time.perf_counter() - start:.0f} s): δ = {', '.join(f'{d:.3g}' for d in deltas.tolist())}, "
              f"epoch kept {fit.best_epoch}; evidence of this network at these δ: KFAC {evidences['kron']:.1f}, exact GGN "
              f"{evidences['full']:.1f} (a uniform guess: {-len(y) * np.log(10):.1f})")  # fmt: skip
        for name, inputs, targets in (("test", test_x, test_y), ("train", x, y)):
            with torch.no_grad():
                print(line(f"MAP softmax ({name})", torch.softmax(net(inputs), 1), targets))
            _, variance = la.output_moments(inputs)
            print(line(f"probit GLM ({name})", la.predict_proba(inputs), targets, variance))


def variants(x: torch.Tensor, y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor) -> None:
    cases = {"a fit every epoch": ({"frequency": 1}, {}, "kron", 0.5), "150 epochs": ({"frequency": 5}, {"epochs": 150}, "kron", 0.5),
             "the last state": ({"frequency": 5, "keep_best": False}, {}, "kron", 0.5), "no dropout": ({"frequency": 5}, {}, "kron", 0.0),
             "diagonal GGN": ({"frequency": 5}, {}, "diag", 0.5)}  # fmt: skip
    for name, (schedule, training, hessian, dropout) in cases.items():
        train = TrainConfig(**{"epochs": 50, "lr": 1e-3, "batch_size": 128, "epoch_samples": 1280, **training},
                            marglik=MarglikConfig(hessian=hessian, **schedule))  # fmt: skip
        la = Laplace(mlp(784, 10, hidden=(128, 128), dropout=dropout), subset="all", hessian=hessian, prior_precision="online",
                     train=train, seed=0, device="cpu").fit(x, y)  # fmt: skip
        print(line(f"{name}: probit GLM", la.predict_proba(test_x), test_y, la.output_moments(test_x)[1]))
    train = TrainConfig(epochs=50, lr=1e-3, batch_size=128, epoch_samples=1280, marglik=MarglikConfig(frequency=5))
    la = Laplace(mlp(784, 10, hidden=(128, 128), dropout=0.5), subset="all", prior_precision="online", link="mc", n_samples=2000,
                 train=train, seed=0, device="cpu").fit(x, y)  # fmt: skip
    print(line("KFAC, MC link (S = 2,000)", la.predict_proba(test_x), test_y))


if __name__ == "__main__":
    main()
