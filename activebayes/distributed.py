"""Run activebayes work on Ray: pool scoring over an actor pool, and independent jobs as tasks.

    engine="local"  in this process (or the study's process pool), as without Ray;
    engine="ray"    on a Ray cluster: `address` None uses (or starts) a local Ray, "auto" or
                    "ray://host:port" connects to a running cluster.

What runs where:
- Pool scoring (`map_ranges`): the pool's N items are cut into the ranges [start, stop) of the
  local engine's batches; Ray Data hands groups of ranges to an actor pool (`map_batches` with
  `concurrency=workers`, one GPU per actor when the cluster has GPUs). Each actor gets the
  `work` object (the fitted posterior inside it) ONCE from the object store, runs `work.setup()`,
  then returns `work.run(pool, ranges) -> (indices [b], scores [b])` per group; the caller merges.
  The pool reaches the actors as a file path when it is one (each actor opens it), otherwise
  once through the object store. When a worker dies, Ray Data restarts its actor and retries the
  lost call, at most `MAX_RETRIES` times each (Ray Data's own defaults are unbounded, so a
  worker that dies on every call would restart forever); past that the scoring fails with a
  WorkerError.
- Independent jobs (`run_tasks`): `fn(*common, *call)` for each call as a Ray task, `common`
  put in the object store once; at most `limit` in flight; results as they complete.

This module imports Ray only when a function here runs, so activebayes works without it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from activebayes.errors import ActiveBayesError, ConfigError, WorkerError

ENGINES = ("local", "ray")
#: Addresses that mean "this machine": None uses (or starts) a local Ray, "local" always starts one.
LOCAL_ADDRESSES = (None, "local")
#: Retries of a task lost with its worker, and restarts of a scoring actor that died.
MAX_RETRIES = 3
_CALLS_PER_WORKER = 4  # groups of ranges per actor, so a slow or restarted actor delays little
_MAX_RANGES_PER_CALL = 16


def check_engine(engine: str, address: str | None = None) -> None:
    """Raise a one-line ConfigError unless `engine` is "local" or "ray" (an `address` only with "ray")."""
    if engine not in ENGINES:
        raise ConfigError(f"engine: expected 'local' or 'ray', got {engine!r}")
    if engine == "local" and address is not None:
        raise ConfigError(f"address: a Ray address ({address!r}) needs engine='ray'")


def check_engine_store(engine: str, address: str | None, db_url: str) -> None:
    """Refuse a store that the engine's machines cannot share: an SQLite URL with a Ray cluster
    address (anything but None / "local"). One-line ConfigError."""
    check_engine(engine, address)
    if engine == "ray" and address not in LOCAL_ADDRESSES and str(db_url).startswith("sqlite"):
        raise ConfigError(
            f"db: SQLite ({db_url}) is a file on one machine, so the Ray cluster at {address!r} cannot share it; "
            "use a postgresql:// URL (pip install 'activebayes[postgres]'), or a local Ray (no address)"
        )


def import_ray() -> Any:
    """The `ray` module, or a one-line ConfigError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError("engine='ray': Ray is not installed; pip install 'activebayes[ray]'") from None
    return ray


