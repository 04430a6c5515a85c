"""Torch's intra-op threads while a command trains many small networks."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

#: The most parameters of a network `training_threads` trains on one thread: the default MLP of a
#: 326-feature table has 59,000, of 28 x 28 images 118,000; a step's work is about its parameters
#: times the batch, too little to share between threads.
SMALL_NETWORK = 1_000_000


@contextmanager
def one_intra_op_thread() -> Iterator[None]:
    """Run the block with one intra-op thread unless OMP_NUM_THREADS says otherwise; restore after.

    The demo's and the studies' networks are tiny, and so are the MLPs a round fits (`SizedFit`,
    `training_threads`): one thread is as fast on an idle machine and several times faster on a
    busy one (measured on 2 shared cores: 17 s vs 61 s, `demo --fast`; a round's fit on 20 labels
    of a 326-feature table, 50 s vs 1.7 s, bench/round_fit.py). A round's scoring of the pool keeps
    torch's threads.
    """
    import torch

    threads = torch.get_num_threads()
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def training_threads(model_fn: Callable[[], Any]) -> AbstractContextManager[None]:
    """`one_intra_op_thread()` for training a small multi-layer perceptron (every layer with
    parameters a `Linear`, at most SMALL_NETWORK parameters in all: the CLI's `--model mlp` and
    `auto` candidates, or a user's network of that kind), else torch's threads as they are: a
    convolutional or a large network (a user's `module:factory`) has work per step to share."""
    from torch import nn

    model = model_fn()
    layers = [m for m in model.modules() if next(m.parameters(recurse=False), None) is not None]
    small = all(isinstance(m, nn.Linear) for m in layers) and sum(p.numel() for p in model.parameters()) <= SMALL_NETWORK
    return one_intra_op_thread() if small else nullcontext()
