"""Simulated active-learning studies from a TOML file: `StudyConfig` + `run_study`.

    config = StudyConfig.from_toml("studies/gal2017/mnist-small.toml")
    result = run_study(config, "out/mnist-small")     # results.json, learning-curve.png, study.db

A study runs every acquisition in `acquisitions` `repeats` times. Repeat r (seed_r = seed + r)
fixes the pool, the test split, the initial labelled set (`initial` items, balanced across the
classes when `balanced_initial`) and the loop seed, so within a repeat every acquisition starts
from the same labels and trains with the same round seeds. Each (acquisition, repeat) is one
project "<acquisition>-r<r+1>" in ONE SQLite database `out_dir/study.db`, driven by
`ActiveLearningLoop` with a `SimulatedOracle` answering from the held-back labels, `batch_size`
queries per round, until a round has been fitted on `max_labels` labels. The test accuracy of
every round (recorded by the loop) gives one learning curve per project; results.json holds the
mean and the sd (ddof=1; 0 for one repeat) over repeats at each label count.

Resuming: the database is the state. Rerunning with the same `out_dir` and the same config
continues each project from its last recorded round (the loop resumes a round left unfinished);
a finished study adds nothing. A different config for an existing `out_dir` is refused.

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
             model.evaluate in the Gal et al. 2017 code)
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

Gal et al. 2017's code (github.com/Riashat/Deep-Bayesian-Active-Learning,
MC_Dropout_Keras/Dropout_Bald_Q10_N1000_Paper.py): `c = 3.5; Weight_Decay = c / N` with
`Dense(256, W_regularizer=l2(Weight_Decay))` (the first dense layer only), a Keras penalty
λ·||W||² added to the mean cross-entropy; torch's Adam `weight_decay=w` adds w·W to the gradient,
the gradient of (w/2)·||W||², so "gal" uses w = 2 · 3.5 / N (applied by `train` to every
parameter, not the one layer). The same script: Adam (Keras defaults, lr 0.001), batch 128,
a random 2,000-image pool subset scored per acquisition with 100 dropout passes, a 5,000-image
validation set passed as validation_data (monitoring only), a 40,000-image pool.

Per-run entry point (one process per run, e.g. activebayes.study_jobs):
`run_one(config, out_dir, acquisition, repeat, device, progress)` runs or resumes one
(acquisition, repeat) project; `collect_results(config, out_dir)` then writes results.json and
the plot from the store. `run_study` is prepare + every run_one in turn + collect_results.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.errors import ConfigError, DataError
from activebayes.store import RoundStatus

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
             "evaluation": ("evaluation", "predictive|deterministic")},
    "model": {"posterior": ("posterior", "str"), "network": ("network", "str"), "hidden": ("hidden", "list[int>0]"),
              "dropout": ("dropout", "fraction"), "conv_dropout": ("conv_dropout", "fraction"),
              "epochs": ("epochs", "int>0"), "lr": ("lr", "float>0"), "weight_decay": ("weight_decay", "float>=0|gal"),
              "train_batch_size": ("train_batch_size", "int>0"), "n_samples": ("n_samples", "int>0"),
              "masks": ("masks", "shared|independent"), "epoch_samples": ("epoch_samples", "int>0"),
              "patience": ("patience", "int>0"), "validation_metric": ("validation_metric", "loss|accuracy"),
              "options": ("posterior_options", "table")},
    "report": {"paper": ("paper", "gal2017")},
}  # fmt: skip
GAL_WEIGHT_DECAY_C = 7.0  # torch weight decay c / N: 2 × the Keras l2 constant 3.5 (module docstring)
# Gal et al. 2017, Table 1: labels to reach 10% / 5% test error on MNIST
GAL2017_TABLE1 = {"bald": (145, 335), "variation-ratio": (120, 295), "entropy": (165, 355),
                  "mean-std": (230, 695), "random": (255, 835)}  # fmt: skip
ACCURACY_TARGETS = (0.90, 0.95)
MAX_REPEATS = 1000  # a study's repeats: each is a project (its pool, test split, rounds) per acquisition
TIMING_MILESTONES = (100, 500, 1000)
# keys added after the first studies: left out of the recorded config at their defaults, so
# older output folders still resume
_OPTIONAL = {"validation_size": None, "acquisition_subset": None, "masks": "shared", "paper": None,
             "evaluation": "predictive", "epoch_samples": None, "patience": None, "validation_metric": "loss",
             "posterior_options": {}}


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
    paper: str | None = None
    posterior_options: dict[str, Any] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)  # the TOML file it came from

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
        """Cross-field checks and name lookups (acquisitions, posterior, data files)."""
        from activebayes.acquisition import resolve_acquisition

        where = f"{self.source}: " if self.source else ""
        if self.repeats > MAX_REPEATS:
            raise ConfigError(f"{where}repeats: expected at most {MAX_REPEATS} (each repeat is one project per acquisition), got {self.repeats}")
        if not self.acquisitions:
            raise ConfigError(f"{where}acquisitions: expected at least one name, got []")
        names = []
        for name in self.acquisitions:
            try:
                names.append(resolve_acquisition(name).name)
            except ConfigError as exc:
                raise ConfigError(f"{where}{exc}") from None
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}acquisitions: expected distinct names, got {list(self.acquisitions)}")
        object.__setattr__(self, "acquisitions", tuple(names))
        cls = posterior_class(self.posterior, where)
        if self.masks != "shared" and "masks" not in cls.options:
            raise ConfigError(f"{where}model.masks: {self.posterior!r} has no dropout masks; leave it out or use mc-dropout")
        if self.evaluation == "deterministic" and not hasattr(cls, "predict_proba_deterministic"):
            raise ConfigError(f"{where}loop.evaluation: \"deterministic\" needs one network to run without dropout (mc-dropout), got {self.posterior!r}")
        self._check_posterior_options(cls, where)
        if self.weight_decay == "gal" and "weight_decay_scale" not in cls.options:
            raise ConfigError(f"{where}model.weight_decay: \"gal\" needs a posterior with weight_decay_scale (mc-dropout), got {self.posterior!r}")
        if self.patience is not None and self.validation_size is None:
            raise ConfigError(f"{where}model.patience: early stopping needs a validation set; set data.validation_size")
        if self.validation_metric != "loss" and self.patience is None:
            raise ConfigError(f"{where}model.validation_metric: only used with model.patience (early stopping); leave it out or set patience")
        if self.dataset not in DATASETS:
            raise ConfigError(f"{where}data.dataset: expected one of {', '.join(DATASETS)}, got {self.dataset!r}")
        if self.network not in NETWORKS:
            raise ConfigError(f"{where}model.network: expected one of {', '.join(NETWORKS)}, got {self.network!r}")
        if self.network != "mlp" and self.dataset != "mnist":
            raise ConfigError(f"{where}model.network: {self.network!r} needs images (data.dataset = \"mnist\"), got {self.dataset!r}")
        if self.dataset == "mnist":
            if self.data_path is None:
                raise ConfigError(f"{where}data.path: missing; give the MNIST folder (relative to the config file)")
            mnist_files(Path(self.data_path), where)
        elif self.data_path is not None or self.test_size is not None:
            key = "data.path" if self.data_path is not None else "data.test_size"
            raise ConfigError(f"{where}{key}: only used with data.dataset = \"mnist\"; leave it out (digits use test_fraction)")
        if not 0 < self.test_fraction < 1:
            raise ConfigError(f"{where}data.test_fraction: expected a number in (0, 1), got {self.test_fraction!r}")
        if self.max_labels <= self.initial:
            raise ConfigError(f"{where}loop.max_labels: expected more than loop.initial ({self.initial}), got {self.max_labels}")
        available = 60_000 if self.dataset == "mnist" else 1797 - round(self.test_fraction * 1797)
        if self.validation_size is not None:
            if self.validation_size >= available:
                raise ConfigError(f"{where}data.validation_size: {self.dataset} leaves {available} training items, got {self.validation_size}")
            available -= self.validation_size
        if self.pool_size is not None and self.pool_size > available:
            raise ConfigError(f"{where}data.pool_size: {self.dataset} leaves {available} pool items, got {self.pool_size}")
        pool = self.pool_size or available
        if self.test_size is not None and self.test_size > 10_000:
            raise ConfigError(f"{where}data.test_size: MNIST has 10000 test images, got {self.test_size}")
        if pool < self.max_labels + self.batch_size:
            raise ConfigError(f"{where}loop.max_labels: {self.max_labels} (+ one batch of {self.batch_size}) exceeds the pool of {pool} items")
        if self.balanced_initial and self.initial < 10:
            raise ConfigError(f"{where}loop.initial: a balanced start needs at least one item per class (10), got {self.initial}")

    def _check_posterior_options(self, cls: type, where: str) -> None:
        """model.options: the posterior's own constructor options (its `options`), checked by
        `check_posterior_options`; the study sets masks and weight decay itself."""
        try:
            check_posterior_options(cls, self.posterior, self.posterior_options,
                                    set_elsewhere=("masks", "weight_decay_scale", "engine", "address"))  # fmt: skip
        except ConfigError as exc:
            raise ConfigError(f"{where}model.options.{exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """The config as plain JSON values (recorded in results.json and checked on resume)."""
        out = dataclasses.asdict(self)
        out.pop("source")
        for key, default in _OPTIONAL.items():
            if out[key] == default:
                del out[key]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @property
    def rounds_per_run(self) -> int:
        """Fitted rounds per (acquisition, repeat): label counts initial, initial + K, ... up to max_labels."""
        return math.ceil((self.max_labels - self.initial) / self.batch_size) + 1


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
    elif kind in ("shared|independent", "predictive|deterministic", "loss|accuracy", "gal2017"):
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
            raise ConfigError(f"{key}: not an option of {name!r}; its options: {known}")
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


# ---- data -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Split:
    pool: np.ndarray  # data-file rows of the candidate pool
    test: np.ndarray  # data-file rows of the test split
    initial: np.ndarray  # data-file rows labelled before the first round


@dataclass(frozen=True)
class _Data:
    path: Path
    labels: list[str]  # per data-file row
    keys: list[str]
    shape: tuple[int, ...]  # one item
    splits: list[_Split]  # per repeat


def _rng(config: StudyConfig, repeat: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng([config.seed, repeat, purpose])


def initial_rows(pool: np.ndarray, labels: np.ndarray, n: int, *, balanced: bool, rng: np.random.Generator) -> np.ndarray:
    """`n` rows of `pool`: uniformly at random, or balanced: n // C per class and the remainder
    one each to randomly chosen classes (C = the classes present in the pool)."""
    if not balanced:
        return np.sort(rng.choice(pool, size=n, replace=False))
    classes = np.unique(labels[pool])
    counts = np.full(len(classes), n // len(classes))
    counts[rng.choice(len(classes), size=n % len(classes), replace=False)] += 1
    chosen = []
    for c, k in zip(classes, counts):
        members = pool[labels[pool] == c]
        if len(members) < k:
            raise DataError(f"initial: class {c!r} has {len(members)} pool items, a balanced start needs {k}")
        chosen.append(rng.choice(members, size=k, replace=False))
    return np.sort(np.concatenate(chosen))


def _mnist_pool(config: StudyConfig, repeat: int, n: int) -> np.ndarray:
    """Repeat `repeat`'s pool rows of the MNIST training set: without a validation set as before
    (all, or a seeded pool_size subset); with one, its seeded validation_size rows are left out
    first and the pool is drawn from the rest."""
    if config.validation_size is None:
        if config.pool_size is None:
            return np.arange(n)
        return np.sort(_rng(config, repeat, 0).choice(n, size=config.pool_size, replace=False))
    rest = _rng(config, repeat, 2).permutation(n)[config.validation_size :]
    if config.pool_size is not None:
        rest = _rng(config, repeat, 0).choice(rest, size=config.pool_size, replace=False)
    return np.sort(rest)


def _atomic_savez(path: Path, **arrays: np.ndarray) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
    with tmp.open("wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)


def prepare_data(config: StudyConfig, out_dir: Path) -> _Data:
    """Write (once) the study's data file under `out_dir` and draw each repeat's split."""
    from activebayes.data import digits_arrays, write_digits

    splits = []
    if config.dataset == "digits":
        path = out_dir / "digits.npz"
        if not path.exists():
            write_digits(path)
        _, y = digits_arrays()
        keys = [f"digit-{i:04d}" for i in range(len(y))]
        shape: tuple[int, ...] = (64,)
        n_test = round(config.test_fraction * len(y))
        for r in range(config.repeats):
            order = _rng(config, r, 0).permutation(len(y))
            pool = order[n_test + (config.validation_size or 0) :]
            if config.pool_size is not None:
                pool = pool[: config.pool_size]
            splits.append((np.sort(pool), np.sort(order[:n_test])))
    else:
        from activebayes.data import read_idx

        files = mnist_files(Path(config.data_path or ""))
        train_y, test_y = read_idx(files["train_y"]).astype(np.int64), read_idx(files["test_y"]).astype(np.int64)
        pools = [_mnist_pool(config, r, len(train_y)) for r in range(config.repeats)]
        test = np.arange(len(test_y))
        if config.test_size is not None:
            test = np.sort(np.random.default_rng([config.seed, 7]).choice(len(test_y), size=config.test_size, replace=False))
        union = np.unique(np.concatenate(pools))
        y = np.concatenate([train_y[union], test_y[test]])
        keys = [f"train-{i:05d}" for i in union] + [f"test-{i:05d}" for i in test]
        shape = (1, 28, 28)
        path = out_dir / "mnist.npz"
        if not path.exists():
            images = np.concatenate([read_idx(files["train_x"])[union], read_idx(files["test_x"])[test]])
            _atomic_savez(path, x=(images.astype(np.float32) / 255.0)[:, None], y=y, keys=np.asarray(keys))
        test_rows = np.arange(len(union), len(y))
        splits = [(np.searchsorted(union, p), test_rows) for p in pools]
    out = []
    for r, (pool, test) in enumerate(splits):
        init = initial_rows(pool, y, config.initial, balanced=config.balanced_initial, rng=_rng(config, r, 1))
        out.append(_Split(pool=pool, test=test, initial=init))
    return _Data(path=path, labels=[str(int(v)) for v in y], keys=keys, shape=shape, splits=out)


# ---- running --------------------------------------------------------------------------------
@dataclass(frozen=True)
class StudyResult:
    """What `run_study` produced.

    runs: acquisition -> one curve per repeat, [(labels, test accuracy), ...].
    curves: acquisition -> [{"labels", "mean", "sd", "n"}] over repeats (label counts every
    finished repeat reached).
    """

    config: StudyConfig
    out_dir: Path
    database: Path
    results: Path
    plot: Path
    runs: dict[str, list[list[tuple[int, float]]]]
    curves: dict[str, list[dict[str, float]]]
    rounds_run: int
    elapsed_s: float


def summarise_curves(runs: Sequence[Sequence[tuple[int, float]]]) -> list[dict[str, float]]:
    """Mean and sd (ddof=1; 0 for one run) of the metric at each label count all runs share."""
    shared = set.intersection(*({n for n, _ in run} for run in runs)) if runs else set()
    out = []
    for n in sorted(shared):
        values = np.asarray([dict(run)[n] for run in runs], dtype=np.float64)
        sd = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        out.append({"labels": int(n), "mean": float(values.mean()), "sd": sd, "n": len(values)})
    return out


def validation_set(config: StudyConfig, repeat: int) -> tuple[np.ndarray, np.ndarray]:
    """Repeat `repeat`'s validation split (x [V, ...] float32 in [0, 1], y [V] int64): the seeded
    `validation_size` rows that `prepare_data` leaves out of the pool, read from the source data."""
    if config.validation_size is None:
        raise ConfigError("data.validation_size: the study has no validation set")
    if config.dataset == "digits":
        from activebayes.data import digits_arrays

        x, y = digits_arrays()
        n_test = round(config.test_fraction * len(y))
        rows = _rng(config, repeat, 0).permutation(len(y))[n_test : n_test + config.validation_size]
        return x[rows], y[rows]
    from activebayes.data import read_idx

    files = mnist_files(Path(config.data_path or ""))
    train_y = read_idx(files["train_y"]).astype(np.int64)
    rows = _rng(config, repeat, 2).permutation(len(train_y))[: config.validation_size]
    return (read_idx(files["train_x"])[rows].astype(np.float32) / 255.0)[:, None], train_y[rows]


def _posterior_factory(config: StudyConfig, shape: tuple[int, ...], device: str,
                       validation: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Callable, dict[str, Any]]:  # fmt: skip
    from functools import partial

    from activebayes.nets import batchbald_cnn, gal_cnn, gal_script_cnn, mlp
    from activebayes.training import resolve_train_config

    cls = posterior_class(config.posterior)
    if config.network == "cnn":
        model_fn = gal_cnn(shape, 10, conv_dropout=config.conv_dropout, dense_dropout=config.dropout)
    elif config.network == "gal-script-cnn":
        model_fn = gal_script_cnn(shape, 10, conv_dropout=config.conv_dropout, dense_dropout=config.dropout)
    elif config.network == "batchbald-cnn":
        model_fn = batchbald_cnn(shape, 10, dropout=config.dropout)
    else:
        model_fn = mlp(math.prod(shape), 10, hidden=config.hidden, dropout=config.dropout)
    gal = config.weight_decay == "gal"
    training = {"epochs": config.epochs, "lr": config.lr, "weight_decay": None if gal else config.weight_decay,
                "batch_size": config.train_batch_size}  # fmt: skip
    own = {"weight_decay_scale": GAL_WEIGHT_DECAY_C if gal else None,
           "masks": None if config.masks == "shared" else config.masks}  # fmt: skip
    training = {k: v for k, v in training.items() if v is not None}
    kwargs = {k: v for k, v in own.items() if v is not None and k in cls.options}
    kwargs |= config.posterior_options
    if config.n_samples is not None:
        kwargs["n_samples"] = config.n_samples
    stopping = {"epoch_samples": config.epoch_samples}
    if config.patience is not None:
        stopping |= {"patience": config.patience, "validation_metric": config.validation_metric}
    stopping = {k: v for k, v in stopping.items() if v is not None}
    settings = training | stopping | kwargs | {"network": config.network}
    train = dataclasses.replace(resolve_train_config(**training), **stopping)
    if config.patience is not None:
        if validation is None:
            raise ConfigError("model.patience: early stopping needs the repeat's validation set")
        import torch

        train = dataclasses.replace(train, validation_data=(torch.from_numpy(validation[0]), torch.from_numpy(validation[1])))
    kwargs |= {"train": train, "device": device}
    return partial(cls, model_fn, **kwargs), settings


def _check_resumable(config: StudyConfig, out_dir: Path) -> None:
    record = out_dir / "study-config.json"
    if record.exists():
        try:
            previous = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None
        if previous != config.to_dict():
            raise ConfigError(
                f"out_dir: {str(out_dir)!r} holds a study with a different config ({record.name}); "
                "give another out_dir, or the same config to resume"
            )
    else:
        tmp = record.with_name(f"{record.name}.{os.getpid()}.partial")
        tmp.write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, record)  # atomic: parallel runs never read half a record


def prepare_study(config: StudyConfig, out_dir: str | Path, *, device: str = "auto") -> _Data:
    """Check the device and `out_dir` (created; refused when it holds another config), write the
    data file once and return the splits. Safe to call from every worker process."""
    from activebayes._device import resolve_device

    resolve_device(device)  # a bad device fails before anything is written
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"out_dir: {str(out_dir)!r} is a file; pass a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    _check_resumable(config, out_dir)
    return prepare_data(config, out_dir)


_DATASETS: dict[tuple[str, int, int], Any] = {}  # the study's data file, loaded once per process


def _dataset(store: Any, name: str, data: _Data) -> Any:
    from activebayes.data import load_project_data

    stat = data.path.stat()
    key = (str(data.path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _DATASETS:
        _DATASETS.clear()
        _DATASETS[key] = load_project_data(store, name)
    return _DATASETS[key]


def _curve(store: Any, name: str, max_labels: int) -> list[tuple[int, float]]:
    return _accuracy_curve(_round_records(store, name, max_labels))


def _accuracy_curve(records: list[dict[str, float]]) -> list[tuple[int, float]]:
    """(labels, test accuracy) of each finished round, from `_round_records`."""
    return [(int(r["labels"]), r["accuracy"]) for r in records]


ROUND_RECORD_KEYS = ("accuracy", "nll", "ece", "fit_s", "score_s", "evaluate_s")


def _round_records(store: Any, name: str, max_labels: int) -> list[dict[str, float]]:
    """One run's finished rounds: {labels, accuracy, nll, ece (test metrics), fit_s, score_s,
    evaluate_s (seconds)}, each key present where the round recorded it."""
    records = []
    for r in store.rounds(name):
        if r.status is RoundStatus.done and "accuracy" in r.metrics and r.labelled_count <= max_labels:
            values = {**(r.timings or {}), **r.metrics}
            records.append({"labels": r.labelled_count} | {k: float(values[k]) for k in ROUND_RECORD_KEYS if k in values})
    return records


def _run_project(store: Any, config: StudyConfig, data: _Data, repeat: int, acquisition: str, device: str,
                 on_round: Callable[[], None] | None) -> tuple[list[tuple[int, float]], int]:  # fmt: skip
    """Run (or resume) project "<acquisition>-r<repeat+1>" to max_labels; (its curve, rounds run)."""
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle

    validation = validation_set(config, repeat) if config.patience is not None else None
    factory, settings = _posterior_factory(config, data.shape, device, validation)
    name = f"{acquisition}-r{repeat + 1}"
    _import(store, name, data, data.splits[repeat])
    loop = ActiveLearningLoop(
        factory, acquisition, store, name, SimulatedOracle(dict(zip(data.keys, data.labels))),
        batch_size=config.batch_size, seed=config.seed + repeat, device=device,
        score_batch_size=config.score_batch_size, who="simulated", posterior_name=config.posterior,
        posterior_settings=settings, data=_dataset(store, name, data), acquisition_subset=config.acquisition_subset,
        evaluation=config.evaluation,
    )  # fmt: skip
    rounds = 0
    while not _finished(store, name, config.max_labels):
        loop.step()
        rounds += 1
        if on_round is not None:
            on_round()
    return _curve(store, name, config.max_labels), rounds


def run_one(
    config: StudyConfig,
    out_dir: str | Path,
    acquisition: str,
    repeat: int,
    device: str = "auto",
    progress: Callable[[int, int, str], None] | None = None,
) -> list[tuple[int, float]]:
    """Run (or resume) ONE (acquisition, repeat) of the study in `out_dir` (repeat counts from 0);
    returns its learning curve [(labels, test accuracy), ...]. Prepares `out_dir` itself
    (`prepare_study`), so separate processes may each call it for different runs; each opens
    the shared study.db. progress(rounds_done, rounds_per_run, text) follows each round."""
    from activebayes.acquisition import resolve_acquisition
    from activebayes.store import PoolStore

    acquisition = resolve_acquisition(acquisition).name
    if acquisition not in config.acquisitions:
        raise ConfigError(f"acquisition: {acquisition!r} is not in the study's acquisitions {list(config.acquisitions)}")
    if not isinstance(repeat, int) or not 0 <= repeat < config.repeats:
        raise ConfigError(f"repeat: expected 0 to {config.repeats - 1}, got {repeat!r}")
    data = prepare_study(config, out_dir, device=device)
    text = f"{acquisition}, repeat {repeat + 1}/{config.repeats}"
    with PoolStore(f"sqlite:///{Path(out_dir) / 'study.db'}") as store:
        name = f"{acquisition}-r{repeat + 1}"
        state = {"done": 0}
        if name in store.projects():
            state["done"] = sum(1 for r in store.rounds(name) if r.status is RoundStatus.done and "accuracy" in r.metrics)

        def on_round() -> None:
            state["done"] += 1
            if progress is not None:
                progress(min(state["done"], config.rounds_per_run), config.rounds_per_run, text)

        curve, _ = _run_project(store, config, data, repeat, acquisition, device, on_round)
    return curve


def run_study(
    config: StudyConfig,
    out_dir: str | Path,
    *,
    device: str = "auto",
    progress: Callable[[int, int, str], None] | None = None,
) -> StudyResult:
    """Run (or resume) the study into `out_dir`; see the module docstring.

    Args:
        config: a validated StudyConfig.
        out_dir: folder for study.db, the data file, results.json and learning-curve.png
            (created; an existing one is resumed when it holds the same config).
        device: "auto" (CUDA when present), "cpu" or "cuda[:i]": training, scoring, evaluation.
        progress: called as progress(rounds_done, rounds_total, text) after each round.
    """
    from activebayes.store import PoolStore

    started = time.perf_counter()
    out_dir = Path(out_dir)
    data = prepare_study(config, out_dir, device=device)
    total = config.repeats * len(config.acquisitions) * config.rounds_per_run
    state = {"done": 0}
    rounds_run = 0
    with PoolStore(f"sqlite:///{out_dir / 'study.db'}") as store:
        for repeat in range(config.repeats):
            for acquisition in config.acquisitions:
                name = f"{acquisition}-r{repeat + 1}"
                if name in store.projects():
                    finished = sum(1 for r in store.rounds(name) if r.status is RoundStatus.done and "accuracy" in r.metrics)
                    state["done"] += min(finished, config.rounds_per_run)
                text = f"{acquisition}, repeat {repeat + 1}/{config.repeats}"

                def on_round(text: str = text) -> None:
                    state["done"] += 1
                    if progress is not None:
                        progress(min(state["done"], total), total, text)

                rounds_run += _run_project(store, config, data, repeat, acquisition, device, on_round)[1]
    return collect_results(config, out_dir, rounds_run=rounds_run, started=started)


def labels_to_reach(curve: Sequence[tuple[int, float]], target: float) -> int | None:
    """The first label count (in increasing order) whose accuracy is >= `target`; None if never."""
    for labels, value in sorted(curve):
        if value >= target:
            return int(labels)
    return None


def _reach_summary(config: StudyConfig, runs: Mapping[str, list[list[tuple[int, float]]]],
                   curves: Mapping[str, list[dict[str, float]]]) -> dict[str, dict[str, Any]]:  # fmt: skip
    out: dict[str, dict[str, Any]] = {}
    for acquisition, points in curves.items():
        mean_curve = [(c["labels"], c["mean"]) for c in points]
        out[acquisition] = {
            f"{a:.2f}": {"mean": labels_to_reach(mean_curve, a),
                         "per_seed": [labels_to_reach(run, a) for run in runs[acquisition]]}
            for a in ACCURACY_TARGETS
        }  # fmt: skip
    return out


def _timing_summary(config: StudyConfig, store: Any) -> dict[str, dict[str, Any]]:
    """acquisition -> {milestone labels: {fit_s, evaluate_s, score_s: median over repeats, n}}
    for each milestone in TIMING_MILESTONES some repeat reached (the first round at >= it)."""
    out: dict[str, dict[str, Any]] = {}
    for acquisition in config.acquisitions:
        per_milestone: dict[str, Any] = {}
        for milestone in TIMING_MILESTONES:
            if milestone > config.max_labels:
                continue
            rows = []
            for repeat in range(config.repeats):
                name = f"{acquisition}-r{repeat + 1}"
                if name not in store.projects():
                    continue
                done = [r for r in store.rounds(name) if r.status is RoundStatus.done and r.labelled_count >= milestone]
                if done:
                    rows.append(min(done, key=lambda r: r.labelled_count).timings or {})
            if rows:
                entry: dict[str, Any] = {"n": len(rows)}
                for key in ("fit_s", "evaluate_s", "score_s"):
                    values = [float(t[key]) for t in rows if key in t]
                    entry[key] = float(np.median(values)) if values else None
                per_milestone[str(milestone)] = entry
        out[acquisition] = per_milestone
    return out


def plot_study(config: StudyConfig, curves: Mapping[str, list[dict[str, float]]], path: Path) -> Path:
    """Mean ± sd bands per acquisition; with `paper = "gal2017"` the paper's Table 1 points."""
    from activebayes.report import _figure

    if not any(curves.values()):
        raise DataError("curves: expected at least one finished round, got none")
    figure = _figure()
    axes = figure.add_subplot()
    for acquisition, points in curves.items():
        if not points:
            continue
        xs = np.asarray([c["labels"] for c in points], dtype=np.float64)
        mean = np.asarray([c["mean"] for c in points])
        sd = np.asarray([c["sd"] for c in points])
        (line,) = axes.plot(xs, mean, linewidth=1.6, label=acquisition)
        axes.fill_between(xs, mean - sd, mean + sd, color=line.get_color(), alpha=0.2, linewidth=0)
        if config.paper == "gal2017" and acquisition in GAL2017_TABLE1:
            n90, n95 = GAL2017_TABLE1[acquisition]
            axes.scatter([n90, n95], [0.90, 0.95], marker="x", s=40, color=line.get_color(), zorder=3)
    if config.paper == "gal2017":
        axes.scatter([], [], marker="x", color="0.3", label="Gal et al. 2017, Table 1")
        axes.axhline(0.90, color="0.7", linewidth=0.8, linestyle=":")
        axes.axhline(0.95, color="0.7", linewidth=0.8, linestyle=":")
    axes.set_xlabel("labelled items")
    axes.set_ylabel("test accuracy")
    axes.grid(True, alpha=0.3)
    axes.legend()
    axes.set_title(f"{config.name}: {config.posterior}, mean ± sd of {config.repeats} repeat(s)")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path


