"""Run a study's (acquisition, repeat) runs in N worker processes: `run_study_jobs`.

    result = run_study_jobs(config, "out/mnist", jobs=15, device="cuda")

Design:
- Workers come from the multiprocessing "spawn" context (CUDA cannot be used in a forked
  child), so with a GPU every worker opens its own CUDA context on the one device. Each worker
  sets torch's intra-op threads to max(1, cores // jobs).
- State: the ONE shared `out_dir/study.db`, exactly as `run_study` writes it. PoolStore opens
  SQLite with WAL, busy_timeout (60 s) and BEGIN IMMEDIATE for every write transaction, so
  concurrent writers serialise instead of failing, and readers never block. Writes are a few
  small transactions per round (seconds to minutes of training each), so contention is
  negligible. One shared file keeps --jobs 1 (= `run_study`) and --jobs N interchangeable on
  the same folder: a study started with one can be resumed with the other, and every reader
  (`activebayes status --db`, the report) still sees one database.
- The parent prepares everything that could race (config record, data file, every project's
  import) before starting a worker; a worker only steps its own project's loop, so each run is
  the same sequence of rounds, with the same seeds, as under `run_study`: the curves are equal.
- Progress: each worker puts (run, 1) on a multiprocessing queue after every round; the parent
  sums rounds done over all runs against the study's total.
- Failure: a worker that raises reports (run, error) and the other runs go on; when all are
  over, `StudyRunsFailed` names the failed run(s) in one line: a user's mistake (an
  ActiveBayesError) is one, a bug gets its traceback written to `out_dir/study-errors.log`.
- engine="ray": each run is a Ray task instead (`activebayes.distributed.run_tasks`, `jobs` at
  a time, the same intra-op threads); the same runs and results. The store stays the SQLite file
  in out_dir, so only a local Ray (address None or "local") may run them.
- Results: once every run is done, `study.collect_results` reads the finished folder and writes
  results.json and the plot exactly as for --jobs 1.
"""

from __future__ import annotations

import os
import queue as queue_module
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activebayes.errors import ActiveBayesError, ConfigError
from activebayes.store import RoundStatus

ERROR_LOG = "study-errors.log"


@dataclass(frozen=True)
class RunFailure:
    run: str  # "<acquisition>-r<repeat + 1>"
    error: str  # "ExcType: message"
    user_mistake: bool  # an ActiveBayesError (bad data, option, ...) rather than a bug
    traceback: str


class StudyRunsFailed(ActiveBayesError):
    """Some runs failed (the others finished). `failures` lists them; `log` holds the tracebacks
    of the ones that were bugs (None when every failure was a user's mistake)."""

    def __init__(self, failures: list[RunFailure], log: Path | None, total: int) -> None:
        self.failures = failures
        self.log = log
        self.user_mistake = all(f.user_mistake for f in failures)
        first = failures[0]
        more = f" (and {len(failures) - 1} more run(s): {', '.join(f.run for f in failures[1:])})" if len(failures) > 1 else ""
        where = f"; traceback in {log}" if log is not None else ""
        super().__init__(
            f"study run {first.run} failed: {' '.join(first.error.split())}{more}; the other "
            f"{total - len(failures)} run(s) finished; fix it and rerun the same command to resume{where}"
        )


