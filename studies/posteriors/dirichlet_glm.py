"""Is the linearised network's under-confidence the Laplace approximation's? A likelihood where it is exact.

    OMP_NUM_THREADS=2 .venv/bin/python studies/posteriors/dirichlet_glm.py [MNIST_FOLDER] [--alpha 0.01] [--test 2000]

With the categorical likelihood, Laplace approximates the posterior of the linearised (GLM) model
by a Gaussian at its mode (`exact_glm.py` samples it exactly instead). Milios, Camoriano, Michiardi,
Rosasco and Filippone ("Dirichlet-based Gaussian processes for large-scale calibrated
classification", NeurIPS 2018) replace the categorical likelihood by a Gaussian one on transformed
labels: a one-hot label y [C] becomes the Dirichlet's α = y + α_ε, read through its log-normal
moment match as a regression target with known noise per output,

    s² = log(1/α + 1),   ỹ = log α − s²/2                                   [N, C] each,

and the predictive p(c | x) = E softmax(f(x)). With a Gaussian likelihood the GLM is a linear
Gaussian model, so its posterior is Gaussian and Laplace (with the exact GGN JᵀS⁻¹J, S = diag s²)
is exact: whatever under-confidence is left belongs to the model, not to the approximation.

The MLP 784-128-128-10 of `cpu-200.toml` (no dropout) on 200 balanced random MNIST labels (seed 0,
`marglik_calibration.load`) is trained as that study trains (50 epochs of 10 Adam steps, lr 1e-3,
batches of 128) on the loss Σ_c (f_c − ỹ_c)²/(2 s²_c) + ½ Σ_l δ_l ‖θ_l‖² / N, with one δ per tensor
learnt by online marginal likelihood: every 5 epochs, 10 Adam steps (lr 0.1) on log δ of the exact
evidence of the GLM at θ*,

    log q(D | δ) = −Σ r²/(2s²) − ½ Σ log 2πs² − ½ Σ_l δ_l ‖θ_l‖² − ½ log det(I + S^{-½} K S^{-½}),

r = f(X; θ*) − ỹ, K = Σ_l J_l J_lᵀ / δ_l [N·C, N·C] (Sylvester's identity for the Occam factor), the
state of best evidence kept. Its predictive on a test image x: f ~ N(f(x; θ*), k_xx − k_xᵀ (K + S)⁻¹ k_x)
[C], p = the mean softmax of 500 draws. Printed on the first --test test images and on the 200
training images: accuracy, mean confidence, NLL and ECE (15 bins) of the MAP network's softmax and of
the exact GLM posterior (with its mean logit variance), and of MC dropout trained on the same labels
as `cpu-200.toml` trains it (dropout 0.5, L2 1e-4, S = 20).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch
from torch.func import functional_call, jacrev, vmap

from activebayes.posteriors.mc_dropout import MCDropout
from activebayes.training import TrainConfig
from marglik_calibration import line, load, network  # beside this script


def dirichlet_targets(y: torch.Tensor, n_classes: int, alpha_eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(ỹ, s²) [N, C] float64 of labels y [N] (module docstring)."""
    alpha = torch.nn.functional.one_hot(y, n_classes).double() + alpha_eps
    noise = torch.log(1 / alpha + 1)
    return torch.log(alpha) - noise / 2, noise