def collect_results(config: StudyConfig, out_dir: str | Path, *, rounds_run: int = 0,
                    started: float | None = None) -> StudyResult:  # fmt: skip
    """Read every run's curve and timings from out_dir/study.db and write results.json and
    learning-curve.png (after run_study, or after all run_one calls of a parallel runner)."""
    from activebayes.store import PoolStore

    started = time.perf_counter() if started is None else started
    out_dir = Path(out_dir)
    db = out_dir / "study.db"
    runs: dict[str, list[list[tuple[int, float]]]] = {a: [] for a in config.acquisitions}
    rounds: dict[str, list[list[dict[str, float]]]] = {a: [] for a in config.acquisitions}
    with PoolStore(f"sqlite:///{db}") as store:
        projects = set(store.projects())
        for repeat in range(config.repeats):
            for acquisition in config.acquisitions:
                name = f"{acquisition}-r{repeat + 1}"
                if name in projects:
                    records = _round_records(store, name, config.max_labels)  # one pass over the run's rounds
                    runs[acquisition].append(_accuracy_curve(records))
                    rounds[acquisition].append(records)
        timings = _timing_summary(config, store)
    curves = {a: summarise_curves(points) for a, points in runs.items()}
    plot = plot_study(config, curves, out_dir / "learning-curve.png")
    document: dict[str, Any] = {
        "config": config.to_dict(), "curves": curves,
        "runs": {a: [[list(p) for p in run] for run in rs] for a, rs in runs.items()},
        "labels_to_reach": _reach_summary(config, runs, curves), "timings": timings, "rounds": rounds,
        "database": str(db), "plot": str(plot),
    }  # fmt: skip
    if config.paper == "gal2017":
        document["paper"] = {"source": "Gal, Islam & Ghahramani 2017, Table 1 (labels to reach 10% / 5% error)",
                             "labels_to_reach": {a: {"0.90": n90, "0.95": n95} for a, (n90, n95) in GAL2017_TABLE1.items()}}  # fmt: skip
    results = out_dir / "results.json"
    results.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return StudyResult(config, out_dir, db, results, plot, runs, curves, rounds_run, time.perf_counter() - started)