def worker_threads(jobs: int, cores: int | None = None) -> int:
    """Intra-op threads per worker: the cores shared out, at least one."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
    return max(1, cores // max(1, jobs))


# ---- the worker -----------------------------------------------------------------------------
_queue: Any = None


def _init_worker(progress_queue: Any, threads: int) -> None:
    global _queue
    import signal

    import torch

    from activebayes._memory import keep_freed_memory

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent alone handles it
    _queue = progress_queue
    torch.set_num_threads(threads)
    keep_freed_memory()  # rounds free and take the same buffers again: no page faults for them


def default_run_one() -> Callable[..., Any]:
    """`activebayes.study.run_one` (a seam for tests, which swap in a failing one)."""
    from activebayes import study

    return study.run_one


def _call_run_one(fn: Callable[..., Any], config: Any, out_dir: Path, acquisition: str, repeat: int, device: str,
                  progress: Callable[..., None]) -> int:  # fmt: skip
    """Run `fn` (study.run_one's signature); the rounds run, counted from its progress calls
    (one per round)."""
    rounds = [0]

    def counted(*args: Any) -> None:
        rounds[0] += 1
        progress(*args)

    fn(config, out_dir, acquisition, repeat, device=device, progress=counted)
    return rounds[0]


def _work(fn: Callable[..., Any], config: Any, out_dir: str, acquisition: str, repeat: int, device: str) -> tuple[str, int, RunFailure | None]:
    name = f"{acquisition}-r{repeat + 1}"

    def progress(*_: Any) -> None:
        if _queue is not None:
            _queue.put((name, 1))

    try:
        return name, _call_run_one(fn, config, Path(out_dir), acquisition, repeat, device, progress), None
    except BaseException as exc:  # noqa: BLE001 - every failure is reported, the pool goes on
        error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ActiveBayesError) else str(exc)
        return name, 0, RunFailure(name, error, isinstance(exc, ActiveBayesError), traceback.format_exc())


def _ray_work(threads: int, fn: Callable[..., Any], config: Any, out_dir: str, acquisition: str, repeat: int,
              device: str) -> tuple[str, int, RunFailure | None]:  # fmt: skip
    """`_work` in a Ray task, with the intra-op threads a process-pool worker would get."""
    import torch

    torch.set_num_threads(threads)
    return _work(fn, config, out_dir, acquisition, repeat, device)


# ---- the parent -----------------------------------------------------------------------------
def plan_runs(config: Any, out_dir: Path, device: str) -> tuple[list[tuple[str, int]], dict[str, int], int]:
    """Everything that could race, done once in the parent: `study.prepare_study` (the config
    record and the data file) and every project's import. Returns the (acquisition, repeat) runs
    still to finish, the rounds already done per run, and the study's total rounds."""
    from activebayes import study
    from activebayes.store import PoolStore

    data = study.prepare_study(config, out_dir, device=device)
    todo, done = [], {}
    with PoolStore(f"sqlite:///{out_dir / 'study.db'}") as store:
        for repeat, split in enumerate(data.splits):
            for acquisition in config.acquisitions:
                name = f"{acquisition}-r{repeat + 1}"
                study._import(store, name, data, split)
                finished = sum(1 for r in store.rounds(name) if r.status is RoundStatus.done and "accuracy" in r.metrics)
                done[name] = min(finished, config.rounds_per_run)
                if not study._finished(store, name, config.max_labels):
                    todo.append((acquisition, repeat))
    return todo, done, config.repeats * len(config.acquisitions) * config.rounds_per_run


def _run_in_processes(fn: Callable[..., Any], config: Any, out_dir: Path, todo: list[tuple[str, int]], device: str, jobs: int,
                      report: Callable[[str, int], None]) -> tuple[int, list[RunFailure]]:  # fmt: skip
    """The runs in `jobs` spawned processes, each round reported as it ends; (rounds run, failures)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    progress_queue = ctx.Queue()
    rounds_run, failures = 0, []

    def drain(block: float) -> None:
        try:
            while True:
                name, n = progress_queue.get(timeout=block) if block else progress_queue.get_nowait()
                block = 0
                report(name, n)
        except queue_module.Empty:
            pass

    with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=ctx, initializer=_init_worker,
                             initargs=(progress_queue, worker_threads(jobs))) as pool:  # fmt: skip
        running = {pool.submit(_work, fn, config, str(out_dir), a, r, device) for a, r in todo}
        try:
            while running:
                finished, running = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                drain(0)
                for future in finished:
                    _, n, failure = future.result()
                    rounds_run += n
                    if failure is not None:
                        failures.append(failure)
        except KeyboardInterrupt:
            _stop_workers(pool)  # each run's finished rounds are in study.db; a round cut short resumes
            raise
    time.sleep(0.05)
    drain(0.05)
    progress_queue.close()
    return rounds_run, failures


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's worker processes now (Ctrl-C): cancel what has not started, then
    terminate the workers instead of waiting for their runs to finish."""
    processes = list(getattr(pool, "_processes", {}).values())  # the executor keeps no public handle
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=10)


