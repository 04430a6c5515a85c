"""What `status`, `status --json` and `report` say about the estimates of rounds that are open,
discarded (`round --restart-round`), interrupted, or whose unbiased value lies outside the
possible range, end to end on a small table. The assertions are on the shape of the text and the
JSON and on ranges, or on LURE's arithmetic over draw probabilities recorded by hand, never on
how well a network trained."""

from __future__ import annotations

import json

import pytest

from activebayes.round_estimates import pack_class_probabilities
from activebayes.store import PoolStore
from cli_checks import ok
from test_evaluate_cli import write_table

K = 4
ROUND = ("round", "--acquisition", "power-bald", "--k", str(K), "--epochs", "2")
DISCARDED = "round failed (discarded by `activebayes round --restart-round`)"


@pytest.fixture
def project(cli_db, tmp_path):
    """Project t: round 1 (cold start) and round 2 (power-bald) answered from the truth; round 2
    has an estimate on all its answers."""
    truth = write_table(tmp_path / "t.csv")
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--label-column", "label", "--test-fraction", "0.2", "--seed", "0")
    ok(*ROUND, "--oracle", "truth", "--first", "random")
    ok(*ROUND, "--oracle", "truth")
    return cli_db, truth


def status_json() -> dict:
    return json.loads(ok("--json", "status").stdout)


def by_round(data: dict) -> dict[int, dict]:
    return {e["round"]: e for e in data["estimates"]}


def flat(text: str) -> str:
    """The text with every run of white space (rich's line wrapping) as one space."""
    return " ".join(text.split())


def answer(path, pairs) -> None:
    path.write_text("key,label\n" + "".join(f"{k},{v}\n" for k, v in pairs))
    ok("label", "--from", str(path))


def assert_in_range(entry: dict) -> None:
    """Every figure's [estimate, low, high] is ordered and inside the figure's possible range."""
    value, low, high = entry["accuracy"]
    assert 0.0 <= low <= value <= high <= 1.0, entry
    value, low, high = entry["nll"]
    assert 0.0 <= low <= value and (high is None or value <= high), entry  # null: no upper end (under 3 draws)
    assert set(entry["unbiased"]) == {"accuracy", "nll"}


def open_round_with_two_answers(truth, tmp_path) -> list[str]:
    """Round 3 by a human: its first two queries (by rank) answered from the truth; its keys by rank."""
    queries = json.loads(ok("--json", *ROUND).stdout)["queries"]
    keys = [q["key"] for q in sorted(queries, key=lambda q: q["rank"])]
    answer(tmp_path / "two.csv", [(k, truth[k]) for k in keys[:2]])
    return keys


def test_an_open_round_is_provisional_and_not_the_headline(project, tmp_path):
    _, truth = project
    open_round_with_two_answers(truth, tmp_path)
    data = status_json()
    entries = by_round(data)
    assert entries[2]["partial"] is False and entries[2]["note"] is None and entries[2]["labels"] == entries[2]["asked"] == K
    third = entries[3]
    assert third["partial"] is True and (third["labels"], third["asked"]) == (2, K)
    assert third["note"] == f"provisional: round still open, 2 of its {K} answers in"
    for entry in (entries[2], third):
        assert_in_range(entry)
    assert "round 2's estimated accuracy" in data["next"] and "round 3's" not in data["next"]
    text = flat(ok("status").stdout)
    assert f"2 labels of {third['pool']}; provisional: round still open, 2 of its {K} answers in" in text
    assert "round 2's estimated accuracy" in text


def test_discarded_rounds_say_so_with_their_answers(project, tmp_path):
    _, truth = project
    open_round_with_two_answers(truth, tmp_path)
    ok(*ROUND, "--restart-round")  # discards round 3 (2 of its answers in); round 4 asks
    ok(*ROUND, "--restart-round")  # discards round 4 (none in); round 5 asks
    data = status_json()
    entries = by_round(data)
    assert entries[3]["partial"] is True and entries[3]["labels"] == 2
    assert entries[3]["note"] == f"partial: {DISCARDED} with 2 of its {K} answers in"
    assert_in_range(entries[3])
    assert entries[4]["reason"] == f"not available: {DISCARDED} with none of its {K} answers in"
    assert entries[5]["reason"] == f"waiting for answers (none of its {K} answers in)"
    assert "round 2's estimated accuracy" in data["next"]
    text = flat(ok("status").stdout)
    assert f"not available: {DISCARDED} with none of its {K} answers in" in text
    assert text.count("waiting for answers") == 1  # round 5 only


def test_an_interrupted_round_says_it_was_interrupted(project):
    db, _ = project
    with PoolStore(db, create=False) as store:  # what a `round` killed while fitting leaves
        store.start_round("t", posterior="mc-dropout", acquisition="power-bald", seed=0)
        store.advance_round("t", 3, "fitted")
    words = "not available yet: round interrupted while 'fitted', before it asked anything; resuming it asks its queries"
    assert by_round(status_json())[3]["reason"] == words
    text = flat(ok("status").stdout)
    assert words in text and "asked nothing" not in text


