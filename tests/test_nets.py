"""Default networks: architecture, shapes, fresh weights per call, and the CLI helper."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from activebayes import ConfigError
from activebayes.nets import batchbald_cnn, default_model, gal_cnn, gal_script_cnn, mlp


def test_mlp_factory_builds_fresh_networks_with_dropout():
    make = mlp(6, 4, hidden=(16, 8), dropout=0.3)
    first, second = make(), make()
    assert isinstance(first, nn.Sequential)
    assert not torch.equal(first[1].weight, second[1].weight)  # a fresh initialisation each call
    linears = [m for m in first if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(6, 16), (16, 8), (8, 4)]
    dropouts = [m for m in first if isinstance(m, nn.Dropout)]
    assert [d.p for d in dropouts] == [0.3, 0.3]
    assert first(torch.zeros(5, 6)).shape == (5, 4)
    assert first(torch.zeros(5, 2, 3)).shape == (5, 4)  # items with several axes are flattened


def test_gal_cnn_matches_the_paper():
    net = gal_cnn()()
    kinds = [type(m).__name__ for m in net]
    assert kinds == [
        "Conv2d", "ReLU", "Conv2d", "ReLU", "MaxPool2d", "Dropout", "Flatten", "Linear", "ReLU", "Dropout", "Linear",
    ]  # fmt: skip
    assert (net[0].in_channels, net[0].out_channels, net[0].kernel_size) == (1, 32, (4, 4))
    assert (net[2].in_channels, net[2].out_channels, net[2].kernel_size) == (32, 32, (4, 4))
    assert net[4].kernel_size == 2
    assert (net[5].p, net[9].p) == (0.25, 0.5)
    assert (net[7].in_features, net[7].out_features) == (32 * 11 * 11, 128)
    assert net[10].out_features == 10
    assert net(torch.zeros(3, 1, 28, 28)).shape == (3, 10)
    assert gal_cnn((3, 32, 32), 5)()(torch.zeros(2, 3, 32, 32)).shape == (2, 5)


def test_gal_script_cnn_matches_the_published_keras_script():
    """Dropout_Bald_Q10_N1000_Paper.py: Convolution2D(32, 3, 3) twice, MaxPooling2D((5, 5)),
    Dropout(0.25), Dense(256), Dropout(0.5), Dense(10): 28 → 26 → 24 → 4 (floor 24 / 5)."""
    net = gal_script_cnn()()
    assert [type(m).__name__ for m in net] == [type(m).__name__ for m in gal_cnn()()]
    assert (net[0].kernel_size, net[2].kernel_size, net[4].kernel_size) == ((3, 3), (3, 3), 5)
    assert (net[7].in_features, net[7].out_features, net[10].in_features) == (32 * 4 * 4, 256, 256)
    assert (net[5].p, net[9].p) == (0.25, 0.5)
    assert net(torch.zeros(3, 1, 28, 28)).shape == (3, 10)
    assert gal_cnn(kernel_size=3, pool=5, hidden=256)()[7].in_features == 512  # the same network, spelt out


def test_batchbald_cnn_matches_kirsch_et_al():
    """BlackHC/BatchBALD src/mnist_model.py: conv 32@5x5, MCDropout2d, pool, ReLU, conv 64@5x5,
    MCDropout2d, pool, ReLU, dense 1024 -> 128, MCDropout, ReLU, dense 10; inputs normalised."""
    net = batchbald_cnn()()
    kinds = [type(m).__name__ for m in net]
    assert kinds == [
        "Standardize", "Conv2d", "Dropout2d", "MaxPool2d", "ReLU", "Conv2d", "Dropout2d", "MaxPool2d", "ReLU",
        "Flatten", "Linear", "Dropout", "ReLU", "Linear",
    ]  # fmt: skip
    assert (net[1].out_channels, net[1].kernel_size, net[5].out_channels, net[5].kernel_size) == (32, (5, 5), 64, (5, 5))
    assert (net[10].in_features, net[10].out_features, net[13].out_features) == (1024, 128, 10)
    assert {m.p for m in net if isinstance(m, (nn.Dropout, nn.Dropout2d))} == {0.5}
    torch.testing.assert_close(net[0](torch.full((1,), 0.1307 + 0.3081)), torch.ones(1))
    assert sum(p.numel() for p in net[0].parameters()) == 0
    assert net.eval()(torch.zeros(3, 1, 28, 28)).shape == (3, 10)
    assert type(batchbald_cnn(standardize=None)()[0]).__name__ == "Conv2d"


def test_default_model_for_the_cli():
    assert default_model("mlp", (1, 28, 28), 10)()(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    assert default_model("cnn", (1, 28, 28), 10)()[0].out_channels == 32
    with pytest.raises(ConfigError, match="mlp, cnn"):
        default_model("resnet", (3,), 2)
    with pytest.raises(ConfigError, match="channel"):
        default_model("cnn", (28, 28), 10)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: mlp(0, 2), "in_features"),
        (lambda: mlp(2, 2, dropout=1.0), "dropout"),
        (lambda: mlp(2, 2, hidden=(4, -1)), "hidden"),
        (lambda: gal_cnn((1, 6, 6)), "8x8"),
        (lambda: gal_cnn((28, 28)), "in_shape"),
        (lambda: gal_script_cnn((1, 8, 8)), "9x9"),
        (lambda: gal_cnn(pool=0), "pool"),
        (lambda: gal_cnn(hidden=2.5), "hidden"),
        (lambda: batchbald_cnn((1, 12, 12)), "16x16"),
        (lambda: batchbald_cnn(dropout=1.5), "dropout"),
    ],
)
def test_bad_arguments_name_themselves(call, argument):
    with pytest.raises(ConfigError, match=argument):
        call()
