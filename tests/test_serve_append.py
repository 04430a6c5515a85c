"""A running `activebayes serve` follows `pool add --append`: the page reads the project's data
again when its data file changed, so an item of the new rows asked by the next round is shown
with its values (it was past the end of the rows loaded at the page's first request), and each
labeller's undo list and skips carry over. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from activebayes.web import Grant  # noqa: E402
from cli_checks import ok  # noqa: E402
from test_cli_label import open_round  # noqa: E402
from test_serve import Page, app_for  # noqa: E402


def write_rows(path: Path, start: int, stop: int) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "f0", "f1", "label"])
        for i in range(start, stop):
            writer.writerow([f"item-{i:03d}", f"{i / 10:.2f}", f"{(i * 7 % 5) / 4:.2f}", "ab"[i % 2]])
    return path


def test_the_page_shows_appended_rows_without_a_restart(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ok("--db", db_url, "init", "--name", "t", "--classes", "a,b")
    ok("--db", db_url, "--project", "t", "pool", "add", str(write_rows(tmp_path / "t.csv", 0, 10)))
    alice = Grant.new("alice", "t")
    with app_for(db_url, alice) as client:
        page = Page(client, alice)
        assert page.next()["shown"] is None  # no round waits: the page has read the 10 rows
        ok("--db", db_url, "--project", "t", "pool", "add", str(write_rows(tmp_path / "more.csv", 10, 15)), "--append")
        open_round(db_url, "t", ["item-012", "item-003"])
        card = page.next()
        assert card["shown"] == "item-012" and "<td>1.20</td>" in card["card"], card
        assert page.answer("item-012", "a", number=1)["status"] == "saved"
        ok("--db", db_url, "--project", "t", "pool", "add", str(write_rows(tmp_path / "last.csv", 15, 17)), "--append")
        undone = page.post("undo").json()  # the undo list outlived the second reload
        assert (undone["status"], undone["key"]) == ("undone", "item-012")
