"""BatchBALD (Kirsch, van Amersfoort & Gal 2019): a batch that maximises the joint information.

    a(x_1..x_K) = I[y_1, ..., y_K; θ] = H[y_1..y_K] − Σ_i E_θ H[y_i | θ],

maximised greedily: step t adds the candidate n with the largest marginal gain

    I[y_n; θ | y_B] = H[y_n | y_B] − E_θ H[y_n | θ],      B the t candidates chosen so far.

The labels y_B of the chosen candidates are held as M configurations Y_m with per-sample joint
probabilities P[s, m] = p(Y_m | θ_s), kept as log P [S, M] in float64. With W[s, m] = w_s P[s, m] /
q_m the posterior over samples given Y_m (q_m = Σ_s w_s P[s, m]) and r_mn = Σ_s W[s, m] p_s(· | x_n)
the predictive of candidate n given Y_m,

    H[y_n | y_B] = Σ_m v_m H[r_mn],     v_m = q_m (exact) or 1/M (sampled),

which for all candidates of a chunk is one matmul W^T [M, S] @ probs [S, b·C] -> [M, b·C], one
elementwise r·log r and one matrix-vector product with v, run over tiles of configurations that
fit the cache on the CPU (`_gains`). This is the chain rule applied to
batchbald-redux's joint entropy H[y_B, y_n] = H[y_B] + H[y_n | y_B] and avoids its products of
tiny joint probabilities.

Exact: the M = C^t configurations are enumerated while C^t <= `max_joint_configs`.
Sampled: beyond that, `num_samples` configurations are drawn afresh at every step from p(y_B),
stratified over the posterior samples (M·w_s configurations from θ_s, then y_i ~ p(y_i | θ_s)).
This is batchbald-redux's SampledJointEntropy: the same draws, and its importance-weighted
estimator with proposal q = p(y_B), so every importance weight p/q is 1. A configuration drawn
c times is kept once with v_m = c/M (the same sum over fewer columns: with confident networks
most of the M draws repeat a few configurations).

Lazy greedy (Minoux 1978): the gains never grow as B grows (the joint MI is submodular), so the
last computed gain of a candidate bounds its next one. Each step evaluates candidates in chunks
in order of their bound and stops as soon as the best fresh gain reaches the next bound. With
exact configurations this returns exactly the full greedy choice; with sampled ones the bounds
are estimates too (Monte-Carlo noise may reorder candidates within that noise). `lazy=False`
evaluates every candidate at every step.

Memory: O(S·M) for the joint state plus two buffers, b = `chunk_size` candidates per chunk: on
the CPU [m, b·C] tiles of 2^18 elements (1 MiB in float32; b >= 128 by default), on CUDA [M, b·C]
(by default the largest b with max(M, S)·b·C <= 2^22 elements); never [M, N, C] for the whole pool. Each evaluated chunk
costs one host synchronisation (the greedy choice needs the argmax on the host).
"""

from __future__ import annotations

import torch
from torch import Tensor

from activebayes.acquisition._entropy import categorical, draw_device, entropy, expected_entropy, working_probs
from activebayes.acquisition.batch import BatchSelection, check_k
from activebayes.errors import ShapeError
from activebayes.predictive import Predictive

_BUFFER_ELEMENTS = 1 << 22  # [M, b·C] elements per chunk and buffer on CUDA: two buffers of 16 MiB in float32
#: On the CPU: [m, b·C] tiles of 2^18 elements (1 MiB in float32, two fit a 2 MiB L2) and chunks of
#: at least 128 candidates (measured fastest at M = 10^4, S = 100, C = 10: 2.1x the whole-M buffers).
_TILE_ELEMENTS = 1 << 18
_MIN_CHUNK = 128
_PROB_FLOOR = 1e-30
_SAMPLE_CHUNK = 1 << 15


