"""BatchEnsemble and its rank-1 Gaussian variant: hand-checkable properties of the layers, the
parameter count, the KL, the sampling and the training hooks. No test relies on how well a
training run turns out."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from activebayes import ConfigError, GaussianPredictive, Predictive
from activebayes.posteriors.batch_ensemble import (
    BatchEnsemble,
    BatchEnsembleLayer,
    BatchEnsembleNetwork,
    effective_weight,
    member_weights,
    to_batch_ensemble,
)
from activebayes.posteriors.mfvi import gaussian_kl
from activebayes.training import TrainConfig, train

M = 3
_TRAIN = TrainConfig(epochs=3, lr=1e-2, batch_size=32)


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 3))


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, stride=2, groups=2), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 3 * 3, 2))  # fmt: skip


def _data(n: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, 2, generator=gen)
    return x, (x[:, 0] > 0).long() + (x[:, 1] > 1).long()


def _groups(out: torch.Tensor, k: int) -> torch.Tensor:
    return out.reshape(k, -1, *out.shape[1:])


# ----------------------------------------------------------------------------- layers
def test_dense_member_equals_a_linear_layer_with_the_rank1_weight():
    torch.manual_seed(0)
    dense = nn.Linear(5, 4)
    layer = BatchEnsembleLayer(copy.deepcopy(dense), M, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        layer.bias.copy_(torch.randn(M, 4))
    x = torch.randn(6, 5)
    out = _groups(layer(x.repeat(M, 1)), M)
    for m in range(M):
        w = dense.weight * torch.outer(layer.s[m], layer.r[m])  # W ∘ (s_m r_mᵀ)
        plain = nn.Linear(5, 4)
        with torch.no_grad():
            plain.weight.copy_(w)
            plain.bias.copy_(layer.bias[m])
        torch.testing.assert_close(out[m], plain(x))
        torch.testing.assert_close(layer.member_weight(m), w)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv_member_equals_a_conv_layer_with_the_rank1_weight(groups):
    torch.manual_seed(0)
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=groups)
    layer = BatchEnsembleLayer(copy.deepcopy(conv), M, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        layer.r.copy_(torch.randn(M, 4))
        layer.s.copy_(torch.randn(M, 6))
    x = torch.randn(5, 4, 7, 7)
    out = _groups(layer(x.repeat(M, 1, 1, 1)), M)
    for m in range(M):
        r_rows = layer.r[m].reshape(groups, -1).repeat_interleave(6 // groups, dim=0)  # input channels of o's group
        w = conv.weight * (layer.s[m][:, None] * r_rows)[:, :, None, None]
        expected = F.conv2d(x, w, layer.bias[m], stride=2, padding=1, groups=groups)
        torch.testing.assert_close(out[m], expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(effective_weight(conv.weight, layer.r[m], layer.s[m], groups), w)


def test_unit_fast_weights_make_every_member_the_shared_network():
    torch.manual_seed(0)
    for net, x in ((_mlp(), torch.randn(7, 2)), (_cnn(), torch.randn(7, 1, 8, 8))):
        be = BatchEnsembleNetwork(to_batch_ensemble(copy.deepcopy(net), M), M, "categorical")
        with torch.no_grad():
            for layer in be.layers():
                layer.r.fill_(1.0)
                layer.s.fill_(1.0)
        members = be.eval().members(x)
        assert members.shape == (M, 7, *net(x).shape[1:])
        for m in range(M):
            torch.testing.assert_close(members[m], net(x), rtol=1e-5, atol=1e-6)
        # the eval-mode output is the ensemble's log predictive: here log softmax of the one network
        torch.testing.assert_close(be(x), torch.log_softmax(net(x), -1), rtol=1e-5, atol=1e-6)


def test_fast_weights_start_at_random_signs_or_normal():
    dense = nn.Linear(50, 40)
    signs = BatchEnsembleLayer(copy.deepcopy(dense), M, generator=torch.Generator().manual_seed(0))
    assert set(signs.r.unique().tolist()) == {-1.0, 1.0} and set(signs.s.unique().tolist()) == {-1.0, 1.0}
    normal = BatchEnsembleLayer(copy.deepcopy(dense), M, fast_init="normal", generator=torch.Generator().manual_seed(0))
    assert 0.8 < float(normal.r.detach().mean()) < 1.2 and 0.35 < float(normal.r.detach().std()) < 0.65  # 150 draws of N(1, 0.5²)
    torch.testing.assert_close(signs.bias, dense.bias.detach().expand(M, 40))  # every member starts at the layer's bias


def test_parameter_count_is_shared_weights_plus_two_vectors_and_a_bias_per_member():
    net = BatchEnsembleNetwork(to_batch_ensemble(_mlp(), M), M, "categorical")
    shared = 2 * 8 + 8 * 3
    per_member = (2 + 8 + 8) + (8 + 3 + 3)
    assert sum(p.numel() for p in net.parameters()) == shared + M * per_member
    plain_ensemble = M * sum(p.numel() for p in _mlp().parameters())
    assert shared + M * per_member < plain_ensemble
    cnn = to_batch_ensemble(_cnn(), M)
    shared = 4 * 1 * 9 + 4 * 2 * 9 + 36 * 2
    per_member = (1 + 4 + 4) + (4 + 4 + 4) + (36 + 2 + 2)
    assert sum(p.numel() for p in cnn.parameters()) == shared + M * per_member
    gaussian = BatchEnsembleNetwork(to_batch_ensemble(_mlp(), M, rank1="gaussian"), M, "categorical")
    assert sum(p.numel() for p in gaussian.parameters()) == 2 * 8 + 8 * 3 + M * ((2 + 8) * 2 + 8 + (8 + 3) * 2 + 3)  # + ρ of r and s


def test_a_batch_not_tiled_for_the_members_is_refused():
    layer = BatchEnsembleLayer(nn.Linear(2, 3), M)
    with pytest.raises(Exception, match="tiled 3 times"):
        layer(torch.randn(4, 2))


# ----------------------------------------------------------------------------- the rank-1 KL
def test_gaussian_kl_matches_the_closed_form_by_hand():
    # KL(N(0.5, 0.2²) ‖ N(1, 0.5²)) = log(0.5/0.2) + (0.04 + 0.25)/(2·0.25) − ½
    by_hand = math.log(2.5) + 0.29 / 0.5 - 0.5
    assert float(gaussian_kl(torch.tensor([0.5]), torch.tensor([0.2]), 0.5, prior_mean=1.0)) == pytest.approx(by_hand, rel=1e-6)
    mean, std = torch.tensor([0.3, 1.0, 2.0]), torch.tensor([0.1, 0.5, 1.5])
    reference = torch.distributions.kl_divergence(torch.distributions.Normal(mean, std), torch.distributions.Normal(1.0, 0.7)).sum()
    torch.testing.assert_close(gaussian_kl(mean, std, 0.7, prior_mean=1.0), reference)


def test_layer_kl_sums_r_and_s_of_every_member():
    layer = BatchEnsembleLayer(nn.Linear(2, 3), 2, rank1="gaussian", init_std=0.2)
    with torch.no_grad():
        layer.r.fill_(0.5)
        layer.s.fill_(1.0)
    one_r = math.log(0.5 / 0.2) + (0.04 + 0.25) / (2 * 0.25) - 0.5  # μ = 0.5, σ = 0.2, prior N(1, 0.5²)
    one_s = math.log(0.5 / 0.2) + 0.04 / (2 * 0.25) - 0.5  # μ = 1
    assert float(layer.kl(0.5).detach()) == pytest.approx(2 * (2 * one_r + 3 * one_s), rel=1e-5)
    with pytest.raises(ConfigError, match="^rank1: "):
        BatchEnsembleLayer(nn.Linear(2, 3), 2).kl(0.5)


# ----------------------------------------------------------------------------- the posterior
def test_predict_gives_each_member_with_equal_weights():
    x, y = _data()
    post = BatchEnsemble(_mlp, n_members=M, train=_TRAIN, seed=0, device="cpu").fit(x, y)
    pred = post.predict(x[:5])
    assert isinstance(pred, Predictive) and pred.probs.shape == (M, 5, 3) and pred.weights is None
    torch.testing.assert_close(pred.probs, torch.softmax(post.model_.members(x[:5]), -1))
    torch.testing.assert_close(post.predict_proba(x[:5]), pred.probs.mean(0))
    torch.testing.assert_close(post.predict(x[:5], n_samples=2).probs, pred.probs[:2])
    with pytest.raises(ConfigError, match="^n_samples: "):
        post.predict(x[:5], n_samples=M + 1)


def test_seeded_fits_reproduce_and_other_seeds_differ():
    x, y = _data()
    for rank1 in ("none", "gaussian"):
        fits = [BatchEnsemble(_mlp, n_members=M, rank1=rank1, train=_TRAIN, seed=s, device="cpu").fit(x, y) for s in (0, 0, 1)]
        probs = [f.predict(x).probs for f in fits]
        assert torch.equal(probs[0], probs[1])
        assert not torch.allclose(probs[0], probs[2])
        assert torch.equal(fits[0].clone().fit(x, y).predict(x).probs, probs[0])


@pytest.mark.parametrize("rank1", ["none", "gaussian"])
def test_predictions_do_not_depend_on_the_batch_split(rank1):
    x, y = _data()
    post = BatchEnsemble(_mlp, n_members=M, rank1=rank1, n_samples=7 if rank1 == "gaussian" else None, train=_TRAIN, seed=0,
                         device="cpu").fit(x, y)  # fmt: skip
    whole = post.predict(x).probs
    parts = torch.cat([post.predict(x[i : i + 6]).probs for i in range(0, x.shape[0], 6)], dim=1)
    torch.testing.assert_close(parts, whole, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(post.predict(x.flip(0)).probs.flip(1), whole, rtol=1e-5, atol=1e-6)
    assert torch.equal(post.predict(x[:4]).probs, post.predict(x[:4]).probs)


def test_gaussian_draws_spread_over_the_members_and_shrink_to_them():
    """Sample s uses member s mod M; with σ ≈ 0 it is that member's network; the weights give
    every member the same mass when M does not divide S."""
    x, y = _data()
    post = BatchEnsemble(_mlp, n_members=M, rank1="gaussian", train=_TRAIN, seed=0, device="cpu").fit(x, y)
    assert post.n_samples == 4 * M
    members, _ = post.sample_factors(7)
    assert members.tolist() == [0, 1, 2, 0, 1, 2, 0]
    pred = post.predict(x[:5], n_samples=7)
    assert pred.probs.shape == (7, 5, 3)
    torch.testing.assert_close(pred.weights, torch.tensor([1 / 9, 1 / 6, 1 / 6, 1 / 9, 1 / 6, 1 / 6, 1 / 9]))
    assert not torch.allclose(pred.probs[0], pred.probs[3])  # two draws of member 0
    with torch.no_grad():
        for layer in post.model_.layers():
            layer.r_rho.fill_(-30.0)
            layer.s_rho.fill_(-30.0)
    post._cache = {}
    tiny = post.predict(x[:5], n_samples=6)
    expected = torch.softmax(post.model_.members(x[:5]), -1)
    torch.testing.assert_close(tiny.probs, torch.cat([expected, expected]))
    assert tiny.weights is None


def test_member_weights():
    assert member_weights(torch.tensor([0, 1, 0, 1])) is None
    torch.testing.assert_close(member_weights(torch.tensor([0, 1, 0])), torch.tensor([0.25, 0.5, 0.25]))


def test_tiled_loss_is_the_mean_of_the_members_losses_and_gaussian_adds_kl_over_n():
    x, y = _data(8)
    post = BatchEnsemble(_mlp, n_members=M, train=_TRAIN, seed=0, device="cpu").fit(x, y)
    model = post.model_.train()
    out = model(x)  # the batch tiled M times
    assert out.shape == (M * 8, 3)
    by_member = torch.stack([F.cross_entropy(o, y) for o in _groups(out, M)]).mean()
    torch.testing.assert_close(post._loss(model, out, y, 8), by_member)
    vi = BatchEnsemble(_mlp, n_members=M, rank1="gaussian", kl_weight=0.5, train=_TRAIN, seed=0, device="cpu").fit(x, y)
    model = vi.model_.train()
    out = model(x)
    by_member = torch.stack([F.cross_entropy(o, y) for o in _groups(out, M)]).mean()
    torch.testing.assert_close(vi._loss(model, out, y, 8), by_member + 0.5 * vi.kl_divergence() / 8)


def test_train_hooks_loss_fn_and_param_groups():
    """training.train's hooks: a loss_fn with zero gradient leaves the weights; a group with
    weight_decay 0 is exempt from a large decay (SGD, lr 1: w ← w − lr·λ·w)."""
    x, y = _data(16)
    net = nn.Linear(2, 3)
    before = [p.detach().clone() for p in net.parameters()]
    train(net, x, y, TrainConfig(epochs=2, batch_size=8), seed=0, device="cpu", loss_fn=lambda out, t: 0.0 * out.sum())
    assert all(torch.equal(p, b) for p, b in zip(net.parameters(), before))
    net = nn.Linear(2, 3)
    weight, bias = net.weight.detach().clone(), net.bias.detach().clone()
    config = TrainConfig(epochs=1, batch_size=16, optimizer="sgd", momentum=0.0, lr=1.0, weight_decay=0.5)
    train(net, x, y, config, seed=0, device="cpu", loss_fn=lambda out, t: 0.0 * out.sum(),
          param_groups=[{"params": [net.weight], "weight_decay": 0.0}, {"params": [net.bias]}])  # fmt: skip
    assert torch.equal(net.weight.detach(), weight)
    torch.testing.assert_close(net.bias.detach(), 0.5 * bias)


def test_regression_gives_per_member_noise():
    gen = torch.Generator().manual_seed(0)
    x = torch.linspace(-2, 2, 30).unsqueeze(-1)
    y = torch.sin(x[:, 0]) + 0.1 * torch.randn(30, generator=gen)
    for rank1 in ("none", "gaussian"):
        post = BatchEnsemble(lambda: nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)), n_members=M, rank1=rank1,
                             train=_TRAIN, seed=0, device="cpu").fit(x, y)  # fmt: skip
        pred = post.predict(x[:5])
        assert isinstance(pred, GaussianPredictive) and post.likelihood_ == "gaussian"
        assert post.noise_.shape == (M,) and bool((post.noise_ > 0).all())
        members, _ = post.sample_factors(post.n_samples)
        torch.testing.assert_close(pred.var, post.noise_[members][:, None].expand(-1, 5))
        mean, var = post.predict_mean_var(x[:5])
        assert mean.shape == var.shape == (5,)
        with pytest.raises(ConfigError, match="regression"):
            post.predict_proba(x[:5])


def test_conv_network_fits_and_predicts():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(12, 1, 8, 8, generator=gen)
    y = (x.mean((1, 2, 3)) > 0).long()
    post = BatchEnsemble(_cnn, n_members=2, train=TrainConfig(epochs=1, batch_size=6), seed=0, device="cpu").fit(x, y)
    assert post.predict(x[:3]).probs.shape == (2, 3, 2)


def test_refusals():
    with pytest.raises(ConfigError, match="^model_fn: .*nn.Linear or nn.Conv2d"):
        BatchEnsemble(lambda: nn.Sequential(nn.Flatten()), train=_TRAIN, seed=0, device="cpu").fit(*_data())
    with pytest.raises(ConfigError, match="^n_samples: "):
        BatchEnsemble(_mlp, n_members=2, n_samples=3)
    assert BatchEnsemble(_mlp, n_members=2, rank1="gaussian", n_samples=3).n_samples == 3
    assert BatchEnsemble(_mlp, n_members=5).n_samples == 5


def test_to_device_keeps_predictions():
    x, y = _data()
    post = BatchEnsemble(_mlp, n_members=M, rank1="gaussian", train=_TRAIN, seed=0, device="cpu").fit(x, y)
    before = post.predict(x).probs
    assert post.to("cpu") is post
    torch.testing.assert_close(post.predict(x).probs, before)
    if torch.cuda.is_available():
        on_gpu = post.to("cuda").predict(x).probs
        assert on_gpu.device.type == "cuda"
        torch.testing.assert_close(on_gpu.cpu(), before, atol=1e-4, rtol=0)


# ----------------------------------------------------------------------------- the CLI
def test_cli_round_with_batch_ensemble(cli_db):
    """--posterior batch-ensemble runs a round like the others (registered through POSTERIORS and
    the CLI's CLI_POSTERIORS)."""
    import json

    from cli_checks import ok
    from test_cli_round import TINY, add_project

    add_project("blobs")
    args = ("--json", "round", *TINY, "--k", "3", "--oracle", "truth", "--posterior", "batch-ensemble")
    ok(*args)  # the cold start: 3 items at random
    data = json.loads(ok(*args).stdout)  # fitted on those 3 labels
    assert data["status"] == "done" and data["posterior"] == "batch-ensemble" and data["labelled"] == 3
