"""Expected information gain of a design: exact on a grid, nested Monte Carlo off it.

(BoTorch optimisation over designs lives in `activebayes.design.optimize`.)

    EIG(ξ) = I[y; θ | ξ] = H[Σ_g w_g p(y | θ_g, ξ)] − Σ_g w_g H[p(y | θ_g, ξ)]

the same quantity as BALD (`activebayes.acquisition.eig` on the weighted `Predictive`).

Fast path on a grid: the table P[g, d] = p(y=1 | θ_g, ξ_d) and the entropies H[g, d] =
H[Bernoulli(P[g, d])] never change during a session, so with the posterior weights w [G]

    EIG = h(wᵀP) − wᵀH        (two matrix-vector products, h the binary entropy)

`EIGTable` holds P, H and log p(y | θ_g, ξ_d) for the updates; `grid_eig` is the formula.

Nuisance slope: on a joint (θ, s) grid the EIG above is I[y; (θ, s) | ξ], which also values
learning the slope. When only the span matters, `target="theta"` scores I[y; θ | ξ] instead,

    p(y=1 | θ_i, ξ) = Σ_j w_ij P_ijd / Σ_j w_ij ,   EIG_θ = h(w_θᵀ P_θ) − w_θᵀ h(P_θ),

where w_θ = Σ_j w_ij is the θ marginal (`theta_eig`). Both are exact; EIG_θ ≤ EIG_joint.

Nested Monte Carlo (`nmc_eig`), for models where no grid fits:

    EIG_NMC = 1/N Σ_n [ log p(y_n | θ_n, ξ) − log 1/M Σ_m p(y_n | θ_nm, ξ) ],
    θ_n, θ_nm ~ p(θ) independent, y_n ~ p(y | θ_n, ξ).

Bias: for every y, E[log 1/M Σ_m p(y | θ_m)] ≤ log E[p(y | θ)] = log p(y) (Jensen), so the
subtracted term is too small on average and EIG_NMC over-estimates: E[EIG_NMC] ≥ EIG, the bias
decreasing in M and, to leading order, (1 / 2M) · E_y[Var_θ p(y | θ, ξ) / p(y | ξ)²] = O(1/M)
(Rainforth et al., 2018, "On nesting Monte Carlo estimators"). The variance is O(1/N).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from activebayes.design.grid import GridPosterior
from activebayes.design.model import MemorySpanModel, binary_entropy
from activebayes.errors import ConfigError, ShapeError

Sampler = Callable[[int, torch.Generator], tuple[Tensor, "Tensor | None"]]


def grid_eig(weights: Tensor, p_recall: Tensor, entropy: Tensor) -> Tensor:
    """EIG [D] = h(wᵀP) − wᵀH for weights w [G], P [G, D] = p(y=1 | θ_g, ξ_d), H [G, D] its entropies."""
    # P.mT @ w rather than w @ P: with P stored as a transposed view of a [D, G] tensor (as
    # EIGTable does) this is a plain gemv over contiguous rows, much faster on loaded CPUs.
    marginal = p_recall.mT @ weights  # [D]
    return (binary_entropy(marginal.clamp(0.0, 1.0)) - entropy.mT @ weights).clamp_min(0.0)


def theta_eig(weights: Tensor, p_recall: Tensor, shape: tuple[int, int]) -> Tensor:
    """I[y; θ | ξ_d] [D] on a joint (θ, s) grid of `shape` (G_θ, G_s), the slope marginalised out.

    Args:
        weights: [G] joint weights, θ-major (g = i · G_s + j).
        p_recall: [G, D], p(y=1 | θ_i, s_j, ξ_d).
    """
    g_t, g_s = shape
    w = weights.reshape(g_t, g_s)  # [G_θ, G_s]
    w_theta = w.sum(1)  # [G_θ]
    p = p_recall.mT.reshape(-1, g_t, g_s)  # [D, G_θ, G_s]
    p_theta = (p * w).sum(-1) / w_theta.clamp_min(torch.finfo(w.dtype).tiny)  # [D, G_θ]
    p_theta = p_theta.clamp(0.0, 1.0)
    return grid_eig(w_theta, p_theta.mT, binary_entropy(p_theta).mT)


class EIGTable:
    """The fixed tables of one session: P, H [G, D] and log p(y | θ_g, ξ_d) for the updates.

    >>> from activebayes.design.model import MemorySpanModel
    >>> post = GridPosterior(MemorySpanModel())
    >>> table = EIGTable(post, torch.arange(1.0, 15.0))
    >>> int(table.eig(post.weights).argmax()) + 1    # the design nearest the prior mean
    7
    """

    def __init__(self, posterior: GridPosterior, designs: Tensor) -> None:
        designs = torch.as_tensor(designs, dtype=posterior.theta.dtype, device=posterior.theta.device)
        if designs.dim() not in (1, 2) or designs.shape[0] == 0:
            raise ShapeError(f"designs: expected [D] or [D, 2] with D >= 1, got shape {tuple(designs.shape)}")
        self.designs = designs
        self.shape = posterior.shape
        model, theta, slope = posterior.model, posterior.theta, posterior.slope
        # stored design-major ([D, G] contiguous) and exposed as [G, D] views: see grid_eig
        p_recall = model.prob_recall(theta, designs, slope).mT.contiguous()  # [D, G]
        p_miss = model.prob_miss(theta, designs, slope).mT.contiguous()  # [D, G]
        self.p_recall = p_recall.mT  # [G, D]
        self.entropy = binary_entropy(p_recall).mT  # [G, D]
        tiny = torch.finfo(theta.dtype).tiny
        self._log_lik = torch.stack([p_miss.clamp_min(tiny).log(), p_recall.clamp_min(tiny).log()])  # [2, D, G]

    @property
    def n_designs(self) -> int:
        return self.designs.shape[0]

    def eig(self, weights: Tensor, *, target: str = "all") -> Tensor:
        """EIG [D] of every design under posterior weights [G].

        target: "all" for I[y; (θ, s)] (two matrix-vector products), "theta" for I[y; θ] with
        the slope a nuisance (the same as "all" when the slope is fixed).
        """
        if target not in ("all", "theta"):
            raise ConfigError(f"target: expected 'all' or 'theta', got {target!r}")
        if target == "theta" and self.shape[1] > 1:
            return theta_eig(weights, self.p_recall, self.shape)
        return grid_eig(weights, self.p_recall, self.entropy)

    def update(self, posterior: GridPosterior, design_index: int, outcome: int) -> GridPosterior:
        """Condition `posterior` on `outcome` at design `design_index`, reading the stored table."""
        if outcome not in (0, 1):
            raise ConfigError(f"outcome: expected 0 or 1, got {outcome!r}")
        return posterior.update_log_likelihood(self._log_lik[outcome, design_index])


def exact_eig(posterior: GridPosterior, designs: Tensor) -> Tensor:
    """EIG [D] by the general path: `activebayes.acquisition.eig` on the weighted Predictive [G, D, 2]."""
    from activebayes.acquisition import eig as acquisition_eig

    return acquisition_eig(posterior.predictive(designs))


# -- nested Monte Carlo ------------------------------------------------------------------------
def normal_prior_sampler(mean: float = 7.0, sd: float = 2.0) -> Sampler:
    """A sampler of θ ~ N(mean, sd²) (slope fixed by the model) for `nmc_eig`."""

    def sample(n: int, generator: torch.Generator) -> tuple[Tensor, None]:
        return mean + sd * torch.randn(n, generator=generator, dtype=torch.float64), None

    return sample


def nmc_eig(
    model: MemorySpanModel,
    designs: Tensor,
    sampler: Sampler | GridPosterior,
    *,
    n_outer: int = 1000,
    n_inner: int = 100,
    generator: torch.Generator | None = None,
    seed: int | None = None,
) -> Tensor:
    """Nested Monte Carlo EIG [D] (see the module docstring for the estimator and its O(1/M) upward bias).

    Args:
        model: the likelihood.
        designs: [D] or [D, 2].
        sampler: `(n, generator) -> (θ [n], slope [n] or None)`, or a GridPosterior (draws its points).
        n_outer: N, outer samples (θ_n, y_n).
        n_inner: M, inner samples θ_nm per outer sample, independent of θ_n.
        generator, seed: the randomness; a generator wins, else one seeded with `seed` (None → 0).
    """
    if n_outer < 1 or n_inner < 1:
        raise ConfigError(f"n_outer, n_inner: expected positive counts, got {n_outer}, {n_inner}")
    if generator is None:
        generator = torch.Generator().manual_seed(0 if seed is None else seed)
    draw = sampler.sample if isinstance(sampler, GridPosterior) else sampler
    designs = torch.as_tensor(designs, dtype=torch.float64)
    theta_n, slope_n = draw(n_outer, generator)
    p_n = model.prob_recall(theta_n, designs, slope_n)  # [N, D]
    # drawn on the generator's device (a CPU generator also serves a CUDA grid), compared where p_n is
    u = torch.rand(p_n.shape, generator=generator, dtype=p_n.dtype, device=generator.device).to(p_n.device)
    y = (u < p_n).to(p_n.dtype)  # [N, D]
    theta_m, slope_m = draw(n_outer * n_inner, generator)
    p_m = model.prob_recall(theta_m, designs, slope_m).reshape(n_outer, n_inner, -1)  # [N, M, D]
    tiny = torch.finfo(p_n.dtype).tiny
    log_cond = torch.where(y > 0, p_n, 1.0 - p_n).clamp_min(tiny).log()  # [N, D]
    lik_m = torch.where(y[:, None, :] > 0, p_m, 1.0 - p_m)  # [N, M, D]
    log_marg = lik_m.mean(1).clamp_min(tiny).log()  # [N, D]
    return (log_cond - log_marg).mean(0)
