"""Whole-network Laplace and online marglik training benchmark: ours vs laplace-torch, same inputs.

    .venv/bin/python bench/marglik.py [--cases mlp cnn] [--repeats 3] [--threads 1] [--device cuda]

Two networks, each on synthetic data in this one process:
    mlp: D_in=20 → 128 → 128 → C=10 (ReLU), N=2,000 training and 2,000 test points;
    cnn: Gal et al.'s MNIST CNN (`activebayes.nets.gal_cnn`: two 4x4 convolutions, a 3,872 → 128
         dense layer), N=200 training images of 28x28 (an active-learning round's size) and 20 test images
         (laplace-torch's GLM predictive takes minutes per 10 images of this network).
Part 1, post hoc (the network trained briefly with the shared `train`), for hessian kron and diag:
fit + evidence, our `Laplace(model=net, subset="all", prior_precision=1.0).fit(x, y)` and its
`log_marginal_likelihood()` against laplace-torch's `Laplace(net, "classification",
subset_of_weights="all", hessian_structure=h)`, `fit(DataLoader(batch_size=128))` (diag: 100,
cnn 10: it forms [batch, C, P] Jacobians) and
`log_marginal_likelihood()`; then the probit GLM predictive on the test inputs, our
`predict_proba(x_test)` against `la(x_test, pred_type="glm", link_approx="probit")` in batches of
100 inputs (cnn: 10, as its Jacobians are [batch, C, P] floats, 200 MB for 10 images). The script
prints both evidences and the largest difference in a probability.
Part 2, online marglik training (KFAC, every epoch, 10 hyper-steps, Adam lr 1e-3 / 0.1, batches of
128, the same mini-batches in the same order): our `train_marglik` against laplace-torch's
`marglik_training`; both start from the same network, and the script prints both final evidences.

Time: median of `--repeats` runs, ours and theirs interleaved; ratio = theirs / ours. With
`--device cuda` both libraries get the network and the data on the GPU (the short pre-training
stays on the CPU, so both start from the same weights), and each timing ends with
`torch.cuda.synchronize()`; a first untimed round warms the GPU up.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from _common import bench_parser, parse_and_set_threads
from activebayes.marglik import MarglikConfig, train_marglik
from activebayes.nets import gal_cnn
from activebayes.posteriors.laplace import Laplace
from activebayes.training import TrainConfig, build_model, epoch_steps, train

# bench/laplace.py shares this folder: keep it off the path so `import laplace` finds laplace-torch.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import laplace  # noqa: E402  (laplace-torch, the peer)

CASES = {"mlp": {"n": 2000, "n_test": 2000, "epochs": 10, "chunk": 100}, "cnn": {"n": 200, "n_test": 20, "epochs": 5, "chunk": 10}}


def make_problem(case: str):
    g = torch.Generator().manual_seed(0)
    spec = CASES[case]
    total = spec["n"] + spec["n_test"]
    if case == "mlp":
        centres = 2 * torch.randn(10, 20, generator=g)
        y = torch.randint(0, 10, (total,), generator=g)
        x = centres[y] + 1.5 * torch.randn(total, 20, generator=g)
        factory = lambda: nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))  # noqa: E731
    else:
        y = torch.randint(0, 10, (total,), generator=g)
        x = torch.randn(total, 1, 28, 28, generator=g) * 0.5
        x[torch.arange(total), 0, 2 * y + 3, 2 * y + 3] += 3.0  # a class-coded bright pixel
        factory = gal_cnn(dense_dropout=0.0, conv_dropout=0.0)
    return factory, x[: spec["n"]], y[: spec["n"]], x[spec["n"] :]


class TrainOrder(torch.utils.data.Sampler):
    """`activebayes.training.train`'s mini-batches with `seed`, epoch after epoch; the Laplace fits'
    passes in laplace-torch's marglik_training (two per epoch, and two at the end) see all items."""

    def __init__(self, n: int, config: TrainConfig, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        order = torch.randperm(n, generator=g)
        torch.randint(0, 2**62, (1,), generator=g)
        steps = epoch_steps(n, config)
        full = [list(range(i, min(i + 128, n))) for i in range(0, n, 128)]
        self.passes = []
        for _ in range(config.epochs):
            self.passes += [[order[b].tolist() for b in torch.randperm(n, generator=g).tensor_split(steps)], full, full]
        self.full, self.count, self.steps = full, 0, steps

    def __iter__(self):
        batches = self.passes[self.count] if self.count < len(self.passes) else self.full
        self.count += 1
        return iter(batches)

    def __len__(self) -> int:
        return self.steps


def fit_ours(net, x, y, hessian, device):
    la = Laplace(model=net, subset="all", hessian=hessian, prior_precision=1.0, seed=0, device=device).fit(x, y)
    return la, float(la.log_marginal_likelihood())


def fit_theirs(net, x, y, hessian, batch_size):
    la = laplace.Laplace(net, "classification", subset_of_weights="all", hessian_structure=hessian, prior_precision=1.0)
    la.fit(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch_size))
    return la, float(la.log_marginal_likelihood())


