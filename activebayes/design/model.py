"""The memory-span likelihood: does a participant recall a list of ξ digits?

    p(y=1 | θ, ξ) = γ + (1 − γ − λ) · F(s · (θ − ξ_eff))

θ the span (the list length recalled half the time when γ = λ = 0), s the slope, λ the lapse
rate (a sure recall missed), γ the guess rate (a hopeless list recalled by luck), F the logistic
sigmoid (link "logit") or the standard normal CDF Φ (link "probit").

Designs ξ are [D] (digits) or [D, 2] (digits, presentation rate in digits per second). The 2-D
design is a documented model extension: presenting faster costs span, linearly,

    ξ_eff = digits + rate_cost · (rate − reference_rate),

so a list of 6 digits at 2/s with rate_cost 1 is as hard as 7 digits at the reference 1/s. With
rate_cost = 0 (the default) the rate column is ignored.

Outcome classes follow the index: class 0 is y = 0 (not recalled), class 1 is y = 1 (recalled).

>>> import torch
>>> model = MemorySpanModel(slope=1.0)
>>> model.prob_recall(torch.tensor([7.0]), torch.tensor([7.0]))
tensor([[0.5000]])
"""

from __future__ import annotations

import math
from enum import StrEnum

import torch
from torch import Tensor

from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import Predictive


class Link(StrEnum):
    """The psychometric link F: logistic sigmoid or the normal CDF Φ."""

    LOGIT = "logit"
    PROBIT = "probit"


def _link(z: Tensor, link: Link) -> Tensor:
    if link is Link.LOGIT:
        return torch.sigmoid(z)
    return 0.5 * torch.erfc(-z / math.sqrt(2.0))  # Φ(z), accurate in both tails


def recall_probability(
    theta: Tensor,
    difficulty: Tensor,
    *,
    slope: Tensor | float = 1.0,
    lapse: float = 0.0,
    guess: float = 0.0,
    link: Link | str = Link.LOGIT,
) -> Tensor:
    """p(y=1) = γ + (1 − γ − λ) · F(slope · (θ − difficulty)), broadcasting all tensor arguments.

    Args:
        theta: span(s), any shape broadcastable with `difficulty` and `slope`.
        difficulty: effective list length(s) ξ_eff.
        slope: s > 0, a float or a tensor broadcastable with theta.
        lapse: λ in [0, 1).
        guess: γ in [0, 1), with γ + λ < 1.
        link: "logit" or "probit".
    """
    return _outcome_probability(1, theta, difficulty, slope, lapse, guess, Link(link))


def _outcome_probability(
    outcome: int, theta: Tensor, difficulty: Tensor, slope: Tensor | float, lapse: float, guess: float, link: Link
) -> Tensor:
    """p(y=outcome) with the arguments of `recall_probability`: p(y=1) as there, and
    p(y=0) = λ + (1 − γ − λ) · F(−slope · (θ − difficulty)), i.e. 1 − p(y=1) without cancellation."""
    z = torch.as_tensor(slope, dtype=theta.dtype, device=theta.device) * (theta - difficulty)
    if outcome == 1:
        return guess + (1.0 - guess - lapse) * _link(z, link)
    return lapse + (1.0 - guess - lapse) * _link(-z, link)


def binary_entropy(p: Tensor) -> Tensor:
    """H[Bernoulli(p)] = −p log p − (1−p) log(1−p) in nats, elementwise, 0 at p ∈ {0, 1}."""
    return -(torch.special.xlogy(p, p) + torch.special.xlogy(1.0 - p, 1.0 - p))


