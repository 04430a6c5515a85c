"""Candidates the model cannot tell apart: pool rows with equal features (one support ticket
pasted twice, a review posted under two keys, the same text in other capitals, which TF-IDF
reads alike). A batch gains nothing from a second copy of an input it already asks about
(the copies share every posterior sample's prediction, so I[y₁, y₂; θ] ≤ I[y₁; θ] + H[y₂ | θ]
holds only aleatoric noise beyond the first), so a round chooses among the first row of each
group (`first_of_each`) and never spends two labels of one batch on one input.

Rows are grouped by a fingerprint of their bytes, computed chunk by chunk with no loop over rows:
each float32 row x [D] read as D unsigned 32-bit words u, and

    f_j(x) = Σ_d c_jd · u_d   (mod 2⁶⁴),   j = 1, 2,

with c [2, D] odd 64-bit constants drawn once from a fixed seed. Equal rows have equal
fingerprints; two different rows share both with probability about 2⁻⁶⁴ per pair.

    prints = row_fingerprints(x)         # [N, 2] uint64
    keep = first_of_each(prints)         # [N'] positions, ascending: the first row of each group
"""

from __future__ import annotations

import numpy as np

from activebayes.errors import ShapeError

_SEED = 20240917  # fixes the fingerprint's constants: the same rows give the same groups everywhere


def _constants(d: int) -> np.ndarray:
    """[D, 2] odd uint64 multipliers of `row_fingerprints` for rows of D float32 values."""
    words = np.random.default_rng(_SEED).integers(0, 2**63, size=(d, 2), dtype=np.uint64)
    return (words << np.uint64(1)) | np.uint64(1)


def row_fingerprints(x: np.ndarray) -> np.ndarray:
    """[N, 2] uint64 fingerprints of the N rows of `x` [N, ...] (read as float32): equal rows,
    equal fingerprints (module docstring's maths)."""
    x = np.asarray(x)
    if x.ndim < 1:
        raise ShapeError(f"row_fingerprints: expected rows [N, ...], got a scalar of shape {x.shape}")
    rows = np.ascontiguousarray(x.reshape(len(x), int(np.prod(x.shape[1:]))), dtype=np.float32) + np.float32(0.0)  # + 0: -0.0 reads as 0.0
    words = rows.view(np.uint32).astype(np.uint64)  # [N, D]
    with np.errstate(over="ignore"):
        return words @ _constants(words.shape[1])  # [N, 2], wrapping mod 2⁶⁴


def first_of_each(fingerprints: np.ndarray) -> np.ndarray:
    """[N'] positions (ascending) of the first row of each group of equal fingerprints [N, 2]."""
    prints = np.asarray(fingerprints)
    if prints.ndim != 2:
        raise ShapeError(f"first_of_each: expected fingerprints [N, 2], got shape {prints.shape}")
    if len(prints) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(prints, axis=0, return_index=True)
    return np.sort(first).astype(np.int64)
