"""What the reports show: every candidate's score stored by the loop, one histogram per
acquisition on its own axis and unit, and a learning curve that marks each change of posterior or
acquisition. The data functions are checked directly, the figures through their matplotlib
objects, the CLI through its JSON, its PNG files and an unchanged database."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.image import imread
from typer.testing import CliRunner

from activebayes.acquisition.registry import ACQUISITIONS
from activebayes.errors import DataError
from activebayes.loop import ActiveLearningLoop
from activebayes.oracles import SimulatedOracle
from activebayes.report import (
    Segment,
    acquisition_figure,
    change_points,
    combination_segments,
    histogram_series,
    learning_figure,
    score_axis,
)
from activebayes.store import PoolStore
from activebayes_cli.main import app
from cli_checks import assert_mistake, db_dump
from test_loop import make_project, tiny_factory

PNG = b"\x89PNG\r\n\x1a\n"


# ---- units ---------------------------------------------------------------------------------------
def test_every_registered_acquisition_has_a_unit():
    for name in ACQUISITIONS:
        if name != "random":  # random stores no scores
            assert "unit unknown" not in score_axis(name), name
    for name in ("bald", "batch-bald", "entropy", "eig", "power-bald", "power-entropy"):
        assert score_axis(name).endswith("(nats)")
    for name in ("variance", "variation-ratio", "margin", "least-confidence", "mean-std"):
        assert score_axis(name).endswith("(probability)")
    assert score_axis("variance", task="regression") == "predictive variance (squared target units)"
    assert score_axis("entropy", task="regression").endswith("(nats)")
    assert score_axis("Variation_Ratio") == score_axis("variation-ratio")
    assert score_axis("first_class_prob") == "first_class_prob score (unit unknown)"


# ---- learning-curve segments --------------------------------------------------------------------
SIX = [  # (posterior, acquisition) of rounds 1..12: six combinations, one of them twice
    ("mc", "bald"), ("mc", "bald"), ("mc", "bald"), ("mc", "entropy"), ("mc", "entropy"), ("swag", "entropy"),
    ("swag", "batch-bald"), ("swag", "batch-bald"), ("laplace", "batch-bald"), ("laplace", "margin"),
    ("mc", "bald"), ("mc", "bald"),
]  # fmt: skip


def six_rounds() -> list[dict]:
    rounds = []
    for number, (posterior, acquisition) in enumerate(SIX, start=1):
        entry = {"number": number, "posterior": posterior, "acquisition": acquisition, "labelled": 10 * (number - 1)}
        if number > 1:  # round 1 is the cold start: no posterior, no metric
            entry["accuracy"] = 0.5 + 0.03 * number
        rounds.append(entry)
    return rounds


def test_segments_cut_at_every_change_of_posterior_or_acquisition():
    segments = combination_segments(six_rounds())
    assert [(s.label, s.rounds) for s in segments] == [
        ("mc + bald", (2, 3)), ("mc + entropy", (4, 5)), ("swag + entropy", (6,)), ("swag + batch-bald", (7, 8)),
        ("laplace + batch-bald", (9,)), ("laplace + margin", (10,)), ("mc + bald", (11, 12)),
    ]  # fmt: skip
    assert segments[0].points == ((10.0, 0.56), (20.0, 0.59))
    assert sum(len(s.points) for s in segments) == 11  # every round with a metric, once
    changes = change_points(segments)
    assert [x for x, _, _ in changes] == [25.0, 45.0, 55.0, 75.0, 85.0, 95.0]
    assert changes[0][1:] == ("mc + bald", "mc + entropy") and changes[-1][1:] == ("laplace + margin", "mc + bald")


def test_segments_skip_rounds_without_a_point_but_still_cut():
    rounds = [
        {"number": 1, "posterior": "p", "acquisition": "a", "labelled": 0},
        {"number": 2, "posterior": "p", "acquisition": "a", "labelled": 5, "accuracy": 0.5},
        {"number": 3, "posterior": "p", "acquisition": "b", "labelled": 10, "accuracy": math.nan},
        {"number": 4, "posterior": "p", "acquisition": "a", "labelled": 15, "accuracy": 0.7},
        {"number": 5, "posterior": "p", "acquisition": "a", "labelled": 20, "accuracy": True},
    ]
    segments = combination_segments(rounds)
    assert [(s.label, s.rounds) for s in segments] == [("p + a", (2,)), ("p + a", (4,))]  # round 3 changed it
    assert combination_segments([]) == [] and change_points([]) == []


def _line_colours(axes) -> list[str]:
    return [to_hex(line.get_color()) for line in axes.get_lines() if line.get_linestyle() == "-"]


def test_learning_figure_colours_each_combination_and_marks_each_change():
    segments = combination_segments(six_rounds())
    figure = learning_figure({"digits": segments}, ylabel="accuracy", title="digits")
    (axes,) = figure.axes
    solid = [line for line in axes.get_lines() if line.get_linestyle() == "-"]
    assert [tuple(line.get_xdata()) for line in solid] == [tuple(x for x, _ in s.points) for s in segments]
    colours = _line_colours(axes)
    assert len(set(colours)) == 6 and colours[0] == colours[-1]  # one colour per combination
    dashed = [line for line in axes.get_lines() if line.get_linestyle() == "--"]
    assert sorted(line.get_xdata()[0] for line in dashed) == [25.0, 45.0, 55.0, 75.0, 85.0, 95.0]
    dotted = [line for line in axes.get_lines() if line.get_linestyle() == ":"]
    assert len(dotted) == 6  # each change joined by a dotted connector, not the combination's line
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert legend == [
        "mc + bald", "mc + entropy", "swag + entropy", "swag + batch-bald", "laplace + batch-bald",
        "laplace + margin", "posterior/acquisition changes",
    ]  # fmt: skip


def test_learning_figure_ticks_whole_label_counts():
    """One round's point alone (10 labels): the axis of labelled items ticks whole numbers."""
    figure = learning_figure({"p": [Segment("mc + bald", (2,), ((10.0, 0.7),))]}, ylabel="accuracy")
    ticks = figure.axes[0].get_xticks()
    assert len(ticks) >= 1 and all(float(t).is_integer() for t in ticks), ticks


