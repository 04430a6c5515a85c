"""EPIG (activebayes.acquisition.epig): the paper's estimator, a hand-worked case, its bounds,
power-EPIG's sampling law, the Gaussian forms (samples, explicit covariance, the GP's joint), the
pool scorer's shared samples, the loop end to end, and `activebayes round --acquisition epig`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from activebayes.acquisition import bald, epig, resolve_acquisition
from activebayes.acquisition.epig import (
    TargetPosterior,
    epig_from_covariance,
    epig_gaussian,
    gp_joint,
    paired_epig,
)
from activebayes.errors import ConfigError, ShapeError
from activebayes.predictive import GaussianPredictive, Predictive


def dirichlet(shape: tuple[int, ...], seed: int, alpha: float = 0.7) -> torch.Tensor:
    return torch._sample_dirichlet(torch.full(shape, alpha, dtype=torch.float64), generator=torch.Generator().manual_seed(seed))


def paper_epig(probs: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The estimator of Bickford Smith et al. (2023) as written, one candidate and target at a
    time: probs [S, N, C], target [S, M, C] -> EPIG [N]."""
    S, N, C = probs.shape
    M = target.shape[1]
    out = np.zeros(N)
    for n in range(N):
        for m in range(M):
            joint = sum(np.outer(probs[s, n], target[s, m]) for s in range(S)) / S  # p(y, y*)
            p_y, p_star = probs[:, n].mean(0), target[:, m].mean(0)
            terms = [joint[i, j] * math.log(joint[i, j] / (p_y[i] * p_star[j]))
                     for i in range(C) for j in range(C) if joint[i, j] > 0]  # fmt: skip
            out[n] += sum(terms) / M
    return out


# ---- the classification estimator ---------------------------------------------------------------
def test_epig_equals_the_paper_estimator_and_chunking_changes_nothing():
    probs, target = dirichlet((7, 13, 4), 0), dirichlet((7, 11, 4), 1)
    whole = epig(probs, target)
    assert whole.shape == (13,) and whole.dtype == torch.float64
    np.testing.assert_allclose(whole.numpy(), paper_epig(probs.numpy(), target.numpy()), atol=1e-6, rtol=0)
    for a, b in ((1, 1), (2, 3), (5, 11), (13, 4)):
        torch.testing.assert_close(epig(probs, target, candidate_chunk=a, target_chunk=b), whole, atol=1e-12, rtol=0)
    single = epig(probs.float(), target.float())  # float32 in, float32 out, computed in float64
    assert single.dtype == torch.float32
    torch.testing.assert_close(single.double(), whole, atol=1e-6, rtol=0)


def test_a_two_class_case_worked_by_hand():
    # S = 2 equally likely samples; one candidate x, one target x*:
    #   θ_1: p(y|x) = (0.9, 0.1), p(y*|x*) = (0.7, 0.3);   θ_2: (0.2, 0.8), (0.4, 0.6)
    # joint p(y, y*) = ½ [0.9·0.7, 0.9·0.3; 0.1·0.7, 0.1·0.3] + ½ [0.2·0.4, 0.2·0.6; 0.8·0.4, 0.8·0.6]
    #                = ½ [0.63, 0.27; 0.07, 0.03] + ½ [0.08, 0.12; 0.32, 0.48] = [0.355, 0.195; 0.195, 0.255]
    # marginals p(y) = (0.55, 0.45), p(y*) = (0.55, 0.45); products [0.3025, 0.2475; 0.2475, 0.2025]
    # I = 0.355 log(0.355/0.3025) + 2 · 0.195 log(0.195/0.2475) + 0.255 log(0.255/0.2025) = 0.0226162...
    expected = 0.355 * math.log(0.355 / 0.3025) + 2 * 0.195 * math.log(0.195 / 0.2475) + 0.255 * math.log(0.255 / 0.2025)
    assert expected == pytest.approx(0.0226162, abs=1e-7)
    probs = torch.tensor([[[0.9, 0.1]], [[0.2, 0.8]]], dtype=torch.float64)
    target = torch.tensor([[[0.7, 0.3]], [[0.4, 0.6]]], dtype=torch.float64)
    assert epig(probs, target).item() == pytest.approx(expected, abs=1e-12)
    # weights w = (0.25, 0.75) change the joint to 0.25·θ_1 + 0.75·θ_2: the weighted estimator
    w = torch.tensor([0.25, 0.75], dtype=torch.float64)
    joint = 0.25 * np.outer([0.9, 0.1], [0.7, 0.3]) + 0.75 * np.outer([0.2, 0.8], [0.4, 0.6])
    indep = np.outer(joint.sum(1), joint.sum(0))
    assert epig(Predictive(probs, w), Predictive(target, w)).item() == pytest.approx(float((joint * np.log(joint / indep)).sum()), abs=1e-12)


