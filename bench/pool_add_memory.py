"""Pool add memory: the peak memory of the three steps of `pool add` that held copies of the features, the old way against the new.

    .venv/bin/python bench/pool_add_memory.py [--rows 200000] [--numbers 20] [--levels 300]

A table of `--rows` rows, `--numbers` numeric features and one categorical column of `--levels`
levels gives features x [N, D] float32, D = numbers + levels (about 250 MB at the defaults).
Each step runs in a child process of its own, after building its input; reported is the peak
resident memory (ru_maxrss) above the input, the old way and the new, their ratio, and whether
both give the same result (the same array, fingerprints or file bytes and sha256). The new
`assemble` peak is the features themselves, which the old one made twice:

    assemble     the features from their column blocks (`table_spec.apply_table_spec`). Old: each
                 column's block made (a categorical one as its [N, K] one-hot), then np.concatenate.
                 New: one [N, D] array, each block written into it, a one-hot set in place.
    fingerprint  the pool rows' fingerprints (`pool add`'s note on repeated rows, `same_rows`).
                 Old: x[pool_rows] copied, padded and mixed whole. New: chunk by chunk over x,
                 then the pool rows' picked.
    write        the features' .npy cache (`feature_cache._write_npy`). Old: a memory map of the
                 file filled in 65,536-row chunks (each page written stays resident), then read
                 back for its sha256. New: blocks written through a file, hashed on the way.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

STEPS = ("assemble", "fingerprint", "write")


def _inputs(rows: int, numbers: int, levels: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The numeric blocks [N, 1] float32 and the categorical indices [N] of the seeded table."""
    rng = np.random.default_rng(0)
    blocks = [rng.normal(size=(rows, 1)).astype(np.float32) for _ in range(numbers)]
    return blocks, rng.integers(0, levels, size=rows)


def _features(blocks: list[np.ndarray], index: np.ndarray, levels: int) -> np.ndarray:
    from activebayes.data.table_spec import _side_by_side

    return _side_by_side([*blocks, (index, levels)], len(index))


def _old_assemble(blocks: list[np.ndarray], index: np.ndarray, levels: int) -> np.ndarray:
    from activebayes.data.features import one_hot_codes

    return np.concatenate([*blocks, one_hot_codes(index, levels)], axis=1)


def _old_fingerprints(x: np.ndarray) -> np.ndarray:
    from activebayes.same_rows import _constants, _mixed

    d = x.shape[1]
    rows = np.zeros((len(x), d + d % 2), dtype=np.float32)
    rows[:, :d] = x
    rows += np.float32(0.0)
    words = _mixed(rows.view(np.uint64))
    with np.errstate(over="ignore"):
        return words @ _constants(words.shape[1])


def _old_write(path: Path, x: np.ndarray) -> str:
    from activebayes.data.dataset import sha256_file

    out = np.lib.format.open_memmap(path, mode="w+", dtype=x.dtype, shape=x.shape)
    for start in range(0, x.shape[0], 65_536):
        out[start : start + 65_536] = x[start : start + 65_536]
    out.flush()
    del out
    return sha256_file(path)


def child(step: str, way: str, rows: int, numbers: int, levels: int) -> None:
    """Run one step one way; print the peak above its input (MB) and a digest of its result."""
    from activebayes.data.feature_cache import _write_npy
    from activebayes.same_rows import row_fingerprints

    blocks, index = _inputs(rows, numbers, levels)
    x = None if step == "assemble" else _features(blocks, index, levels)
    pool_rows = np.sort(np.random.default_rng(1).permutation(rows)[rows // 10 :])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.npy"
        if step == "assemble":
            result = (_old_assemble if way == "old" else _features)(blocks, index, levels)
        elif step == "fingerprint":
            result = _old_fingerprints(x[pool_rows]) if way == "old" else row_fingerprints(x)[pool_rows]
        else:
            result = np.frombuffer((_old_write(path, x) if way == "old" else _write_npy(path, x)).encode(), dtype=np.uint8)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        digest = hashlib.sha256(np.ascontiguousarray(result)).hexdigest()
        if path.exists():
            digest += hashlib.sha256(path.read_bytes()).hexdigest()
    print(f"{max(peak - before, 0) / 1024:.1f} {digest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--numbers", type=int, default=20)
    parser.add_argument("--levels", type=int, default=300)
    parser.add_argument("--child", nargs=2, metavar=("STEP", "WAY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.rows, args.numbers, args.levels)
        return
    size = args.rows * (args.numbers + args.levels) * 4 / 2**20
    print(f"features [{args.rows}, {args.numbers + args.levels}] float32: {size:.0f} MB; peak MB above the step's input")
    print(f"{'step':12s} {'old':>8s} {'new':>8s} {'old/new':>8s}  same")
    for step in STEPS:
        found = {}
        for way in ("old", "new"):
            command = [sys.executable, __file__, "--rows", str(args.rows), "--numbers", str(args.numbers), "--levels", str(args.levels),
                       "--child", step, way]  # fmt: skip
            mb, digest = subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()
            found[way] = (float(mb), digest)
        (old, old_digest), (new, new_digest) = found["old"], found["new"]
        ratio = f"{old / new:8.1f}" if new >= 1 else f"{'> ' + format(old, '.0f'):>8s}"  # under 1 MB: ru_maxrss's kB blur it
        print(f"{step:12s} {old:8.0f} {new:8.0f} {ratio}  {'yes' if old_digest == new_digest else 'NO'}")


if __name__ == "__main__":
    main()
