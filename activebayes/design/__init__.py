"""Bayesian experimental design for adaptive memory-span experiments.

    MemorySpanModel   p(y=1 | θ, ξ) = γ + (1 − γ − λ) · F(slope · (θ − ξ)), F = sigmoid or Φ
    GridPosterior     exact Bayes on a grid over θ, or (θ, slope), in log space
    EIGTable          the fixed tables P, H [G, D]: each trial's EIG is two matrix-vector products
    theta_eig         I[y; θ] on a joint (θ, slope) grid, the slope a nuisance
    exact_eig         the same EIG through activebayes.acquisition.eig (the general path)
    nmc_eig           nested Monte Carlo EIG where no grid fits (biased upward, O(1/M))
    EIGAcquisition, best_design, optimize_design   BoTorch over discrete or continuous designs
    run_design_session  EIG vs random / fixed / staircase baselines, with a trace of trials
    summarise_posterior the posterior mean, sd and interval of θ, as sessions report it
    SimulatedParticipant  a participant answering from a known span (the simulated oracle)
"""

from activebayes.design.baselines import Strategy, make_strategy
from activebayes.design.eig import EIGTable, exact_eig, grid_eig, nmc_eig, normal_prior_sampler, theta_eig
from activebayes.design.grid import GridPosterior
from activebayes.design.model import Link, MemorySpanModel, binary_entropy, recall_probability
from activebayes.design.participant import SimulatedParticipant
from activebayes.design.session import SessionTrace, Trial, run_design_session, summarise_posterior

_BOTORCH = ("EIGAcquisition", "best_design", "optimize_design")


def __getattr__(name: str):  # BoTorch is imported only when its optimisers are used
    if name in _BOTORCH:
        from activebayes.design import optimize

        return getattr(optimize, name)
    raise AttributeError(name)


__all__ = [
    "EIGAcquisition",
    "EIGTable",
    "GridPosterior",
    "Link",
    "MemorySpanModel",
    "SessionTrace",
    "SimulatedParticipant",
    "Strategy",
    "Trial",
    "best_design",
    "binary_entropy",
    "exact_eig",
    "grid_eig",
    "make_strategy",
    "nmc_eig",
    "normal_prior_sampler",
    "optimize_design",
    "recall_probability",
    "run_design_session",
    "summarise_posterior",
    "theta_eig",
]
