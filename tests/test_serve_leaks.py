"""What the labelling and status pages keep from a labeller (Starlette's TestClient): the round's
prediction for an item unless `serve --show-model-guess` (the queries are the items the model is
unsure or wrong about, and its guess would pull the answer towards it), and an image pool's keys,
file paths that may spell the class. On SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from activebayes.store import PoolStore  # noqa: E402
from activebayes.web import Grant  # noqa: E402
from serve_pages import image_folder_project, regression_project, table_project  # noqa: E402
from test_serve import Page, app_for  # noqa: E402


def first_card(db: str, project: str, **options) -> str:
    grant = Grant.new("ann", project)
    with app_for(db, grant, **options) as client:
        return Page(client, grant).next()["card"]


# ---- the model's guess ------------------------------------------------------------------------------
def test_a_class_guess_is_shown_only_when_asked(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    table_project(db_url, tmp_path)  # round 1's first query predicted "a" with probability 0.5
    hidden = first_card(db_url, "blobs")
    assert 'data-kind="table"' in hidden and "model:" not in hidden and 'class="prediction"' not in hidden and "50%" not in hidden
    shown = first_card(db_url, "blobs", show_model_guess=True)
    assert re.search(r'<p class="prediction">model: <strong>a</strong> \(50%\)</p>', shown)
    with PoolStore(db_url) as store:  # hidden from the page, kept in the store
        assert store.queries("blobs", 1)[0].prediction == {"label": "a", "probability": 0.5}


def test_a_number_guess_is_neither_a_line_nor_the_placeholder_unless_asked(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    regression_project(db_url, tmp_path)  # round 1's first query predicted 2.5 ± 0.4
    hidden = first_card(db_url, "yield")
    number = re.search(r'<input type="text" inputmode="decimal" id="number"[^>]*>', hidden).group(0)
    assert "placeholder" not in number and "model:" not in hidden and "2.5" not in hidden
    shown = first_card(db_url, "yield", show_model_guess=True)
    assert "model: <strong>2.5</strong> ± 0.4" in shown and 'placeholder="2.5"' in shown


def test_serve_passes_show_model_guess_to_the_page(db_url, tmp_path, monkeypatch):
    """`serve` hides the guess by default and shows it with --show-model-guess (the server itself
    is not started: the configuration it would serve is kept)."""
    import uvicorn

    import activebayes.web
    from cli_checks import run

    monkeypatch.chdir(tmp_path)
    table_project(db_url, tmp_path)
    configs, create_app = [], activebayes.web.create_app
    monkeypatch.setattr(activebayes.web, "create_app", lambda config: configs.append(config) or create_app(config))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: None)
    for flag in ((), ("--show-model-guess",)):
        result = run("--db", db_url, "serve", "--port", "0", *flag)
        assert result.exit_code == 0, result.output
    assert [c.show_model_guess for c in configs] == [False, True]
    assert "--show-model-guess" in " ".join(run("serve", "--help").stdout.split())


# ---- the status page never names an image pool's items by their paths --------------------------------
def test_the_status_page_names_an_image_pool_s_items_as_the_labelling_page(db_url, tmp_path, monkeypatch):
    """A `--truth` image folder keys its items by their paths (dark/dark0.png): with three answers
    per item, an item two labellers disagree on is listed as "query 1", not by the path that carol,
    who has still to answer it, would read its class in."""
    monkeypatch.chdir(tmp_path)
    names = image_folder_project(db_url, tmp_path, truth=True)
    with PoolStore(db_url) as store:
        keys = [q.key for q in store.queries("shapes", 1)]
    assert all(re.fullmatch(r"(dark|light)/\1\d\.png", key) for key in keys)  # the keys spell the class
    grants = [Grant.new(who, "shapes") for who in ("alice", "bob", "carol")]
    with app_for(db_url, *grants, answers_per_item=3) as client:
        alice, bob, carol = (Page(client, g) for g in grants)
        assert alice.next()["shown"] == names[0]
        assert alice.answer(names[0], "dark")["status"] == "saved"
        assert bob.next()["shown"] == names[0]
        assert bob.answer(names[0], "light")["status"] == "saved"
        status = carol.get("status").text
        assert carol.next()["shown"] == names[0]  # still open to carol
    assert re.search(r'<span class="key">query 1</span>: alice dark, bob light', status)
    assert "query R is the item of rank R in the round file" in status
    assert not any(key in status for key in keys) and ".png" not in status


def test_the_status_page_names_a_table_s_items_by_their_keys(db_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    keys = table_project(db_url, tmp_path)
    alice, bob = Grant.new("alice", "blobs"), Grant.new("bob", "blobs")
    with app_for(db_url, alice, bob, answers_per_item=2) as client:
        a, b = Page(client, alice), Page(client, bob)
        a.answer(keys[0], "a")
        b.answer(keys[0], "b")
        status = a.get("status").text
    assert re.search(rf'<span class="key">{keys[0]}</span>: alice a, bob b', status) and "query R" not in status
