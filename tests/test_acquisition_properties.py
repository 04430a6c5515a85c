"""Property-based checks of every acquisition score (hypothesis): finite on any valid
Predictive, exact 0/1 probabilities included; 0 <= BALD <= entropy <= log C; equivariant under
a permutation of the candidates; invariant under a permutation of the samples; integer weights
equal replicated samples. Gaussian predictives: finite, non-negative information."""

from __future__ import annotations

import math

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import activebayes.acquisition as acquisition  # noqa: E402
from activebayes.predictive import GaussianPredictive, Predictive  # noqa: E402

NAMES = ("bald", "entropy", "variation_ratio", "mean_std", "variance", "margin", "least_confidence", "eig")
SCORES = {name: getattr(acquisition, name) for name in NAMES}
TOL = 1e-9
settings.register_profile("activebayes", max_examples=60, deadline=None, derandomize=True)
settings.load_profile("activebayes")


@st.composite
def categorical(draw, max_s: int = 5, max_n: int = 6, max_c: int = 5) -> torch.Tensor:
    """probs [S, N, C] in float64: random rows, some one-hot (exact 0 and 1), some with zeros."""
    s, n, c = draw(st.integers(1, max_s)), draw(st.integers(1, max_n)), draw(st.integers(2, max_c))
    raw = draw(st.lists(st.floats(0.0, 1.0), min_size=s * n * c, max_size=s * n * c))
    probs = torch.tensor(raw, dtype=torch.float64).reshape(s, n, c)
    kinds = draw(st.lists(st.sampled_from(["soft", "one-hot", "sparse"]), min_size=s * n, max_size=s * n))
    for index, kind in enumerate(kinds):
        row = probs[index // n, index % n]
        if kind == "one-hot" or float(row.sum()) == 0.0:
            row.zero_()
            row[int(draw(st.integers(0, c - 1)))] = 1.0
        elif kind == "sparse":
            row[row < 0.5] = 0.0
            if float(row.sum()) == 0.0:
                row[0] = 1.0
    return probs / probs.sum(-1, keepdim=True)


@given(categorical())
def test_every_score_is_finite_and_bounded(probs):
    pred = Predictive(probs)
    c = probs.shape[-1]
    scores = {name: f(pred) for name, f in SCORES.items()}
    for name, value in scores.items():
        assert value.shape == (probs.shape[1],), name
        assert bool(torch.isfinite(value).all()), (name, value)
    assert bool((scores["bald"] >= -TOL).all())
    assert bool((scores["bald"] <= scores["entropy"] + TOL).all())
    assert bool((scores["entropy"] <= math.log(c) + TOL).all())
    assert bool((scores["variation_ratio"] >= -TOL).all()) and bool((scores["variation_ratio"] <= 1 - 1 / c + TOL).all())
    assert bool((scores["least_confidence"] <= 1 - 1 / c + TOL).all())
    assert bool((scores["margin"] >= -TOL).all()) and bool((scores["margin"] <= 1 + TOL).all())
    assert bool((scores["variance"] >= -TOL).all()) and bool((scores["mean_std"] >= -TOL).all())
    torch.testing.assert_close(scores["eig"], scores["bald"])


@given(categorical(), st.randoms(use_true_random=False))
def test_candidate_permutation_equivariance_and_sample_order_invariance(probs, rnd):
    pred = Predictive(probs)
    candidates = torch.tensor(rnd.sample(range(probs.shape[1]), probs.shape[1]))
    samples = torch.tensor(rnd.sample(range(probs.shape[0]), probs.shape[0]))
    for name, f in SCORES.items():
        base = f(pred)
        torch.testing.assert_close(f(Predictive(probs[:, candidates])), base[candidates], msg=name)
        torch.testing.assert_close(f(Predictive(probs[samples])), base, msg=name)


@given(categorical(max_s=4), st.lists(st.integers(1, 4), min_size=4, max_size=4))
def test_integer_weights_equal_replicated_samples(probs, counts):
    s = probs.shape[0]
    counts_t = torch.tensor(counts[:s], dtype=torch.float64)
    weighted = Predictive(probs, weights=counts_t / counts_t.sum())
    replicated = Predictive(probs.repeat_interleave(counts_t.long(), dim=0))
    for name, f in SCORES.items():
        torch.testing.assert_close(f(weighted), f(replicated), msg=name)


@given(st.integers(1, 5), st.integers(1, 5), st.data())
def test_gaussian_information_is_finite_and_non_negative(s, n, data):
    mean = torch.tensor(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=s * n, max_size=s * n)), dtype=torch.float64)
    var = torch.tensor(data.draw(st.lists(st.sampled_from([0.0, 1e-12, 1e-3, 1.0, 50.0]), min_size=s * n, max_size=s * n)),
                       dtype=torch.float64)  # fmt: skip
    pred = GaussianPredictive(mean.reshape(s, n), var.reshape(s, n))
    for name in ("eig", "variance", "bald", "entropy"):
        value = SCORES[name](pred)
        assert value.shape == (n,) and bool(torch.isfinite(value).all()), (name, value)
    assert bool((SCORES["eig"](pred) >= 0).all()) and bool((SCORES["variance"](pred) >= 0).all())
