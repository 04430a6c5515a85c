"""A mostly numeric column of codes (Kaggle's Titanic tickets: '113803', 'PC 17599') is read as
categories (`activebayes.data.code_columns`), while a numeric column with a typo or a gap
marker is still refused; a Titanic-shaped table imports with `--label-column Survived` alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.code_columns import is_code, written_as_codes
from activebayes.data.csv_table import read_csv_table
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from cli_checks import assert_mistake, db_dump, ok, one_hot_rows, run

TINY = ("--epochs", "2", "--samples", "4", "--device", "cpu")

TITANIC = """PassengerId,Survived,Pclass,Name,Sex,Age,SibSp,Parch,Ticket,Fare,Cabin,Embarked
1,0,3,"Braund, Mr. Owen Harris",male,22,1,0,A/5 21171,7.25,,S
2,1,1,"Cumings, Mrs. John Bradley",female,38,1,0,PC 17599,71.2833,C85,C
3,1,3,"Heikkinen, Miss. Laina",female,26,0,0,STON/O2. 3101282,7.925,,S
4,1,1,"Futrelle, Mrs. Jacques Heath",female,35,1,0,113803,53.1,C123,S
5,0,3,"Allen, Mr. William Henry",male,35,0,0,373450,8.05,,S
6,0,3,"Moran, Mr. James",male,,0,0,330877,8.4583,,Q
7,0,1,"McCarthy, Mr. Timothy J",male,54,0,0,17463,51.8625,E46,S
8,0,3,"Palsson, Master. Gosta Leonard",male,2,3,1,349909,21.075,,S
9,1,3,"Johnson, Mrs. Oscar W",female,27,0,2,347742,11.1333,,S
10,1,2,"Nasser, Mrs. Nicholas",female,14,1,0,237736,30.0708,,C
11,1,3,"Sandstrom, Miss. Marguerite Rut",female,4,1,1,PP 9549,16.7,G6,S
12,1,1,"Bonnell, Miss. Elizabeth",female,58,0,0,113783,26.55,C103,S
13,0,3,"Saundercock, Mr. William Henry",male,20,0,0,A/5. 2151,8.05,,S
14,0,3,"Andersson, Mr. Anders Johan",male,39,1,5,347082,31.275,,S
15,0,3,"Vestrom, Miss. Hulda Amanda Adolfina",female,14,0,0,350406,7.8542,,S
16,1,2,"Hewlett, Mrs. Mary D Kingcome",female,55,0,0,248706,16,,S
17,0,3,"Rice, Master. Eugene",male,2,4,1,382652,29.125,,Q
18,1,2,"Williams, Mr. Charles Eugene",male,,0,0,244373,13,,S
19,0,3,"Vander Planke, Mrs. Julius",female,31,1,0,345763,18,,S
20,1,3,"Masselmani, Mrs. Fatima",female,,0,0,2649,7.225,,C
21,0,2,"Fynney, Mr. Joseph J",male,35,0,0,239865,26,,S
22,1,2,"Beesley, Mr. Lawrence",male,34,0,0,248698,13,D56,S
23,1,3,"McGowan, Miss. Anna",female,15,0,0,330923,8.0292,,Q
24,1,1,"Sloper, Mr. William Thompson",male,28,0,0,113788,35.5,A6,S
25,0,3,"Palsson, Miss. Torborg Danira",female,8,3,1,349909,21.075,,S
26,1,3,"Asplund, Mrs. Carl Oscar",female,38,1,5,347077,31.3875,,S
27,0,3,"Emir, Mr. Farred Chehab",male,,0,0,2631,7.225,,C
28,0,1,"Fortune, Mr. Charles Alexander",male,19,3,2,19950,263,C23 C25 C27,S
29,1,3,"O'Dwyer, Miss. Ellen",female,,0,0,330959,7.8792,,Q
30,0,3,"Todoroff, Mr. Lalio",male,,0,0,349216,7.8958,,S
"""


def test_a_code_holds_a_letter_and_a_digit():
    assert [is_code(t) for t in ["PC 17599", "136A", "STON/O2. 3101282", "12.5o"]] == [True] * 4
    assert [is_code(t) for t in ["n/a", "unknown", "-", "?", "LINE", "1 234", "3-4", "2024-01-05", "12..5"]] == [False] * 9


@pytest.mark.parametrize(
    ("spellings", "codes"),
    [
        (["A/5 21171", "PC 17599", "C.A. 175428"], True),  # three codes
        (["A/5 21171", "PC 17599", "C.A. 175428", "LINE"], True),  # and one word: still mostly codes
        (["A/5 21171", "PC 17599"], False),  # two: as much a typo's evidence as a code's
        (["136A"], False),
        (["12.5o"], False),  # a typo
        (["n/a", "unknown", "-", "?"], False),  # gap markers
        (["x1", "x2", "x3", "none", "unknown", "missing", "n/a"], False),  # codes outnumbered by words
        (["1 234", "3-4", "2024-01-05", "12..5"], False),  # digits without a letter: quantities written another way
        ([], False),
    ],
)
def test_the_codes_rule(spellings, codes):
    assert written_as_codes(spellings) is codes


def test_a_titanic_ticket_column_is_planned_as_categories(tmp_path):
    f = tmp_path / "train.csv"
    f.write_text(TITANIC)
    p = plan_table(read_csv_table(f), TableOptions(label_column="Survived", categorical="auto", missing="impute"))
    assert p.left_out["Ticket"] == "looks like an identifier: 29 different values in 30 rows"  # categories, then the identifier rule
    forced = plan_table(read_csv_table(f), TableOptions(label_column="Survived", categorical="force", missing="impute"))
    ticket = next(c for c in forced.columns if c.name == "Ticket")
    assert ticket.kind == "categorical" and len(ticket.levels) == 29  # 30 rows, one ticket (349909) twice
    assert {"113803", "A/5 21171", "PC 17599"} <= set(ticket.levels)
    assert any(n.startswith("column 'Ticket' mixes numbers and codes (25 of its 30 values are numbers; the others, 5 different spellings, "
                            "include 'A/5 21171', 'PC 17599'): read as categories") for n in p.notes)  # fmt: skip


def test_a_numeric_column_with_gap_markers_or_typos_is_still_refused(tmp_path):
    f = tmp_path / "g.csv"
    marks = {3: "unknown", 7: "none", 11: "-", 15: "?"}
    f.write_text("x,label\n" + "".join(f"{marks.get(i, i)},{'ab'[i % 2]}\n" for i in range(40)))
    with pytest.raises(DataError, match=r"line 5: column 'x' is not a number \('unknown'\) .*--na-values"):
        plan_table(read_csv_table(f), TableOptions(label_column="label", categorical="auto", missing="impute"))
    typos = {3: "12.5o", 7: "1O"}
    f.write_text("x,label\n" + "".join(f"{typos.get(i, i)},{'ab'[i % 2]}\n" for i in range(40)))
    with pytest.raises(DataError, match=r"line 5: column 'x' is not a number \('12.5o'\)"):
        plan_table(read_csv_table(f), TableOptions(label_column="label", categorical="auto", missing="impute"))


def test_a_titanic_table_imports_with_its_label_column_alone_and_runs_rounds(cli_db):
    Path("train.csv").write_text(TITANIC)
    ok("init", "--name", "t", "--classes", "0,1")
    added = ok("pool", "add", "train.csv", "--label-column", "Survived")
    out = " ".join((added.stdout + added.stderr).split())
    assert "column 'Ticket' mixes numbers and codes" in out and "--ignore Ticket leaves it out" in out
    assert "Keys: column 'PassengerId'." in out
    survived = {line.split(",")[0]: line.split(",")[1] for line in TITANIC.splitlines()[1:]}
    asked = []
    for _ in range(2):
        queries = json.loads(ok("--json", "round", *TINY, "--k", "4", "--oracle", "truth").stdout)["queries"]
        assert [q["label"] for q in queries] == [survived[q["key"]] for q in queries]
        asked += [q["key"] for q in queries]
    assert len(set(asked)) == 8


def test_an_appended_new_code_goes_to_other_in_a_pooled_code_column(cli_db):
    frequent = ["113803"] * 10 + ["PC 17599"] * 10 + ["A/5 21171"] * 10  # and 90 on one row each: 70 numbers in 120
    tickets = frequent + [f"{'' if i % 3 else 'SC'} {300000 + i}".strip() for i in range(90)]  # 60 numbers, 30 'SC ...'
    Path("t.csv").write_text("id,ticket,x,label\n" + "".join(f"k{i},{t},{i % 7}.5,{'ab'[i % 2]}\n" for i, t in enumerate(tickets)))
    ok("init", "--name", "t")
    added = ok("pool", "add", "t.csv")
    assert "column 'ticket' mixes numbers and codes" in " ".join((added.stdout + added.stderr).split())
    before = db_dump(cli_db)
    Path("bad.csv").write_text("id,ticket,x,label\nk300,113803,oops,a\n")
    assert_mistake(run("pool", "add", "bad.csv", "--append"), "'x'")
    assert db_dump(cli_db) == before
    Path("more.csv").write_text("id,ticket,x,label\nk200,WE/P 5735,1.5,a\nk201,113803,1.5,b\nk202,999999,1.5,a\nk203,PC 17599,2.5,b\n")
    ok("pool", "add", "more.csv", "--append")
    x = one_hot_rows("t", "ticket", ["113803", "A/5 21171", "PC 17599", "(other)"], ["k200", "k201", "k202", "k203"])
    assert x == [[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]



def _scale_table(path: Path, column: str, values: list[str], labels: str = "ab") -> Path:
    path.write_text(f"id,{column},x,label\n" + "".join(f"k{i},{v},{i % 7}.5,{labels[i % 2]}\n" for i, v in enumerate(values)))
    return path


def _cylinders() -> list[str]:
    """MASS's Cars93: cylinders 3, 4, 5, 6, 8 and, for the Mazda RX-7, 'rotary' (on line 19)."""
    values = [str((4, 6, 4, 8, 3, 5)[i % 6]) for i in range(40)]
    values[17] = "rotary"
    return values