def test_epig_is_zero_when_samples_agree_and_never_above_bald():
    same = dirichlet((1, 9, 5), 2).expand(6, 9, 5)
    assert epig(same, dirichlet((1, 4, 5), 3).expand(6, 4, 5)).abs().max() < 1e-12
    certain = torch.nn.functional.one_hot(torch.tensor([[0, 1], [1, 0]]), 2).double()  # [S=2, N=2, C=2], 0 log 0
    assert torch.allclose(epig(certain, certain), torch.full((2,), math.log(2.0), dtype=torch.float64))
    for seed in range(5):  # data processing: I[y; y*] <= I[y; θ], for the estimators too
        probs, target = dirichlet((8, 40, 3), 10 + seed, 0.3), dirichlet((8, 25, 3), 20 + seed, 0.3)
        scores = epig(probs, target)
        assert (scores >= 0).all() and (scores <= bald(probs) + 1e-12).all()


def test_mismatched_inputs_are_refused():
    probs = dirichlet((4, 3, 2), 0)
    with pytest.raises(ShapeError, match="same S=4"):
        epig(probs, dirichlet((5, 3, 2), 1))
    with pytest.raises(ShapeError, match="C=2 classes"):
        epig(probs, dirichlet((4, 3, 3), 1))
    with pytest.raises(ShapeError, match="M=0"):
        epig(probs, probs[:, :0])
    with pytest.raises(ShapeError, match="scores"):
        resolve_acquisition("epig").select(probs, 1)


def test_power_epig_draws_each_candidate_in_proportion_to_its_score():
    scores = epig(dirichlet((6, 5, 3), 4, 0.4), dirichlet((6, 8, 3), 5, 0.4)).float()
    acq = resolve_acquisition("power-epig")
    assert acq.needs_targets and resolve_acquisition("epig").needs_targets and not resolve_acquisition("bald").needs_targets
    trials = 4000
    counts = np.bincount([int(acq.select(scores, 1, torch.Generator().manual_seed(t)).indices) for t in range(trials)], minlength=5)
    p = (scores / scores.sum()).double().numpy()
    band = 4 * np.sqrt(p * (1 - p) / trials)
    assert np.all(np.abs(counts / trials - p) <= band), (counts / trials, p)
    assert torch.equal(resolve_acquisition("epig").select(scores, 2).indices, scores.topk(2).indices)


