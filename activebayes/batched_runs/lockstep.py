"""A study's runs in lockstep, in one process: `step_in_lockstep` (for `run_study_batched`).

Every run keeps its own `ActiveLearningLoop` (`study.project_loop`), store project, seeds and
records, exactly as under `run_study`. Only the work inside a round moves: before the runs step
through round t, `prepare_round` does for all of them at once what their loops will ask for,

  1. the fit: each run's posterior (`PreparedMCDropout`, built by its loop's factory with the
     round seed the loop will use) builds its network from that seed and hands back its training
     job (labelled items, TrainConfig with c/N weight decay, seed); the jobs with the same number
     of labels and TrainConfig train together (`train_stacked`), as many at a time as fit the
     memory budget (`CPU_BATCH_BYTES`, or a quarter of a GPU's free memory), and each network is
     installed; a job that fits only alone is left to its loop's own `fit`;
  2. the outputs: each run's test split and stop set (deterministic probabilities, or logits for
     the predictive evaluation) and, for a score-based acquisition, its candidates (logits, the
     round's acquisition subset), in the very chunks its loop passes to `predict`; the same chunk
     of every run is one batched call (`stacked_prediction`; runs per call again within the
     budget, and a chunk that fits only alone is left to the loop), remembered by each posterior;

then each loop's `step()` runs unchanged: its `fit` finds the installed network, its `predict`
calls find the remembered outputs (a miss is computed as MCDropout computes it), and it selects,
records and asks as always. A run that needs no fit this round (a round resumed after scoring)
just steps. The runs are done when `study.run_over` says so (max_labels, or `stop_when`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch

from activebayes.batched_runs.prepared_posterior import FitJob, PreparedMCDropout
from activebayes.batched_runs.stacked_network import MASKED, StackedSequential
from activebayes.batched_runs.stacked_prediction import deterministic_probs, independent_logits, shared_logits
from activebayes.batched_runs.stacked_training import train_stacked
from activebayes.posteriors.mc_dropout import flatten_sequential
from activebayes.store import RoundStatus
from activebayes.training import epoch_steps

#: On the CPU, the most bytes of activations one batched call may hold: R runs' training step
#: (every layer's output, and its gradient, of b items) or prediction (the widest activation of n
#: items, twice; S times for shared masks). A batched CPU kernel does the FLOPs of R separate ones,
#: and on working sets past the caches it is slower (Gal et al.'s CNN, 15 runs: 0.78x, README_EXPERIMENTS.md),
#: so a convolutional network's runs there fit one at a time and are left to their own loops,
#: while small networks (the digits MLP) still run together. On CUDA: a quarter of the free memory.
CPU_BATCH_BYTES = 32 << 20
#: acquisitions whose loop does not score the candidates chunk by chunk with `predict`
_UNSCORED = ("random", "auto")


class PreparedFactory:
    """A loop's posterior factory: `factory(seed=s)` hands out the posterior prepared for round
    seed s (once), else a fresh `PreparedMCDropout` with the study's arguments."""

    def __init__(self, base: partial) -> None:
        self.make = partial(PreparedMCDropout, *base.args, **base.keywords)
        self.prepared: dict[int, PreparedMCDropout] = {}

    def __call__(self, seed: int) -> PreparedMCDropout:
        prepared = self.prepared.pop(seed, None)
        return prepared if prepared is not None else self.make(seed=seed)


@dataclass
class Request:
    """One `predict` call a run's loop will make this round: `kind` "deterministic" (probs) or
    "logits" (with S = n_samples), on the items at `rows` (chunk `chunk` of `purpose`)."""

    loop: Any
    posterior: PreparedMCDropout
    kind: str
    n_samples: int | None
    purpose: str
    chunk: int
    rows: np.ndarray


@dataclass
class Plan:
    """What run `loop` needs this round: its posterior, the fit job, and the predict requests."""

    loop: Any
    posterior: PreparedMCDropout
    job: FitJob
    requests: list[Request] = field(default_factory=list)