def test_a_scale_with_a_level_in_words_is_planned_as_categories(tmp_path):
    incomes = [str(1 + i % 3) for i in range(40)]  # openintro's reddit_finance: 1, 2, 3 incomes, and '>3'
    incomes[5] = incomes[23] = ">3"
    for column, values, levels, note in (
        ("Cylinders", _cylinders(), ["3", "4", "5", "6", "8", "rotary"], "column 'Cylinders' holds 5 different whole numbers and the text 'rotary' (on 1 row)"),
        ("num_incomes", incomes, ["1", "2", "3", ">3"], "column 'num_incomes' holds 3 different whole numbers and the text '>3' (on 2 rows)"),
    ):
        p = plan_table(read_csv_table(_scale_table(tmp_path / f"{column}.csv", column, values)), TableOptions(label_column="label", categorical="auto", missing="impute"))
        planned = next(c for c in p.columns if c.name == column)
        assert (planned.kind, planned.levels) == ("categorical", levels)
        assert any(n.startswith(note + ": read as categories, each value as spelled; correct the text if it is a typo") for n in p.notes)


@pytest.mark.parametrize(
    "values",
    [
        [str(i) for i in range(39)] + ["rotary"],  # 39 different numbers: a quantity with a typo
        [f"{1 + i % 3}.5" for i in range(39)] + ["rotary"],  # 3 numbers, not whole: a quantity's values
        [str(1 + i % 3) for i in range(18)] + ["rotary"],  # 19 values: few numbers are what any short column shows
    ],
)
def test_a_numeric_column_with_text_beyond_a_scale_is_still_refused(tmp_path, values):
    with pytest.raises(DataError, match=r"column 'c' is not a number \('rotary'\)"):
        plan_table(read_csv_table(_scale_table(tmp_path / "c.csv", "c", values)), TableOptions(label_column="label", categorical="auto", missing="impute"))


def test_a_cars93_table_imports_its_cylinders_as_categories(cli_db):
    _scale_table(Path("cars.csv"), "Cylinders", _cylinders(), labels=("1.5", "2.5"))
    ok("init", "--name", "t", "--task", "regression")
    added = ok("pool", "add", "cars.csv")
    assert "column 'Cylinders' holds 5 different whole numbers and the text 'rotary' (on 1 row)" in " ".join((added.stdout + added.stderr).split())
    x = one_hot_rows("t", "Cylinders", ["3", "4", "5", "6", "8", "rotary"], ["k16", "k17", "k18"])
    assert x == [[1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0]]
