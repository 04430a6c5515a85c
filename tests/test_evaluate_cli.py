"""`activebayes evaluate` (active testing) and the estimates `status` shows without a test split,
end to end on a small table; every mistake is one line, exit 2, and leaves the database as it was."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.stopping import THRESHOLD
from cli_checks import assert_mistake, db_dump, ok, run


def write_table(path: Path, n: int = 90) -> dict[str, str]:
    """Three classes along f0, and a noise column; returns key -> label."""
    rng = np.random.default_rng(0)
    truth = {}
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "f0", "f1", "label"])
        for i in range(n):
            y = i % 3
            truth[f"r{i:03d}"] = f"c{y}"
            writer.writerow([f"r{i:03d}", f"{2 * y + rng.normal():.4f}", f"{rng.normal():.4f}", f"c{y}"])
    return truth


@pytest.fixture
def project(cli_db, tmp_path):
    truth = write_table(tmp_path / "t.csv")
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--label-column", "label", "--test-fraction", "0.2", "--seed", "0")
    for _ in range(3):
        ok("round", "--oracle", "truth", "--acquisition", "power-bald", "--k", "4", "--epochs", "2", "--first", "random")
    return cli_db, truth


def test_status_estimates_every_stochastic_round_and_says_when_it_cannot(project):
    db, _ = project
    ok("round", "--oracle", "truth", "--acquisition", "bald", "--k", "4", "--epochs", "2")  # top-k
    data = json.loads(ok("--json", "status").stdout)
    by_round = {e["round"]: e for e in data["estimates"]}
    assert sorted(by_round) == [2, 3, 4]  # the cold start fitted no model
    for number in (2, 3):
        low, value, high = by_round[number]["accuracy"][1], by_round[number]["accuracy"][0], by_round[number]["accuracy"][2]
        assert 0.0 <= low <= value <= high <= 1.0 and by_round[number]["labels"] == 4
        assert len(by_round[number]["nll"]) == 3
    assert "deterministic" in by_round[4]["reason"] and "accuracy" not in by_round[4]
    assert data["stopping"]["window"] == 3 and data["stopping"]["threshold"] == THRESHOLD
    assert "labelling more" in data["next"] or "too few rounds" in data["next"]
    text = ok("status").stdout
    assert "estimates from the chosen labels" in text and "deterministic" in text


def test_evaluate_proposes_keeps_apart_and_estimates(project, tmp_path):
    db, truth = project
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        candidates_before = store.count_candidates("t")
    proposed = json.loads(ok("--json", "evaluate", "--budget", "6", "--seed", "1").stdout)
    assert proposed["budget"] == 6 and len(proposed["keys"]) == 6 and Path(proposed["file"]).exists()
    assert Path(proposed["file"]).read_text().splitlines()[0].split(",")[:5] == ["key", "label", "score", "rank", "f0"]  # no guess to anchor the answers
    with PoolStore(db, create=False) as store:
        assert store.count_items("t", split="eval") == 6
        assert store.count_candidates("t") == candidates_before - 6  # kept apart from rounds
        record = store.project("t").settings["evaluation"]
        assert [item["key"] for item in record["items"]] == proposed["keys"] and all(0 < item["q"] <= 1 for item in record["items"])
    waiting = json.loads(ok("--json", "evaluate").stdout)
    assert waiting["estimate"]["reason"].startswith("waiting")
    answers = tmp_path / "answers.csv"
    answers.write_text("key,label\n" + "".join(f"{k},{truth[k]}\n" for k in proposed["keys"]))
    labelled = ok("label", "--from", str(answers)).stdout
    assert "6 evaluation items" in labelled and "pool item" not in labelled
    assert "Next: activebayes evaluate (the estimate from the evaluation set)" in " ".join(labelled.split())
    shown = json.loads(ok("--json", "evaluate").stdout)
    assert shown["estimate"]["labels"] == 6 and len(shown["estimate"]["accuracy"]) == 3
    assert (shown["estimate"]["asked"], shown["estimate"]["partial"], set(shown["estimate"]["unbiased"])) == (6, False, {"accuracy", "nll"})
    # a second --budget continues the same draw while the pool is unchanged
    more = json.loads(ok("--json", "evaluate", "--budget", "3", "--seed", "2").stdout)
    assert more["extended"] and more["items"] == 9 and Path(more["file"]).name == "t-eval-2.csv"
    with PoolStore(db, create=False) as store:
        extended = store.project("t").settings["evaluation"]
        assert store.count_items("t", split="eval") == 9 and store.count_candidates("t") == candidates_before - 9
    assert extended["parts"] == [6, 3] and extended["pool"] == record["pool"]
    assert [i["key"] for i in extended["items"]] == proposed["keys"] + more["keys"]
    assert [i["q"] for i in extended["items"][:6]] == [i["q"] for i in record["items"]]  # the first draws as drawn
    assert all(i["prediction"] for i in extended["items"])  # the refitted model predicted every item
    answers.write_text("key,label\n" + "".join(f"{k},{truth[k]}\n" for k in more["keys"]))
    ok("label", "--from", str(answers))
    assert json.loads(ok("--json", "evaluate").stdout)["estimate"]["labels"] == 9
    ok("round", "--oracle", "truth", "--acquisition", "power-bald", "--k", "4", "--epochs", "2")
    with PoolStore(db, create=False) as store:
        latest = store.rounds("t")[-1]
        assert latest.metrics["active_testing"]["labels"] == 9  # the new model, on the same set
        assert not set(proposed["keys"] + more["keys"]) & {q.key for q in store.queries("t", latest.number)}
    assert "evaluation set" in ok("status").stdout
    ok("export", "labels.csv")  # the evaluation set's answers are labels a person gave too
    with Path("labels.csv").open(newline="") as fh:
        exported = {r["key"]: r for r in csv.DictReader(fh)}
    assert {k: exported[k]["label"] for k in proposed["keys"] + more["keys"]} == {k: truth[k] for k in proposed["keys"] + more["keys"]}
    assert {exported[k]["split"] for k in proposed["keys"]} == {"eval"}
    recorded = json.loads(ok("--json", "evaluate").stdout)["latest_round"]  # [estimate in range, low, high], the unbiased value apart
    assert recorded["labels"] == 9 and 0.0 <= recorded["accuracy"][1] <= recorded["accuracy"][0] <= recorded["accuracy"][2] <= 1.0
    assert set(recorded["unbiased"]) == {"accuracy", "nll"}
    # the round labelled pool items: more draws would no longer come from the pool the set was drawn from
    before = db_dump(db)
    assert_mistake(run("evaluate", "--budget", "3", "--csv", "x.csv"), "cannot be drawn", "pool has changed")
    assert db_dump(db) == before


@pytest.mark.parametrize(
    "args, words",
    [
        (("evaluate", "--budget", "0"), ("--budget", "positive")),
        (("evaluate", "--budget", "1000"), ("--budget", "unlabelled pool items")),
        (("evaluate",), ("no evaluation set", "--budget")),
        (("evaluate", "--csv", "x.csv"), ("--csv", "--budget")),
        (("evaluate", "--show-model-guess"), ("--show-model-guess", "--budget")),
    ],
)
def test_mistakes_are_one_line_and_write_nothing(project, args, words):
    db, _ = project
    before = db_dump(db)
    assert_mistake(run(*args), *words)
    assert db_dump(db) == before


def test_no_model_yet_is_a_mistake(cli_db, tmp_path):
    write_table(tmp_path / "t.csv")
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--label-column", "label", "--test-fraction", "0.2", "--seed", "0")
    before = db_dump(cli_db)
    assert_mistake(run("evaluate", "--budget", "5"), "no fitted model")
    assert db_dump(cli_db) == before


def test_round_debias_is_recorded(project):
    db, _ = project
    ok("round", "--oracle", "truth", "--acquisition", "power-bald", "--k", "4", "--epochs", "2", "--debias")
    from activebayes.store import PoolStore

    with PoolStore(db, create=False) as store:
        rounds = store.rounds("t")
        assert rounds[-1].acquisition_settings["debias"] is True and "debias" not in rounds[-2].acquisition_settings


def _answer_round_file(path: Path, truth: dict[str, str], keep: int | None = None) -> Path:
    """A key,label CSV answering the first `keep` (all) rows of a round file from the truth."""
    with path.open(newline="") as fh:
        keys = [row["key"] for row in csv.DictReader(fh)][:keep]
    answers = path.with_name(f"answers-{path.stem}.csv")
    with answers.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["key", "label"])
        writer.writerows([k, truth[k]] for k in keys)
    return answers


def test_evaluate_after_labelling_by_hand(cli_db, tmp_path):
    """A person's rounds answered with `label --from` leave the round `queried` until the next
    round closes it; evaluate accepts it once every answer is in, and while some are open it
    counts them and names commands that answer them."""
    truth = write_table(tmp_path / "t.csv")
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--key-column", "id", "--label-column", "label", "--test-fraction", "0.2", "--seed", "0")
    ok("round", "--k", "4", "--epochs", "2", "--first", "random")
    ok("label", "--from", str(_answer_round_file(Path("t-round-1.csv"), truth)))
    ok("round", "--k", "4", "--epochs", "2", "--acquisition", "power-bald")  # closes round 1, asks round 2
    ok("label", "--from", str(_answer_round_file(Path("t-round-2.csv"), truth, keep=1)))
    before = db_dump(cli_db)
    assert_mistake(run("evaluate", "--budget", "5"), "round 2 still waits for 3 of its 4 answers",
                   "`activebayes label --from t-round-2.csv` or `activebayes label`")
    assert db_dump(cli_db) == before
    assert "answer the 3 open queries of round 2" in json.loads(ok("--json", "status").stdout)["next"]
    ok("label", "--from", str(_answer_round_file(Path("t-round-2.csv"), truth)))
    data = json.loads(ok("--json", "status").stdout)
    assert data["open_queries"] == 0 and data["rounds"][-1]["status"] == "queried"  # closed by the next round
    assert data["next"].startswith("round 2 has all its answers: `activebayes round` closes it")
    assert "queried, all answered" in ok("status").stdout
    proposed = json.loads(ok("--json", "evaluate", "--budget", "5").stdout)
    assert proposed["items"] == 5 and proposed["labelled"] == 8
    ok("label", "--from", str(_answer_round_file(Path("t-eval.csv"), truth)))
    ok("round", "--k", "4", "--epochs", "2", "--acquisition", "power-bald")  # closes round 2 beside the evaluation set
    rounds = json.loads(ok("--json", "status").stdout)["rounds"]
    assert [r["status"] for r in rounds] == ["done", "done", "queried"]
    with Path("t-round-3.csv").open(newline="") as fh:
        assert not {row["key"] for row in csv.DictReader(fh)} & set(proposed["keys"])  # the evaluation set stays apart


def test_evaluation_answers_beside_a_waiting_round_name_no_empty_part(project, tmp_path):
    """Answers to evaluation items only, while a round waits for its own, say so without a
    "0 to round 5's queries" part."""
    _, truth = project
    proposed = json.loads(ok("--json", "evaluate", "--budget", "3", "--seed", "1").stdout)
    ok("round", "--k", "2", "--epochs", "2")  # round 4 waits for a person
    answers = tmp_path / "answers.csv"
    answers.write_text("key,label\n" + "".join(f"{k},{truth[k]}\n" for k in proposed["keys"]))
    said = " ".join(ok("label", "--from", str(answers)).stdout.split())
    assert "Recorded 3 answers: 3 evaluation items." in said and "0 to round" not in said
    assert "2 queries of round 4 still open" in said