def plan_round(loop: Any, factory: PreparedFactory, device: torch.device) -> Plan | None:
    """The next round of `loop` as its `step()` will run it, or None when that step fits nothing
    (a resumed round past its fit, no labels yet). Registers the round's posterior with `factory`."""
    from activebayes.loop import round_seed

    store, name = loop.store, loop.project
    rnd = store.latest_round(name)
    if rnd is None or rnd.status.finished:
        seed, first_time = round_seed(loop.seed, 1 if rnd is None else rnd.number + 1), True
    elif rnd.status.refits:
        seed, first_time = rnd.seed, rnd.status is RoundStatus.started
    else:
        return None
    rows, _, values = store.labels(name)
    if len(rows) == 0 or loop.debias:
        return None
    posterior = factory.make(seed=seed)
    plan = Plan(loop, posterior, posterior.defer_fit(loop._features(rows), loop._targets(values)))
    factory.prepared[seed] = posterior
    evaluation = ("deterministic", None) if loop.evaluation == "deterministic" else ("logits", posterior.n_samples)
    item = _activation_bytes(plan.job.model, plan.job.x[:1])
    if first_time and _lanes(device, item, loop.score_batch_size, *evaluation, posterior.masks) > 1:
        plan.requests += _requests(loop, posterior, store.labels(name, split="test")[0], "test", *evaluation)
        plan.requests += _requests(loop, posterior, _stop_set_rows(loop), "stop-set", *evaluation)
    scoring = ("logits", loop.n_samples or posterior.n_samples)
    if _scores_candidates(loop) and _lanes(device, item, loop.score_batch_size, *scoring, posterior.masks) > 1:
        plan.requests += _requests(loop, posterior, _candidate_rows(loop, seed), "score", *scoring)
    return plan


def _scores_candidates(loop: Any) -> bool:
    """Whether the loop scores its candidates with `predict` on the pool chunks (`_select`'s
    score path, and batch-bald's pre-filter), not random draws or a model/target-based selection."""
    acquisition = loop.acquisition
    if loop.acquisition_name in _UNSCORED or loop.engine != "local":
        return False
    return not (getattr(acquisition, "needs_model", False) or getattr(acquisition, "needs_targets", False))


def _candidate_rows(loop: Any, seed: int) -> np.ndarray:
    """The rows the round scores: the candidates, or the round's acquisition subset of them, one
    of each group with equal features (`_fit_and_select`'s order)."""
    from activebayes.loop import subset_positions

    item_ids, rows = loop.store.candidates(loop.project)
    rows = np.asarray(rows)
    if loop.acquisition_subset is not None and len(item_ids) > loop.acquisition_subset:
        rows = rows[subset_positions(len(item_ids), loop.acquisition_subset, seed)]
    return rows[loop._distinct(rows, min(loop.batch_size, len(rows)))[0]]


def _stop_set_rows(loop: Any) -> np.ndarray:
    """The stop set's rows, as `RoundSignals._stop_set_metrics` picks them."""
    from activebayes.stopping import STOP_SET_SIZE, stop_set_positions

    ids, rows, _ = loop.store.items(loop.project, with_keys=False)
    if len(ids) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(rows)[stop_set_positions(len(ids), loop.stop_set_size or STOP_SET_SIZE)]


def _requests(loop: Any, posterior: PreparedMCDropout, rows: np.ndarray, purpose: str, kind: str, n_samples: int | None) -> list[Request]:
    """The loop's predict calls on `rows`: one per chunk of `score_batch_size` items."""
    step = loop.score_batch_size
    return [Request(loop, posterior, kind, n_samples, purpose, i, rows[a : a + step]) for i, a in enumerate(range(0, len(rows), step))]


def fit_together(plans: Sequence[Plan]) -> None:
    """Train the plans' networks, those with the same data shape and TrainConfig together (as many
    at a time as fit the budget), and install each in its posterior; a network that fits only
    alone is left untrained, for its loop's `fit`."""
    groups: dict[tuple, list[Plan]] = defaultdict(list)
    for plan in plans:
        job = plan.job
        groups[(tuple(job.x.shape), tuple(job.y.shape), repr(job.config), str(job.device))].append(plan)
    for group in groups.values():
        first = group[0].job
        batch = math.ceil(max(len(first.x), first.config.epoch_samples or 0) / epoch_steps(len(first.x), first.config))
        size = _budget(first.device) // max(2 * batch * _activation_bytes(first.model, first.x[:1], widest=False), 1)
        for start in range(0, len(group), size) if size > 1 else ():
            part = [plan.job for plan in group[start : start + size]]
            models = train_stacked([j.model for j in part], [j.x for j in part], [j.y for j in part], first.config,
                                   [j.seed for j in part], device=first.device)  # fmt: skip
            for plan, model in zip(group[start : start + size], models):
                plan.posterior.install(model)


