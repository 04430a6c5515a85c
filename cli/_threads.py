"""Torch's intra-op threads while a command trains many small networks."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    _one_thread_unless_asked()
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _one_thread_unless_asked() -> None:
    """One intra-op thread from now on, unless OMP_NUM_THREADS asks for a number."""
    import torch

    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)


def is_small_mlp(model: Any) -> bool:
    """Whether `model` is a small multi-layer perceptron: every layer with parameters of its own a
    `Linear`, at most SMALL_NETWORK parameters in all (the CLI's `--model mlp` and `auto`
    candidates, or a user's network of that kind)."""
    from torch import nn

    layers = [m for m in model.modules() if next(m.parameters(recurse=False), None) is not None]
    return all(isinstance(m, nn.Linear) for m in layers) and sum(p.numel() for p in model.parameters()) <= SMALL_NETWORK


class _ThreadsByFirstNetwork:
    """`model_fn` as it is, except that while `training_threads` is open the first network it
    builds decides the threads: one intra-op thread for a small MLP (`is_small_mlp`) unless
    OMP_NUM_THREADS is set, torch's as they are otherwise. Pickled (a Ray worker's copy), it is the
    plain `model_fn`."""

    def __init__(self, model_fn: Callable[[], Any]) -> None:
        self.model_fn = model_fn
        self.deciding = True  # until the first network is built, or the block ends

    def __call__(self) -> Any:
        model = self.model_fn()
        if self.deciding:
            self.deciding = False
            if is_small_mlp(model):
                _one_thread_unless_asked()
        return model

    def __reduce__(self) -> tuple[Callable[[Any], Any], tuple[Any]]:
        return _unwrapped, (self.model_fn,)


def _unwrapped(model_fn: Callable[[], Any]) -> Callable[[], Any]:
    return model_fn


@contextmanager
def training_threads(model_fn: Callable[[], Any]) -> Iterator[Callable[[], Any]]:
    """A block that trains networks from `model_fn`: yields the factory to train them with, which
    builds as `model_fn` does and, at its first network, runs the rest of the block on one
    intra-op thread if that network is a small MLP (`is_small_mlp`; unless OMP_NUM_THREADS says
    otherwise), else on torch's threads as they are: a convolutional or a large network (a user's
    `module:factory`) has work per step to share. The decision costs no build of its own: a large
    factory builds only the networks the posterior trains. torch's threads are restored after."""
    import torch

    threads = torch.get_num_threads()
    factory = _ThreadsByFirstNetwork(model_fn)
    try:
        yield factory
    finally:
        factory.deciding = False  # a later build (a refit of the posterior) changes no threads
        torch.set_num_threads(threads)
