"""Calibration on sklearn digits: an overconfident MAP network (100 training images, 300 Adam
epochs) gets a lower test NLL from last-layer Laplace, and SWAG with its defaults is a real
posterior around it (spread on the test set, NLL no worse than the MAP's).

Training this network is chaotic: the processor's vector unit, the thread count and the seed move
a single split's MAP test NLL between 0.35 and 0.57. So every assertion is on the mean over three
data splits (seeds s, s+1, s+2, s = ACTIVEBAYES_TEST_SEED, default 0), and only on quantities whose
margins held at seeds 0-2 with 1 and 2 threads and ATEN_CPU_CAPABILITY default, avx2 and native:
NLL, not ECE (Laplace at δ = 30 over-corrects on some splits, so its ECE moves both ways).
The same setting, with more variants and the figures, is studies/calibration/run.py.
"""

import pytest
import torch
from sklearn.datasets import load_digits

from activebayes.acquisition import bald
from activebayes.metrics import nll
from activebayes.nets import mlp
from activebayes.posteriors.laplace import Laplace
from activebayes.posteriors.swag import SWAG
from activebayes.training import TrainConfig, build_model, train

CONFIG = TrainConfig(epochs=300, lr=1e-2, batch_size=32, weight_decay=5e-4)
MODEL_FN = mlp(64, 10, hidden=(128, 128), dropout=0.0)


@pytest.fixture(scope="module")
def splits(test_seed):
    """Three (seed, MAP net, x_train, y_train, x_test, y_test, MAP test probs) on 100/1,697 splits."""
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target)
    out = []
    for seed in range(test_seed, test_seed + 3):
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
        tr, te = perm[:100], perm[100:]
        net = train(build_model(MODEL_FN, seed), x[tr], y[tr], CONFIG, seed=seed, device="cpu")
        with torch.no_grad():
            map_probs = torch.softmax(net(x[te]), dim=-1)
        out.append((seed, net, x[tr], y[tr], x[te], y[te], map_probs))
    return out


def mean_nll(probs_and_labels) -> float:
    return sum(float(nll(p, y)) for p, y in probs_and_labels) / len(probs_and_labels)


@pytest.mark.slow
def test_laplace_improves_on_the_overconfident_map(splits):
    """Measured (12 configurations above): the MAP's mean confidence exceeds its accuracy by
    0.026-0.062 on every split; Laplace (kron, δ = 30) lowers the 3-split mean NLL by 0.03-0.10
    (8-20 %)."""
    for _, _, _, _, _, y_test, map_probs in splits:
        assert float(map_probs.max(1).values.mean()) > float((map_probs.argmax(1) == y_test).float().mean())
    laplace = [(Laplace(model=net, hessian="kron", prior_precision=30.0, seed=0, device="cpu").fit(x, y).predict_proba(xt), yt)
               for _, net, x, y, xt, yt, _ in splits]
    assert mean_nll(laplace) < mean_nll([(p, yt) for *_, yt, p in splits])


@pytest.mark.slow
def test_default_swag_is_a_posterior_no_worse_than_the_map(splits):
    """SWAG pre-trains with the same factory, config and seed, so it starts from the MAP network.

    With the defaults (Adam at 0.5 × the training lr, 20 snapshots at least 100 optimiser steps
    apart, rank 20, scale 0.5) the 3-split mean test NLL is at or below the MAP's (measured at
    seeds 0-2: 0.19 lower with 1 thread, 0.24 with 2) and the samples disagree: mean test BALD
    0.034-0.036 nats per split with 1 thread, 0.008-0.015 with 2, where SGD at 0.01 with one
    snapshot per 4-step epoch gave 0.0002, the MAP network 30 times over.
    """
    swag_probs, spreads = [], []
    for seed, _, x, y, x_test, y_test, _ in splits:
        pred = SWAG(MODEL_FN, train=CONFIG, seed=seed, device="cpu").fit(x, y).predict(x_test)
        swag_probs.append((pred.mean(), y_test))
        spreads.append(float(bald(pred).mean()))
    assert mean_nll(swag_probs) <= mean_nll([(p, yt) for *_, yt, p in splits])
    assert min(spreads) > 0.003
