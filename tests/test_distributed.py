"""engine="ray" (activebayes.distributed) equals engine="local": pool scoring (BALD, BatchBALD's
pre-filter and its batch), a scoring actor killed mid-pool (the pool an .npy file the workers read), deep-ensemble members as tasks and
study runs as tasks; on a local Ray cluster of 2 CPUs started once for the module."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from activebayes import ConfigError, check_engine_store
from activebayes.acquisition import bald, bald_prefilter
from activebayes.nets import mlp
from activebayes.posteriors import DeepEnsemble, MCDropout
from activebayes.scoring import score_pool
from activebayes.training import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
POOL_SIZE, FEATURES, CLASSES = 50_000, 8, 3


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray of 2 CPUs for the module (skipped where Ray is missing or cannot start)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'activebayes[ray]')")
    try:
        ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - no Ray here: skip, saying why
        pytest.skip(f"a local Ray cannot start: {exc}")
    yield ray
    ray.shutdown()


def _labelled(n: int = 256, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    return x, (x[:, :CLASSES].argmax(1))


@pytest.fixture(scope="module")
def pool() -> torch.Tensor:
    """[50,000, 8] tabular features."""
    return torch.randn(POOL_SIZE, FEATURES, generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="module")
def dropout() -> MCDropout:
    """MC dropout (shared masks, S=16) on a small MLP."""
    x, y = _labelled()
    net = mlp(FEATURES, CLASSES, hidden=(32,), dropout=0.3)
    return MCDropout(net, n_samples=16, train=TrainConfig(epochs=3), seed=0, device="cpu").fit(x, y)


@pytest.fixture(scope="module")
def ensemble() -> DeepEnsemble:
    x, y = _labelled()
    return DeepEnsemble(mlp(FEATURES, CLASSES, hidden=(32,)), n_samples=4, train=TrainConfig(epochs=3), seed=0, device="cpu").fit(x, y)


def test_bald_on_ray_equals_local_every_score(ray_cluster, dropout, pool):
    local = score_pool(dropout, pool, bald, batch_size=2048, device="cpu")
    done = []
    remote = score_pool(dropout, pool, bald, batch_size=2048, device="cpu", engine="ray", workers=2,
                        progress=lambda d, t: done.append((d, t)))  # fmt: skip
    assert torch.equal(remote.indices, local.indices)
    torch.testing.assert_close(remote.scores, local.scores, rtol=0, atol=1e-5)
    assert done[-1] == (POOL_SIZE, POOL_SIZE)


def test_batch_bald_prefilter_as_a_ray_top_k_equals_local_within_rounding(ray_cluster, ensemble, pool):
    """BatchBALD's sharded part is its BALD pre-filter (the workers' top-k, merged); the greedy
    batch then runs locally on the kept candidates."""
    local = score_pool(ensemble, pool, bald, batch_size=2048, device="cpu").scores
    keep = bald_prefilter(local, 300)
    remote = score_pool(ensemble, pool, bald, batch_size=2048, device="cpu", top_k=300, engine="ray")
    # The workers round the last bits differently (their own torch thread counts), so near-ties
    # may swap: the remote top-k must be a top-k of the local scores within that rounding.
    tolerance = 1e-5
    torch.testing.assert_close(remote.scores, local[remote.indices], rtol=0, atol=tolerance)
    assert len(set(remote.indices.tolist())) == 300 and bool(torch.all(remote.scores[:-1] >= remote.scores[1:]))
    assert float(local[remote.indices].min()) >= float(local[keep].min()) - tolerance
    swapped = set(remote.indices.tolist()) ^ set(keep.tolist())
    assert all(abs(float(local[i]) - float(local[keep].min())) <= tolerance for i in swapped)  # only boundary near-ties


@pytest.mark.slow
def test_a_worker_killed_mid_scoring_is_retried_and_the_result_is_unchanged(ray_cluster, dropout, pool, tmp_path):
    """The pool is an .npy file that each worker opens; one worker dies on its first batch."""
    path = tmp_path / "pool.npy"
    np.save(path, pool.numpy())
    flag = tmp_path / "die-once"
    flag.touch()

    def dies_once(pred):  # BALD, but the first call while `flag` exists kills its worker process
        if flag.exists():
            flag.unlink()
            os._exit(1)
        return bald(pred)

    local = score_pool(dropout, pool, bald, batch_size=4096, device="cpu", top_k=100)
    remote = score_pool(dropout, path, dies_once, batch_size=4096, device="cpu", top_k=100, engine="ray")
    assert not flag.exists()  # an actor did die
    assert torch.equal(remote.indices, local.indices)
    torch.testing.assert_close(remote.scores, local.scores, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_a_worker_that_always_dies_fails_in_one_error_after_bounded_restarts(ray_cluster, dropout, pool):
    """Ray Data would restart a dying actor forever; ours gives up after MAX_RETRIES restarts."""
    from activebayes import WorkerError
    from activebayes.distributed import MAX_RETRIES

    def always_dies(pred):
        os._exit(1)

    with pytest.raises(WorkerError, match=f"still failed after {MAX_RETRIES} restarts"):
        score_pool(dropout, pool[:20_000], always_dies, batch_size=4096, device="cpu", engine="ray")
    # the cluster is still usable afterwards
    again = score_pool(dropout, pool[:1000], bald, batch_size=4096, device="cpu", engine="ray")
    torch.testing.assert_close(again.scores, score_pool(dropout, pool[:1000], bald, device="cpu").scores, rtol=0, atol=1e-5)


def test_deep_ensemble_members_as_ray_tasks_equal_the_sequential_fit(ray_cluster):
    x, y = _labelled(seed=3)
    args = dict(n_samples=3, train=TrainConfig(epochs=4), seed=11, device="cpu")
    local = DeepEnsemble(mlp(FEATURES, CLASSES, hidden=(16,)), **args).fit(x, y)
    remote = DeepEnsemble(mlp(FEATURES, CLASSES, hidden=(16,)), engine="ray", **args).fit(x, y)
    for a, b in zip(local.stack_.members, remote.stack_.members, strict=True):
        for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
            assert torch.equal(p, q), name
    assert remote.clone().get_params()["engine"] == "ray"


@pytest.mark.slow
def test_study_runs_as_ray_tasks_equal_the_local_run(ray_cluster, tmp_path):
    from activebayes.study import StudyConfig, run_study
    from activebayes.study_jobs import run_study_jobs

    toml = ROOT / "studies" / "gal2017" / "digits.toml"
    run_study(StudyConfig.from_toml(toml), tmp_path / "local")
    result = run_study_jobs(StudyConfig.from_toml(toml), tmp_path / "ray", jobs=2, engine="ray")
    local = json.loads((tmp_path / "local" / "results.json").read_text())
    remote = json.loads((tmp_path / "ray" / "results.json").read_text())
    assert remote["curves"] == local["curves"] and remote["runs"] == local["runs"]
    assert result.rounds_run == 12


@pytest.mark.slow
def test_a_worker_error_reaches_the_caller_as_itself(ray_cluster, dropout, pool):
    with pytest.raises(ConfigError, match="^n_samples"):
        score_pool(dropout, pool[:5000], bald, batch_size=4096, device="cpu", n_samples=0, engine="ray")


def test_sqlite_with_a_cluster_address_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="postgresql://") as info:
        check_engine_store("ray", "auto", "sqlite:///project.db")
    assert "\n" not in str(info.value)
    check_engine_store("ray", None, "sqlite:///project.db")
    check_engine_store("ray", "ray://head:10001", "postgresql://u@h/db")
    check_engine_store("local", None, "sqlite:///project.db")
    with pytest.raises(ConfigError, match="^engine"):
        check_engine_store("spark", None, "sqlite:///project.db")


def test_engine_ray_without_ray_says_how_to_install(monkeypatch, dropout, pool):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'activebayes\[ray\]'") as info:
        score_pool(dropout, pool[:10], bald, device="cpu", engine="ray")
    assert "\n" not in str(info.value)


def test_cli_round_on_ray_asks_what_the_local_round_asks(ray_cluster, cli_db, tmp_path):
    """`round --engine ray` (the running local Ray) chooses the same queries, with the same
    scores, as `round` on this machine, for two copies of one project."""
    from cli_checks import ok
    from test_cli import write_pool_csv

    write_pool_csv(tmp_path / "pool.csv")
    for name in ("here", "on-ray"):
        ok("init", "--name", name, "--classes", "a,b,c")
        ok("--project", name, "pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.25")
    args = ("round", "--k", "5", "--epochs", "3", "--samples", "8", "--device", "cpu", "--json")
    here = json.loads(ok("--project", "here", *args).stdout)
    there = json.loads(ok("--project", "on-ray", *args, "--engine", "ray").stdout)
    assert [q["key"] for q in there["queries"]] == [q["key"] for q in here["queries"]]
    assert [q["score"] for q in there["queries"]] == pytest.approx([q["score"] for q in here["queries"]], abs=1e-5)


def test_cli_round_with_a_cluster_address_and_sqlite_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    from cli_checks import assert_mistake, run

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "ab.db"
    result = run("--db", f"sqlite:///{db}", "round", "--engine", "ray", "--address", "auto")
    assert_mistake(result, "SQLite", "cannot share", "postgresql://")
    assert not db.exists()
