"""What a fitted round records besides test metrics (a mixin of the loop, through
`RoundEvaluation`), so that `status` can say where the project stands without a test split:

* the stop set's predictions (`activebayes.stopping`): a fixed set of up to 1000 of the project's
  items, predicted by every round's model and kept packed in the round's metrics under
  "stop_set" ({"ids": fingerprint, "n": S, "predictions": packed}); with the previous round
  that predicted the same set, "changed" (the share of predictions that changed) and "agreement"
  (Cohen's kappa, or Lin's concordance for regression), both top-level metrics;
* the active-testing estimate (`activebayes.active_testing`) of this round's model on the
  project's evaluation set, once some of it is labelled: "active_testing" = {"accuracy" |
  "rmse", "nll": [value, low, high], "labels": B answered, "pool": N};
* and the draw of an evaluation set itself (`propose_evaluation`, for `activebayes evaluate`).

It also holds the weights a `debias` loop trains with (`_training_weights`, `activebayes.debias`).
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from activebayes.stopping import (
    changed_share,
    cohen_kappa,
    concordance,
    fingerprint,
    pack_predictions,
    stop_set_positions,
    unpack_predictions,
)


@dataclass(frozen=True)
class EvaluationProposal:
    """The items `propose_evaluation` drew, in draw order: item ids, keys, data rows, each q_m,
    the model's prediction of each, and the record the project keeps (`evaluation_record`)."""

    item_ids: list[int]
    keys: list[str]
    rows: np.ndarray
    probabilities: np.ndarray
    predictions: list[dict[str, Any]]
    record: dict[str, Any]


