"""MC dropout: consistent masks, the cached prefix and the folded stochastic tail."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from activebayes import ConfigError
from activebayes.nets import batchbald_cnn, gal_cnn, mlp
from activebayes.posteriors import MCDropout
from activebayes.posteriors.dropout_tail import run_prefix
from activebayes.posteriors.mc_dropout import (
    DropoutMasks,
    flatten_sequential,
    full_passes,
    independent_passes,
    independent_tail,
    keep_mask_,
    stochastic_tail,
)
from activebayes.training import TrainConfig

CPU = torch.device("cpu")


def _odd_net() -> nn.Sequential:
    """Dropout2d before a conv, a nested Sequential, two dropouts in a row, a bias-free Linear."""
    return nn.Sequential(
        nn.Conv2d(1, 4, 3),
        nn.Dropout2d(0.3),
        nn.Sequential(nn.Conv2d(4, 4, 3), nn.ReLU(), nn.Dropout(0.2)),
        nn.Flatten(),
        nn.Linear(4 * 6 * 6, 7),
        nn.Dropout(0.1),
        nn.Dropout(0.4),
        nn.Tanh(),
        nn.Linear(7, 3, bias=False),
    )


def _pooled_net() -> nn.Sequential:
    """Channel masks through max/avg-pool and LeakyReLU into convs (folded, bias-free too); an
    elementwise mask before a max-pool, which it does not commute with."""
    return nn.Sequential(
        nn.Conv2d(1, 4, 3),
        nn.Dropout2d(0.3),
        nn.MaxPool2d(2),
        nn.LeakyReLU(0.1),
        nn.Conv2d(4, 5, 3, padding=1, bias=False),
        nn.Dropout2d(0.5),
        nn.AvgPool2d(2),
        nn.Conv2d(5, 3, 1),
        nn.Dropout(0.2),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(3, 2),
    )


def _conv1d_net() -> nn.Sequential:
    """Dropout1d → ReLU → Conv1d (folded), then a grouped conv (not folded)."""
    return nn.Sequential(
        nn.Conv1d(2, 6, 3), nn.Dropout1d(0.4), nn.ReLU(), nn.Conv1d(6, 4, 3),
        nn.Dropout1d(0.4), nn.Conv1d(4, 4, 3, groups=2), nn.Flatten(), nn.Linear(4 * 4, 3),
    )  # fmt: skip


def _fast(model: nn.Module, x: torch.Tensor, masks: DropoutMasks) -> torch.Tensor:
    layers = flatten_sequential(model)
    split = next(i for i, layer in enumerate(layers) if isinstance(layer, (nn.Dropout, nn.Dropout1d, nn.Dropout2d)))
    h = x
    for layer in layers[:split]:
        h = layer(h)
    return stochastic_tail(layers[split:], h, masks)


@pytest.mark.parametrize(
    "make, item_shape",
    [(mlp(5, 3, hidden=(16, 8)), (5,)), (gal_cnn((1, 12, 12), 4), (1, 12, 12)), (_odd_net, (1, 10, 10)),
     (batchbald_cnn((1, 20, 20), 4), (1, 20, 20)), (_pooled_net, (1, 13, 13)), (_conv1d_net, (2, 10))],
    ids=["mlp", "gal-cnn", "dropout2d-nested", "batchbald-cnn", "pooled", "conv1d"],
)
def test_prefix_cached_tail_equals_full_passes_for_the_same_masks(make, item_shape):
    model = make().eval()
    x = torch.randn(11, *item_shape, generator=torch.Generator().manual_seed(1))
    masks = DropoutMasks(seed=3, n_samples=6, device=CPU, dtype=torch.float32)
    with torch.no_grad():
        fast = _fast(model, x, masks)
        naive = full_passes(model, x, masks)
    assert fast.shape == naive.shape == (6, 11, model[-1].out_features)
    torch.testing.assert_close(fast, naive, rtol=1e-5, atol=1e-5)
    assert (fast[0] - fast[1]).abs().max() > 1e-3  # the samples differ
    with torch.no_grad():  # no items: an empty [S, 0, C], as the full passes give
        assert _fast(model, x[:0], masks).shape == full_passes(model, x[:0], masks).shape == (6, 0, model[-1].out_features)


def test_a_channel_mask_passes_pool_and_relu_and_folds_into_the_next_conv():
    """Kirsch et al.'s CNN: the first Dropout2d's mask reaches conv 2 as S·64 folded filters, so
    pooling and ReLU run on N items, not S·N; the second is applied after conv 2 (per sample)."""
    model = batchbald_cnn((1, 20, 20), 4)().eval()
    masks = DropoutMasks(seed=3, n_samples=6, device=CPU, dtype=torch.float32)
    seen: list[tuple[int, ...]] = []
    hooks = [layer.register_forward_hook(lambda m, args, out: seen.append(tuple(args[0].shape)))
             for layer in model if isinstance(layer, (nn.MaxPool2d, nn.ReLU))]  # fmt: skip
    with torch.no_grad():
        _fast(model, torch.randn(11, 1, 20, 20), masks)
    for hook in hooks:
        hook.remove()
    assert seen[:2] == [(11, 32, 16, 16), (11, 32, 8, 8)]  # the first pool and ReLU: the 11 shared items
    assert seen[2] == (6 * 11, 64, 4, 4)  # after the second dropout: per sample
    folded = {key[0]: value[0].shape for key, value in masks.folded.items()}
    conv2 = [i for i, layer in enumerate(flatten_sequential(model)) if isinstance(layer, nn.Conv2d)][1]
    split = [isinstance(layer, nn.Dropout2d) for layer in flatten_sequential(model)].index(True)
    assert folded[conv2 - split] == (6 * 64, 32, 5, 5)


def _masked_mlp(*dropouts: float) -> nn.Sequential:
    dropout_layers = (nn.Dropout(p) for p in dropouts)
    return nn.Sequential(nn.Linear(6, 40), nn.ReLU(), *dropout_layers, nn.Linear(40, 5), nn.Tanh(), nn.Linear(5, 3))


@pytest.mark.parametrize(
    "dropouts, complement",
    [((0.25,), True), ((0.1,), True), ((0.2, 0.3), False), ((0.9,), False)],
    ids=["p=0.25", "p=0.1", "two-masks-in-a-row", "p=0.9"],
)
def test_the_first_masked_linear_folds_by_its_dropped_features_when_that_pays(dropouts, complement):
    """f_s(h) = (h cWᵀ + b) − h[:, D_s] (cW[:, D_s])ᵀ when every kept entry of the mask is c and few
    enough features drop; two masks in a row (kept entries c1, c1·c2) or p = 0.9 keep the dense fold."""
    model = _masked_mlp(*dropouts).eval()
    x = torch.randn(300, 6, generator=torch.Generator().manual_seed(2))
    masks = DropoutMasks(seed=4, n_samples=9, device=CPU, dtype=torch.float32)
    with torch.no_grad():
        fast = _fast(model, x, masks)
        naive = full_passes(model, x, masks)
    torch.testing.assert_close(fast, naive, rtol=1e-5, atol=1e-5)
    folds = {key: value for key, value in masks.folded.items() if key[0] == len(dropouts)}  # the tail's first Linear
    if complement:
        (fold,) = folds.values()
        scaled_t, bias, idx, dropped = fold
        m = masks.mask(0, model[2], (40,))  # [S, D], entries 0 or 1/(1 − p)
        assert dropped.shape[0] == 9 and dropped.shape[1] == int((m == 0).sum(1).max())
        for s in range(9):  # sample s's rows are its dropped features, then zero padding
            gone = torch.nonzero(m[s] == 0)[:, 0]
            assert torch.equal(idx.view(9, -1)[s, : gone.numel()], gone)
            assert not dropped[s, gone.numel() :].any()
    else:
        assert None in folds.values() and any(key[-1] == "dense" for key in folds)


def test_the_complement_fold_gathers_in_chunks_of_items_with_the_same_result(monkeypatch):
    from activebayes.posteriors import dropout_tail

    model = _masked_mlp(0.25).eval()
    x = torch.randn(50, 6, generator=torch.Generator().manual_seed(3))
    whole = _fast(model, x, DropoutMasks(seed=4, n_samples=9, device=CPU, dtype=torch.float32))
    monkeypatch.setattr(dropout_tail, "GATHER_BYTES", 9 * 40 * 4 * 7)  # GATHER_BYTES // (S·K·4) items a chunk, K ≤ 40 dropped: several chunks
    torch.testing.assert_close(_fast(model, x, DropoutMasks(seed=4, n_samples=9, device=CPU, dtype=torch.float32)), whole)


def _conv_prefix() -> nn.Sequential:
    """Conv → ReLU → max-pool (pooled first), conv → ReLU → avg-pool, a ReLU after a flatten (a view)."""
    return nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
        nn.Flatten(), nn.ReLU(), nn.Linear(6 * 3 * 3, 5), nn.ReLU(),
    )  # fmt: skip


@pytest.mark.parametrize("make, item_shape", [(_conv_prefix, (1, 14, 14)), (mlp(5, 3, hidden=(16,)), (5,))], ids=["conv", "mlp"])
def test_the_fast_prefix_is_the_layers_in_turn_and_leaves_its_input_alone(make, item_shape):
    layers = flatten_sequential(make().eval())
    x = torch.randn(7, *item_shape, generator=torch.Generator().manual_seed(5)) - 0.5
    before = x.clone()
    with torch.no_grad():
        expected = x
        for layer in layers:
            expected = layer(expected)
        got = run_prefix(layers, x)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert torch.equal(x, before)
    seen = []  # a layer with a hook runs as a module
    handle = layers[1].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    with torch.no_grad():
        torch.testing.assert_close(run_prefix(layers, x), expected, rtol=1e-5, atol=1e-6)
    handle.remove()
    assert len(seen) == 1


def test_masks_are_bernoulli_scaled_and_channelwise_for_dropout2d():
    masks = DropoutMasks(seed=0, n_samples=400, device=CPU, dtype=torch.float32)
    m = masks.mask(0, nn.Dropout(0.25), (50,))
    assert m.shape == (400, 50)
    torch.testing.assert_close(m.unique(), torch.tensor([0.0, 1 / 0.75]))
    assert abs(float((m > 0).float().mean()) - 0.75) < 0.01  # 20,000 draws: std 0.003
    m2 = masks.mask(1, nn.Dropout2d(0.5), (8, 5, 5))
    assert m2.shape == (400, 8, 1, 1)
    # the same (seed, S, layer) gives the same masks; another layer index gives others
    again = DropoutMasks(seed=0, n_samples=400, device=CPU, dtype=torch.float32)
    assert torch.equal(again.mask(0, nn.Dropout(0.25), (50,)), m)
    assert not torch.equal(again.mask(2, nn.Dropout(0.25), (50,)), m)


@pytest.fixture(scope="module")
def fitted_mlp():
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] + x[:, 1] > 0).long()
    return MCDropout(mlp(4, 2, hidden=(16, 16)), n_samples=12, train=TrainConfig(epochs=3), seed=5, device="cpu").fit(x, y), x


def _reference_path(posterior: MCDropout) -> MCDropout:
    """The fitted `posterior` with prefix_cache=False (S full passes), sharing its network."""
    reference = MCDropout(**(posterior.get_params() | {"prefix_cache": False}))
    reference.model_, reference.seed_, reference.split_, reference.device_ = (
        posterior.model_, posterior.seed_, posterior.split_, posterior.device_,
    )  # fmt: skip
    return reference


def test_posterior_fast_path_equals_reference_path(fitted_mlp):
    posterior, x = fitted_mlp
    reference = _reference_path(posterior)
    torch.testing.assert_close(posterior.predict(x).probs, reference.predict(x).probs, rtol=1e-5, atol=1e-6)


def test_prefix_runs_once_and_masks_are_shared_by_every_item(fitted_mlp):
    posterior, x = fitted_mlp
    first = flatten_sequential(posterior.model_)[1]  # the first Linear, inside the prefix
    calls = []
    handle = first.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    try:
        pred = posterior.predict(x, n_samples=20)
    finally:
        handle.remove()
    assert calls == [64]  # one call over the 64 inputs, not one per sample
    assert pred.probs.shape == (20, 64, 2)
    # one set of masks per sample, the same for every candidate: copies of an item agree (to
    # rounding: with several threads a matmul may split the rows of a batch differently)
    copies = posterior.predict(x[:1].expand(5, -1), n_samples=20).probs
    torch.testing.assert_close(copies, copies[:, :1].expand(-1, 5, -1), rtol=0, atol=1e-6)
    assert (copies[:, 0, 0].max() - copies[:, 0, 0].min()) > 1e-3  # ... and the samples differ


def test_reference_path_runs_the_prefix_once_per_sample(fitted_mlp):
    posterior, x = fitted_mlp
    reference = _reference_path(posterior)
    first = flatten_sequential(reference.model_)[1]
    calls = []
    handle = first.register_forward_hook(lambda module, args, out: calls.append(1))
    try:
        reference.predict(x, n_samples=7)
    finally:
        handle.remove()
    assert len(calls) == 7


class _Wrapped(nn.Module):
    """Not an nn.Sequential: the fast path cannot split it."""

    def __init__(self) -> None:
        super().__init__()
        self.body = mlp(4, 2, hidden=(8,))()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def test_models_it_cannot_split_warn_once_and_use_full_passes():
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()
    posterior = MCDropout(_Wrapped, n_samples=6, train=TrainConfig(epochs=2), seed=0, device="cpu")
    with pytest.warns(UserWarning, match="not an nn.Sequential"):
        posterior.fit(x, y)
    assert posterior.split_ is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # predicting does not warn again
        pred = posterior.predict(x)
    # S full passes with the masks the fast path would use on the same weights
    masks = DropoutMasks(posterior.seed_, 6, device=CPU, dtype=torch.float32)
    with torch.no_grad():
        expected = torch.softmax(_fast(posterior.model_.body, x, masks), -1)
    torch.testing.assert_close(pred.probs, expected, rtol=1e-5, atol=1e-6)


def test_network_without_dropout_is_refused():
    with pytest.raises(ConfigError, match="Dropout"):
        MCDropout(lambda: nn.Sequential(nn.Linear(2, 2)), train=TrainConfig(epochs=1), device="cpu").fit(torch.zeros(4, 2), torch.zeros(4).long())


def test_bad_n_samples_is_refused(fitted_mlp):
    posterior, x = fitted_mlp
    with pytest.raises(ConfigError, match="n_samples"):
        posterior.predict(x, n_samples=0)


@pytest.mark.slow
def test_gal_cnn_on_1000_mnist_images_is_95_percent_accurate(mnist, test_seed):
    """100 images of each digit, 15 epochs (about 30 s on one loaded core), the full test set.

    Measured: 95.9% on the 10,000 test images (93.7% on the harder first 5,000, 98.1% on the rest);
    95.95-96.25% over ACTIVEBAYES_TEST_SEED 0-2 with ATEN_CPU_CAPABILITY native (AVX-512) and avx2.
    """
    generator = torch.Generator().manual_seed(test_seed)
    train_y = mnist["train_y"]
    per_class = [torch.nonzero(train_y == c).squeeze(1) for c in range(10)]
    idx = torch.cat([rows[torch.randperm(rows.numel(), generator=generator)[:100]] for rows in per_class])
    mean, std = 0.1307, 0.3081  # MNIST's pixel mean and standard deviation
    config = TrainConfig(epochs=15, lr=2e-3, batch_size=32, schedule="cosine")
    posterior = MCDropout(gal_cnn(), n_samples=20, train=config, seed=test_seed, device="cpu")
    posterior.fit((mnist["train_x"][idx] - mean) / std, train_y[idx])
    probs = torch.cat([posterior.predict_proba((x - mean) / std) for x in mnist["test_x"].split(2000)])
    accuracy = (probs.argmax(-1) == mnist["test_y"]).float().mean()
    assert accuracy >= 0.95


def test_deterministic_proba_is_the_network_without_dropout(fitted_mlp):
    """Weight scaling: with inverted dropout the network in eval mode is the standard-dropout
    prediction, computed by hand here from the Sequential's layers."""
    posterior, x = fitted_mlp
    got = posterior.predict_proba_deterministic(x)
    h = x.float()
    for layer in posterior.model_:
        if not isinstance(layer, torch.nn.Dropout):
            h = layer(h)
    torch.testing.assert_close(got, torch.softmax(h, -1))
    assert torch.equal(got, posterior.predict_proba_deterministic(x))  # no masks: no randomness
    assert not torch.allclose(got, posterior.predict_proba(x))  # unlike the MC average