def _finished(store: Any, name: str, max_labels: int) -> bool:
    latest = store.latest_round(name)
    if latest is not None and not latest.status.finished:
        return False  # an interrupted round is finished first
    return any(r.status is RoundStatus.done and r.labelled_count >= max_labels for r in store.rounds(name))


def _import(store: Any, name: str, data: _Data, split: _Split) -> None:
    """Create the project with its pool, test split (labels known) and initial labels, once."""
    from activebayes.data import DIGITS_CLASSES

    if name not in store.projects():
        store.create_project(name, task="classification", classes=DIGITS_CLASSES,
                             settings={"truth": "held-back", "image_layout": "flat"})  # fmt: skip
    if store.count_items(name) > 0:
        return
    known = np.concatenate([split.test, split.initial])
    store.import_pool(
        name, data.path, data_format="npz",
        pool_rows=split.pool, pool_keys=[data.keys[i] for i in split.pool],
        test_rows=split.test, test_keys=[data.keys[i] for i in split.test],
        observations=[(data.keys[i], data.labels[i]) for i in known], who="simulated", source="import",
    )  # fmt: skip


__all__ = ["StudyConfig", "StudyResult", "collect_results", "initial_rows", "labels_to_reach", "prepare_data",
           "prepare_study", "run_one", "run_study", "summarise_curves", "validation_set"]
