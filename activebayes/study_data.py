"""A simulated study's data: the data file written once under the output folder, and each
repeat's split (pool, test, initial labels; and the validation set early stopping reads).

Repeat r fixes its pool, test split and initial labelled set (`initial` items, balanced across
the classes when `balanced_initial`) from seeds (seed, r, purpose), so every acquisition of a
repeat starts from the same labels.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from activebayes.errors import ConfigError, DataError
from activebayes.study_config import StudyConfig, mnist_files


@dataclass(frozen=True)
class RepeatSplit:
    """One repeat's split, as rows of the study's data file."""

    pool: np.ndarray  # data-file rows of the candidate pool
    test: np.ndarray  # data-file rows of the test split
    initial: np.ndarray  # data-file rows labelled before the first round


@dataclass(frozen=True)
class StudyData:
    """The study's data file (`path`), its labels and keys per row, one item's shape, and the
    split of each repeat."""

    path: Path
    labels: list[str]  # per data-file row
    keys: list[str]
    shape: tuple[int, ...]  # one item
    splits: list[RepeatSplit]  # per repeat


def repeat_rng(config: StudyConfig, repeat: int, purpose: int) -> np.random.Generator:
    """The generator of repeat `repeat` for `purpose` (0: pool and test split, 1: initial
    labels, 2: MNIST validation set)."""
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
        return np.sort(repeat_rng(config, repeat, 0).choice(n, size=config.pool_size, replace=False))
    rest = repeat_rng(config, repeat, 2).permutation(n)[config.validation_size :]
    if config.pool_size is not None:
        rest = repeat_rng(config, repeat, 0).choice(rest, size=config.pool_size, replace=False)
    return np.sort(rest)


def _atomic_savez(path: Path, **arrays: np.ndarray) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
    with tmp.open("wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)


def prepare_data(config: StudyConfig, out_dir: Path) -> StudyData:
    """Write (once) the study's data file under `out_dir` and draw each repeat's split."""
    from activebayes.data import write_digits

    splits = []
    if config.dataset == "digits":
        path = out_dir / "digits.npz"
        if not path.exists():
            write_digits(path)
        with np.load(path) as saved:  # the labels as written: no scikit-learn import in each worker
            y = saved["y"]
        keys = [f"digit-{i:04d}" for i in range(len(y))]
        shape: tuple[int, ...] = (64,)
        n_test = round(config.test_fraction * len(y))
        for r in range(config.repeats):
            order = repeat_rng(config, r, 0).permutation(len(y))
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
        init = initial_rows(pool, y, config.initial, balanced=config.balanced_initial, rng=repeat_rng(config, r, 1))
        out.append(RepeatSplit(pool=pool, test=test, initial=init))
    return StudyData(path=path, labels=[str(int(v)) for v in y], keys=keys, shape=shape, splits=out)




def validation_set(config: StudyConfig, repeat: int) -> tuple[np.ndarray, np.ndarray]:
    """Repeat `repeat`'s validation split (x [V, ...] float32 in [0, 1], y [V] int64): the seeded
    `validation_size` rows that `prepare_data` leaves out of the pool, read from the source data."""
    if config.validation_size is None:
        raise ConfigError("data.validation_size: the study has no validation set")
    if config.dataset == "digits":
        from activebayes.data import digits_arrays

        x, y = digits_arrays()
        n_test = round(config.test_fraction * len(y))
        rows = repeat_rng(config, repeat, 0).permutation(len(y))[n_test : n_test + config.validation_size]
        return x[rows], y[rows]
    from activebayes.data import read_idx

    files = mnist_files(Path(config.data_path or ""))
    train_y = read_idx(files["train_y"]).astype(np.int64)
    rows = repeat_rng(config, repeat, 2).permutation(len(train_y))[: config.validation_size]
    return (read_idx(files["train_x"])[rows].astype(np.float32) / 255.0)[:, None], train_y[rows]
