"""Big tables: a 1,000,000-row csv through `init`, `pool add` and two rounds, each timed with its peak memory.

    .venv/bin/python bench/big_table.py [--rows 1000000] [--folder DIR] [--keep] [--threads 1] [--repeats 1] [--reuse]

The table (seeded): an `id` key column, 17 numeric features (four with about 1 % gaps: empty or
NA), 3 categorical ones (3 to 5 levels, one with gaps), and a 3-class `label` that depends on
them; about 160 bytes a row. Each CLI command runs in its own child process
(`os.wait4` gives its peak resident memory, ru_maxrss):

    activebayes init --name big --classes 0,1,2
    activebayes pool add big.csv --label-column label
    activebayes round --oracle truth --k 10                      (the first batch: random, no fit)
    activebayes round --oracle truth --k 10 --posterior mc-dropout --acquisition bald
                      --epochs 2 --samples 4                      (a fit on 10 labels, a score of the pool)

A round's overhead is its wall time less the fit and score times the round records (fit_s,
evaluate_s, score_s). The two rounds run `--repeats` times, each time from a copy of the
database as `pool add` left it; the table shows the least overhead and the largest peak of the
repeats (on a loaded machine the least is the least disturbed), and each round's CPU seconds
(user + system, from `os.wait4`). The reference for memory is the peak of a child that imports
what a round imports and does nothing (`imports`); the same steps on a 1,000-row table, in the
same run, give the fixed cost of a round (imports, CLI start, the trial fit).

Peer, one child each on the same file: ours loads the project's features as a round does
(`load_project_data`: the data file's sha256 checked, then the features) and reads every row;
the peer parses the csv with `pandas.read_csv` and applies the same recorded transform
(median fill, standardisation, one-hot over the recorded categories, gap indicators) with
numpy, and must give the same float32 features. The ratio is peer / ours (time and memory).
Last, one child times what a round does with the pool besides fit and score, step by step: the
data file's sha256, `load_project_data`, the truth oracle and its answers for 10 keys, the
store's candidates, counts, labels and every item (the stop set's read).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

NUMERIC, CATEGORICAL = 17, 3
GAPPY = (2, 5, 11, 14)  # numeric columns with gaps
LEVELS = (("red", "green", "blue"), ("north", "south", "east", "west"), ("a1", "b2", "c3", "d4", "e5"))
CHUNK = 100_000
EXE = Path(sys.executable).with_name("activebayes")


def write_table(path: Path, rows: int, seed: int = 0) -> None:
    """The benchmark's csv (module docstring), written in chunks of rows."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(NUMERIC, 3))
    header = ["id", *(f"f{j}" for j in range(NUMERIC)), *(f"c{j}" for j in range(CATEGORICAL)), "label"]
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(header) + "\n")
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            x = rng.normal(size=(n, NUMERIC)) * rng.uniform(0.5, 20, NUMERIC) + rng.uniform(-50, 50, NUMERIC)
            cats = [rng.integers(0, len(levels), n) for levels in LEVELS]
            logits = ((x - x.mean(0)) / x.std(0)) @ weights + 0.8 * np.stack([cats[0] == k for k in range(3)], axis=1)
            label = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
            columns = [np.char.mod("r%07d", np.arange(start, start + n))]
            for j in range(NUMERIC):
                cells = np.char.mod("%.5g", x[:, j]).astype(object)
                if j in GAPPY:
                    gaps = rng.random(n) < 0.01
                    cells[gaps] = np.where(rng.random(int(gaps.sum())) < 0.5, "", "NA")
                columns.append(cells)
            for j, levels in enumerate(LEVELS):
                cells = np.asarray(levels, dtype=object)[cats[j]]
                if j == 1:
                    cells[rng.random(n) < 0.005] = "NA"
                columns.append(cells)
            columns.append(label.astype(str))
            fh.write("\n".join(",".join(row) for row in zip(*columns)) + "\n")


def run_child(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak resident MiB, stdout, CPU seconds) of one child process; exits on failure."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout is not None else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{out}")
    return wall, usage.ru_maxrss / 1024.0, out, usage.ru_utime + usage.ru_stime


