"""keep_freed_memory: with glibc's thresholds raised, the buffers that training steps free and
take again are not faulted in again at every step (`activebayes._memory`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from activebayes._memory import keep_freed_memory

#: Ten Adam steps of Gal's CNN on 128 images after two warm-up steps; prints whether the
#: thresholds were set and the minor page faults of the ten steps.
SCRIPT = """
import resource, sys, torch
from activebayes._memory import keep_freed_memory
from activebayes.nets import gal_cnn
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
torch.set_num_threads(1)
torch.manual_seed(0)
net = gal_cnn()()
optimiser = torch.optim.Adam(net.parameters())
x, y = torch.rand(128, 1, 28, 28), torch.arange(128) % 10
def step():
    optimiser.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    optimiser.step()
step(); step()
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
before = faults()
for _ in range(10):
    step()
print(kept, faults() - before)
"""


def _huge_pages_always() -> bool:
    """Transparent huge pages for every mapping: a fresh 10 MB mapping is then a few faults, so
    glibc's default costs few faults too and the two counts do not compare."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[always]" in f.read()
    except OSError:
        return False


def _faults(mode: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_training_steps_stop_faulting_in_the_buffers_they_free():
    """Measured here: 1,000-6,000 faults with the thresholds raised against 93,000-100,000 with
    glibc's defaults (a step's activations of up to 10 MB, mapped afresh each time)."""
    kept, faults = _faults("keep")
    if kept == "False":
        pytest.skip("this C library has no mallopt thresholds (not glibc)")
    if _huge_pages_always():
        pytest.skip("transparent huge pages are on for every mapping: page faults do not show the reuse")
    _, default = _faults("default")
    assert kept == "True"
    assert faults * 4 < default


def test_elsewhere_it_changes_nothing(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert keep_freed_memory() is False
