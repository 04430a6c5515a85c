"""Projects for the labelling page's tests, one per kind of page (table, image, text, regression),
each with round 1 waiting for answers, and a real `activebayes serve` in a child process."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from activebayes.store import PoolStore
from cli_checks import ok
from test_cli import write_pool_csv
from test_cli_label import open_round

CLI = str(Path(sys.executable).parent / "activebayes")
HOSTILE = "<script>alert('x')</script> and <img src=x onerror=alert(1)> quiet river"
WORDS = ("quiet", "bright", "slow", "river", "engine", "paper", "garden", "signal", "window", "harvest", "copper", "lantern")


def _round_of(db: str, project: str, k: int, predict: bool) -> list[str]:
    """Open round 1 over the first `k` pool items (by key order), with predictions when asked."""
    with PoolStore(db) as store:
        info = store.project(project)
        states = store.label_states(project, sorted(store.item_keys(project)))
    keys = [key for key, s in states.items() if s["split"] == "pool"][:k]
    predictions = None
    if predict:
        if info.task == "classification":
            predictions = [{"label": info.classes[i % len(info.classes)], "probability": 0.5 + 0.1 * (i % 4)} for i in range(k)]
        else:
            predictions = [{"mean": 2.5 + i, "sd": 0.4} for i in range(k)]
    open_round(db, project, keys, predictions)
    return keys


def table_project(db: str, folder: Path, *, name: str = "blobs", k: int = 5, hostile: bool = False, classes: str = "a,b,c") -> list[str]:
    """Three blobs in a csv (labels a, b, c; the project's `classes` hold them); with `hostile` a
    text column "note" whose first row holds markup. The keys of round 1's queries, in rank order."""
    path = write_pool_csv(folder / f"{name}.csv", n=30)
    extra: tuple[str, ...] = ()
    if hostile:
        rng = np.random.default_rng(2)
        rows = list(csv.reader(path.open()))
        rows[0].insert(1, "note")
        for i, row in enumerate(rows[1:]):
            row.insert(1, HOSTILE if i == 0 else " ".join(rng.choice(WORDS, size=6)))
        with path.open("w", newline="") as fh:
            csv.writer(fh).writerows(rows)
        extra = ("--text-column", "note")
    ok("--db", db, "init", "--name", name, "--classes", classes)
    ok("--db", db, "--project", name, "pool", "add", str(path), "--key-column", "id", *extra)
    return _round_of(db, name, k, predict=True)


def image_project(db: str, folder: Path, *, name: str = "digits", k: int = 6) -> list[str]:
    """sklearn's 8x8 digits (shipped with scikit-learn) as an npz of images [N, 8, 8], classes 0-9;
    the page's names of round 1's queries."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    path = folder / f"{name}.npz"
    np.savez(path, x=(digits.images[:60] / 16.0).astype(np.float32), y=digits.target[:60])
    ok("--db", db, "init", "--name", name, "--classes", ",".join(map(str, range(10))))
    ok("--db", db, "--project", name, "pool", "add", str(path))
    return page_names(_round_of(db, name, k, predict=True))


def page_names(keys: list[str]) -> list[str]:
    """What the page calls an image pool's queries, in rank order: "query 1", ... (never the key)."""
    return [f"query {rank + 1}" for rank in range(len(keys))]


def image_folder_project(db: str, folder: Path, *, name: str = "shapes", k: int = 3, side: int = 16, truth: bool = False) -> list[str]:
    """A folder of small PNG files (side x side, classes dark and light in sub-folders), added as
    `pool add FOLDER --labels-from-folders` (keys img-NNNN), or with `truth` as `--truth FILE` of
    its paths (keys dark/dark0.png, which spell the class): the page serves the files themselves.
    The page's names of round 1's queries (`page_names`)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for label, level in (("dark", 40), ("light", 215)):
        (folder / "images" / label).mkdir(parents=True, exist_ok=True)
        for i in range(6):
            pixels = np.clip(level + rng.normal(scale=20, size=(side, side)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / "images" / label / f"{label}{i}.png")
    ok("--db", db, "init", "--name", name, "--classes", "dark,light")
    labels: tuple[str, ...] = ("--labels-from-folders",)
    if truth:
        rows = [f"{label}/{label}{i}.png,{label}\n" for label in ("dark", "light") for i in range(6)]
        (folder / "truth.csv").write_text("key,label\n" + "".join(rows))
        labels = ("--truth", str(folder / "truth.csv"))
    ok("--db", db, "--project", name, "pool", "add", str(folder / "images"), *labels)
    return page_names(_round_of(db, name, k, predict=False))


def _csv_project(db: str, folder: Path, name: str, rows: list[list[str]], init: tuple[str, ...], add: tuple[str, ...], k: int,
                 delimiter: str = ",") -> list[str]:  # fmt: skip
    """Project `name` over a csv of `rows` (a header first, keys in column "id")."""
    path = folder / f"{name}.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, delimiter=delimiter).writerows(rows)
    ok("--db", db, "init", "--name", name, *init)
    ok("--db", db, "--project", name, "pool", "add", str(path), "--key-column", "id", *add)
    return _round_of(db, name, k, predict=True)


def text_project(db: str, folder: Path, *, name: str = "reviews", k: int = 4) -> list[str]:
    """Short reviews (a text column) rated bad / good."""
    rng = np.random.default_rng(0)
    rows = [["id", "review", "length_cm", "label"]] + [
        [f"r{i:02d}", f"The {' '.join(rng.choice(WORDS, size=14))}, and then it was over.", f"{rng.uniform(1, 9):.1f}", ("bad", "good")[i % 2]]
        for i in range(40)
    ]  # fmt: skip
    return _csv_project(db, folder, name, rows, ("--classes", "bad,good"), ("--text-column", "review"), k)


def regression_project(db: str, folder: Path, *, name: str = "yield", k: int = 4, comma: bool = False) -> list[str]:
    """A table of two features and a number to predict; with `comma` written with decimal commas
    between `;`, as a spreadsheet in most of Europe saves it."""
    rng = np.random.default_rng(1)
    rain, sun = rng.uniform(0, 50, size=30), rng.uniform(0, 12, size=30)

    def num(text: str) -> str:
        return text.replace(".", ",") if comma else text

    rows = [["id", "rain_mm", "sun_h", "label"]] + [
        [f"plot-{i:02d}", num(f"{r:.1f}"), num(f"{h:.1f}"), num(f"{0.1 * r + 0.3 * h:.2f}")] for i, (r, h) in enumerate(zip(rain, sun))]
    return _csv_project(db, folder, name, rows, ("--task", "regression"), (), k, delimiter=";" if comma else ",")


@contextmanager
def served(db: str, project: str, *labellers: str, folder: Path, extra: tuple[str, ...] = ()):
    """`activebayes serve` (a real uvicorn) on a free port in a child process; yields
    (process, {labeller: url}). The process is killed afterwards if it still runs."""
    names = [w for name in labellers for w in ("--labeller", name)]
    proc = subprocess.Popen([CLI, "--db", db, "--project", project, "serve", "--port", "0", *names, *extra],
                            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "400"})  # fmt: skip
    urls: dict[str, str] = {}
    try:
        for line in proc.stdout:
            found = re.match(r"\s+(\S+): (http://\S+)$", line)
            if found:
                urls[found.group(1)] = found.group(2)
            if line.startswith("Ctrl-C"):
                break
        assert set(urls) == set(labellers), (urls, proc.stderr.read() if proc.poll() is not None else "")
        yield proc, urls
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
