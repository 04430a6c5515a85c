"""`NetworkPosterior`: the base of every posterior over a neural network's weights.

A network posterior approximates p(θ | D) for the weights θ of a network f(x; θ) and predicts
with S samples θ_1..θ_S of it (dropout mask sets, ensemble members, snapshots, weight draws;
`n_samples` = S in every subclass):

    classification:  p(y | x_n, D) ≈ (1/S) Σ_s softmax(f(x_n; θ_s))          probs [S, N, C]
    regression:      y | x_n, θ_s ~ N(f(x_n; θ_s), σ²)                        mean, var [S, N]
    heteroscedastic: y | x_n, θ_s ~ N(μ(x_n; θ_s), σ²(x_n; θ_s))             mean, var [S, N]

As laplace-torch's `BaseLaplace` carries its subclasses, the base owns everything they share
and leaves the approximation to one hook:

    __init__(model_fn | model=, n_samples, train, seed, device, likelihood, <own options>)
        stores the arguments and checks the shared ones (a one-line ConfigError naming the
        argument); a subclass checks its own options, named in its `options` class attribute.
    fit(x [N, ...], y [N]) -> self
        resolves the likelihood (from y's dtype when None), draws the seed `seed_` when none is
        given, resolves `device_`, then calls the subclass's `_fit_network(x, y)`, which builds
        its network(s) with `_network(seed)` (a fresh one from `model_fn`, or a copy of the
        trained `model`), trains them with `train_config` unless `model` is given, and sets the
        fitted attributes (ending in `_`).
    to(device), predict_proba(x) [N, C] (the mean of `predict`'s S softmax samples),
    predict_mean_var(x) (regression: the mean and spread of `predict`'s S outputs),
    get_params() / clone()  (scikit-learn style: type(p)(**p.get_params()) is an unfitted copy).

Training is configured once, by `train` (an `activebayes.training.TrainConfig`, None for its
defaults).
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypedDict

import torch
from torch import Tensor, nn

from activebayes._device import parse_device, resolve_device
from activebayes.errors import ConfigError, ShapeError, classification_only, regression_only
from activebayes.gaussian_likelihood import regression_output, resolve_likelihood
from activebayes.likelihoods import HETEROSCEDASTIC, heteroscedastic_loss, mean_variance_of_output
from activebayes.posteriors.base import check_fitted
from activebayes.predictive import GaussianPredictive, Predictive
from activebayes.target_units import in_target_units, standardise_targets
from activebayes.training import TrainConfig, as_tensor, build_model, check_positive_int

ModelFn = Callable[[], nn.Module]

#: The constructor arguments every network posterior takes, in `get_params` order.
SHARED_PARAMS = ("model_fn", "model", "n_samples", "train", "seed", "device", "likelihood")
LIKELIHOODS = ("categorical", "gaussian")
#: The likelihoods of regression (float targets): homoscedastic Gaussian, and a Gaussian whose
#: mean and variance the network predicts (`activebayes.likelihoods`; the posteriors that list it
#: in their `likelihoods`).
REGRESSION_LIKELIHOODS = ("gaussian", HETEROSCEDASTIC)


class NetworkArgs(TypedDict, total=False):
    """The keyword arguments a subclass passes on to `NetworkPosterior.__init__` unchanged."""

    model: Any
    train: TrainConfig | None
    seed: int | None
    device: str | torch.device
    likelihood: str | None


def check_choice(name: str, value: object, choices: Iterable[object]) -> None:
    """Raise a one-line ConfigError naming `name` unless `value` is one of `choices`."""
    choices = tuple(choices)
    if value not in choices:
        valid = ", ".join(repr(str(c)) if c is not None else "None" for c in choices)
        raise ConfigError(f"{name}: expected one of {valid}, got {value!r}")


def check_bool(name: str, value: object) -> None:
    """Raise a one-line ConfigError naming `name` unless `value` is True or False (not 1, not "yes")."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: expected true or false, got {value!r}")


