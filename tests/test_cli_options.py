"""`activebayes round --option KEY=VALUE`: a posterior's own constructor options from the command
line. Values parse as TOML literals (a bare word is a string); every mistake is one line, exit
2, and leaves the database unchanged; the options reach the posterior's constructor, are
recorded in the round's posterior_settings under "options", and an interrupted round resumes
with them (other --option values are refused like other changed options)."""

from __future__ import annotations

import json
import shlex

import pytest

from cli_checks import assert_mistake, db_dump, ok, run
from test_cli_round import TINY, add_project, interrupt_at


@pytest.fixture
def pooled(cli_db):
    """Project 'blobs': 45 pool items (truth held back) and 15 labelled test items."""
    add_project("blobs")
    return cli_db


def fits_seen(monkeypatch, cls: type, option: str) -> list[tuple[object, int]]:
    """(the value of `option`, items) of every fit of posterior class `cls` from now on."""
    seen: list[tuple[object, int]] = []
    fit = cls.fit

    def spy(self, x, y):
        seen.append((getattr(self, option), int(x.shape[0])))
        return fit(self, x, y)

    monkeypatch.setattr(cls, "fit", spy)
    return seen


def rounds(url: str) -> list[object]:
    from activebayes.store import PoolStore

    with PoolStore(url) as store:
        return store.rounds("blobs")


# ---- parsing ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, key, value",
    [
        ("warm_start=true", "warm_start", True),
        ("warm_start=false", "warm_start", False),
        ("rank=3", "rank", 3),
        ("prior_precision=1.5", "prior_precision", 1.5),
        ("prior_precision=1e2", "prior_precision", 100.0),
        ("predictive=analytic", "predictive", "analytic"),  # a bare word: the string itself
        ('predictive="analytic"', "predictive", "analytic"),
        ('name="a b"', "name", "a b"),
        ('digits="12"', "digits", "12"),  # quoted: a string, not a number
        (" masks = independent ", "masks", "independent"),
        ("hidden=[8, 4]", "hidden", [8, 4]),
        ("path=./nets/a.py", "path", "./nets/a.py"),
    ],
)  # fmt: skip
def test_option_values_parse_as_toml_literals(text, key, value):
    from activebayes_cli._model import option_words, parse_posterior_options

    parsed = parse_posterior_options([text])
    assert parsed == {key: value} and type(parsed[key]) is type(value)
    # what a hint or a resume note prints reads back as the same value
    flag, words = shlex.split(option_words(parsed))
    assert flag == "--option" and parse_posterior_options([words]) == parsed


def test_the_help_names_examples():
    text = ok("round", "--help").stdout
    assert "--option" in text and "masks=independent" in text and "predictive=analytic" in text


# ---- mistakes: one line, exit 2, nothing recorded ---------------------------------------------------
@pytest.mark.parametrize(
    "args, words",
    [
        (["--option", "masks"], ["--option 'masks'", "expected KEY=VALUE", "masks=independent"]),
        (["--option", "=independent"], ["expected KEY=VALUE"]),
        (["--option", "masks="], ["expected KEY=VALUE"]),
        (["--option", "masks=shared", "--option", "masks=independent"],
         ["--option masks: given twice", "masks=shared", "masks=independent", "give each option once"]),
        (["--option", "when=1979-05-27"], ["--option when", "not a value a round can record"]),
        (["--option", "scale=inf"], ["--option scale", "not a value a round can record"]),
        (["--posterior", "mfvi", "--option", "masks=independent"],
         ["--option masks: not an option of 'mfvi'", "its options:", "predictive", "prior_std"]),
        (["--posterior", "laplace", "--option", "prior_precison=100"],
         ["--option prior_precison: not an option of 'laplace'", "(did you mean prior_precision?)"]),
        (["--option", "n_samples=5"], ["--option n_samples", "--samples"]),
        (["--option", "epochs=5"], ["--option epochs", "--epochs"]),
        (["--posterior", "snapshot-ensemble", "--option", "epochs_per_cycle=5"], ["--option epochs_per_cycle", "--epochs"]),
        (["--option", "device=cpu"], ["--option device", "--device"]),
        (["--option", "seed=3"], ["--option seed", "--seed"]),
        (["--posterior", "deep-ensemble", "--option", "engine=ray"], ["--option engine", "--engine"]),
        (["--posterior", "deep-ensemble", "--option", "address=auto"], ["--option address", "--address"]),
        (["--option", "masks=indep"], ["--option masks: expected one of", "'indep'"]),
        (["--posterior", "laplace", "--option", "prior_precision=100", "--option", "hessian=1"],
         ["--option hessian: expected one of", "'diag'"]),
    ],
)  # fmt: skip
def test_bad_options_leave_the_database_unchanged(pooled, args, words):
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--oracle", "truth", *args), *words)
    assert db_dump(pooled) == before
    assert rounds(pooled) == []


