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

The configuration (TOML keys, checks): `activebayes.study_config`; the data file and each
repeat's split: `activebayes.study_data`; the curves, results.json and the plot:
`activebayes.study_results`. This module runs the study.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.errors import ConfigError
from activebayes.store import RoundStatus
from activebayes.study_config import GAL_WEIGHT_DECAY_C, StudyConfig, check_posterior_options, mnist_files, posterior_class
from activebayes.study_data import RepeatSplit, StudyData, initial_rows, prepare_data, validation_set
from activebayes.study_results import StudyResult, collect_results, labels_to_reach, run_curve, summarise_curves


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


def prepare_study(config: StudyConfig, out_dir: str | Path, *, device: str = "auto") -> StudyData:
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


def _dataset(store: Any, name: str, data: StudyData) -> Any:
    from activebayes.data import load_project_data

    stat = data.path.stat()
    key = (str(data.path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _DATASETS:
        _DATASETS.clear()
        _DATASETS[key] = load_project_data(store, name)
    return _DATASETS[key]



def project_loop(store: Any, config: StudyConfig, data: StudyData, repeat: int, acquisition: str, device: str) -> Any:
    """The `ActiveLearningLoop` of project "<acquisition>-r<repeat+1>" (created and imported
    into `store` once), with the study's posterior factory, oracle and settings."""
    from activebayes.loop import ActiveLearningLoop
    from activebayes.oracles import SimulatedOracle

    validation = validation_set(config, repeat) if config.patience is not None else None
    factory, settings = _posterior_factory(config, data.shape, device, validation)
    name = f"{acquisition}-r{repeat + 1}"
    _import(store, name, data, data.splits[repeat])
    return ActiveLearningLoop(
        factory, acquisition, store, name, SimulatedOracle(dict(zip(data.keys, data.labels))),
        batch_size=config.batch_size, seed=config.seed + repeat, device=device,
        score_batch_size=config.score_batch_size, who="simulated", posterior_name=config.posterior,
        posterior_settings=settings, data=_dataset(store, name, data), acquisition_subset=config.acquisition_subset,
        evaluation=config.evaluation,
    )  # fmt: skip


def run_over(store: Any, config: StudyConfig, name: str) -> bool:
    """Whether project `name` is done: a round fitted on max_labels, or with `stop_when =
    "stable"` the stopping signal fired."""
    from activebayes.stopping import first_stop

    if _finished(store, name, config.max_labels):
        return True
    return config.stop_when == "stable" and first_stop(store.rounds(name)) is not None


def _run_project(store: Any, config: StudyConfig, data: StudyData, repeat: int, acquisition: str, device: str,
                 on_round: Callable[[], None] | None) -> tuple[list[tuple[int, float]], int]:  # fmt: skip
    """Run (or resume) project "<acquisition>-r<repeat+1>" to max_labels, or until the stopping
    signal fires with `stop_when = "stable"`; (its curve, rounds run)."""
    loop = project_loop(store, config, data, repeat, acquisition, device)
    name = loop.project
    rounds = 0
    while not run_over(store, config, name):
        loop.step()
        rounds += 1
        if on_round is not None:
            on_round()
    return run_curve(store, name, config.max_labels), rounds


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

    With `[run] batched = true` the runs train and score together in this process
    (`activebayes.batched_runs`) where that reproduces them; elsewhere a one-line note says why not.
    """
    from activebayes.store import PoolStore

    if config.batched:
        from activebayes.batched_runs import run_study_batched

        return run_study_batched(config, out_dir, device=device, progress=progress)
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


def _finished(store: Any, name: str, max_labels: int) -> bool:
    latest = store.latest_round(name)
    if latest is not None and not latest.status.finished:
        return False  # an interrupted round is finished first
    return any(r.status is RoundStatus.done and r.labelled_count >= max_labels for r in store.rounds(name))


def _import(store: Any, name: str, data: StudyData, split: RepeatSplit) -> None:
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



__all__ = ["StudyConfig", "StudyResult", "check_posterior_options", "collect_results", "initial_rows", "labels_to_reach",
           "mnist_files", "prepare_data", "prepare_study", "run_one", "run_study", "summarise_curves", "validation_set"]
