"""The resumable active-learning round: fit → score → select → ask → record.

    loop = ActiveLearningLoop(
        lambda seed: MCDropout(mlp(64, 10), seed=seed),   # a posterior FACTORY (see below)
        "bald", store, "digits", SimulatedOracle(truth, keys=keys), batch_size=10, seed=0)
    loop.run(5)                     # five rounds; or run(None, until_labels=200)

One round moves through statuses recorded in the store, each change one transaction:

    started   round row created with its seed r_seed = derive(seed, number)
    fitted    posterior fitted on the labelled pool items; test-split metrics recorded
    scored    unlabelled candidates scored (streaming `score_pool`), the batch selected and the
              queries (item, score, rank, and the fitted posterior's prediction for the item:
              most probable class and its probability, or predictive mean and sd; the
              probability of its draw for a stochastic acquisition) recorded
    queried   the oracle is being asked; with no oracle the round waits here for a human whose
              answers arrive through `PoolStore.record_observations`
    answered  the answers recorded (with the round's id), in the same transaction as this status
    done      closed
    failed    fitting, scoring or asking raised (the reason recorded; a KeyboardInterrupt or a
              StoreError leaves the round to resume), or the round was given up by `discard`

A process killed at any instant resumes on the next `step()`: a round in "started" or "fitted" is
fitted again (nothing of the fit is stored; fitting is deterministic given the round seed and
the labelled set), a round in "scored"/"queried" asks only the queries still without an answer
(recorded queries are never re-drawn, so a round is never doubled), "answered" is closed. Hence
the same `seed` gives the same queries, and a resumed run the same labelled set as an
uninterrupted one.

Posteriors: `posterior` is a factory `(seed: int) -> Posterior` called once per round with the
round seed, giving a fresh unfitted posterior every round (e.g.
`functools.partial(MCDropout, model_factory, train=TrainConfig(epochs=50))` works as
`factory(seed=...)`). An already-built Posterior instance is also accepted: it is cloned,
unfitted, every round (`posteriors.clone`: its class rebuilt from `get_params()`) and keeps its
own seed.

Acquisition: a registry name ("bald", "batch-bald", ...), an `activebayes.acquisition.Acquisition`
entry, or a plain score function `f(pred) -> [N]` (selected greedily, top-k). With no labels yet
there is no model: `first="random"` queries `batch_size` candidates uniformly at random (seeded),
`first="typical"` TypiClust's most typical point of each of k clusters of the pool
(`activebayes.acquisition.typical`); the round records which under acquisition_settings["first"].
`first="auto"` (the CLI's default) and `cover_classes=True` change how early rounds select
(typical or uniform batches while labels are few; `activebayes._selection` says when, and what the
rounds record).
"auto" picks an arm per round (`auto_arms`, default epig, bald, random) by EXP3 and fills the
last r = 20 % of each batch uniformly at random, whose labels check the arm
(`activebayes.acquisition.auto`; recorded under acquisition_settings["auto"]). "nipv" (a
Gaussian-process posterior only) pre-filters the candidates by predictive variance like
batch-bald, then selects with the fitted model over `nipv_reference` pool items drawn with the
round's generator (`activebayes.acquisition.nipv`). "epig"/"power-epig" score every candidate
against M target inputs: `target_x` when given, else `epig_targets` pool items (labelled and
unlabelled, the whole pool even under an acquisition subset) drawn with the round's generator;
each batch is predicted together with the targets in one `predict` call, so candidates and
targets share the posterior samples θ_s (`activebayes.acquisition.epig.TargetPosterior`).

Acquisition subset (`acquisition_subset=M`, Gal et al. 2017's protocol): each round scores only
M unlabelled candidates drawn uniformly without replacement by a generator seeded from the
round seed (so from (seed, round number): reproducible, and a resumed round draws the same
subset); the batch is selected among them. "random" never runs the posterior over the pool: it
draws its batch uniformly with the round's generator (the same picks as scoring zeros would).

One process at a time: `step()`, `run()` and `discard()` hold the project's round lock
(`PoolStore.round_lock`) while they run, so a second process running a round of the same project
gets a `RoundBusyError` (a StoreError) instead of doubling the round; a lock left by a killed
process is taken over.

Timings (the round's `timings` in the store): fit_s (training), evaluate_s (test-split metrics),
score_s (scoring and selection), ask_s (the oracle).

Test metrics (`evaluation`, "predictive" or "deterministic"): see `activebayes._evaluation`.
Regression projects (task "regression") read their labels as float targets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import torch

from activebayes._device import resolve_device
from activebayes._evaluation import RoundEvaluation
from activebayes._project_data import ProjectData
from activebayes._selection import PoolSelection
from activebayes.errors import ConfigError, StoreError
from activebayes.oracles.base import checked_answers
from activebayes.posteriors.base import clone
from activebayes.posteriors.standardised import standardised, unwrapped
from activebayes.round_result import RoundResult
from activebayes.store import RoundStatus, RoundStep

HookFn = Callable[[str], None]
# test-split metrics from the posterior predictive, or from the network alone (mc-dropout
# without masks: Keras' evaluate, as Gal et al. 2017's code)
EVALUATIONS = ("predictive", "deterministic")
_S = RoundStatus
#: the stages a round passes, as the `hook` sees them: its statuses and the work between them
STAGES = (_S.started.value, "fit", _S.fitted.value, "score", _S.scored.value, "ask", _S.answered.value, _S.done.value)

FIRST_BATCHES = ("typical", "random", "auto")  # a cold start's batch: typical points, uniform, or by the budget


def round_seed(seed: int, number: int) -> int:
    """The seed of round `number`: a 31-bit hash of (seed, number) via numpy's SeedSequence."""
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(number)]).generate_state(1)[0] & 0x7FFFFFFF)


