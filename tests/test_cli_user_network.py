"""`round --model file.py:factory` with a network that cannot be used as built: float64 or
float16 weights, weights on the meta device, one network object returned by every call, and a
factory name mistyped. Each is refused in one line naming what to change, database unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run

NETS = """
from torch import nn

def good():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.Dropout(0.2), nn.Linear(8, 2))

def as_double():
    return good().double()

def as_half():
    return good().half()

def on_meta():
    return good().to("meta")

_ONE = good()

def the_same():
    return _ONE
"""


@pytest.fixture
def images(cli_db, tmp_path):
    """Project 'pets' on a folder of 8x8 grey pictures in two class folders; nets.py beside it."""
    from PIL import Image

    for c, base in (("cat", 0), ("dog", 128)):
        (tmp_path / "imgs" / c).mkdir(parents=True)
        for i in range(4):
            Image.fromarray(np.full((8, 8), base + i, dtype=np.uint8)).save(tmp_path / "imgs" / c / f"{i}.png")
    ok("init", "--name", "pets")
    ok("pool", "add", str(tmp_path / "imgs"), "--labels-from-folders")
    Path("nets.py").write_text(NETS)
    return cli_db


@pytest.mark.parametrize(
    "factory, words",
    [
        ("as_double", ["weights are float64", "float32 items", "leave out .double()"]),
        ("as_half", ["weights are float16", "build it in float32"]),
        ("on_meta", ["meta device", "build it on the CPU"]),
        ("the_same", ["each call returns the same network object", "build a new network inside the factory"]),
        ("goood", ["has no attribute 'goood' (did you mean good?)"]),
    ],
)  # fmt: skip
def test_a_network_that_cannot_be_used_as_built_is_refused(images, factory, words):
    before = db_dump(images)
    assert_mistake(run("round", "--k", "2", "--model", f"nets.py:{factory}"), *words)
    assert db_dump(images) == before


def test_a_good_factory_runs_a_round(images):
    ok("round", "--k", "2", "--model", "nets.py:good")
