"""`debias`: train on the LURE-weighted loss of the actively chosen labels (Farquhar, Gal &
Rainforth, ICLR 2021, section 5: R̃_LURE as the training objective), per pool row.

The target is the mean loss over the pool's R rows (labelled and unlabelled pool items), the one
training on M rows drawn uniformly would target; a label stands for the rows with equal features
(`activebayes.same_rows`; exact when copies share their label, in expectation when each copy's
label comes from one p(y | x)). Training minimises (1/M) Σ_n w_n ℓ(x_n, y_n) over the M labels,
n the place in the order of acquisition (labels given outside a round first, then round, then
rank). Round t drew among N_t distinct candidates standing for R_t rows (acquisition_settings
"candidates", "candidate_rows"; R_t = N_t where not recorded), its j-th query (j = 0, 1, ...)
a group of m_j rows ("copies"; 1 where not recorded) with probability q among the inputs it had
left. For the label at place n, the j-th query of round t, with e_t the last place of its round:

    B_n = Σ_{j'<j} m_{j'}                rows of the round's earlier queries, answered or not
    K_n = Σ_{answered j'<j} (m_{j'} − 1)   copies its earlier labels stand for
    U_n = R − n + 1 − K_n                rows neither labelled nor stood for
    π_n = (R_t − B_n) / U_n              the share of them the round could still draw
    a_n = 1 / ((R − n + 1) q_n π_n)

    w_n = 1 + (R − M)/(R − n) · m_n (a_n − 1) + (m_n − 1)(R − M)/(R − e_t)   (`acquisition_weights`)

Why: given the labels before it, each place n gives an estimate of the rows' total loss,

    T_n = Σ_{labels before round t} ℓ + Σ_{answered j'<j} m_{j'} ℓ_{j'} + m_n ℓ_n / (q_n π_n),

unbiased when π_n = 1 (the round drew among every row neither labelled nor stood for, with q > 0
on each input it had left, so E[m ℓ / q] = Σ m ℓ over them): the labels before the round count
once (their other copies are candidates of the round), this round's earlier labels stand for
their copies. LURE's fixed coefficients c_n = R(R − M)/(M (R − n)(R − n + 1)) sum to 1, and
(1/R) Σ_n c_n T_n = (1/M) Σ_n w_n ℓ_n: ℓ_n's coefficient gathers its own T_n, m_n from each
later T of its round and 1 from each T of a later round. So E[(1/M) Σ w_n ℓ_n] = (1/R) Σ_rows ℓ
exactly, whatever M is, when every round drew among all the rows left and its queries were
answered (`tests/test_debias_rows.py` enumerates every draw). Otherwise π_n < 1 (an acquisition
subset, a uniform sample of the rows left; an earlier query of the round left unanswered; rows
added to the pool since) is taken over as the inclusion share of a uniform sample (as in v_n
below). Where every group is one row (m ≡ 1, as in every round recorded before the groups were),
K = 0, B_n = j, R_t = N_t and a_n = 1/(q_n (N_t − j)): w_n is the LURE weight

    v_n = 1 + (R − M)/(R − n) · (1/((R − n + 1) q̃_n) − 1),   q̃_n = q_n (N_t − j)/(R − n + 1)

exactly. When the labels are a small part of the pool (R ≫ M), w_n ≈ m_n a_n ≈ v_n ρ_n with
ρ_n = N_t m_n / R_t, the per-row share of the round's estimates (`activebayes.row_weights`); the
product v_n ρ_n itself is not unbiased once the labels are much of the pool (it ignores that a
label's copies stay in the pool), which w_n is.

Items without a recorded probability (a deterministic top-k, auto's arm, a typical batch, a
round recorded before rounds kept their candidates) have no proposal to correct by; they are
weighed as the target's own draw, a row drawn uniformly from the U_n left, which takes its group
with q_n π_n = m_n / U_n, i.e. m_n a_n = U_n/(R − n + 1): exact when the item was so drawn, and
w = 1 where groups are one row (LURE's v = 1), w ≈ 1 when R ≫ M. No weight makes a deterministic
pick unbiased; this one is the convention that is unbiased for the draw the target describes.
Not ρ_n: that is the weight of a uniform draw over the distinct inputs, a proposal such a round
never used either; a row-uniform pick already takes a group of m rows m times as often as a
single row, and ρ_n ∝ m on top would count its copies twice. Labels given outside a round
weigh 1 (m = 1).

The weights reach training through a context (`sample_weights`), read by
`activebayes.training.train`: each epoch then draws its items with probability ∝ w_n, with
replacement (`weighted_epoch_order`), so every loss a posterior trains with (its own `loss_fn`
included) is the weighted one in expectation: E[ℓ of a drawn item] = Σ w_n ℓ_n / Σ w_n. A context
does not cross processes: members trained as Ray tasks, and posteriors that do not train with
`train` (the Gaussian process), are fitted unweighted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from activebayes.errors import ShapeError

_WEIGHTS: ContextVar[Tensor | None] = ContextVar("activebayes_sample_weights", default=None)


@contextmanager
def sample_weights(weights: Tensor | np.ndarray | None) -> Iterator[None]:
    """Within the block, `train` weights its N training items by `weights` [N] (None: unweighted)."""
    value = None if weights is None else torch.as_tensor(np.asarray(weights, dtype=np.float64)).float()
    if value is not None and (value.dim() != 1 or not torch.all(torch.isfinite(value)) or torch.any(value < 0) or value.sum() <= 0):
        raise ShapeError("sample weights: expected a vector [N] of finite non-negative weights with a positive sum")
    token = _WEIGHTS.set(value)
    try:
        yield
    finally:
        _WEIGHTS.reset(token)


def current_sample_weights(n: int) -> Tensor | None:
    """The weights [n] set by `sample_weights` for a training set of n items, or None."""
    weights = _WEIGHTS.get()
    if weights is None:
        return None
    if weights.shape[0] != n:
        raise ShapeError(f"sample weights: {weights.shape[0]} weights for {n} training items")
    return weights


def weighted_epoch_order(weights: Tensor, length: int, generator: torch.Generator) -> Tensor:
    """[length] item indices drawn with replacement with probability ∝ weights [n]."""
    return torch.multinomial(weights.cpu(), length, replacement=True, generator=generator)


class Draw(NamedTuple):
    """One labelled query, in order of acquisition (the module docstring's symbols): its `key`,
    q (None: no recorded probability), N_t of its round (None: recorded before rounds kept it),
    j its rank in the round, m its group's rows among the candidates, R_t (None: N_t), B the
    rows of the round's earlier queries (None: j), and its `round` (draws of one round share it;
    None: a round of its own)."""

    key: str
    probability: float | None
    candidates: int | None
    index: int
    copies: int = 1
    candidate_rows: int | None = None
    rows_before: int | None = None
    round: int | None = None


def acquisition_weights(order: Sequence[Draw | tuple[Any, ...]], pool_size: int, outside: int = 0) -> dict[str, float]:
    """{key: w_n} (module docstring) for the items acquired by rounds, in order of acquisition
    (`Draw`s, or tuples of their first fields: (key, q, N_t, j) is a draw of one row). `outside`
    labels came before them without a round (weight 1, counted in M); R = `pool_size` rows."""
    draws = [Draw(*d) for d in order]
    m_total, rows = outside + len(draws), int(pool_size)
    if rows < m_total:
        raise ShapeError(f"pool_size: {rows} pool items cannot hold {m_total} labels")
    if m_total == rows:  # every row labelled: the plain mean is the row mean
        return {d.key: 1.0 for d in draws}
    places = range(outside + 1, m_total + 1)
    last_place = {d.round: place for place, d in zip(places, draws) if d.round is not None}  # e_t
    weights: dict[str, float] = {}
    stood_for, current = 0, object()  # K_n: copies the round's earlier labels stand for
    for place, d in zip(places, draws):
        if d.round is None or d.round != current:
            stood_for, current = 0, d.round
        share = _drawn_share(d, rows - place + 1, stood_for)  # m_n · a_n
        end = last_place.get(d.round, place) if d.round is not None else place
        scale = (rows - m_total) / (rows - place)
        weights[d.key] = 1.0 + scale * (share - d.copies) + (d.copies - 1) * (rows - m_total) / (rows - end)
        stood_for += d.copies - 1
    return weights


def _drawn_share(d: Draw, left: int, stood_for: int) -> float:
    """m_n a_n = m_n U_n / ((R − n + 1) q_n (R_t − B_n)) of draw `d`, `left` = R − n + 1 rows
    unlabelled and K_n = `stood_for`; U_n / (R − n + 1) for an item without a probability."""
    unknown = left - stood_for  # U_n
    if d.probability is None or d.candidates is None:
        return unknown / left
    round_left = (d.candidate_rows if d.candidate_rows is not None else d.candidates) - (d.rows_before if d.rows_before is not None else d.index)
    if unknown < 1 or round_left < 1:  # records that do not fit the pool now: no subset correction
        unknown = round_left = max(unknown, round_left, 1)
    return d.copies * unknown / (left * float(d.probability) * round_left)


def lure_training_weights(store: Any, project: str, keys: Sequence[str]) -> np.ndarray:
    """w [L] of the labelled pool items `keys` (as `PoolStore.labels` lists them) from the
    recorded rounds (their candidates, candidate_rows and copies) and their queries' draw
    probabilities; 1 for an item no round drew."""
    labelled = set(keys)
    order: list[Draw] = []
    seen: set[str] = set()
    for rnd in store.rounds(project):
        settings = rnd.acquisition_settings or {}
        queries = sorted(store.queries(project, rnd.number), key=lambda q: q.rank)
        copies = _recorded_copies(settings, len(queries))
        rows_of_round = int(settings["candidate_rows"]) if copies is not None else None
        rows_before = 0
        for j, q in enumerate(queries):
            m = copies[j] if copies is not None else 1
            if q.key in labelled and q.key not in seen:
                order.append(Draw(q.key, getattr(q, "probability", None), settings.get("candidates"), j, m, rows_of_round, rows_before, rnd.number))
                seen.add(q.key)
            rows_before += m
    pool_size = store.count_items(project, split="pool")
    weights = acquisition_weights(order, pool_size, outside=len(labelled - seen))
    return np.asarray([weights.get(k, 1.0) for k in keys], dtype=np.float64)


def _recorded_copies(settings: dict[str, Any], queries: int) -> list[int] | None:
    """m [k] of a round's k queries by rank, or None where it recorded no groups (every group one
    row, or a round recorded before them; also a record that does not fit its queries)."""
    copies = settings.get("copies")
    if not isinstance(copies, list) or len(copies) != queries or not settings.get("candidate_rows"):
        return None
    return [int(m) for m in copies]
