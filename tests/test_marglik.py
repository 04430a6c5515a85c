"""Online marginal-likelihood training (`activebayes.marglik`) against laplace-torch 0.3's
`marglik_training`, and its use by the posteriors.

Equality with laplace-torch: given the same network, the same mini-batches in the same order and
the same schedule, our training is the same computation, so in float64 the whole trajectory (every
hyper-step's evidence, the learnt precisions, σ and the final weights) agrees to rounding, and the
final evidence to far better than 1e-4. One exception, tested apart: with a KFAC Hessian and a
learnt σ (regression), laplace-torch's evidence has the right value but a wrong gradient in σ
(`KronDecomposed.__mul__` scales by `math.pow(σ⁻², ½)`, which turns σ into a constant and drops
the log-det term from d/dσ), so its σ, and then its weights, follow another path. There we test
that our gradient is the finite difference of the evidence, that laplace-torch's is not, and that
the evidence of the same trained network at the same learnt (δ, σ) is equal; the trajectory itself
is compared with σ fixed (laplace-torch's fix_sigma_noise).
"""

import copy
import warnings

import pytest
import torch
from torch import nn

from activebayes.errors import ConfigError
from activebayes.marglik import MarglikConfig, log_evidence, train_marglik
from activebayes.posteriors._kfac import fit_curvature, log_marginal_likelihood
from activebayes.posteriors.laplace import Laplace
from activebayes.training import TrainConfig, epoch_steps, train

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
F64 = torch.float64


class TrainOrder(torch.utils.data.Sampler):
    """The mini-batches `activebayes.training.train` draws with `seed` (its item order, one seeded
    draw for the torch seed, then one permutation per epoch), epoch after epoch; the passes of
    laplace-torch's Laplace fits (a peek and a full pass after each hyper-step epoch, and at the
    end) get all items without advancing it."""

    def __init__(self, n: int, config: TrainConfig, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        order = torch.randperm(n, generator=g)
        torch.randint(0, 2**62, (1,), generator=g)
        steps, schedule = epoch_steps(n, config), config.marglik
        self.passes: list[list[list[int]]] = []
        for epoch in range(1, config.epochs + 1):
            self.passes.append([order[b].tolist() for b in torch.randperm(n, generator=g).tensor_split(steps)])
            if epoch % schedule.frequency == 0 and epoch >= schedule.burn_in:
                self.passes += [[list(range(n))]] * 2
        self.n, self.count, self.steps = n, 0, steps

    def __iter__(self):
        batches = self.passes[self.count] if self.count < len(self.passes) else [list(range(self.n))]
        self.count += 1
        return iter(batches)

    def __len__(self) -> int:
        return self.steps


def problem(likelihood: str, n: int = 48):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g, dtype=F64)
    if likelihood == "regression":
        y = torch.sin(2 * x[:, 0]) + 0.1 * torch.randn(n, generator=g, dtype=F64)
    else:
        y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 0.5).long()
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(4, 10), nn.Tanh(), nn.Linear(10, 1 if likelihood == "regression" else 3)).to(F64)
    return net, x, y


