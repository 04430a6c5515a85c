"""What a labeller sees on the labelling page, over HTTP (Starlette's TestClient): an image
folder's keys (file paths that spell the class) never reach the page, the digit keys of classes
named by digits answer those classes, a table's empty cells say so, and undo after the round
closed, or while the page's round closes it, says why. On SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from activebayes.store import PoolStore  # noqa: E402
from activebayes.web import Grant  # noqa: E402
from activebayes.web.shortcuts import class_keys, digit_named  # noqa: E402
from serve_pages import _csv_project, image_folder_project, image_project, table_project  # noqa: E402
from test_serve import Page, app_for  # noqa: E402


def test_digit_named_classes_are_answered_by_their_own_digit():
    assert class_keys(["0", "1"]) == (("0", "0"), ("1", "1"))  # a 0/1 task: key 1 is class "1", not the first class
    assert class_keys([str(d) for d in range(10)])[3] == ("3", "3")
    assert class_keys([7, 2]) == (("7", "7"), ("2", "2"))  # classes stored as numbers
    assert class_keys(["cat", "dog"]) == (("cat", "1"), ("dog", "2"))
    assert class_keys(["1", "2", "10"]) == (("1", "1"), ("2", "2"), ("10", "3"))  # "10" is no digit: keys by position
    many = class_keys([f"c{i}" for i in range(12)])
    assert [k for _, k in many] == [*"1234567890", None, None]
    assert digit_named(["0", "9"]) and not digit_named([]) and not digit_named(["0", "a"])


def secrets_of(db: str, project: str) -> list[str]:
    """Every key of `project` (dark/dark0.png), its file name, and each sub-folder (class) as a path
    (dark/, dark%2F): the class names themselves are on the buttons."""
    with PoolStore(db) as store:
        keys = sorted(store.item_keys(project))
    folders = sorted({k.split("/")[0] for k in keys})
    return keys + [k.split("/")[-1] for k in keys] + [f"{f}/" for f in folders] + [f"{f}%2F" for f in folders]


def test_an_image_folder_page_never_shows_a_key(db_url, tmp_path, monkeypatch):
    """`pool add FOLDER --labels-from-folders` keys items by their paths, dark/dark0.png: the
    class. The page, its image URL, its answers and every message name the item "query R"."""
    monkeypatch.chdir(tmp_path)
    names = image_folder_project(db_url, tmp_path, k=3)
    hidden = secrets_of(db_url, "shapes")
    ann, bob = Grant.new("ann", "shapes"), Grant.new("bob", "shapes")
    seen = []
    with app_for(db_url, ann, bob) as client:
        page, other = Page(client, ann), Page(client, bob)
        seen.append(page.get("label").text)
        card = page.next()
        assert card["shown"] == names[0] == "query 1"
        src = re.search(r'<img class="item"[^>]* src="([^"]+)"', card["card"]).group(1).replace("&amp;", "&")
        assert "key=query%201" in src and client.get(src).content[:4] == b"\x89PNG"
        seen += [card["card"], src]
        done = page.answer(names[0], "dark")
        assert (done["status"], done["key"], done["message"], done["shown"]) == ("saved", "query 1", "saved query 1", "query 2")
        seen += [str(done), str(page.post("skip", round=1, key=names[1]).json())]
        seen.append(str(page.post("undo").json()))
        seen.append(str(page.answer(names[0], "dark")))  # undone, shown again, answered again
        seen.append(str(other.answer(names[0], "light")))  # refused: ann's label stays
        seen.append(page.get("image", round="1", key=hidden[0]).text)  # a key is no name here
    text = "\n".join(seen)
    assert "was labelled 'dark' by someone else meanwhile" in text
    leaked = [h for h in hidden if h in text]
    assert leaked == []
    with PoolStore(db_url) as store:
        first = store.queries("shapes", 1)[0].key
        assert store.label_states("shapes", [first])[first]["label"] == "dark"  # "query 1" is the first-ranked item


def test_an_image_array_page_names_its_items_by_rank_too(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = image_project(db_url, tmp_path, k=2)
    grant = Grant.new("ann", "digits")
    with app_for(db_url, grant) as client:
        page = Page(client, grant)
        card = page.next()
        assert card["shown"] == "query 1" and 'aria-label="round 1, query 1"' in card["card"]
        assert 'data-value="3" data-shortcut="3" aria-keyshortcuts="3"' in card["card"]  # the digit of its name
        assert "<kbd>0</kbd>–<kbd>9</kbd> the class of that name" in page.get("label").text
        assert page.answer(names[0], "3")["shown"] == names[1]


def test_an_empty_cell_says_so_and_non_ascii_text_comes_through(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [["id", "Größe (cm)", "ville", "note", "label"]]
    rows += [[f"r{i}", f"{i + 1}.5 cm", ("São Paulo", "Zürich", "東京")[i % 3], "" if i % 2 == 0 else "ok", "ab"[i % 2]] for i in range(12)]
    keys = _csv_project(db_url, tmp_path, "cities", rows, ("--classes", "a,b"), (), k=2)
    grant = Grant.new("ann", "cities")
    with app_for(db_url, grant) as client:
        card = Page(client, grant).next()
    assert card["shown"] == keys[0] == "r0"
    assert "<th>Größe (cm)</th><td>1.5 cm</td>" in card["card"] and "<td>São Paulo</td>" in card["card"]
    assert '<th>note</th><td><span class="gap">empty</span></td>' in card["card"]
    assert "<th>label</th>" not in card["card"]  # the truth held back is not a feature shown


def test_undo_after_the_round_closed_says_why(db_url, tmp_path, monkeypatch):
    """The next round closed round 1 (here a terminal's `round`): `u` cannot take back its answers,
    and says so, rather than "nothing to undo" after the labeller gave several."""
    monkeypatch.chdir(tmp_path)
    keys = table_project(db_url, tmp_path, k=2)
    grant = Grant.new("ann", "blobs")
    with app_for(db_url, grant) as client:
        page = Page(client, grant)
        for key in keys:
            assert page.answer(key, "a")["status"] == "saved"
        with PoolStore(db_url) as store:
            store.advance_round("blobs", 1, "answered")
            store.advance_round("blobs", 1, "done")
        undone = page.post("undo").json()
    assert (undone["status"], undone["message"]) == ("nothing", "round 1 has closed: its answers can no longer be taken back")
    with PoolStore(db_url) as store:
        assert store.label_states("blobs", keys)[keys[1]]["label"] == "a"


def test_undo_while_the_page_s_round_starts_takes_nothing_back(db_url, tmp_path, monkeypatch):
    """The next round was started from the page and is about to close round 1: a `u` then would
    reopen round 1 under it. It is refused in one line and the answer stays."""
    import threading

    monkeypatch.chdir(tmp_path)
    keys = table_project(db_url, tmp_path, k=2)
    grant = Grant.new("ann", "blobs")
    release = threading.Event()
    with app_for(db_url, grant, run_round=lambda project: release.wait(30)) as client:
        page = Page(client, grant)
        for key in keys:
            assert page.answer(key, "a")["status"] == "saved"
        assert page.post("round").json()["started"] is True
        try:
            undone = page.post("undo").json()
        finally:
            release.set()
    assert (undone["status"], undone["message"]) == ("nothing", "the next round is starting: the answers of this round can no longer be taken back")
    with PoolStore(db_url) as store:
        assert store.label_states("blobs", keys)[keys[1]]["label"] == "a"