def test_learning_figure_with_several_projects_keeps_colours_per_combination():
    one = combination_segments(six_rounds()[:5])
    other = combination_segments([{**r, "accuracy": r.get("accuracy", 0) - 0.1} for r in six_rounds()[:3]])
    figure = learning_figure({"a": one, "b": other, "empty": []})
    (axes,) = figure.axes
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert legend == ["mc + bald", "mc + entropy", "a", "b"]  # combinations by colour, projects by marker
    markers = {line.get_marker() for line in axes.get_lines() if line.get_linestyle() == "-"}
    assert len(markers) == 2
    with pytest.raises(DataError, match="at least one"):
        learning_figure({"a": [], "b": [Segment("x", (), ())]})


# ---- acquisition histograms ---------------------------------------------------------------------
def test_histogram_series_bins_every_candidate_and_finds_the_queried():
    rng = np.random.default_rng(0)
    ids = np.arange(100, 1100)
    scores = rng.random(1000).astype(np.float32)
    scores[7] = np.inf
    top = ids[np.argsort(-np.where(np.isfinite(scores), scores, -1))[:5]]
    series = histogram_series("entropy", 4, ids, scores, [*top.tolist(), 99999], bins=20)
    assert series.n_candidates == 1000 and series.n_nonfinite == 1 and series.counts.sum() == 999
    assert len(series.counts) == 20 and len(series.edges) == 21
    assert series.edges[0] == pytest.approx(np.min(scores)) and series.edges[-1] == pytest.approx(np.sort(scores)[-2])
    expected = np.sort(scores[np.isfinite(scores)])[::-1][:5]
    np.testing.assert_allclose(series.queried, expected)  # by rank; the unknown id 99999 is left out
    assert series.threshold == pytest.approx(expected[-1])
    assert series.xlabel == "predictive entropy H[y | x] (nats)" and series.round == 4


def test_histogram_series_edge_cases():
    same = histogram_series("bald", 1, [1, 2, 3], [0.0, 0.0, 0.0], [2])
    assert same.counts.sum() == 3 and same.edges[0] < 0.0 < same.edges[-1] and same.threshold == 0.0
    none = histogram_series("margin", 1, [1, 2], [0.1, 0.2])
    assert none.threshold is None and len(none.queried) == 0
    with pytest.raises(DataError, match="one score per item id"):
        histogram_series("bald", 1, [1, 2], [0.1])
    with pytest.raises(DataError, match="no finite candidate score"):
        histogram_series("bald", 1, [1, 2], [math.nan, math.inf])


def test_acquisition_figure_one_panel_per_acquisition_with_its_unit():
    rng = np.random.default_rng(1)
    panels = [
        histogram_series("bald", 3, np.arange(500), rng.random(500) * 0.7, [0, 1, 2]),
        histogram_series("variation-ratio", 5, np.arange(400), rng.integers(0, 8, 400) / 8, [5]),
    ]
    figure = acquisition_figure(panels, title="t")
    assert len(figure.axes) == 2
    assert [a.get_xlabel() for a in figure.axes] == [
        "BALD I[y; θ | x] (nats)", "variation ratio 1 − modal vote share (probability)"]  # fmt: skip
    first = figure.axes[0]
    (rug,) = [c for c in first.collections if c.get_label() == "queried (3)"]
    assert len(rug.get_segments()) == 3
    assert [t.get_text() for t in first.get_legend().get_texts()] == ["all 500 candidates", "queried (3)", "top-3 cut-off"]
    assert first.get_title() == "bald: round 3" and first.get_yscale() == "log"
    with pytest.raises(DataError):
        acquisition_figure([])


