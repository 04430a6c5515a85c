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
link (2,000 samples of the full C x C covariance) instead of the probit. --last-layer: for each
structure of the marglik training, the same network with a last-layer Laplace predictive (probit
GLM): (a) KFAC with the last layer's learnt (δ_W₃, δ_b₃), (b) KFAC with one δ re-optimised post hoc
by the last layer's own evidence (laplace-torch's default recipe), (c) the exact last-layer GGN
(hessian="full") with one δ post hoc; for (c) also γ = Σ e/(e + δ), the number of the last layer's
1,290 directions that the data determine (MacKay's effective number of parameters), and the test
images' mean logit variance under the prior alone, ‖φ̃‖²/δ (φ̃ = [φ, 1], the last layer's input).
--ard: the exact-GGN marglik network with a last-layer ARD prior, one δ_i per weight fitted by the
last layer's evidence (`ard_laplace.py`: MacKay's fixed point δ_i ← γ_i/θ_i² from the post-hoc
scalar δ of (c), by Newton ascent in log δ, each δ_i kept in [1e-6, 1e8]); (A) at the network's
last-layer weights, (B) five alternations of the last layer's MAP at δ (on the eval-mode features)
and δ, (B*) the same alternations until one raises the evidence by < 0.01 nats; probit GLM with
the full GGN (and for B, B* their re-fitted MAP's softmax). --cnn: the same question for the GPU
study's network (`cnn`), trained on 30 random images per class.
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
from activebayes.nets import ModelFn, gal_cnn, mlp
from activebayes.posteriors._moment_propagation import probit_softmax
from activebayes.posteriors.laplace import Laplace, features_and_logits
from activebayes.study import mnist_files
from activebayes.training import TrainConfig
from ard_laplace import CAP, FLOOR, fit_ard, logits_of  # studies/posteriors/ard_laplace.py, beside this script


def load(folder: Path, per_class: int = 20, shape: tuple[int, ...] = (784,)) -> tuple[torch.Tensor, ...]:
    """(x, y) of `per_class` random training images per class (seed 0) and the first 2,000 test
    images, each image shaped `shape`, pixels in [0, 1]."""
    files = mnist_files(folder)
    pool_x = read_idx(files["train_x"]).reshape(-1, *shape).astype(np.float32) / 255.0
    pool_y = read_idx(files["train_y"]).astype(np.int64)
    rng = np.random.default_rng(0)
    rows = np.concatenate([rng.choice(np.flatnonzero(pool_y == c), per_class, replace=False) for c in range(10)])
    test_x = read_idx(files["test_x"])[:2000].reshape(-1, *shape).astype(np.float32) / 255.0
    test_y = read_idx(files["test_y"])[:2000].astype(np.int64)
    return tuple(torch.from_numpy(a) for a in (pool_x[rows], pool_y[rows], test_x, test_y))


def training(hessian: str = "kron", *, epochs: int = 50, frequency: int = 5, **schedule) -> TrainConfig:
    """The CPU posterior study's training (`cpu-200.toml`): `epochs` epochs of 10 Adam steps (1,280
    items drawn in batches of 128) at lr 1e-3, online marglik with `hessian` every `frequency`
    epochs; `schedule`: other `MarglikConfig` fields (e.g. keep_best)."""
    return TrainConfig(epochs=epochs, lr=1e-3, batch_size=128, epoch_samples=1280,
                       marglik=MarglikConfig(hessian=hessian, frequency=frequency, **schedule))  # fmt: skip


def network(dropout: float = 0.5) -> ModelFn:
    """Factory of the MLP 784-128-128-10 (x [N, 784] -> logits [N, 10]) with dropout `dropout`."""
    return mlp(784, 10, hidden=(128, 128), dropout=dropout)


def probit(la: Laplace, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(probit GLM predictive [N, C], diag f_var [N, C]) of a probit-link `la` from one
    `output_moments` call: p = softmax(f_map / sqrt(1 + π/8 · diag f_var)), as `la.predict_proba`."""
    mean, variance = la.output_moments(inputs)
    return probit_softmax(mean, variance), variance


def line(name: str, probs: torch.Tensor, y: torch.Tensor, variance: torch.Tensor | None = None) -> str:
    confidence, predicted = probs.max(1)
    nll = -probs[torch.arange(len(y)), y].clamp_min(1e-12).log().mean()
    ece = expected_calibration_error(probs, y)
    extra = "" if variance is None else f"  mean logit variance {float(variance.mean()):.2f}"
    return (f"  {name:<24} accuracy {(predicted == y).float().mean():.3f}  confidence {confidence.mean():.3f}  "
            f"NLL {nll:.3f}  ECE {ece:.3f}{extra}")  # fmt: skip


def map_and_glm(la: Laplace, x: torch.Tensor, y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor) -> None:
    """The `line` of the MAP network's softmax and of `la`'s probit GLM, on the test images, then
    on the training images."""
    for name, inputs, targets in (("test", test_x, test_y), ("train", x, y)):
        with torch.no_grad():
            print(line(f"MAP softmax ({name})", torch.softmax(la.model_(inputs), 1), targets))
        probs, variance = probit(la, inputs)
        print(line(f"probit GLM ({name})", probs, targets, variance))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mnist", nargs="?", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist")
    parser.add_argument("--hessians", default="kron,full")
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--last-layer", action="store_true")
    parser.add_argument("--ard", action="store_true")
    parser.add_argument("--cnn", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.cnn:
        cnn(*load(args.mnist, 30, (1, 28, 28)))
        return
    x, y, test_x, test_y = load(args.mnist)
    if args.variants:
        variants(x, y, test_x, test_y)
        return
    if args.ard:
        net = Laplace(network(), prior_precision="online", train=training("full"), seed=0, device="cpu")
        ard_screen(net.fit(x, y).model_, x, y, test_x, test_y)
        return
    if args.last_layer:
        last_layer(x, y, test_x, test_y, args.hessians.split(","))
        return
    for hessian in args.hessians.split(","):
        start = time.perf_counter()
        la = Laplace(network(), subset="all", hessian=hessian, prior_precision="online", train=training(hessian), seed=0,
                     device="cpu").fit(x, y)  # fmt: skip
        fit, net = la.marglik_, la.model_
        deltas = fit.prior_precision
        evidences = {h: float(log_evidence(net, x, y, deltas, hessian=h)) for h in ("kron", "full")}
        print(f"marglik with hessian={hessian} ({time.perf_counter() - start:.0f} s): δ = {', '.join(f'{d:.3g}' for d in deltas.tolist())}, "
              f"epoch kept {fit.best_epoch}; evidence of this network at these δ: KFAC {evidences['kron']:.1f}, exact GGN "
              f"{evidences['full']:.1f} (a uniform guess: {-len(y) * np.log(10):.1f})")  # fmt: skip
        map_and_glm(la, x, y, test_x, test_y)


def cnn(x: torch.Tensor, y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor) -> None:
    """--cnn: the GPU study's network and training (`mnist.toml`: Gal et al.'s CNN, 50 epochs of Adam
    at lr 1e-3, batch 128) by online marglik (KFAC) on 300 random balanced labels, then
    `Laplace(subset="all", prior_precision="online")`: the MAP softmax and the probit GLM on the
    test and on the training images."""
    start = time.perf_counter()
    la = Laplace(gal_cnn(), subset="all", prior_precision="online", train=TrainConfig(epochs=50, lr=1e-3, batch_size=128),
                 seed=0, device="cpu").fit(x, y)  # fmt: skip
    print(f"marglik ({time.perf_counter() - start:.0f} s): δ = {', '.join(f'{d:.3g}' for d in la.marglik_.prior_precision.tolist())}")
    map_and_glm(la, x, y, test_x, test_y)


def variants(x: torch.Tensor, y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor) -> None:
    cases = {"a fit every epoch": ({"frequency": 1}, {}, "kron", 0.5), "150 epochs": ({"frequency": 5}, {"epochs": 150}, "kron", 0.5),
             "the last state": ({"frequency": 5, "keep_best": False}, {}, "kron", 0.5), "no dropout": ({"frequency": 5}, {}, "kron", 0.0),
             "diagonal GGN": ({"frequency": 5}, {}, "diag", 0.5)}  # fmt: skip
    for name, (schedule, epochs, hessian, dropout) in cases.items():
        la = Laplace(network(dropout), subset="all", hessian=hessian, prior_precision="online",
                     train=training(hessian, **epochs, **schedule), seed=0, device="cpu").fit(x, y)  # fmt: skip
        probs, variance = probit(la, test_x)
        print(line(f"{name}: probit GLM", probs, test_y, variance))
    la = Laplace(network(), subset="all", prior_precision="online", link="mc", n_samples=2000, train=training(), seed=0,
                 device="cpu").fit(x, y)  # fmt: skip
    print(line("KFAC, MC link (S = 2,000)", la.predict_proba(test_x), test_y))


def last_layer(x: torch.Tensor, y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor, hessians: list[str]) -> None:
    """--last-layer (module docstring): the marglik-trained network of each structure with last-layer predictives."""
    for hessian in hessians:
        start = time.perf_counter()
        learnt = Laplace(network(), prior_precision="online", train=training(hessian), seed=0, device="cpu").fit(x, y)
        posthoc = Laplace(model=learnt.model_, prior_precision="marglik", seed=0, device="cpu").fit(x, y)
        exact = Laplace(model=learnt.model_, hessian="full", prior_precision="marglik", seed=0, device="cpu").fit(x, y)
        e = exact.posterior_.eigenvalues
        gamma = float((e / (e + exact.prior_precision_)).sum())
        phi, _ = features_and_logits(exact.model_, exact.layer_, test_x)
        prior_variance = float((phi.square().sum(1) + 1).mean() / exact.prior_precision_)
        print(f"marglik with hessian={hessian} ({time.perf_counter() - start:.0f} s): δ = "
              f"{', '.join(f'{d:.3g}' for d in learnt.marglik_.prior_precision.tolist())}; last-layer δ post hoc: KFAC "
              f"{posthoc.prior_precision_:.3g}, exact {exact.prior_precision_:.3g} (γ = {gamma:.0f}; "
              f"test logit variance under its prior alone {prior_variance:.1f})")
        for name, inputs, targets in (("test", test_x, test_y), ("train", x, y)):
            with torch.no_grad():
                print(line(f"MAP softmax ({name})", torch.softmax(learnt.model_(inputs), 1), targets))
            for label, la in (("(a) LL, learnt δ", learnt), ("(b) LL, δ post hoc", posthoc),
                              ("(c) exact LL, post hoc", exact)):
                probs, variance = probit(la, inputs)
                print(line(f"{label} ({name})", probs, targets, variance))


def ard_screen(net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor) -> None:
    """--ard (module docstring): the trained `net` with the last-layer ARD predictives beside its MAP and (c)."""
    exact = Laplace(model=net, hessian="full", prior_precision="marglik", seed=0, device="cpu").fit(x, y)
    e, delta = exact.posterior_.eigenvalues, exact.prior_precision_
    layer = exact.layer_
    features = {name: features_and_logits(exact.model_, layer, inputs)[0].double() for name, inputs in (("test", test_x), ("train", x))}
    print(f"(c) one δ post hoc: δ {delta:.3g}, γ {float((e / (e + delta)).sum()):.1f}, evidence {float(exact.log_marginal_likelihood()):.1f}; "
          f"test images: logit variance under the prior alone ‖φ̃‖²/δ {float((features['test'].square().sum(1) + 1).mean() / delta):.1f}")
    theta = torch.cat([layer.weight.reshape(-1), layer.bias]).double()
    c = layer.out_features
    fits = {}
    for name, alternations, until in (("(A) ARD, MAP fixed", 0, None), ("(B) ARD, 5 alternations", 5, None),
                                      ("(B*) ARD, converged", 300, 0.01)):  # fmt: skip
        start = time.perf_counter()
        fit = fits[name] = fit_ard(features["train"], y, theta, torch.full_like(theta, delta), c, alternations=alternations, until=until)
        print(f"{name} ({time.perf_counter() - start:.0f} s, {len(fit.evidences) - 1} alternations): evidence {fit.evidence:.2f}, "
              f"γ {fit.gamma:.1f}, δ_i at the cap 1e8: {int((fit.delta >= CAP).sum())}, at the floor 1e-6: "
              f"{int((fit.delta <= FLOOR).sum())}, of {theta.numel()}; median δ_i {float(fit.delta.median()):.3g}; "
              f"Newton iterations {sum(fit.iterations)}")  # fmt: skip
        weights = fit.delta[: c * features["test"].shape[1]].reshape(c, -1)
        prior = (features["test"].square() @ (1 / weights).T + 1 / fit.delta[c * weights.shape[1] :]).mean()
        logits = logits_of(features["test"], fit.theta, c)
        print(f"    test images: logit variance under the prior alone Σ φ̃²/δ {float(prior):.1f}, mean squared logit "
              f"{float(logits.square().mean()):.1f}, mean γ_i {fit.gamma / theta.numel():.3f}")
    for name, inputs, targets in (("test", test_x, test_y), ("train", x, y)):
        with torch.no_grad():
            print(line(f"MAP softmax ({name})", torch.softmax(net(inputs), 1), targets))
        probs, variance = probit(exact, inputs)
        print(line(f"(c) exact LL, one δ ({name})", probs, targets, variance))
        for label, fit in fits.items():
            mean, variance = fit.moments(features[name], c)
            print(line(f"{label} ({name})", probit_softmax(mean, variance).float(), targets, variance))
            if label != "(A) ARD, MAP fixed":
                print(line(f"{label[:4]} its MAP softmax ({name})", torch.softmax(mean.float(), 1), targets))


if __name__ == "__main__":
    main()