def test_a_trial_fit_that_fails_with_the_options_names_them(pooled, monkeypatch):
    from activebayes.posteriors.mc_dropout import MCDropout

    fit = MCDropout.fit

    def refusing(self, x, y):
        if self.masks == "independent":
            raise RuntimeError("independent masks refused here")
        return fit(self, x, y)

    monkeypatch.setattr(MCDropout, "fit", refusing)
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--option", "masks=independent"), "--posterior mc-dropout --option masks=independent", "trial fit",
                   "independent masks refused here", "other --option values")  # fmt: skip
    assert db_dump(pooled) == before


# ---- the options reach the posterior and are recorded ----------------------------------------------
def test_masks_option_builds_the_posterior_and_is_recorded(pooled, monkeypatch):
    from activebayes.posteriors.mc_dropout import MCDropout

    args = ("--json", "round", *TINY, "--k", "4", "--oracle", "truth", "--posterior", "mc-dropout", "--option", "masks=independent")
    first = json.loads(ok(*args).stdout)  # the cold start: random, yet the options are recorded
    assert first["posterior_settings"] == {"model": "mlp", "n_samples": 2, "epochs": 2, "options": {"masks": "independent"}}
    seen = fits_seen(monkeypatch, MCDropout, "masks")
    data = json.loads(ok(*args).stdout)
    assert data["round"] == 2 and data["status"] == "done" and data["labelled"] == 4
    assert data["posterior_settings"]["options"] == {"masks": "independent"}
    assert ("independent", 4) in seen  # the round's own fit, on its 4 labels
    assert [r.posterior_settings.get("options") for r in rounds(pooled)] == [{"masks": "independent"}] * 2

    # a round without --option records what it always did: no "options" key, the default masks
    seen.clear()
    data = json.loads(ok("--json", "round", *TINY, "--k", "4", "--oracle", "truth").stdout)
    assert set(data["posterior_settings"]) == {"model", "n_samples", "epochs", "training"}
    assert ("shared", 8) in seen


def test_mfvi_with_the_analytic_predictive_runs_rounds_to_the_end(pooled, monkeypatch):
    from activebayes.posteriors.mfvi import MFVI

    seen = fits_seen(monkeypatch, MFVI, "predictive")
    args = ("--json", "round", *TINY, "--k", "3", "--oracle", "truth", "--posterior", "mfvi", "--option", "predictive=analytic")
    ok(*args)
    data = json.loads(ok(*args).stdout)
    assert data["status"] == "done" and data["posterior"] == "mfvi" and data["labelled"] == 3
    assert data["posterior_settings"]["options"] == {"predictive": "analytic"}
    assert ("analytic", 3) in seen
    assert all(value == "analytic" for value, _ in seen)  # the trial fits too
    status = json.loads(ok("--json", "status").stdout)
    assert [r["status"] for r in status["rounds"]] == ["done", "done"]


