"""A simulated memory-span participant: the oracle of a simulated design session (design/, as it
answers from `MemorySpanModel`; it also speaks the oracle protocol, `ask`).

Given a list of ξ digits the participant recalls it (answer 1) with probability

    p(y=1 | span, ξ) = γ + (1 − γ − λ) · F(slope · (span − ξ))      (`MemorySpanModel`)

drawn as a Bernoulli from its own seeded generator, or, with `deterministic=True`, answers
1 exactly when p > 1/2 (so with γ = λ = 0: recall iff ξ < span, Pyro's tutorial participant).

With `participant=ID` the draw of trial n comes from a generator seeded by (seed, ID, n) alone
(`trial_seed`), not from one stream that starts at the first answer: a session resumed after k
recorded trials (`first_trial=k`) answers exactly as one session run straight through would.

>>> who = SimulatedParticipant(6.0, deterministic=True)
>>> [who.answer(n) for n in (4, 5, 6, 7)]
[1, 1, 0, 0]
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import torch

from activebayes.design.model import Link, MemorySpanModel
from activebayes.errors import ConfigError, DataError
from activebayes.oracles.base import Answer


def parse_design_key(key: str) -> list[float]:
    """"digits=7" -> [7.0]; "digits=7,rate=1.5" -> [7.0, 1.5] (the store's design item keys)."""
    try:
        parts = dict(part.split("=", 1) for part in str(key).split(","))
        values = [float(parts["digits"])]
        if "rate" in parts:
            values.append(float(parts["rate"]))
    except (ValueError, KeyError):
        raise DataError(f"key: expected a design key like 'digits=7' or 'digits=7,rate=1.5', got {key!r}") from None
    return values


def trial_seed(seed: int | None, participant: str, trial: int) -> int:
    """The seed of trial `trial` (0-based) of `participant` in the stream `seed` (None → 0): the
    first 63 bits of SHA-256 of the three, the same on every machine and Python run."""
    text = f"{0 if seed is None else int(seed)}\x00{participant}\x00{int(trial)}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


class SimulatedParticipant:
    """Answers memory-span trials from a known span.

    Args:
        span: the true θ.
        slope, lapse, guess, link: the participant's psychometric function (see MemorySpanModel).
        seed: seeds the participant's own generator (None → 0); the same seed, the same answers.
        deterministic: answer 1 iff p(y=1) > 1/2 instead of drawing.
        participant: draw each trial's answer from `trial_seed(seed, participant, n)` (n counts
            the answers from `first_trial`), so a resumed session continues the same stream.
        first_trial: the number of the first trial this object answers (the trials recorded
            before it); only with `participant`.
    """

    stop_requested = False

    def __init__(
        self,
        span: float,
        slope: float = 1.0,
        lapse: float = 0.0,
        seed: int | None = None,
        *,
        guess: float = 0.0,
        link: Link | str = Link.LOGIT,
        deterministic: bool = False,
        participant: str | None = None,
        first_trial: int = 0,
    ) -> None:
        try:
            self.span = float(span)
        except (TypeError, ValueError):
            raise ConfigError(f"span: expected a number, got {span!r}") from None
        self.model = MemorySpanModel(slope=slope, lapse=lapse, guess=guess, link=link)
        self.seed = seed
        self.deterministic = bool(deterministic)
        self._generator = torch.Generator().manual_seed(0 if seed is None else int(seed))
        if first_trial < 0 or (first_trial and participant is None):
            raise ConfigError(f"first_trial: expected a trial count >= 0 with a participant id, got {first_trial!r}")
        self.participant = participant
        self.next_trial = int(first_trial)

    def __repr__(self) -> str:
        return f"SimulatedParticipant(span={self.span}, {self.model!r}, deterministic={self.deterministic})"

    def prob_recall(self, design: float | Sequence[float] | torch.Tensor) -> float:
        """p(y=1) at one design (digits, or (digits, rate))."""
        design_t = torch.as_tensor(design, dtype=torch.float64).reshape(1, -1)
        designs = design_t if design_t.shape[1] == 2 else design_t[:, 0]
        return float(self.model.prob_recall(torch.tensor([self.span], dtype=torch.float64), designs)[0, 0])

    def answer(self, design: float | Sequence[float] | torch.Tensor) -> int:
        """1 if the list is recalled, 0 if not."""
        p = self.prob_recall(design)
        if self.deterministic:
            return int(p > 0.5)
        generator = self._generator
        if self.participant is not None:
            generator = torch.Generator().manual_seed(trial_seed(self.seed, self.participant, self.next_trial))
            self.next_trial += 1
        return int(float(torch.rand((), generator=generator, dtype=torch.float64)) < p)

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        """The oracle protocol: one `Answer(key, 0 | 1)` per key, in order. The design of each
        key is its candidate (digits, or (digits, rate)) or, without candidates, parsed from the
        key ("digits=7", as `activebayes.design.record` names the store's items)."""
        if candidates is None:
            candidates = [parse_design_key(k) for k in keys]
        if len(keys) != len(candidates):
            raise ConfigError(f"candidates: expected one per key ({len(keys)}), got {len(candidates)}")
        return [Answer(str(k), self.answer(c)) for k, c in zip(keys, candidates)]
