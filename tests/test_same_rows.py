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


def test_rows_fingerprinted_chunk_by_chunk_equal_all_at_once(monkeypatch):
    """A row's fingerprint is its own: chunks of 1 row or 3 rows (of 5 values, an odd width
    padded in each chunk) give the fingerprints of one chunk of all 37 rows."""
    import activebayes.same_rows as same_rows

    x = np.random.default_rng(1).integers(0, 2, size=(37, 5)).astype(np.float32)
    x[5] = -0.0
    whole = row_fingerprints(x)
    for rows in (1, 3):
        monkeypatch.setattr(same_rows, "_CHUNK_BYTES", rows * 4 * 5, raising=False)
        assert row_fingerprints(x).tolist() == whole.tolist()
    assert first_of_each(whole).tolist() == sorted(np.unique(x + np.float32(0.0), axis=0, return_index=True)[1].tolist())


def test_shapes_are_checked():
    with pytest.raises(ShapeError, match="expected rows"):
        row_fingerprints(np.float32(1.0))
    with pytest.raises(ShapeError, match=r"expected fingerprints \[N, 2\]"):
        first_of_each(np.zeros(3, dtype=np.uint64))


def test_a_round_and_the_lockstep_runs_take_one_of_each_group_of_equal_rows(tmp_path):
    """A pool of 40 rows, 15 of them one row repeated: every round asks about at most one of the
    copies, and the lockstep study path prepares the very candidate rows the loop scores."""
    from activebayes.batched_runs.lockstep import _candidate_rows
    from activebayes.loop import ActiveLearningLoop, round_seed
    from activebayes.oracles import SimulatedOracle
    from activebayes.store import PoolStore
    from test_loop import TinySoftmax

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 4)).astype(np.float32)
    x[25:] = x[24]
    y = (x[:, 0] > 0).astype(np.int64)
    np.savez(tmp_path / "pool.npz", x=x, y=y)
    with PoolStore(f"sqlite:///{tmp_path / 'p.db'}") as store:
        store.create_project("p", task="classification", classes=[0, 1], data_path=tmp_path / "pool.npz")
        store.add_items("p", rows=np.arange(40))
        loop = ActiveLearningLoop(lambda seed: TinySoftmax(n_classes=2, seed=seed), "bald", store, "p", SimulatedOracle(y),
                                  batch_size=8, seed=1, device="cpu")  # fmt: skip
        for number in (1, 2, 3):
            candidates = store.candidates("p")[1].tolist()
            copies = [r for r in candidates if r >= 24]
            expected = [r for r in candidates if r < 24] + copies[:1]  # the first copy left stands for the rest
            assert sorted(_candidate_rows(loop, round_seed(1, number)).tolist()) == expected
            loop.step()
            rows = [q.row for q in store.queries("p", number)]
            assert len(rows) == 8 and sum(r >= 24 for r in rows) <= 1, rows
