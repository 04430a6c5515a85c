"""Regression projects through the CLI: `init --task regression`, `pool add`, `round --oracle truth`
with the GP (the default) and its acquisitions, RMSE and Gaussian NLL in `status --json`. Every
refusal is one line, exit 2, and leaves the database unchanged, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from activebayes_cli.main import app
from cli_checks import assert_mistake, db_dump, ok, run


def write_regression_csv(path: Path, n: int = 48) -> None:
    """x ~ U[0, 1]², y = sin(6 x₀) + cos(4 x₁) (float labels), seeded."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, (n, 2))
    y = np.sin(6 * x[:, 0]) + np.cos(4 * x[:, 1])
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "a", "b", "y"])
        writer.writerows([f"p{i}", repr(float(x[i, 0])), repr(float(x[i, 1])), repr(float(y[i]))] for i in range(n))


@pytest.fixture
def regression(cli_db):
    """Project 'reg' (regression): 36 pool items (truth held back), 12 labelled test items."""
    db_url = cli_db
    write_regression_csv(Path("pool.csv"))
    ok("init", "--name", "reg", "--task", "regression")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "y", "--test-fraction", "0.25")
    return db_url


def test_regression_end_to_end_with_the_gp(regression):
    for acquisition in ("variance", "nipv", "bald"):
        out = json.loads(ok("--json", "round", "--oracle", "truth", "--k", "4", "--acquisition", acquisition).stdout)
        assert out["posterior"] == "gp" and out["acquisition"] == acquisition and out["status"] == "done"
        assert len(out["queries"]) == 4 and all(q["label"] is not None for q in out["queries"])
        scores = [q["score"] for q in out["queries"]]
        if acquisition == "nipv":  # variance reductions of a greedy batch: positive, diminishing
            assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    status = json.loads(ok("--json", "status").stdout)
    assert status["labelled"] == 12
    rounds = status["rounds"]
    assert [r["labelled_count"] for r in rounds] == [0, 4, 8]
    assert rounds[0]["metrics"] == {}
    for r in rounds[1:]:
        assert {"rmse", "nll", "n_test", "stop_set"} <= set(r["metrics"]) and r["metrics"]["n_test"] == 12
        assert 0 < r["metrics"]["rmse"] < 5 and np.isfinite(r["metrics"]["nll"])
    human = ok("round", "--k", "2", "--show-model-guess")  # --oracle human: the round file takes float answers
    assert "reg-round-4.csv" in human.stdout
    rows = list(csv.reader(Path("reg-round-4.csv").open()))
    assert rows[0] == ["key", "label", "score", "rank", "predicted", "predicted_sd", "a", "b"]
    for r in rows[1:]:  # the GP's predictive mean and sd (with the noise) for the item
        assert np.isfinite(float(r[4])) and float(r[5]) > 0
    with Path("reg-round-4.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([rows[0], *[[r[0], "0.25", *r[2:]] for r in rows[1:]]])
    ok("label", "--from", "reg-round-4.csv")
    assert json.loads(ok("--json", "status").stdout)["labelled"] == 14


@pytest.mark.parametrize(
    "args, words",
    [
        (["--acquisition", "batch-bald"], ["batch-bald", "regression", "nipv"]),
        (["--acquisition", "margin"], ["margin", "regression"]),
        (["--acquisition", "variation-ratio"], ["variation-ratio", "regression"]),
        (["--posterior", "mc-dropout", "--acquisition", "nipv"], ["nipv", "--posterior gp"]),
        (["--model", "mlp"], ["--model", "gp"]),
        (["--epochs", "3"], ["--epochs", "gp"]),
        (["--posterior", "gpx"], ["gpx", "did you mean gp?"]),
    ],
)
def test_regression_refusals_leave_the_database_unchanged(regression, args, words):
    ok("round", "--oracle", "truth", "--k", "4")  # a first round, so refusals come after labels
    before = db_dump(regression)
    assert_mistake(run("round", "--oracle", "truth", *args), *words)
    assert db_dump(regression) == before


def test_a_network_posterior_that_cannot_fit_float_targets_is_refused_naming_gp(regression, monkeypatch):
    from activebayes.posteriors.swag import SWAG

    def refuse(self, x, y):
        raise TypeError("expected class indices")

    monkeypatch.setattr(SWAG, "fit", refuse)
    before = db_dump(regression)
    assert_mistake(run("round", "--oracle", "truth", "--posterior", "swag", "--epochs", "1", "--samples", "2"), "swag", "--posterior gp")
    assert db_dump(regression) == before


def test_classification_project_refuses_nipv(cli_db):
    from test_cli import write_pool_csv

    db_url = cli_db
    write_pool_csv(Path("pool.csv"))
    ok("init", "--name", "c", "--classes", "a,b,c")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label")
    before = db_dump(db_url)
    assert_mistake(run("round", "--acquisition", "nipv", "--epochs", "1", "--samples", "2"), "nipv", "regression only")
    assert_mistake(run("round", "--posterior", "gp"), "regression", "mc-dropout")
    assert db_dump(db_url) == before


def test_an_interrupted_gp_round_resumes_with_its_recorded_options(regression, monkeypatch):
    from test_cli_round import interrupt_at

    ok("round", "--oracle", "truth", "--k", "4")
    with monkeypatch.context() as m:
        interrupt_at(m, "score")  # killed after fitting, before scoring
        result = CliRunner().invoke(app, ["round", "--oracle", "truth", "--k", "3", "--acquisition", "nipv"])
        assert result.exit_code != 0
    before = db_dump(regression)
    assert_mistake(run("round", "--oracle", "truth", "--acquisition", "variance"), "--acquisition variance", "nipv")
    assert db_dump(regression) == before
    out = json.loads(ok("--json", "round", "--oracle", "truth").stdout)
    assert out["resumed"] and out["acquisition"] == "nipv" and out["k"] == 3 and out["posterior"] == "gp"
    assert out["posterior_settings"] == {"model": "none"} and out["status"] == "done"


def test_a_network_posterior_runs_a_regression_round(regression):
    ok("round", "--oracle", "truth", "--k", "4")
    args = ("--posterior", "mc-dropout", "--epochs", "2", "--samples", "2", "--device", "cpu")
    out = json.loads(ok("--json", "round", "--oracle", "truth", "--k", "3", "--acquisition", "bald", *args).stdout)
    assert out["posterior"] == "mc-dropout" and out["status"] == "done" and {"rmse", "nll", "n_test"} <= set(out["metrics"])


@pytest.mark.parametrize("values", [[3.0] * 20, [3.0] * 19 + [3.0 + 1e-12]], ids=["equal", "rounding"])
def test_a_constant_target_is_refused_at_pool_add(cli_db, values):
    """Nothing can be learnt of a target that does not vary: one line naming the column and its
    value, exit 2, the database as it was and no feature cache written."""
    with Path("flat.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([["id", "a", "y"], *([f"p{i}", str(i), repr(v)] for i, v in enumerate(values))])
    ok("init", "--name", "flat", "--task", "regression")
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", "flat.csv", "--label-column", "y", "--test-fraction", "0.25"), "y: all 20 labels are 3", "does not vary")
    assert db_dump(cli_db) == before
    assert not any(Path(".").rglob("*.npy"))
    values = [3.001, *values[1:]]  # one label that differs: accepted
    with Path("flat.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([["id", "a", "y"], *([f"p{i}", str(i), repr(v)] for i, v in enumerate(values))])
    ok("pool", "add", "flat.csv", "--label-column", "y", "--test-fraction", "0.25")
