"""Batched runs: one process trains and scores a study's R runs at once (`[run] batched = true`).

    config = StudyConfig.from_toml("studies/gal2017/mnist-300.toml")   # with [run] batched = true
    run_study(config, "out")        # -> run_study_batched: the same rounds, records and results

The R runs of a study (acquisitions × repeats) train networks of one architecture with one
TrainConfig on labelled sets of one size at every round. Here their networks are stacked
(`torch.func.stack_module_state`) and run with `functional_call` under `vmap`, so round t of
every run is one training loop and one batched prediction per chunk, not R of each:

    stacked_network     the stacked forward, and each run's dropout noise (`RunsRandomness`)
    stacked_training    `train_stacked`: R `training.train` calls as one, the same draws in the
                        same order (item order, dropout noise, per-epoch permutations), one
                        optimiser over the stacked leaves (elementwise, so per run its own)
    stacked_prediction  deterministic probabilities and MC dropout logits (shared or independent
                        masks, each run's own) of R runs at once
    prepared_posterior  `PreparedMCDropout`: the posterior a run's loop fits and predicts with,
                        whose network and outputs were computed with the other runs'
    lockstep            the runs' loops stepped round by round, each round prepared for all

Each run's loop, store records, seeds and selection code are the per-run path's own: only the
arithmetic is batched, so a run's weights, probabilities and scores equal the per-run path's to
float tolerance (the batched kernels round differently; on the CPU convolutions run per run and
are exact), and its queries are the same wherever the scores are not within that tolerance of a
tie. Different float rounding can flip a near-tie, after which that run's trajectory differs as
it would across devices.

Where it applies (`batching_refusal`): mc-dropout with its fast path (`prefix_cache`), no early
stopping, a flat `nn.Sequential` without buffers or frozen parameters, the local engine.
Elsewhere the study runs one run at a time, with a one-line note on the `activebayes` logger.

What it buys depends on the device. A batched kernel does the FLOPs of R separate ones; it saves
launches, Python and per-process overhead, which is what small networks and GPUs pay for. On
the CPU a convolutional network's runs gain nothing and lose on working sets past the caches, so
`lockstep.CPU_BATCH_BYTES` stacks only as many runs as fit it: Gal et al.'s CNN then trains and
predicts run by run inside the lockstep (the per-run numbers exactly), the digits MLP all runs
together. On CUDA the budget is a quarter of the free memory.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from activebayes.batched_runs.lockstep import step_in_lockstep
from activebayes.batched_runs.stacked_network import stacking_refusal_for
from activebayes.batched_runs.stacked_training import stacking_refusal

_log = logging.getLogger(__name__)


def batching_refusal(config: Any, engine: str = "local") -> str | None:
    """Why a study config's runs cannot be batched (None: they can), from the config alone."""
    if engine != "local":
        return f"engine {engine!r} runs every run as its own task"
    if config.posterior != "mc-dropout":
        return f"the {config.posterior!r} posterior has no batched path (mc-dropout has)"
    if config.patience is not None:
        return "early stopping (model.patience) stops each run at its own epoch"
    if config.posterior_options.get("prefix_cache") is False:
        return "model.options.prefix_cache = false predicts with full passes"
    return None


def _network_refusal(loop: Any) -> str | None:
    """Why the runs' networks or training cannot be batched (None: they can)."""
    posterior = loop.posterior(seed=0)
    if getattr(posterior, "model_fn", None) is None:
        return "the posterior has no network factory"
    return stacking_refusal_for(posterior.model_fn()) or stacking_refusal(posterior.train_config)


@contextmanager
def _all_cores() -> Iterator[None]:
    """torch's intra-op threads = the cores, for one process doing the work of all runs (unless
    OMP_NUM_THREADS says otherwise); restored after."""
    import torch

    from activebayes.study_jobs import worker_threads

    threads = torch.get_num_threads()
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(worker_threads(1))
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _rounds_done(store: Any, name: str) -> int:
    from activebayes.store import RoundStatus

    return sum(1 for r in store.rounds(name) if r.status is RoundStatus.done and "accuracy" in r.metrics)


def run_study_batched(config: Any, out_dir: str | Path, *, device: str = "auto",
                      progress: Callable[[int, int, str], None] | None = None, jobs: int = 1, engine: str = "local",
                      one_by_one: Callable[[Any], Any] | None = None) -> Any:  # fmt: skip
    """Run (or resume) the study into `out_dir` with its runs batched (module docstring); the
    same StudyResult, study.db and results.json as `study.run_study`. Where batching does not
    apply, logs why in one line and calls `one_by_one(config without batched)` (default
    `study.run_study`). `jobs` > 1 is noted and not used: the one process takes every core."""
    from activebayes import study
    from activebayes._device import resolve_device
    from activebayes.store import PoolStore

    refusal = batching_refusal(config, engine)
    if refusal is None and jobs > 1:
        _log.warning("[run] batched: the runs share one process, which uses every core; --jobs %d is not used", jobs)
    if refusal is None:
        started = time.perf_counter()
        out_dir = Path(out_dir)
        data = study.prepare_study(config, out_dir, device=device)
        total = config.repeats * len(config.acquisitions) * config.rounds_per_run
        with PoolStore(f"sqlite:///{out_dir / 'study.db'}") as store:
            loops = [study.project_loop(store, config, data, r, a, device) for r in range(config.repeats) for a in config.acquisitions]
            refusal = _network_refusal(loops[0])
            if refusal is None:
                done = [sum(min(_rounds_done(store, loop.project), config.rounds_per_run) for loop in loops)]

                def on_round(loop: Any) -> None:
                    done[0] += 1
                    if progress is not None:
                        progress(min(done[0], total), total, f"{loop.project} (batched)")

                with _all_cores():
                    rounds = step_in_lockstep(loops, lambda loop: study.run_over(store, config, loop.project),
                                              resolve_device(device), on_round)  # fmt: skip
        if refusal is None:
            return study.collect_results(config, out_dir, rounds_run=rounds, started=started)
    _log.warning("[run] batched: %s; running the runs one by one", refusal)
    config = dataclasses.replace(config, batched=False)
    if one_by_one is not None:
        return one_by_one(config)
    return study.run_study(config, out_dir, device=device, progress=progress)


__all__ = ["batching_refusal", "run_study_batched"]
