"""How much of whole-network Laplace's under-confidence is the Laplace approximation itself?

    OMP_NUM_THREADS=2 .venv/bin/python studies/posteriors/exact_glm.py [MNIST_FOLDER] [--hessian kron|full] [--dropout P]

The network of `marglik_calibration.py` (the MLP 784-128-128-10 of `cpu-200.toml`, trained by online
marglik with the KFAC or the exact GGN on 200 balanced random labels, seed 0; --dropout 0 trains it
without dropout, so that θ* is closer to the linearised model's own mode) defines the linearised
(GLM) model that `Laplace(subset="all")` predicts with:
    f(x; θ) = f(x; θ*) + J(x)(θ − θ*),   θ ~ N(0, D⁻¹), D = diag δ (the learnt precision per tensor),
so the outputs are a Gaussian process with mean m(x) = f(x; θ*) − J(x)θ* and kernel
k(x, x') = J(x) D⁻¹ J(x')ᵀ [C, C], and the labels enter through the softmax likelihood. Laplace
replaces the posterior of the training outputs f [N·C] by a Gaussian at the mode with precision
K⁻¹ + Λ (Λ the softmax Hessians at f*). Here the same posterior is sampled exactly instead, by
elliptical slice sampling (Murray, Adams & MacKay 2010: no step size, every move accepted;
4,000 moves after 2,000 of burn-in, every 10th kept), and a test output is drawn from
f_x | f ~ N(m_x + k_xᵀ K⁻¹ (f − m), k_xx − k_xᵀ K⁻¹ k_x) [C, C]; the predictive is the mean softmax.
Printed on the first 1,000 test images: the prior's mean logit variance, the conditional variance left
when the training outputs are known exactly (k_xx − k_xᵀ K⁻¹ k_x), Laplace's (k_xx − k_xᵀ (K + Λ⁻¹)⁻¹ k_x,
the exact GGN at θ*), and accuracy, confidence, NLL and ECE of the MAP softmax, the probit GLM
(the library's predictive) and the sampled exact posterior.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch
from torch.func import functional_call, jacrev, vmap

from activebayes.posteriors.laplace import Laplace
from marglik_calibration import line, load, network, training  # beside this script


def scaled_jacobian(net: torch.nn.Module, deltas: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """J(x) D^{-1/2} [M, C, P] in float64, parameters in `named_parameters` order."""
    params = {name: p.detach() for name, p in net.named_parameters()}

    def outputs(p: dict, item: torch.Tensor) -> torch.Tensor:
        return functional_call(net, p, (item.unsqueeze(0),)).squeeze(0)

    rows = []
    for xb in x.double().split(100):
        jac = vmap(jacrev(outputs), in_dims=(None, 0))(params, xb)
        rows.append(torch.cat([jac[name].reshape(len(xb), jac[name].shape[1], -1) / d.sqrt() for name, d in zip(params, deltas)], 2))
    return torch.cat(rows)


def elliptical_slice(mean: torch.Tensor, chol: torch.Tensor, log_lik, start: torch.Tensor, moves: int, burn: int, thin: int,
                     generator: torch.Generator) -> torch.Tensor:  # fmt: skip
    """Samples [S, n] of p(f) ∝ N(f; mean, LLᵀ) exp(log_lik(f)) by elliptical slice sampling."""
    current, ll, kept = start.clone(), log_lik(start), []
    for move in range(moves):
        nu = chol @ torch.randn(len(mean), generator=generator, dtype=mean.dtype)
        threshold = ll + math.log(float(torch.rand((), generator=generator)))
        angle = float(torch.rand((), generator=generator)) * 2 * math.pi
        low, high = angle - 2 * math.pi, angle
        while True:
            proposal = mean + (current - mean) * math.cos(angle) + nu * math.sin(angle)
            value = log_lik(proposal)
            if value > threshold:
                current, ll = proposal, value
                break
            low, high = (angle, high) if angle < 0 else (low, angle)
            angle = float(torch.rand((), generator=generator)) * (high - low) + low
        if move >= burn and (move - burn) % thin == 0:
            kept.append(current.clone())
    return torch.stack(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mnist", nargs="?", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist")
    parser.add_argument("--hessian", default="kron", choices=("kron", "full"))
    parser.add_argument("--dropout", type=float, default=0.5, help="the MLP's dropout rate while training")
    args = parser.parse_args()
    x, y, test_x, test_y = load(args.mnist)
    test_x, test_y = test_x[:1000], test_y[:1000]
    start = time.perf_counter()
    la = Laplace(network(args.dropout), subset="all", prior_precision="online", train=training(args.hessian), seed=0, device="cpu").fit(x, y)
    net, deltas = la.model_.eval().double(), la.marglik_.prior_precision.double()
    print(f"marglik with hessian={args.hessian} ({time.perf_counter() - start:.0f} s): δ = {', '.join(f'{d:.3g}' for d in deltas.tolist())}")
    j_train, j_test = scaled_jacobian(net, deltas, x), scaled_jacobian(net, deltas, test_x)  # [N, C, P], [M, C, P]
    root_theta = torch.cat([p.detach().reshape(-1) * d.sqrt() for p, d in zip(net.parameters(), deltas)])  # D^{1/2} θ*
    with torch.no_grad():
        f_train, f_test = net(x.double()), net(test_x.double())
    m_train = (f_train - j_train @ root_theta).reshape(-1)  # m = f* − J θ*
    m_test = f_test - j_test @ root_theta
    a = j_train.reshape(-1, j_train.shape[-1])  # [NC, P]
    n, c = a.shape[0], f_train.shape[1]
    kernel = a @ a.T
    chol = torch.linalg.cholesky(kernel + 1e-8 * kernel.diagonal().mean() * torch.eye(n, dtype=kernel.dtype))
    k_x = torch.einsum("mcp,qp->mcq", j_test, a)  # [M, C, NC]
    prior = j_test @ j_test.mT  # k_xx [M, C, C]
    solved = torch.cholesky_solve(k_x.reshape(-1, n).T, chol).T.reshape(k_x.shape)  # K⁻¹ k_x
    floor = prior - k_x @ solved.mT  # [M, C, C]
    p = torch.softmax(f_train, 1)
    lam = torch.block_diag(*(torch.diag(q) - torch.outer(q, q) for q in p))  # Λ [NC, NC]
    w = lam @ torch.linalg.inv(torch.eye(n, dtype=lam.dtype) + kernel @ lam)  # (K + Λ⁻¹)⁻¹
    laplace = prior - k_x @ w @ k_x.mT
    diag = lambda cov: float(torch.diagonal(cov, dim1=1, dim2=2).mean())  # noqa: E731
    print(f"mean logit variance on the test images: prior {diag(prior):.2f}, given the training outputs exactly "
          f"{diag(floor):.2f}, Laplace (exact GGN at θ*) {diag(laplace):.2f}")  # fmt: skip
    generator = torch.Generator().manual_seed(0)

    def log_lik(f: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(f.reshape(-1, c), 1)[torch.arange(len(y)), y].sum()

    start = time.perf_counter()
    samples = elliptical_slice(m_train, chol, log_lik, f_train.reshape(-1), 6000, 2000, 10, generator)
    print(f"{len(samples)} posterior samples in {time.perf_counter() - start:.0f} s; training log-likelihood: at θ* "
          f"{float(log_lik(f_train.reshape(-1))):.1f}, mean over the samples {float(torch.stack([log_lik(s) for s in samples]).mean()):.1f}")  # fmt: skip
    floor_root = torch.linalg.cholesky(floor + 1e-9 * torch.eye(c, dtype=floor.dtype))
    probs = torch.zeros_like(f_test)
    for s in samples:
        mean = m_test + ((s - m_train) @ solved.reshape(-1, n).T).reshape(f_test.shape)
        draw = mean + (floor_root @ torch.randn(*f_test.shape, 1, generator=generator, dtype=floor.dtype)).squeeze(-1)
        probs += torch.softmax(draw, 1) / len(samples)
    print(line("MAP softmax", torch.softmax(f_test, 1).float(), test_y))
    print(line("probit GLM (Laplace)", la.predict_proba(test_x).float(), test_y))
    print(line("exact GLM posterior", probs.float(), test_y))


if __name__ == "__main__":
    main()