# ---- regression ------------------------------------------------------------------------------------
def test_gaussian_closed_form_against_monte_carlo():
    from scipy.stats import multivariate_normal, norm

    var, target_var, cross = 1.3, 0.8, 0.7  # a hand-built joint covariance of (y, y*)
    cov = np.array([[var, cross], [cross, target_var]])
    closed = -0.5 * math.log(1 - cross**2 / (var * target_var))
    got = epig_from_covariance(torch.tensor([[cross]]), torch.tensor([var]), torch.tensor([target_var]))
    assert got.item() == pytest.approx(closed, rel=1e-6)
    draws = np.random.default_rng(0).multivariate_normal([0.0, 0.0], cov, size=200_000)
    marginals = norm(0, math.sqrt(var)).logpdf(draws[:, 0]) + norm(0, math.sqrt(target_var)).logpdf(draws[:, 1])
    ratio = multivariate_normal([0, 0], cov).logpdf(draws) - marginals  # log p(y, y*) / (p(y) p(y*))
    assert ratio.mean() == pytest.approx(closed, abs=4 * ratio.std() / math.sqrt(len(ratio)))
    # joint samples of f ~ N(0, [[1, .8], [.8, 1]]) with noise .25: ρ = .8 / 1.25
    f = torch.from_numpy(np.random.default_rng(1).multivariate_normal([0, 0], [[1, 0.8], [0.8, 1]], size=100_000))
    pred = GaussianPredictive(f[:, :1], torch.full((100_000, 1), 0.25, dtype=torch.float64))
    target = GaussianPredictive(f[:, 1:], torch.full((100_000, 1), 0.25, dtype=torch.float64))
    assert epig_gaussian(pred, target).item() == pytest.approx(-0.5 * math.log(1 - 0.64**2), abs=0.01)
    assert torch.equal(epig(pred, target), epig_gaussian(pred, target))
    g = torch.Generator().manual_seed(2)
    mean, var = torch.randn(20, 24, generator=g, dtype=torch.float64), torch.rand(20, 24, generator=g, dtype=torch.float64)
    pred, target = GaussianPredictive(mean[:, :13], var[:, :13]), GaussianPredictive(mean[:, 13:], var[:, 13:])
    whole = epig_gaussian(pred, target)
    torch.testing.assert_close(epig_gaussian(pred, target, candidate_chunk=4, target_chunk=3), whole, atol=1e-12, rtol=0)
    centred = mean - mean.mean(0)  # the moment-matched Gaussian, written out
    cov = centred.T @ centred / 20 + torch.diag(var.mean(0))
    rho2 = cov[:13, 13:] ** 2 / (cov.diagonal()[:13, None] * cov.diagonal()[None, 13:])
    torch.testing.assert_close(whole, (-0.5 * torch.log(1 - rho2)).mean(1), atol=1e-12, rtol=0)


def fitted_gp():
    from activebayes.posteriors.gp import GaussianProcess

    x = torch.linspace(0.0, 0.3, 6).unsqueeze(-1)
    return GaussianProcess(lengthscale=0.2, outputscale=1.0, noise=0.01, device="cpu").fit(x, torch.sin(6 * x[:, 0]))


def test_gp_epig_prefers_a_candidate_near_the_targets_to_a_far_outlier():
    gp = fitted_gp()
    targets = torch.tensor([[0.7], [0.75], [0.8]])
    candidates = torch.tensor([[0.75], [3.0]])
    joint = gp_joint(gp, candidates, targets, target_chunk=2)
    _, var = gp.predict_mean_var(candidates, observation_noise=True)
    torch.testing.assert_close(joint.var.float(), var, rtol=1e-4, atol=1e-6)
    scores = TargetPosterior(gp, targets).predict(candidates)
    near, far = paired_epig(scores).tolist()
    assert near > 0.5 and far < 1e-6 and near > far
    with pytest.raises(ConfigError, match="quadrature nodes"):  # the GP's predict has marginals only
        epig(gp.predict(candidates), gp.predict(targets))


# ---- pools: one predict call for candidates and targets ---------------------------------------------
class FreshDraws:
    """Logistic regression with S weight samples drawn afresh on EVERY predict call (unseeded):
    only one call on [x; x*] shares θ_s between candidates and targets."""

    def __init__(self, n_samples: int = 16) -> None:
        self.n_samples, self.calls = n_samples, 0

    def predict(self, x: torch.Tensor, n_samples: int | None = None) -> Predictive:
        self.calls += 1
        w = torch.randn(n_samples or self.n_samples, x.shape[1], 3) * 2.0
        return Predictive(torch.softmax(torch.einsum("nd,sdc->snc", x, w), -1))


def test_target_posterior_predicts_candidates_and_targets_in_one_call():
    from activebayes.scoring import score_pool

    torch.manual_seed(0)
    pool, targets = torch.randn(10, 2), torch.randn(4, 2)
    posterior = FreshDraws()
    scores = score_pool(TargetPosterior(posterior, targets), pool, paired_epig, batch_size=3, device="cpu").scores
    assert scores.shape == (10,) and posterior.calls == 4 and (scores > 0).all()
    torch.manual_seed(1)
    pred = posterior.predict(torch.cat([pool[:3], targets]))
    torch.manual_seed(1)
    first = paired_epig(TargetPosterior(posterior, targets).predict(pool[:3]))
    torch.testing.assert_close(first, epig(pred.candidates(slice(0, 3)), pred.candidates(slice(3, None))))