class RoundSignals:
    """Stop-set predictions, active-testing estimates and evaluation draws of the loop's rounds."""

    stop_set_size: int | None = None  # None: stopping.STOP_SET_SIZE

    def _training_weights(self, keys: list[str]) -> AbstractContextManager[Any]:
        """The context a round fits in: `debias.sample_weights` of the labelled items `keys` (LURE
        weights per pool row from the recorded draws, their candidate rows and copies) when the
        loop debiases, else none."""
        if not getattr(self, "debias", False) or not keys:
            return nullcontext()
        from activebayes.debias import lure_training_weights, sample_weights

        return sample_weights(lure_training_weights(self.store, self.project, keys))

    def _signals(self, posterior: Any) -> dict[str, Any]:
        if posterior is None or self._info.task not in ("classification", "regression"):
            return {}
        return self._stop_set_metrics(posterior) | self._active_testing_metrics(posterior)

    def _stop_set_metrics(self, posterior: Any) -> dict[str, Any]:
        from activebayes.stopping import STOP_SET_SIZE

        ids, rows, _ = self.store.items(self.project, with_keys=False)
        if len(ids) == 0:
            return {}
        keep = stop_set_positions(len(ids), self.stop_set_size or STOP_SET_SIZE)
        regression = self._info.task == "regression"
        if regression:
            current = self._moments(posterior, np.asarray(rows)[keep])[0].numpy()
        else:
            current = self._class_probabilities(posterior, np.asarray(rows)[keep]).argmax(-1).numpy()
        tag = fingerprint(np.asarray(ids)[keep])
        metrics: dict[str, Any] = {"stop_set": {"ids": tag, "n": int(len(keep)), "predictions": pack_predictions(current)}}
        previous = previous_stop_set(self.store.rounds(self.project), tag)
        if previous is not None:
            metrics["changed"] = changed_share(previous, current, regression=regression)
            metrics["agreement"] = concordance(previous, current) if regression else cohen_kappa(previous, current)
        return metrics

    def _active_testing_metrics(self, posterior: Any) -> dict[str, Any]:
        from activebayes.active_testing import EVAL_SPLIT, SETTINGS_KEY, evaluation_estimate

        record = (self.store.project(self.project).settings or {}).get(SETTINGS_KEY)
        if not record:
            return {}
        rows, keys, values = self.store.labels(self.project, split=EVAL_SPLIT)
        if len(rows) == 0:
            return {}
        predictions = dict(zip(keys, self._predictions(posterior, np.asarray(rows)) or []))
        estimate = evaluation_estimate(record, dict(zip(keys, values)), self._info.task, self._info.classes, predictions)
        if not estimate.available:
            return {}
        figures = {k: [v if math.isfinite(v) else None for v in triple] for k, triple in estimate.figures().items()}  # no end: null
        return {"active_testing": {**figures, "labels": estimate.labels, "pool": estimate.pool}}

    def propose_evaluation(self, budget: int, seed: int, extend: Mapping[str, Any] | None = None) -> EvaluationProposal:
        """Active testing's draw (`activebayes.active_testing`): fit the posterior on the labels
        now (with `seed`), predict every unlabelled candidate, and draw `budget` of them with q ∝
        the model's expected loss (0-1 loss; regression: squared error). With `extend` (the
        project's evaluation record), continue that draw instead (`continue_draw`): ConfigError
        unless the pool is still the one it drew from; the record then holds the new model's
        predictions of every item. Records nothing: the caller moves the items and keeps the
        record in one transaction (`PoolStore.record_evaluation_set`)."""
        from activebayes.active_testing import (
            EVAL_SPLIT,
            continue_draw,
            draw_evaluation_set,
            evaluation_record,
            extended_record,
            population_tag,
            same_population,
        )
        from activebayes.errors import ConfigError
        from activebayes.estimates import expected_loss

        labelled_rows, _, values = self.store.labels(self.project)
        if len(labelled_rows) == 0:
            raise ConfigError("evaluate: no labelled items yet, so no model to evaluate")
        item_ids, rows = self.store.candidates(self.project)
        if extend is not None:
            drawn_ids, drawn_rows, drawn_keys = self.store.items(self.project, split=EVAL_SPLIT)
            problem = same_population(extend, item_ids, drawn_ids)
            if problem is not None:
                raise ConfigError(f"evaluate: cannot extend the evaluation set: {problem}")
        posterior = self._new_posterior(int(seed)).fit(self._features(labelled_rows), self._targets(values))
        if self._info.task == "regression":
            loss, expected = "squared-error", expected_loss(self._moments(posterior, np.asarray(rows))[1].numpy(), "squared-error")
        else:
            loss, expected = "zero-one", expected_loss(self._class_probabilities(posterior, np.asarray(rows)).numpy(), "zero-one")
        draw = draw_evaluation_set(expected, budget, seed) if extend is None else continue_draw(extend, expected, budget, seed)
        chosen = [int(i) for i in np.asarray(item_ids)[draw.positions]]
        all_ids, _, all_keys = self.store.items(self.project, split="pool")
        key_of = dict(zip(np.asarray(all_ids).tolist(), all_keys))
        keys = [key_of[i] for i in chosen]
        predictions = [p or {} for p in self._predictions(posterior, np.asarray(rows)[draw.positions]) or [None] * len(chosen)]
        if extend is None:
            record = evaluation_record(keys, draw, predictions, labelled=len(labelled_rows), loss=loss, population=population_tag(item_ids))
        else:
            earlier = [p or {} for p in self._predictions(posterior, np.asarray(drawn_rows)) or [None] * len(drawn_keys)]
            record = extended_record(extend, keys, draw, dict(zip([*drawn_keys, *keys], [*earlier, *predictions])), labelled=len(labelled_rows))
        return EvaluationProposal(chosen, keys, np.asarray(rows)[draw.positions], draw.probabilities, predictions, record)


def previous_stop_set(rounds: list[Any], tag: str) -> np.ndarray | None:
    """The latest recorded predictions of the stop set `tag` (by fingerprint), or None."""
    for rnd in reversed(rounds):
        stop_set = (rnd.metrics or {}).get("stop_set")
        if isinstance(stop_set, dict) and stop_set.get("ids") == tag:
            return unpack_predictions(stop_set["predictions"])
    return None
