"""A csv table's rows as a person should see them: the feature columns' cells as written in the
file (a missing value shown empty), read from the file only for the rows asked for, by each
row's byte offset (`activebayes.data.csv_records.read_records`). What a round file, the labelling
prompt and an export show of a table's items; a million-row pool holds no cell in memory.

    raw = RawCells(path, offsets, ",", positions=[1, 2], n_rows=len(offsets))
    raw[7]         # [M] object array: row 7's feature cells
    raw[[3, 9]]    # [2, M]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.csv_records import read_records
from activebayes.data.table_gaps import missing_mask


class RawCells:
    """[N, M] a csv table's M feature columns as a person should see them (as in the file, a
    missing value empty), read from the file only for the rows asked for: `raw[i]` -> [M],
    `raw[[i, j]]` -> [2, M] object arrays."""

    def __init__(self, path: Path, offsets: np.ndarray | None, delimiter: str, positions: Sequence[int], n_rows: int,
                 na_values: Sequence[str] = (), encoding: str = "utf-8") -> None:  # fmt: skip
        self.path, self.offsets, self.delimiter, self.encoding = Path(path), offsets, delimiter, encoding
        self.positions, self.na_values = list(positions), tuple(na_values)
        self.shape = (int(n_rows), len(self.positions))

    def __len__(self) -> int:
        return self.shape[0]

    def _shown(self, records: list[list[str]]) -> np.ndarray:
        out = np.empty((len(records), len(self.positions)), dtype=object)
        for i, record in enumerate(records):
            cells = [record[j] for j in self.positions]
            out[i] = ["" if gap else v for v, gap in zip(cells, missing_mask(cells, self.na_values))]
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Every row (the whole file read)."""
        out = self._shown(read_records(self.path, self.offsets, None, delimiter=self.delimiter, encoding=self.encoding))
        return out if dtype is None else out.astype(dtype)

    def tolist(self) -> list[list[str]]:
        return np.asarray(self).tolist()

    def __getitem__(self, index: Any) -> np.ndarray:
        n = self.shape[0]
        flat = [int(i) % n if -n <= int(i) < n else int(i) for i in np.atleast_1d(np.asarray(index)).tolist()]
        if any(not 0 <= i < n for i in flat):
            raise IndexError(f"raw cells: row index out of range for {n} rows")
        out = self._shown(read_records(self.path, self.offsets, flat, delimiter=self.delimiter, encoding=self.encoding) if flat else [])
        return out[0] if np.ndim(index) == 0 else out
