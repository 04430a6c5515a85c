"""A pool written with decimal commas (a `;` file, as spreadsheets in most of Europe save CSV),
from its round file to the answers: the round file writes score, prediction and sd as the pool
wrote its numbers (6 significant digits; a classification file its probability with 4
decimals), and `label --from` and the terminal prompt read an answer written with a decimal comma
or point, refusing in one line, with nothing written, one that reads two ways (`1.500` there,
`1,500` in a project written with points). On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, ok, run
from test_cli_label import open_round


def write_pool(path: Path, *, comma: bool = True, target: bool = True, classes: bool = False, n: int = 40) -> Path:
    """Columns id, a, b (and y): seeded numbers, written with decimal commas between `;` (comma)
    or with points between `,`; y a float target, or with `classes` the class a or b."""
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0, 50, n), rng.uniform(0, 9, n)

    def num(v: float) -> str:
        return f"{v:.2f}".replace(".", ",") if comma else f"{v:.2f}"

    rows = [["id", "a", "b", *(["y"] if target else [])]]
    for i in range(n):
        y = ("a" if a[i] > 25 else "b") if classes else num(100 + 2 * a[i] + b[i])
        rows.append([f"r{i:02d}", num(a[i]), num(b[i]), *([y] if target else [])])
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, delimiter=";" if comma else ",").writerows(rows)
    return path


def regression_project(name: str, **pool) -> None:
    write_pool(Path(f"{name}.csv"), **pool)
    ok("init", "--name", name, "--task", "regression")
    ok("--project", name, "pool", "add", f"{name}.csv", "--key-column", "id", *(["--label-column", "y"] if pool.get("target", True) else []))


def labels(db: str, project: str) -> dict[str, str]:
    with PoolStore(db) as store:
        _, keys, values = store.labels(project)
    return dict(zip(keys, values))


def significant(cell: str) -> int:
    """The significant digits written in a number's cell."""
    return len(re.sub(r"\D", "", cell.split("e")[0]).lstrip("0"))


# ---- the round file -----------------------------------------------------------------------------
def test_a_regression_round_file_writes_its_numbers_with_decimal_commas(cli_db):
    regression_project("eu")
    shown = ok("round", "--oracle", "truth", "--k", "6").stdout  # the GP's first batch, answered from the file's target
    labels = [line.split("│")[-2].strip() for line in shown.splitlines() if line.count("│") >= 4]  # the header has ┃
    assert len(labels) == 6 and all("," in label and "." not in label for label in labels), shown  # as the file wrote them
    out = json.loads(ok("--json", "round", "--k", "3", "--show-model-guess").stdout)
    with Path(out["csv"]).open(newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh, delimiter=";"))
    assert header == ["key", "label", "score", "rank", "predicted", "predicted_sd", "a", "b"]
    assert [r[0] for r in rows] == [q["key"] for q in out["queries"]]
    for row, query in zip(rows, out["queries"]):
        numbers = [row[2], row[4], row[5]]
        assert not any("." in cell for cell in numbers), row  # Excel in a comma locale reads them as numbers
        assert all(significant(cell) <= 6 for cell in numbers), row  # no float noise
        score, mean, sd = (float(cell.replace(",", ".")) for cell in numbers)
        assert score == pytest.approx(query["score"], rel=5e-6, abs=1e-12)
        assert mean == pytest.approx(query["prediction"]["mean"], rel=5e-6) and sd == pytest.approx(query["prediction"]["sd"], rel=5e-6)
        assert "," in row[6] and "," in row[7]  # the features as in the file


def test_a_round_file_of_points_keeps_points_with_six_significant_digits(cli_db):
    regression_project("us", comma=False)
    ok("round", "--oracle", "truth", "--k", "6")
    out = json.loads(ok("--json", "round", "--k", "2", "--show-model-guess").stdout)
    rows = list(csv.reader(Path(out["csv"]).open(newline="")))[1:]
    for row, query in zip(rows, out["queries"]):
        assert "," not in row[4] + row[5] and significant(row[4]) <= 6 and significant(row[5]) <= 6, row
        assert float(row[4]) == pytest.approx(query["prediction"]["mean"], rel=5e-6)


