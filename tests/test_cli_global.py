"""The CLI's global behaviour: read-only commands never create a database, unsupported --db URLs
and schema revisions are one line, --json is a flag accepted before or after the command (errors
as JSON then), `status` gives each metric its own column without breaking numbers, and `Next:`
hints name --project when the database holds several projects.

Every mistake runs on SQLite and PostgreSQL (`db_url`) and compares `db_dump` before and after."""

from __future__ import annotations

import json
import shlex
import uuid
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from activebayes_cli.main import app
from cli_checks import assert_mistake, db_dump

READ_ONLY = [("status",), ("export", "out.csv"), ("report", "--out", "plots")]
READ_ONLY_IDS = ["status", "export", "report"]


# ---- helpers ------------------------------------------------------------------------------------
def run(*args: str, columns: int | None = None):
    env = {"COLUMNS": str(columns)} if columns is not None else None
    return CliRunner().invoke(app, list(args), catch_exceptions=False, env=env)


def assert_json_mistake(result, *words: str) -> dict:
    """A user mistake under --json: exit 2, stderr exactly one line holding
    {"error": "what; fix", "exit_code": 2}, stdout empty, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    data = json.loads(lines[0])
    assert set(data) == {"error", "exit_code"} and data["exit_code"] == 2, data
    assert "; " in data["error"] and not data["error"].startswith("error:"), data
    assert result.stdout == "" and "Traceback" not in result.output
    for word in words:
        assert word in data["error"], (word, data)
    return data


def sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    return Path(parsed.database) if parsed.get_backend_name() == "sqlite" else None


def write_pool_csv(path: Path, n: int = 30) -> Path:
    rng = np.random.default_rng(0)
    lines = ["id,f0,f1,label"]
    for i in range(n):
        lines.append(f"item-{i:03d},{rng.normal():.4f},{rng.normal():.4f},{'abc'[i % 3]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def head_and_previous() -> tuple[str, str]:
    """This code's newest schema revision and the one before it ("base" when there is one)."""
    from alembic.script import ScriptDirectory

    from activebayes.store import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head()
    return head, script.get_revision(head).down_revision or "base"


