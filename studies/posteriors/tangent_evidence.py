"""Whole-network Laplace with δ from the tangent linear model's evidence, on one network.

    OMP_NUM_THREADS=2 .venv/bin/python studies/posteriors/tangent_evidence.py [MNIST_FOLDER]

The MLP 784-128-128-10 of `cpu-200.toml`, trained as that study trains every posterior's network
(dropout 0.5, L2 1e-4, 50 epochs of 10 Adam steps at lr 1e-3, batch 128) on 200 balanced random
MNIST labels (seed 0, `marglik_calibration.load`), then, on the first 1,000 test images, the
accuracy, mean confidence, NLL and ECE of: its own softmax; `Laplace(subset="all",
hessian="full")` with δ from the Laplace evidence at θ* (prior_precision="marglik", the post-hoc
default); and with prior_precision="tangent" (`activebayes/posteriors/_tangent.py`), with the
probit link and with 200 Monte Carlo samples. Then the tangent model's evidence on a grid of δ
around its MacKay fixed point, which holds the softmax curvature W at the mode: the evidence that
also moves W with δ peaks elsewhere, and this shows where.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

from activebayes.posteriors.laplace import Laplace
from activebayes.training import TrainConfig
from marglik_calibration import line, load, network  # beside this script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mnist", nargs="?", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist")
    args = parser.parse_args()
    x, y, test_x, test_y = load(args.mnist)
    test_x, test_y = test_x[:1000], test_y[:1000]
    train = TrainConfig(epochs=50, lr=1e-3, batch_size=128, epoch_samples=1280, weight_decay=1e-4)
    common = dict(subset="all", hessian="full", train=train, seed=0, device="cpu")
    posthoc = Laplace(network(0.5), prior_precision="marglik", **common).fit(x, y)
    with torch.no_grad():
        print(line("MAP softmax", torch.softmax(posthoc.model_(test_x), 1), test_y))
    print(line("δ from the evidence at θ*", posthoc.predict_proba(test_x).float(), test_y), f" δ = {float(posthoc.prior_precision_[0]):.3g}")
    for link in ("probit", "mc"):
        start = time.perf_counter()
        la = Laplace(network(0.5), prior_precision="tangent", link=link, n_samples=200, **common).fit(x, y)
        fitted = time.perf_counter() - start
        print(line(f"tangent δ, {link}", la.predict_proba(test_x).float(), test_y),
              f" δ = {float(la.prior_precision_[0]):.3g}, fit (training included) {fitted:.0f} s")  # fmt: skip
    delta = float(la.prior_precision_[0])
    print(f"tangent evidence log q(y | δ), MacKay's fixed point δ* = {delta:.3g}:")
    for factor in (1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4):
        print(f"  δ = {delta * factor:8.3g}  {float(la.log_marginal_likelihood(delta * factor)):9.2f}")
    assert math.isfinite(delta)


if __name__ == "__main__":
    main()
