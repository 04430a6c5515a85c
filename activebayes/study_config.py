"""A simulated study's configuration: `StudyConfig`, read from a TOML file and checked before
anything runs (a mistake is a `ConfigError` naming the file and the key).

TOML layout (every key optional except `acquisitions`; unknown keys are refused):

    name = "gal2017-mnist-small"     seed = 0     repeats = 2
    acquisitions = ["bald", "entropy", "random"]
    [data]   dataset = "digits" | "mnist"; path (mnist folder, relative to the TOML file);
             pool_size (subset of the training pool); test_size (mnist subset of the test set);
             test_fraction (digits: held-back share)
             validation_size (a seeded held-out set removed from the pool, as the paper's
             5,000-image validation set, which its code only monitors; [model] patience
             early-stops on it; nothing is fitted on it)
    [loop]   initial, balanced_initial, batch_size, max_labels, score_batch_size,
             acquisition_subset (score a random subset of M unlabelled items each round, seeded
             from the round seed = f(seed + repeat, round): reproducible and resumable),
             evaluation ("predictive": test accuracy of the posterior predictive;
             "deterministic": of mc-dropout's network with dropout off, one pass, as Keras'
             model.evaluate in the Gal et al. 2017 code), stop_when ("never", the default: run
             to max_labels; "stable": stop a run once the stopping signal fires, the mean kappa
             of consecutive rounds' stop-set predictions over the last 3 pairs reaching 0.98,
             Bloodgood & Vijay-Shanker 2009, `activebayes.stopping`; results.json records where
             every run would have stopped either way)
    [model]  posterior ("mc-dropout", ...), network ("mlp" | "cnn": Gal et al.'s, as their paper's
             text | "gal-script-cnn": as their published Keras script | "batchbald-cnn":
             Kirsch et al.'s, `activebayes.nets`), hidden, dropout,
             conv_dropout, epochs, lr, train_batch_size, n_samples,
             weight_decay (a number, or "gal": c / N with N the labelled items of the round,
             c = GAL_WEIGHT_DECAY_C; see below), masks ("shared" | "independent": MC dropout masks
             shared by every item or drawn per item, both seeded), epoch_samples (an epoch draws
             max(N, L) items with repeats, Kirsch et al.'s fixed-length epochs), patience (stop
             training when the score on the data.validation_size split has not improved for this
             many epochs and restore the best weights), validation_metric ("loss" | "accuracy",
             the score; dropout off), options (a table of the posterior's own constructor
             options, e.g. `options = { warm_start = true }` for snapshot-ensemble or
             `{ rank1 = "gaussian" }` for batch-ensemble)
    [report] paper = "gal2017": the plot marks the paper's Table 1 points and results.json
             quotes them
    [run]    batched = true: one process trains and scores the runs together, their networks
             stacked (`activebayes.batched_runs`; the same results to float tolerance); where that
             does not apply, a one-line note and the runs go one by one. How the study runs, not
             what it is: left out of the recorded config, so either way resumes the other's folder

Gal et al. 2017's code (github.com/Riashat/Deep-Bayesian-Active-Learning,
MC_Dropout_Keras/Dropout_Bald_Q10_N1000_Paper.py): `c = 3.5; Weight_Decay = c / N` with
`Dense(256, W_regularizer=l2(Weight_Decay))` (the first dense layer only), a Keras penalty
λ·||W||² added to the mean cross-entropy; torch's Adam `weight_decay=w` adds w·W to the gradient,
the gradient of (w/2)·||W||², so "gal" uses w = 2 · 3.5 / N (applied by `train` to every
parameter, not the one layer). The same script: Adam (Keras defaults, lr 0.001), batch 128,
a random 2,000-image pool subset scored per acquisition with 100 dropout passes, a 5,000-image
validation set passed as validation_data (monitoring only), a 40,000-image pool.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from activebayes.errors import ConfigError, closest_name

DATASETS = ("digits", "mnist")
NETWORKS = ("mlp", "cnn", "gal-script-cnn", "batchbald-cnn")
MNIST_FILES = {
    "train_x": "train-images-idx3-ubyte",
    "train_y": "train-labels-idx1-ubyte",
    "test_x": "t10k-images-idx3-ubyte",
    "test_y": "t10k-labels-idx1-ubyte",
}
# TOML table -> {key: (field name, kind)}; kind checks the value (see `_check`).
_SCHEMA: dict[str | None, dict[str, tuple[str, str]]] = {
    None: {"name": ("name", "str"), "seed": ("seed", "int>=0"), "repeats": ("repeats", "int>0"),
           "acquisitions": ("acquisitions", "list[str]")},
    "data": {"dataset": ("dataset", "str"), "path": ("data_path", "str"), "pool_size": ("pool_size", "int>0"),
             "test_size": ("test_size", "int>0"), "test_fraction": ("test_fraction", "fraction"),
             "validation_size": ("validation_size", "int>0")},
    "loop": {"initial": ("initial", "int>0"), "balanced_initial": ("balanced_initial", "bool"),
             "batch_size": ("batch_size", "int>0"), "max_labels": ("max_labels", "int>0"),
             "score_batch_size": ("score_batch_size", "int>0"), "acquisition_subset": ("acquisition_subset", "int>0"),
             "evaluation": ("evaluation", "predictive|deterministic"), "stop_when": ("stop_when", "never|stable")},
    "model": {"posterior": ("posterior", "str"), "network": ("network", "str"), "hidden": ("hidden", "list[int>0]"),
              "dropout": ("dropout", "fraction"), "conv_dropout": ("conv_dropout", "fraction"),
              "epochs": ("epochs", "int>0"), "lr": ("lr", "float>0"), "weight_decay": ("weight_decay", "float>=0|gal"),
              "train_batch_size": ("train_batch_size", "int>0"), "n_samples": ("n_samples", "int>0"),
              "masks": ("masks", "shared|independent"), "epoch_samples": ("epoch_samples", "int>0"),
              "patience": ("patience", "int>0"), "validation_metric": ("validation_metric", "loss|accuracy"),
              "options": ("posterior_options", "table")},
    "report": {"paper": ("paper", "gal2017")},
    "run": {"batched": ("batched", "bool")},
}  # fmt: skip
GAL_WEIGHT_DECAY_C = 7.0  # torch weight decay c / N: 2 × the Keras l2 constant 3.5 (module docstring)
MAX_REPEATS = 1000  # a study's repeats: each is a project (its pool, test split, rounds) per acquisition
# keys added after the first studies: left out of the recorded config at their defaults, so
# older output folders still resume
_OPTIONAL = {"validation_size": None, "acquisition_subset": None, "masks": "shared", "paper": None,
             "evaluation": "predictive", "epoch_samples": None, "patience": None, "validation_metric": "loss",
             "posterior_options": {}, "stop_when": "never"}




@dataclass(frozen=True)
class StudyConfig:
    """One simulated study (see the module docstring for the TOML keys). `data_path` is absolute."""

    acquisitions: tuple[str, ...]
    name: str = "study"
    seed: int = 0
    repeats: int = 1
    dataset: str = "digits"
    data_path: str | None = None
    pool_size: int | None = None
    test_size: int | None = None
    test_fraction: float = 0.3
    initial: int = 20
    balanced_initial: bool = True
    batch_size: int = 10
    max_labels: int = 100
    score_batch_size: int = 1024
    posterior: str = "mc-dropout"
    network: str = "mlp"
    hidden: tuple[int, ...] = (128,)
    dropout: float = 0.5
    conv_dropout: float = 0.25
    epochs: int | None = None
    lr: float | None = None
    weight_decay: float | str | None = None
    train_batch_size: int | None = None
    n_samples: int | None = None
    validation_size: int | None = None
    acquisition_subset: int | None = None
    masks: str = "shared"
    epoch_samples: int | None = None
    patience: int | None = None
    validation_metric: str = "loss"
    evaluation: str = "predictive"
    stop_when: str = "never"
    paper: str | None = None
    posterior_options: dict[str, Any] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)  # the TOML file it came from
    batched: bool = field(default=False, compare=False)  # [run] batched: how it runs, not recorded

    @classmethod
    def from_toml(cls, path: str | Path) -> StudyConfig:
        """Parse and validate a TOML file; ConfigError naming the file and the key on a mistake."""
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            raise ConfigError("config: reading TOML needs Python 3.11 (tomllib); run activebayes on Python >= 3.11") from None
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config: {str(path)!r} does not exist; pass the path of a study .toml file")
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config: {str(path)!r} is not valid TOML ({exc}); fix the file") from None
        return cls.from_dict(raw, base_dir=path.resolve().parent, source=str(path))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, base_dir: str | Path = ".", source: str | None = None) -> StudyConfig:
        """Validate a parsed TOML document; relative `data.path` is taken from `base_dir`."""
        where = f"{source}: " if source else ""
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key in _SCHEMA and key is not None:
                if not isinstance(value, Mapping):
                    raise ConfigError(f"{where}[{key}]: expected a table, got {value!r}")
                for sub, sub_value in value.items():
                    if sub not in _SCHEMA[key]:
                        raise ConfigError(f"{where}{key}.{sub}: unknown key; known keys in [{key}]: {', '.join(_SCHEMA[key])}")
                    name, kind = _SCHEMA[key][sub]
                    values[name] = _check(f"{where}{key}.{sub}", sub_value, kind)
            elif key in _SCHEMA[None]:
                name, kind = _SCHEMA[None][key]
                values[name] = _check(f"{where}{key}", value, kind)
            else:
                known = ", ".join([*_SCHEMA[None], *(f"[{t}]" for t in _SCHEMA if t)])
                raise ConfigError(f"{where}{key}: unknown key; known top-level keys and tables: {known}")
        if "acquisitions" not in values:
            raise ConfigError(f"{where}acquisitions: missing; list at least one, e.g. acquisitions = [\"bald\", \"random\"]")
        for name in ("acquisitions", "hidden"):
            if name in values:
                values[name] = tuple(values[name])
        if values.get("data_path") is not None:
            values["data_path"] = str((Path(base_dir) / values["data_path"]).resolve())
        config = cls(**values, source=source)
        config.validate()
        return config

    def validate(self) -> None:
        """Cross-field checks and name lookups (acquisitions, posterior, data files); the
        acquisitions are replaced by their registered names."""
        where = f"{self.source}: " if self.source else ""
        object.__setattr__(self, "acquisitions", _checked_acquisitions(self, where))
        _check_model(self, where)
        _check_data(self, where)

    def to_dict(self) -> dict[str, Any]:
        """The config as plain JSON values (recorded in results.json and checked on resume)."""
        out = dataclasses.asdict(self)
        out.pop("source")
        out.pop("batched")
        for key, default in _OPTIONAL.items():
            if out[key] == default:
                del out[key]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @property
    def rounds_per_run(self) -> int:
        """Fitted rounds per (acquisition, repeat): label counts initial, initial + K, ... up to max_labels."""
        return math.ceil((self.max_labels - self.initial) / self.batch_size) + 1


def _checked_acquisitions(config: StudyConfig, where: str) -> tuple[str, ...]:
    """The registered names of `config.acquisitions` (distinct, at least one); also checks `repeats`."""
    from activebayes.acquisition import resolve_acquisition

    if config.repeats > MAX_REPEATS:
        raise ConfigError(f"{where}repeats: expected at most {MAX_REPEATS} (each repeat is one project per acquisition), got {config.repeats}")
    if not config.acquisitions:
        raise ConfigError(f"{where}acquisitions: expected at least one name, got []")
    names = []
    for name in config.acquisitions:
        try:
            names.append(resolve_acquisition(name).name)
        except ConfigError as exc:
            raise ConfigError(f"{where}{exc}") from None
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}acquisitions: expected distinct names, got {list(config.acquisitions)}")
    return tuple(names)


def _check_model(config: StudyConfig, where: str) -> None:
    """[model]: the posterior and the options it must support (masks, deterministic evaluation,
    its own constructor options, "gal" weight decay, early stopping)."""
    cls = posterior_class(config.posterior, where)
    if config.masks != "shared" and "masks" not in cls.options:
        raise ConfigError(f"{where}model.masks: {config.posterior!r} has no dropout masks; leave it out or use mc-dropout")
    if config.evaluation == "deterministic" and not hasattr(cls, "predict_proba_deterministic"):
        raise ConfigError(f"{where}loop.evaluation: \"deterministic\" needs one network to run without dropout (mc-dropout), got {config.posterior!r}")
    try:  # model.options: the posterior's own; the study sets masks and weight decay itself
        check_posterior_options(cls, config.posterior, config.posterior_options,
                                set_elsewhere=("masks", "weight_decay_scale", "engine", "address"))  # fmt: skip
    except ConfigError as exc:
        raise ConfigError(f"{where}model.options.{exc}") from None
    if config.weight_decay == "gal" and "weight_decay_scale" not in cls.options:
        raise ConfigError(f"{where}model.weight_decay: \"gal\" needs a posterior with weight_decay_scale (mc-dropout), got {config.posterior!r}")
    if config.patience is not None and config.validation_size is None:
        raise ConfigError(f"{where}model.patience: early stopping needs a validation set; set data.validation_size")
    if config.validation_metric != "loss" and config.patience is None:
        raise ConfigError(f"{where}model.validation_metric: only used with model.patience (early stopping); leave it out or set patience")


def _check_data(config: StudyConfig, where: str) -> None:
    """[data] and [loop]: the dataset and the network it feeds, the data files, and sizes that
    fit (validation set, pool, test set, max_labels, a balanced start)."""
    if config.dataset not in DATASETS:
        raise ConfigError(f"{where}data.dataset: expected one of {', '.join(DATASETS)}, got {config.dataset!r}")
    if config.network not in NETWORKS:
        raise ConfigError(f"{where}model.network: expected one of {', '.join(NETWORKS)}, got {config.network!r}")
    if config.network != "mlp" and config.dataset != "mnist":
        raise ConfigError(f"{where}model.network: {config.network!r} needs images (data.dataset = \"mnist\"), got {config.dataset!r}")
    if config.dataset == "mnist":
        if config.data_path is None:
            raise ConfigError(f"{where}data.path: missing; give the MNIST folder (relative to the config file)")
        mnist_files(Path(config.data_path), where)
    elif config.data_path is not None or config.test_size is not None:
        key = "data.path" if config.data_path is not None else "data.test_size"
        raise ConfigError(f"{where}{key}: only used with data.dataset = \"mnist\"; leave it out (digits use test_fraction)")
    if not 0 < config.test_fraction < 1:
        raise ConfigError(f"{where}data.test_fraction: expected a number in (0, 1), got {config.test_fraction!r}")
    if config.max_labels <= config.initial:
        raise ConfigError(f"{where}loop.max_labels: expected more than loop.initial ({config.initial}), got {config.max_labels}")
    available = 60_000 if config.dataset == "mnist" else 1797 - round(config.test_fraction * 1797)
    if config.validation_size is not None:
        if config.validation_size >= available:
            raise ConfigError(f"{where}data.validation_size: {config.dataset} leaves {available} training items, got {config.validation_size}")
        available -= config.validation_size
    if config.pool_size is not None and config.pool_size > available:
        raise ConfigError(f"{where}data.pool_size: {config.dataset} leaves {available} pool items, got {config.pool_size}")
    pool = config.pool_size or available
    if config.test_size is not None and config.test_size > 10_000:
        raise ConfigError(f"{where}data.test_size: MNIST has 10000 test images, got {config.test_size}")
    if pool < config.max_labels + config.batch_size:
        raise ConfigError(f"{where}loop.max_labels: {config.max_labels} (+ one batch of {config.batch_size}) exceeds the pool of {pool} items")
    if config.balanced_initial and config.initial < 10:
        raise ConfigError(f"{where}loop.initial: a balanced start needs at least one item per class (10), got {config.initial}")


def _check(key: str, value: Any, kind: str) -> Any:
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{key}: expected {expected}, got {value!r}")

    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise bad("a non-empty string")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
    elif kind in ("int>0", "int>=0"):
        if not is_int or value < (1 if kind == "int>0" else 0):
            raise bad("a positive integer" if kind == "int>0" else "a non-negative integer")
    elif kind in ("float>0", "float>=0", "fraction"):
        if not (is_int or isinstance(value, float)) or not math.isfinite(value):
            raise bad("a number")
        value = float(value)
        if (kind == "float>0" and value <= 0) or (kind == "float>=0" and value < 0):
            raise bad("a positive number" if kind == "float>0" else "a non-negative number")
        if kind == "fraction" and not 0 <= value < 1:
            raise bad("a number in [0, 1)")
    elif kind == "float>=0|gal":
        if value == "gal":
            return value
        if isinstance(value, str):
            raise bad('a non-negative number or "gal"')
        return _check(key, value, "float>=0")
    elif kind in ("shared|independent", "predictive|deterministic", "loss|accuracy", "never|stable", "gal2017"):
        if value not in kind.split("|"):
            raise bad(" or ".join(f'"{v}"' for v in kind.split("|")))
    elif kind == "table":
        if not isinstance(value, Mapping) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
            raise bad("a table of option = value (strings, numbers, true/false)")
        return dict(value)
    elif kind == "list[str]":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a list of names")
    elif kind == "list[int>0]":
        if not isinstance(value, list) or not value or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
            raise bad("a non-empty list of positive integers")
    return value


def check_posterior_options(cls: type, name: str, options: Mapping[str, Any], *, set_elsewhere: Sequence[str] = ()) -> None:
    """Check a posterior's own constructor options before anything runs with them (a study's
    model.options, `activebayes round --option`): ConfigError "<key>: not an option of <name>;
    its options: ..." for a key outside `cls.options` (less `set_elsewhere`, the ones the caller
    sets itself), else whatever ConfigError the constructor raises for the values, found by
    building `cls` once with them (around a throwaway network for a network posterior)."""
    own = set(cls.options) - set(set_elsewhere)
    for key in options:
        if key not in own:
            known = ", ".join(sorted(own)) or "none"
            close = closest_name(key, sorted(own))
            meant = f" (did you mean {close}?)" if close else ""
            raise ConfigError(f"{key}: not an option of {name!r}; its options: {known}{meant}")
    if options:
        from activebayes.nets import mlp
        from activebayes.posteriors import NetworkPosterior

        if issubclass(cls, NetworkPosterior):
            cls(mlp(2, 2, hidden=(2,)), **options)
        else:
            cls(**options)


def posterior_class(name: str, where: str = "") -> type:
    """The registered posterior class `name`; it must be a network posterior (built from a `model_fn`)."""
    from activebayes.posteriors import NetworkPosterior, resolve_posterior

    try:
        cls = resolve_posterior(name)
    except ConfigError as exc:
        raise ConfigError(f"{where}model.{exc}") from None
    if not issubclass(cls, NetworkPosterior):
        raise ConfigError(f"{where}model.posterior: {name!r} does not train a network from model_fn; use e.g. mc-dropout")
    return cls


def mnist_files(folder: Path, where: str = "") -> dict[str, Path]:
    """The four MNIST IDX files in `folder` (raw or .gz); ConfigError naming a missing one."""
    if not folder.is_dir():
        raise ConfigError(f"{where}data.path: the MNIST folder {str(folder)!r} does not exist; fix the path (relative to the config file)")
    found = {}
    for role, stem in MNIST_FILES.items():
        path = next((p for p in (folder / stem, folder / f"{stem}.gz") if p.is_file()), None)
        if path is None:
            raise ConfigError(f"{where}data.path: {str(folder)!r} has no {stem}[.gz]; put the four MNIST IDX files there")
        found[role] = path
    return found


