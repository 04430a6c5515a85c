"""`auto`: choose the acquisition online, with a random share that checks the choice (active
learning by learning: Hsu and Lin, AAAI 2015, adapted to batches).

Each round after the first, a bandit over A strategies (arms, e.g. epig, bald, random) picks the
arm that chooses the batch's first k − r items; the last r = max(1, round(share·k)) are drawn
uniformly from the remaining candidates. Those random items are the check: the round's model
predicted them before anyone labelled them, so once labelled, the share of them it got right,

    â_t = (1/r) Σ_{i ∈ R_t} 1[ŷ_t(x_i) = y_i]          (classification)
    â_t = (1/r) Σ_{i ∈ R_t} exp(−(y_i − μ_t(x_i))² / (2 s²))   (regression; s² the labels' variance)

is an unbiased estimate of model t's accuracy on the pool (each candidate was equally likely to
be drawn; Hsu and Lin's importance weights are then all equal). Model t was fitted on the labels
up to round t − 1, whose batch the arm of round t − 1 chose, so â_t is that arm's reward. The
bandit is EXP3 (Auer et al. 2002) with exploration γ:

    p_a = (1 − γ) exp(w_a) / Σ_b exp(w_b) + γ / A
    w_a ← w_a + γ â / (p_a A)       for the arm a that was played (others unchanged)

A trailing arm (one whose batches leave the model less accurate than random's do) loses weight
and is played less. Rewards are noisy with r = 2 items a round; the random share also bounds what
a poor arm can cost. Everything is a pure function of the rounds recorded so far (`replay`), so a
resumed or repeated round makes the same choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from activebayes.errors import ConfigError

DEFAULT_ARMS = {"classification": ("epig", "bald", "random"), "regression": ("epig", "variance", "random")}
SHARE = 0.2
GAMMA = 0.3


def random_count(k: int, share: float = SHARE) -> int:
    """r, the batch's random share: max(1, round(share·k)), and 0 when k is 1 (nothing to split)."""
    return 0 if k <= 1 else min(k - 1, max(1, int(round(share * k))))


def probabilities(weights: Sequence[float], gamma: float = GAMMA) -> np.ndarray:
    """[A] EXP3's arm probabilities from the log-weights (module docstring)."""
    w = np.asarray(weights, dtype=np.float64)
    soft = np.exp(w - w.max())
    return (1.0 - gamma) * soft / soft.sum() + gamma / len(w)


def update(weights: Sequence[float], arm: int, reward: float, gamma: float = GAMMA) -> list[float]:
    """The log-weights after arm `arm` earned `reward` in [0, 1] (EXP3's importance-weighted step)."""
    if not 0.0 <= reward <= 1.0 or math.isnan(reward):
        raise ConfigError(f"auto: a reward must lie in [0, 1], got {reward!r}")
    w = list(map(float, weights))
    p = probabilities(w, gamma)[arm]
    w[arm] += gamma * reward / (p * len(w))
    return w


def round_reward(queries: Sequence[Any], n_random: int, task: str, label_variance: float = 1.0) -> float | None:
    """â of a round (module docstring) from its queries (`QueryInfo`: rank, value, prediction):
    the last `n_random` ranks are the random share. None when none of them is labelled yet or
    the round made no predictions (a cold start)."""
    k = len(queries)
    scored = []
    for q in queries:
        if q.rank < k - n_random or q.value is None or not q.prediction:
            continue
        if task == "classification":
            scored.append(float(str(q.prediction.get("label")) == str(q.value)))
        else:
            try:
                err = float(q.value) - float(q.prediction["mean"])
            except (KeyError, TypeError, ValueError):
                continue
            scored.append(math.exp(-(err**2) / (2.0 * max(label_variance, 1e-12))))
    return float(np.mean(scored)) if scored else None


@dataclass(frozen=True)
class AutoChoice:
    """The decision of one round: the arm, the random count and the bandit state before it."""

    arms: tuple[str, ...]
    weights: tuple[float, ...]
    probabilities: tuple[float, ...]
    arm: str
    n_random: int
    rewards: tuple[tuple[str, float], ...]

    def settings(self) -> dict[str, Any]:
        """What the round records under acquisition_settings["auto"]."""
        return {"arms": list(self.arms), "weights": list(self.weights), "probabilities": list(self.probabilities),
                "arm": self.arm, "random": self.n_random, "rewards": [list(r) for r in self.rewards]}  # fmt: skip


def replay(past: Sequence[tuple[dict[str, Any], float | None]], arms: Sequence[str], gamma: float = GAMMA) -> tuple[list[float], list[tuple[str, float]]]:
    """(log-weights, [(arm, reward)]) after the recorded rounds: `past` holds, in round order,
    each auto round's recorded settings and its reward â (None while unknown); round t's reward
    is credited to round t − 1's arm."""
    weights = [0.0] * len(arms)
    credited: list[tuple[str, float]] = []
    previous_arm: str | None = None
    for settings, reward in past:
        if previous_arm is not None and reward is not None and previous_arm in arms:
            weights = update(weights, list(arms).index(previous_arm), reward, gamma)
            credited.append((previous_arm, reward))
        previous_arm = settings.get("arm")
    return weights, credited


def choose(
    past: Sequence[tuple[dict[str, Any], float | None]],
    arms: Sequence[str],
    k: int,
    seed: int,
    *,
    share: float = SHARE,
    gamma: float = GAMMA,
) -> AutoChoice:
    """This round's arm, drawn with EXP3's probabilities from a generator seeded by the round's
    seed, and its random count."""
    if not arms:
        raise ConfigError("auto: no arms to choose from")
    weights, credited = replay(past, arms, gamma)
    p = probabilities(weights, gamma)
    arm = int(np.random.default_rng([int(seed) & 0xFFFFFFFF, 0xA0B0]).choice(len(arms), p=p))
    return AutoChoice(tuple(arms), tuple(weights), tuple(float(v) for v in p), arms[arm], random_count(k, share), tuple(credited))
