"""Per-process cost of training: a fresh interpreter's first `train` call, and one `activebayes round`, median of --repeats runs, optionally against another source tree.

    .venv/bin/python bench/training_process.py [--repeats 5] [--old-src /tmp/old-src]

"train": `python -c` imports torch and activebayes.training, then trains a 3-16-2 MLP for 2
epochs on 64 items (Adam), timing the import and the train call inside the child (CPU seconds,
time.process_time) and saying whether torch._dynamo was imported. "round": `activebayes round
--oracle truth --k 5` on a copy of bench/startup.py's 300-row project after its two rounds (the
same database each time), wall and CPU seconds of the child. With --old-src (a `git archive` of
an earlier commit's activebayes/ and cli/) the two trees alternate, so that the machine's load
falls on both.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from startup import RUN, compared_project, cpu_children

TRAIN = """\
import sys, time
start = time.process_time()
import torch
from torch import nn
from activebayes.training import TrainConfig, train
torch.set_num_threads(1)
imported = time.process_time()
x, y = torch.randn(64, 3, generator=torch.Generator().manual_seed(0)), torch.randint(0, 2, (64,))
train(nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 2)), x, y, TrainConfig(epochs=2, batch_size=32), seed=0, device="cpu")
print(imported - start, time.process_time() - imported, "torch._dynamo" in sys.modules)
"""


def child(code: str, args: list[str], folder: Path, pythonpath: str, db: Path) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of `python -c code args` in `folder`."""
    env = {**os.environ, "PYTHONPATH": pythonpath, "ACTIVEBAYES_DB": f"sqlite:///{db}", "OMP_NUM_THREADS": "1"}
    t0, c0 = time.perf_counter(), cpu_children()
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=folder, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args) or 'train'} failed:\n{done.stdout}{done.stderr}")
    return time.perf_counter() - t0, cpu_children() - c0, done.stdout


def main() -> None:
    with compared_project(__doc__, "training-process-") as (args, folder, ways):
        rows: dict[tuple[str, str], list[float]] = {}
        dynamo: dict[str, str] = {}
        for _ in range(args.repeats):
            for way, pythonpath in ways.items():
                _, cpu, out = child(TRAIN, [], folder, pythonpath, folder / "small.db")
                imported, trained, loaded = out.split()
                rows.setdefault((way, "train: import CPU s"), []).append(float(imported))
                rows.setdefault((way, "train: train() CPU s"), []).append(float(trained))
                rows.setdefault((way, "train: process CPU s"), []).append(cpu)
                dynamo[way] = loaded
                db = folder / "round.db"
                shutil.copyfile(folder / "small.db", db)
                wall, cpu, _ = child(RUN, ["round", "--oracle", "truth", "--k", "5"], folder, pythonpath, db)
                rows.setdefault((way, "round: wall s"), []).append(wall)
                rows.setdefault((way, "round: CPU s"), []).append(cpu)
        print(f"median of {args.repeats} runs")
        print(f"{'':24s} " + " ".join(f"{way:>8s}" for way in ways))
        for what in dict.fromkeys(what for _, what in rows):
            print(f"{what:24s} " + " ".join(f"{statistics.median(rows[(way, what)]):8.2f}" for way in ways))
        print(f"{'torch._dynamo imported':24s} " + " ".join(f"{dynamo[way]:>8s}" for way in ways))


if __name__ == "__main__":
    main()