def both(likelihood, hessian, *, epochs=6, frequency=1, burn_in=0, steps=10, learn_noise=True):
    """(our MarglikFit, laplace-torch's (la, model, margliks)) on the same problem and batches."""
    marglik_training = pytest.importorskip("laplace").marglik_training
    net, x, y = problem(likelihood)
    config = TrainConfig(epochs=epochs, lr=1e-2, batch_size=16, marglik=MarglikConfig(
        hessian=hessian, frequency=frequency, burn_in=burn_in, hyper_steps=steps, learn_noise=learn_noise))  # fmt: skip
    ours = train_marglik(copy.deepcopy(net), x, y, config, seed=3, device="cpu")
    targets = y.unsqueeze(1) if likelihood == "regression" else y
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, targets), batch_sampler=TrainOrder(len(x), config, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        la, model, margliks, _ = marglik_training(copy.deepcopy(net), loader, likelihood=likelihood, hessian_structure=hessian,
                                                  n_epochs=epochs, optimizer_kwargs={"lr": 1e-2}, marglik_frequency=frequency,
                                                  n_epochs_burnin=burn_in, n_hypersteps=steps, fix_sigma_noise=not learn_noise)  # fmt: skip
    return ours, (la, model, margliks)


@pytest.mark.parametrize(
    "likelihood, hessian, schedule",
    [("classification", "kron", {}), ("classification", "diag", {}), ("regression", "diag", {}),
     ("regression", "kron", {"learn_noise": False}), ("classification", "full", {}), ("regression", "full", {}),
     ("classification", "kron", {"epochs": 10, "frequency": 2, "burn_in": 3, "steps": 5})],
)  # fmt: skip
def test_trajectory_equals_laplace_torch(likelihood, hessian, schedule):
    """"full": laplace-torch's FullLaplace (a P x P GGN) against our dual form (`posteriors._gram`)."""
    ours, (la, model, margliks) = both(likelihood, hessian, **schedule)
    assert len(ours.evidences) == len(margliks)
    torch.testing.assert_close(torch.tensor(ours.evidences, dtype=F64), -torch.tensor(margliks, dtype=F64), rtol=1e-10, atol=0)
    for mine, theirs in zip(ours.model.parameters(), model.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(ours.prior_precision, la.prior_precision.to(F64).expand(len(ours.prior_precision)), rtol=1e-9, atol=0)
    if likelihood == "regression":
        assert ours.sigma_noise == pytest.approx(float(la.sigma_noise), rel=1e-9)
    assert ours.log_evidence == pytest.approx(float(la.log_marginal_likelihood()), rel=1e-9)


def test_kron_regression_noise_gradient_and_evidence_of_the_trained_network():
    laplace = pytest.importorskip("laplace")
    ours, _ = both("regression", "kron")
    net, x, y = ours.model, *problem("regression")[1:]
    ref = laplace.Laplace(net, "regression", subset_of_weights="all", hessian_structure="kron")
    ref.fit(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y.unsqueeze(1)), batch_size=16))
    curvature = fit_curvature(net, x, y, "kron", "gaussian")

    def evidences(log_sigma):
        return (log_marginal_likelihood(curvature, ours.prior_precision, torch.exp(log_sigma)),
                ref.log_marginal_likelihood(ours.prior_precision.clone(), torch.exp(log_sigma)))

    point = torch.tensor(float(torch.log(torch.tensor(ours.sigma_noise))), dtype=F64)
    ours_at, theirs_at = point.clone().requires_grad_(), point.clone().requires_grad_()
    mine = torch.autograd.grad(evidences(ours_at)[0], ours_at)[0]
    theirs = torch.autograd.grad(evidences(theirs_at)[1], theirs_at)[0]
    eps = 1e-6
    finite = (evidences(point + eps)[0] - evidences(point - eps)[0]) / (2 * eps)
    assert float(mine) == pytest.approx(float(finite), rel=1e-6)
    assert abs(float(theirs) - float(finite)) > 1e-3 * abs(float(finite))  # laplace-torch drops the log-det term
    value, reference = evidences(point)
    assert float(value) == pytest.approx(float(reference), rel=1e-10)
    assert float(value) == pytest.approx(ours.log_evidence, rel=1e-8)  # σ went through a float and a log


def test_train_with_marglik_config_is_train_marglik():
    net, x, y = problem("classification")
    config = TrainConfig(epochs=4, lr=1e-2, batch_size=16, weight_decay=0.3, marglik=MarglikConfig(hyper_steps=3))
    trained = train(copy.deepcopy(net), x, y, config, seed=5, device="cpu")
    fit = train_marglik(copy.deepcopy(net), x, y, TrainConfig(epochs=4, lr=1e-2, batch_size=16, marglik=MarglikConfig(hyper_steps=3)),
                        seed=5, device="cpu")  # weight decay is not applied: the learnt prior replaces it
    for a, b in zip(trained.parameters(), fit.model.parameters()):
        assert torch.equal(a, b)
    assert not trained.training and fit.best_epoch is not None and len(fit.losses) == 4


def test_burn_in_without_hyper_steps_keeps_the_initial_prior():
    net, x, y = problem("classification")
    fit = train_marglik(net, x, y, TrainConfig(epochs=2, batch_size=16, marglik=MarglikConfig(burn_in=5, prior_precision_init=3.0)),
                        seed=0, device="cpu")  # fmt: skip
    assert fit.evidences == [] and fit.log_evidence is None and fit.best_epoch is None
    torch.testing.assert_close(fit.prior_precision, torch.full((4,), 3.0, dtype=F64))


def test_laplace_online_uses_the_learnt_precisions():
    net, x, y = problem("classification")
    train_config = TrainConfig(epochs=5, lr=1e-2, batch_size=16)
    la = Laplace(model_fn=lambda: copy.deepcopy(net), subset="all", prior_precision="online", train=train_config,
                 seed=2, device="cpu").fit(x, y)  # fmt: skip
    assert la.marglik_ is not None
    torch.testing.assert_close(la.prior_precision_, la.marglik_.prior_precision)
    assert float(la.log_marginal_likelihood()) == pytest.approx(la.marglik_.log_evidence, rel=1e-9)
    # the same with a train config that carries marglik, and prior_precision="marglik" (the default)
    marglik_config = TrainConfig(epochs=5, lr=1e-2, batch_size=16, marglik=MarglikConfig())
    same = Laplace(model_fn=lambda: copy.deepcopy(net), subset="all", train=marglik_config, seed=2, device="cpu").fit(x, y)
    torch.testing.assert_close(same.prior_precision_, la.prior_precision_)
    # the last layer takes the learnt precisions of its weight and bias
    last = Laplace(model_fn=lambda: copy.deepcopy(net), prior_precision="online", train=train_config, seed=2, device="cpu").fit(x, y)
    torch.testing.assert_close(torch.as_tensor(last.prior_precision_), last.marglik_.prior_precision[2:])
    fixed = Laplace(model_fn=lambda: copy.deepcopy(net), subset="all", prior_precision=2.0, train=marglik_config, seed=2, device="cpu")
    assert torch.all(fixed.fit(x, y).prior_precision_ == 2.0)


