"""The CUDA lane: the tensor code paths on every device of the `device` fixture.

Each test runs once on "cpu" and once on "cuda" (marked `cuda`; `./dev.sh test -m cuda` runs that
lane on a GPU machine, and without a GPU those variants are reported SKIPPED, "no CUDA device").

Covered on each device: every posterior (fit there, predict, predict_proba / predict_mean_var,
outputs on the device) and `to(device)`, `score_pool`, `batch_bald`, one ActiveLearningLoop round,
a study miniature and a memory-span design session.

Cross-device checks never compare two trainings (their floating-point paths differ, so the nets
do): a posterior fitted ONCE on the CPU is moved with `to(device)` and its predictions there are
compared with the same posterior's CPU predictions. Selections (argmax, top-k, greedy batches)
are compared through their scores, never through indices that a rounding-level near-tie could
flip; BatchBALD runs in float64 on probabilities whose gaps are far above rounding.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from activebayes.nets import mlp
from activebayes.posteriors import MFVI, SWAG, DeepEnsemble, GaussianProcess, Laplace, MCDropout, SnapshotEnsemble
from activebayes.posteriors.batch_ensemble import BatchEnsemble
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.training import TrainConfig

# Float32 networks give ~1e-6 differences between CPU and CUDA kernels; 1e-4 on probabilities and
# scores is far above that and far below any real disagreement.
ATOL = 1e-4

_NET = mlp(2, 2, hidden=(32,), dropout=0.2)
_TRAIN = {"train": TrainConfig(epochs=30, lr=1e-2, batch_size=50)}

# name -> factory(device) of an unfitted classifier for the two moons (200 points, ~1 s to fit)
CLASSIFIERS = {
    "mc-dropout": lambda device: MCDropout(_NET, n_samples=8, **_TRAIN, seed=0, device=device),
    "deep-ensemble": lambda device: DeepEnsemble(_NET, n_samples=3, **_TRAIN, seed=0, device=device),
    "snapshot-ensemble": lambda device: SnapshotEnsemble(
        _NET, n_samples=3, epochs_per_cycle=10, lr_max=2e-2, train=TrainConfig(batch_size=50), seed=0, device=device
    ),
    # hessian="kron" and prior_precision="marglik" are the defaults
    "laplace-kron-marglik": lambda device: Laplace(_NET, n_samples=8, **_TRAIN, seed=0, device=device),
    "laplace-full": lambda device: Laplace(
        _NET, hessian="full", prior_precision=1.0, n_samples=8, **_TRAIN, seed=0, device=device
    ),
    # whole-network Laplace (the linearised predictive's J Σ Jᵀ on the device), and online marglik training
    "laplace-all-kron": lambda device: Laplace(_NET, subset="all", prior_precision=1.0, n_samples=8, **_TRAIN, seed=0, device=device),
    "laplace-all-diag": lambda device: Laplace(_NET, subset="all", hessian="diag", prior_precision=1.0, n_samples=8, **_TRAIN,
                                               seed=0, device=device),
    "laplace-all-full": lambda device: Laplace(_NET, subset="all", hessian="full", prior_precision=1.0, n_samples=8, **_TRAIN,
                                               seed=0, device=device),
    "laplace-all-online": lambda device: Laplace(_NET, subset="all", prior_precision="online", n_samples=8, **_TRAIN, seed=0,
                                                 device=device),
    "swag": lambda device: SWAG(_NET, rank=5, n_snapshots=10, snapshot_steps=None, swa_lr=0.01, n_samples=8, **_TRAIN, seed=0, device=device),
    "batch-ensemble": lambda device: BatchEnsemble(_NET, n_members=3, **_TRAIN, seed=0, device=device),
    "batch-ensemble-rank1": lambda device: BatchEnsemble(_NET, n_members=3, rank1="gaussian", n_samples=8, **_TRAIN, seed=0, device=device),
    "mfvi": lambda device: MFVI(_NET, init_std=0.01, kl_weight=0.001, n_samples=8, **_TRAIN, seed=0, device=device),
    # the sampling-free predictive: moment propagation, the probit, logit draws from a CPU generator
    "mfvi-analytic": lambda device: MFVI(_NET, init_std=0.01, kl_weight=0.001, n_samples=8, **_TRAIN, seed=0,
                                         device=device, predictive="analytic"),
    "laplace-analytic": lambda device: Laplace(_NET, hessian="diag", prior_precision=100.0, n_samples=8, **_TRAIN, seed=0,
                                               device=device, predictive="analytic"),
    "swag-analytic": lambda device: SWAG(_NET, rank=5, n_snapshots=10, snapshot_steps=None, swa_lr=0.01, n_samples=8, **_TRAIN, seed=0,
                                         device=device, predictive="analytic"),
}
POSTERIORS = [*CLASSIFIERS, "gp"]

_CPU_FITS: dict[str, object] = {}


def on(tensor: torch.Tensor, device: str) -> bool:
    return tensor.device.type == device


def regression_data() -> tuple[torch.Tensor, torch.Tensor]:
    """1-D regression: x [40, 1] on [-3, 3], y = sin(x) + N(0, 0.1²), seeded."""
    gen = torch.Generator().manual_seed(0)
    x = torch.linspace(-3, 3, 40).unsqueeze(-1)
    return x, torch.sin(x[:, 0]) + 0.1 * torch.randn(40, generator=gen)


def make_gp(device: str) -> GaussianProcess:
    return GaussianProcess(training_iters=30, seed=0, device=device)


def cpu_fit(name: str, moons) -> object:
    """A deep copy of the posterior `name` fitted once per session on the CPU (moons, or the 1-D
    regression for "gp"): each test may move or mutate its copy."""
    if name not in _CPU_FITS:
        if name == "gp":
            _CPU_FITS[name] = make_gp("cpu").fit(*regression_data())
        else:
            _CPU_FITS[name] = CLASSIFIERS[name]("cpu").fit(*moons)
    return copy.deepcopy(_CPU_FITS[name])


def fit_on(name: str, device: str, moons) -> object:
    """The posterior fitted on `device` (the cached CPU fit on the CPU)."""
    if device == "cpu":
        return cpu_fit(name, moons)
    if name == "gp":
        return make_gp(device).fit(*regression_data())
    return CLASSIFIERS[name](device).fit(*moons)


# ---------------------------------------------------------------------------- posteriors
@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_classifier_fits_and_predicts_on_device(name, device, moons):
    x, y = moons
    post = fit_on(name, device, moons)
    pred = post.predict(x[:50])
    assert isinstance(pred, Predictive) and on(pred.probs, device)
    assert pred.probs.shape[1:] == (50, 2) and pred.probs.shape[0] >= 2
    assert torch.allclose(pred.probs.sum(-1), torch.ones((), device=device), atol=1e-5)
    two = post.predict(x[:5].to(device), n_samples=2)  # inputs already on the device are fine too
    assert on(two.probs, device) and two.probs.shape == (2, 5, 2)
    proba = post.predict_proba(x)
    assert on(proba, device) and proba.shape == (200, 2)
    accuracy = float((proba.argmax(-1).cpu() == y).float().mean())
    assert accuracy > 0.8, f"{name} on {device}: accuracy {accuracy:.3f} on its own training data"


@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_classifier_moved_between_devices_predicts_the_same(name, device, moons):
    """Fit on the CPU, `to(device)`, predict there: the same posterior's predictions, moved."""
    x = moons[0][::4]  # 50 points
    post = cpu_fit(name, moons)
    ref_probs, ref_proba = post.predict(x).probs, post.predict_proba(x)
    assert post.to(device) is post
    pred, proba = post.predict(x), post.predict_proba(x.to(device))
    assert on(pred.probs, device) and on(proba, device)
    torch.testing.assert_close(pred.probs.cpu(), ref_probs, atol=ATOL, rtol=0)
    torch.testing.assert_close(proba.cpu(), ref_proba, atol=ATOL, rtol=0)
    assert post.to("cpu") is post
    back = post.predict(x).probs
    assert on(back, "cpu")
    torch.testing.assert_close(back, ref_probs, atol=1e-6, rtol=0)


