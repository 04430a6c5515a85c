"""Hostile configuration through the CLI: a model factory that fails, a study config of wrong types,
a folder or an unreadable file as config: one line each, exit 2, nothing written."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from cli_checks import db_dump, run
from hostile_files import TINY, mistake
from hostile_files import pg_pooled, pg_project, sqlite_pooled, sqlite_project  # noqa: F401  (the fixtures)


# ---- --model module:factory that fails ---------------------------------------------------------------
MODELS = {
    "raises": ("raise RuntimeError('boom at import')\n", ["RuntimeError", "boom at import"]),
    "syntax": ("def make(:\n", ["SyntaxError"]),
    "exits": ("import sys\nsys.exit(3)\n", ["SystemExit"]),
    "missing-import": ("import no_such_dependency_xyz\n", ["no_such_dependency_xyz"]),
    "factory-raises": ("def make():\n    raise ValueError('bad width')\n", ["ValueError", "bad width"]),
    "factory-exits": ("import sys\ndef make():\n    sys.exit(4)\n", ["SystemExit"]),
    "not-a-module": ("def make():\n    return 42\n", ["not a torch.nn.Module"]),
}


def _refuse_model(url: str, case: str) -> None:
    """`round --model FILE.py:make` and `--model MODULE:make` of MODELS[case]: one line each."""
    source, words = MODELS[case]
    before = db_dump(url) if url.startswith("sqlite") else None
    for form in ("file", "module"):
        name = f"usermodel_{uuid.uuid4().hex[:10]}"
        Path(f"{name}.py").write_text(source)
        spec = f"{name}.py:make" if form == "file" else f"{name}:make"
        mistake(run("round", *TINY, "--model", spec), "--model", name, *words)
    if before is not None:
        assert db_dump(url) == before


@pytest.mark.parametrize("case", list(MODELS))
def test_a_model_factory_that_fails_is_one_line(sqlite_pooled, case):
    _refuse_model(sqlite_pooled, case)


@pytest.mark.postgres
def test_a_model_factory_that_fails_is_one_line_on_postgresql(pg_pooled):
    before = db_dump(pg_pooled)
    for case in MODELS:
        _refuse_model(pg_pooled, case)
    assert db_dump(pg_pooled) == before


# ---- study run: every kind of wrong type in the TOML config ---------------------------------------------
BASE_TOML = """\
name = "hostile"
acquisitions = ["bald", "random"]
seed = 0
repeats = 1

[data]
dataset = "digits"

[loop]
initial = 20
batch_size = 10
max_labels = 40

