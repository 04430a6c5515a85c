"""Why last-layer Laplace is underconfident in the posterior study: its predictive confidence on
MNIST test images against the prior precision δ, after training on 200 random labels.

    .venv/bin/python studies/posteriors/laplace_prior.py [MNIST_FOLDER]

Prints, for δ = "marglik" (the evidence maximiser, the library's default) and fixed δ: the test
accuracy, the mean top-class probability (a calibrated model has it close to the accuracy) and the
test NLL of the probit predictive; first the MAP network alone (softmax of its logits).
Same seed, same 200 labels and the same trained network for every row; about a minute on 2 cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from activebayes.data import read_idx
from activebayes.nets import gal_cnn
from activebayes.posteriors.laplace import Laplace
from activebayes.study import mnist_files
from activebayes.training import TrainConfig


def main(folder: Path) -> None:
    files = mnist_files(folder)
    pool_x = read_idx(files["train_x"]).astype(np.float32) / 255.0
    pool_y = read_idx(files["train_y"]).astype(np.int64)
    rows = np.random.default_rng(0).choice(len(pool_y), 200, replace=False)
    x, y = torch.from_numpy(pool_x[rows])[:, None], torch.from_numpy(pool_y[rows])
    test_x = torch.from_numpy(read_idx(files["test_x"])[:2000].astype(np.float32) / 255.0)[:, None]
    test_y = torch.from_numpy(read_idx(files["test_y"])[:2000].astype(np.int64))
    train = TrainConfig(epochs=50, lr=1e-3, batch_size=128, weight_decay=1e-4)

    def report(name: str, probs: torch.Tensor) -> None:
        confidence, predicted = probs.max(1)
        nll = -probs[torch.arange(len(test_y)), test_y].clamp_min(1e-12).log().mean()
        print(f"{name:>22}  accuracy {(predicted == test_y).float().mean():.3f}  "
              f"mean confidence {confidence.mean():.3f}  NLL {nll:.3f}")  # fmt: skip

    first = Laplace(gal_cnn(), train=train, seed=0, device="cpu").fit(x, y)
    network = first.model_.eval()
    with torch.no_grad():
        report("MAP network", torch.softmax(network(test_x), -1))
    report(f"marglik (δ = {first.prior_precision_:.1f})", first.predict_proba(test_x))
    for delta in (1.0, 10.0, 100.0, 1000.0):
        laplace = Laplace(model=network, train=train, seed=0, device="cpu", prior_precision=delta).fit(x, y)
        report(f"δ = {delta:g}", laplace.predict_proba(test_x))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist"))