# ---- resuming an interrupted round -----------------------------------------------------------------
def test_an_interrupted_round_resumes_with_its_recorded_options(pooled, monkeypatch):
    from activebayes.posteriors.mfvi import MFVI

    ok("round", *TINY, "--k", "4", "--oracle", "truth")
    with monkeypatch.context() as m:
        interrupt_at(m, "score")  # killed after fitting, before scoring
        result = run("round", *TINY, "--k", "3", "--oracle", "truth", "--posterior", "mfvi", "--option", "predictive=analytic")
    assert result.exit_code in (1, 130) and "Traceback" not in result.output
    assert [r.status.value for r in rounds(pooled)] == ["done", "fitted"]

    # other --option values are refused like a changed --samples, naming both; nothing changes
    before = db_dump(pooled)
    for args, words in (
        (["--option", "predictive=sampled"], ["round 2", "'fitted'", "--option predictive=sampled (recorded: --option predictive=analytic)",
                                               "--restart-round"]),
        (["--option", "predictive=analytic", "--option", "prior_std=0.5"], ["--option prior_std=0.5 (recorded: --option predictive=analytic)"]),
        (["--option", "init_std=0.01"], ["--option init_std=0.01 (recorded:"]),
    ):  # fmt: skip
        assert_mistake(run("round", *TINY, "--oracle", "truth", *args), *words)
    assert db_dump(pooled) == before

    # a plain `round` resumes with the recorded options (so does the same --option again)
    seen = fits_seen(monkeypatch, MFVI, "predictive")
    result = ok("--json", "round", *TINY, "--oracle", "truth")
    assert "resuming round 2" in result.stderr and "--option predictive=analytic" in result.stderr
    data = json.loads(result.stdout)
    assert data["round"] == 2 and data["resumed"] and data["status"] == "done" and data["posterior"] == "mfvi"
    assert data["posterior_settings"]["options"] == {"predictive": "analytic"}
    assert ("analytic", 4) in seen  # refitted on the 4 labels with the recorded option


def test_a_round_recorded_without_options_refuses_new_ones_on_resume(pooled, monkeypatch):
    with monkeypatch.context() as m:
        interrupt_at(m, "score")
        assert run("round", *TINY, "--k", "3").exit_code in (1, 130)
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--option", "masks=independent"), "--option masks=independent (recorded: no --option)", "--restart-round")
    assert db_dump(pooled) == before
    data = json.loads(ok("--json", "round", *TINY, "--option", "masks=independent", "--restart-round").stdout)
    assert data["round"] == 2 and data["posterior_settings"]["options"] == {"masks": "independent"}


# ---- the Gaussian process of a regression project --------------------------------------------------
def test_gp_options_of_a_regression_project(cli_db, monkeypatch):
    from pathlib import Path

    from activebayes.posteriors.gp import GaussianProcess
    from test_cli_regression import write_regression_csv

    write_regression_csv(Path("pool.csv"))
    ok("init", "--name", "reg", "--task", "regression")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "y", "--test-fraction", "0.25")
    before = db_dump(cli_db)
    assert_mistake(run("round", "--oracle", "truth", "--option", "n_samples=4"), "--option n_samples", "--samples")
    assert_mistake(run("round", "--oracle", "truth", "--option", "kernel=cubic"), "--option kernel: expected one of", "'cubic'")
    assert db_dump(cli_db) == before
    seen = fits_seen(monkeypatch, GaussianProcess, "kernel")
    args = ("--json", "round", "--oracle", "truth", "--k", "4", "--device", "cpu", "--option", "kernel=matern52", "--option", "training_iters=5")
    ok(*args)
    data = json.loads(ok(*args).stdout)
    assert data["status"] == "done" and data["posterior"] == "gp" and data["labelled"] == 4
    assert data["posterior_settings"]["options"] == {"kernel": "matern52", "training_iters": 5}
    assert ("matern52", 4) in seen and all(kernel == "matern52" for kernel, _ in seen)


def test_recorded_options_the_cli_cannot_use_are_refused_on_resume(pooled):
    from activebayes.store import PoolStore

    with PoolStore(pooled) as store:  # recorded by another tool: a key mc-dropout does not take
        store.start_round("blobs", posterior="mc-dropout", acquisition="bald", seed=1,
                          posterior_settings={"model": "mlp", "n_samples": 2, "epochs": 2, "options": {"bogus": 1}})  # fmt: skip
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY), "--option bogus: not an option of 'mc-dropout'", "an option round 1 was started with", "--restart-round")
    assert db_dump(pooled) == before
    data = json.loads(ok("--json", "round", *TINY, "--k", "2", "--oracle", "truth", "--restart-round").stdout)
    assert data["round"] == 2 and data["status"] == "done" and "options" not in data["posterior_settings"]
    with PoolStore(pooled) as store:  # "options" that are not a table of options
        store.start_round("blobs", posterior="mc-dropout", acquisition="bald", seed=1,
                          posterior_settings={"model": "mlp", "n_samples": 2, "epochs": 2, "options": "masks"})  # fmt: skip
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY), "round 3", "settings ['options']", "cannot rebuild", "--restart-round")
    assert db_dump(pooled) == before