[model]
posterior = "mc-dropout"
epochs = 2
"""


def _toml(case: str) -> tuple[str, list[str]]:
    b = BASE_TOML
    cases = {
        "string-for-int": (b.replace("batch_size = 10", 'batch_size = "10"'), ["loop.batch_size", "positive integer", "'10'"]),
        "float-for-int": (b.replace("batch_size = 10", "batch_size = 10.5"), ["loop.batch_size", "positive integer"]),
        "negative": (b.replace("seed = 0", "seed = -1"), ["seed", "non-negative integer"]),
        "negative-epochs": (b.replace("epochs = 2", "epochs = -2"), ["model.epochs", "positive integer"]),
        "zero-repeats": (b.replace("repeats = 1", "repeats = 0"), ["repeats", "positive integer"]),
        "bool-for-int": (b.replace("repeats = 1", "repeats = true"), ["repeats", "positive integer", "True"]),
        "bool-for-float": (b + "lr = false\n", ["model.lr", "number"]),
        "string-for-float": (b + 'lr = "0.01"\n', ["model.lr", "number"]),
        "nan": (b + "lr = nan\n", ["model.lr", "number"]),
        "inf": (b + "lr = inf\n", ["model.lr", "number"]),
        "fraction-above-one": (b + "dropout = 1.5\n", ["model.dropout", "[0, 1)"]),
        "list-for-table": (b.replace("[data]\ndataset = \"digits\"\n", "data = [1, 2]\n"), ["[data]", "expected a table"]),
        "string-for-table": ('report = "x"\n' + b, ["[report]", "expected a table"]),
        "table-for-value": (b.replace("batch_size = 10", "batch_size = { size = 10 }"), ["loop.batch_size", "positive integer"]),
        "table-for-list": (b.replace('acquisitions = ["bald", "random"]', "acquisitions = { a = 1 }"), ["acquisitions", "list of names"]),
        "string-for-list": (b.replace('acquisitions = ["bald", "random"]', 'acquisitions = "bald"'), ["acquisitions", "list of names"]),
        "numbers-in-list": (b.replace('["bald", "random"]', '["bald", 3]'), ["acquisitions", "list of names"]),
        "empty-list": (b.replace('["bald", "random"]', "[]"), ["acquisitions", "at least one"]),
        "hidden-floats": (b + "hidden = [1.5]\n", ["model.hidden"]),
        "hidden-empty": (b + "hidden = []\n", ["model.hidden"]),
        "unknown-top": (b.replace('name = "hostile"', 'name = "hostile"\nnmae = "typo"'), ["nmae: unknown key"]),
        "unknown-table": (b + "[training]\nepochs = 3\n", ["training: unknown key"]),
        "unknown-nested-key": (b + "colour = 1\n", ["model.colour: unknown key"]),
        "wrong-nested-table": (b + "[model.network]\nkind = \"mlp\"\n", ["model.network", "non-empty string"]),
        "sub-table": (b.replace("[loop]", "[loop.extra]\nx = 1\n[loop]"), ["loop.extra: unknown key"]),
        "bool-for-string": (b.replace('posterior = "mc-dropout"', "posterior = true"), ["model.posterior", "non-empty string"]),
        "empty-string": (b.replace('name = "hostile"', 'name = ""'), ["name", "non-empty string"]),
        "int-for-bool": (b.replace("max_labels = 40", "max_labels = 40\nbalanced_initial = 0"), ["loop.balanced_initial", "true or false"]),
        "date-for-int": (b.replace("seed = 0", "seed = 1979-05-27"), ["seed", "non-negative integer"]),
        "array-of-tables": (b + "[[loop.steps]]\nx = 1\n", ["loop.steps: unknown key"]),
        "duplicate-key": (b.replace("seed = 0", "seed = 0\nseed = 1"), ["not valid TOML"]),
        "binary": ("\x00\x01\x02 = \xff", ["not valid TOML"]),
    }  # fmt: skip
    return cases[case]


TOML_CASES = [
    "string-for-int", "float-for-int", "negative", "negative-epochs", "zero-repeats", "bool-for-int", "bool-for-float",
    "string-for-float", "nan", "inf", "fraction-above-one", "list-for-table", "string-for-table", "table-for-value",
    "table-for-list", "string-for-list", "numbers-in-list", "empty-list", "hidden-floats", "hidden-empty",
    "unknown-top", "unknown-table", "unknown-nested-key", "wrong-nested-table", "sub-table", "bool-for-string",
    "empty-string", "int-for-bool", "date-for-int", "array-of-tables", "duplicate-key", "binary",
]  # fmt: skip


@pytest.mark.parametrize("case", TOML_CASES)
def test_study_config_with_wrong_types_is_one_line(tmp_path, case):
    text, words = _toml(case)
    config = tmp_path / "study.toml"
    config.write_bytes(text.encode("utf-8", "surrogateescape") if case != "binary" else b"\x00\x01\x02 = \xff")
    mistake(run("study", "run", str(config), "--out", str(tmp_path / "out")), "study.toml", *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.toml"]


def test_study_config_that_is_a_folder_or_unreadable(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    mistake(run("study", "run", str(tmp_path / "dir.toml"), "--out", str(tmp_path / "out")), "dir.toml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.toml"]