def check_positive_number(name: str, value: object, *, allow_none: bool = False) -> None:
    """Raise a one-line ConfigError naming `name` unless `value` is a number > 0 (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        expected = "a positive number" + (" or None" if allow_none else "")
        raise ConfigError(f"{name}: expected {expected}, got {value!r}")


class NetworkPosterior:
    """The shared constructor, `fit` template, `to`, `predict_proba`, `predict_mean_var`,
    `get_params` and `clone` of the network posteriors (module docstring).

    Shared args:
        model_fn: a zero-argument callable returning a fresh network (logits [N, C], or one
            output per item for regression); `activebayes.nets` builds such factories.
        model: instead of `model_fn`, an already-trained network (copied, never changed); what
            `fit` does with it is the subclass's `model` entry. Exactly one of the two.
        n_samples: S, the predictive samples (`predict(x, n_samples)` overrides it per call).
        train: how `fit` trains (a TrainConfig; None: TrainConfig()'s defaults).
        seed: seeds the initialisation, the data order and the samples; None draws one at `fit`
            (recorded as `seed_`).
        device: "auto" (CUDA when present), "cpu", "cuda[:i]"; `to(device)` moves a fitted one.
        likelihood: "categorical" (softmax over logits [N, C]), "gaussian" (regression: one
            output per item, [N, 1] or [N]), or None to infer it from y's dtype at `fit`
            (float targets -> gaussian, integer -> categorical); where the subclass lists it in
            `likelihoods`, "heteroscedastic" (regression: two outputs per item [N, 2], the
            natural parameters of N(μ(x), σ²(x)), `activebayes.likelihoods`; trained on the
            Gaussian NLL of standardised targets, each sample predicting its own μ_s(x), σ²_s(x)).

    Fitted attributes (every subclass): `seed_`, `device_`, `likelihood_`, `noise_` (σ², the
    Gaussian likelihood's noise, regression only; None for classification and heteroscedastic),
    `target_location_`, `target_scale_` (heteroscedastic: the targets' mean and sd; else 0 and 1).

    Subclass contract: `options` (class attribute) names the subclass's own constructor
    arguments, each stored under its name; `epochs_option` names the option that sets the
    training length in epochs where `train.epochs` does not; `_fitted_attribute` is set by
    `_fit_network`; `_move(device)` moves what `_fit_network` built.
    """

    #: The subclass's own constructor arguments (beyond SHARED_PARAMS), in `get_params` order.
    options: ClassVar[tuple[str, ...]] = ()
    #: The option that sets how many epochs `fit` trains for, where `train.epochs` does not.
    epochs_option: ClassVar[str | None] = None
    #: The fitted attribute that says `fit` has run.
    _fitted_attribute: ClassVar[str] = "model_"
    #: The `likelihood` values the subclass fits (`heteroscedastic` where it trains with a loss).
    likelihoods: ClassVar[tuple[str, ...]] = LIKELIHOODS

    likelihood_: str = "categorical"  # set by fit; the class default keeps hand-assembled instances classifiers
    noise_: Any = None

    def __init__(
        self,
        model_fn: ModelFn | None = None,
        *,
        model: Any = None,
        n_samples: int,
        train: TrainConfig | None = None,
        seed: int | None = None,
        device: str | torch.device = "auto",
        likelihood: str | None = None,
    ) -> None:
        name = type(self).__name__
        if (model_fn is None) == (model is None):
            got = "both" if model_fn is not None else "neither"
            raise ConfigError(f"model_fn: {name} expects exactly one of model_fn (a factory to train) and model (a trained network), got {got}")
        if model_fn is not None and (isinstance(model_fn, nn.Module) or not callable(model_fn)):
            what = "a network (pass a trained one as model=)" if isinstance(model_fn, nn.Module) else type(model_fn).__name__
            raise ConfigError(f"model_fn: expected a zero-argument callable returning a fresh network, got {what}")
        check_positive_int("n_samples", n_samples)
        if train is not None and not isinstance(train, TrainConfig):
            raise ConfigError(f"train: expected an activebayes.training.TrainConfig or None, got {type(train).__name__}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigError(f"seed: expected an integer or None, got {seed!r}")
        parse_device(device)
        check_choice("likelihood", likelihood, (*type(self).likelihoods, None))
        self.model_fn, self.model, self.n_samples = model_fn, model, n_samples
        self.train, self.seed, self.device, self.likelihood = train, seed, device, likelihood
        if model is not None:
            self._check_model(model)

    def _check_model(self, model: Any) -> None:
        """Refuse a `model` this posterior cannot use (here: anything but one nn.Module)."""
        if not isinstance(model, nn.Module):
            raise ConfigError(f"model: expected a trained torch.nn.Module, got {type(model).__name__}")

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> dict[str, Any]:
        """The constructor arguments {name: value} (SHARED_PARAMS, then `options`), so that
        type(self)(**self.get_params()) builds an unfitted posterior configured the same."""
        return {name: getattr(self, name) for name in (*SHARED_PARAMS, *self.options)}

    def clone(self) -> NetworkPosterior:
        """An unfitted copy with the same arguments (networks and configs shared, not copied:
        `fit` never changes them)."""
        return type(self)(**self.get_params())

    @property
    def train_config(self) -> TrainConfig:
        """`train`, or the TrainConfig defaults when it is None."""
        return self.train if self.train is not None else TrainConfig()

    # ------------------------------------------------------------------ fitting
    def fit(self, x: Tensor, y: Tensor) -> NetworkPosterior:
        """Fit on inputs x [N, ...] and targets y [N] (integer labels, or floats for regression);
        returns self. The steps are in the module docstring."""
        x, y = as_tensor("x", x), as_tensor("y", y)
        if x.shape[0] != y.shape[0]:
            raise ShapeError(f"y: expected {x.shape[0]} targets to match x, got {y.shape[0]}")
        heteroscedastic = self.likelihood == HETEROSCEDASTIC
        likelihood, y = resolve_likelihood("gaussian" if heteroscedastic else self.likelihood, y)
        self.seed_ = self.seed if self.seed is not None else secrets.randbits(62)
        self.device_ = resolve_device(self.device)
        self.likelihood_, self.noise_ = likelihood, None
        self.target_location_, self.target_scale_ = 0.0, 1.0
        if heteroscedastic:
            y = self._standardise_targets(y)
        self._fit_network(x, y)
        return self

    def _standardise_targets(self, y: Tensor) -> Tensor:
        """likelihood="heteroscedastic": the network is trained on (y − m) / s, m and s the targets'
        mean and standard deviation (s = 1 when they are constant), recorded as
        `target_location_` and `target_scale_`; `_predictive` maps μ and σ² back (m + s μ, s² σ²).
        Early stopping would score the mean squared error of a two-output network: refused."""
        if self.train_config.validation_fraction > 0 or self.train_config.validation_data is not None:
            raise ConfigError("train: likelihood='heteroscedastic' trains on the Gaussian NLL, which early stopping does not score; "
                              "leave validation_fraction and validation_data out")
        self.likelihood_ = HETEROSCEDASTIC
        y, self.target_location_, self.target_scale_ = standardise_targets(y)
        return y

    @property
    def _train_loss(self) -> Callable[[Tensor, Tensor], Tensor] | None:
        """The mini-batch loss `train` minimises: None for its task loss (cross-entropy, squared
        error), the heteroscedastic Gaussian NLL of the two outputs for that likelihood."""
        return heteroscedastic_loss if self.likelihood_ == HETEROSCEDASTIC else None

    def _fit_network(self, x: Tensor, y: Tensor) -> None:
        """Build (or copy), train and summarise the network(s); set the fitted attributes."""
        raise NotImplementedError

    @property
    def _network_argument(self) -> str:
        """The argument the network came from, for error messages: "model" or "model_fn"."""
        return "model" if self.model is not None else "model_fn"

    def _network(self, seed: int) -> nn.Module:
        """A copy of the trained `model`, or a fresh network from `model_fn` initialised with `seed`."""
        if self.model is not None:
            return copy.deepcopy(self.model)
        return build_model(self.model_fn, seed)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ devices
    def _check_fitted(self) -> None:
        check_fitted(self, self._fitted_attribute)

    def to(self, device: str | torch.device) -> NetworkPosterior:
        """Move the fitted posterior to `device` ("auto", "cpu", "cuda[:i]"); returns self.
        Samples are drawn from seeded CPU generators, so they do not change."""
        self._check_fitted()
        dev = resolve_device(device)
        self._move(dev)
        self.device_ = dev
        return self

    def _move(self, device: torch.device) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ prediction
    def _sample_count(self, n_samples: int | None) -> int:
        """S for one `predict` call: `n_samples`, or the constructor's when None."""
        count = self.n_samples if n_samples is None else n_samples
        check_positive_int("n_samples", count)
        return count

    def _predictive(self, logits: Tensor, noise: Tensor | float | None = None) -> Predictive | GaussianPredictive:
        """The network outputs for S samples as a predictive: classification, logits [S, N, C]
        -> Predictive(softmax); regression, outputs [S, N, 1] or [S, N] -> GaussianPredictive
        with mean [S, N] and var [S, N] = σ² (`noise`: a float, or σ_s² [S] per sample;
        default `noise_`)."""
        if self.likelihood_ == HETEROSCEDASTIC:  # outputs [S, N, 2] -> each sample's μ_s, σ²_s [S, N]
            mean, var = in_target_units(*mean_variance_of_output(logits), self.target_location_, self.target_scale_)
            return GaussianPredictive(mean, var, check=False)
        if self.likelihood_ == "gaussian":
            mean = regression_output(logits, 1)
            noise = self.noise_ if noise is None else noise
            if isinstance(noise, Tensor):
                var = noise[: mean.shape[0]].to(mean.dtype).unsqueeze(1).expand_as(mean)
            else:
                var = torch.full_like(mean, noise)
            return GaussianPredictive(mean, var, check=False)
        if logits.dim() != 3:
            raise ShapeError(
                f"{self._network_argument}: expected the network to output logits [N, C], got [N, ...] = {tuple(logits.shape[1:])}"
            )
        return Predictive(torch.softmax(logits, dim=-1), check=False)

    def predict(self, x: Tensor, n_samples: int | None = None) -> Predictive | GaussianPredictive:
        """S seeded, pool-consistent posterior samples for x [N, ...]: a Predictive [S, N, C], or
        for regression a GaussianPredictive (mean, var [S, N]); each approximator implements it."""
        raise NotImplementedError

    def predict_proba(self, x: Tensor) -> Tensor:
        """Posterior predictive (1/S) Σ_s p(y | x_n, θ_s), [N, C] (classification only)."""
        self._check_fitted()
        if self.likelihood_ in REGRESSION_LIKELIHOODS:
            raise regression_only("predict_proba")
        return self.predict(x).mean()

    def predict_mean_var(self, x: Tensor, n_samples: int | None = None, *, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Regression: mean [N] and variance [N] of f, the spread of `predict`'s S outputs
        (population variance, weights 1/S; as GaussianProcess.predict_mean_var and BoTorch's
        posterior); with observation_noise the total variance of y, σ² (its mean over the
        samples) + that spread."""
        self._check_fitted()
        if self.likelihood_ not in REGRESSION_LIKELIHOODS:
            raise classification_only("predict_mean_var")
        return self.predict(x, n_samples).moments(observation_noise=observation_noise)


def inputs_for(network: nn.Module, x: Tensor) -> Tensor:
    """x cast to the floating dtype of the network's parameters (float32 for parameterless ones)."""
    parameter = next(network.parameters(), None)
    return x.to(parameter.dtype if parameter is not None and parameter.is_floating_point() else torch.float32)


__all__ = ["LIKELIHOODS", "REGRESSION_LIKELIHOODS", "SHARED_PARAMS", "NetworkArgs", "NetworkPosterior", "check_choice", "check_positive_number", "inputs_for"]
