"""Estimates per pool row when a round draws among distinct inputs.

A round chooses among one row of each group of rows with equal features (`activebayes.same_rows`),
so its draws are over N distinct inputs, input i standing for its group of m_i ≥ 1 pool rows,
R = Σ_i m_i rows in all. LURE over the draws (`activebayes.estimates`) is unbiased for the mean
loss over the inputs, (1/N) Σ_i L_i; the figure a user asks for (the accuracy over their pool) is
the mean over rows, in which an input counts as often as it has rows:

    R_rows = Σ_i π_i L_i,   π_i = m_i / R   (the target distribution over the N inputs)
           = (1/N) Σ_i ρ_i L_i,   ρ_i = N π_i = N m_i / R   (ρ averages 1 over the inputs)

that is, the plain mean over the N inputs of the values L'_i = ρ_i L_i. LURE is unbiased for the
mean of any fixed values over the N items it draws from (E[R̂_LURE] = (1/N) Σ_i L_i holds whatever
the L_i), so with the same weights v_m of the same sequential draws (q over the inputs left)

    R̂_rows = (1/M) Σ_{m=1..M} v_m ρ_{i_m} L_{i_m},   E[R̂_rows] = Σ_i π_i L_i = R_rows.

With one draw (M = 1, v_1 = 1/(N q)) this is the importance-weighted estimate π_i L_i / q(i) of a
target π from a proposal q, E_q[π_i L_i / q(i)] = Σ_i π_i L_i; LURE's v_m carry it to M
draws without replacement. When every group has one row, R = N and ρ ≡ 1: R̂_rows is R̂_LURE
exactly. The interval is formed from the summands z_m = v_m ρ_{i_m} L_{i_m} as LURE's is (their
variance; Kish's size of the weights v_m ρ_{i_m} where that variance says nothing).

The drawn row's label stands for its copies': the estimate is unbiased for the row mean when the
copies share their label, and in expectation over the labels when each copy's label is drawn from
one p(y | x) (rows with equal features are, to the model, one input).

After D deterministic inputs with sizes m_f and known losses (auto's top-k, `stratified_estimate`),
the M draws are over the other N − D inputs and R' = R − Σ_f m_f rows:

    R_rows = (Σ_f m_f L_f + R' · R'_rows) / R,   R'_rows estimated by R̂_rows over the N − D inputs.

Shapes: M drawn inputs; `sizes` [M] the rows of each drawn input's group.

>>> row_shares([2, 1], rows=4, inputs=3).tolist()     # ρ = 3·2/4, 3·1/4
[1.5, 0.75]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from activebayes.errors import ShapeError


def row_shares(sizes: Sequence[int] | np.ndarray, rows: int, inputs: int) -> np.ndarray:
    """ρ [M] = N m / R of M drawn inputs whose groups hold `sizes` = m [M] rows each, when the draw
    was over N = `inputs` distinct inputs holding R = `rows` pool rows in all (module docstring)."""
    m = np.asarray(sizes, dtype=np.float64)
    if m.ndim != 1:
        raise ShapeError(f"sizes: expected a vector [M] of group sizes, got shape {m.shape}")
    if np.any(m < 1) or np.any(m != np.round(m)):
        raise ShapeError(f"sizes: expected whole numbers of rows >= 1, got {m[(m < 1) | (m != np.round(m))][:3].tolist()}")
    n, r = int(inputs), int(rows)
    if n < 1 or r < n or m.sum() > r:
        raise ShapeError(f"rows, inputs: expected R >= N >= 1 rows and inputs holding the {int(m.sum())} drawn rows, got R = {rows!r}, N = {inputs!r}")
    return n * m / r
