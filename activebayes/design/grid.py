"""Exact Bayes on a grid over the span θ, or over (θ, slope) jointly.

Prior (defaults): θ ~ N(7, 2²) (Miller's 7 ± 2); when the slope is learnt, s ~ LogNormal(0, 0.5²),
on a grid uniform in log s so the grid weight of s_j is the normal density of log s_j.
Grid points are flattened θ-major: point g = i · G_s + j holds (θ_i, s_j), G = G_θ · G_s.

Each observation multiplies the weights by the likelihood, in log space:

    log w_g ← log w_g + log p(y | θ_g, s_g, ξ) ;   log w_g ← log w_g − logsumexp_g(log w_g)

>>> import torch
>>> from activebayes.design.model import MemorySpanModel
>>> post = GridPosterior(MemorySpanModel())
>>> round(post.mean, 3), round(post.sd, 3)
(7.0, 2.0)
>>> post.update(9.0, 1).mean > 7.0
True
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from activebayes._device import resolve_device
from activebayes.design.model import MemorySpanModel
from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import Predictive


def normal_log_density(x: Tensor, mean: float, sd: float) -> Tensor:
    """log N(x; mean, sd²), elementwise."""
    return -0.5 * ((x - mean) / sd) ** 2 - math.log(sd) - 0.5 * math.log(2 * math.pi)


class GridPosterior:
    """A weighted grid over θ (and slope): the exact posterior of a `MemorySpanModel`.

    Args:
        model: the likelihood; its `slope` is used unless `learn_slope`.
        theta_grid: [G_θ] increasing spans; default `n_theta` points over mean ± 5 sd of the prior.
        learn_slope: put the slope on the grid too (joint posterior over (θ, s)).
        slope_grid: [G_s] increasing positive slopes; default `n_slope` points uniform in log s
            over exp(μ ± 3σ) of the log-normal prior.
        prior_mean, prior_sd: the normal prior of θ.
        slope_log_mean, slope_log_sd: s ~ LogNormal(μ, σ²), i.e. log s ~ N(μ, σ²).
        log_prior: [G] unnormalised log prior weights over the flattened grid, replacing the above.
        dtype: float64 by default: grids are small and the weights are multiplied many times.
        device: where the grid and its weights live ("cpu", "cuda[:i]", "auto"); None keeps
            `theta_grid`'s device (the CPU when the grid is built here). Every table and update
            derived from the grid follows it.
    """

    def __init__(
        self,
        model: MemorySpanModel,
        *,
        theta_grid: Tensor | None = None,
        learn_slope: bool = False,
        slope_grid: Tensor | None = None,
        prior_mean: float = 7.0,
        prior_sd: float = 2.0,
        slope_log_mean: float = 0.0,
        slope_log_sd: float = 0.5,
        n_theta: int = 401,
        n_slope: int = 40,
        log_prior: Tensor | None = None,
        dtype: torch.dtype = torch.float64,
        device: str | torch.device | None = None,
    ) -> None:
        if not prior_sd > 0:
            raise ConfigError(f"prior_sd: expected a positive number, got {prior_sd!r}")
        self.model = model
        self.learn_slope = bool(learn_slope or slope_grid is not None)
        device = None if device is None else resolve_device(device)
        if theta_grid is None:
            theta_grid = torch.linspace(prior_mean - 5 * prior_sd, prior_mean + 5 * prior_sd, n_theta, dtype=dtype)
        theta_grid = torch.as_tensor(theta_grid, dtype=dtype, device=device)
        device = theta_grid.device  # the slope grid and the prior follow the span grid
        if theta_grid.dim() != 1 or theta_grid.numel() < 2 or bool((theta_grid.diff() <= 0).any()):
            raise ShapeError(f"theta_grid: expected [G_θ] increasing values (at least 2), got shape {tuple(theta_grid.shape)}")
        self.theta_grid = theta_grid
        if self.learn_slope:
            if slope_grid is None:
                log_s = torch.linspace(slope_log_mean - 3 * slope_log_sd, slope_log_mean + 3 * slope_log_sd, n_slope,
                                       dtype=dtype, device=device)
                slope_grid = log_s.exp()
            slope_grid = torch.as_tensor(slope_grid, dtype=dtype, device=device)
            if slope_grid.dim() != 1 or bool((slope_grid <= 0).any()) or bool((slope_grid.diff() <= 0).any()):
                raise ShapeError("slope_grid: expected [G_s] increasing positive slopes")
            self.slope_grid: Tensor | None = slope_grid
        else:
            self.slope_grid = None
        g_t, g_s = self.shape
        self.theta = theta_grid.repeat_interleave(g_s)  # [G]
        self.slope = None if self.slope_grid is None else self.slope_grid.repeat(g_t)  # [G]
        if log_prior is None:
            log_prior = normal_log_density(self.theta, prior_mean, prior_sd)
            if self.slope is not None:
                log_prior = log_prior + normal_log_density(self.slope.log(), slope_log_mean, slope_log_sd)
        log_prior = torch.as_tensor(log_prior, dtype=dtype, device=device)
        if log_prior.shape != self.theta.shape:
            raise ShapeError(f"log_prior: expected [G]={tuple(self.theta.shape)}, got {tuple(log_prior.shape)}")
        self.log_weights = log_prior - torch.logsumexp(log_prior, 0)  # [G]
        self.n_observations = 0

    @property
    def log_weights(self) -> Tensor:
        """log w [G], normalised (logsumexp 0)."""
        return self._log_weights

    @log_weights.setter
    def log_weights(self, value: Tensor) -> None:
        self._log_weights = value
        self._weights: Tensor | None = None  # exp(log w), computed on first use

    # -- state -------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(G_θ, G_s), G_s = 1 when the slope is fixed."""
        return self.theta_grid.numel(), 1 if self.slope_grid is None else self.slope_grid.numel()

    @property
    def n_points(self) -> int:
        return self.theta.numel()

    @property
    def weights(self) -> Tensor:
        """w [G], summing to 1."""
        if self._weights is None:
            self._weights = self._log_weights.exp()
        return self._weights

    def copy(self) -> GridPosterior:
        new = object.__new__(GridPosterior)
        new.__dict__.update(self.__dict__)
        new.log_weights = self._log_weights.clone()
        return new

    def update_log_likelihood(self, log_lik: Tensor) -> GridPosterior:
        """Multiply in a likelihood given as log p(y | θ_g, s_g) [G]; returns self."""
        if log_lik.shape != self.log_weights.shape:
            raise ShapeError(f"log_lik: expected [G]={tuple(self.log_weights.shape)}, got {tuple(log_lik.shape)}")
        log_w = self.log_weights + log_lik.to(self.log_weights)
        total = torch.logsumexp(log_w, 0)
        if not bool(torch.isfinite(total)):
            raise ConfigError("outcome: it has probability zero under every grid point; widen the grid or add a lapse rate")
        self.log_weights = log_w - total
        self.n_observations += 1
        return self

    def update(self, design: float | Tensor, outcome: int) -> GridPosterior:
        """Condition on one trial: `outcome` (1 recalled, 0 not) at `design` (digits, or [digits, rate])."""
        return self.update_log_likelihood(self.model.log_likelihood(self.theta, design, int(outcome), self.slope))

    # -- summaries ---------------------------------------------------------------------------
    def marginal(self) -> Tensor:
        """p(θ_i | data) [G_θ], the weights summed over slopes."""
        return self.weights.reshape(self.shape).sum(1)

    def slope_marginal(self) -> Tensor:
        """p(s_j | data) [G_s]; raises when the slope is fixed."""
        if self.slope_grid is None:
            raise ConfigError("slope_marginal: the slope is fixed; build the posterior with learn_slope=True")
        return self.weights.reshape(self.shape).sum(0)

    @property
    def mean(self) -> float:
        """E[θ | data]."""
        return float(self.marginal() @ self.theta_grid)

    @property
    def sd(self) -> float:
        """sd[θ | data] = sqrt(E[θ²] − E[θ]²)."""
        w = self.marginal()
        m = w @ self.theta_grid
        return float((w @ (self.theta_grid - m) ** 2).clamp_min(0).sqrt())

    @property
    def slope_mean(self) -> float:
        """E[s | data], or the model's fixed slope."""
        if self.slope_grid is None:
            return self.model.slope
        return float(self.slope_marginal() @ self.slope_grid)

    def quantile(self, q: float) -> float:
        """The q-quantile of θ from the grid CDF (mid-point rule), linear between grid points."""
        if not 0.0 <= q <= 1.0:
            raise ConfigError(f"q: expected a probability in [0, 1], got {q!r}")
        w = self.marginal().cpu().numpy()
        cdf = np.cumsum(w) - 0.5 * w  # the CDF at grid points, each point's mass split around it
        return float(np.interp(q, cdf, self.theta_grid.cpu().numpy()))

    def interval(self, level: float = 0.9) -> tuple[float, float]:
        """The central credible interval of θ: (quantile((1−level)/2), quantile((1+level)/2))."""
        if not 0.0 < level < 1.0:
            raise ConfigError(f"level: expected a probability in (0, 1), got {level!r}")
        return self.quantile((1 - level) / 2), self.quantile((1 + level) / 2)

    # -- predictions -------------------------------------------------------------------------
    def prob_recall(self, designs: Tensor) -> Tensor:
        """p(y=1 | θ_g, s_g, ξ_d) [G, D]."""
        designs = torch.as_tensor(designs, dtype=self.theta.dtype, device=self.theta.device)
        return self.model.prob_recall(self.theta, designs, self.slope)

    def predictive(self, designs: Tensor) -> Predictive:
        """The weighted `Predictive` [G, D, 2] that activebayes.acquisition reads."""
        designs = torch.as_tensor(designs, dtype=self.theta.dtype, device=self.theta.device)
        return Predictive(self.model.probs(self.theta, designs, self.slope), self.weights)

    def sample(self, n: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor | None]:
        """n draws (θ [n], s [n] or None) of grid points by their weights (with replacement).

        Drawn on `generator`'s device (a CPU generator also serves a CUDA grid: the same draws
        on either), then indexed where the grid lives.
        """
        here = generator.device if generator is not None else self.weights.device
        index = torch.multinomial(self.weights.to(here), n, replacement=True, generator=generator).to(self.theta.device)
        return self.theta[index], None if self.slope is None else self.slope[index]
