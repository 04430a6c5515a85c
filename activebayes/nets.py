"""Default networks with dropout, as model factories.

Every function here returns a *model factory*: a zero-argument callable that builds a fresh,
randomly initialised `nn.Sequential` each time it is called. Posteriors take such a factory
(`model_fn`) because they build several networks (ensemble members) or rebuild one each round.
The networks output logits [N, C]; posteriors apply the softmax. For regression (float targets,
a Gaussian likelihood) build them with n_classes=1: one output per item, [N, 1].

All of them are flat `nn.Sequential`s with dropout layers, so `MCDropout` can split them
into a deterministic prefix, run once per input, and a stochastic tail batched over samples.

>>> import torch
>>> make = mlp(2, 3, hidden=(8,))
>>> make()(torch.zeros(5, 2)).shape
torch.Size([5, 3])
>>> gal_cnn()()(torch.zeros(4, 1, 28, 28)).shape
torch.Size([4, 10])
>>> batchbald_cnn()()(torch.zeros(4, 1, 28, 28)).shape
torch.Size([4, 10])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import StrEnum

from torch import nn

from activebayes.errors import ConfigError

ModelFn = Callable[[], nn.Module]


class ModelKind(StrEnum):
    """CLI names of the default networks."""

    MLP = "mlp"
    CNN = "cnn"


def _check_positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name}: expected a positive integer, got {value!r}")


def _check_probability(name: str, value: float) -> None:
    if not 0.0 <= float(value) < 1.0:
        raise ConfigError(f"{name}: expected a dropout probability in [0, 1), got {value!r}")


def _image_shape(in_shape: Sequence[int], n_classes: int) -> tuple[int, int, int]:
    """(channels, height, width) of a CNN's input, checked with `n_classes`."""
    if len(in_shape) != 3:
        raise ConfigError(f"in_shape: expected (channels, height, width), got {tuple(in_shape)!r}")
    channels, height, width = (int(v) for v in in_shape)
    _check_positive("in_shape channels", channels)
    _check_positive("n_classes", n_classes)
    return channels, height, width


def mlp(
    in_features: int,
    n_classes: int,
    *,
    hidden: Sequence[int] = (128, 128),
    dropout: float = 0.5,
) -> Callable[[], nn.Sequential]:
    """Factory of a ReLU multi-layer perceptron with dropout after every hidden layer.

    Flatten → [Linear(D, h_i) → ReLU → Dropout(p)] for each h_i in `hidden` → Linear(h_last, C).
    Input [N, D] (or [N, ...] with D elements per item, flattened); output logits [N, C].
    """
    _check_positive("in_features", in_features)
    _check_positive("n_classes", n_classes)
    for width in hidden:
        _check_positive("hidden", width)
    _check_probability("dropout", dropout)
    widths = [in_features, *hidden]

    def build() -> nn.Sequential:
        layers: list[nn.Module] = [nn.Flatten()]
        for fan_in, fan_out in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(fan_in, fan_out), nn.ReLU(), nn.Dropout(dropout)]
        layers.append(nn.Linear(widths[-1], n_classes))
        return nn.Sequential(*layers)

    return build


def gal_cnn(
    in_shape: Sequence[int] = (1, 28, 28),
    n_classes: int = 10,
    *,
    conv_dropout: float = 0.25,
    dense_dropout: float = 0.5,
    kernel_size: int = 4,
    pool: int = 2,
    hidden: int = 128,
) -> Callable[[], nn.Sequential]:
    """Factory of the MNIST CNN of Gal, Islam & Ghahramani (2017), "Deep Bayesian Active Learning".

    conv 32@kxk → ReLU → conv 32@kxk → ReLU → max-pool p → Dropout(0.25) → flatten →
    dense H → ReLU → Dropout(0.5) → dense C. Input [N, c, h, w] = [N, *in_shape]; output [N, C].
    The paper's text: k = 4, p = 2, H = 128 (the defaults; 28x28 images give 32 · 11 · 11 = 3872
    flattened features). The paper's published Keras script
    (MC_Dropout_Keras/Dropout_Bald_Q10_N1000_Paper.py): k = 3, p = 5, H = 256 (32 · 4 · 4 = 512),
    `gal_script_cnn`.
    """
    channels, height, width = _image_shape(in_shape, n_classes)
    _check_probability("conv_dropout", conv_dropout)
    _check_probability("dense_dropout", dense_dropout)
    for name, value in (("kernel_size", kernel_size), ("pool", pool), ("hidden", hidden)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name}: expected a positive integer, got {value!r}")
    shrink = 2 * (kernel_size - 1)  # two valid kxk convolutions
    out_h, out_w = (height - shrink) // pool, (width - shrink) // pool
    if out_h < 1 or out_w < 1:
        raise ConfigError(f"in_shape: expected images of at least {shrink + pool}x{shrink + pool} pixels, got {height}x{width}")
    flat = 32 * out_h * out_w

    def build() -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(channels, 32, kernel_size=kernel_size),
            nn.ReLU(),
            nn.Conv2d(32, 32, kernel_size=kernel_size),
            nn.ReLU(),
            nn.MaxPool2d(pool),
            nn.Dropout(conv_dropout),
            nn.Flatten(),
            nn.Linear(flat, hidden),
            nn.ReLU(),
            nn.Dropout(dense_dropout),
            nn.Linear(hidden, n_classes),
        )

    return build


