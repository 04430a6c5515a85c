"""EIG on a grid (fast path and general path), nested Monte Carlo, and the BoTorch wrappers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from activebayes.design import (
    EIGAcquisition,
    EIGTable,
    GridPosterior,
    MemorySpanModel,
    best_design,
    grid_eig,
    nmc_eig,
    normal_prior_sampler,
    optimize_design,
)
from activebayes.errors import ShapeError

DESIGNS = torch.arange(1.0, 15.0, dtype=torch.float64)


def mutual_information(weights: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """I[y; θ] = Σ_g Σ_y w_g p(y|g) log(p(y|g) / p(y)), written independently in numpy. probs [G, D, C]."""
    marginal = np.einsum("g,gdc->dc", weights, probs)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(probs > 0, probs * np.log(probs / marginal[None]), 0.0)
    return np.einsum("g,gdc->d", weights, terms)


def test_two_point_hand_computed_eig():
    # two equally likely spans, one design recalled surely by one and never by the other: 1 bit
    w = torch.tensor([0.5, 0.5], dtype=torch.float64)
    p = torch.tensor([[1.0], [0.0]], dtype=torch.float64)
    h = torch.zeros_like(p)
    assert float(grid_eig(w, p, h)) == pytest.approx(math.log(2), abs=1e-12)
    # p = (0.9, 0.3), w = (0.25, 0.75): H[0.45] − (0.25 H[0.9] + 0.75 H[0.3])
    p = torch.tensor([[0.9], [0.3]], dtype=torch.float64)
    w = torch.tensor([0.25, 0.75], dtype=torch.float64)

    def hb(q):
        return -(q * math.log(q) + (1 - q) * math.log(1 - q))

    h = torch.tensor([[hb(0.9)], [hb(0.3)]], dtype=torch.float64)
    assert float(grid_eig(w, p, h)) == pytest.approx(hb(0.45) - 0.25 * hb(0.9) - 0.75 * hb(0.3), abs=1e-12)


@pytest.mark.parametrize(
    "model,learn_slope",
    [
        (MemorySpanModel(), False),
        (MemorySpanModel(slope=0.7, lapse=0.04, guess=0.1, link="probit"), False),
        (MemorySpanModel(), True),
    ],
)
def test_fast_path_equals_independent_mutual_information(model, learn_slope):
    post = GridPosterior(model, n_theta=41, learn_slope=learn_slope, n_slope=7)
    for xi, y in [(7.0, 1), (10.0, 0), (8.0, 1)]:
        post.update(xi, y)
    table = EIGTable(post, DESIGNS)
    fast = table.eig(post.weights).numpy()
    exact = mutual_information(post.weights.numpy(), model.probs(post.theta, DESIGNS, post.slope).numpy())
    np.testing.assert_allclose(fast, exact, atol=1e-6)


def test_table_update_equals_model_update():
    model = MemorySpanModel(slope=1.5, lapse=0.02)
    a, b = GridPosterior(model), GridPosterior(model)
    table = EIGTable(a, DESIGNS)
    for d, y in [(6, 1), (9, 0), (7, 1)]:
        table.update(a, d, y)
        b.update(float(DESIGNS[d]), y)
    torch.testing.assert_close(a.log_weights, b.log_weights)


def test_eig_is_highest_at_the_prior_mean_and_symmetric():
    post = GridPosterior(MemorySpanModel(), n_theta=801)
    eig = EIGTable(post, DESIGNS).eig(post.weights)
    assert float(DESIGNS[int(eig.argmax())]) == 7.0
    for k in range(1, 6):  # the prior and the logistic are symmetric about 7
        assert float(eig[6 - k]) == pytest.approx(float(eig[6 + k]), abs=1e-6)
    assert bool((eig[:6].diff() > 0).all()) and bool((eig[6:].diff() < 0).all())


def test_nmc_is_biased_upward_and_converges_as_m_grows():
    model = MemorySpanModel()
    post = GridPosterior(model, n_theta=801)
    designs = torch.tensor([4.0, 7.0, 11.0], dtype=torch.float64)
    exact = EIGTable(post, designs).eig(post.weights)
    errors = {}
    for m in (1, 4, 16, 256):
        runs = torch.stack([nmc_eig(model, designs, normal_prior_sampler(), n_outer=4000, n_inner=m, seed=s) for s in range(3)])
        bias = runs.mean(0) - exact
        if m <= 4:
            assert bool((bias > 0).all()), f"M={m}: NMC should over-estimate, bias {bias}"
        errors[m] = float(bias.abs().mean())
    assert errors[1] > errors[4] > errors[16]
    assert errors[256] < 0.015
    # same seed, same estimate; a GridPosterior works as the sampler too
    torch.testing.assert_close(
        nmc_eig(model, designs, post, n_outer=500, n_inner=8, seed=3), nmc_eig(model, designs, post, n_outer=500, n_inner=8, seed=3)
    )


def test_best_design_uses_botorch_discrete_and_matches_the_table():
    post = GridPosterior(MemorySpanModel())
    post.update(7.0, 0).update(5.0, 1)
    eig = EIGTable(post, DESIGNS).eig(post.weights)
    design, value = best_design(post, DESIGNS)
    assert float(design[0]) == float(DESIGNS[int(eig.argmax())])
    assert value == pytest.approx(float(eig.max()), abs=1e-10)


def test_acquisition_function_shapes_and_gradient():
    post = GridPosterior(MemorySpanModel())
    acq = EIGAcquisition(post)
    x = torch.tensor([[[6.0]], [[7.0]], [[8.5]]], dtype=torch.float64, requires_grad=True)
    value = acq(x)
    assert value.shape == (3,)
    value.sum().backward()
    assert x.grad is not None and float(x.grad[1].abs()) < 1e-8  # stationary at the prior mean
    with pytest.raises(ShapeError, match="q=1"):
        acq(torch.zeros(3, 2, 1, dtype=torch.float64))


def test_continuous_optimisation_1d_and_2d_rate_design():
    post = GridPosterior(MemorySpanModel())
    post.update(7.0, 0)
    grid = torch.linspace(1, 15, 2801, dtype=torch.float64)
    eig = EIGTable(post, grid).eig(post.weights)
    x, value = optimize_design(post, torch.tensor([[1.0], [15.0]]), seed=0)
    assert float(x[0]) == pytest.approx(float(grid[int(eig.argmax())]), abs=0.01)
    assert value == pytest.approx(float(eig.max()), abs=1e-6)
    # digits × presentation rate: the optimum lies on digits + rate_cost·(rate − 1) = best difficulty
    post2 = GridPosterior(MemorySpanModel(rate_cost=1.5))
    post2.update(7.0, 0)
    x2, value2 = optimize_design(post2, torch.tensor([[1.0, 0.5], [15.0, 2.0]]), seed=1)
    difficulty = float(x2[0] + 1.5 * (x2[1] - 1.0))
    assert difficulty == pytest.approx(float(grid[int(eig.argmax())]), abs=0.01)
    assert value2 == pytest.approx(float(eig.max()), abs=1e-6)


@pytest.mark.parametrize("learn_slope", [False, True])
def test_fast_path_equals_acquisition_eig_general_path(learn_slope):
    from activebayes.acquisition import bald, eig

    from activebayes.design import exact_eig

    model = MemorySpanModel(slope=1.2, lapse=0.03)
    post = GridPosterior(model, n_theta=201, learn_slope=learn_slope, n_slope=25)
    for xi, y in [(7.0, 0), (5.0, 1), (6.0, 1)]:
        post.update(xi, y)
    fast = EIGTable(post, DESIGNS).eig(post.weights)
    pred = post.predictive(DESIGNS)  # Predictive [G, D, 2] with the grid weights
    assert pred.probs.shape == (post.n_points, len(DESIGNS), 2)
    torch.testing.assert_close(fast, eig(pred), atol=1e-6, rtol=0)
    torch.testing.assert_close(fast, bald(pred), atol=1e-6, rtol=0)
    torch.testing.assert_close(fast, exact_eig(post, DESIGNS), atol=1e-6, rtol=0)


def test_theta_target_marginalises_the_slope():
    from activebayes.acquisition import eig

    from activebayes.predictive import Predictive

    model = MemorySpanModel()
    post = GridPosterior(model, learn_slope=True, n_theta=61, n_slope=9)
    for xi, y in [(7.0, 1), (9.0, 0)]:
        post.update(xi, y)
    table = EIGTable(post, DESIGNS)
    joint = table.eig(post.weights)
    theta = table.eig(post.weights, target="theta")
    # independent: p(y | θ_i) = Σ_j w_ij p(y | θ_i, s_j) / Σ_j w_ij, then the mutual information
    w = post.weights.reshape(post.shape).numpy()
    probs = model.probs(post.theta, DESIGNS, post.slope).numpy().reshape(*post.shape, len(DESIGNS), 2)
    w_theta = w.sum(1)
    p_theta = np.einsum("ij,ijdc->idc", w, probs) / w_theta[:, None, None]
    np.testing.assert_allclose(theta.numpy(), mutual_information(w_theta, p_theta), atol=1e-6)
    general = eig(Predictive(torch.as_tensor(p_theta), torch.as_tensor(w_theta)))
    torch.testing.assert_close(theta, general, atol=1e-6, rtol=0)
    assert bool((theta <= joint + 1e-12).all()) and float((joint - theta).max()) > 1e-3
    # with a fixed slope the two targets agree
    fixed = GridPosterior(model, n_theta=61)
    t2 = EIGTable(fixed, DESIGNS)
    torch.testing.assert_close(t2.eig(fixed.weights, target="theta"), t2.eig(fixed.weights))