def test_a_classification_round_file_writes_its_probability_with_a_decimal_comma(cli_db):
    from activebayes.data import load_project_data
    from activebayes_cli._round_file import write_round_csv

    write_pool(Path("eu.csv"), classes=True)
    ok("init", "--name", "eu", "--classes", "a,b")
    ok("pool", "add", "eu.csv", "--key-column", "id", "--label-column", "y")
    with PoolStore(cli_db) as store:  # the round's queries, as `round` hands them over
        info, data = store.project("eu"), load_project_data(store, "eu")
    queries = [SimpleNamespace(key="r00", row=0, score=0.0123456789, rank=0, prediction={"label": "a", "probability": 0.625}),
               SimpleNamespace(key="r01", row=1, score=0.0, rank=1, prediction=None)]  # fmt: skip
    write_round_csv(Path("eu-round-1.csv"), queries, info, data, show_guess=True)
    rows = list(csv.reader(Path("eu-round-1.csv").open(newline="", encoding="utf-8"), delimiter=";"))
    assert rows[0][:6] == ["key", "label", "score", "rank", "predicted", "probability"]
    assert rows[1][:6] == ["r00", "", "0,0123457", "1", "a", "0,6250"] and rows[2][:6] == ["r01", "", "0", "2", "", ""]
    open_round(cli_db, "eu", ["r02"], predictions=[{"label": "b", "probability": 0.7}])  # the prompt's hint, written so too
    result = run("label", "--who", "ann", "--show-model-guess", input="q\n")
    assert result.exit_code == 0 and "model: b (0,70)\n" in result.stdout, result.output


# ---- label --from ------------------------------------------------------------------------------
def test_label_from_reads_decimal_commas_in_a_project_written_with_them(cli_db):
    regression_project("eu", target=False)  # no target: the features say how its numbers are written
    Path("n.csv").write_text("key;label\nr01;151,5\nr02;151.5\nr03;1.234,5\nr04;0,500\n", encoding="utf-8")
    ok("label", "--from", "n.csv")
    assert labels(cli_db, "eu") == {"r01": "151.5", "r02": "151.5", "r03": "1234.5", "r04": "0.5"}
    before = db_dump(cli_db)
    Path("bad.csv").write_text("key;label\nr05;2,5\nr06;1.500\n", encoding="utf-8")
    assert_mistake(run("label", "--from", "bad.csv"), "bad.csv line 3", "'1.500' of 'r06'", "could be 1500 or 1,5", "write 1500 or 1,5")
    Path("bad.csv").write_text("key;label\nr05;abc\n", encoding="utf-8")
    assert_mistake(run("label", "--from", "bad.csv"), "line 2", "'abc'", "not a finite number", "151,5")
    assert db_dump(cli_db) == before


def test_label_from_reads_a_decimal_comma_in_a_project_written_with_points(cli_db):
    regression_project("us", comma=False, target=False)
    Path("n.csv").write_text('key;label\nr01;151,5\nr02;"1,234.5"\nr03;0,500\n', encoding="utf-8")
    ok("label", "--from", "n.csv")
    assert labels(cli_db, "us") == {"r01": "151.5", "r02": "1234.5", "r03": "0.5"}
    before = db_dump(cli_db)
    Path("bad.csv").write_text("key;label\nr04;1,500\n", encoding="utf-8")
    assert_mistake(run("label", "--from", "bad.csv"), "'1,500' of 'r04'", "could be 1500 or 1.5", "decimal points", "write 1500 or 1.5")
    assert db_dump(cli_db) == before


def test_export_writes_labels_as_the_pool_and_label_from_reads_them_back(cli_db):
    regression_project("eu", target=False)
    Path("n.csv").write_text("key;label\nr01;1,234\nr02;2,5e-05\n", encoding="utf-8")
    ok("label", "--from", "n.csv")
    ok("export", "out.csv")
    rows = {r["key"]: r["label"] for r in csv.DictReader(Path("out.csv").open(newline="", encoding="utf-8"), delimiter=";") if r["label"]}
    assert rows == {"r01": "1,234", "r02": "2,5e-05"}  # not 1.234, which reads as 1234 there
    before = db_dump(cli_db)
    assert "nothing to record for the whole file" in ok("label", "--from", "out.csv").stdout  # the same labels again
    assert db_dump(cli_db) == before