def predict_together(plans: Sequence[Plan]) -> None:
    """Compute every plan's requests, the same chunk of every run in one batched call (as many
    runs per call as fit the budget), and remember the outputs; a chunk that fits only alone is
    left to its loop's `predict`."""
    groups: dict[tuple, list[Request]] = defaultdict(list)
    for plan in plans:
        if plan.posterior.model_ is None:  # not trained here: its loop fits it, then predicts itself
            continue
        for request in plan.requests:
            groups[(request.kind, request.n_samples, request.purpose, request.chunk, len(request.rows), plan.posterior.masks)].append(request)
    for (kind, n_samples, _, _, n, masks), requests in groups.items():
        first = requests[0]
        item = first.loop._features(first.rows[:1]).to(first.posterior.device_)
        lanes = _lanes(first.posterior.device_, _activation_bytes(first.posterior.model_, item), n, kind, n_samples, masks)
        for start in range(0, len(requests), lanes) if lanes > 1 else ():
            _predict_lanes(requests[start : start + lanes])


def _budget(device: torch.device) -> int:
    return torch.cuda.mem_get_info(device)[0] // 4 if device.type == "cuda" else CPU_BATCH_BYTES


def _lanes(device: torch.device, item_bytes: int, n: int, kind: str, n_samples: int | None, masks: str) -> int:
    """How many runs' predictions on n items fit the budget: each holds its widest activation
    twice ([n, *F]), or S times for shared masks' logits ([S, n, *F])."""
    held = n_samples if kind == "logits" and masks == "shared" and n_samples else 2
    return _budget(device) // max(held * n * item_bytes, 1)


def _activation_bytes(network: torch.nn.Module, item: torch.Tensor, *, widest: bool = True) -> int:
    """Bytes of one item's activations in `network` (dropout layers passed over, so no random
    numbers are drawn): the widest layer output, or all of them."""
    sizes, h = [], item
    with torch.no_grad():
        for layer in flatten_sequential(network) or [network]:
            h = h if isinstance(layer, MASKED) else layer(h)
            sizes.append(h.numel() * h.element_size())
    return max(sizes) if widest else sum(sizes)


def _predict_lanes(requests: Sequence[Request]) -> None:
    posteriors = [r.posterior for r in requests]
    stacked = StackedSequential([p.model_ for p in posteriors])
    inputs = [r.loop._features(r.rows).to(r.posterior.device_) for r in requests]  # what each loop will pass to predict
    x = torch.stack(inputs)  # [R, n, ...]
    first = requests[0]
    if first.kind == "deterministic":
        out = deterministic_probs(stacked, x)
    elif posteriors[0].masks == "independent":
        out = independent_logits(stacked, posteriors[0].split_, x, [p.seed_ for p in posteriors], first.n_samples)
    else:
        out = shared_logits(stacked, [p.model_ for p in posteriors], posteriors[0].split_, x, [p.seed_ for p in posteriors], first.n_samples)
    for request, inputs_r, output in zip(requests, inputs, out):
        request.posterior.remember(request.kind, inputs_r, output, request.n_samples)


def prepare_round(loops: Sequence[Any], factories: Sequence[PreparedFactory], device: torch.device) -> None:
    """Fit and predict, for all `loops` at once, what their next `step()` asks (module docstring)."""
    plans = [plan for loop, factory in zip(loops, factories) if (plan := plan_round(loop, factory, device)) is not None]
    fit_together(plans)
    predict_together(plans)


def step_in_lockstep(loops: Sequence[Any], is_over: Callable[[Any], bool], device: torch.device,
                     on_round: Callable[[Any], None] | None = None) -> int:  # fmt: skip
    """Step every loop until `is_over(loop)`, all of them round by round (`prepare_round` before
    each); their `posterior` factories are replaced by `PreparedFactory`s. Returns the rounds run."""
    factories = []
    for loop in loops:
        factories.append(PreparedFactory(loop.posterior))
        loop.posterior = factories[-1]
    rounds = 0
    while True:
        active = [(loop, factory) for loop, factory in zip(loops, factories) if not is_over(loop)]
        if not active:
            return rounds
        prepare_round([loop for loop, _ in active], [factory for _, factory in active], device)
        for loop, factory in active:
            loop.step()
            factory.prepared.clear()
            rounds += 1
            if on_round is not None:
                on_round(loop)


__all__ = ["CPU_BATCH_BYTES", "PreparedFactory", "fit_together", "plan_round", "predict_together", "prepare_round", "step_in_lockstep"]