class MemorySpanModel:
    """p(y | θ, ξ) for the memory-span task; see the module docstring for the formula.

    Args:
        slope: s > 0, used when a grid or sample does not carry its own slope.
        lapse: λ, the chance of missing a list well within span.
        guess: γ, the chance of recalling a list well beyond span.
        link: "logit" (sigmoid) or "probit" (Φ).
        rate_cost: span lost per extra digit/second above `reference_rate` (2-D designs only).
        reference_rate: the presentation rate (digits/s) at which ξ_eff = digits.
    """

    def __init__(
        self,
        *,
        slope: float = 1.0,
        lapse: float = 0.0,
        guess: float = 0.0,
        link: Link | str = Link.LOGIT,
        rate_cost: float = 0.0,
        reference_rate: float = 1.0,
    ) -> None:
        if not slope > 0:
            raise ConfigError(f"slope: expected a positive number, got {slope!r}")
        for name, value in (("lapse", lapse), ("guess", guess)):
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}: expected a probability in [0, 1), got {value!r}")
        if guess + lapse >= 1.0:
            raise ConfigError(f"guess + lapse: expected a sum below 1, got {guess + lapse!r}")
        try:
            self.link = Link(link)
        except ValueError:
            raise ConfigError(f"link: expected 'logit' or 'probit', got {link!r}") from None
        self.slope = float(slope)
        self.lapse = float(lapse)
        self.guess = float(guess)
        self.rate_cost = float(rate_cost)
        self.reference_rate = float(reference_rate)

    def __repr__(self) -> str:
        return (
            f"MemorySpanModel(slope={self.slope}, lapse={self.lapse}, guess={self.guess}, "
            f"link={self.link.value!r}, rate_cost={self.rate_cost})"
        )

    def difficulty(self, designs: Tensor) -> Tensor:
        """ξ_eff [..., D] from designs [..., D] (digits) or [..., D, 2] (digits, rate)."""
        designs = torch.as_tensor(designs)
        if not designs.is_floating_point():
            designs = designs.to(torch.get_default_dtype())
        if designs.dim() >= 2 and designs.shape[-1] == 2:
            return designs[..., 0] + self.rate_cost * (designs[..., 1] - self.reference_rate)
        if designs.dim() >= 2 and designs.shape[-1] == 1:
            return designs[..., 0]
        if designs.dim() == 1:
            return designs
        raise ShapeError(f"designs: expected [D] digits or [D, 2] (digits, rate), got shape {tuple(designs.shape)}")

    def prob_recall(self, theta: Tensor, designs: Tensor, slope: Tensor | None = None) -> Tensor:
        """p(y=1 | θ_g, s_g, ξ_d) as a table [G, D].

        Args:
            theta: [G] spans (grid points or samples).
            designs: [D] or [D, 2].
            slope: [G] per-point slopes, or None for the model's fixed slope.
        """
        theta = torch.as_tensor(theta)
        if theta.dim() != 1:
            raise ShapeError(f"theta: expected [G], got shape {tuple(theta.shape)}")
        return self._table(1, theta, designs, slope)

    def prob_miss(self, theta: Tensor, designs: Tensor, slope: Tensor | None = None) -> Tensor:
        """p(y=0 | θ_g, s_g, ξ_d) [G, D], computed directly (accurate where p(y=1) rounds to 1)."""
        return self._table(0, theta, designs, slope)

    def _table(self, outcome: int, theta: Tensor, designs: Tensor, slope: Tensor | None) -> Tensor:
        theta = torch.as_tensor(theta)
        if theta.dim() != 1:
            raise ShapeError(f"theta: expected [G], got shape {tuple(theta.shape)}")
        xi = self.difficulty(designs).to(theta)  # [D]
        s: Tensor | float = self.slope
        if slope is not None:
            slope = torch.as_tensor(slope, dtype=theta.dtype, device=theta.device)
            if slope.shape != theta.shape:
                raise ShapeError(f"slope: expected [G]={tuple(theta.shape)} like theta, got {tuple(slope.shape)}")
            s = slope[:, None]
        return _outcome_probability(outcome, theta[:, None], xi[None, :], s, self.lapse, self.guess, self.link)  # [G, D]

    def probs(self, theta: Tensor, designs: Tensor, slope: Tensor | None = None) -> Tensor:
        """p(y | θ_g, ξ_d) as [G, D, 2], class 0 = not recalled, class 1 = recalled."""
        return torch.stack([self.prob_miss(theta, designs, slope), self.prob_recall(theta, designs, slope)], dim=-1)

    def predictive(
        self, theta: Tensor, designs: Tensor, weights: Tensor | None = None, slope: Tensor | None = None
    ) -> Predictive:
        """The `Predictive` [G, D, 2] of (weighted) points θ_g over designs ξ_d."""
        return Predictive(self.probs(theta, designs, slope), weights)

    def log_likelihood(self, theta: Tensor, design: Tensor | float, outcome: int, slope: Tensor | None = None) -> Tensor:
        """log p(y=outcome | θ_g, ξ) [G] for one design ξ (a scalar, or [2] for digits and rate)."""
        if outcome not in (0, 1):
            raise ConfigError(f"outcome: expected 0 (not recalled) or 1 (recalled), got {outcome!r}")
        design = torch.as_tensor(design, dtype=torch.as_tensor(theta).dtype).reshape(1, -1)
        designs = design if design.shape[-1] == 2 else design[:, 0]
        fn = self.prob_recall if outcome == 1 else self.prob_miss
        p = fn(theta, designs, slope)[:, 0]
        return torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))
