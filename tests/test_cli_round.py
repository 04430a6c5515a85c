"""`activebayes round`: the checks before a round is created, resuming an interrupted round with
its recorded options (or --restart-round), and --model files (its round files:
`test_cli_round_files.py`). Every
mistake is one line, exit 2, and leaves the database unchanged, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_checks import assert_mistake, db_dump, ok, run
from test_cli import write_pool_csv


TINY = ("--epochs", "2", "--samples", "2", "--device", "cpu")
WITH_DROPOUT = (
    "from torch import nn\n"
    "def make():\n"
    "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))\n"
)
NO_DROPOUT = (
    "from torch import nn\n"
    "def small():\n"
    "    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))\n"
)


@pytest.fixture
def db(cli_db):
    return cli_db


def add_project(name: str, *, test_fraction: str = "0.25") -> None:
    if not Path("pool.csv").exists():
        write_pool_csv(Path("pool.csv"))
    ok("init", "--name", name, "--classes", "a,b,c")
    ok("--project", name, "pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", test_fraction)


@pytest.fixture
def pooled(db):
    """Project 'blobs': 45 pool items (truth held back) and 15 labelled test items."""
    add_project("blobs")
    return db


def interrupt_at(monkeypatch, stage: str) -> None:
    """The next round is killed (KeyboardInterrupt) when it reaches `stage`."""
    from activebayes.loop import ActiveLearningLoop

    original = ActiveLearningLoop._stage

    def stage_hook(self, name):
        if name == stage:
            raise KeyboardInterrupt
        original(self, name)

    monkeypatch.setattr(ActiveLearningLoop, "_stage", stage_hook)


# ---- checks before a round is created ------------------------------------------------------------
def test_mc_dropout_without_dropout_leaves_database_unchanged(pooled):
    Path("mymodels.py").write_text(NO_DROPOUT)
    ok("round", *TINY, "--k", "3", "--oracle", "truth")
    before = db_dump(pooled)
    result = run("round", *TINY, "--oracle", "truth", "--model", "./mymodels.py:small")
    assert_mistake(result, "--posterior mc-dropout", "no dropout", "--posterior deep-ensemble", "add dropout")
    assert db_dump(pooled) == before
    # the cold start needs no posterior, yet a new project is refused as early
    add_project("fresh")
    before = db_dump(pooled)
    assert_mistake(run("--project", "fresh", "round", *TINY, "--model", "./mymodels.py:small"), "no dropout")
    assert db_dump(pooled) == before
    data = json.loads(ok("--json", "--project", "blobs", "round", *TINY, "--k", "3", "--oracle", "truth", "--posterior", "deep-ensemble",
                         "--model", "./mymodels.py:small").stdout)  # fmt: skip
    assert data["round"] == 2 and data["status"] == "done" and data["posterior"] == "deep-ensemble"


@pytest.mark.parametrize(
    "source, words",
    [
        ("from torch import nn\ndef make():\n    return nn.Sequential(nn.Linear(5, 8), nn.Dropout(0.5), nn.Linear(8, 3))\n",
         ["--model", "forward pass", "mat1"]),
        ("from torch import nn\ndef make():\n    return nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))\n",
         ["logits [N, 3]", "(2, 2)"]),
        # fine on two items, but not as the last layer Laplace needs
        ("from torch import nn\ndef make():\n    return nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.5), nn.Tanh())\n",
         ["--posterior laplace", "trial fit", "nn.Linear"]),
    ],
)  # fmt: skip
def test_model_and_posterior_mistakes_leave_database_unchanged(pooled, source, words):
    Path("nets.py").write_text(source)
    ok("round", *TINY, "--k", "3", "--oracle", "truth")
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--oracle", "truth", "--posterior", "laplace", "--model", "nets.py:make"), *words)
    assert db_dump(pooled) == before


def test_a_failure_while_fitting_is_recorded_as_a_failed_round(pooled, monkeypatch):
    from activebayes.errors import ConfigError
    from activebayes.posteriors.mc_dropout import MCDropout

    ok("round", *TINY, "--k", "4", "--oracle", "truth")
    fit = MCDropout.fit

    def diverging(self, x, y):
        if x.shape[0] > 2:  # the two-item check passes; the round's own fit fails
            raise ConfigError("the fit diverged")
        return fit(self, x, y)

    monkeypatch.setattr(MCDropout, "fit", diverging)
    result = run("round", *TINY, "--k", "4", "--oracle", "truth")
    assert_mistake(result, "round 2 failed while fitting", "the fit diverged", "recorded as failed", "activebayes round")
    status = json.loads(ok("--json", "status").stdout)
    assert [r["status"] for r in status["rounds"]] == ["done", "failed"]
    assert "the fit diverged" in status["rounds"][1]["failure_reason"]

    # a bug in the user's network (not a library error) keeps its traceback, and is recorded too
    def broken(self, x, y):
        if x.shape[0] > 2:
            raise RuntimeError("a bug in the network")
        return fit(self, x, y)

    monkeypatch.setattr(MCDropout, "fit", broken)
    with pytest.raises(RuntimeError, match="a bug in the network"):
        run("round", *TINY, "--k", "4", "--oracle", "truth")
    monkeypatch.setattr(MCDropout, "fit", fit)
    data = json.loads(ok("--json", "round", *TINY, "--k", "4", "--oracle", "truth").stdout)
    assert data["round"] == 4 and data["status"] == "done" and data["labelled"] == 4
    assert [r["status"] for r in json.loads(ok("--json", "status").stdout)["rounds"]] == ["done", "failed", "failed", "done"]


def test_posterior_typo_offers_only_the_cli_posteriors(pooled):
    from activebayes_cli._model import CLI_POSTERIORS

    before = db_dump(pooled)
    for typo, close in (("gpx", None), ("deep-ensembles", "deep-ensemble"), ("mc_dropout", "mc-dropout")):
        result = run("round", *TINY, "--posterior", typo)
        assert_mistake(result, typo, "choose one of")
        offered = re.search(r"choose one of ([a-z, -]+)", result.stderr).group(1).strip()
        assert offered.split(", ") == list(CLI_POSTERIORS)  # not gp
        if close:
            assert f"did you mean {close}?" in result.stderr
    assert_mistake(run("round", *TINY, "--posterior", "gp"), "regression", "mc-dropout")
    assert db_dump(pooled) == before


def test_round_with_the_variational_posterior(pooled):
    """--posterior mfvi: mean-field VI over the dense layers runs a round like the others."""
    args = ("--json", "round", *TINY, "--k", "3", "--oracle", "truth", "--posterior", "mfvi")
    ok(*args)  # the cold start: 3 items at random
    data = json.loads(ok(*args).stdout)  # fitted on those 3 labels
    assert data["status"] == "done" and data["posterior"] == "mfvi" and data["labelled"] == 3


# ---- --model FILE.py:factory and package.module:factory -----------------------------------------
def test_model_from_a_file_path_or_a_module(pooled, monkeypatch):
    Path("lib/nets").mkdir(parents=True)
    Path("lib/nets/deep.py").write_text("from helper import WIDTH\n" + WITH_DROPOUT.replace("8", "WIDTH"))
    Path("lib/nets/helper.py").write_text("WIDTH = 6\n")  # a sibling module the file imports
    Path("mymodels.py").write_text(WITH_DROPOUT)
    for spec in ("./mymodels.py:make", "lib/nets/deep.py:make", str(Path("mymodels.py").resolve()) + ":make"):
        data = json.loads(ok("--json", "round", *TINY, "--k", "3", "--oracle", "truth", "--model", spec).stdout)
        assert data["status"] == "done", spec
        assert data["posterior_settings"]["model"] == str(Path(spec.rsplit(":", 1)[0]).resolve()) + ":make"
    Path("pkg").mkdir()
    Path("pkg/__init__.py").write_text("")
    Path("pkg/models_for_round_test.py").write_text(WITH_DROPOUT)
    data = json.loads(ok("--json", "round", *TINY, "--k", "3", "--oracle", "truth", "--model", "pkg.models_for_round_test:make").stdout)
    assert data["status"] == "done" and data["posterior_settings"]["model"] == "pkg.models_for_round_test:make"


@pytest.mark.parametrize(
    "spec, words",
    [
        ("./missing.py:make", ["no file at", "missing.py"]),
        ("./mymodels.py:nope", ["no attribute", "nope"]),
        ("./mymodels.py", ["mlp, cnn", "path/to/file.py:factory"]),
        ("./broken.py:make", ["importing", "broken.py", "SyntaxError"]),
        ("./notes.txt:make", ["notes.txt", "not a Python file"]),
        ("./mymodels.py:WIDTH", ["not callable"]),
        (".mymodels:make", ["cannot import module", ".mymodels"]),
        ("no_such_module_for_round:make", ["cannot import module", "no_such_module_for_round"]),
    ],
)
def test_model_spec_mistakes_leave_database_unchanged(pooled, spec, words):
    Path("mymodels.py").write_text(WITH_DROPOUT + "WIDTH = 3\n")
    Path("broken.py").write_text("def make(:\n")
    Path("notes.txt").write_text("not python\n")
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--model", spec), *words)
    assert db_dump(pooled) == before


# ---- resuming an interrupted round ---------------------------------------------------------------
def fits_seen(monkeypatch) -> list[tuple[int, int | None, int]]:
    """(members, epochs, items) of every DeepEnsemble fit from now on."""
    from activebayes.posteriors.ensembles import DeepEnsemble

    seen: list[tuple[int, int | None, int]] = []
    fit = DeepEnsemble.fit

    def spy(self, x, y):
        seen.append((self.n_samples, self.train.epochs, int(x.shape[0])))
        return fit(self, x, y)

    monkeypatch.setattr(DeepEnsemble, "fit", spy)
    return seen


def test_interrupted_round_resumes_with_its_recorded_options(pooled, monkeypatch):
    ok("round", *TINY, "--k", "4", "--oracle", "truth")
    options = ("--posterior", "deep-ensemble", "--epochs", "3", "--samples", "3", "--k", "5", "--acquisition", "entropy", "--seed", "7")
    with monkeypatch.context() as m:
        interrupt_at(m, "score")  # killed after fitting, before scoring
        result = run("round", *options, "--device", "cpu", "--oracle", "truth")
    assert result.exit_code in (1, 130) and "Traceback" not in result.output  # interrupted
    status = json.loads(ok("--json", "status").stdout)
    assert [r["status"] for r in status["rounds"]] == ["done", "fitted"]

    # every explicit option that differs is refused in one line naming it; nothing changes
    before = db_dump(pooled)
    for args, words in (
        (["--epochs", "2"], ["round 2", "'fitted'", "--epochs 2 (recorded: 3)", "--restart-round"]),
        (["--posterior", "mc-dropout"], ["--posterior mc-dropout (recorded: deep-ensemble)"]),
        (["--samples", "2", "--k", "4"], ["--samples 2 (recorded: 3)", "--k 4 (recorded: 5)"]),
        (["--acquisition", "bald"], ["--acquisition bald (recorded: entropy)"]),
        (["--model", "cnn"], ["--model cnn (recorded: mlp)"]),
        (["--seed", "0"], ["--seed 0"]),
    ):
        assert_mistake(run("round", "--device", "cpu", "--oracle", "truth", *args), *words)
    assert db_dump(pooled) == before

    # a plain `round` (or the same options again) resumes with the recorded ones
    seen = fits_seen(monkeypatch)
    result = ok("--json", "round", "--device", "cpu", "--oracle", "truth", "--epochs", "3", "--seed", "7")
    assert "resuming round 2" in result.stderr and "--posterior deep-ensemble" in result.stderr
    data = json.loads(result.stdout)
    assert data["round"] == 2 and data["resumed"] and data["status"] == "done"
    assert data["posterior"] == "deep-ensemble" and data["acquisition"] == "entropy" and len(data["queries"]) == 5
    training = data["posterior_settings"].pop("training")  # the sized training: explicit epochs kept
    assert data["posterior_settings"] == {"model": "mlp", "n_samples": 3, "epochs": 3}
    assert training["rule"] == "explicit-epochs" and training["epochs"] == 3 and training["labelled"] == 4
    assert (3, 3, 4) in seen  # fitted on the 4 labels with the recorded members and epochs
    assert [r["status"] for r in json.loads(ok("--json", "status").stdout)["rounds"]] == ["done", "done"]


def test_recorded_defaults_are_compared_as_the_posteriors_defaults(pooled, monkeypatch):
    with monkeypatch.context() as m:
        interrupt_at(m, "score")
        assert run("round", "--epochs", "2", "--device", "cpu", "--k", "3").exit_code in (1, 130)  # S: the default 20
    before = db_dump(pooled)
    assert_mistake(run("round", "--epochs", "2", "--samples", "5"), "--samples 5", "mc-dropout default (20)")
    assert db_dump(pooled) == before
    data = json.loads(ok("--json", "round", "--epochs", "2", "--samples", "20", "--device", "cpu").stdout)
    assert data["resumed"] and data["round"] == 1 and len(data["queries"]) == 3 and data["csv"] == "blobs-round-1.csv"


def test_a_round_started_elsewhere_takes_unrecorded_options_from_the_call(pooled):
    from activebayes.store import PoolStore

    with PoolStore(pooled) as store:  # a round recorded without the CLI's options
        store.start_round("blobs", posterior="mc-dropout", acquisition="bald", seed=1)
    data = json.loads(ok("--json", "round", *TINY, "--k", "5", "--oracle", "truth").stdout)
    assert data["resumed"] and data["round"] == 1 and len(data["queries"]) == 5
    with PoolStore(pooled) as store:  # one the Python API started with its own posterior
        store.start_round("blobs", posterior="MCDropout", acquisition="my_score", seed=1)
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--oracle", "truth"), "'MCDropout'", "cannot rebuild", "--restart-round")
    assert db_dump(pooled) == before
    data = json.loads(ok("--json", "round", *TINY, "--k", "2", "--oracle", "truth", "--restart-round").stdout)
    assert data["round"] == 3 and data["status"] == "done"


def test_restart_round_discards_the_unfinished_round_and_keeps_answers(pooled, monkeypatch):
    from activebayes.store import PoolStore

    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--restart-round"), "--restart-round", "no unfinished round")
    assert db_dump(pooled) == before

    first = json.loads(ok("--json", "round", *TINY, "--k", "4").stdout)  # waits for a person
    key = first["queries"][0]["key"]
    Path("one.csv").write_text(f"key,label\n{key},b\n")
    ok("label", "--from", "one.csv", "--who", "ann")  # one answer of four
    data = json.loads(ok("--json", "round", *TINY, "--k", "3", "--restart-round").stdout)
    assert data["round"] == 2 and data["status"] == "queried" and data["csv"] == "blobs-round-2.csv"
    with PoolStore(pooled) as store:
        rounds = store.rounds("blobs")
        assert [r.status for r in rounds] == ["failed", "queried"]
        assert "--restart-round" in rounds[0].failure_reason
        assert [q.key for q in store.queries("blobs", 1)] == [q["key"] for q in first["queries"]]  # kept
        (obs,) = [o for o in store.observations("blobs") if o["source"] == "file"]
        assert (obs["key"], obs["value"], obs["who"], obs["round_id"]) == (key, "b", "ann", rounds[0].id)
        assert key not in [q.key for q in store.queries("blobs", 2)]

    # an interrupted round too; the same options may be given again
    with monkeypatch.context() as m:
        interrupt_at(m, "score")
        assert run("round", *TINY, "--k", "3", "--oracle", "truth", "--restart-round").exit_code in (1, 130)
    data = json.loads(ok("--json", "round", *TINY, "--k", "2", "--oracle", "truth", "--restart-round", "--posterior", "laplace").stdout)
    assert data["round"] == 4 and data["status"] == "done" and data["posterior"] == "laplace"
    assert [r["status"] for r in json.loads(ok("--json", "status").stdout)["rounds"]] == ["failed", "failed", "failed", "done"]


def test_resuming_needs_the_model_the_round_was_started_with(pooled, monkeypatch):
    Path("nets.py").write_text(WITH_DROPOUT)
    with monkeypatch.context() as m:
        interrupt_at(m, "score")
        assert run("round", *TINY, "--k", "3", "--model", "./nets.py:make").exit_code in (1, 130)
    Path("nets.py").rename("moved.py")
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY), "no file at", "nets.py", "round 1 was started with", "--restart-round")
    assert_mistake(run("round", *TINY, "--model", "./moved.py:make"), "--model ./moved.py:make (recorded:", "nets.py:make)")
    assert db_dump(pooled) == before
    Path("moved.py").rename("nets.py")
    data = json.loads(ok("--json", "round", *TINY, "--model", "nets.py:make").stdout)  # the same file, however written
    assert data["resumed"] and data["round"] == 1 and len(data["queries"]) == 3


def test_a_device_the_library_refuses_names_the_flag(pooled):
    import torch

    before = db_dump(pooled)
    assert_mistake(run("round", "--device", "gpu"), "--device gpu: expected 'auto', 'cpu' or 'cuda[:i]'", "--device cpu")
    if not torch.cuda.is_available():
        assert_mistake(run("round", "--device", "cuda"), "--device cuda: no CUDA device is available", "pass --device cpu")
    assert db_dump(pooled) == before


def test_queries_table_shows_the_round_s_predictions():
    from types import SimpleNamespace

    from rich.console import Console

    from activebayes_cli._queries_table import queries_table

    def shown(queries, *how) -> str:
        console = Console(width=120, record=True)
        console.print(queries_table("t", queries, *how))
        return console.export_text()

    q = SimpleNamespace
    guessed = [q(rank=0, key="k1", score=0.5, value=None, prediction={"label": "cat", "probability": 0.625}),
               q(rank=1, key="k2", score=0.25, value="dog", prediction={"mean": 3.14159, "sd": 0.4321})]  # fmt: skip
    text = shown(guessed, "classification", "plain", True)  # --show-model-guess
    assert "predicted" in text and "cat (0.62)" in text and "3.142 ± 0.43" in text
    hidden = shown(guessed)  # the default: the guess would anchor whoever labels from the table
    assert "predicted" not in hidden and "cat" not in hidden and "3.142" not in hidden and "dog" in hidden
    assert "predicted" not in shown([q(rank=0, key="k1", score=0.0, value=None, prediction=None)], "classification", "plain", True)  # a cold start
    europe = shown([q(rank=0, key="k1", score=0.5, value="151.5", prediction={"mean": 3.14159, "sd": 0.4321})],
                   "regression", "decimal comma", True)  # fmt: skip
    assert "0,5000" in europe and "3,142 ± 0,43" in europe and "151,5" in europe  # as the round file writes them


def test_queries_table_shows_tiny_and_huge_scores_in_significant_digits():
    """Four decimals where they say something (0.5000, 0.0000 for a random round's zeros); a score
    of 2.254e-05 nats (EPIG of a confident posterior) or a variance of 12,345.6 in scientific form."""
    from activebayes_cli._queries_table import score_text

    assert [score_text(v) for v in (0.5, 0.0, 2.254056e-05, -3e-4, 12345.6, 0.001)] == [
        "0.5000", "0.0000", "2.254e-05", "-3.000e-04", "1.235e+04", "0.0010"]


def test_the_queries_table_s_title_is_one_line(pooled):
    """The title ("round 1: 4 queries by ... (no labels yet: a random first batch)") is a line of
    its own, not wrapped to the narrow table's width."""
    result = ok("round", *TINY, "--k", "4", "--first", "random")
    title = next(line for line in result.stdout.splitlines() if line.startswith("round 1:"))
    assert title == "round 1: 4 queries by power-margin (no labels yet: a random first batch)", result.stdout
