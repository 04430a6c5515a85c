"""The hints of the CLI's one-line mistakes name commands that work as typed: a root option given
after the command (`activebayes status --db x.db`) is answered with the command line that has it
before the command, a usage error points at the --help of the command it was made in, the
commands an error names repeat a `--db` typed on the command line, and `status` names a round
file only where one of that name is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_checks import assert_mistake, ok, run


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A clean working directory without ACTIVEBAYES_* variables."""
    monkeypatch.chdir(tmp_path)
    for name in ("ACTIVEBAYES_DB", "ACTIVEBAYES_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def write_table(path: Path, labels: list[str]) -> Path:
    path.write_text("id,f0,label\n" + "".join(f"r{i},{i % 7},{y}\n" for i, y in enumerate(labels)))
    return path


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        (["status", "--db", "x.db"], "`activebayes --db x.db status`"),
        (["status", "--db=x.db", "--json"], "`activebayes --db=x.db status --json`"),
        (["round", "--k", "3", "--project", "my proj"], "`activebayes --project 'my proj' round --k 3`"),
        (["pool", "add", "f.csv", "--db", "x.db", "--label-column", "y"], "`activebayes --db x.db pool add f.csv --label-column y`"),
        (["status", "--version"], "`activebayes --version`"),
    ],
)
def test_a_root_option_after_the_command_is_shown_before_it(here, args, fixed):
    option = next(a for a in args if a.startswith(("--db", "--project", "--version"))).split("=")[0]
    result = run(*args)
    if "--json" in args:
        assert result.exit_code == 2 and fixed in json.loads(result.stderr)["error"]
    else:
        assert_mistake(result, f"{option} is an option of activebayes itself", "give it before the command", fixed)
    assert not Path("x.db").exists() and not Path("activebayes.db").exists()


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        (["pool", "iris.csv", "--label-column", "y"], "`activebayes pool add iris.csv --label-column y`"),
        (["pool", "ad", "iris.csv"], "`activebayes pool add iris.csv`"),
        (["add", "iris.csv"], "`activebayes pool add iris.csv`"),
        (["--db", "x.db", "memory-span", "--participant", "p"], "`activebayes --db x.db design memory-span --participant p`"),
        (["study", "x.toml"], "`activebayes study run x.toml`"),
    ],
)
def test_a_missing_sub_command_is_put_in(here, args, fixed):
    assert_mistake(run(*args), "has no command", f"did you mean {fixed}")
    assert not Path("x.db").exists() and not Path("activebayes.db").exists()


def test_a_value_without_its_option_gets_it(here):
    assert_mistake(run("init", "iris", "--task", "regression"), "`activebayes init` takes no argument 'iris'",
                   "did you mean `activebayes init --name iris --task regression`")  # fmt: skip
    assert_mistake(run("init"), "Missing option '--name'", "see `activebayes init --help`")
    assert not Path("activebayes.db").exists()


def test_a_typo_of_a_command_keeps_its_suggestion(here):
    assert_mistake(run("lable"), "No such command 'lable'", "Did you mean 'label'")


@pytest.mark.parametrize(
    ("args", "command"),
    [(["--db", "x.db", "round", "--k"], "activebayes round"), (["pool", "add", "f.csv", "--seed"], "activebayes pool add")],
)
def test_an_option_without_its_value_points_at_its_commands_help(here, args, command):
    assert_mistake(run(*args), "requires an argument", f"see `{command} --help`")


def test_a_value_outside_the_choices_is_named_plainly(here):
    result = run("init", "--name", "p", "--task", "regresion")
    assert_mistake(result, "'regresion' is not one of 'classification', 'regression'", "see `activebayes init --help`")
    assert "Value error" not in result.stderr and result.stderr.count("regresion") == 1 and not Path("activebayes.db").exists()
    assert_mistake(run("round", "--k", "abc"), "Invalid value for '--k'", "valid integer", "got 'abc'", "see `activebayes round --help`")


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (["round", "--first", "typcial"], "(did you mean 'typical'?)"),
        (["export", "--format", "labelstudio"], "(did you mean 'label-studio'?)"),
        (["export", "--format", "CSV"], "(did you mean 'csv'?)"),
        (["round", "--acquisition", "bladd"], "--acquisition: unknown name 'bladd'"),
        (["round", "--acquisition", "BatchBald"], "(did you mean batch-bald?)"),
        (["round", "--model", "mpl"], "did you mean --model mlp?"),
        (["round", "--engine", "rey"], "'rey' is not one of 'local', 'ray' (did you mean 'ray'?)"),
        (["study", "run", "study.toml", "--engine", "RAY"], "(did you mean 'ray'?)"),
    ],
)
def test_a_misspelt_name_gets_the_closest_one(here, args, meant):
    assert_mistake(run(*args), meant)
    assert not Path("activebayes.db").exists()