def test_posteriors_without_joint_samples_are_refused():
    from activebayes.nets import mlp
    from activebayes.posteriors.mc_dropout import MCDropout

    with pytest.raises(ConfigError, match="masks='independent'"):
        TargetPosterior(MCDropout(mlp(2, 2, hidden=(8,)), masks="independent"), torch.zeros(3, 2))
    with pytest.raises(ShapeError, match="target inputs"):
        TargetPosterior(FreshDraws(), torch.zeros(0, 2))


# ---- the loop and the CLI ----------------------------------------------------------------------------
def blobs_project(store, folder: Path, name: str = "blobs") -> np.ndarray:
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=200, n_features=5, n_informative=3, n_classes=3, random_state=0)
    np.savez(folder / "blobs.npz", x=x.astype(np.float32), y=y)
    store.create_project(name, task="classification", classes=range(3), data_path=folder / "blobs.npz")
    store.add_items(name, rows=np.arange(200))
    return y


def test_loop_runs_epig_rounds_reproducibly(tmp_path):
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle
    from activebayes.store import PoolStore
    from test_loop import TinySoftmax

    queried = []
    for run_index, targets in enumerate((None, None, torch.randn(7, 5))):
        with PoolStore(f"sqlite:///{tmp_path / f'{run_index}.db'}") as store:
            truth = blobs_project(store, tmp_path)
            loop = ActiveLearningLoop(lambda seed: TinySoftmax(n_classes=3, seed=seed), "epig", store, "blobs",
                                      SimulatedOracle(truth), batch_size=4, seed=11, device="cpu", score_batch_size=64,
                                      epig_targets=50, target_x=targets)  # fmt: skip
            results = loop.run(3)
            assert [r.status for r in results] == ["done"] * 3 and store.count_labelled("blobs") == 12
            rounds = store.rounds("blobs")
            assert rounds[1].acquisition == "epig"
            expected = {"epig_targets": 50, "epig_target_source": "pool"} if targets is None else {"epig_targets": 7, "epig_target_source": "given"}
            assert expected.items() <= rounds[1].acquisition_settings.items()
            assert all(s > 0 for r in results[1:] for s in r.scores)  # rounds 2 and 3 scored by EPIG
            queried.append([r.queried for r in results])
    assert queried[0] == queried[1]  # the same seed: the same queries
    assert queried[2][0] == queried[0][0] and queried[2][1:] != queried[0][1:]  # other targets, other picks


def test_cli_round_with_epig_and_target_files(cli_db):
    from cli_checks import assert_mistake, ok, run
    from test_cli import write_pool_csv

    write_pool_csv(Path("pool.csv"))
    ok("init", "--name", "blobs", "--classes", "a,b,c")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.25")
    rows = Path("pool.csv").read_text().splitlines()
    Path("targets.csv").write_text("\n".join([rows[0], *rows[1:9]]) + "\n")  # the pool's columns, label and key too
    Path("keys.txt").write_text("item-001\nitem-002\n")
    Path("bad.txt").write_text("item-001\nno-such-item\n")
    tiny = ("--oracle", "truth", "--k", "3", "--epochs", "2", "--samples", "3", "--device", "cpu")
    for extra in ((), ("--acquisition", "epig"), ("--acquisition", "power-epig", "--target", "targets.csv"),
                  ("--acquisition", "epig", "--target", "keys.txt")):  # fmt: skip
        out = json.loads(ok("--json", "round", *tiny, *extra).stdout)
        assert out["status"] == "done" and len(out["queries"]) == 3
    assert_mistake(run("round", *tiny, "--acquisition", "epig", "--target", "bad.txt"), "--target", "no-such-item")
    assert_mistake(run("round", *tiny, "--acquisition", "epig", "--target", "nothing.csv"), "--target", "nothing.csv")
    assert_mistake(run("round", *tiny, "--acquisition", "bald", "--target", "keys.txt"), "--target", "bald")
    assert_mistake(run("round", *tiny, "--acquisition", "epig", "--option", "masks=independent"), "masks='independent'")