def _check_positive(name: str, value: int | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ShapeError(f"{name}: expected a positive integer, got {value!r}")


def _log_probs(probs: Tensor) -> Tensor:
    """log p in float64, p = 0 clamped to the smallest positive float64 (log ≈ −708)."""
    work = probs.to(torch.float64)
    return torch.log(work.clamp_min(torch.finfo(torch.float64).tiny))


class _Joint:
    """log P [S, M] = log p(Y_m | θ_s) of M label configurations of the chosen candidates."""

    def __init__(self, log_w: Tensor) -> None:
        self.log_w = log_w  # [S] float64
        self.log_joint = torch.zeros(log_w.shape[0], 1, dtype=torch.float64, device=log_w.device)
        self.exact = True
        self.counts: Tensor | None = None  # sampled: how many of the draws each distinct configuration is

    def posterior(self) -> tuple[Tensor, Tensor]:
        """W [S, M] (columns sum to 1) and the configuration weights v [M]."""
        logits = self.log_w[:, None] + self.log_joint
        log_q = torch.logsumexp(logits, dim=0)  # [M]
        post = torch.exp(logits - log_q)
        if self.exact:
            return post, torch.exp(log_q)
        return post, self.counts / self.counts.sum()

    def extend(self, p_new: Tensor) -> None:
        """Enumerate one more chosen candidate exactly: p_new [S, C], M -> M·C configurations."""
        S, M = self.log_joint.shape
        log_p = _log_probs(p_new)  # [S, C]
        self.log_joint = (self.log_joint[:, :, None] + log_p[:, None, :]).reshape(S, M * p_new.shape[-1])

    def resample(self, chosen: Tensor, weights: Tensor, num_samples: int, generator: torch.Generator | None) -> None:
        """Draw num_samples configurations of all chosen candidates afresh: chosen [S, t, C].

        Stratified over the posterior samples like batchbald-redux's SampledJointEntropy: the
        sample of configuration m is θ_s(m) by systematic sampling of the weights (exactly M/S
        per sample when equally weighted), then y_mi ~ p(y_i | θ_s(m)) for each chosen i.
        """
        S, t, C = chosen.shape
        here = draw_device(generator, chosen)  # draw where the generator lives, index where data is
        positions = (torch.rand((), generator=generator, dtype=torch.float64, device=here)
                     + torch.arange(num_samples, dtype=torch.float64, device=here)) / num_samples
        cdf = torch.cumsum(weights.to(device=here, dtype=torch.float64), 0)
        theta = torch.searchsorted(cdf, positions).clamp_max_(S - 1)  # [M]
        drawn = chosen.to(device=here, dtype=torch.float64)
        labels = torch.stack([torch.multinomial(drawn[theta, i], 1, generator=generator)[:, 0] for i in range(t)], 1)  # [M, t]
        # a configuration drawn c times is one column with weight c/M: the same sum, fewer columns
        distinct, counts = torch.unique(labels.to(chosen.device), dim=0, return_counts=True)  # [U, t], [U]
        log_p = _log_probs(chosen)  # [S, t, C]
        log_joint = torch.zeros(S, distinct.shape[0], dtype=torch.float64, device=chosen.device)
        for i in range(t):
            log_joint += log_p[:, i, distinct[:, i]]
        self.log_joint, self.exact, self.counts = log_joint, False, counts.to(torch.float64)


def _gains(post_t: Tensor, v: Tensor, probs: Tensor, cond: Tensor, idx: Tensor, buffers: tuple[Tensor, Tensor]) -> Tensor:
    """I[y_n; θ | y_B] for candidates idx [b]: post_t [M, S], v [M], probs [S, N, C] -> [b].

    The configurations run in tiles of m rows, m·b·C = the buffers' size: r = post_t[tile] @ probs
    [m, b·C] and r log r stay in the cache (on the CPU a tile of about 1 MiB; on CUDA the whole M
    at once), and Σ_m v_m r log r accumulates tile by tile.
    The candidates' probabilities are clamped at 1e−30 so that r > 0 and log r is finite (r ≥ 1e−30
    because the columns of W sum to 1); this moves no entropy by more than ~1e−28 nats.
    """
    S, _, C = probs.shape
    M, b = post_t.shape[0], idx.shape[0]
    sub = probs.index_select(1, idx).clamp_min_(_PROB_FLOOR).reshape(S, b * C)  # [S, b·C]
    rows = max(1, min(M, buffers[0].numel() // (b * C)))
    acc = torch.zeros(b * C, dtype=probs.dtype, device=probs.device)  # Σ_m v_m r log r
    for start in range(0, M, rows):
        stop = min(M, start + rows)
        r = torch.mm(post_t[start:stop], sub, out=buffers[0][: (stop - start) * b * C].view(stop - start, b * C))
        r_log_r = torch.log(r, out=buffers[1][: r.numel()].view_as(r)).mul_(r)  # r_mn: the predictive given Y_m
        acc.addmv_(r_log_r.t(), v[start:stop])
    h = -acc.view(b, C).sum(-1)  # H[y_n | y_B], [b]
    return h - cond.index_select(0, idx)


def _argmax_full(post_t, v, probs, cond, bounds, chunk, buffer) -> tuple[int, Tensor]:
    N = probs.shape[1]
    gains = torch.empty_like(cond)
    for start in range(0, N, chunk):
        idx = torch.arange(start, min(N, start + chunk), device=probs.device)
        gains[start : start + chunk] = _gains(post_t, v, probs, cond, idx, buffer)
    gains.masked_fill_(bounds == -torch.inf, -torch.inf)  # already chosen
    best = int(gains.argmax())
    return best, gains[best]


def _argmax_lazy(post_t, v, probs, cond, bounds, chunk, buffer, n_left: int) -> tuple[int, Tensor]:
    sorted_bounds, order = torch.sort(bounds, descending=True, stable=True)  # chosen (−inf) last
    best_j, best_gain, best_value = -1, cond[0], -float("inf")
    for start in range(0, n_left, chunk):
        end = min(n_left, start + chunk)
        idx = order[start:end]
        gains = _gains(post_t, v, probs, cond, idx, buffer)
        bounds[idx] = gains
        top, arg = gains.max(0)
        following = sorted_bounds[end] if end < n_left else top.new_tensor(-torch.inf)
        top_value, next_bound = torch.stack([top, following]).tolist()  # one host sync per chunk
        if top_value > best_value:
            best_j, best_gain, best_value = int(idx[arg]), top, top_value
        if best_value >= next_bound:
            break
    return best_j, best_gain


def _chunking(M: int, S: int, N: int, C: int, chunk_size: int | None, device: torch.device) -> tuple[int, int]:
    """(b, buffer elements): candidates per evaluated chunk, and the size of each of the two
    [m, b·C] buffers (m ≤ M configurations per tile)."""
    if device.type == "cpu":
        chunk = min(N, chunk_size or max(_MIN_CHUNK, _TILE_ELEMENTS // (M * C)))
        return chunk, max(chunk * C, min(M * chunk * C, _TILE_ELEMENTS))
    chunk = min(N, chunk_size or max(1, _BUFFER_ELEMENTS // (max(M, S) * C)))
    return chunk, M * chunk * C


def batch_bald(
    pred: Predictive | Tensor,
    k: int,
    *,
    num_samples: int = 10_000,
    max_joint_configs: int = 10_000,
    chunk_size: int | None = None,
    lazy: bool = True,
    generator: torch.Generator | None = None,
) -> BatchSelection:
    """Greedy BatchBALD batch of k candidates: pred probs [S, N, C] (weights honoured).

    Args:
        k: batch size, 0 <= k <= N.
        num_samples: M, the number of sampled label configurations once C^t > max_joint_configs.
        max_joint_configs: the largest number of configurations enumerated exactly.
        chunk_size: candidates per evaluated chunk; None sizes it to the buffers (module
            docstring, "Memory").
        lazy: lazy greedy evaluation (see the module docstring); False evaluates every candidate.
        generator: draws the sampled configurations (on its own device; the draws move to probs'
            device); unused while exact.

    Returns:
        BatchSelection: indices [K] in the order chosen, scores [K] the marginal gains
        I[y_i; θ | y_<i] in nats, whose cumulative sum is the batch's joint mutual information
        (exact in the exact regime, an estimate beyond). For a large pool pre-filter with
        `bald_prefilter` and map back: `keep[batch_bald(pred.candidates(keep), k).indices]`.

    >>> probs = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]],   # S=3 samples, N=3, C=2
    ...                       [[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]],
    ...                       [[0.0, 1.0], [0.0, 1.0], [0.1, 0.9]]])
    >>> batch_bald(probs, 2).indices   # item 1 repeats item 0; item 2 splits what item 0 cannot
    tensor([0, 2])

    tensor([0, 2])
    """
    pred = categorical(pred, "batch_bald")
    probs = working_probs(pred)
    S, N, C = probs.shape
    check_k(k, N)
    _check_positive("num_samples", num_samples)
    _check_positive("max_joint_configs", max_joint_configs)
    _check_positive("chunk_size", chunk_size, allow_none=True)
    if k == 0:  # nothing to choose (an empty pool included)
        return BatchSelection(torch.zeros(0, dtype=torch.long, device=probs.device), probs.new_zeros(0))
    weights = pred.sample_weights()
    per_chunk = max(1, _BUFFER_ELEMENTS // (S * C))
    cond = torch.cat([expected_entropy(probs[:, i : i + per_chunk], weights) for i in range(0, N, per_chunk)])
    joint = _Joint(torch.log(weights.to(torch.float64)))
    bounds = torch.full((N,), torch.inf, dtype=probs.dtype, device=probs.device)
    chosen: list[int] = []
    gains: list[Tensor] = []
    for step in range(k):
        post, v = joint.posterior()
        M = post.shape[1]
        chunk, size = _chunking(M, S, N, C, chunk_size, probs.device)
        buffer = tuple(torch.empty(size, dtype=probs.dtype, device=probs.device) for _ in range(2))
        post_t, v_w = post.T.to(probs.dtype).contiguous(), v.to(probs.dtype)
        if lazy:
            j, gain = _argmax_lazy(post_t, v_w, probs, cond, bounds, chunk, buffer, N - step)
        else:
            j, gain = _argmax_full(post_t, v_w, probs, cond, bounds, chunk, buffer)
        chosen.append(j)
        gains.append(gain)
        bounds[j] = -torch.inf
        if step + 1 < k:
            if joint.exact and joint.log_joint.shape[1] * C <= max_joint_configs:
                joint.extend(probs[:, j])
            else:
                joint.resample(probs[:, chosen], weights, num_samples, generator)
    indices = torch.tensor(chosen, dtype=torch.long, device=probs.device)
    scores = torch.stack(gains) if gains else probs.new_zeros(0)
    return BatchSelection(indices, scores)


def _sampled_joint_entropy_terms(
    probs_b: Tensor, weights: Tensor, num_samples: int, generator: torch.Generator | None
) -> Tensor:
    """−log p(Y_m) for Y_m ~ p(y_B) drawn ancestrally (θ ~ w, then y_i ~ p(y_i | θ)): [num_samples].

    probs_b [S, K, C]; the mean of the result estimates H[y_B] without bias.
    """
    S, K, C = probs_b.shape
    log_p = _log_probs(probs_b)  # [S, K, C]
    log_w = torch.log(weights.to(torch.float64))
    slots = torch.arange(K, device=probs_b.device)
    here = draw_device(generator, probs_b)
    drawn = probs_b.to(device=here, dtype=torch.float64)
    terms = []
    for start in range(0, num_samples, _SAMPLE_CHUNK):
        b = min(_SAMPLE_CHUNK, num_samples - start)
        w_here = weights.to(device=here, dtype=torch.float64)
        theta = torch.multinomial(w_here, b, replacement=True, generator=generator)  # [b]
        y = torch.multinomial(drawn[theta].reshape(b * K, C), 1, generator=generator).view(b, K).to(probs_b.device)
        log_joint = log_p[:, slots[None, :], y].sum(-1)  # [S, b]
        terms.append(-torch.logsumexp(log_w[:, None] + log_joint, dim=0))
    return torch.cat(terms)


def joint_mutual_information(
    pred: Predictive | Tensor,
    indices: Tensor | list[int],
    *,
    max_joint_configs: int = 100_000,
    num_samples: int = 100_000,
    generator: torch.Generator | None = None,
) -> Tensor:
    """I[y_B; θ] = H[y_B] − Σ_{i∈B} E_θ H[y_i | θ] of the batch B = indices, a 0-dim float64 tensor.

    H[y_B] is exact (enumerating C^K configurations) while C^K <= max_joint_configs, otherwise
    the Monte-Carlo mean of −log p(Y_m) over `num_samples` ancestral draws (unbiased; p(Y_m)
    itself is exact).
    """
    pred = categorical(pred, "joint_mutual_information")
    probs = working_probs(pred)
    index = torch.as_tensor(indices, dtype=torch.long, device=probs.device).reshape(-1)
    weights = pred.sample_weights()
    probs_b = probs.index_select(1, index)  # [S, K, C]
    S, K, C = probs_b.shape
    cond = expected_entropy(probs_b.double(), weights).sum()
    if C**K <= max_joint_configs:
        log_joint = torch.zeros(S, 1, dtype=torch.float64, device=probs.device)
        for i in range(K):
            log_joint = (log_joint[:, :, None] + _log_probs(probs_b[:, i])[:, None, :]).reshape(S, -1)
        q = torch.exp(torch.logsumexp(torch.log(weights.double())[:, None] + log_joint, dim=0))
        return entropy(q[None, :]).sum() - cond
    return _sampled_joint_entropy_terms(probs_b, weights, num_samples, generator).mean() - cond