def gal_script_cnn(
    in_shape: Sequence[int] = (1, 28, 28), n_classes: int = 10, *, conv_dropout: float = 0.25, dense_dropout: float = 0.5,
) -> Callable[[], nn.Sequential]:  # fmt: skip
    """The network of Gal et al.'s published Keras script: `gal_cnn` with 3x3 kernels, a 5x5
    max-pool and a 256-unit dense layer (Convolution2D(32, 3, 3) twice, MaxPooling2D((5, 5)),
    Dense(256)). For 28x28 images: 26 → 24 → 4 after the pool, 512 flattened features."""
    return gal_cnn(in_shape, n_classes, conv_dropout=conv_dropout, dense_dropout=dense_dropout, kernel_size=3, pool=5, hidden=256)


class Standardize(nn.Module):
    """x ↦ (x - mean) / std with fixed scalars (no parameters), e.g. torchvision's MNIST
    Normalize(0.1307, 0.3081) as a network's first layer."""

    def __init__(self, mean: float, std: float) -> None:
        super().__init__()
        if not float(std) > 0:
            raise ConfigError(f"std: expected a positive number, got {std!r}")
        self.mean, self.std = float(mean), float(std)

    def forward(self, x):  # noqa: ANN001, ANN201 - a tensor in, a tensor out
        return (x - self.mean) / self.std

    def extra_repr(self) -> str:
        return f"mean={self.mean}, std={self.std}"


def batchbald_cnn(
    in_shape: Sequence[int] = (1, 28, 28),
    n_classes: int = 10,
    *,
    dropout: float = 0.5,
    standardize: tuple[float, float] | None = (0.1307, 0.3081),
) -> Callable[[], nn.Sequential]:
    """Factory of the MNIST CNN of Kirsch, van Amersfoort & Gal (2019), "BatchBALD"
    (github.com/BlackHC/BatchBALD, src/mnist_model.py).

    [Standardize(0.1307, 0.3081): their torchvision Normalize] → conv 32@5x5 → Dropout2d(p) →
    max-pool 2 → ReLU → conv 64@5x5 → Dropout2d(p) → max-pool 2 → ReLU → flatten → dense 128 →
    Dropout(p) → ReLU → dense C. Input [N, *in_shape]; output [N, C]. For 28x28 images the
    flattened features number 64 · 4 · 4 = 1024. Channel dropout (Dropout2d) after each conv, as
    their MCDropout2d; `standardize=None` leaves the input as it is.
    """
    channels, height, width = _image_shape(in_shape, n_classes)
    _check_probability("dropout", dropout)
    out_h, out_w = ((height - 4) // 2 - 4) // 2, ((width - 4) // 2 - 4) // 2
    if out_h < 1 or out_w < 1:
        raise ConfigError(f"in_shape: expected images of at least 16x16 pixels, got {height}x{width}")

    def build() -> nn.Sequential:
        head = [Standardize(*standardize)] if standardize is not None else []
        return nn.Sequential(
            *head,
            nn.Conv2d(channels, 32, kernel_size=5),
            nn.Dropout2d(dropout),
            nn.MaxPool2d(2),
            nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=5),
            nn.Dropout2d(dropout),
            nn.MaxPool2d(2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64 * out_h * out_w, 128),
            nn.Dropout(dropout),
            nn.ReLU(),
            nn.Linear(128, n_classes),
        )

    return build


def default_model(kind: ModelKind | str, input_shape: Sequence[int], n_classes: int) -> ModelFn:
    """The factory the CLI uses for `--model mlp|cnn`.

    Args:
        kind: "mlp" (any input shape, flattened) or "cnn" (Gal's CNN; images [c, h, w]).
        input_shape: the shape of one item, without the batch dimension.
        n_classes: C, the number of outcome classes.
    """
    try:
        kind = ModelKind(kind)
    except ValueError:
        raise ConfigError(f"model: expected one of {', '.join(k.value for k in ModelKind)}, got {kind!r}") from None
    shape = tuple(int(v) for v in input_shape)
    if kind is ModelKind.MLP:
        return mlp(math.prod(shape), n_classes)
    if len(shape) == 2:
        raise ConfigError(
            f"input_shape: the cnn expects images with a channel axis [c, h, w], got {shape}; "
            "reshape the pool to [N, 1, h, w]"
        )
    return gal_cnn(shape, n_classes)


__all__ = ["ModelFn", "ModelKind", "Standardize", "batchbald_cnn", "default_model", "gal_cnn", "gal_script_cnn", "mlp"]
