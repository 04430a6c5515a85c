"""`activebayes.same_rows`: equal rows share a fingerprint, different rows do not, and
`first_of_each` keeps the first row of each group, in order."""

from __future__ import annotations

import numpy as np
import pytest

from activebayes.errors import ShapeError
from activebayes.same_rows import first_of_each, row_fingerprints


def test_equal_rows_group_and_the_first_of_each_is_kept_in_order():
    x = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0], [1.0, 2.0, -0.0], [1.0, 2.0, 1e-7], [3.0, 4.0, 5.0]], dtype=np.float32)
    prints = row_fingerprints(x)
    assert prints.shape == (5, 2) and prints.dtype == np.uint64
    assert (prints[0] == prints[2]).all() and (prints[1] == prints[4]).all()  # -0.0 reads as 0.0
    assert (prints[0] != prints[3]).any() and (prints[0] != prints[1]).any()
    assert first_of_each(prints).tolist() == [0, 1, 3]


def test_rows_of_any_shape_and_dtype_and_an_empty_pool():
    images = np.zeros((4, 1, 3, 3))  # float64 images: read as float32, flattened
    images[2, 0, 1, 1] = 0.5
    assert first_of_each(row_fingerprints(images)).tolist() == [0, 2]
    assert first_of_each(row_fingerprints(np.zeros((0, 7), dtype=np.float32))).tolist() == []


def test_distinct_random_rows_stay_apart():
    """Few-valued floats (0, 1, 2: bit patterns with 23 trailing zeros, two alike in a word) are
    where a plain product hash of the bytes collides: [2, 2, 0, 0, 2, 2] with [0, 0, 0, 0, 0, 0]."""
    assert first_of_each(row_fingerprints(np.array([[0, 0, 0, 0, 0, 0], [2, 2, 0, 0, 2, 2]], dtype=np.float32))).tolist() == [0, 1]
    x = np.random.default_rng(0).integers(0, 3, size=(2000, 6)).astype(np.float32)  # 686 of the 729 possible rows
    expected = np.unique(x, axis=0, return_index=True)[1]
    assert first_of_each(row_fingerprints(x)).tolist() == sorted(expected.tolist())


def test_shapes_are_checked():
    with pytest.raises(ShapeError, match="expected rows"):
        row_fingerprints(np.float32(1.0))
    with pytest.raises(ShapeError, match=r"expected fingerprints \[N, 2\]"):
        first_of_each(np.zeros(3, dtype=np.uint64))
