"""A project's data as model inputs (a mixin of `activebayes.loop.ActiveLearningLoop`, read by its
selection, evaluation and round signals and by `activebayes.batched_runs`): the project's dataset,
loaded from the store on first use (`activebayes.data.load_project_data`, its sha256 checked),
pool rows as float32 features [n, ...], and label values as targets: class indices [n] (int64,
in the order of the project's classes) for a classification project, float32 values [n] otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


class ProjectData:
    """Reads the loop's `store`, `project`, `_info` (the store's ProjectInfo) and `_data` (the dataset, or None)."""

    store: Any
    project: str
    _info: Any
    _data: Any

    def _pool_data(self) -> Any:
        """The project's Dataset, loaded on first use."""
        if self._data is None:
            from activebayes.data import load_project_data

            self._data = load_project_data(self.store, self.project)
        return self._data

    def _features(self, rows: np.ndarray) -> torch.Tensor:
        """The data's `rows` as a float32 tensor [n, ...] (a copy; a mapped cache read from its file:
        `activebayes.data.mapped_rows`)."""
        from activebayes.data.mapped_rows import take_rows

        return torch.from_numpy(take_rows(self._pool_data().x, rows)).float()

    def _targets(self, values: list[str]) -> torch.Tensor:
        """Label values as class indices [n] (int64) for a classification project, else floats [n] (float32)."""
        if self._info.task == "classification":
            index = {c: i for i, c in enumerate(self._info.classes or [])}
            return torch.tensor([index[v] for v in values], dtype=torch.long)
        return torch.tensor([float(v) for v in values], dtype=torch.float32)


__all__ = ["ProjectData"]
