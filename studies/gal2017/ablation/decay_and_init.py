"""Two differences from the Keras code of Gal et al. (2017), measured without active learning:
where the c/N weight decay applies (every parameter, as `weight_decay = "gal"` does here; the
first dense layer only, as the Keras `W_regularizer`; none) and how the weights start (torch's
defaults; Keras' Glorot-uniform with zero biases). Gal's CNN, 50 epochs of Adam (lr 1e-3,
batch 128), trained on 20 balanced and on 100 labelled MNIST images (the 20 and 80 random ones),
5 seeds each; test accuracy of the network with dropout off on the 10,000 test images.

    python studies/gal2017/ablation/decay_and_init.py [--mnist ../shared/data/mnist] [--seeds 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from activebayes.data import read_idx
from activebayes.nets import gal_cnn
from activebayes.training import TrainConfig, epoch_steps

C_KERAS = 3.5  # Keras l2(3.5 / N): gradient 2 · 3.5 / N · W


def load(folder: Path) -> tuple[np.ndarray, ...]:
    def images(stem: str) -> np.ndarray:
        return read_idx(folder / f"{stem}-images-idx3-ubyte.gz").astype(np.float32)[:, None] / 255.0

    def labels(stem: str) -> np.ndarray:
        return read_idx(folder / f"{stem}-labels-idx1-ubyte.gz").astype(np.int64)

    return images("train"), labels("train"), images("t10k"), labels("t10k")


def labelled_set(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    """2 per class, then n - 20 more at random (rows of the training set)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    initial = np.concatenate([order[y[order] == c][:2] for c in range(10)])
    rest = rng.choice(np.setdiff1d(order[:20_000], initial), n - 20, replace=False)
    return np.concatenate([initial, rest])


def accuracy(data: tuple[np.ndarray, ...], n: int, seed: int, decay: str, init: str) -> float:
    x_all, y_all, x_test, y_test = data
    rows = labelled_set(y_all, n, seed)
    x, y = torch.from_numpy(x_all[rows]), torch.from_numpy(y_all[rows])
    torch.manual_seed(seed)
    net = gal_cnn()()
    if init == "glorot":
        for layer in net:
            if isinstance(layer, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
    wd = 2 * C_KERAS / n
    dense = next(layer for layer in net if isinstance(layer, nn.Linear))
    if decay == "all":
        groups = [{"params": list(net.parameters()), "weight_decay": wd}]
    elif decay == "dense":
        groups = [{"params": [dense.weight], "weight_decay": wd},
                  {"params": [p for p in net.parameters() if p is not dense.weight], "weight_decay": 0.0}]  # fmt: skip
    else:
        groups = [{"params": list(net.parameters()), "weight_decay": 0.0}]
    optimizer = torch.optim.Adam(groups, lr=1e-3)
    config = TrainConfig(epochs=50, batch_size=128)
    generator = torch.Generator().manual_seed(seed)
    net.train()
    for _ in range(config.epochs):  # as activebayes.training.train: ⌈N/B⌉ equal batches an epoch
        for batch in torch.randperm(n, generator=generator).tensor_split(epoch_steps(n, config)):
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x[batch]), y[batch]).backward()
            optimizer.step()
    net.eval()
    with torch.no_grad():
        return float((net(torch.from_numpy(x_test)).argmax(1) == torch.from_numpy(y_test)).float().mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist", type=Path, default=Path(__file__).resolve().parents[4] / "shared" / "data" / "mnist")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(2)
    data = load(args.mnist)
    print("labels  decay  init    test accuracy (mean ± sd over seeds)")
    for n in (20, 100):
        for decay in ("all", "dense", "none"):
            for init in ("torch", "glorot"):
                started = time.perf_counter()
                accs = [accuracy(data, n, seed, decay, init) for seed in range(args.seeds)]
                print(f"{n:6d}  {decay:5s}  {init:6s}  {np.mean(accs):.3f} ± {np.std(accs, ddof=1):.3f}   "
                      f"({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
