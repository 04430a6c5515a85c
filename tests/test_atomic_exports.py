"""Files the CLI writes for a person are written whole or not at all (`activebayes.atomic_files`):
a write that fails midway, even one replacing an old file with --force, leaves the old file as
it was and no temporary file beside it. JSON exports, Label Studio tasks and config, a design
project's trials, the csv writer; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from activebayes.atomic_files import atomic_write, write_json_atomic, write_text_atomic
from activebayes_cli._round_file import write_csv_like_pool
from cli_checks import ok, run
from test_cli import write_pool_csv
from test_design_project import span_db  # noqa: F401 - a fixture
from test_label_studio import waiting  # noqa: F401 - a fixture


class Broken(RuntimeError):
    """The failure a test injects midway through a write."""


def _partials(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".partial"))


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(Broken), atomic_write(path, encoding="utf-8") as fh:
        fh.write("new, half written")
        fh.flush()
        raise Broken("midway")
    assert path.read_text(encoding="utf-8") == "old\n" and _partials(tmp_path) == []
    with pytest.raises(Broken), atomic_write(tmp_path / "fresh.bin", "wb") as fh:
        fh.write(b"\x89PNG")
        raise Broken("midway")
    assert sorted(os.listdir(tmp_path)) == ["out.json"]  # no file where none was, no temporary file


def test_a_whole_write_replaces_the_file(tmp_path):
    path = tmp_path / "out.json"
    assert write_json_atomic(path, {"a": [1, 2]}) == path
    assert path.read_text(encoding="utf-8") == json.dumps({"a": [1, 2]}, indent=2) + "\n"
    write_text_atomic(path, "<View/>")
    assert path.read_text(encoding="utf-8") == "<View/>" and _partials(tmp_path) == []
    with pytest.raises(ValueError, match="mode"), atomic_write(path, "a"):
        pass


def test_a_csv_write_that_fails_midway_keeps_the_old_csv(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("key,label\nmine,a\n", encoding="utf-8")

    def rows():
        yield ["k1", "a"]
        raise Broken("a row that cannot be read")

    with pytest.raises(Broken):
        write_csv_like_pool(path, ["key", "label"], rows(), "utf-8-sig", ";")
    assert path.read_text(encoding="utf-8") == "key,label\nmine,a\n" and _partials(tmp_path) == []


def test_a_json_export_that_fails_midway_keeps_the_old_file(cli_db, tmp_path, monkeypatch):
    write_pool_csv(tmp_path / "pool.csv", n=30)
    ok("init", "--name", "blobs", "--classes", "a,b,c")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.2")
    Path("labels.json").write_text('{"mine": true}\n', encoding="utf-8")
    original = json.JSONEncoder.iterencode
    monkeypatch.setattr(json.JSONEncoder, "iterencode", _breaking(original))
    with pytest.raises(Broken):
        run("export", "labels.json", "--force")
    assert Path("labels.json").read_text(encoding="utf-8") == '{"mine": true}\n' and _partials(tmp_path) == []
    monkeypatch.setattr(json.JSONEncoder, "iterencode", original)
    ok("export", "labels.json", "--force")
    assert len(json.loads(Path("labels.json").read_text(encoding="utf-8"))["items"]) == 6  # the labelled test items


def test_a_label_studio_export_that_fails_midway_keeps_the_old_tasks_and_config(waiting, tmp_path, monkeypatch):
    tasks, config = Path("tasks.json").read_bytes(), Path("ls.xml").read_bytes()
    monkeypatch.setattr(json.JSONEncoder, "iterencode", _breaking(json.JSONEncoder.iterencode))
    with pytest.raises(Broken):
        run("export", "--format", "label-studio", "--out", "tasks.json", "--config", "ls.xml", "--force")
    assert Path("tasks.json").read_bytes() == tasks and Path("ls.xml").read_bytes() == config
    assert _partials(tmp_path) == []


def test_a_design_export_that_fails_midway_keeps_the_old_file(span_db, tmp_path, monkeypatch):  # noqa: F811
    ok("export", "trials.json")
    before = Path("trials.json").read_bytes()
    monkeypatch.setattr(json.JSONEncoder, "iterencode", _breaking(json.JSONEncoder.iterencode))
    with pytest.raises(Broken):
        run("export", "trials.json", "--force")
    assert Path("trials.json").read_bytes() == before and _partials(tmp_path) == []


def _breaking(original):
    """`JSONEncoder.iterencode` that, streaming to a file (`json.dump`), yields its first pieces
    and then raises `Broken`, having checked that the document was being written to a temporary
    file (not to the file itself); `json.dumps` (the store's own JSON columns) is left alone."""

    def broken(pieces):
        for _ in range(3):
            yield next(pieces)
        assert _partials(Path.cwd()), "the document is written to a temporary file"
        raise Broken("serialiser failed midway")

    def iterencode(self, o, _one_shot=False):
        return original(self, o, _one_shot) if _one_shot else broken(iter(original(self, o, _one_shot)))

    return iterencode
