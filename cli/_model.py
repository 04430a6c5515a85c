"""Turning `--model` and `--posterior` into the posterior factory the loop takes, and checking
them on two items before a round is created.

`--model` (`mlp`, `cnn`, `auto`, `pkg.module:factory` or `path/to/file.py:factory`) becomes a
checked factory in `cli/_model_spec.py` (its names are importable from here too). The factory is
a user's zero-argument callable returning a fresh `torch.nn.Module` that outputs logits [N, C];
it is called once per network built. Everything is resolved and checked before a round starts,
so a mistake leaves the database unchanged.
"""

from __future__ import annotations

import functools
import json
import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from activebayes.errors import ConfigError, closest_name
from activebayes_cli._app import CliError
from activebayes_cli._model_spec import AUTO_MODEL, model_factory, normalize_model_spec  # noqa: F401  (re-exported)

#: The posteriors `activebayes round` can build around a network.
CLI_POSTERIORS = ("mc-dropout", "deep-ensemble", "snapshot-ensemble", "laplace", "swag", "mfvi", "batch-ensemble")
#: Those a regression project takes: the Gaussian process (no network, the default) and the
#: network posteriors (once they fit float targets; `check_regression_posterior` finds out).
REGRESSION_POSTERIORS = ("gp", *CLI_POSTERIORS)
#: What a gp round records as its model (it has none).
NO_MODEL = "none"
#: The acquisitions a regression project takes (closed forms with a GP's latent fields, epig's
#: joint Gaussian; nipv: gp only).
REGRESSION_ACQUISITIONS = ("variance", "eig", "bald", "random", "nipv", "epig", "power-epig", "auto")


#: The defaults a round uses when it names none, chosen on the real-data benchmark
#: (studies/benchmark, README "When active learning helps"): margin's scores drawn by power
#: sampling, which needs no samples shared across items, so it serves every posterior's options.
DEFAULT_ACQUISITION = {"classification": "power-margin", "regression": "auto"}
#: `--first auto`: TypiClust's typical items while the labels stay within two a class (on the
#: benchmark's tables of 5 or more classes; a uniform first batch on fewer), README_EXPERIMENTS.md
DEFAULT_FIRST = "auto"
#: `--cover-classes` (rounds draw uniformly while a class has no label) is off: on the benchmark's
#: tables of 3-10 classes it lowered power-EPIG's gain over random (README_EXPERIMENTS.md)
DEFAULT_COVER_CLASSES = False


def joint_samples(options: Mapping[str, Any] | None) -> bool:
    """Whether a posterior built with these --option values draws samples shared by every item
    (EPIG needs them: mc-dropout masks=independent and predictive=analytic draw none)."""
    return (options or {}).get("masks") != "independent" and (options or {}).get("predictive") != "analytic"


def default_acquisition(task: str, options: Mapping[str, Any] | None = None) -> str:
    """The --acquisition of a round that names none (`DEFAULT_ACQUISITION`). Neither default needs
    joint samples (power-margin reads the mean prediction; auto leaves EPIG out without them,
    `auto_arms`), so `options` does not change it."""
    return DEFAULT_ACQUISITION.get(task, "random")


