"""What the labelling page keeps from a labeller (Starlette's TestClient): the round's prediction
for an item unless `serve --show-model-guess` (the queries are the items the model is unsure or
wrong about, and its guess would pull the answer towards it). On SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from activebayes.store import PoolStore  # noqa: E402
from activebayes.web import Grant  # noqa: E402
from serve_pages import regression_project, table_project  # noqa: E402
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

