"""Torch's intra-op threads while a command trains many small networks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_intra_op_thread() -> Iterator[None]:
    """Run the block with one intra-op thread unless OMP_NUM_THREADS says otherwise; restore after.

    The demo's and the studies' networks are tiny, and so are the ones a round fits (`SizedFit`):
    one thread is as fast on an idle machine and several times faster on a busy one (measured on 2
    shared cores: 17 s vs 61 s, `demo --fast`; a round's fit on 20 labels of a 326-feature table,
    50 s vs 1.7 s, bench/round_fit.py). A round's scoring of the pool keeps torch's threads.
    """
    import torch

    threads = torch.get_num_threads()
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