class ActiveLearningLoop(PoolSelection, RoundEvaluation, ProjectData):
    """Binds a posterior factory, an acquisition, a store project and an oracle.

    Args:
        posterior: factory `(seed) -> Posterior`, or a Posterior instance (deep-copied per round).
        acquisition: registry name, `Acquisition` entry, or score function `f(pred) -> [N]`.
        store: an open `PoolStore`.
        project: the project's name in the store.
        oracle: answers queries (`ask(keys, candidates) -> list[Answer]`), or None to stop each
            round in "queried" and wait for a human.
        batch_size: K, queries per round.
        seed: the study seed; round r uses `round_seed(seed, r)`.
        device: "auto" (CUDA when present), "cpu" or "cuda[:i]", for scoring and evaluation.
        score_batch_size: B, pool items per `predict` call while scoring.
        n_samples: S for `predict` (None: the posterior's default).
        prefilter_size: candidates kept by BALD before a joint (batch-bald) selection.
        who: recorded as the observations' `who` (default: the oracle's class name).
        posterior_name, posterior_settings: recorded in the round (default: the class name).
        hook: called with each stage name in STAGES as the round passes it (for progress
            display and for the kill tests).
        progress: called as progress(items_scored, items_total) while the pool is scored.
        data: the project's data already loaded by `activebayes.data.load_project_data`
            (checked against its sha256 by the caller); None loads and checks it on first use.
        acquisition_subset: M, score a seeded random subset of M candidates per round.
        first: the cold start's batch, "random", "typical" or "auto" (see above).
        cover_classes: draw uniformly while a class has no label (see above).
        auto_arms: the strategies "auto" chooses among (registry names), or None for the default.
        epig_targets: M, target inputs of epig / power-epig drawn from the pool (default 1000).
        target_x: explicit target inputs [M, ...] (the pool's item shape) for epig instead.
        evaluation: "predictive" (test metrics from `predict_proba`, the posterior predictive)
            or "deterministic" (`predict_proba_deterministic`: mc-dropout's network with dropout
            off, as Keras' `evaluate` in Gal et al. 2017's code).
        engine, address: where the pool is scored: "local", or "ray" (shards over a Ray
            cluster's actors, `scoring.score_pool`; address None: a local Ray, "auto" or
            "ray://host:port": a cluster, which needs a store every machine can reach).
        debias: train on the LURE-weighted loss of the labels, per pool row where rounds drew
            among groups of equal rows (`activebayes.debias`), recorded in the round's
            acquisition_settings["debias"].
    """

    def __init__(
        self,
        posterior: Callable[[int], Any] | Any,
        acquisition: str | Any,
        store: Any,
        project: str,
        oracle: Any = None,
        *,
        batch_size: int = 10,
        seed: int = 0,
        device: str | torch.device = "auto",
        score_batch_size: int = 1024,
        n_samples: int | None = None,
        prefilter_size: int = 2000,
        who: str | None = None,
        posterior_name: str | None = None,
        posterior_settings: dict[str, Any] | None = None,
        hook: HookFn | None = None,
        progress: Callable[[int, int], None] | None = None,
        data: Any = None,
        nipv_reference: int = 256,
        acquisition_subset: int | None = None,
        evaluation: str = "predictive",
        engine: str = "local",
        address: str | None = None,
        epig_targets: int = 1000,
        target_x: torch.Tensor | None = None,
        first: str = "random",
        cover_classes: bool = False,
        auto_arms: Sequence[str] | None = None,
        debias: bool = False,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size: expected a positive integer, got {batch_size!r}")
        if not isinstance(score_batch_size, int) or score_batch_size < 1:
            raise ConfigError(f"score_batch_size: expected a positive integer, got {score_batch_size!r}")
        if not (hasattr(posterior, "fit") or callable(posterior)):
            raise ConfigError(f"posterior: expected a factory (seed) -> Posterior or a Posterior, got {posterior!r}")
        from activebayes.distributed import check_engine_store

        check_engine_store(engine, address, getattr(store, "url", ""))
        self.engine, self.address = engine, address
        self.posterior = posterior
        self.acquisition, self.acquisition_name = _resolve_acquisition(acquisition)
        self.store = store
        self.project = project
        self.oracle = oracle
        self.batch_size = batch_size
        self.seed = int(seed)
        self.device = resolve_device(device)
        self.score_batch_size = score_batch_size
        self.n_samples = n_samples
        self.prefilter_size = prefilter_size
        self.who = who if who is not None else (type(oracle).__name__ if oracle is not None else "human")
        self.posterior_name = posterior_name
        self.posterior_settings = dict(posterior_settings or {})
        self.hook = hook
        self.progress = progress
        self._data: Any = data
        self._info = store.project(project)
        if not isinstance(nipv_reference, int) or nipv_reference < 1:
            raise ConfigError(f"nipv_reference: expected a positive integer, got {nipv_reference!r}")
        self.nipv_reference = nipv_reference
        if acquisition_subset is not None and (
            not isinstance(acquisition_subset, int) or isinstance(acquisition_subset, bool) or acquisition_subset < 1
        ):
            raise ConfigError(f"acquisition_subset: expected a positive integer or None, got {acquisition_subset!r}")
        self.acquisition_subset = acquisition_subset
        if evaluation not in EVALUATIONS:
            raise ConfigError(f"evaluation: expected one of {', '.join(EVALUATIONS)}, got {evaluation!r}")
        self.evaluation = evaluation
        if first not in FIRST_BATCHES:
            raise ConfigError(f"first: expected one of {', '.join(FIRST_BATCHES)}, got {first!r}")
        self.first, self.cover_classes = first, bool(cover_classes)
        self.auto_arms = tuple(auto_arms) if auto_arms is not None else None
        self.debias = bool(debias)
        if isinstance(epig_targets, bool) or not isinstance(epig_targets, int) or epig_targets < 1:
            raise ConfigError(f"epig_targets: expected a positive integer, got {epig_targets!r}")
        if target_x is not None and (not isinstance(target_x, torch.Tensor) or target_x.dim() < 2 or target_x.shape[0] == 0):
            raise ConfigError(f"target_x: expected a tensor [M >= 1, ...] of target inputs, got {getattr(target_x, 'shape', target_x)!r}")
        self.epig_targets = epig_targets if target_x is None else int(target_x.shape[0])
        self.target_x = None if target_x is None else target_x.detach().float().cpu()

    # ---- helpers ------------------------------------------------------------------------
    def _stage(self, name: str) -> None:
        if self.hook is not None:
            self.hook(str(name))  # a RoundStatus as its value

    _unfitted: tuple[int, Any] | None = None  # (round seed, the posterior step() built for that round)

    def _new_posterior(self, seed: int) -> Any:
        """The round's unfitted posterior: the factory's for `seed`, or a `clone` of the given
        instance (its class rebuilt from `get_params()`), in `StandardisedTargets` (regression
        targets in any units). Built once per round: when step() builds it to record its class
        name, the round's fit takes that same one."""
        if self._unfitted is not None and self._unfitted[0] == seed:
            posterior, self._unfitted = self._unfitted[1], None
            return posterior
        return standardised(clone(self.posterior) if hasattr(self.posterior, "fit") else self.posterior(seed=seed))

    # ---- the round ----------------------------------------------------------------------
    def _round_lock(self) -> AbstractContextManager[Any]:
        """The project's round lock (re-entrant; a store without locks: none)."""
        lock = getattr(self.store, "round_lock", None)
        return lock(self.project) if lock is not None else nullcontext()

    def labelled_count(self) -> int:
        """Labelled pool items now."""
        return self.store.count_labelled(self.project)

    def discard(self, reason: str) -> Any:
        """Give up the project's unfinished round instead of resuming it: it becomes "failed"
        with `reason` (its queries and any answers stay recorded; its unanswered items are
        candidates again), so the next `step()` starts a new round. Returns the discarded
        round's RoundInfo, or None when no round is unfinished."""
        with self._round_lock():
            rnd = self.store.latest_round(self.project)
            if rnd is None or rnd.status.finished:
                return None
            return self.store.advance_round(self.project, rnd.number, RoundStatus.failed, failure_reason=reason)

    def step(self) -> RoundResult:
        """Run (or resume) one round; see the module docstring for the statuses. Holds the
        project's round lock meanwhile (RoundBusyError while another process holds it)."""
        with self._round_lock():
            return self._step()

    def _step(self) -> RoundResult:
        rnd = self.store.latest_round(self.project)
        resumed = RoundStatus.next_step(rnd.status if rnd is not None else None) is not RoundStep.new
        if not resumed:
            if self.store.count_candidates(self.project) == 0:
                raise StoreError(f"project {self.project!r}: no unlabelled candidates left to query")
            number = rnd.number + 1 if rnd is not None else 1
            seed = round_seed(self.seed, number)
            if not self.posterior_name:  # the class name, of the posterior this round fits
                self._unfitted = (seed, self._new_posterior(seed))
            name = self.posterior_name or type(unwrapped(self._unfitted[1])).__name__
            labelled = self.store.count_labelled(self.project)
            cold, typical = labelled == 0, self._low_budget(labelled)  # cold: the first batch, no model yet
            cover = None if typical else self._uncovered(labelled)
            rnd = self.store.start_round(
                self.project, posterior=name, acquisition=self.acquisition_name, seed=seed,
                posterior_settings=self.posterior_settings,
                acquisition_settings={"batch_size": self.batch_size, "n_samples": self.n_samples}
                | ({"acquisition_subset": self.acquisition_subset} if self.acquisition_subset is not None else {})
                | ({"evaluation": self.evaluation} if self.evaluation != "predictive" else {})
                | ({"epig_targets": self.epig_targets, "epig_target_source": "pool" if self.target_x is None else "given"}
                   if getattr(self.acquisition, "needs_targets", False) else {})
                | ({"first": self.first} if cold else {}) | ({"debias": True} if self.debias else {})
                | ({"typical": typical} if typical else {}) | ({"cover": cover} if cover else {})
                | ({"cover_classes": True} if self.cover_classes else {})
                | ({"auto": self._auto_choice(seed).settings()} if self.acquisition_name == "auto" and not (cold or cover or typical) else {}),
            )  # fmt: skip
        self._stage(RoundStatus.started)
        number = rnd.number
        recorded = 0
        self._ask_s: float | None = None
        try:
            if rnd.status.refits:
                rnd = self._fit_and_select(rnd)
            if rnd.status is RoundStatus.scored:
                rnd = self.store.advance_round(self.project, number, RoundStatus.queried)
            if rnd.status.waiting:
                recorded, waiting = self._ask(rnd)
                if waiting:
                    return self._result(number, resumed, recorded)
                rnd = self.store.latest_round(self.project)
            if rnd.status is RoundStatus.answered:
                timings = {"ask_s": self._ask_s} if self._ask_s is not None else {}
                self.store.advance_round(self.project, number, RoundStatus.done, timings=timings)
                self._stage(RoundStatus.done)
        except (StoreError, KeyboardInterrupt):
            raise
        except Exception as exc:
            self.store.advance_round(self.project, number, RoundStatus.failed, failure_reason=f"{type(exc).__name__}: {exc}")
            raise
        return self._result(number, resumed, recorded)

    def _fit_and_select(self, rnd: Any) -> Any:
        number, first_time = rnd.number, rnd.status is RoundStatus.started
        item_ids, cand_rows = self.store.candidates(self.project)
        if len(item_ids) == 0:
            raise StoreError(f"project {self.project!r}: no unlabelled candidates left to query")
        if self.acquisition_subset is not None and len(item_ids) > self.acquisition_subset:
            keep = subset_positions(len(item_ids), self.acquisition_subset, rnd.seed)
            item_ids, cand_rows = item_ids[keep], np.asarray(cand_rows)[keep]
        keep, sizes = self._distinct(np.asarray(cand_rows), min(self.batch_size, len(item_ids)))  # one of each group of equal inputs
        item_ids, cand_rows = item_ids[keep], np.asarray(cand_rows)[keep]
        k = min(self.batch_size, len(item_ids))
        generator = torch.Generator().manual_seed(rnd.seed)
        rows, keys, values = self.store.labels(self.project)
        timings: dict[str, float] = {}
        self._stage("fit")
        if len(rows) == 0:  # cold start: no posterior yet
            posterior, metrics = None, {}
        else:
            t0 = time.perf_counter()
            with self._training_weights(keys):  # LURE weights with `debias`, else none
                posterior = self._new_posterior(rnd.seed).fit(self._features(rows), self._targets(values))
            timings["fit_s"] = time.perf_counter() - t0
            if first_time:
                t0 = time.perf_counter()
                metrics = self._evaluate(posterior)
                timings["evaluate_s"] = time.perf_counter() - t0
            else:
                metrics = None
        if first_time:
            rnd = self.store.advance_round(self.project, number, RoundStatus.fitted, metrics=metrics or {}, timings=timings)
        self._stage(RoundStatus.fitted)
        self._stage("score")
        t0 = time.perf_counter()
        settings = rnd.acquisition_settings
        if "typical" in settings or (posterior is None and settings.get("first", "random") == "typical"):
            chosen, scores = self._select_typical(cand_rows, rows, k, rnd.seed)
        elif posterior is None or "cover" in settings:
            chosen, scores = self._select_first_random(len(item_ids), k, generator)
        elif self.acquisition_name == "auto":
            chosen, scores = self._select_auto(posterior, cand_rows, k, generator, rnd.acquisition_settings["auto"])
        else:
            chosen, scores = self._select(posterior, cand_rows, k, generator)
        predictions = self._predictions(posterior, np.asarray(cand_rows)[chosen.numpy()])
        timings = {"score_s": time.perf_counter() - t0}
        # every candidate's score (set by _scores; batch-bald: its BALD pre-filter), kept for the reports
        pool_scores, self._pool_scores = getattr(self, "_pool_scores", None), None
        if posterior is None or self.acquisition_name == "random" or "cover" in settings or "typical" in settings:
            pool_scores = None
        rnd = self.store.record_queries_and_scores(
            self.project, number, item_ids[chosen.numpy()].tolist(), scores.tolist(), timings=timings,
            candidate_ids=None if pool_scores is None else item_ids, candidate_scores=pool_scores,
            predictions=predictions, probabilities=self._take_draw_probabilities(len(chosen)), candidates=len(item_ids),
            groups={"candidate_rows": int(sizes.sum()), "copies": sizes[chosen.numpy()].tolist()} if np.any(sizes > 1) else None,
        )  # fmt: skip
        self._stage(RoundStatus.scored)
        return rnd

    def _ask(self, rnd: Any) -> tuple[int, bool]:
        """Ask the oracle about the round's unanswered queries; (recorded, still waiting)."""
        pending = [q for q in self.store.queries(self.project, rnd.number) if q.value is None]
        if not pending:
            self.store.advance_round(self.project, rnd.number, RoundStatus.answered)
            self._stage(RoundStatus.answered)
            return 0, False
        if self.oracle is None:
            return 0, True
        self._stage("ask")
        t0 = time.perf_counter()
        candidates = self._features(np.asarray([q.row for q in pending])).numpy()
        keys = [q.key for q in pending]
        answers = checked_answers(self.oracle.ask(keys, candidates), keys)
        stop = bool(getattr(self.oracle, "stop_requested", False))
        pairs = [(a.key, a.value) for a in answers]
        recorded = self.store.record_answers(
            self.project, rnd.number, pairs, who=self.who, source="oracle", complete=not stop
        )
        self._ask_s = time.perf_counter() - t0
        if not stop:
            self._stage(RoundStatus.answered)
        return recorded, stop

    def _result(self, number: int, resumed: bool, recorded: int) -> RoundResult:
        rnd = next(r for r in reversed(self.store.rounds(self.project)) if r.number == number)
        queries = self.store.queries(self.project, number)
        return RoundResult(
            number, rnd.status, rnd.labelled_count, [q.key for q in queries],
            [q.score for q in queries], recorded, rnd.metrics, rnd.timings, resumed,
        )  # fmt: skip

    def run(self, rounds: int | None = None, *, until_labels: int | None = None) -> list[RoundResult]:
        """Run rounds until `rounds` have finished in this call, the labelled pool reaches
        `until_labels`, no candidate is left, or a round waits for answers. A round left
        unfinished by an earlier run is finished first (and counts)."""
        if rounds is not None and rounds < 0:
            raise ConfigError(f"rounds: expected a non-negative integer or None, got {rounds!r}")
        results: list[RoundResult] = []
        with self._round_lock():  # held across the rounds: no other process slips one in between
            while rounds is None or len(results) < rounds:
                latest = self.store.latest_round(self.project)
                if latest is None or latest.status.finished:
                    if until_labels is not None and self.labelled_count() >= until_labels:
                        break
                    if self.store.count_candidates(self.project) == 0:
                        break
                result = self.step()
                results.append(result)
                if result.status is not RoundStatus.done:
                    break
        return results


def subset_positions(n: int, m: int, seed: int) -> np.ndarray:
    """`min(m, n)` sorted positions in range(n), uniformly without replacement, from a generator
    seeded from the round seed `seed` (the acquisition subset of a round)."""
    if m >= n:
        return np.arange(n)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x5AB5E7])
    return np.sort(rng.choice(n, size=m, replace=False))


def _resolve_acquisition(acquisition: Any) -> tuple[Any, str]:
    from activebayes.acquisition import Acquisition, resolve_acquisition
    from activebayes.acquisition.registry import greedy

    if isinstance(acquisition, str):
        entry = resolve_acquisition(acquisition)
        return entry, entry.name
    if isinstance(acquisition, Acquisition):
        return acquisition, acquisition.name
    if callable(acquisition):
        name = getattr(acquisition, "__name__", type(acquisition).__name__)
        return Acquisition(name, acquisition, greedy), name
    raise ConfigError(f"acquisition: expected a name, an Acquisition or a score function, got {acquisition!r}")
