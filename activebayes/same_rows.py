"""Candidates the model cannot tell apart: pool rows with equal features (one support ticket
pasted twice, a review posted under two keys, the same text in other capitals, which TF-IDF
reads alike). A batch gains nothing from a second copy of an input it already asks about
(the copies share every posterior sample's prediction, so I[y₁, y₂; θ] ≤ I[y₁; θ] + H[y₂ | θ]
holds only aleatoric noise beyond the first), so a round chooses among the first row of each
group (`first_of_each`) and never spends two labels of one batch on one input.

Rows are grouped by a fingerprint of their bytes, computed chunk by chunk with no loop over rows:
each float32 row x [D] read as W = ⌈D/2⌉ unsigned 64-bit words v (two values a word), and

    f_j(x) = Σ_w c_jw · m(v_w)   (mod 2⁶⁴),   j = 1, 2,

m splitmix64's finaliser (xor-shifts and odd products: a bijection that spreads every bit of v
over the word; without it a product, which carries bits up only, would weigh the high value of
a word by its last few bits of c)
with c [2, W] odd 64-bit constants drawn once from a fixed seed. Equal rows have equal
fingerprints; two different rows share both with probability about 2⁻⁶⁴ per pair.

    prints = row_fingerprints(x)         # [N, 2] uint64
    keep = first_of_each(prints)         # [N'] positions, ascending: the first row of each group
    keep, sizes = first_and_sizes(prints)   # ... and the rows of each group [N'] (per-row estimates)
"""

from __future__ import annotations

import numpy as np

from activebayes.errors import ShapeError

_SEED = 20240917  # fixes the fingerprint's constants: the same rows give the same groups everywhere
_CHUNK_BYTES = 1 << 23  # float32 rows fingerprinted at a time


def _constants(d: int) -> np.ndarray:
    """[W, 2] odd uint64 multipliers of `row_fingerprints` for rows of W 64-bit words."""
    words = np.random.default_rng(_SEED).integers(0, 2**63, size=(d, 2), dtype=np.uint64)
    return (words << np.uint64(1)) | np.uint64(1)


def row_fingerprints(x: np.ndarray) -> np.ndarray:
    """[N, 2] uint64 fingerprints of the N rows of `x` [N, ...] (read as float32): equal rows,
    equal fingerprints (module docstring's maths; a row of odd length padded with a zero).
    Computed _CHUNK_BYTES of rows at a time: a row's fingerprint is its own, so the chunks
    change nothing but the memory, a few chunks' worth instead of several copies of `x`."""
    x = np.asarray(x)
    if x.ndim < 1:
        raise ShapeError(f"row_fingerprints: expected rows [N, ...], got a scalar of shape {x.shape}")
    d = int(np.prod(x.shape[1:]))
    flat = x.reshape(len(x), d)
    constants = _constants((d + d % 2) // 2)
    out = np.empty((len(x), 2), dtype=np.uint64)
    step = max(1, _CHUNK_BYTES // (4 * max(d, 1)))  # rows a chunk
    for start in range(0, len(x), step):
        chunk = flat[start : start + step]
        rows = np.zeros((len(chunk), d + d % 2), dtype=np.float32)  # one copy, padded to whole words
        rows[:, :d] = chunk
        rows += np.float32(0.0)  # -0.0 reads as 0.0
        words = _mixed(rows.view(np.uint64))  # [n, W]
        with np.errstate(over="ignore"):
            out[start : start + step] = words @ constants  # [n, 2], wrapping mod 2⁶⁴
    return out


def _mixed(words: np.ndarray) -> np.ndarray:
    """`words` (uint64, changed in place) through splitmix64's finaliser m (a bijection)."""
    with np.errstate(over="ignore"):
        for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
            words ^= words >> np.uint64(shift)
            if factor is not None:
                words *= np.uint64(factor)
    return words


def first_of_each(fingerprints: np.ndarray) -> np.ndarray:
    """[N'] positions (ascending) of the first row of each group of equal fingerprints [N, 2]."""
    return first_and_sizes(fingerprints)[0]


def first_and_sizes(fingerprints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions [N'] ascending of the first row of each group of equal fingerprints [N, 2],
    the rows of each of those groups [N'], summing to N)."""
    prints = np.asarray(fingerprints)
    if prints.ndim != 2:
        raise ShapeError(f"first_of_each: expected fingerprints [N, 2], got shape {prints.shape}")
    order = np.lexsort(prints.T[::-1])  # by column 0, then 1; stable: a group's rows in their order
    ordered = prints[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    begins = np.flatnonzero(starts)
    sizes = np.diff(np.append(begins, len(order)))  # [N'] in fingerprint order
    firsts = order[begins]
    by_position = np.argsort(firsts)
    return firsts[by_position].astype(np.int64), sizes[by_position].astype(np.int64)
