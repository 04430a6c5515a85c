"""Fit/predict wall time of GaussianProcess (BoTorch backend), exact and variational paths.

    .venv/bin/python bench/gp.py [N_exact] [N_approx]
"""

import sys
import time

import torch

from activebayes.posteriors.gp import GaussianProcess


def run(n: int, d: int = 4, **kw) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, d, generator=g)
    y = torch.sin(6 * x[:, 0]) + x[:, 1:].sum(-1) + 0.1 * torch.randn(n, generator=g)
    xq = torch.rand(10_000, d, generator=g)
    t = time.perf_counter()
    gp = GaussianProcess(seed=0, device="cpu", **kw).fit(x, y)
    fit = time.perf_counter() - t
    t = time.perf_counter()
    gp.predict(xq)
    pred = time.perf_counter() - t
    print(f"N={n} D={d} approximate={gp.approximate_} fit {fit:.1f}s predict(10k) {pred:.2f}s "
          f"noise_={gp.noise_:.4f} lml={gp.log_marginal_likelihood_:.1f} threads={torch.get_num_threads()}")


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
    run(int(sys.argv[2]) if len(sys.argv) > 2 else 6000, max_exact=5000)