def predict_theirs(la, x_test, chunk):
    return torch.cat([la(inputs, pred_type="glm", link_approx="probit") for inputs in x_test.split(chunk)])


def marglik_ours(net, x, y, epochs, device):
    config = TrainConfig(epochs=epochs, lr=1e-3, batch_size=128, marglik=MarglikConfig())
    return train_marglik(copy.deepcopy(net), x, y, config, seed=0, device=device).log_evidence


def marglik_theirs(net, x, y, epochs):
    config = TrainConfig(epochs=epochs, lr=1e-3, batch_size=128, marglik=MarglikConfig())
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_sampler=TrainOrder(len(x), config, 0))
    la, _, _, _ = laplace.marglik_training(copy.deepcopy(net), loader, likelihood="classification", hessian_structure="kron",
                                           n_epochs=epochs, optimizer_kwargs={"lr": 1e-3})  # fmt: skip
    return float(la.log_marginal_likelihood())


def timed(repeats: int, ours, theirs, device: str) -> tuple[float, float, object, object]:
    """Median seconds of ours and theirs over `repeats` interleaved runs (on CUDA after one untimed
    warm-up run of each), and each one's last result."""
    times: dict[str, list[float]] = {"ours": [], "theirs": []}
    results = {}
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(repeats + (device == "cuda")):
        for name, fn in (("ours", ours), ("theirs", theirs)):
            sync()
            start = time.perf_counter()
            results[name] = fn()
            sync()
            times[name].append(time.perf_counter() - start)
    if device == "cuda":
        times = {name: t[1:] for name, t in times.items()}
    return statistics.median(times["ours"]), statistics.median(times["theirs"]), results["ours"], results["theirs"]


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--marglik-repeats", type=int, default=1)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parse_and_set_threads(parser)
    warnings.filterwarnings("ignore")
    dev = args.device
    where = torch.cuda.get_device_name() if dev == "cuda" else f"{args.threads} CPU thread(s)"
    print(f"torch {torch.__version__}, {where}")
    print(f"{'case':5} {'what':24} {'P':>8} {'ours s':>8} {'theirs s':>9} {'speed-up':>8}  agreement")
    for case in args.cases:
        factory, x, y, x_test = make_problem(case)
        net = train(build_model(factory, 0), x, y, TrainConfig(epochs=3, lr=1e-3, batch_size=64), seed=0, device="cpu").to(dev)
        x, y, x_test = x.to(dev), y.to(dev), x_test.to(dev)
        p = sum(q.numel() for q in net.parameters())
        for hessian in ("kron", "diag"):
            batch = 128 if hessian == "kron" else CASES[case]["chunk"]  # its diag GGN forms [batch, C, P] Jacobians
            ours, theirs, (la_o, ev_o), (la_t, ev_t) = timed(args.repeats, lambda: fit_ours(net, x, y, hessian, dev),
                                                             lambda: fit_theirs(net, x, y, hessian, batch), dev)  # fmt: skip
            agree = f"evidence {ev_o:.2f} vs {ev_t:.2f} (rel {abs(ev_o / ev_t - 1):.1e})"
            print(f"{case:5} {'fit+evidence ' + hessian:24} {p:8d} {ours:8.2f} {theirs:9.2f} {theirs / ours:7.1f}x  {agree}")
            ours, theirs, p_o, p_t = timed(args.repeats, lambda: la_o.predict_proba(x_test),
                                           lambda: predict_theirs(la_t, x_test, CASES[case]["chunk"]), dev)  # fmt: skip
            agree = f"{len(x_test)} inputs, max |Δp| {float((p_o.to(p_t.device) - p_t).abs().max()):.1e}"
            print(f"{case:5} {'probit predictive ' + hessian:24} {p:8d} {ours:8.2f} {theirs:9.2f} {theirs / ours:7.1f}x  {agree}")
        epochs = CASES[case]["epochs"]
        fresh = build_model(factory, 1).to(dev)
        ours, theirs, ev_o, ev_t = timed(args.marglik_repeats, lambda: marglik_ours(fresh, x, y, epochs, dev),
                                         lambda: marglik_theirs(fresh, x, y, epochs), dev)  # fmt: skip
        agree = f"final evidence {ev_o:.3f} vs {ev_t:.3f} (rel {abs(ev_o / ev_t - 1):.1e})"
        print(f"{case:5} {f'marglik {epochs} epochs kron':24} {p:8d} {ours:8.2f} {theirs:9.2f} {theirs / ours:7.1f}x  {agree}")


if __name__ == "__main__":
    main()
