"""Sampling-free (analytic) predictive vs the sampled predictive at S = 20, over 100,000 inputs.

    .venv/bin/python bench/analytic.py [--posteriors mfvi laplace] [--pool 100000] [--samples 20]
                                       [--repeats 3] [--device cpu] [--threads 1] [--quick]
    .venv/bin/python bench/analytic.py --data digits [--reference 40000] [--seed 0]

An MLP (784 → 128 → 128 → 10, ReLU, `nets.mlp` without dropout) is trained on 10,000 MNIST
training images (from ../shared/data/mnist; synthetic 784-d Gaussian clusters when absent) with
the shared `train`; from it `model=` fits
    mfvi:    MFVI (every dense weight Gaussian; 3 more epochs of ELBO training from the MAP weights),
    laplace: last-layer Laplace with the diagonal GGN (prior precision 1.0).
Each posterior is fitted ONCE; its predictive is then switched between "sampled" and "analytic"
(`predictive` only changes prediction, not the fit), so both predict from the same posterior.

Timed over a pool of `--pool` inputs (MNIST train + test images, tiled), in batches of 10,000:
    sampled    predict(x, S).mean(): S weight samples through the network;
    analytic   predict_proba(x): one moment-propagated pass and the probit approximation;
    analytic-S predict(x, S): the same pass plus S seeded draws from the logits' Gaussian (what
               acquisition functions read).
Time: the median of `--repeats` runs each, after one warm-up. Printed: seconds, the speed-up of
analytic (and analytic-S) over sampled, and, on the 10,000 labelled MNIST test images, each
predictive's NLL and accuracy, their NLL difference, and max/mean |Δp| of analytic against a
1,000-sample Monte Carlo reference of the same posterior on the first 2,000 test images. For
Laplace the sampled predictive already computes the features once and samples only the last
layer, so little is to be gained there (and its predict_proba, the probit, already is analytic).

`--data digits` measures accuracy alone, of each rule of the moment propagation: an MFVI
64-64-10 ReLU MLP (`nets.mlp`, no dropout; MFVI's defaults, the default TrainConfig: 50 Adam epochs
at 1e-3) fitted on 1,000 sklearn digits images (x / 16, the split drawn by `--seed`), and on the
other 797 the max / mean |Δp| of the class probabilities of each combination of the ReLU rule
(linearised, exact) and the softmax approximation (probit, mean-field), against a Monte Carlo
reference of `--reference` weight draws of the same q; printed beside them, the error of a
1,000-sample Monte Carlo against that reference (the noise of the usual yardstick) and the logits'
propagated variances. Each line names its rule; "default" marks what predict_proba uses.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from _common import bench_parser, parse_and_set_threads
from activebayes.nets import mlp
from activebayes.posteriors._moment_propagation import RELU_MODES, mean_field_softmax, probit_softmax, propagate
from activebayes.posteriors.laplace import Laplace
from activebayes.posteriors.mfvi import MFVI
from activebayes.training import TrainConfig, build_model, train

MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
N_TRAIN, BATCH, C, N_REF = 10_000, 10_000, 10, 2000


def load_data(quick: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """(x_train, y_train, x_test, y_test, source): flattened 784-d inputs in [0, 1]."""
    if (MNIST / "train-images-idx3-ubyte.gz").is_file():
        from activebayes.data import read_idx

        def split(prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
            images = read_idx(MNIST / f"{prefix}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
            labels = read_idx(MNIST / f"{prefix}-labels-idx1-ubyte.gz").astype(np.int64)
            return torch.from_numpy(images).reshape(len(images), -1), torch.from_numpy(labels)

        (x_train, y_train), (x_test, y_test) = split("train"), split("t10k")
        source = "MNIST"
    else:
        g = torch.Generator().manual_seed(0)
        centres = torch.rand(C, 784, generator=g)
        y = torch.randint(0, C, (70_000,), generator=g)
        x = (centres[y] + 0.5 * torch.randn(70_000, 784, generator=g)).clamp(0, 1)
        x_train, y_train, x_test, y_test = x[:60_000], y[:60_000], x[60_000:], y[60_000:]
        source = "synthetic (MNIST not found)"
    if quick:
        x_test, y_test = x_test[:2000], y_test[:2000]
    return x_train, y_train, x_test, y_test, source


def batched(fn, x: torch.Tensor, device: torch.device) -> torch.Tensor:
    return torch.cat([fn(chunk.to(device)) for chunk in x.split(BATCH)])


def timed(fn, repeats: int, device: torch.device) -> tuple[float, torch.Tensor]:
    """(median seconds, the last result) of `repeats` runs after one warm-up."""
    out = fn()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        out = fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def nll_and_accuracy(probs: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    probs = probs.double().cpu()
    nll = -probs.gather(1, y.unsqueeze(1)).clamp_min(1e-12).log().mean()
    return float(nll), float((probs.argmax(1) == y).double().mean())


def fit(name: str, net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, device: str):
    if name == "mfvi":
        return MFVI(model=net, init_std=0.01, kl_weight=1.0, train=TrainConfig(epochs=3, lr=1e-3, batch_size=128),
                    seed=0, device=device).fit(x, y)
    return Laplace(model=net, hessian="diag", prior_precision=1.0, seed=0, device=device).fit(x, y)


def mfvi_monte_carlo(vi: MFVI, x: torch.Tensor, n_draws: int, seed: int) -> torch.Tensor:
    """(1/n) Σ_s softmax(f(x; θ_s)), θ_s ~ q drawn from a generator seeded with `seed` (not MFVI's
    own sampler, so that references of other seeds are independent of it), [N, C] float64."""
    from torch.func import functional_call, vmap

    generator, total = torch.Generator().manual_seed(seed), torch.zeros(x.shape[0], C, dtype=torch.float64)
    net = vi.model_
    with torch.no_grad():
        for start in range(0, n_draws, 1000):
            n = min(1000, n_draws - start)
            draws = {name: p.detach() + (vi.std_[name] * torch.randn(n, *p.shape, generator=generator) if name in vi.std_ else 0.0)
                     for name, p in net.named_parameters()}
            total += vmap(lambda p: torch.softmax(functional_call(net, p, (x,)), -1))(draws).double().sum(0)
    return total / n_draws


def digits_accuracy(args) -> None:
    """The `--data digits` case (module docstring)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x, y = torch.tensor(data.data, dtype=torch.float32) / 16.0, torch.tensor(data.target)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(args.seed))
    train_idx, test_idx = perm[:1000], perm[1000:]
    start = time.perf_counter()
    vi = MFVI(mlp(64, C, hidden=(64, 64), dropout=0.0), seed=args.seed, device="cpu").fit(x[train_idx], y[train_idx])
    x_test = x[test_idx]
    reference = mfvi_monte_carlo(vi, x_test, args.reference, seed=1)
    small = mfvi_monte_carlo(vi, x_test, 1000, seed=2)
    print(f"torch {torch.__version__}, {args.threads} thread(s); digits, MFVI 64-64-10 fitted on 1,000 images (seed {args.seed}), "
          f"797 test images, reference {args.reference:,} weight draws ({time.perf_counter() - start:.0f} s)")
    delta = (small - reference).abs()
    print(f"{'1,000-sample Monte Carlo':34} max|Δp| {float(delta.max()):.4f}  mean|Δp| {float(delta.mean()):.5f}")
    variances = {name: std.square() for name, std in vi.std_.items()}
    for relu in RELU_MODES:
        mean, var = propagate(vi.model_, x_test, variances, relu=relu)
        mean, var = mean.double(), var.double()
        for name, rule in (("probit", probit_softmax), ("mean-field", mean_field_softmax)):
            delta = (rule(mean, var) - reference).abs()
            mark = "  (default)" if (relu, name) == (RELU_MODES[0], "mean-field") else ""
            print(f"{relu + ' ReLU, ' + name:34} max|Δp| {float(delta.max()):.4f}  mean|Δp| {float(delta.mean()):.5f}{mark}")
        print(f"{'':34} logit variance mean {float(var.mean()):.3g}, max {float(var.max()):.3g}")


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--data", default="mnist", choices=["mnist", "digits"], help="mnist: speed and accuracy; digits: accuracy of each rule")
    parser.add_argument("--reference", type=int, default=40_000, help="digits: weight draws of the Monte Carlo reference")
    parser.add_argument("--seed", type=int, default=0, help="digits: the split, the fit and nothing else")
    parser.add_argument("--posteriors", nargs="+", default=["mfvi", "laplace"], choices=["mfvi", "laplace"])
    parser.add_argument("--pool", type=int, default=100_000, help="inputs timed")
    parser.add_argument("--samples", type=int, default=20, help="S of the sampled predictive")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="a pool of 20,000, 1 repeat, 2,000 test images")
    args = parse_and_set_threads(parser)
    if args.data == "digits":
        digits_accuracy(args)
        return
    if args.quick:
        args.pool, args.repeats = min(args.pool, 20_000), 1
    device = torch.device(args.device)
    x_train, y_train, x_test, y_test, source = load_data(args.quick)
    everything = torch.cat([x_train, x_test])
    pool = everything.repeat(math.ceil(args.pool / everything.shape[0]), 1)[: args.pool]
    print(f"torch {torch.__version__}, {args.threads} thread(s), device {device}; data: {source}; "
          f"pool N={pool.shape[0]}, S={args.samples}, test N={x_test.shape[0]}")

    start = time.perf_counter()
    net = train(build_model(mlp(784, C, hidden=(128, 128), dropout=0.0), 0), x_train[:N_TRAIN], y_train[:N_TRAIN],
                TrainConfig(epochs=5, lr=1e-3, batch_size=128), seed=0, device=device)
    print(f"trained the MAP MLP in {time.perf_counter() - start:.1f} s")
    header = (f"{'posterior':9} {'sampled s':>9} {'analytic s':>10} {'speed-up':>8} {'anal.-S s':>9} {'speed-up':>8} "
              f"{'NLL samp':>8} {'NLL anal':>8} {'ΔNLL':>8} {'acc samp':>8} {'acc anal':>8} {'max|Δp|':>8} {'mean|Δp|':>8}")
    print(header)
    for name in args.posteriors:
        posterior = fit(name, net, x_train[:N_TRAIN], y_train[:N_TRAIN], args.device)
        s = args.samples

        def sampled(x: torch.Tensor) -> torch.Tensor:
            posterior.predictive = "sampled"
            return posterior.predict(x, n_samples=s).mean()

        def analytic(x: torch.Tensor) -> torch.Tensor:
            posterior.predictive = "analytic"
            return posterior.predict_proba(x)

        def analytic_samples(x: torch.Tensor) -> torch.Tensor:
            posterior.predictive = "analytic"
            return posterior.predict(x, n_samples=s).probs

        with torch.no_grad():
            t_sampled, _ = timed(lambda: batched(sampled, pool, device), args.repeats, device)
            t_analytic, _ = timed(lambda: batched(analytic, pool, device), args.repeats, device)
            t_analytic_s, _ = timed(lambda: batched(analytic_samples, pool, device), args.repeats, device)
            p_sampled, p_analytic = batched(sampled, x_test, device), batched(analytic, x_test, device)
            posterior.predictive = "sampled"
            reference = torch.cat([posterior.predict(chunk.to(device), n_samples=1000).mean() for chunk in x_test[:N_REF].split(1000)])
        nll_s, acc_s = nll_and_accuracy(p_sampled, y_test)
        nll_a, acc_a = nll_and_accuracy(p_analytic, y_test)
        delta = (p_analytic[:N_REF] - reference).abs()
        print(f"{name:9} {t_sampled:9.3f} {t_analytic:10.3f} {t_sampled / t_analytic:7.1f}x {t_analytic_s:9.3f} "
              f"{t_sampled / t_analytic_s:7.1f}x {nll_s:8.4f} {nll_a:8.4f} {nll_a - nll_s:+8.4f} {acc_s:8.4f} {acc_a:8.4f} "
              f"{float(delta.max()):8.4f} {float(delta.mean()):8.5f}")
    print("speed-up: sampled time / analytic time; ΔNLL = NLL(analytic) − NLL(sampled, S); |Δp|: analytic vs the "
          "1,000-sample Monte Carlo of the same posterior on 2,000 test images")


if __name__ == "__main__":
    main()
