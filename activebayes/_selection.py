"""How a round chooses its queries once a posterior is fitted (a mixin of
`activebayes.loop.ActiveLearningLoop`, whose module docstring describes each acquisition's path):
score the pool in chunks (`score_pool`), then select with the acquisition's selector; batch-bald
re-predicts its pre-filtered candidates jointly, nipv selects with the fitted model, epig scores
against target inputs predicted with the same posterior samples, and auto lets its round's arm
choose all but a random share.

Each selection also leaves the probability with which every chosen item was drawn at its draw
(`_draw_probabilities`, taken once by `_take_draw_probabilities` when the round records its
queries): the selector's `BatchSelection.probabilities` for a stochastic acquisition, 1/(n − m + 1)
for each uniform draw (a random round or auto's random share), None for a deterministic choice.

Candidates with equal features (a text pasted under two keys) are one candidate to every
selector (`_distinct`, `activebayes.same_rows`): the round chooses among the first of each group,
so a batch never holds two copies of one input, and records that number as its candidates (the
N_t of its estimates), with the rows they stand for and each query's group size where groups have
more than one row, so that its estimates speak for the pool's rows (`activebayes.row_weights`).
A later round may ask about another copy, once the first is labelled.

Early rounds (the loop's `first` and `cover_classes`):
* `first="auto"` (the CLI's default) takes TypiClust's batch (`acquisition.typical`), the labelled
  items clustered with the candidates, in every round whose labels, with its batch, number at most
  2 · C (C the project's classes; TYPICAL_LABELS_PER_CLASS): at a budget of one or two labels a
  class, typical points teach more than uncertain ones (Hacohen, Dekel and Weinshall, ICML 2022),
  and they reach classes that an untrained model cannot ask for. With k = 10 that is the first
  batch on 5-9 classes and the first two on 10; on fewer classes, or a regression, or classes
  not yet known, the first batch is uniform. Such a round is fitted and evaluated as usual and
  records acquisition_settings["typical"] = {"labels": L, "classes": C}.
* `cover_classes=True` (`round --cover-classes`; off by default, README "When active learning
  helps") draws uniformly at random, whatever `first`, in a round that is not typical while a
  class has no label yet and the labels number under 5 · C (COVER_LABELS_PER_CLASS): a class never
  labelled is unknown to the model, so no acquisition can ask for it, while a uniform draw finds
  a class of pool share π within about 1/π labels. Such a round is fitted and evaluated as usual
  and records acquisition_settings["cover"] = {"seen": classes labelled, "classes": C}; every
  round of a loop with it records acquisition_settings["cover_classes"] = True.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

#: features read at a time while a round fingerprints or scores the pool (whole score batches, at least one)
CHUNK_BYTES = 1 << 24
COVER_LABELS_PER_CLASS = 5  # cover_classes: uniform rounds while a class is unlabelled, up to 5 labels a class
#: first="auto": a round takes TypiClust's typical batch while, with it, the labels number at most
#: this many a class (the low-budget regime of Hacohen et al. 2022)
TYPICAL_LABELS_PER_CLASS = 2


class PoolSelection:
    """The selection half of a round; reads the loop's store, project, features and settings."""

    _draw_probabilities: list[float | None] | None = None  # of the latest selection, by rank

    def _take_draw_probabilities(self, k: int) -> list[float | None] | None:
        """The latest selection's draw probabilities (k of them, None where deterministic), once:
        a later call returns None until another selection sets them."""
        taken, self._draw_probabilities = self._draw_probabilities, None
        if taken is None or all(p is None for p in taken):
            return None
        return list(taken[:k])

    def _keep_probabilities(self, selection: Any) -> None:
        probabilities = getattr(selection, "probabilities", None)
        self._draw_probabilities = None if probabilities is None else [float(p) for p in probabilities.tolist()]

    def _uncovered(self, labelled: int) -> dict[str, int] | None:
        """{"seen": classes labelled, "classes": C} when `cover_classes` makes a round with
        `labelled` labels draw uniformly (see the module docstring), else None."""
        classes = self._info.classes or []
        if not self.cover_classes or self._info.task != "classification" or not 0 < labelled < COVER_LABELS_PER_CLASS * len(classes):
            return None
        seen = len(set(self.store.labels(self.project)[2]))
        return {"seen": seen, "classes": len(classes)} if seen < len(classes) else None

    def _low_budget(self, labelled: int) -> dict[str, int] | None:
        """{"labels": L, "classes": C} when `first="auto"` makes a round with L labels take a
        typical batch: a classification project with its C classes known, and L + k ≤ 2 · C
        (k the round's batch size), else None."""
        from activebayes.acquisition.typical import first_batch_as_run

        classes = len(self._info.classes or [])
        budget = TYPICAL_LABELS_PER_CLASS * classes  # labels, this round's batch included
        if first_batch_as_run(self.first, self._info.task) != "auto" or labelled >= budget:
            return None  # (checked before the count, which costs a query)
        k = min(self.batch_size, self.store.count_candidates(self.project))
        return {"labels": labelled, "classes": classes} if labelled + k <= budget else None

    _row_prints: tuple[np.ndarray, np.ndarray] | None = None  # (fingerprints [N_data, 2], computed yet [N_data])

    def _distinct(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions into the candidates' `rows` of the first of each group with equal features
        (`activebayes.same_rows`), so that no batch asks twice about one input; the rows of each
        group among the candidates [N'], for per-row estimates: `activebayes.row_weights`); every
        position, each its own group, when fewer than `k` candidates are distinct (a batch of k
        must then repeat one)."""
        from activebayes.same_rows import first_and_sizes

        rows = np.asarray(rows, dtype=np.int64)
        keep, sizes = first_and_sizes(self._fingerprints(rows)) if len(rows) else (rows, rows)
        return (keep, sizes) if len(keep) >= k else (np.arange(len(rows)), np.ones(len(rows), dtype=np.int64))

    def _fingerprints(self, rows: np.ndarray) -> np.ndarray:
        """[n, 2] `row_fingerprints` of the data's `rows` [n], each row's computed once per loop (the
        features do not change while it runs, and a later round's candidates are an earlier one's
        but the rows labelled since), chunk by chunk as `_scores` reads features."""
        from activebayes.same_rows import row_fingerprints

        if self._row_prints is None:
            n_data = len(self._pool_data().x)
            self._row_prints = (np.zeros((n_data, 2), dtype=np.uint64), np.zeros(n_data, dtype=bool))
        prints, known = self._row_prints
        missing = rows[~known[rows]]
        chunk = self._chunk_rows()
        for start in range(0, len(missing), chunk):
            part = missing[start : start + chunk]
            prints[part], known[part] = row_fingerprints(self._features(part).numpy()), True
        return prints[rows]

    def _chunk_rows(self) -> int:
        """Pool rows read at a time by `_fingerprints` and `_scores`: whole score batches of B rows,
        as many as fit in CHUNK_BYTES of float32 features, at least one. A chunk's features, not the
        pool's, are in memory at once; the batches, and so the scores, are those of one pass."""
        row_bytes = 4 * max(int(np.prod(self._pool_data().x.shape[1:])), 1)
        return self.score_batch_size * max(1, CHUNK_BYTES // (row_bytes * self.score_batch_size))

    def _select_typical(self, cand_rows: Any, rows: Any, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """TypiClust's batch (`acquisition.typical.typical_batch`): the candidates (`cand_rows`) and
        the labelled items (`rows`, in item order) clustered together into L + k groups, the most
        typical candidate of each of the k largest groups without a label; (positions [k] into the
        candidates, zeros [k])."""
        from activebayes.acquisition.typical import typical_batch

        labelled = self._features(np.asarray(rows)) if len(rows) else None
        self._draw_probabilities = None  # a deterministic choice
        candidates = self._features(np.asarray(cand_rows))  # a copy of the features, ours to overwrite
        return typical_batch(candidates, k, labelled=labelled, seed=seed, overwrite=True), torch.zeros(k)

    def _select_first_random(self, n: int, k: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """A cold start's uniformly random batch: (positions [k] into the n candidates, zeros [k])."""
        from activebayes.acquisition.batch import uniform_draw_probabilities

        self._draw_probabilities = uniform_draw_probabilities(n, k).tolist()
        return torch.randperm(n, generator=gen)[:k], torch.zeros(k)

    def _scores(self, posterior: Any, rows: np.ndarray, score_fn: Callable) -> torch.Tensor:
        from activebayes.scoring import score_pool

        chunk = self._chunk_rows()
        parts = []
        for start in range(0, len(rows), chunk):
            pool = self._features(rows[start : start + chunk])
            result = score_pool(
                posterior, pool, score_fn, batch_size=self.score_batch_size, device=self.device,
                n_samples=self.n_samples, progress=self._chunk_progress(start, len(rows)),
                engine=self.engine, address=self.address,
            )  # fmt: skip
            parts.append(result.scores)
        self._pool_scores = torch.cat(parts)
        return self._pool_scores

    def _chunk_progress(self, offset: int, total: int) -> Callable[[int, int], None] | None:
        """progress(done, _) of one chunk, reported as progress(offset + done, total) of the pool."""
        if self.progress is None:
            return None
        report = self.progress
        return lambda done, _: report(offset + done, total)

    def _auto_choice(self, seed: int) -> Any:
        """auto: this round's arm and random share from the recorded auto rounds
        (`activebayes.acquisition.auto.choose`)."""
        from activebayes.acquisition.auto import DEFAULT_ARMS, choose, round_reward

        task = self.store.project(self.project).task
        variance = 1.0
        if task == "regression":
            values = np.asarray([float(v) for v in self.store.labels(self.project)[2]] or [0.0])
            variance = float(values.var()) if values.size > 1 else 1.0
        past = []
        for r in self.store.rounds(self.project):
            recorded = r.acquisition_settings.get("auto") if r.acquisition == "auto" else None
            if recorded is not None:
                reward = round_reward(self.store.queries(self.project, r.number), recorded["random"], task, variance)
                past.append((recorded, reward))
        return choose(past, self.auto_arms or DEFAULT_ARMS[task], self.batch_size, seed)

    def _select_auto(self, posterior: Any, rows: np.ndarray, k: int, gen: torch.Generator, auto: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """auto: the round's arm chooses k − r candidates, r more are drawn uniformly from the rest
        (each with q = 1/(n_rest − j) at its j-th draw, j = 0 .. r − 1). Every query keeps the
        arm's score of its item (a random draw's from the pool's scores, as the round's table,
        its file and `report`'s acquisition.png show it; 0 where the arm scored no pool)."""
        from activebayes.acquisition import resolve_acquisition

        from activebayes.acquisition.batch import uniform_draw_probabilities

        n_random = min(int(auto["random"]), k - 1) if k > 1 else 0
        chosen, scores = self._select(posterior, rows, k - n_random, gen, resolve_acquisition(auto["arm"]))
        arm_probabilities = self._draw_probabilities or [None] * len(chosen)
        rest = torch.from_numpy(np.setdiff1d(np.arange(len(rows)), chosen.numpy()))
        extra = rest[torch.randperm(len(rest), generator=gen)[:n_random]]
        self._draw_probabilities = [*arm_probabilities, *uniform_draw_probabilities(len(rest), len(extra)).tolist()]
        pool = getattr(self, "_pool_scores", None)  # the arm's score of every candidate, when it scored them all
        extra_scores = pool[extra].float() if pool is not None and len(pool) == len(rows) else torch.zeros(len(extra))
        return torch.cat([chosen, extra]), torch.cat([scores, extra_scores])

    def _select(self, posterior: Any, rows: np.ndarray, k: int, gen: torch.Generator, acq: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(positions [k] into `rows`, their scores [k]) chosen by `acq` (an Acquisition entry;
        default the loop's own)."""
        acq = acq if acq is not None else self.acquisition
        self._draw_probabilities = None
        if acq.name == "random":  # no posterior over the pool: uniform draws only
            selection = acq.select(torch.zeros(len(rows)), k, gen)
            self._keep_probabilities(selection)
            return selection.indices.cpu(), selection.scores.detach().cpu().float()
        if getattr(acq, "needs_joint", False):
            from activebayes.acquisition import bald_prefilter

            keep = bald_prefilter(self._scores(posterior, rows, acq.prefilter_score), self.prefilter_size)
            with torch.inference_mode():
                pred = posterior.predict(self._features(rows[keep.numpy()]).to(self.device), n_samples=self.n_samples)
            selection = acq.select(pred, k, gen)
            return keep[selection.indices.cpu()], selection.scores.detach().cpu().float()
        if getattr(acq, "needs_model", False):
            return self._select_with_model(posterior, rows, k, gen, acq)
        if getattr(acq, "needs_targets", False):
            return self._select_with_targets(posterior, rows, k, gen, acq)
        scores = self._scores(posterior, rows, acq.score)
        selection = acq.select(scores, k, gen)
        self._keep_probabilities(selection)
        return selection.indices.cpu(), selection.scores.detach().cpu().float()

    def _select_with_model(self, posterior: Any, rows: np.ndarray, k: int, gen: torch.Generator, acq: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """nipv: pre-filter by predictive variance, then `nipv_select` over a seeded reference
        subset of the whole pool (labelled and unlabelled items)."""
        from activebayes.acquisition import bald_prefilter
        from activebayes.acquisition.nipv import nipv_select

        prefilter = self._scores(posterior, rows, acq.prefilter_score)
        keep = bald_prefilter(prefilter, self.prefilter_size)
        labelled_rows = self.store.labels(self.project)[0]
        pool_rows = np.sort(np.concatenate([np.asarray(rows), np.asarray(labelled_rows)]).astype(np.int64))
        pick = torch.randperm(len(pool_rows), generator=gen)[: self.nipv_reference].sort().values.numpy()
        reference = self._features(pool_rows[pick]).to(torch.float64)
        candidates = self._features(rows[keep.numpy()]).to(torch.float64)
        selection, first = nipv_select(posterior, candidates, reference, k)
        # the reports keep every candidate's nipv score when all were scored, none otherwise (the
        # pre-filter's variances are another quantity)
        self._pool_scores = torch.empty(len(rows)).index_put_((keep,), first.float()) if len(keep) == len(rows) else None
        return keep[selection.indices.cpu()], selection.scores.detach().cpu().float()

    def _select_with_targets(self, posterior: Any, rows: np.ndarray, k: int, gen: torch.Generator, acq: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """epig: every candidate scored against the targets (`target_x`, or `epig_targets` items of
        the whole pool drawn with the round's generator), each batch predicted with them in one call."""
        from activebayes.acquisition.epig import TargetPosterior, paired_epig

        targets = self.target_x
        if targets is None:
            pool_rows = np.unique(np.concatenate([self.store.candidates(self.project)[1], self.store.labels(self.project)[0]]).astype(np.int64))
            pick = torch.randperm(len(pool_rows), generator=gen)[: self.epig_targets].sort().values.numpy()
            targets = self._features(pool_rows[pick])
        scores = self._scores(TargetPosterior(posterior, targets), rows, paired_epig)
        selection = acq.select(scores, k, gen)
        self._keep_probabilities(selection)
        return selection.indices.cpu(), selection.scores.detach().cpu().float()
