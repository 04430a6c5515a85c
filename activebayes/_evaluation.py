"""What a fitted round reports (a mixin of `activebayes.loop.ActiveLearningLoop`): test metrics on
the labelled test split (accuracy, NLL and ECE, or RMSE and Gaussian NLL), each query's
prediction (the most probable class, its probability and every class's, or the predictive mean
and sd), and, through `RoundSignals`, the stopping signal's stop-set predictions and the active
testing estimate of an evaluation set.

Test metrics (the loop's `evaluation`): "predictive" scores the posterior predictive (the MC
average over S samples for sampled posteriors); "deterministic" scores MC dropout's network with
dropout off (weight scaling: one pass), as the Gal et al. 2017 code's Keras `model.evaluate` does.
Regression (the labels read as floats): `rmse` and `nll` (Gaussian, of y under the predictive
N(μ, σ² + σ_ε²); see `activebayes.metrics`), with `n_test`. Classification: `accuracy`, `nll`
(categorical), `ece` (expected calibration error, 15 equal-width confidence bins), `n_test`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from activebayes._round_signals import RoundSignals
from activebayes.errors import ConfigError

MAX_PACKED_CLASSES = 256  # a query keeps every class's probability up to this many classes


class RoundEvaluation(RoundSignals):
    """The evaluation half of a round; reads the loop's store, project, features and settings."""

    def _evaluate(self, posterior: Any) -> dict[str, Any]:
        """accuracy and nll (classification), or rmse and Gaussian nll (regression), on the
        labelled test split ({} of them without one), and the round's signals
        (`RoundSignals._signals`: stop-set predictions, active-testing estimate)."""
        return self._test_metrics(posterior) | self._signals(posterior)

    def _test_metrics(self, posterior: Any) -> dict[str, Any]:
        rows, _, values = self.store.labels(self.project, split="test")
        if len(rows) == 0:
            return {}
        if self._info.task == "regression":
            return self._evaluate_regression(posterior, rows, values)
        if self._info.task != "classification":
            return {}
        from activebayes.metrics import accuracy, expected_calibration_error, nll

        probs_t, labels = self._class_probabilities(posterior, rows).float(), self._targets(values)
        return {"accuracy": float(accuracy(probs_t, labels)), "nll": float(nll(probs_t, labels)),
                "ece": float(expected_calibration_error(probs_t, labels)), "n_test": len(rows)}

    def _predict_proba(self, posterior: Any) -> Callable[[torch.Tensor], torch.Tensor]:
        """x [N, ...] -> class probabilities [N, C] as `evaluation` asks: the posterior predictive,
        or mc-dropout's network with dropout off ("deterministic")."""
        if self.evaluation != "deterministic":
            return posterior.predict_proba
        predict_proba = getattr(posterior, "predict_proba_deterministic", None)
        if predict_proba is None:
            raise ConfigError(f"evaluation: 'deterministic' needs a posterior with one network (mc-dropout), got {type(posterior).__name__}")
        return predict_proba

    def _class_probabilities(self, posterior: Any, rows: np.ndarray) -> torch.Tensor:
        """[N, C] float64 on the CPU: `_predict_proba` of the items at `rows`, in batches."""
        predict_proba = self._predict_proba(posterior)
        parts = []
        with torch.inference_mode():
            for start in range(0, len(rows), self.score_batch_size):
                x = self._features(rows[start : start + self.score_batch_size]).to(self.device)
                parts.append(predict_proba(x).detach().double().cpu())
        return torch.cat(parts) if parts else torch.zeros(0, len(self._info.classes or []), dtype=torch.float64)

    def _moments(self, posterior: Any, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean [N], var [N]) float64 on the CPU of the predictive N(μ, σ² + σ_ε²) of the items at
        `rows` (`predict(x).moments(observation_noise=True)`), in batches."""
        means, variances = [], []
        with torch.inference_mode():
            for start in range(0, len(rows), self.score_batch_size):
                x = self._features(rows[start : start + self.score_batch_size]).to(self.device)
                mean, var = posterior.predict(x, n_samples=self.n_samples).moments(observation_noise=True)
                means.append(mean.double().reshape(-1).cpu())
                variances.append(var.double().reshape(-1).cpu())
        if not means:
            return torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64)
        return torch.cat(means), torch.cat(variances)

    def _predictions(self, posterior: Any, rows: np.ndarray) -> list[dict[str, Any] | None] | None:
        """The round's prediction for each queried item, kept with its query (a pre-annotation for
        the person who labels it): {"label": the most probable class, "probability": its
        probability under `_predict_proba`, "probs": every class's probability, for the NLL of
        the label once known (`round_estimates.pack_class_probabilities`; up to
        MAX_PACKED_CLASSES classes)} or, for regression, {"mean": μ, "sd": σ} of the predictive
        N(μ, σ²) with the observation noise. None for an item whose prediction is not finite;
        None for all on a cold start (no posterior) or another kind of task."""
        if posterior is None or len(rows) == 0 or self._info.task not in ("classification", "regression"):
            return None
        rows = np.asarray(rows)
        if self._info.task == "regression":
            mean, var = self._moments(posterior, rows)
            pairs = zip(mean.tolist(), var.clamp_min(0).sqrt().tolist())
            return [{"mean": m, "sd": sd} if math.isfinite(m) and math.isfinite(sd) else None for m, sd in pairs]
        from activebayes.round_estimates import pack_class_probabilities

        probs = self._class_probabilities(posterior, rows)
        best, index = probs.max(-1)
        classes = self._info.classes or []
        packed = [pack_class_probabilities(row) for row in probs.tolist()] if len(classes) <= MAX_PACKED_CLASSES else [None] * len(rows)
        return [
            {"label": str(classes[i]), "probability": p} | ({"probs": text} if text is not None else {})
            if math.isfinite(p) and 0 <= i < len(classes) else None
            for p, i, text in zip(best.tolist(), index.tolist(), packed)
        ]  # fmt: skip

    def _evaluate_regression(self, posterior: Any, rows: np.ndarray, values: list[str]) -> dict[str, Any]:
        """rmse of the predictive mean and the Gaussian nll of y under the predictive
        N(mean, var) of `predict(x).moments()` (the latent fields' μ_f, σ_f² + σ_ε² where present,
        else the mixture's mean and total variance)."""
        from activebayes.metrics import gaussian_nll, rmse

        mean_t, var_t = self._moments(posterior, rows)
        target = self._targets(values).double()
        return {"rmse": float(rmse(mean_t, target)), "nll": float(gaussian_nll(mean_t, var_t, target)), "n_test": len(rows)}