def copy_db(source: Path | None, target: Path) -> None:
    """Make `target` a copy of the SQLite database `source` (with its write-ahead log, if any);
    None: remove `target`."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
        if source is not None and suffix != "-shm" and Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def round_timings(db: Path, number: int) -> dict[str, float]:
    from activebayes.store import PoolStore

    store = PoolStore(f"sqlite:///{db}")
    try:
        rnd = next(r for r in store.rounds("big") if r.number == number)
        return {k: float(v) for k, v in rnd.timings.items()}
    finally:
        store.close()


def steps(table: Path) -> list[tuple[str, list[str], int | None]]:
    """(what, the CLI's arguments, the round number or None) of the timed commands."""
    return [
        ("init", ["init", "--name", "big", "--classes", "0,1,2"], None),
        ("pool add", ["pool", "add", str(table), "--label-column", "label"], None),
        ("round 1: random first batch", ["round", "--oracle", "truth", "--k", "10"], 1),
        ("round 2: fit + score (mc-dropout, bald)", ["round", "--oracle", "truth", "--k", "10", "--posterior", "mc-dropout",
                                                     "--acquisition", "bald", "--epochs", "2", "--samples", "4"], 2),  # fmt: skip
    ]


def inner_seconds(timings: dict[str, float]) -> float:
    """The fit, evaluation and score seconds a round recorded."""
    return sum(v for k, v in timings.items() if k in ("fit_s", "evaluate_s", "score_s"))


def show(what: str, wall: float, peak: float, timings: dict[str, float] | None, cpu: float | None = None) -> None:
    """One line of the table: wall time, the round's fit + score time and the rest, peak memory, CPU seconds."""
    inner = inner_seconds(timings or {})
    extra = f"{inner:11.2f} {wall - inner:10.2f}" if timings is not None else f"{'':11s} {'':10s}"
    print(f"{what:44s} {wall:8.2f} {extra} {peak:9.0f} {'' if cpu is None else f'{cpu:8.2f}'}", flush=True)


def child_ours(db: str) -> None:
    """Our load as a round does it, then every row read; prints seconds, the features' size and sha256."""
    from activebayes.data import load_project_data
    from activebayes.store import PoolStore

    store = PoolStore(db)
    t0 = time.perf_counter()
    data = load_project_data(store, "big")
    x = np.ascontiguousarray(data.x[np.arange(len(data))])
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "bytes": int(x.nbytes), "shape": list(x.shape), "sha256": hashlib.sha256(memoryview(x)).hexdigest()}))


def child_parts(db: str) -> None:
    """Seconds (wall, CPU) of what a round does with the pool besides fit and score, one step at a time."""
    from activebayes.data import load_project_data
    from activebayes.oracles import truth_oracle
    from activebayes.store import PoolStore

    store = PoolStore(db)
    asked = [q.key for q in store.queries("big", store.latest_round("big").number)]  # the keys the last round asked
    parts: dict[str, float] = {}
    found: dict[str, Any] = {}
    for what, step in (
        ("store.verify_data (the csv's sha256)", lambda: store.verify_data("big")),
        ("load_project_data (verify, cache checks, open)", lambda: load_project_data(store, "big")),
        ("truth_oracle, and its answers for 10 keys", lambda: truth_oracle(store, "big", found["data"]).ask(asked)),
        ("store.candidates", lambda: store.candidates("big")),
        ("store.count_candidates, count_items, count_labelled", lambda: (store.count_candidates("big"), store.count_items("big", split="pool"), store.count_labelled("big"))),
        ("store.labels", lambda: store.labels("big")),
        ("store.items (every item, no keys: the stop set's read)", lambda: store.items("big", with_keys=False)),
    ):
        t0, c0 = time.perf_counter(), time.process_time()
        result = step()
        parts[what] = (time.perf_counter() - t0, time.process_time() - c0)
        if what.startswith("load_project_data"):
            found["data"] = result
    parts["sum (verify_data counted twice: load_project_data runs it)"] = tuple(sum(p[i] for p in parts.values()) for i in (0, 1))
    print(json.dumps(parts))


