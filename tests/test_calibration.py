"""Calibration on sklearn digits: an overconfident MAP network (100 training images, 300 Adam
epochs) gets a lower test NLL and ECE from last-layer Laplace and from SWAG.

The same setting, with more variants and the figures, is studies/calibration/run.py.
"""

import pytest
import torch
from sklearn.datasets import load_digits

from activebayes.metrics import expected_calibration_error, nll
from activebayes.nets import mlp
from activebayes.posteriors.laplace import Laplace
from activebayes.posteriors.swag import SWAG
from activebayes.training import TrainConfig, build_model, train

CONFIG = TrainConfig(epochs=300, lr=1e-2, batch_size=32, weight_decay=5e-4)
MODEL_FN = mlp(64, 10, hidden=(128, 128), dropout=0.0)


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    train_idx, test_idx = perm[:100], perm[100:]
    net = train(build_model(MODEL_FN, 0), x[train_idx], y[train_idx], CONFIG, seed=0, device="cpu")
    with torch.no_grad():
        map_probs = torch.softmax(net(x[test_idx]), dim=-1)
    return net, x[train_idx], y[train_idx], x[test_idx], y[test_idx], map_probs


@pytest.mark.slow
def test_laplace_and_swag_improve_on_the_overconfident_map(digits):
    net, x, y, x_test, y_test, map_probs = digits
    map_nll, map_ece = float(nll(map_probs, y_test)), float(expected_calibration_error(map_probs, y_test))
    assert float(map_probs.max(1).values.mean()) > float((map_probs.argmax(1) == y_test).float().mean())  # overconfident

    la = Laplace(model=net, hessian="kron", prior_precision=30.0, seed=0, device="cpu").fit(x, y)
    la_probs = la.predict_proba(x_test)
    assert float(nll(la_probs, y_test)) < map_nll
    assert float(expected_calibration_error(la_probs, y_test)) < map_ece

    swag = SWAG(MODEL_FN, config=CONFIG, rank=10, n_snapshots=20, swa_lr=0.5, scale=1.0, n_samples=30, seed=0,
                device="cpu").fit(x, y)
    # (SWAG pre-trains with the same factory, config and seed, so it starts from this MAP network)
    swag_probs = swag.predict_proba(x_test)
    assert float(nll(swag_probs, y_test)) < map_nll
    assert float(expected_calibration_error(swag_probs, y_test)) < map_ece