def _run_on_ray(fn: Callable[..., Any], config: Any, out_dir: Path, todo: list[tuple[str, int]], device: str, jobs: int,
                address: str | None, report: Callable[[str, int], None]) -> tuple[int, list[RunFailure]]:  # fmt: skip
    """The runs as Ray tasks, `jobs` at a time, each reported when it ends; (rounds run, failures)."""
    from activebayes.distributed import gpu_share, run_tasks

    rounds_run, failures = 0, []
    calls = [(a, r, device) for a, r in todo]
    tasks = run_tasks(_ray_work, calls, common=(worker_threads(jobs), fn, config, str(out_dir)), address=address,
                      gpus_per_task=gpu_share(address, device, jobs), limit=jobs)  # fmt: skip
    for _, (name, n, failure) in tasks:
        rounds_run += n
        report(name, n)
        if failure is not None:
            failures.append(failure)
    return rounds_run, failures


def run_study_jobs(
    config: Any,
    out_dir: str | Path,
    *,
    jobs: int,
    device: str = "auto",
    progress: Callable[[int, int, str], None] | None = None,
    run_one: Callable[..., Any] | None = None,
    engine: str = "local",
    address: str | None = None,
) -> Any:
    """Run (or resume) the study with its runs spread over `jobs` spawned worker processes
    (engine="local") or `jobs` Ray tasks at a time (engine="ray"); the same StudyResult (and
    results.json) as `run_study`. Raises StudyRunsFailed after the other runs finished when some
    run failed. `run_one` (a module-level function, picklable by name) replaces the per-run
    function, for tests.

    engine="ray": each (acquisition, repeat) run is one Ray task (`distributed.run_tasks`);
    progress then advances when a run finishes. The study's store is SQLite in out_dir, so the
    address must be a local Ray (None or "local"): `check_engine_store` refuses a cluster."""
    from activebayes.distributed import check_engine_store
    from activebayes.study import collect_results

    if jobs < 1:
        raise ConfigError(f"jobs: expected a positive integer, got {jobs}")
    out_dir = Path(out_dir)
    check_engine_store(engine, address, f"sqlite:///{out_dir / 'study.db'}")
    if config.batched and run_one is None:  # [run] batched: one process for all runs, or a note and the runs as below
        from activebayes.batched_runs import run_study_batched

        return run_study_batched(config, out_dir, device=device, progress=progress, jobs=jobs, engine=engine,
                                 one_by_one=lambda c: run_study_jobs(c, out_dir, jobs=jobs, device=device, progress=progress,
                                                                     engine=engine, address=address))  # fmt: skip
    started = time.perf_counter()
    todo, done_per_run, total = plan_runs(config, out_dir, device)
    fn = run_one or default_run_one()
    done = sum(done_per_run.values())
    rounds_run = 0
    failures: list[RunFailure] = []
    if progress is not None:
        progress(min(done, total), total, f"{len(todo)} run(s) to go, {min(jobs, max(1, len(todo)))} at a time")

    def report(name: str, n: int) -> None:
        """n more rounds of run `name` done (capped at the run's rounds), passed on to progress."""
        nonlocal done
        if done_per_run.get(name, 0) < config.rounds_per_run:
            added = min(n, config.rounds_per_run - done_per_run.get(name, 0))
            done_per_run[name] = done_per_run.get(name, 0) + added
            done += added
        if progress is not None:
            progress(min(done, total), total, name)

    if todo and engine == "ray":
        rounds_run, failures = _run_on_ray(fn, config, out_dir, todo, device, jobs, address, report)
    elif todo:
        rounds_run, failures = _run_in_processes(fn, config, out_dir, todo, device, jobs, report)
    if failures:
        failures.sort(key=lambda f: f.run)
        log = None
        bugs = [f for f in failures if not f.user_mistake]
        if bugs:
            log = out_dir / ERROR_LOG
            with log.open("a", encoding="utf-8") as fh:
                for f in bugs:
                    fh.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')} run {f.run}\n{f.traceback}\n")
        raise StudyRunsFailed(failures, log, len(done_per_run))
    return collect_results(config, out_dir, rounds_run=rounds_run, started=started)  # writes results.json and the plot