def test_a_name_close_to_none_gets_no_guess(here):
    result = run("round", "--first", "xyzzy")
    assert_mistake(result, "'xyzzy' is not one of 'auto', 'typical', 'random'")
    assert "did you mean" not in result.stderr
    assert "did you mean" not in run("round", "--acquisition", "xyzzy").stderr


def test_the_commands_an_error_names_repeat_a_typed_db(here, monkeypatch):
    typed = "activebayes --db sqlite:///labels.db"
    ok("--db", "labels.db", "init", "--name", "p")
    assert_mistake(run("--db", "labels.db", "init", "--name", "p"), f"`{typed} status`")
    write_table(Path("t.csv"), [str(100 + i) for i in range(30)])  # 30 different numbers: a quantity, not classes
    assert_mistake(run("--db", "labels.db", "pool", "add", "t.csv"), "30 different numbers", f"`{typed} delete p`",
                   f"`{typed} init --name p --task regression`", f"`{typed} init --name p --classes A,B,...`")  # fmt: skip
    monkeypatch.setenv("ACTIVEBAYES_DB", "sqlite:///labels.db")  # from the environment: the hint needs no --db
    assert_mistake(run("pool", "add", "t.csv"), "`activebayes delete p`")


def test_several_projects_show_where_project_goes(here):
    write_table(Path("t.csv"), ["x", "y"] * 10)
    ok("--db", "two.db", "init", "--name", "a")
    ok("--db", "two.db", "init", "--name", "b")
    assert_mistake(run("--db", "two.db", "round"), "the database holds 2 projects (a, b)",
                   "--project NAME before the command (`activebayes --db sqlite:///two.db --project a round ...`)")  # fmt: skip
    assert_mistake(run("--db", "two.db", "pool", "add", "t.csv"), "`activebayes --db sqlite:///two.db --project a pool ...`")


def test_status_names_the_round_file_only_where_it_is(here):
    write_table(Path("t.csv"), ["x", "y"] * 10)
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--key-column", "id")
    ok("round", "--k", "2", "--first", "random", "--csv", "mine.csv")  # not t-round-1.csv
    hint = json.loads(ok("--json", "status").stdout)["next"]
    assert "`activebayes label --from FILE` (the round's file) or `activebayes label`" in hint and "t-round-1.csv" not in hint
    Path("mine.csv").rename("t-round-1.csv")
    assert "`activebayes label --from t-round-1.csv` or `activebayes label`" in json.loads(ok("--json", "status").stdout)["next"]


@pytest.mark.parametrize("group", [[], ["pool"], ["design"], ["study"]])
def test_every_command_is_listed_with_a_whole_line(here, group):
    """`activebayes --help` lists each command with a short help of its own, not a long one cut
    at '...', and ends with the commands of a first project."""
    result = ok(*group, "--help")
    listed = result.stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed and all(line.split(maxsplit=1)[1].endswith(".") and not line.endswith("...") for line in listed), listed
    if not group:
        assert "activebayes init --name NAME" in result.stdout and "activebayes label --from NAME-round-1.csv" in result.stdout


def test_a_notes_commands_repeat_a_typed_db(here):
    ok("--db", "labels.db", "init", "--name", "p")
    write_table(Path("t.csv"), ["Yes", "yes", "No", "No"])
    said = "".join(ok("--db", "labels.db", "pool", "add", "t.csv").output.split())
    assert "differonlyincase" in said and "`activebayes--dbsqlite:///labels.dbdeletep`" in said


