"""The digit lists a memory-span session shows a person.

A list of ξ digits is drawn as digit-span tasks build theirs: no digit comes twice until all ten
have been shown (the list is made of shuffled blocks of 0-9, the last one cut), and no digit
follows itself where two blocks meet. So a list of up to ten digits has ten different ones, and
a longer one never shows a run such as "7 7" that is easier to recall than the length says.

Trial n of a participant is drawn from its own generator seeded by (seed, participant, n)
(`activebayes.design.participant.trial_seed`, in a stream apart from a simulated participant's
answers): each participant gets lists of their own, the same seed gives the same lists on every
machine, and a session resumed after k trials shows the lists one session run straight through
would have shown.

>>> digit_list(0, "p1", 0, 12) == digit_list(0, "p1", 0, 12)
True
>>> sorted(digit_list(0, "p1", 3, 10))
[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
"""

from __future__ import annotations

import random

from activebayes.design.participant import trial_seed


def digit_list(seed: int, participant: str, trial: int, length: int) -> list[int]:
    """[length] digits 0-9 for trial `trial` (0-based) of `participant` (module docstring)."""
    if length < 0:
        raise ValueError(f"length: expected a list length of 0 or more, got {length}")
    rng = random.Random(trial_seed(seed, f"{participant}\x00digits", trial))
    digits: list[int] = []
    while len(digits) < length:
        block = list(range(10))
        rng.shuffle(block)
        if digits and block[0] == digits[-1]:  # the same digit twice where two blocks meet
            block[0], block[-1] = block[-1], block[0]
        digits.extend(block)
    return digits[:length]