def connect(address: str | None = None) -> Any:
    """The `ray` module, connected: an already initialised Ray is used as it is; otherwise
    `ray.init(address)` (None: the running local Ray or a new one; "auto" / "ray://host:port": a cluster)."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    return ray


def cluster_gpus(ray: Any) -> float:
    """GPUs in the connected cluster."""
    return float(ray.cluster_resources().get("GPU", 0.0))


def _cluster_cpus(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _unwrap(exc: BaseException) -> BaseException:
    """The ActiveBayesError a Ray error wraps (a worker's one-line error, found along `cause` /
    `__cause__`); a WorkerError for a worker that kept dying past `MAX_RETRIES` restarts or
    retries (Ray's ActorDiedError, WorkerCrashedError, ...); else `exc` itself."""
    from ray import exceptions as ray_errors

    died = (ray_errors.RayActorError, ray_errors.WorkerCrashedError, ray_errors.NodeDiedError)
    current: BaseException | None = exc
    for _ in range(8):  # Ray nests a few levels at most
        if current is None:
            break
        if isinstance(current, ActiveBayesError) and not type(current).__module__.startswith("ray"):
            return current
        if isinstance(current, died):
            return WorkerError(
                f"engine ray: a worker died ({type(current).__name__}) and still failed after {MAX_RETRIES} "
                "restarts; see the Ray logs (out of memory, a crash in native code) and run again"
            )
        current = getattr(current, "cause", None) or current.__cause__
    return exc


# ---- pool scoring on an actor pool -----------------------------------------------------------
class PoolFile:
    """A pool that workers open themselves: `path` of an .npy file (read as a memmap)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    def open(self) -> np.ndarray:
        return np.load(self.path, mmap_mode="r")


class _RangeActor:
    """One actor of the pool: holds `work` (set up once) and the pool; scores groups of ranges."""

    def __init__(self, work_ref: list[Any], pool_ref: list[Any]) -> None:
        import ray

        self.work = ray.get(work_ref[0])
        self.work.setup()
        pool = ray.get(pool_ref[0])
        self.pool = pool.open() if isinstance(pool, PoolFile) else pool

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """batch {"start": [r], "stop": [r]} -> {"index": [b], "score": [b], "items": [b]}: what
        `work.run` returns for the ranges; "items" sums to the items scored (for progress)."""
        ranges = list(zip(batch["start"].tolist(), batch["stop"].tolist()))
        indices, scores = self.work.run(self.pool, ranges)
        items = np.zeros(len(indices), dtype=np.int64)
        items[:1] = sum(stop - start for start, stop in ranges)
        return {"index": np.asarray(indices, dtype=np.int64), "score": np.asarray(scores, dtype=np.float32), "items": items}


def ranges_per_call(n_ranges: int, workers: int) -> int:
    """Ranges per map_batches call: about `_CALLS_PER_WORKER` calls per worker, at most 16 ranges each."""
    return max(1, min(_MAX_RANGES_PER_CALL, math.ceil(n_ranges / (workers * _CALLS_PER_WORKER))))


def map_ranges(
    work: Any,
    pool: Any,
    ranges: Sequence[tuple[int, int]],
    *,
    address: str | None = None,
    workers: int | None = None,
    use_gpus: bool = True,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Run `work` over the pool's `ranges` on a Ray actor pool; yields (indices [b], scores [b])
    per group of ranges as groups finish (any order).

    Args:
        work: picklable, with `setup()` (once per actor: device, posterior) and
            `run(pool, ranges) -> (indices, scores)`.
        pool: a `PoolFile` (each actor opens the file) or anything picklable (put once).
        ranges: [start, stop) item ranges, the local engine's batches.
        workers: actors; None: one per GPU when the cluster has GPUs (and use_gpus), else one per CPU.
        use_gpus: give each actor one GPU when the cluster has GPUs.
        progress: called with the number of items of each finished group.
    """
    ray = connect(address)
    gpus = cluster_gpus(ray) if use_gpus else 0.0
    if workers is None:
        workers = int(gpus) if gpus >= 1 else _cluster_cpus(ray)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers: expected a positive integer or None, got {workers!r}")
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # the library never prints
    context.raise_original_map_exception = True  # a worker's ActiveBayesError, not "UDF failed"
    per_call = ranges_per_call(len(ranges), workers)
    items = [{"start": start, "stop": stop} for start, stop in ranges]
    dataset = ray.data.from_items(items, override_num_blocks=math.ceil(len(items) / per_call))
    scored = dataset.map_batches(
        _RangeActor,
        batch_size=per_call,
        batch_format="numpy",
        fn_constructor_args=([ray.put(work)], [ray.put(pool)]),
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=1,
        num_gpus=1 if gpus >= 1 else None,
        max_restarts=MAX_RETRIES,  # a dead actor is restarted, and its lost call retried, a bounded number of times
        max_task_retries=MAX_RETRIES,
    )
    try:
        for part in scored.iter_batches(batch_size=None, batch_format="numpy"):
            if progress is not None:
                progress(int(part["items"].sum()))
            yield part["index"], part["score"]
    except Exception as exc:  # a worker's ActiveBayesError surfaces as itself, in one line
        raise _unwrap(exc) from None


# ---- independent jobs as tasks ---------------------------------------------------------------
def run_tasks(
    fn: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    *,
    common: tuple[Any, ...] = (),
    address: str | None = None,
    gpus_per_task: float = 0.0,
    limit: int | None = None,
) -> Iterator[tuple[int, Any]]:
    """`fn(*common, *calls[i])` for every i as Ray tasks; yields (i, result) as tasks complete.

    `common` is put in the object store once and shared by every task; at most `limit` tasks
    (None: all) are in flight; a task lost with its worker is retried `MAX_RETRIES` times. An
    ActiveBayesError raised by `fn` is raised here as itself.
    """
    ray = connect(address)
    shared = [ray.put(value) for value in common]
    remote = ray.remote(fn).options(num_cpus=1, num_gpus=gpus_per_task, max_retries=MAX_RETRIES)
    waiting = list(enumerate(calls))[::-1]
    running: dict[Any, int] = {}
    limit = len(waiting) if limit is None else max(1, limit)
    while waiting or running:
        while waiting and len(running) < limit:
            i, args = waiting.pop()
            running[remote.remote(*shared, *args)] = i
        done, _ = ray.wait(list(running), num_returns=1)
        i = running.pop(done[0])
        try:
            result = ray.get(done[0])
        except Exception as exc:
            raise _unwrap(exc) from None
        yield i, result


def gpu_share(address: str | None, device: Any, tasks: int) -> float:
    """GPUs per task for `tasks` concurrent tasks on `device` ("cpu": none): the cluster's GPUs
    shared out, at most one each."""
    if str(device) == "cpu":
        return 0.0
    gpus = cluster_gpus(connect(address))
    return min(1.0, gpus / max(1, tasks)) if gpus else 0.0


__all__ = [
    "ENGINES",
    "LOCAL_ADDRESSES",
    "MAX_RETRIES",
    "PoolFile",
    "check_engine",
    "check_engine_store",
    "cluster_gpus",
    "connect",
    "gpu_share",
    "import_ray",
    "map_ranges",
    "ranges_per_call",
    "run_tasks",
]
