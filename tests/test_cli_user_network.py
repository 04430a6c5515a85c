"""`round --model file.py:factory` with a network that cannot be used as built: float64 or
float16 weights, weights on the meta device, one network object returned by every call, and a
factory name mistyped. Each is refused in one line naming what to change, database unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run

NETS = """
import warnings

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

class AsClass(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.Dropout(0.2), nn.Linear(hidden, 2))

    def forward(self, x):
        return self.net(x)

def needs_args(n_classes, hidden=8):
    return good()

class Returns(nn.Module):
    def __init__(self, wrap):
        super().__init__()
        self.net, self.wrap = good(), wrap

    def forward(self, x):
        return self.wrap(self.net(x))

class HFOutput:  # what a Hugging Face model returns: an object with .logits
    def __init__(self, logits):
        self.logits = logits

def as_tuple():
    return Returns(lambda z: (z, z.sum()))

def as_dict():
    return Returns(lambda z: {"logits": z})

def as_hf():
    return Returns(HFOutput)

def warns_then_tuple():  # a library's deprecation (say torch.jit.script's) is no line of the refusal
    warnings.warn("`some.call` is deprecated. Please switch to `other.call`.", DeprecationWarning)
    return as_tuple()

def one_logit():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.Dropout(0.2), nn.Linear(8, 1), nn.Flatten(0))

def on_gpu():
    return good().to("cuda")

class Fails(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = good()

    def forward(self, x):
        raise KeyError("no such head")

def fails_in_forward():
    return Fails()
"""

BROKEN_MODULE = "import some_package_not_installed\n\ndef make():\n    return None\n"


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
        ("needs_args", ["takes n_classes without defaults", "calling it with no arguments", "give it a default"]),
        ("as_tuple", ["forward returns a tuple of 2, not a tensor", "return only the logits [N, 2]"]),
        ("warns_then_tuple", ["forward returns a tuple of 2, not a tensor"]),
        ("as_dict", ["forward returns a dict holding ['logits']", "return self.net(x)['logits']"]),
        ("as_hf", ["forward returns a HFOutput holding .logits", "return the logits alone"]),
        ("one_logit", ["got (2,): one value per item", "nn.Linear(..., 2)"]),
        ("fails_in_forward", ["a forward pass on items of shape (1, 8, 8) failed (KeyError: 'no such head')", "or fix the error its forward raises"]),
    ],
)  # fmt: skip
def test_a_network_that_cannot_be_used_as_built_is_refused(images, factory, words):
    before = db_dump(images)
    assert_mistake(run("round", "--k", "2", "--model", f"nets.py:{factory}"), *words)
    assert db_dump(images) == before


def test_a_good_factory_runs_a_round(images):
    ok("round", "--k", "2", "--model", "nets.py:good")


def test_a_class_with_default_arguments_is_a_factory(images):
    """A class is a factory; MC dropout's warning that it cannot cache a non-Sequential network's
    layers reaches stderr as its text alone, not as Python's file:line report."""
    result = ok("round", "--k", "2", "--model", "nets.py:AsClass")
    assert "MCDropout: AsClass is not an nn.Sequential" in result.stderr
    assert "UserWarning" not in result.stderr and ".py:" not in result.stderr


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a factory putting its network on a GPU that is there is fine")
def test_a_factory_that_puts_its_network_on_a_gpu_not_there_is_named_so(images):
    before = db_dump(images)
    assert_mistake(run("round", "--k", "2", "--model", "nets.py:on_gpu"), "put on a CUDA GPU, and torch sees none", "build it on the CPU")
    assert db_dump(images) == before


def test_a_module_whose_own_import_fails_is_not_called_misspelt(images):
    """`pkg.mod:factory` where pkg/mod.py imports a package not installed: the underlying error,
    and no hint about the module's spelling or PYTHONPATH."""
    Path("userpkg_broken_import").mkdir()  # a name no other test imports (the process keeps imported packages)
    (Path("userpkg_broken_import") / "__init__.py").write_text("")
    (Path("userpkg_broken_import") / "nets.py").write_text(BROKEN_MODULE)
    result = run("round", "--k", "2", "--model", "userpkg_broken_import.nets:make")
    assert_mistake(result, "importing module 'userpkg_broken_import.nets' failed (ModuleNotFoundError: No module named 'some_package_not_installed')",
                   "install 'some_package_not_installed'")  # fmt: skip
    assert "PYTHONPATH" not in result.stderr
    Path("broken_nets.py").write_text(BROKEN_MODULE)  # the same as a file: the same fix
    assert_mistake(run("round", "--k", "2", "--model", "broken_nets.py:make"), "broken_nets.py failed (ModuleNotFoundError",
                   "install 'some_package_not_installed'")  # fmt: skip