def child_peer(db: str, csv_path: str) -> None:
    """pandas.read_csv and the recorded transform in numpy; prints seconds and the features' sha256."""
    import pandas as pd

    from activebayes.data.table_gaps import NA_VALUES
    from activebayes.store import PoolStore

    store = PoolStore(db)
    spec = store.project("big").settings["features"]
    store.close()
    t0 = time.perf_counter()
    frame = pd.read_csv(csv_path, keep_default_na=False, na_values=list(NA_VALUES), dtype={c["name"]: str for c in spec["columns"] if c["kind"] == "categorical"})
    blocks = []
    for c in spec["columns"]:
        column = frame[c["name"]]
        gaps = column.isna().to_numpy()
        if c["kind"] == "numeric":
            v = column.to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
            v[gaps] = c["fill"]
            blocks.append(((v - c["mean"]) / c["scale"]).astype(np.float32)[:, None])
        else:
            codes = pd.Categorical(column.fillna(c["fill"]), categories=c["categories"]).codes
            blocks.append(np.eye(len(c["categories"]), dtype=np.float32)[codes])
        if c["indicator"]:
            blocks.append(gaps.astype(np.float32)[:, None])
    x = np.concatenate(blocks, axis=1)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "sha256": hashlib.sha256(memoryview(np.ascontiguousarray(x))).hexdigest()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--folder", type=Path, default=None, help="work here (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the folder")
    parser.add_argument("--reference-rows", type=int, default=1000, help="the same steps on a table this small first, for reference")
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads in the rounds")
    parser.add_argument("--repeats", type=int, default=1, help="run the two rounds this many times, each from the database `pool add` left")
    parser.add_argument("--reuse", action="store_true", help="reuse the folder's database and features from an earlier run's `pool add`")
    parser.add_argument("--child", choices=("ours", "peer", "parts"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--csv", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "ours":
        return child_ours(args.db)
    if args.child == "peer":
        return child_peer(args.db, args.csv)
    if args.child == "parts":
        return child_parts(args.db)

    folder = args.folder or Path(tempfile.mkdtemp(prefix="big-table-"))
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "big.csv"
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    marker = table.with_suffix(".rows")
    if not table.exists() or not marker.exists() or marker.read_text() != str(args.rows):
        t0 = time.perf_counter()
        write_table(table, args.rows)
        marker.write_text(str(args.rows))
        print(f"wrote {table} ({table.stat().st_size / 1e6:.0f} MB, {args.rows:,} rows) in {time.perf_counter() - t0:.1f} s")
    print(f"csv: {table.stat().st_size / 1e6:.0f} MB, {args.rows:,} rows; folder {folder}")
    imports = "import torch, sklearn, activebayes.loop, activebayes.data, activebayes.store, activebayes_cli.main"
    print(f"\n{'step':44s} {'wall s':>8s} {'fit+score s':>11s} {'overhead s':>10s} {'peak MiB':>9s} {'CPU s':>8s}")
    wall, peak, _, cpu = run_child([sys.executable, "-c", imports], folder, env)
    show("imports (reference)", wall, peak, None, cpu)
    small = folder / "reference"
    small.mkdir(exist_ok=True)
    write_table(small / "big.csv", args.reference_rows)
    for where, csv_file, prefix in ((small, small / "big.csv", f"{args.reference_rows:,} rows: "), (folder, table, "")):
        db, added = where / "big.db", where / "big.added.db"  # added: the database as `pool add` left it
        child_env = {**env, "ACTIVEBAYES_DB": f"sqlite:///{db}"}
        if args.reuse and added.exists():
            print(f"{prefix}init, pool add: reused {added}")
        else:
            copy_db(None, db)
            shutil.rmtree(where / "activebayes-cache", ignore_errors=True)
            for what, argv, _ in steps(csv_file)[:2]:
                wall, peak, _, cpu = run_child([str(EXE), *argv], where, child_env)
                show(prefix + what, wall, peak, None, cpu)
            copy_db(db, added)
        runs: dict[str, list[tuple[float, float, dict[str, float], float]]] = {}
        for _ in range(args.repeats):
            copy_db(added, db)
            for what, argv, number in steps(csv_file)[2:]:
                wall, peak, _, cpu = run_child([str(EXE), *argv], where, child_env)
                runs.setdefault(what, []).append((wall, peak, round_timings(db, number), cpu))
        for what, done in runs.items():
            wall, _, timings, _ = min(done, key=lambda r: r[0] - inner_seconds(r[2]))  # the least overhead
            show(prefix + what, wall, max(r[1] for r in done), timings, min(r[3] for r in done))

    db = folder / "big.db"
    me = [sys.executable, str(Path(__file__).resolve()), "--db", f"sqlite:///{db}"]
    _, ours_peak, ours_out, _ = run_child([*me, "--child", "ours"], folder, env)
    _, peer_peak, peer_out, _ = run_child([*me, "--child", "peer", "--csv", str(table)], folder, env)
    ours, peer = json.loads(ours_out.strip().splitlines()[-1]), json.loads(peer_out.strip().splitlines()[-1])
    feature_mib = ours["bytes"] / 2**20
    print(f"\nfeatures: {ours['shape']} float32, {feature_mib:.0f} MiB")
    print(f"{'load':44s} {'seconds':>8s} {'peak MiB':>9s}")
    print(f"{'ours: load_project_data + read every row':44s} {ours['seconds']:8.2f} {ours_peak:9.0f}")
    print(f"{'peer: pandas.read_csv + the same transform':44s} {peer['seconds']:8.2f} {peer_peak:9.0f}")
    print(f"peer / ours: time {peer['seconds'] / ours['seconds']:.1f}x, peak memory {peer_peak / ours_peak:.2f}x; "
          f"same features: {peer['sha256'] == ours['sha256']}")  # fmt: skip
    _, parts_peak, parts_out, _ = run_child([*me, "--child", "parts"], folder, env)
    print(f"\nround steps besides fit and score, on the {args.rows:,}-row pool (peak {parts_peak:.0f} MiB): wall s, CPU s")
    for what, (seconds, cpu) in json.loads(parts_out.strip().splitlines()[-1]).items():
        print(f"  {what:60s} {seconds:6.2f} {cpu:6.2f}")
    shutil.rmtree(small)
    if not args.keep and args.folder is None:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
