"""Start-up: the wall time of the cheap commands (--help, status, export) on a small project, median of --repeats runs, optionally against another source tree.

    .venv/bin/python bench/startup.py [--repeats 5] [--old-src /tmp/old-src]

A 300-row, 3-feature project with two rounds answered by the held-back labels is made in a
temporary folder; then each command runs --repeats times in a fresh interpreter (`python -c "from
activebayes_cli.main import app; app()" ...`), with this checkout's code and, given --old-src (a
`git archive` of an earlier commit's activebayes/ and cli/), with that code, the two alternating,
so that a change in the machine's load falls on both: wall seconds and CPU seconds (user +
system of the child, which a loaded machine disturbs less). Also printed: the heavy libraries
each command loaded (with this code).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = (["--help"], ["status"], ["--json", "status"], ["export", "labels.csv"])
HEAVY = ("torch", "sklearn", "scipy", "pandas", "matplotlib", "botorch", "gpytorch", "sqlalchemy", "alembic")
RUN = "from activebayes_cli.main import app; app()"
PROBE = "import sys; sys.argv[0] = 'activebayes'\ntry:\n    " + RUN + "\nexcept SystemExit:\n    pass\nprint(*[m for m in %r if m in sys.modules], file=sys.stderr)" % (HEAVY,)


def source_path(src: Path, folder: Path) -> str:
    """PYTHONPATH that imports `src`'s activebayes and its cli/ as activebayes_cli."""
    link = folder / f"path-{abs(hash(str(src)))}"
    link.mkdir(exist_ok=True)
    if not (link / "activebayes_cli").exists():
        (link / "activebayes_cli").symlink_to(src / "cli")
    return f"{src}{os.pathsep}{link}"


def run(args: list[str], folder: Path, pythonpath: str, code: str = RUN) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath, "ACTIVEBAYES_DB": f"sqlite:///{folder / 'small.db'}"}
    (folder / "labels.csv").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=folder, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done


def cpu_children() -> float:
    """User + system CPU seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def make_project(folder: Path, pythonpath: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    rows = "".join(f"r{i},{a:.4f},{b:.4f},{c:.4f},{int(a + b > 0)}\n" for i, (a, b, c) in enumerate(x))
    (folder / "small.csv").write_text("id,a,b,c,label\n" + rows)
    for args in (["init", "--name", "small", "--classes", "0,1"], ["pool", "add", "small.csv", "--label-column", "label"],
                 ["round", "--oracle", "truth", "--k", "5"], ["round", "--oracle", "truth", "--k", "5"]):  # fmt: skip
        run(args, folder, pythonpath)


@contextmanager
def compared_project(doc: str, prefix: str) -> Iterator[tuple[argparse.Namespace, Path, dict[str, str]]]:
    """(the parsed --repeats and --old-src of a script described by `doc`'s first line, a
    temporary folder holding the 300-row project made with this checkout's code, the PYTHONPATH
    of each tree timed: {"old": ..., "now": ...}, "old" only with --old-src)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--old-src", type=Path, default=None, help="an earlier tree (activebayes/, cli/) to time against")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=prefix) as name:
        folder = Path(name)
        ways = {"now": source_path(ROOT, folder)}
        if args.old_src is not None:
            ways = {"old": source_path(args.old_src.resolve(), folder), **ways}
        make_project(folder, ways["now"])
        yield args, folder, ways


def main() -> None:
    with compared_project(__doc__, "startup-") as (args, folder, ways):
        seconds: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeats):
            for command in COMMANDS:
                for way, pythonpath in ways.items():
                    t0, c0 = time.perf_counter(), cpu_children()
                    run(command, folder, pythonpath)
                    seconds.setdefault((way, " ".join(command)), []).append(time.perf_counter() - t0)
                    seconds.setdefault((way + " cpu", " ".join(command)), []).append(cpu_children() - c0)
        ways = {**ways, **{f"{way} cpu": "" for way in ways}}
        print(f"median of {args.repeats} runs: wall s, CPU s; heavy libraries loaded (now)")
        print(f"{'command':20s} " + " ".join(f"{way:>8s}" for way in ways) + "  loaded")
        for command in COMMANDS:
            shown = " ".join(command)
            loaded = run(command, folder, ways["now"], PROBE).stderr.split()
            print(f"{shown:20s} " + " ".join(f"{statistics.median(seconds[(way, shown)]):8.2f}" for way in ways) + "  " + " ".join(loaded))


if __name__ == "__main__":
    main()