def test_deterministic_proba_of_a_cnn_runs_the_fast_path_as_the_same_function():
    """Gal's CNN (channels-last convolutions, ReLU in place on the CPU path): the same softmax as
    the network in eval mode, to float rounding."""
    x = torch.rand(16, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    posterior = MCDropout(gal_cnn(), n_samples=3, train=TrainConfig(epochs=1), seed=0, device="cpu").fit(x, torch.arange(16) % 10)
    with torch.no_grad():
        expected = torch.softmax(posterior.model_.eval()(x), -1)
    torch.testing.assert_close(posterior.predict_proba_deterministic(x), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("keep", [0.5, 0.75, 0.1])
def test_keep_masks_are_bernoulli_of_the_keep_probability(keep, device):
    """0/1 entries, a share of ones within 5 standard errors of keep over 200,000 draws, and the
    same mask again from the same seed; 0.5 and 0.75 draw bytes, 0.1 (p = 0.9, not a multiple of
    1/256) a float uniform per entry. On each device, with that device's generator."""
    def draw() -> torch.Tensor:
        return keep_mask_(torch.empty(200, 1000, device=device), keep, torch.Generator(device).manual_seed(0))

    m = draw()
    assert m.device.type == device
    assert set(m.unique().tolist()) <= {0.0, 1.0}
    assert abs(m.mean().item() - keep) < 5 * (keep * (1 - keep) / m.numel()) ** 0.5
    assert torch.equal(m, draw())


def test_keep_masks_of_a_dyadic_rate_are_the_generators_bytes_against_256p():
    """p = 0.25: entry j is [b_j ≥ 64] for b_j the j-th byte of the generator's 64-bit words, in
    memory order (13 entries: two words, the last three bytes unused); p = 0.3 is [u < 0.7] of
    the float uniforms; a non-contiguous tensor takes the uniform draw too."""
    words = torch.empty(2, dtype=torch.int64).random_(-(2**63), None, generator=torch.Generator().manual_seed(4))
    expected = (words.view(torch.uint8)[:13] >= 64).float()
    assert torch.equal(keep_mask_(torch.empty(13), 0.75, torch.Generator().manual_seed(4)), expected)
    assert 0 < expected.sum() < 13
    uniforms = torch.empty(13).uniform_(generator=torch.Generator().manual_seed(4))
    assert torch.equal(keep_mask_(torch.empty(13), 0.7, torch.Generator().manual_seed(4)), (uniforms < 0.7).float())
    strided = torch.empty(13, 2)[:, 0]
    assert torch.equal(keep_mask_(strided, 0.75, torch.Generator().manual_seed(4)), (uniforms < 0.75).float())


def _tail_cases() -> list[tuple[nn.Sequential, tuple[int, ...]]]:
    """Gal's CNN; Kirsch et al.'s (channel dropout); two dropouts in a row ending on one; a
    channel mask whose Flatten view and an Identity are the last layers (outputs in a buffer)."""
    return [
        (gal_cnn()(), (1, 28, 28)),
        (batchbald_cnn()(), (1, 28, 28)),
        (nn.Sequential(nn.Linear(5, 8), nn.Dropout(0.3), nn.Dropout(0.5), nn.ReLU(), nn.Linear(8, 3), nn.Dropout(0.25)), (5,)),
        (nn.Sequential(nn.Conv2d(1, 4, 3), nn.Dropout2d(0.25), nn.Flatten(), nn.Dropout(0.5), nn.Identity()), (1, 9, 9)),
    ]


@pytest.mark.parametrize("case", range(4))
def test_independent_tail_is_the_hooked_passes_bit_for_bit(case, device):
    """The reused-buffer tail gives exactly `independent_passes` on the same layers and generator
    seed, every pass its own numbers (no pass's output overwritten by a later pass); on CUDA too,
    with the device's generator."""
    net, item = _tail_cases()[case]
    layers = flatten_sequential(net.eval().to(device))
    split = next(i for i, layer in enumerate(layers) if isinstance(layer, (nn.Dropout, nn.Dropout2d)))
    x = torch.rand(9, *item, generator=torch.Generator().manual_seed(case)).to(device)
    with torch.no_grad():
        h = run_prefix(layers[:split], x).contiguous()
        expected = independent_passes(nn.Sequential(*layers[split:]), h, 6, torch.Generator(device).manual_seed(11))
        got = independent_tail(layers[split:], h, 6, torch.Generator(device).manual_seed(11))
    assert torch.equal(got, expected)
    assert all(not torch.equal(got[s], got[s + 1]) for s in range(5))


def test_independent_passes_apply_one_drawn_mask_per_item_and_pass():
    """A Linear after a Dropout(p): pass s is W((x ⊙ m_s)/(1 − p)) + b with m_s the s-th mask the
    generator gives in draw order (computed by hand here), a different mask for every item."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Dropout(0.25), nn.Linear(6, 3)).eval()
    x = torch.randn(5, 6)
    x[1] = x[0]  # two equal items: their outputs differ only by their masks
    got = independent_passes(model, x, 4, torch.Generator().manual_seed(7))
    generator = torch.Generator().manual_seed(7)
    masks = [keep_mask_(torch.empty(5, 6), 0.75, generator) for _ in range(4)]
    with torch.no_grad():
        expected = torch.stack([model[1](x * m / 0.75) for m in masks])
    torch.testing.assert_close(got, expected)
    assert not torch.allclose(got[:, 0], got[:, 1])  # the equal items got masks of their own


def test_large_batches_run_the_tail_in_chunks_with_the_same_result(monkeypatch):
    """With channel dropout right after the first conv the shared-mask tail holds [S, n, 32, 24, 24]:
    a memory budget of a few items splits a batch into chunks; the logits are those of one pass."""
    from activebayes.posteriors import mc_dropout

    x = torch.rand(9, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    post = MCDropout(batchbald_cnn(), n_samples=4, train=TrainConfig(epochs=1), seed=0, device="cpu")
    post.fit(x, torch.arange(9) % 10)
    whole = post.predict_logits(x)
    per_item = 4 * 32 * 24 * 24 * 4  # S · F · bytes
    monkeypatch.setattr(mc_dropout, "TAIL_BYTES", 2 * per_item)  # two items at a time
    torch.testing.assert_close(post.predict_logits(x), whole, rtol=1e-6, atol=1e-6)
    assert whole.shape == (4, 9, 10)