# ---- the Gal et al. (2017) Table 1 comparison ------------------------------------------------
def _reached(document: dict[str, Any], acquisition: str, accuracy: float) -> tuple[int | None, list[int | None]]:
    """Labels to reach `accuracy` on the mean curve and per repeat, from results.json's
    `labels_to_reach` (None: not reached)."""
    entry = document.get("labels_to_reach", {}).get(acquisition, {}).get(f"{accuracy:.2f}", {})
    if not isinstance(entry, dict):
        return None, []
    return entry.get("mean"), list(entry.get("per_seed") or [])


def _show(reached: tuple[int | None, list[int | None]]) -> str:
    """"300 (290, 320, 320)": the mean curve's figure, then each repeat's ("—": not reached)."""
    mean, per_seed = reached
    text = "not reached" if mean is None else str(mean)
    if len(per_seed) > 1:
        text += " (" + ", ".join("—" if v is None else str(v) for v in per_seed) + ")"
    return text


def _ratio(ours: int | None, paper: int | None) -> float | None:
    return None if ours is None or not paper else ours / paper


def reach_table(document: dict[str, Any], paper: dict[str, tuple[int, int]] | None = None) -> str:
    """A Markdown table: labels to reach 90% / 95% test accuracy (10% / 5% error) per
    acquisition, on the mean curve with each repeat's in brackets, next to the paper's numbers
    when there are any: `paper`, else the ones the results quote (`[report] paper`,
    results.json's "paper"); without either, ours alone.

    With the paper's numbers each column also gets ours / paper, and a last line gives the
    ratios furthest from 1 either way (a figure not reached counts as out of range)."""
    if paper is None and "paper" in document:
        paper = {name: (v["0.90"], v["0.95"]) for name, v in document["paper"]["labels_to_reach"].items()}
    names = list(document["curves"])
    if paper is None:
        lines = ["| acquisition | 10% error | 5% error |", "|---|---:|---:|"]
        for name in names:
            lines.append(f"| {name} | {_show(_reached(document, name, 0.90))} | {_show(_reached(document, name, 0.95))} |")
        return "\n".join(lines) + "\n"
    lines = [
        "| acquisition | 10% error: ours | paper | ours / paper | 5% error: ours | paper | ours / paper |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    ratios: list[float] = []
    missing = []
    for name in names:
        cells = [name]
        for column, accuracy in enumerate((0.90, 0.95)):
            ours, ref = _reached(document, name, accuracy), paper.get(name, (None, None))[column]
            ratio = _ratio(ours[0], ref)
            cells += [_show(ours), str(ref or ""), "" if ratio is None else f"{ratio:.2f}x"]
            if ratio is not None:
                ratios.append(ratio)
            elif ref:
                missing.append(f"{name} at {accuracy:.0%}")
        lines.append("| " + " | ".join(cells) + " |")
    if ratios:
        lines.append("")
        lines.append(f"ours / paper from {min(ratios):.2f}x to {max(ratios):.2f}x"
                     + (f"; not reached: {', '.join(missing)}" if missing else "") + ".")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m activebayes.study_jobs table RESULTS.json [OUT.md]`: print (and write) the table."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3) or args[0] != "table":
        print("usage: python -m activebayes.study_jobs table RESULTS.json [OUT.md]", file=sys.stderr)
        return 2
    text = reach_table(json.loads(Path(args[1]).read_text(encoding="utf-8")))
    print(text, end="")
    if len(args) == 3:
        from activebayes.atomic_files import write_text_atomic

        write_text_atomic(args[2], text)
    return 0


__all__ = ["RunFailure", "StudyRunsFailed", "plan_runs", "reach_table", "run_study_jobs", "worker_threads"]


if __name__ == "__main__":
    raise SystemExit(main())
