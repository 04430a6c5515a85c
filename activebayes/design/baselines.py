"""Design strategies: the EIG maximiser and the baselines it is compared against.

Every strategy is a small object with `choose(history, eig) -> index` over a fixed list of D
designs sorted by difficulty, where `history` is the list of (design index, outcome) so far and
`eig` [D] the current EIG of every design (the EIG strategy reads it; the baselines ignore it).

- "eig": argmax_d EIG(ξ_d) (the first on ties).
- "random": a uniform draw from the designs, from a seeded generator.
- "fixed": the designs in ascending order, starting again from the easiest after the hardest.
- "staircase": 1-up/1-down: one step harder after a recall, one step easier after a miss,
  starting at `start` (default: the design nearest the prior mean); it converges on the list
  length recalled half the time, which is θ.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

import torch
from torch import Tensor

from activebayes.errors import ConfigError


class Strategy(StrEnum):
    EIG = "eig"
    RANDOM = "random"
    FIXED = "fixed"
    STAIRCASE = "staircase"


class DesignStrategy(Protocol):
    def choose(self, history: list[tuple[int, int]], eig: Tensor) -> int: ...


class MaxEIG:
    """argmax of the EIG [D]."""

    def choose(self, history: list[tuple[int, int]], eig: Tensor) -> int:
        return int(torch.argmax(eig))


class RandomDesign:
    """Uniform over the D designs, seeded."""

    def __init__(self, n_designs: int, *, generator: torch.Generator) -> None:
        self.n_designs = n_designs
        self.generator = generator

    def choose(self, history: list[tuple[int, int]], eig: Tensor) -> int:
        return int(torch.randint(self.n_designs, (), generator=self.generator))


class FixedAscending:
    """Designs 0, 1, …, D−1, 0, 1, … (easiest to hardest, then again)."""

    def __init__(self, n_designs: int) -> None:
        self.n_designs = n_designs

    def choose(self, history: list[tuple[int, int]], eig: Tensor) -> int:
        return len(history) % self.n_designs


class Staircase:
    """1-up/1-down over design indices, clipped to [0, D−1]."""

    def __init__(self, n_designs: int, *, start: int) -> None:
        if not 0 <= start < n_designs:
            raise ConfigError(f"start: expected a design index in [0, {n_designs - 1}], got {start}")
        self.n_designs = n_designs
        self.start = start

    def choose(self, history: list[tuple[int, int]], eig: Tensor) -> int:
        if not history:
            return self.start
        last, outcome = history[-1]
        step = 1 if outcome == 1 else -1
        return min(max(last + step, 0), self.n_designs - 1)


def make_strategy(
    strategy: Strategy | str, n_designs: int, *, generator: torch.Generator, start: int = 0
) -> DesignStrategy:
    """The strategy object for a name: "eig", "random", "fixed" or "staircase"."""
    try:
        name = Strategy(strategy)
    except ValueError:
        raise ConfigError(f"strategy: expected one of {', '.join(s.value for s in Strategy)}, got {strategy!r}") from None
    if name is Strategy.EIG:
        return MaxEIG()
    if name is Strategy.RANDOM:
        return RandomDesign(n_designs, generator=generator)
    if name is Strategy.FIXED:
        return FixedAscending(n_designs)
    return Staircase(n_designs, start=start)
