"""What a fitted round reports (a mixin of `activebayes.loop.ActiveLearningLoop`): test metrics on
the labelled test split (accuracy, NLL and ECE, or RMSE and Gaussian NLL) and each query's
prediction (the most probable class and its probability, or the predictive mean and sd).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from activebayes.errors import ConfigError


class RoundEvaluation:
    """The evaluation half of a round; reads the loop's store, project, features and settings."""

    def _evaluate(self, posterior: Any) -> dict[str, Any]:
        """accuracy and nll (classification), or rmse and Gaussian nll (regression), on the
        labelled test split; {} without one."""
        rows, _, values = self.store.labels(self.project, split="test")
        if len(rows) == 0:
            return {}
        if self._info.task == "regression":
            return self._evaluate_regression(posterior, rows, values)
        if self._info.task != "classification":
            return {}
        from activebayes.metrics import accuracy, expected_calibration_error, nll

        predict_proba = self._predict_proba(posterior)
        probs = []
        with torch.inference_mode():
            for start in range(0, len(rows), self.score_batch_size):
                x = self._features(rows[start : start + self.score_batch_size]).to(self.device)
                probs.append(predict_proba(x).detach().cpu().float())
        probs_t, labels = torch.cat(probs), self._targets(values)
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

    def _predictions(self, posterior: Any, rows: np.ndarray) -> list[dict[str, Any] | None] | None:
        """The round's prediction for each queried item, kept with its query (a pre-annotation for
        the person who labels it): {"label": the most probable class, "probability": its
        probability under `_predict_proba`} or, for regression, {"mean": μ, "sd": σ} of the
        predictive N(μ, σ²) with the observation noise. None for an item whose prediction is not
        finite; None for all on a cold start (no posterior) or another kind of task."""
        if posterior is None or len(rows) == 0 or self._info.task not in ("classification", "regression"):
            return None
        x = self._features(rows).to(self.device)
        with torch.inference_mode():
            if self._info.task == "regression":
                mean, var = posterior.predict(x, n_samples=self.n_samples).moments(observation_noise=True)
                pairs = zip(mean.double().reshape(-1).tolist(), var.double().reshape(-1).clamp_min(0).sqrt().tolist())
                return [{"mean": m, "sd": sd} if math.isfinite(m) and math.isfinite(sd) else None for m, sd in pairs]
            probs = self._predict_proba(posterior)(x).detach().double().cpu()
        best, index = probs.max(-1)
        classes = self._info.classes or []
        return [
            {"label": str(classes[i]), "probability": p} if math.isfinite(p) and 0 <= i < len(classes) else None
            for p, i in zip(best.tolist(), index.tolist())
        ]

    def _evaluate_regression(self, posterior: Any, rows: np.ndarray, values: list[str]) -> dict[str, Any]:
        """rmse of the predictive mean and the Gaussian nll of y under the predictive
        N(mean, var) of `predict(x).moments()` (the latent fields' μ_f, σ_f² + σ_ε² where present,
        else the mixture's mean and total variance)."""
        from activebayes.metrics import gaussian_nll, rmse

        means, variances = [], []
        with torch.inference_mode():
            for start in range(0, len(rows), self.score_batch_size):
                x = self._features(rows[start : start + self.score_batch_size]).to(self.device)
                mean, var = posterior.predict(x, n_samples=self.n_samples).moments(observation_noise=True)
                means.append(mean.cpu())
                variances.append(var.cpu())
        mean_t, var_t, target = torch.cat(means).double(), torch.cat(variances).double(), self._targets(values).double()
        return {"rmse": float(rmse(mean_t, target)), "nll": float(gaussian_nll(mean_t, var_t, target)), "n_test": len(rows)}