def set_revision(url: str, revision: str) -> None:
    """Downgrade the database at `url` to `revision` with Alembic (data of older tables kept)."""
    from alembic import command

    from activebayes.store import PoolStore, alembic_config

    with PoolStore(url) as store, store._write_engine.begin() as conn:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A clean working directory without ACTIVEBAYES_* variables; returns the default db file."""
    monkeypatch.chdir(tmp_path)
    for name in ("ACTIVEBAYES_DB", "ACTIVEBAYES_PROJECT", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "activebayes.db"


@pytest.fixture
def blobs(env, db_url):
    """db_url holding the project "blobs" (classes a, b, c), without data."""
    result = run("--db", db_url, "init", "--name", "blobs", "--classes", "a,b,c")
    assert result.exit_code == 0, result.output
    return db_url


# ---- read-only commands never create a database ----------------------------------------------------
@pytest.mark.parametrize("command", READ_ONLY, ids=READ_ONLY_IDS)
def test_read_only_command_on_empty_database_writes_nothing(env, db_url, command):
    """An empty SQLite file and an empty PostgreSQL schema are 'no database': nothing is created."""
    path = sqlite_file(db_url)
    if path is not None:
        path.touch()
    before = db_dump(db_url)
    assert_mistake(run("--db", db_url, *command), "no activebayes database at", "init --name NAME` first, or check the --db you gave")
    assert db_dump(db_url) == before
    if path is not None:
        assert path.stat().st_size == 0 and not Path(f"{path}-wal").exists()
    else:
        assert before == []
    assert not Path("out.csv").exists() and not env.exists()
    assert_json_mistake(run("--db", db_url, *command, "--json"), "no activebayes database at")
    assert db_dump(db_url) == before


@pytest.mark.parametrize("command", READ_ONLY, ids=READ_ONLY_IDS)
def test_read_only_command_on_missing_database_creates_nothing(env, db_url, command):
    """A SQLite file (and folder) that does not exist, or a PostgreSQL database that does not
    exist: one line, and neither is created."""
    path = sqlite_file(db_url)
    if path is not None:
        missing = f"sqlite:///{path.parent / 'sub' / 'none.db'}"
        words = ["no activebayes database at"]
    else:
        missing = make_url(db_url).set(database=f"ab_missing_{uuid.uuid4().hex[:8]}").render_as_string(False)
        words = ["database"]
    before = db_dump(db_url)
    assert_mistake(run("--db", missing, *command), *words)
    assert db_dump(db_url) == before
    if path is not None:
        assert db_dump(missing) is None and not (path.parent / "sub").exists()
    else:
        from sqlalchemy import create_engine, text

        engine = create_engine(db_url)
        with engine.connect() as conn:
            name = make_url(missing).database
            assert conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first() is None
        engine.dispose()


def test_database_of_another_application_is_no_activebayes_database(env, db_url):
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
        conn.execute(text("INSERT INTO notes (id, body) VALUES (1, 'keep me')"))
    engine.dispose()
    before = db_dump(db_url)
    for command in READ_ONLY:
        assert_mistake(run("--db", db_url, *command), "no activebayes database at")
    assert_mistake(run("--db", db_url, "migrate"), "no activebayes database at")
    assert db_dump(db_url) == before


def test_a_file_that_is_not_sqlite(env):
    Path("notes.db").write_text("just text\n")
    assert_mistake(run("--db", "sqlite:///notes.db", "status"), "not an SQLite database")
    assert Path("notes.db").read_text() == "just text\n"


def test_library_create_false_never_writes(env, db_url):
    """PoolStore(url, create=False): SchemaMissingError on an empty database, nothing written;
    an existing database opens as usual."""
    from activebayes.store import PoolStore
    from activebayes.store.store import SchemaMissingError

    before = db_dump(db_url)
    with pytest.raises(SchemaMissingError, match="no activebayes database"):
        PoolStore(db_url, create=False)
    assert db_dump(db_url) == before
    with PoolStore(db_url) as store:
        store.create_project("p", classes=["a", "b"])
    with PoolStore(db_url, create=False, upgrade=False) as store:
        assert store.projects() == ["p"]


# ---- unsupported URLs -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url, words",
    [
        ("mysql://u@localhost/x", ["'mysql://'"]),
        ("postgresql+asyncpg://u@localhost/x", ["'postgresql+asyncpg://'"]),
        ("postgresql://u@localhost/x", ["'postgresql://'"]),
        ("postgresql+psycopg2://u@localhost/x", ["'postgresql+psycopg2://'"]),
        ("sqlite+aiosqlite:///x.db", ["'sqlite+aiosqlite://'"]),
        ("oracle://u:secret@h/x", ["'oracle://'"]),
        ("sqlite://", ["in-memory"]),
        ("sqlite:///:memory:", ["in-memory"]),
        ("activebayes", ["not a database URL"]),  # a path is taken only when it ends in .db, .sqlite or .sqlite3
        ("not a url://", ["not a database URL"]),
    ],
)
def test_unsupported_database_url_is_one_line(blobs, url, words):
    """Named as unsupported, with what is supported, before any driver is imported; the
    database that is configured elsewhere is untouched and no default file appears."""
    before = db_dump(blobs)
    result = run("--db", url, "status")
    assert_mistake(result, "--db", *words, "sqlite:///")
    if "in-memory" not in words:
        assert "postgresql+psycopg://" in result.stderr
    assert "secret" not in result.stderr
    assert_json_mistake(run("--db", url, "--json", "init", "--name", "x", "--classes", "2"), "--db", *words)
    assert db_dump(blobs) == before
    assert not Path("activebayes.db").exists() and not Path("x.db").exists()


def test_unsupported_database_url_from_the_environment(blobs, monkeypatch):
    write_pool_csv(Path("pool.csv"))
    before = db_dump(blobs)
    monkeypatch.setenv("ACTIVEBAYES_DB", "mysql://u@localhost/x")
    assert_mistake(run("pool", "add", "pool.csv"), "'mysql://'", "ACTIVEBAYES_DB")
    assert db_dump(blobs) == before


def test_library_refuses_unsupported_urls():
    from activebayes.errors import StoreError
    from activebayes.store import PoolStore

    with pytest.raises(StoreError, match="'mysql://'.*postgresql\\+psycopg://"):
        PoolStore("mysql://u@localhost/x")


# ---- schema revisions ---------------------------------------------------------------------------
def test_newer_schema_is_one_line_and_untouched(blobs):
    from sqlalchemy import text

    from activebayes.store import PoolStore

    with PoolStore(blobs) as store, store.transaction() as s:
        s.execute(text("UPDATE alembic_version SET version_num = 'ffff9999'"))
    write_pool_csv(Path("pool.csv"))
    before = db_dump(blobs)
    for command in [*READ_ONLY, ("pool", "add", "pool.csv"), ("migrate",), ("init", "--name", "x", "--classes", "2")]:
        assert_mistake(run("--db", blobs, *command), "'ffff9999'", "newer", "upgrade activebayes")
    assert db_dump(blobs) == before


def test_older_schema_is_refused_by_reads_and_upgraded_by_migrate(blobs):
    from activebayes.store import PoolStore
    from activebayes.store.models import Base

    head, previous = head_and_previous()
    set_revision(blobs, previous)
    before = db_dump(blobs)
    migrate = f"`activebayes --db {shlex.quote(blobs)} migrate`"  # the --db typed is repeated, so that the hint works as typed
    for command in READ_ONLY:
        assert_mistake(run("--db", blobs, *command), "older", f"'{head}'", migrate)
    assert_json_mistake(run("--db", blobs, "status", "--json"), "older", migrate)
    assert db_dump(blobs) == before
    result = run("--db", blobs, "--json", "migrate")
    assert result.exit_code == 0, result.output
    analyzed = [] if blobs.startswith("sqlite") else sorted(Base.metadata.tables)  # ANALYZE on PostgreSQL only
    assert json.loads(result.stdout) | {"analyzed": sorted(json.loads(result.stdout)["analyzed"])} == {
        "db": blobs, "from": previous, "to": head, "upgraded": True, "analyzed": analyzed}  # fmt: skip
    assert "up to date" in run("--db", blobs, "migrate").stdout
    with PoolStore(blobs, create=False, upgrade=False) as store:
        assert store.schema_revision() == head
        if previous != "base":  # an additive upgrade keeps the project
            assert store.projects() == ["blobs"]


def test_writing_command_upgrades_an_older_schema(blobs):
    head, previous = head_and_previous()
    if previous == "base":
        pytest.skip("only one schema revision")
    set_revision(blobs, previous)
    write_pool_csv(Path("pool.csv"))
    result = run("--db", blobs, "pool", "add", "pool.csv", "--key-column", "id")
    assert result.exit_code == 0, result.output
    assert json.loads(run("--db", blobs, "--json", "status").stdout)["pool_items"] == 30


# ---- --json is a flag, before or after the command -------------------------------------------------
def test_help_shows_flags_without_a_type(env):
    for args in (["--help"], ["status", "--help"], ["pool", "add", "--help"], ["round", "--help"], ["export", "--help"]):
        result = run(*args)
        assert result.exit_code == 0, result.output
        assert "<bool>" not in result.stdout, (args, result.stdout)
        assert "--json" in result.stdout and "--quiet" in result.stdout, args


def test_json_takes_no_value(blobs):
    before = db_dump(blobs)
    assert_json_mistake(run("--db", blobs, "--json", "true", "status"), "No such command 'true'")
    assert_json_mistake(run("--db", blobs, "status", "--json=true"), "does not take a value")
    assert db_dump(blobs) == before


def test_json_and_quiet_after_the_command(blobs):
    write_pool_csv(Path("pool.csv"))
    before_first = json.loads(run("--db", blobs, "--json", "status").stdout)
    after = run("--db", blobs, "status", "--json")
    assert after.exit_code == 0 and json.loads(after.stdout) == before_first
    result = run("--db", blobs, "pool", "add", "pool.csv", "--json", "--key-column", "id", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["pool_items"] == 30 and result.stderr == ""  # -q: no notes either
    result = run("--db", blobs, "export", "labels.json", "--json")
    assert json.loads(result.stdout) == {"project": "blobs", "file": "labels.json", "items": 0}
    result = run("--db", blobs, "init", "--name", "second", "--classes", "2", "--json")
    assert json.loads(result.stdout)["project"] == "second"


def test_json_errors_after_the_command(blobs):
    """Mistakes found while parsing (before --json is read) and while running are both JSON."""
    before = db_dump(blobs)
    assert_json_mistake(run("--db", blobs, "status", "--json", "--bogus"), "--bogus")
    assert_json_mistake(run("--db", blobs, "status", "--bogus", "--json"), "--bogus")
    assert_json_mistake(run("--db", blobs, "--project", "nope", "status", "--json"), "nope")
    assert_json_mistake(run("--db", blobs, "export", "x.xlsx", "--json"), "unknown file type")
    assert db_dump(blobs) == before


def test_an_option_value_is_not_taken_for_json(env, db_url):
    """`--name --json` names a project "--json": the parser, not a scan of the words, reads flags."""
    result = run("--db", db_url, "init", "--name", "--json", "--classes", "2")
    assert result.exit_code == 0, result.output
    assert "Created project --json" in result.stdout
    assert json.loads(run("--db", db_url, "status", "--json").stdout)["project"] == "--json"


# ---- status: one column per metric, numbers never broken ------------------------------------------
METRICS = [
    {},
    {"accuracy": 0.123456, "nll": 12345.678, "n_test": 1000000},
    {"accuracy": 0.987654, "n_test": 1000000, "expected_calibration_error": 0.0421, "per_class": [1, 2]},
]
NUMBERS = ["0.1235", "1.235e+04", "1000000", "0.9877", "0.0421"]


@pytest.fixture
def rounds(blobs):
    """blobs with three finished rounds whose metrics are METRICS."""
    from activebayes.store import PoolStore

    with PoolStore(blobs) as store:
        for metrics in METRICS:
            number = store.start_round("blobs", posterior="mc-dropout", acquisition="bald", seed=0).number
            store.advance_round("blobs", number, "fitted", metrics=metrics)
            for status in ("scored", "queried", "answered", "done"):
                store.advance_round("blobs", number, status)
    return blobs


def test_status_gives_each_metric_a_column(rounds):
    result = run("--db", rounds, "status", columns=200)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "round" in line and "status" in line)
    names = ["accuracy", "nll", "n_test", "expected_calibration_error"]
    assert [header.index(n) for n in names] == sorted(header.index(n) for n in names)  # first-seen order
    assert "per_class" not in result.stdout  # a non-scalar metric has no column
    row2 = next(line for line in lines if "0.1235" in line)
    assert "1.235e+04" in row2 and "1000000" in row2 and "=" not in row2
    data = json.loads(run("--db", rounds, "--json", "status").stdout)
    assert [r["metrics"] for r in data["rounds"]] == METRICS  # JSON keeps the recorded metrics


@pytest.mark.parametrize("columns", [120, 80, 60, 40, 30])
def test_status_never_breaks_a_number(rounds, columns):
    result = run("--db", rounds, "status", columns=columns)
    assert result.exit_code == 0, result.output
    for number in NUMBERS:
        assert number in result.stdout, (columns, number, result.stdout)
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= columns


# ---- Next: hints name --project when there are several projects -----------------------------------
def test_next_hints_with_one_project(blobs, monkeypatch):
    write_pool_csv(Path("pool.csv"))
    typed = f"--db {shlex.quote(blobs)}"  # a --db given on the command line is repeated, so that the hint works as typed
    result = run("--db", blobs, "pool", "add", "pool.csv", "--key-column", "id")
    assert "".join(f"Next: activebayes {typed} round (you label what it asks), or activebayes {typed} round --oracle truth".split()) in "".join(
        result.stdout.split())  # a long URL wraps; both rounds named: a person's and a simulated one
    assert json.loads(run("--db", blobs, "--json", "status").stdout)["next"] == (
        f"run `activebayes {typed} round` to choose the next items to label"
    )
    monkeypatch.setenv("ACTIVEBAYES_DB", blobs)  # from the environment: the hint needs no --db
    assert json.loads(run("--json", "status").stdout)["next"] == "run `activebayes round` to choose the next items to label"


def test_piped_output_keeps_each_line_whole(blobs, monkeypatch):
    """Output to no terminal (a pipe, a file, the test's runner) is not wrapped at 80 columns, on
    stdout and stderr alike, so that a script finds each line whole; an explicit $COLUMNS still
    sets the width, and a terminal's console wraps as before."""
    from rich.console import Console

    from activebayes_cli._output import unwrapped_when_piped

    write_pool_csv(Path("pool.csv"))
    typed = f"--db {shlex.quote(blobs)}"
    hint = f"Next: activebayes {typed} round (you label what it asks), or activebayes {typed} round --oracle truth"
    added = run("--db", blobs, "pool", "add", "pool.csv", "--key-column", "id").stdout
    assert len(hint) > 80 and any(hint in line for line in added.splitlines()), added
    name = "labels-of-the-spring-survey-" + "x" * 60
    assert run("--db", blobs, "init", "--name", name, "--classes", "a,b").exit_code == 0
    exported = run("--db", blobs, "--project", name, "export", "-")
    assert f"Wrote 0 labelled items of {name} to stdout" in exported.stderr.splitlines(), exported.stderr
    narrow = run("--db", blobs, "--project", name, "export", "-", columns=60)
    assert max(len(line) for line in narrow.stderr.splitlines()) <= 60, narrow.stderr
    assert not unwrapped_when_piped(Console(force_terminal=True)).soft_wrap


def test_db_takes_a_sqlite_files_path(env):
    """`--db labels.db` (a name ending in .db, .sqlite or .sqlite3) is the SQLite file's URL."""
    result = run("--db", "labels.db", "init", "--name", "p")
    assert result.exit_code == 0 and Path("labels.db").is_file() and "sqlite:///labels.db" in result.stdout
    assert "Next: activebayes --db sqlite:///labels.db pool add FILE" in " ".join(result.stdout.split())
    assert json.loads(run("--db", "labels.db", "--json", "status").stdout)["project"] == "p"
    assert run("init", "--name", "q", "--db", "other.sqlite").exit_code == 0 and Path("other.sqlite").is_file()
    assert_mistake(run("--db", "labels", "status"), "--db: 'labels' is not a database URL")
    assert_mistake(run("--db", "none.db", "migrate"), "no activebayes database", "activebayes --db sqlite:///none.db init --name NAME",
                   "check the --db you gave")  # fmt: skip
    assert not Path("none.db").exists()


def test_next_hints_with_several_projects(blobs, monkeypatch):
    monkeypatch.setenv("ACTIVEBAYES_DB", blobs)
    result = run("init", "--name", "my proj", "--classes", "2")
    assert "Next: activebayes --project 'my proj' pool add FILE" in result.stdout
    write_pool_csv(Path("pool.csv"))
    result = run("--project", "blobs", "pool", "add", "pool.csv", "--key-column", "id")
    assert "or activebayes --project blobs round --oracle truth" in " ".join(result.stdout.split())
    data = json.loads(run("--project", "blobs", "--json", "status").stdout)
    assert "`activebayes --project blobs round`" in data["next"]
    data = json.loads(run("--project", "my proj", "--json", "status").stdout)
    assert "`activebayes --project 'my proj' pool add FILE`" in data["next"]
    assert shlex.split("activebayes --project 'my proj' pool add FILE")[2] == "my proj"


def test_next_command_helper(blobs):
    from activebayes_cli._context import CliState

    st = CliState(db=blobs)
    assert st.next_command("label", "--from", "round 1.csv") == "activebayes label --from 'round 1.csv'"
    st.store().create_project("other", classes=["x", "y"])
    assert st.next_command("round", project="other") == "activebayes --project other round"
    st.project = "blobs"
    assert st.next_command("round") == "activebayes --project blobs round"
    st.close()
