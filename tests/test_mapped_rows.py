"""take_rows: rows of a read-only mapped .npy read from the file, the same as indexing the map,
without faulting the map's pages into the process; a round's pool read in chunks of whole score
batches gives the batches, and the queries, of one pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import activebayes._selection as selection
from activebayes.data.mapped_rows import take_rows
from activebayes.loop import ActiveLearningLoop
from activebayes.oracles import SimulatedOracle
from activebayes.store import PoolStore
from test_loop import CountingSoftmax, counting_factory, make_project


def mapped(tmp_path: Path, shape: tuple[int, ...] = (3000, 7)) -> tuple[np.ndarray, np.memmap]:
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    return x, np.load(tmp_path / "x.npy", mmap_mode="r")


def resident_kb(path: Path) -> int:
    """Resident kB of this process's mappings of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isalnum() and "-" in line.split(" ", 1)[0]:  # a mapping's header line
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.mark.parametrize(
    "rows",
    [np.arange(3000), np.array([5, 6, 7, 100, 2999]), np.array([9, 3, 3, -1, 0, 9]), np.array([], dtype=np.int64), np.array([42])],
)
def test_take_rows_is_indexing_the_map(tmp_path, rows):
    x, memmap = mapped(tmp_path, (3000, 2, 3))
    got = take_rows(memmap, rows)
    assert type(got) is np.ndarray and got.flags.c_contiguous and got.dtype == np.float32
    assert np.array_equal(got, x[rows])


def test_take_rows_refuses_rows_outside_and_indexes_other_arrays(tmp_path):
    x, memmap = mapped(tmp_path)
    with pytest.raises(IndexError, match=r"\[-3000, 3000\)"):
        take_rows(memmap, [0, 3000])
    rows = np.array([4, 1, 2])
    for other in (x, memmap[10:], np.load(tmp_path / "x.npy", mmap_mode="c")):  # in memory, a view, a writable map
        assert np.array_equal(take_rows(other, rows), other[rows])


def test_take_rows_leaves_the_map_unmapped(tmp_path):
    _, memmap = mapped(tmp_path, (20_000, 64))  # 5 MB
    path = (tmp_path / "x.npy").resolve()
    scattered = np.arange(0, 20_000, 97)
    take_rows(memmap, scattered)
    take_rows(memmap, np.arange(20_000))
    assert resident_kb(path) == 0
    np.ascontiguousarray(memmap[scattered])  # indexing the map faults its pages in
    assert resident_kb(path) > 0


def scored_batches(tmp_path: Path, chunk_bytes: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[list[str]]]:
    """(batch sizes `predict` saw, each round's queried keys) of two rounds with `chunk_bytes`."""
    monkeypatch.setattr(selection, "CHUNK_BYTES", chunk_bytes)
    CountingSoftmax.predicted = []
    with PoolStore(f"sqlite:///{tmp_path / f'{chunk_bytes}.db'}") as store:
        truth = make_project(store, tmp_path)
        loop = ActiveLearningLoop(counting_factory, "bald", store, "digits", SimulatedOracle(truth), batch_size=5, score_batch_size=7)
        results = loop.run(2)
    return list(CountingSoftmax.predicted), [list(r.queried) for r in results]


def test_chunks_of_whole_batches_score_as_one_pass(tmp_path, monkeypatch):
    one_pass = scored_batches(tmp_path, 1 << 30, monkeypatch)
    row_bytes = 64 * 4  # digits: 64 float32 features
    chunked = scored_batches(tmp_path, 3 * 7 * row_bytes, monkeypatch)  # 3 batches a chunk
    tiny = scored_batches(tmp_path, 1, monkeypatch)  # under one batch: a batch a chunk
    assert chunked == one_pass == tiny
    assert sum(one_pass[0]) >= 295 and set(one_pass[0][:-1]) == {7}
