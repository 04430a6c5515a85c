"""The labelling page over HTTP (Starlette's TestClient) when something went wrong: a labeller
changes an earlier answer (not only the last), answers an item of a round that a terminal
replaced meanwhile, or opens the page after the project's image folder changed under the server;
the page's headings, and class names and texts written in markup, quotes or right to left. On
SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from activebayes.store import PoolStore  # noqa: E402
from activebayes.web import Grant  # noqa: E402
from activebayes.web.app import DATA_AWAY  # noqa: E402
from serve_pages import _csv_project, image_folder_project, table_project  # noqa: E402
from test_cli_label import open_round  # noqa: E402
from test_serve import Page, app_for, observations  # noqa: E402


def labels_of(db: str, keys: list[str], project: str = "blobs") -> dict[str, str | None]:
    with PoolStore(db) as store:
        return {key: state["label"] for key, state in store.label_states(project, keys).items()}


def test_an_earlier_answer_is_changed_and_the_others_stay(db_url, tmp_path, monkeypatch):
    """Three answers, listed again on a reloaded page; then "change" on the first: that answer alone
    is taken back and its item is shown again; answered anew, it holds the new label. Another labeller cannot take it back, and
    an item never answered here has nothing to change."""
    monkeypatch.chdir(tmp_path)
    keys = table_project(db_url, tmp_path, k=4)
    ann, bob = Grant.new("ann", "blobs"), Grant.new("bob", "blobs")
    with app_for(db_url, ann, bob) as client:
        page, other = Page(client, ann), Page(client, bob)
        for key, value in zip(keys[:3], "abc"):
            assert page.answer(key, value)["status"] == "saved"
        assert other.post("undo", key=keys[0]).json()["message"] == f"no answer of yours to {keys[0]} to take back"
        listed = re.findall(r'<li data-key="([^"]+)" data-value="([^"]+)">', page.get("label").text)
        assert listed == [(keys[2], "c"), (keys[1], "b"), (keys[0], "a")]  # a reload lists them again, newest first
        changed = page.post("undo", key=keys[0]).json()
        assert (changed["status"], changed["key"], changed["shown"]) == ("undone", keys[0], keys[0])
        assert labels_of(db_url, keys) == {keys[0]: None, keys[1]: "b", keys[2]: "c", keys[3]: None}
        assert keys[0] not in re.findall(r'<li data-key="([^"]+)"', page.get("label").text)
        assert page.answer(keys[0], "c")["status"] == "saved"
        assert page.post("undo", key=keys[3]).json()["status"] == "nothing"
        last = page.post("undo").json()  # `u` still takes back the latest answer: the one given anew
        assert (last["status"], last["key"]) == ("undone", keys[0])
    assert labels_of(db_url, keys) == {keys[0]: None, keys[1]: "b", keys[2]: "c", keys[3]: None}
    assert [(o["key"], o["value"]) for o in observations(db_url)] == [(keys[1], "b"), (keys[2], "c")]


def test_an_answer_for_a_round_replaced_meanwhile_shows_what_is_open(db_url, tmp_path, monkeypatch):
    """`round --restart-round` in a terminal discarded round 1 and opened round 2 while the page
    showed an item of round 1: the answer (and a skip) is refused, nothing is written, and the
    reply carries round 2's first item instead of leaving the dead one on the page."""
    monkeypatch.chdir(tmp_path)
    keys = table_project(db_url, tmp_path, k=2)
    grant = Grant.new("ann", "blobs")
    with app_for(db_url, grant) as client:
        page = Page(client, grant)
        assert page.next()["shown"] == keys[0]
        with PoolStore(db_url) as store:
            store.advance_round("blobs", 1, "failed")
        open_round(db_url, "blobs", ["item-020", "item-021"])
        refused = page.answer(keys[0], "a")
        assert (refused["status"], refused["round"], refused["shown"]) == ("refused", 2, "item-020")
        assert refused["message"] == f"round 1 does not wait for answers (round 2 does): nothing was saved for {keys[0]}; showing what is open now"
        skipped = page.post("skip", round=1, key=keys[1]).json()
        assert (skipped["status"], skipped["shown"]) == ("refused", "item-020")
        assert page.post("answer", round=2, key="item-999", value="a").status_code == 400  # a key the round never asked: still a bad request
    assert observations(db_url) == []


def test_the_page_says_when_its_image_folder_changed_under_the_server(db_url, tmp_path, monkeypatch):
    """An image removed from the project's folder after `serve` started: opening the page is one
    line that says what to do (not a bare 500), naming no file (a path may spell the class);
    restored, the page works again."""
    monkeypatch.chdir(tmp_path)
    image_folder_project(db_url, tmp_path, truth=True)
    removed = tmp_path / "images" / "light" / "light5.png"
    kept = removed.read_bytes()
    grant = Grant.new("ann", "shapes")
    with app_for(db_url, grant) as client:
        page = Page(client, grant)
        removed.unlink()
        shell = page.get("label")
        assert (shell.status_code, shell.text) == (409, DATA_AWAY)
        assert "light" not in shell.text and page.post("next").status_code == 409
        removed.write_bytes(kept)
        assert page.get("label").status_code == 200 and page.next()["shown"] == "query 1"


def test_each_page_has_one_main_heading_and_says_which_it_is(db_url, tmp_path, monkeypatch):
    """An <h1> (the project, and the page for a screen reader), the current page marked in the
    navigation, and the card's question a heading above the item's own column headings."""
    monkeypatch.chdir(tmp_path)
    table_project(db_url, tmp_path, k=1)
    grant = Grant.new("ann", "blobs")
    with app_for(db_url, grant) as client:
        page = Page(client, grant)
        for name in ("label", "status"):
            html = page.get(name).text
            assert html.count("<h1") == 1 and f'<h1 class="project">blobs<span class="visually-hidden">: {name}</span></h1>' in html
            assert f'/{name}?token={grant.token}" aria-current="page">{name}</a>' in html and html.count("aria-current") == 1
        assert '<h2 class="question" id="question">Which class is this item?' in page.next()["card"]


def test_class_names_and_texts_are_text_in_their_own_direction(db_url, tmp_path, monkeypatch):
    """Class names holding markup, quotes, a template's braces, an emoji or Hebrew, and a Hebrew
    review over several lines: each is escaped text, never markup, and a right-to-left one keeps its
    direction without reordering what is around it (the review dir=auto, each class in a <bdi>)."""
    monkeypatch.chdir(tmp_path)
    classes = ["<b>bold</b>", 'say "hi"', "{{ 7*7 }}", "😀 smile", "שלום"]
    review = "זה היה <i>טוב</i>\nשורה שנייה"
    rows = [["id", "review", "label"]] + [[f"r{i}", review if i == 0 else "plain words " * 8, classes[i % 5]] for i in range(10)]
    keys = _csv_project(db_url, tmp_path, "odd", rows, ("--classes", ",".join(classes)), ("--text-column", "review"), k=1)
    grant = Grant.new("ann", "odd")
    with app_for(db_url, grant) as client:
        card = Page(client, grant).next()["card"]
    assert keys == ["r0"] and '<p class="text" dir="auto">זה היה &lt;i&gt;טוב&lt;/i&gt;\nשורה שנייה</p>' in card
    for name, shown in (("<b>bold</b>", "&lt;b&gt;bold&lt;/b&gt;"), ('say "hi"', "say &#34;hi&#34;"), ("{{ 7*7 }}", "{{ 7*7 }}"), ("שלום", "שלום")):
        assert f'data-value="{shown}"' in card and f"<bdi>{shown}</bdi></button>" in card, name
    assert "<b>" not in card and "49" not in card