def record_round_by_hand(db: str, q: float) -> tuple[list[str], int]:
    """Round 3 asking K items, each drawn with probability `q` and predicted "c0" with p = 0.9,
    waiting for answers: controlled draw probabilities in place of a fitted model's. Returns its
    keys by rank and the number of candidates N it drew from."""
    with PoolStore(db, create=False) as store:
        classes = store.project("t").classes
        probs = pack_class_probabilities([0.9 if c == "c0" else 0.1 / (len(classes) - 1) for c in classes])
        ids, _ = store.candidates("t")
        store.start_round("t", posterior="mc-dropout", acquisition="power-bald", seed=0)
        store.advance_round("t", 3, "fitted")
        predictions = [{"label": "c0", "probability": 0.9, "probs": probs}] * K
        store.record_queries_and_scores("t", 3, ids[:K].tolist(), [1.0] * K, timings={}, predictions=predictions,
                                        probabilities=[q] * K, candidates=len(ids))  # fmt: skip
        store.advance_round("t", 3, "queried")
        return [x.key for x in sorted(store.queries("t", 3), key=lambda x: x.rank)], len(ids)


def lure_of_wrong_answers(q: float, n: int, m_total: int) -> float:
    """R̂_LURE of the 0-1 loss when all M = `m_total` draws, each with probability q from N = `n`,
    were wrong: the mean of v_m = 1 + (N − M)/(N − m) · (1/((N − m + 1) q) − 1)."""
    weights = [1 + (n - m_total) / (n - m) * (1 / ((n - m + 1) * q) - 1) for m in range(1, m_total + 1)]
    return sum(weights) / m_total


def test_an_estimate_outside_the_possible_range_is_shown_inside_it(project, tmp_path, monkeypatch):
    db, _ = project
    q = 0.001  # about 1/15 of uniform: each wrong answer weighs about 15
    keys, n = record_round_by_hand(db, q)
    answer(tmp_path / "two.csv", [(k, "c1") for k in keys[:2]])  # both wrong
    data = status_json()
    third = by_round(data)[3]
    unbiased = 1 - lure_of_wrong_answers(q, n, 2)
    assert unbiased < -10 and third["unbiased"]["accuracy"] == pytest.approx(unbiased)
    assert third["accuracy"][0] == 0.0 and third["partial"] is True
    assert_in_range(third)
    assert "round 2's estimated accuracy" in data["next"]  # not the provisional -13
    text = flat(ok("status").stdout)
    assert f"0.000 [0.000, {third['accuracy'][2]:.3f}] (unbiased value {unbiased:.3g}, outside the possible range)" in text

    answer(tmp_path / "rest.csv", [(k, "c2") for k in keys[2:]])  # the round's answers are all in
    data = status_json()
    third = by_round(data)[3]
    assert third["partial"] is False and third["unbiased"]["accuracy"] == pytest.approx(1 - lure_of_wrong_answers(q, n, K))
    assert third["accuracy"][0] == 0.0
    assert_in_range(third)
    assert f"round 3's estimated accuracy 0.000 (95 % interval 0.000 to {third['accuracy'][2]:.3f})" in data["next"]

    import activebayes.report as report_module

    drawn = []
    save = report_module.save_png
    monkeypatch.setattr(report_module, "save_png", lambda figure, path: (drawn.append(figure), save(figure, path))[1])
    ok("report", "--out", "plots")
    axes = drawn[0].axes[0]
    estimate_line = next(line for line in axes.lines if line.get_linestyle() == "--" and line.get_label().startswith("estimate"))
    assert list(estimate_line.get_xdata()) == [entry["labelled"] for entry in data["estimates"]]
    assert all(0.0 <= y <= 1.0 for y in estimate_line.get_ydata()) and estimate_line.get_ydata()[-1] == 0.0
    from matplotlib.collections import PolyCollection

    (fill,) = [c for c in axes.collections if isinstance(c, PolyCollection)]
    heights = fill.get_paths()[0].vertices[:, 1]
    assert 0.0 <= heights.min() and heights.max() <= 1.0


def test_report_leaves_an_open_rounds_estimate_out_and_says_so(project, tmp_path):
    db, truth = project
    open_round_with_two_answers(truth, tmp_path)
    result = ok("report", "--out", "plots")
    note = f"round 3's estimate is left out of the learning curve (provisional: round still open, 2 of its {K} answers in)"
    assert note in flat(result.stdout)
    from activebayes_cli.report import estimate_band

    with PoolStore(db, create=False) as store:
        rounds = store.rounds("t")
        band, notes = estimate_band(store, "t", rounds, "accuracy")
    assert [x for x, *_ in band] == [rounds[1].labelled_count] and notes == [note]


def test_figures_keep_their_digits_in_small_and_large_units():
    """A regression's RMSE in small or large units: four significant digits, where three decimals
    showed 0.000 [0.000, 0.000] or 41278518701947.039; ordinary figures keep three decimals."""
    from activebayes_cli._estimates import figure_text, triple_text

    assert [figure_text(v) for v in (0.812, 64.23, 0.0, 6.247e-07, 41278518701947.04, -0.5)] == [
        "0.812", "64.230", "0.000", "6.247e-07", "4.128e+13", "-0.500"]
    assert triple_text(6.2e-07, 5e-07, 9e-07, (0.0, float("inf"))) == "6.2e-07 [5e-07, 9e-07]"