HELPS = [[], ["init"], ["status"], ["migrate"], ["export"], ["pool", "add"], ["round"], ["label"], ["evaluate"], ["report"],
         ["delete"], ["demo"], ["design", "memory-span"], ["study", "run"], ["serve"]]  # fmt: skip


@pytest.mark.parametrize("command", HELPS, ids=lambda c: " ".join(c) or "activebayes")
def test_help_names_each_value_as_the_other_options_do(here, command):
    """Every option's value is named as <str>, <int>, <path>, ... (a repeatable option says so
    in its text), not by Typer's Python types (<list[str]>, <int range>)."""
    shown = ok(*command, "--help").stdout
    assert "list[" not in shown and " range>" not in shown, shown


def test_a_pool_without_labels_is_told_the_commands_that_fit(here):
    """No labels to read classes from: the project must be made again with --classes (a second
    `pool add` on it would be refused), and `round --oracle truth` has nothing to answer with."""
    Path("x.csv").write_text("id,f0\n" + "".join(f"r{i},{i}\n" for i in range(6)))
    ok("init", "--name", "n")
    assert_mistake(run("pool", "add", "x.csv"), "has no labels to read them from",
                   "`activebayes delete n`, `activebayes init --name n --classes A,B,...` and `pool add` again")  # fmt: skip
    ok("delete", "n")
    ok("init", "--name", "n", "--classes", "a,b")
    ok("pool", "add", "x.csv")
    assert_mistake(run("round", "--oracle", "truth"), "no held-back truth", "`activebayes label --from FILE`",
                   "a project whose `pool add` was given the labels")  # fmt: skip


GUESS_SHOWN = {"round": "round file", "label": "prompt", "serve": "labelling page", "evaluate": "evaluation file",
               "export": "Label Studio task"}  # fmt: skip


@pytest.mark.parametrize("command", sorted(GUESS_SHOWN))
def test_show_model_guess_says_where_this_command_shows_it(here, command):
    """Each command's --show-model-guess names where that command shows the guess, not every
    place any command does."""
    shown = " ".join(ok(command, "--help").stdout.split())
    text = shown.split("--show-model-guess ", 1)[1].split(" --json", 1)[0]
    assert GUESS_SHOWN[command] in text, text
    assert not [where for other, where in GUESS_SHOWN.items() if other != command and where in text], text


@pytest.mark.parametrize(("command", "usage"), [(["pool", "add"], "pool add [OPTIONS] {FILE}"), (["export"], "export [OPTIONS] [FILE]"),
                                                (["delete"], "delete [OPTIONS] {NAME}")])  # fmt: skip
def test_arguments_are_named_as_the_readme_names_them(here, command, usage):
    assert f"Usage: activebayes {usage}" in ok(*command, "--help").stdout
    assert_mistake(run("delete"), "Missing argument 'NAME'")


def test_a_misspelt_project_gets_the_closest_one(here):
    ok("init", "--name", "iris")
    ok("init", "--name", "digits")
    assert_mistake(run("--project", "irs", "status"), "no project named 'irs'", "did you mean --project iris?")
    assert_mistake(run("--project", "Digits", "status"), "did you mean --project digits?")
    assert "did you mean" not in run("--project", "zzz", "status").stderr
    assert_mistake(run("delete", "irsi"), "no project 'irsi'", "did you mean 'iris'?")
    assert json.loads(ok("--json", "--project", "iris", "status").stdout)["project"] == "iris"  # nothing deleted


def test_a_library_error_without_a_fix_points_at_its_commands_help(here):
    """A refusal that says no fix of its own ends with the --help of the command run, not a
    placeholder `activebayes COMMAND --help` to fill in."""
    result = run("round", "--address", "auto")
    assert_mistake(result, "address: a Ray address ('auto') needs engine='ray'", "see `activebayes round --help`")
    assert "COMMAND" not in result.stderr and not Path("activebayes.db").exists()


@pytest.mark.parametrize("command", [[], ["pool", "add"], ["round"], ["design", "memory-span"]], ids=lambda c: " ".join(c) or "activebayes")
def test_h_shows_the_help_as_help_does(here, command):
    assert ok(*command, "-h").stdout == ok(*command, "--help").stdout
