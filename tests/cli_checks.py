"""Assertions shared by the CLI tests."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np


def assert_mistake(result, *words: str) -> None:
    """A user mistake: exit code 2, exactly one 'error: ...; fix' line on stderr, no traceback,
    naming every one of `words`."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "; " in lines[0], lines[0]
    assert "Traceback" not in result.output
    for word in words:
        assert word in lines[0], (word, lines[0])


def db_dump(url: str) -> list[str] | None:
    """Every row of every table at a SQLAlchemy URL, read-only, to compare a database before and
    after a command, on SQLite and PostgreSQL alike. None where a SQLite file does not exist
    (opening it read-only never creates it); [] for a database with no tables."""
    import sqlite3
    from pathlib import Path

    from sqlalchemy import MetaData, create_engine, select
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = Path(parsed.database or "")
        if not path.is_file():
            return None
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return list(conn.iterdump())
    engine = create_engine(url)
    try:
        meta = MetaData()
        with engine.connect() as conn:
            meta.reflect(conn)
            out = []
            for name, table in sorted(meta.tables.items()):
                out.append(f"TABLE {name} ({', '.join(c.name for c in table.columns)})")
                rows = sorted(repr(tuple(row)) for row in conn.execute(select(table)).all())
                out.extend(f"{name}: {row}" for row in rows)
            return out
    finally:
        engine.dispose()


def run(*args: str, input: str | None = None):
    """Invoke the `activebayes` CLI in-process; exceptions that escape its error handler stay
    visible (catch_exceptions=False)."""
    from typer.testing import CliRunner

    from activebayes_cli.main import app

    return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)


def ok(*args: str):
    """`run` that must succeed (exit 0); returns the result."""
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result


def lease_rows(dump: list[str]) -> list[str]:
    """The rows of `db_dump`'s item_leases table (the labelling page's and the prompt's leases)."""
    return [line for line in dump if line.startswith(('INSERT INTO "item_leases"', "item_leases: "))]


def without_leases(dump: list[str]) -> list[str]:
    """`db_dump` less the item_leases rows: what a labelling session holds while open, not records."""
    leases = set(lease_rows(dump))
    return [line for line in dump if line not in leases]


class InterleavedInput(io.BytesIO):
    """Typed input for `CliRunner.invoke(input=...)` (with the `interleaved_input` fixture) that
    runs `meanwhile`, another session's work, when the command first reads: after it has shown
    its first question, before the answer arrives. An explicit interleaving, not a timing race."""

    def __init__(self, text: str, meanwhile) -> None:
        super().__init__(text.encode())
        self.meanwhile = meanwhile

    def _first(self) -> None:
        if self.meanwhile is not None:
            step, self.meanwhile = self.meanwhile, None
            step()

    def read(self, *args):
        self._first()
        return super().read(*args)

    def read1(self, *args):
        self._first()
        return super().read1(*args)

    def readline(self, *args):
        self._first()
        return super().readline(*args)

    def readinto(self, buffer):
        self._first()
        return super().readinto(buffer)


def one_hot_rows(project: str, column: str, levels: list[str], keys: list[str]) -> list[list[float]]:
    """The one-hot features `column=level` for each of `levels` of the items `keys`, as project
    `project` of the ACTIVEBAYES_DB database loads them now (after `pool add --append`, say)."""
    return feature_rows(project, [f"{column}={level}" for level in levels], keys)


def feature_rows(project: str, names: list[str], keys: list[str]) -> list[list[float]]:
    """The features named `names` of the items `keys`, as project `project` of the ACTIVEBAYES_DB
    database loads them now (after `pool add --append`, say)."""
    import os

    import numpy as np

    from activebayes.data.project import load_project_data
    from activebayes.store import PoolStore

    with PoolStore(os.environ["ACTIVEBAYES_DB"]) as store:
        data = load_project_data(store, project)
    at = {k: i for i, k in enumerate(data.keys)}
    columns = [data.feature_names.index(name) for name in names]
    return np.asarray(data.x)[[at[k] for k in keys]][:, columns].tolist()


def same_picture(copy: Path, original: Path) -> bool:
    """Whether a labeller's copy of an image (`activebayes.data.image_copies`) shows exactly the
    original's pixels, upright (the copies are re-encoded without metadata, so not its bytes)."""
    from PIL import Image, ImageOps

    with Image.open(copy) as shown, Image.open(original) as source:
        return np.array_equal(np.asarray(shown), np.asarray(ImageOps.exif_transpose(source)))