def tensor_jacobians(net: torch.nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """J_l(x) [M·C, P_l] per parameter tensor, in `parameters` order, computed in the network's
    dtype (float32 for the study's, as it trains) and returned in float64."""
    params = {name: p.detach() for name, p in net.named_parameters()}

    def outputs(p: dict, item: torch.Tensor) -> torch.Tensor:
        return functional_call(net, p, (item.unsqueeze(0),)).squeeze(0)

    parts: dict[str, list[torch.Tensor]] = {name: [] for name in params}
    for chunk in x.to(next(iter(params.values())).dtype).split(100):
        jac = vmap(jacrev(outputs), in_dims=(None, 0))(params, chunk)
        for name in params:
            parts[name].append(jac[name].reshape(len(chunk) * jac[name].shape[1], -1).double())
    return [torch.cat(parts[name]) for name in params]


def log_evidence(grams: list[torch.Tensor], sq_norms: torch.Tensor, log_delta: torch.Tensor, residual: torch.Tensor,
                 noise: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """The GLM's exact log evidence (module docstring), differentiable in log δ [L]; grams: J_l J_lᵀ
    [N·C, N·C] per tensor, sq_norms: ‖θ_l‖² [L], residual, noise: r, s² [N·C]."""
    delta = log_delta.exp()
    kernel = sum(g / d for g, d in zip(grams, delta))
    root = noise.rsqrt()
    occam = torch.linalg.slogdet(torch.eye(len(noise), dtype=kernel.dtype) + root[:, None] * kernel * root[None, :])[1]
    fit = (residual.square() / (2 * noise)).sum() + 0.5 * torch.log(2 * math.pi * noise).sum()
    return -fit - 0.5 * (delta * sq_norms).sum() - 0.5 * occam


def train(x: torch.Tensor, y: torch.Tensor, alpha_eps: float, *, epochs: int = 50, frequency: int = 5, seed: int = 0
          ) -> tuple[torch.nn.Module, torch.Tensor, float, int]:  # fmt: skip
    """(network, learnt δ [L], best evidence, its epoch): online marglik on the Dirichlet targets."""
    torch.manual_seed(seed)
    net = network(0.0)()
    target, noise = dirichlet_targets(y, 10, alpha_eps)
    target_f, noise_f = target.float(), noise.float()
    log_delta = torch.zeros(len(list(net.parameters())), dtype=torch.float64, requires_grad=True)
    optimiser, hyper = torch.optim.Adam(net.parameters(), lr=1e-3), torch.optim.Adam([log_delta], lr=0.1)
    generator = torch.Generator().manual_seed(seed)
    best: tuple[float, dict, torch.Tensor, int] = (-math.inf, {}, log_delta.detach().clone(), 0)
    for epoch in range(1, epochs + 1):
        net.train()
        for _ in range(10):
            rows = torch.randint(len(x), (128,), generator=generator)
            fit = ((net(x[rows]) - target_f[rows]).square() / (2 * noise_f[rows])).sum(1).mean()
            delta = log_delta.detach().exp().float()
            loss = fit + 0.5 * sum(d * p.square().sum() for d, p in zip(delta, net.parameters())) / len(x)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        if epoch % frequency:
            continue
        net.eval()
        grams = [(j.float() @ j.float().T).double() for j in tensor_jacobians(net, x)]
        with torch.no_grad():
            residual = (net(x).double() - target).reshape(-1)
        sq_norms = torch.stack([p.detach().double().square().sum() for p in net.parameters()])
        for _ in range(10):
            hyper.zero_grad()
            (-log_evidence(grams, sq_norms, log_delta, residual, noise.reshape(-1))).backward()
            hyper.step()
        with torch.no_grad():
            value = float(log_evidence(grams, sq_norms, log_delta, residual, noise.reshape(-1)))
        if value > best[0]:
            best = (value, {k: v.clone() for k, v in net.state_dict().items()}, log_delta.detach().clone(), epoch)
    net.load_state_dict(best[1])
    return net.eval(), best[2].exp(), best[0], best[3]


def predictive(net: torch.nn.Module, deltas: torch.Tensor, x: torch.Tensor, noise: torch.Tensor, inputs: torch.Tensor,
               draws: int = 500, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(p [M, C] the mean softmax of the exact GLM posterior, its logit variances [M, C]) at `inputs`."""
    train_j = tensor_jacobians(net, x)
    chol = torch.linalg.cholesky(sum(j @ j.T / d for j, d in zip(train_j, deltas)) + torch.diag(noise.reshape(-1)))
    generator = torch.Generator().manual_seed(seed)
    probs, variances = [], []
    for chunk in inputs.split(100):
        m, c = len(chunk), noise.shape[1]
        test_j = tensor_jacobians(net, chunk)
        k_x = sum(a @ j.T / d for a, j, d in zip(test_j, train_j, deltas)).reshape(m, c, -1)  # [M, C, N·C]
        k_xx = sum(a.reshape(m, c, -1) @ a.reshape(m, c, -1).mT / d for a, d in zip(test_j, deltas))  # [M, C, C]
        solved = torch.cholesky_solve(k_x.reshape(m * c, -1).T, chol).T.reshape(k_x.shape)
        cov = k_xx - k_x @ solved.mT
        with torch.no_grad():
            mean = net(chunk).double()
        root = torch.linalg.cholesky(cov + 1e-9 * torch.eye(c, dtype=cov.dtype))
        samples = mean + (root @ torch.randn(draws, m, c, 1, generator=generator, dtype=cov.dtype)).squeeze(-1)
        probs.append(torch.softmax(samples, -1).mean(0))
        variances.append(torch.diagonal(cov, dim1=1, dim2=2))
    return torch.cat(probs).float(), torch.cat(variances)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mnist", nargs="?", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist")
    parser.add_argument("--alpha", type=float, default=0.01, help="α_ε, the Dirichlet's prior count")
    parser.add_argument("--test", type=int, default=2000, help="how many of the first test images to score")
    args = parser.parse_args()
    x, y, test_x, test_y = load(args.mnist)
    test_x, test_y = test_x[: args.test], test_y[: args.test]
    start = time.perf_counter()
    net, deltas, evidence, epoch = train(x, y, args.alpha)
    print(f"marglik on Dirichlet targets, α_ε = {args.alpha} ({time.perf_counter() - start:.0f} s): evidence {evidence:.1f} at epoch "
          f"{epoch}, δ = {', '.join(f'{d:.3g}' for d in deltas.tolist())}")  # fmt: skip
    noise = dirichlet_targets(y, 10, args.alpha)[1]
    for name, inputs, targets in (("test", test_x, test_y), ("train", x, y)):
        with torch.no_grad():
            print(line(f"MAP softmax ({name})", torch.softmax(net(inputs), 1), targets))
        probs, variance = predictive(net, deltas, x, noise, inputs)
        print(line(f"exact GLM ({name})", probs, targets, variance))
    dropout = MCDropout(network(0.5), n_samples=20, seed=0,
                        train=TrainConfig(epochs=50, lr=1e-3, batch_size=128, epoch_samples=1280, weight_decay=1e-4)).fit(x, y)  # fmt: skip
    for name, inputs, targets in (("test", test_x, test_y), ("train", x, y)):
        print(line(f"MC dropout ({name})", dropout.predict(inputs).probs.mean(0), targets))


if __name__ == "__main__":
    main()