def test_gp_fits_and_predicts_on_device(device):
    x, y = regression_data()
    gp = fit_on("gp", device, None)
    x_new = torch.linspace(-2.5, 2.5, 30).unsqueeze(-1)
    pred = gp.predict(x_new, n_samples=8)
    assert isinstance(pred, GaussianPredictive)
    assert all(on(t, device) for t in (pred.mean, pred.var, pred.weights))
    assert pred.mean.shape == (8, 30) and pred.weights.shape == (8,)
    mean, var = gp.predict_mean_var(x_new.to(device))
    assert on(mean, device) and on(var, device) and mean.shape == var.shape == (30,)
    assert bool((var >= 0).all())
    assert float((mean.cpu() - torch.sin(x_new[:, 0])).abs().max()) < 0.3


def test_gp_moved_between_devices_predicts_the_same(device):
    x_new = torch.linspace(-2.5, 2.5, 30).unsqueeze(-1)
    gp = cpu_fit("gp", None)
    ref_mean, ref_var = gp.predict_mean_var(x_new)
    ref_pred = gp.predict(x_new, n_samples=8)
    assert gp.to(device) is gp
    mean, var = gp.predict_mean_var(x_new)
    pred = gp.predict(x_new, n_samples=8)
    assert on(mean, device) and on(var, device) and on(pred.mean, device)
    # float64 algebra inside: the devices agree far below this
    torch.testing.assert_close(mean.cpu(), ref_mean, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(var.cpu(), ref_var, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(pred.mean.cpu(), ref_pred.mean, atol=1e-5, rtol=1e-5)
    assert gp.to("cpu") is gp and on(gp.predict_mean_var(x_new)[0], "cpu")


# ---------------------------------------------------------------------------- scoring
@pytest.mark.parametrize("name", POSTERIORS)
def test_score_pool_on_device_matches_the_cpu(name, device, moons):
    from activebayes.acquisition import bald
    from activebayes.scoring import score_pool

    pool = regression_data()[0] if name == "gp" else moons[0]
    ref = score_pool(cpu_fit(name, moons), pool, bald, batch_size=64, device="cpu")
    post = cpu_fit(name, moons)
    result = score_pool(post, pool, bald, batch_size=64, device=device)
    assert on(result.scores, "cpu") and on(result.indices, "cpu")  # PoolScores live on the CPU
    torch.testing.assert_close(result.scores, ref.scores, atol=ATOL, rtol=0)
    # score_pool moved the posterior to the device (through its `to`)
    probe = post.predict(pool[:3], n_samples=2)
    assert on(probe.mean if isinstance(probe, GaussianPredictive) else probe.probs, device)
    # top-k: compared by scores, which a near-tie cannot reorder beyond the tolerance
    best = score_pool(post, pool, bald, batch_size=64, device=device, top_k=10)
    assert len(best) == 10
    torch.testing.assert_close(best.scores, ref.scores[best.indices], atol=ATOL, rtol=0)
    torch.testing.assert_close(best.scores, ref.scores.sort(descending=True).values[:10], atol=ATOL, rtol=0)


# ---------------------------------------------------------------------------- batch_bald
def _dirichlet_probs() -> torch.Tensor:
    """probs [S=10, N=60, C=3] float64 from a seeded Dirichlet per (sample, candidate)."""
    gen = torch.Generator().manual_seed(1)
    logits = 2.0 * torch.randn(10, 60, 3, generator=gen, dtype=torch.float64)
    return torch.softmax(logits, -1)


@pytest.mark.parametrize("regime", ["exact", "sampled"])
def test_batch_bald_on_device_matches_the_cpu(regime, device):
    from activebayes.acquisition import batch_bald

    probs = _dirichlet_probs()
    # sampled: configurations drawn from a CPU generator, the same draws on either device
    options = {} if regime == "exact" else {"max_joint_configs": 9, "num_samples": 400}

    def run(on_device: str):
        gen = torch.Generator().manual_seed(7)
        return batch_bald(Predictive(probs.to(on_device)), 6, generator=gen, **options)

    ref, got = run("cpu"), run(device)
    assert on(got.indices, device) and on(got.scores, device)
    assert got.indices.tolist() == ref.indices.tolist()
    torch.testing.assert_close(got.scores.cpu(), ref.scores, atol=1e-9, rtol=0)


def test_batch_bald_on_a_posterior_on_device(device, moons):
    from activebayes.acquisition import batch_bald, joint_mutual_information

    post = cpu_fit("mc-dropout", moons).to(device)
    pred = post.predict(moons[0][:80].to(device))
    selection = batch_bald(pred, 5)
    assert on(selection.indices, device) and on(selection.scores, device)
    assert len(set(selection.indices.tolist())) == 5
    total = joint_mutual_information(pred, selection.indices)
    assert on(total, device)
    assert float(total) == pytest.approx(float(selection.scores.double().sum()), abs=1e-4)


# ---------------------------------------------------------------------------- the loop
def _digits_project(store, folder: Path, pool: int = 200, test: int = 60) -> np.ndarray:
    """A digits project: rows 0..pool-1 the pool, the next `test` rows the labelled test split."""
    from activebayes.data import write_digits

    path = folder / "digits.npz"
    write_digits(path)
    store.create_project("digits", task="classification", classes=range(10), data_path=path)
    store.add_items("digits", rows=np.arange(pool))
    store.add_items("digits", rows=np.arange(pool, pool + test), split="test")
    truth = np.load(path)["y"]
    store.record_observations(
        "digits", [(str(r), int(truth[r])) for r in range(pool, pool + test)], who="truth", source="import"
    )
    return truth


@pytest.mark.parametrize("acquisition", ["bald", "batch-bald"])
def test_loop_round_on_device(acquisition, device, tmp_path):
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle
    from activebayes.store import PoolStore

    def factory(seed: int) -> MCDropout:
        return MCDropout(mlp(64, 10, hidden=(32,)), n_samples=6, train=TrainConfig(epochs=5), seed=seed, device=device)

    with PoolStore(f"sqlite:///{tmp_path / 'loop.db'}") as store:
        truth = _digits_project(store, tmp_path)
        loop = ActiveLearningLoop(
            factory, acquisition, store, "digits", SimulatedOracle(truth), batch_size=5, seed=0, device=device,
            score_batch_size=64, prefilter_size=40,
        )  # fmt: skip
        cold, fitted = loop.run(2)  # round 1 queries at random; round 2 fits, scores and selects
        assert cold.status == fitted.status == "done"
        assert fitted.labelled == 5 and len(fitted.queried) == 5
        assert not set(cold.queried) & set(fitted.queried)
        assert 0.0 <= fitted.metrics["accuracy"] <= 1.0 and fitted.metrics["n_test"] == 60
        assert all(np.isfinite(fitted.scores))
        assert store.count_labelled("digits") == 10


# ---------------------------------------------------------------------------- the study
def test_study_miniature_on_device(device, tmp_path):
    from activebayes.study import StudyConfig, run_study

    config = StudyConfig.from_dict({
        "name": "devices-tiny", "seed": 0, "repeats": 1, "acquisitions": ["bald"],
        "data": {"dataset": "digits", "pool_size": 120},
        "loop": {"initial": 20, "batch_size": 10, "max_labels": 30, "score_batch_size": 64},
        "model": {"posterior": "mc-dropout", "hidden": [32], "epochs": 5, "n_samples": 4},
    })  # fmt: skip
    result = run_study(config, tmp_path / "out", device=device)
    assert result.rounds_run == 2
    assert [p["labels"] for p in result.curves["bald"]] == [20, 30]
    assert all(0.0 <= p["mean"] <= 1.0 for p in result.curves["bald"])
    assert json.loads(result.results.read_text())["curves"] == result.curves


# ---------------------------------------------------------------------------- design
DESIGNS = torch.arange(1.0, 15.0, dtype=torch.float64)


def _replay_on_cpu(trace, make_posterior, target: str = "all") -> None:
    """Check a device session against the CPU trial by trial: each chosen design's EIG is the CPU
    maximum (up to rounding, so a near-tie may go either way), and the CPU posterior updated with
    the same (design, outcome) pairs agrees with the device one after every trial."""
    from activebayes.design import EIGTable

    cpu = make_posterior("cpu")
    table = EIGTable(cpu, DESIGNS)
    for trial in trace.trials:
        eig = table.eig(cpu.weights, target=target)
        d = int(torch.nonzero(DESIGNS == trial.design)[0, 0])
        assert trial.eig == pytest.approx(float(eig[d]), abs=1e-9)
        assert float(eig[d]) >= float(eig.max()) - 1e-9
        table.update(cpu, d, trial.outcome)
        assert trial.mean == pytest.approx(cpu.mean, abs=1e-9) and trial.sd == pytest.approx(cpu.sd, abs=1e-9)


def test_design_session_on_device(device):
    from activebayes.design import GridPosterior, MemorySpanModel, SimulatedParticipant, run_design_session

    # Pyro's working-memory setting: prior N(7, 2²), the participant recalls iff length < 6
    def fixed(on_device: str) -> GridPosterior:
        return GridPosterior(MemorySpanModel(), n_theta=801, device=on_device)

    post = fixed(device)
    assert on(post.weights, device) and on(post.theta, device)
    trace = run_design_session(post, DESIGNS, SimulatedParticipant(6.0, deterministic=True), 10, seed=0)
    assert on(post.log_weights, device) and len(trace.trials) == 10
    assert [t.design for t in trace.trials[:3]] == [7.0, 6.0, 5.0]
    assert 5.4 <= post.mean <= 5.8
    _replay_on_cpu(trace, fixed)

    # the slope learnt on a joint (θ, s) grid, the EIG about θ only, a noisy participant
    def joint(on_device: str) -> GridPosterior:
        return GridPosterior(MemorySpanModel(), learn_slope=True, n_theta=161, n_slope=16, device=on_device)

    post = joint(device)
    assert on(post.slope, device)
    trace = run_design_session(post, DESIGNS, SimulatedParticipant(6.5, slope=2.0, seed=3), 12, target="theta", seed=0)
    assert len(trace.trials) == 12 and on(post.weights, device)
    _replay_on_cpu(trace, joint, target="theta")
    random = run_design_session(joint(device), DESIGNS, SimulatedParticipant(6.5, seed=1), 5, "random", seed=5)
    assert len(random.trials) == 5


def test_design_eig_helpers_on_device(device):
    from activebayes.design import GridPosterior, MemorySpanModel, exact_eig, nmc_eig
    from activebayes.design.optimize import best_design

    model = MemorySpanModel()
    cpu, post = GridPosterior(model, n_theta=201), GridPosterior(model, n_theta=201, device=device)
    for p in (cpu, post):
        p.update(8.0, 0)
    exact = exact_eig(post, DESIGNS)
    assert on(exact, device)
    torch.testing.assert_close(exact.cpu(), exact_eig(cpu, DESIGNS), atol=1e-9, rtol=0)
    # nested Monte Carlo from the grid: CPU generators, so the same draws on either device
    nmc = nmc_eig(model, DESIGNS, post, n_outer=200, n_inner=20, seed=0)
    assert on(nmc, device)
    torch.testing.assert_close(nmc.cpu(), nmc_eig(model, DESIGNS, cpu, n_outer=200, n_inner=20, seed=0), atol=1e-9, rtol=0)
    x, value = best_design(post, DESIGNS)
    assert on(x, device)
    assert value == pytest.approx(float(exact.max()), abs=1e-9)