def auto_arms(task: str, options: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The strategies `--acquisition auto` chooses among: `activebayes.acquisition.auto`'s
    defaults, less EPIG when the posterior's options rule out joint samples."""
    from activebayes.acquisition.auto import DEFAULT_ARMS

    arms = DEFAULT_ARMS[task]
    return arms if joint_samples(options) else tuple(a for a in arms if a not in ("epig", "power-epig"))


def default_first() -> str:
    """The --first of a round that names none: how the first batch is chosen before any label."""
    return DEFAULT_FIRST


def default_posterior(task: str) -> str:
    """The --posterior of a round that names none: gp for regression, mc-dropout otherwise."""
    return "gp" if task == "regression" else "mc-dropout"


def check_task_options(task: str, posterior: str, acquisition: str) -> None:
    """One-line CliErrors for an acquisition of the other task, or nipv without the GP."""
    from activebayes.acquisition import resolve_acquisition

    acq = resolve_acquisition(acquisition)
    served = getattr(acq, "tasks", frozenset({"classification"}))
    if task not in served:
        if task == "regression":
            raise CliError(
                f"--acquisition {acq.name}: a classification acquisition, and this is a regression project",
                f"choose one of {', '.join(REGRESSION_ACQUISITIONS)}",
            )
        raise CliError(f"--acquisition {acq.name}: regression only (a Gaussian-process acquisition)", "choose e.g. bald, batch-bald or entropy")
    if getattr(acq, "needs_model", False) and posterior != "gp":
        raise CliError(
            f"--acquisition {acq.name}: needs the Gaussian-process posterior (it fantasises observations with the GP), not {posterior}",
            "pass --posterior gp, or --acquisition variance / bald with a network posterior",
        )
#: posterior_settings keys holding --samples and --epochs. A round records "n_samples" (every
#: posterior's S) and "epochs" (or a snapshot ensemble's "epochs_per_cycle"); rounds recorded
#: before the rename hold a deep ensemble's "n_members" or a snapshot ensemble's "n_snapshots".
SAMPLE_KEYS = ("n_samples", "n_members", "n_snapshots")
EPOCH_KEYS = ("epochs", "epochs_per_cycle")
#: The default training of a network posterior (`activebayes.training.sized_training`): at least
#: 500 optimiser steps (and 50 epochs) however few the labels, weight decay λ/N with λ = 1.
TRAINING_DEFAULTS = {"min_epochs": 50, "min_steps": 500, "prior_precision": 1.0}


#: Constructor arguments `round` sets through its own flags, never through --option (a
#: posterior's `epochs_option`, e.g. a snapshot ensemble's epochs_per_cycle, is --epochs too).
FLAG_SET_OPTIONS = {"n_samples": "--samples", "epochs": "--epochs", "device": "--device", "seed": "--seed",
                    "engine": "--engine", "address": "--address", "likelihood": "--likelihood"}  # fmt: skip
OPTION_EXAMPLES = "--option masks=independent or --option predictive=analytic"


def parse_option_value(text: str) -> Any:
    """The value of `--option KEY=VALUE` as a TOML literal (true/false, numbers, "quoted strings",
    arrays); text that is not one TOML value, such as a bare word, is the string itself, so that
    `predictive=analytic` needs no quotes."""
    import tomllib

    try:
        parsed = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    return parsed["v"] if set(parsed) == {"v"} else text  # "1\nw = 2" is not one value


def _plain_value(value: Any) -> bool:
    """Whether `value` can be recorded as JSON and compared on resume: true/false, a string, a
    finite number, or an array of those."""
    if isinstance(value, list):
        return all(_plain_value(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool))


def parse_posterior_options(texts: Sequence[str]) -> dict[str, Any]:
    """{key: value} of the --option KEY=VALUE arguments, in order: a one-line CliError for an
    argument without `=`, an empty key or value, a value that is a TOML date, table or infinity
    (a round records its options as JSON), or a key given twice."""
    options: dict[str, Any] = {}
    for text in texts:
        key, eq, raw = (part.strip() for part in text.partition("="))
        if not eq or not key or not raw:
            raise CliError(f"--option {text!r}: expected KEY=VALUE", f"pass e.g. {OPTION_EXAMPLES}")
        value = parse_option_value(raw)
        if not _plain_value(value):
            raise CliError(
                f"--option {key}: {raw!r} is not a value a round can record (a TOML date, table, infinity or nan)",
                'give true/false, a finite number, a string (quoted if it looks like a number: \'KEY="1"\') or an array of them',
            )
        if key in options:
            raise CliError(f"--option {key}: given twice ({option_words({key: options[key]})} and {option_words({key: value})})", "give each option once")
        options[key] = value
    return options


def _option_literal(value: Any) -> str:
    """`value` as --option writes it: a string bare where it reads back as itself, else quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_option_literal(v) for v in value) + "]"
    if isinstance(value, str) and not (value == value.strip() and value and parse_option_value(value) == value):
        return json.dumps(value)  # a TOML basic string: quotes and escapes as JSON's
    return str(value) if isinstance(value, str) else repr(value)


def option_words(options: Mapping[str, Any]) -> str:
    """The --option arguments that give `options`, shell-quoted where needed: "--option masks=independent"."""
    return " ".join(f"--option {shlex.quote(f'{key}={_option_literal(value)}')}" for key, value in options.items())


def check_posterior_options(name: str, options: Mapping[str, Any]) -> None:
    """A one-line CliError for an --option that posterior `name` cannot take: one its own flag
    sets (FLAG_SET_OPTIONS), one outside its `options` (naming those it has), or a value its
    constructor refuses (`activebayes.study.check_posterior_options` builds it once with them)."""
    from activebayes.posteriors import resolve_posterior
    from activebayes.study import check_posterior_options as check_constructor_options

    cls = resolve_posterior(name)
    flags = {**FLAG_SET_OPTIONS, **({cls.epochs_option: "--epochs"} if getattr(cls, "epochs_option", None) else {})}
    options = {key: value for key, value in options.items() if key != "likelihood"}  # --likelihood's, checked by `likelihood_options`
    for key in options:
        if key in flags:
            raise CliError(f"--option {key}: `round` sets it from {flags[key]}", f"pass {flags[key]} instead of --option {key}=...")
    try:
        check_constructor_options(cls, name, options, set_elsewhere=tuple(flags))
    except (ConfigError, TypeError, ValueError) as exc:  # the constructor's own words, as one line
        what, _, fix = " ".join(str(exc).split()).partition("; ")
        raise CliError(f"--option {what}", fix or f"give a value {name} accepts, or leave that --option out") from None


#: The values of `round --likelihood` (regression projects with a network posterior).
CLI_LIKELIHOODS = ("gaussian", "heteroscedastic")


def likelihood_options(likelihood: str | None, task: str, posterior: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The posterior's --option values with `--likelihood` among them (as the constructor's
    `likelihood`, so a round records and resumes it with its options): one-line CliErrors for
    --option likelihood=... (the flag sets it), a classification project, an unknown value, the
    gp (no network) or a posterior that does not fit it."""
    if "likelihood" in options:
        raise CliError("--option likelihood: `round` sets it from --likelihood", "pass --likelihood instead of --option likelihood=...")
    if likelihood is None:
        return dict(options)
    if task != "regression":
        raise CliError(f"--likelihood {likelihood}: regression projects only, and this is a {task} project", "leave --likelihood out")
    if likelihood not in CLI_LIKELIHOODS:
        raise CliError(f"--likelihood: unknown name {likelihood!r}", f"choose one of {', '.join(CLI_LIKELIHOODS)}")
    from activebayes.posteriors import NetworkPosterior, resolve_posterior

    cls = resolve_posterior(posterior)
    if not issubclass(cls, NetworkPosterior) or likelihood not in cls.likelihoods:
        takes = ", ".join(name for name in CLI_POSTERIORS if likelihood in resolve_posterior(name).likelihoods)
        raise CliError(f"--likelihood {likelihood}: --posterior {posterior} does not fit it", f"pass a --posterior that does: {takes}")
    return {**options, "likelihood": likelihood}


def network_outputs(task: str, n_classes: int, options: Mapping[str, Any]) -> int:
    """The outputs per item of a round's network: one logit per class, one value for a regression
    (gaussian likelihood), two for the heteroscedastic likelihood's natural parameters."""
    if task != "regression":
        return n_classes
    return 2 if options.get("likelihood") == "heteroscedastic" else 1


def check_posterior_name(name: str, task: str = "classification") -> None:
    """A one-line CliError unless `name` is one of CLI_POSTERIORS (REGRESSION_POSTERIORS for
    a regression project)."""
    allowed = REGRESSION_POSTERIORS if task == "regression" else CLI_POSTERIORS
    if name in allowed:
        return
    from activebayes.posteriors import POSTERIORS

    choices = ", ".join(allowed)
    if name in POSTERIORS and task != "regression":
        raise CliError(f"--posterior: {name!r} is a regression posterior without a network", f"choose one of {choices}")
    close = closest_name(name, allowed)
    hint = f" (did you mean {close}?)" if close else ""
    raise CliError(f"--posterior: unknown name {name!r}", f"choose one of {choices}{hint}")


def check_acquisition_name(name: str) -> None:
    """A one-line CliError, naming the option, unless `name` is a registered acquisition."""
    from activebayes.acquisition import resolve_acquisition

    try:
        resolve_acquisition(name)
    except ConfigError as exc:
        what, _, fix = str(exc).partition("; ")
        raise CliError(f"--{what}", fix) from None


class SizedFit:
    """An unfitted network posterior whose training is sized to the labelled set when fitted:
    `fit(x, y)` builds `cls(model_fn, seed=seed, train=TrainConfig(epochs, weight_decay), **kwargs)`
    with `training_record(cls, len(x), epochs)`'s epochs (unless `epochs` is given) and weight
    decay, fits it in `StandardisedTargets` (a regression's targets in units of their spread), a
    small MLP on one intra-op thread (`training_threads`), and returns the fitted posterior."""

    def __init__(
        self, cls: Any, model_fn: Callable[[], Any], kwargs: dict[str, Any], seed: int | None = None, *, epochs: int | None = None
    ) -> None:
        self.cls, self.model_fn, self.kwargs, self.seed, self.epochs = cls, model_fn, dict(kwargs), seed, epochs
        self.training: dict[str, Any] | None = None  # what the last fit used

    def fit(self, x: Any, y: Any) -> Any:
        from activebayes.training import TrainConfig

        self.training = training_record(self.cls, len(x), self.epochs)
        epochs = self.training["epochs"] if self.training["rule"] == "min-steps" else self.epochs
        train = TrainConfig(weight_decay=self.training["weight_decay"], **({"epochs": epochs} if epochs is not None else {}))
        from activebayes.posteriors.standardised import standardised  # regression targets in any units, as the loop's
        from activebayes_cli._threads import training_threads

        with training_threads(self.model_fn) as model_fn:  # one thread for a small MLP's steps, decided at its first build
            return standardised(self.cls(model_fn, seed=self.seed, train=train, **self.kwargs)).fit(x, y)


def training_record(cls: Any, labelled: int, epochs: int | None) -> dict[str, Any]:
    """The training posterior class `cls` gets on `labelled` items (a round records it as
    posterior_settings["training"]): `sized_training` with TRAINING_DEFAULTS where `train.epochs`
    sets the class's training length; only the weight decay λ/N where an option of its own does
    (`epochs_option`: a snapshot ensemble keeps its cycle length)."""
    from activebayes.training import TrainConfig, sized_training

    record = sized_training(max(int(labelled), 1), epochs=epochs, batch_size=TrainConfig().batch_size, **TRAINING_DEFAULTS)
    if cls.epochs_option is not None:
        record = {"rule": "weight-decay-only", **{k: record[k] for k in ("labelled", "prior_precision", "weight_decay")}}
    return record


def posterior_defaults(name: str) -> dict[str, Any]:
    """The constructor arguments an unfitted posterior `name` takes by default (`get_params()`
    of one built with nothing else; a network posterior gets a factory it never calls)."""
    from activebayes.posteriors import NetworkPosterior, resolve_posterior

    cls = resolve_posterior(name)
    return (cls(_never_called) if issubclass(cls, NetworkPosterior) else cls()).get_params()


def _never_called() -> Any:
    raise AssertionError("posterior_defaults builds no network")


def posterior_factory(
    name: str, model_fn: Callable[[], Any] | None, *, samples: int | None, epochs: int | None, device: str,
    labelled: int | None = None, options: Mapping[str, Any] | None = None,
) -> tuple[Callable[..., Any], dict[str, Any]]:
    """(factory(seed=...) -> unfitted posterior, the settings recorded with the round).

    `samples` sets the posterior's S, `n_samples`. `epochs` sets `train.epochs`, or the option
    that sets a network posterior's training length where that does not (`epochs_option`: a
    snapshot ensemble's `epochs_per_cycle`). `gp` takes no network (`model_fn` None): --samples
    sets its Gauss–Hermite nodes S; it takes no --epochs. `options` (--option, checked by
    `check_posterior_options`) go to the constructor as they are, and are recorded under
    "options" when there are any (so a round without them records what it always did).
    """
    from activebayes.posteriors import NetworkPosterior, resolve_posterior

    check_posterior_name(name, "regression" if name == "gp" else "classification")
    cls = resolve_posterior(name)
    network = issubclass(cls, NetworkPosterior)
    kwargs: dict[str, Any] = {**(options or {}), "device": device}
    settings: dict[str, Any] = {}
    if samples is not None:
        kwargs["n_samples"] = settings["n_samples"] = samples
    if epochs is not None and not network:
        raise CliError(f"--epochs: posterior {name!r} takes no epochs", "leave --epochs out")
    recorded = {"options": dict(options)} if options else {}
    if model_fn is None or not network:
        return functools.partial(cls, **kwargs), settings | recorded
    train_epochs = epochs
    if epochs is not None and cls.epochs_option is not None:
        kwargs[cls.epochs_option] = settings[cls.epochs_option] = epochs
        train_epochs = None
    elif epochs is not None:
        settings["epochs"] = epochs
    # Network posteriors: training sized to the labelled set at each fit (SizedFit); with
    # `labelled` (the items the round fits on) the settings record it under "training".
    if labelled:
        settings["training"] = training_record(cls, labelled, train_epochs)
    return functools.partial(SizedFit, cls, model_fn, kwargs, epochs=train_epochs), settings | recorded


def posterior_default(name: str, keys: Sequence[str]) -> Any:
    """The default of the first of `keys` that posterior `name` takes (`posterior_defaults`):
    what a round recorded without --samples/--epochs ran with; None where the training sized to
    the labelled set decides (--epochs of most network posteriors)."""
    defaults = posterior_defaults(name)
    return next((defaults[k] for k in keys if k in defaults), None)