@pytest.mark.parametrize("likelihood", ["classification", "regression"])
def test_laplace_online_full_uses_the_dual_form_throughout(likelihood):
    net, x, y = problem(likelihood)
    la = Laplace(model_fn=lambda: copy.deepcopy(net), subset="all", hessian="full", prior_precision="online",
                 train=TrainConfig(epochs=4, lr=1e-2, batch_size=16), seed=0, device="cpu").fit(x, y)  # fmt: skip
    assert float(la.log_marginal_likelihood()) == pytest.approx(la.marglik_.log_evidence, rel=1e-9)
    sigma = la.marglik_.sigma_noise
    assert float(log_evidence(la.model_, x, y, la.prior_precision_, hessian="full", sigma_noise=sigma)) == pytest.approx(
        la.marglik_.log_evidence, rel=1e-8)  # fmt: skip


def test_regression_laplace_online_uses_the_learnt_noise():
    net, x, y = problem("regression")
    la = Laplace(model_fn=lambda: copy.deepcopy(net), subset="all", hessian="diag", prior_precision="online",
                 train=TrainConfig(epochs=4, lr=1e-2, batch_size=16), seed=0, device="cpu").fit(x, y)  # fmt: skip
    assert la.noise_ == pytest.approx(la.marglik_.sigma_noise**2)
    assert float(la.log_marginal_likelihood()) == pytest.approx(la.marglik_.log_evidence, rel=1e-9)


def test_log_evidence_equals_the_posterior_evidence():
    net, x, y = problem("classification")
    net = train(net, x, y, TrainConfig(epochs=5, lr=1e-2, batch_size=16), seed=0, device="cpu")
    deltas = [0.5, 1.0, 2.0, 4.0]
    la = Laplace(model=net, subset="all", prior_precision=deltas, device="cpu").fit(x, y)
    assert float(log_evidence(net, x, y, deltas)) == pytest.approx(float(la.log_marginal_likelihood()), rel=1e-10)
    assert all(p.requires_grad for p in net.parameters())  # log_evidence leaves the network as it was
    assert float(log_evidence(la.model_, x, y, deltas)) == pytest.approx(float(la.log_marginal_likelihood()), rel=1e-10)  # frozen


def test_network_posteriors_train_with_marglik_through_train_config():
    from activebayes.posteriors.mc_dropout import MCDropout
    from activebayes.posteriors.mfvi import MFVI

    x, y = problem("classification")[1:]
    build = lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 3)).to(F64)  # noqa: E731
    config = TrainConfig(epochs=3, batch_size=16, marglik=MarglikConfig(hyper_steps=2))
    assert MCDropout(build, train=config, n_samples=3, seed=0, device="cpu").fit(x, y).predict(x[:2]).probs.shape == (3, 2, 3)
    with pytest.raises(ConfigError, match="TrainConfig.marglik: .*its own loss"):
        MFVI(build, train=config, seed=0, device="cpu").fit(x, y)


@pytest.mark.parametrize(
    "kwargs, words",
    [({"hessian": "dense"}, "MarglikConfig.hessian"), ({"frequency": 0}, "MarglikConfig.frequency"),
     ({"burn_in": -1}, "MarglikConfig.burn_in"), ({"hyper_lr": 0.0}, "MarglikConfig.hyper_lr"),
     ({"prior_structure": "diag"}, "MarglikConfig.prior_structure"), ({"keep_best": 1}, "MarglikConfig.keep_best")],
)  # fmt: skip
def test_config_errors(kwargs, words):
    with pytest.raises(ConfigError, match=words):
        MarglikConfig(**kwargs)


def test_refusals():
    net, x, y = problem("classification")
    with pytest.raises(ConfigError, match="validation"):
        train(net, x, y, TrainConfig(epochs=1, validation_fraction=0.2, marglik=MarglikConfig()), device="cpu")
    with pytest.raises(ConfigError, match="MarglikConfig"):
        train(net, x, y, TrainConfig(epochs=1, marglik="yes"), device="cpu")


def test_scalar_prior_structure():
    net, x, y = problem("classification")
    fit = train_marglik(net, x, y, TrainConfig(epochs=2, batch_size=16, marglik=MarglikConfig(prior_structure="scalar")), seed=0, device="cpu")
    assert fit.prior_precision.shape == (4,) and torch.all(fit.prior_precision == fit.prior_precision[0])