# ---- the terminal prompt -----------------------------------------------------------------------
def test_the_prompt_reads_a_decimal_comma_and_asks_again_for_an_ambiguous_answer(cli_db):
    regression_project("eu")
    with PoolStore(cli_db) as store:
        keys = [k for k, s in store.label_states("eu", sorted(store.item_keys("eu"))).items() if s["split"] == "pool"][:2]
    open_round(cli_db, "eu", keys, predictions=[{"mean": 151.25, "sd": 0.4}, None])
    result = run("label", "--who", "ann", "--show-model-guess", input="1.500\n151,5\n12.5\nq\n")
    assert result.exit_code == 0, result.output
    assert "model: 151,2 ± 0,4\n" in result.stdout  # the hint written as the pool writes numbers
    assert "'1.500' could be 1500 or 1,5" in result.stdout and "write 1500 or 1,5" in result.stdout
    assert "Recorded 2 answers for round 1." in result.stdout
    assert {k: labels(cli_db, "eu")[k] for k in keys} == {keys[0]: "151.5", keys[1]: "12.5"}


def test_an_answer_far_outside_the_other_labels_is_recorded_with_a_note(cli_db):
    """A typo (26462 for 264.62, a sign) is recorded like any answer, with a note naming it and
    the way to correct it; ordinary answers get none (`activebayes.data.plausible`)."""
    regression_project("typo", comma=False, target=False)
    Path("first.csv").write_text("key,label\n" + "".join(f"r{i:02d},{150 + i}.5\n" for i in range(8)), encoding="utf-8")
    assert "far outside" not in ok("label", "--from", "first.csv").stdout
    Path("typos.csv").write_text("key,label\nr10,26462\nr11,160.25\nr12,-1e30\n", encoding="utf-8")
    said = " ".join(ok("label", "--from", "typos.csv").stdout.split())
    assert "note: 2 answers far outside the other labels (150.5 to 157.5): r10 26462, r12 -1e+30" in said
    assert "label --from FILE --relabel" in said and labels(cli_db, "typo")["r10"] == "26462.0"
    typo = json.loads(run("--json", "label", "--from", write_again("again.csv", "r14,-5e6")).stdout)
    assert typo["far_outside"] == {"answers": {"r14": -5e6}, "others": [-1e30, 26462.0]}  # the quartiles still 150-160
    plain = json.loads(run("--json", "label", "--from", write_again("plain.csv", "r15,155")).stdout)
    assert "far_outside" not in plain
    open_round(cli_db, "typo", ["r20", "r21"])
    typed = run("label", "--who", "ann", input="99999\n156\nq\n")  # the prompt: a note under the answer, `u` to take it back
    assert typed.exit_code == 0 and typed.stdout.count("far outside") == 1, typed.output
    assert "note: 99999 is far outside the other labels (-1e+30 to 26462); `u` takes it back" in typed.stdout


def write_again(name: str, row: str) -> str:
    Path(name).write_text(f"key,label\n{row}\n", encoding="utf-8")
    return name


def test_far_outside_by_hand():
    from activebayes.data.plausible import far_outside

    labels = [10, 12, 14, 16, 18]  # quartiles 12 and 16: fences at -28 and 56
    assert far_outside({"a": 56.0, "b": 56.5, "c": -28.0, "d": -29.0}, labels) == {"b": 56.5, "d": -29.0}
    assert far_outside({"a": 1e9}, labels[:4]) == {}  # too few labels to judge
    assert far_outside({"a": 54.0, "b": 56.0}, [5.0] * 6) == {"b": 56.0}  # equal labels: 10 times their size from them


def test_a_decimal_comma_target_in_a_comma_file_says_how_to_save_it(cli_db):
    Path("d.csv").write_text('id,a,price\nr1,2,"166,54"\nr2,3,"170,10"\nr3,1,180\n', encoding="utf-8")
    ok("init", "--name", "dc", "--task", "regression")
    before = db_dump(cli_db)
    assert_mistake(run("pool", "add", "d.csv", "--label-column", "price"), "label '166,54' (line 2), not a finite number",
                   "separated by ';' or tabs")  # fmt: skip
    assert db_dump(cli_db) == before