# ---- the loop stores every candidate's score ----------------------------------------------------
def test_loop_stores_every_candidates_score(db_url, tmp_path):
    with PoolStore(db_url) as store:
        truth = make_project(store, tmp_path, pool=200, test=50)
        oracle = SimulatedOracle(truth)
        before = []
        loop = ActiveLearningLoop(tiny_factory, "bald", store, "digits", oracle, batch_size=6, seed=1, device="cpu",
                                  hook=lambda stage: before.append(store.candidates("digits")[0]) if stage == "score" else None)  # fmt: skip
        loop.run(2)
        assert store.round_scores("digits", 1) is None  # cold start: random, no scores
        ids, scores = store.round_scores("digits", 2)
        assert ids.dtype == np.int64 and scores.dtype == np.float32
        np.testing.assert_array_equal(ids, before[1])  # the whole candidate set, in candidate order
        queries = store.queries("digits", 2)
        position = {i: p for p, i in enumerate(ids.tolist())}
        np.testing.assert_allclose([scores[position[q.item_id]] for q in queries], [q.score for q in queries], rtol=1e-6)
        assert np.sort(scores)[::-1][5] == pytest.approx(min(q.score for q in queries), rel=1e-6)  # top-6
        ActiveLearningLoop(tiny_factory, "random", store, "digits", oracle, batch_size=6, device="cpu").step()
        ActiveLearningLoop(tiny_factory, "batch-bald", store, "digits", oracle, batch_size=3, device="cpu",
                           prefilter_size=20).step()  # fmt: skip
        assert store.round_scores("digits", 3) is None  # random acquisition: no scores
        ids4, bald4 = store.round_scores("digits", 4)
        assert len(ids4) == store.count_candidates("digits") + 3 and (bald4 >= 0).all()  # BALD of every candidate
        assert store.scored_rounds("digits") == [2, 4]


# ---- the CLI -------------------------------------------------------------------------------------
def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def campaign(cli_db, tmp_path):
    """A database whose project ran rounds with bald, entropy (twice) and random, on two posteriors."""
    db_url = cli_db
    with PoolStore(db_url) as store:
        truth = make_project(store, tmp_path, pool=150, test=40)
        oracle = SimulatedOracle(truth)
        for posterior, acquisition, n in (("tiny", "bald", 2), ("tiny", "entropy", 1), ("wide", "entropy", 1), ("wide", "random", 1)):
            ActiveLearningLoop(tiny_factory, acquisition, store, "digits", oracle, batch_size=5, seed=2, device="cpu",
                               posterior_name=posterior).run(n)  # fmt: skip
    return db_url


def test_cli_report_draws_each_acquisition_and_change(campaign, tmp_path):
    result = run("--json", "report", "--out", "plots")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert sorted(p.split("/")[-1] for p in data["files"]) == ["acquisition.png", "learning-curve.png"]
    for path in data["files"]:
        assert (tmp_path / path).read_bytes()[:8] == PNG  # an absolute path stays itself
    # one histogram per acquisition, from its LATEST scored round (entropy: round 4, not 3); random has none
    assert data["histograms"] == [
        {"acquisition": "bald", "round": 2, "candidates": 145, "queried": 5},
        {"acquisition": "entropy", "round": 4, "candidates": 135, "queried": 5},
    ]
    assert imread(tmp_path / "plots" / "acquisition.png").shape[0] == round((1.0 + 2.9 * 2) * 110)
    said = run("report", "--out", "plots").stdout.splitlines()
    assert [line for line in said if line.startswith("Wrote ")] == [f"Wrote {path}" for path in data["files"]]  # as export and round say it


def test_cli_report_mistakes_leave_the_database_unchanged(campaign, tmp_path):
    before = db_dump(campaign)
    (tmp_path / "afile").write_text("x")
    assert_mistake(run("report", "--out", "afile"), "--out", "is a file", "pass a folder")
    assert_mistake(run("report", "--out", "afile/sub"), "--out", "is a file")
    assert_mistake(run("--project", "nope", "report"), "no project named 'nope'")
    assert db_dump(campaign) == before
    with PoolStore(campaign) as store:
        store.create_project("empty", classes=range(10))
    before = db_dump(campaign)
    assert_mistake(run("--project", "empty", "report", "--out", "p2"), "no rounds yet", "activebayes --project empty round")
    assert_mistake(run("report", "--out", "p2"), "holds 2 projects", "--project")
    assert db_dump(campaign) == before
    assert not (tmp_path / "p2").exists() and not (tmp_path / "activebayes-report").exists()
    result = run("--json", "--project", "digits", "report", "--out", "p3")  # a report reads, never writes
    assert result.exit_code == 0, result.output
    assert db_dump(campaign) == before


def test_cli_report_on_a_database_from_before_round_scores(campaign, tmp_path):
    from alembic import command
    from sqlalchemy import text

    from activebayes.store import alembic_config

    with PoolStore(campaign) as store:  # as the previous activebayes left it: revision 0001, no scores
        with store._write_engine.begin() as conn:
            conn.execute(text("DELETE FROM round_scores"))
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0001")
    PoolStore(campaign).close()  # upgraded in place on open (rounds kept, no scores for them)
    result = run("--json", "report", "--out", "old")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p.split("/")[-1] for p in data["files"]] == ["learning-curve.png"] and data["histograms"] == []
    assert "no stored candidate scores for bald" in result.stderr and "for entropy" in result.stderr
    with PoolStore(campaign) as store:
        assert store.scored_rounds("digits") == [] and len(store.rounds("digits")) == 5
