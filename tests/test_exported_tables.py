"""Tables as other tools and people write them: "no value" written as a dash, None, missing or
SAS's dot (a gap in the features, no label in the label column), dates written with the month's
name (Excel's 1-Mar-24, Mar 1, 2024, SAS's 01MAR2024), amounts with a magnitude (1.2k, 3M) or a currency code (USD 1,200), merged cells, and a survey export's extra header rows
(Qualtrics, SurveyMonkey), refused in one line with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.month_dates import month_name_date
from activebayes.data.parsed_columns import common_unit, date_order, decimal_comma_numbers, unit_numbers, written_days
from activebayes.data.table_spec import apply_table_spec, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from cli_checks import assert_mistake, db_dump, ok, run
from table_files import write_csv

MARKERS = ("-", "--", "\u2013", "\u2014", "None", "missing", "<NA>", ".")


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t")
    return cli_db


def test_written_gap_markers_in_a_number_column_are_gaps_with_a_note(tmp_path):
    """weight: numbers, and every 5th row one of MARKERS: a numeric column with 8 gaps, noted with
    the markers, recorded in the spec's na_values (so a later load reads them alike)."""
    rows = [[f"k{i}", MARKERS[i // 5] if i % 5 == 0 else f"{60 + i}.5", "ab"[i % 2]] for i in range(40)]
    table = read_csv_table(write_csv(tmp_path / "w.csv", ["id", "weight", "label"], rows))
    p = plan_table(table, TableOptions(label_column="label", missing="impute"))
    weight = p.columns[0]
    assert weight.kind == "numeric" and np.flatnonzero(weight.missing).tolist() == list(range(0, 40, 5))
    assert ("column 'weight' holds gap markers ('-', '--', '\u2013', '\u2014', 'None', 'missing', '<NA>', '.' on line 2; "
            "8 cells in all): read as gaps") in p.notes  # fmt: skip
    spec = fit_table_spec(p, np.arange(40))
    assert set(MARKERS) <= set(spec["na_values"])
    x, names = apply_table_spec(table, spec)
    assert names == ["weight", "weight (missing)"] and x[:, 1].tolist() == [float(i % 5 == 0) for i in range(40)]


def test_a_gap_marker_named_in_na_values_gets_no_second_note(tmp_path):
    rows = [[f"k{i}", "-" if i % 4 == 0 else str(i), "ab"[i % 2]] for i in range(20)]
    p = plan_table(read_csv_table(write_csv(tmp_path / "n.csv", ["id", "v", "label"], rows)),
                   TableOptions(label_column="label", missing="impute", na_values=("-",)))  # fmt: skip
    assert p.columns[0].missing.sum() == 5 and not any("gap markers" in n for n in p.notes)


@pytest.mark.parametrize("marker", ["-", "None", "missing", "--", "\u2014", "."])
def test_a_written_gap_marker_in_the_label_column_is_no_label(db, marker):
    """A label written as one of MARKERS is no label, never a class: refused as N/A is, naming it
    and `init --classes`, nothing written; with --labels-are-known those rows are still to label."""
    rows = [[f"k{i}", str(i), marker if i % 5 == 3 else "ab"[i % 2]] for i in range(20)]
    write_csv(Path("l.csv"), ["key", "x", "label"], rows)
    before = db_dump(db)
    assert_mistake(run("pool", "add", "l.csv"), f"row 3 has no label but the gap marker {marker!r} (line 5) (4 rows in all)", "init --classes")
    assert db_dump(db) == before
    added = ok("--json", "pool", "add", "l.csv", "--labels-are-known")
    assert json.loads(added.stdout)["classes"] == ["a", "b"]
    assert f"the labels {marker!r} (4 rows) mark gaps" in " ".join(added.stderr.split())
    assert (lambda s: (s["labelled"], s["unlabelled"]))(json.loads(ok("--json", "status").stdout)) == (16, 4)


def test_a_class_named_none_stays_a_class_when_init_names_it(db):
    rows = [[f"k{i}", str(i), ("None", "Minor", "Major")[i % 3]] for i in range(30)]
    write_csv(Path("d.csv"), ["key", "x", "damage"], rows)
    ok("init", "--name", "d", "--classes", "None,Minor,Major")
    added = json.loads(ok("--json", "--project", "d", "pool", "add", "d.csv", "--label-column", "damage").stdout)
    assert added["classes"] == ["None", "Minor", "Major"] and added["pool_items"] == 30


def test_month_name_dates_are_read():
    written = ["1-Mar-24", "01MAR2024", "1 March 2024", "March 1, 2024", "Mar 1 2024", "Fri, 1 Mar 2024",
               "Friday, March 1, 2024", "1st Mar. 2024", "1-SEPT-2024"]  # fmt: skip
    assert written_days(written, "named").tolist() == [19783.0] * 8 + [19967.0]  # 2024-03-01, 2024-09-01
    assert written_days(["Mar 1, 2024 2:30 PM", "1-Mar-24 14:30"], "named").tolist() == [19783 + 14.5 / 24] * 2
    assert np.isnan(written_days(["Mar-24", "30-Feb-2024", "1 Mai 2024", "Marc 1, 2024", "1-Mar", "12"], "named")).all()
    assert month_name_date("Mar 1, 24") is None  # a two-digit year only after the day: Excel's d-mmm-yy
    assert date_order(["1-Mar-24", "2-Apr-24"]) == "named"
    assert date_order(["1-Mar-24", "13/02/2024"]) == "dmy" and date_order(["red", "blue"]) is None


def test_a_column_of_month_name_dates_is_a_date_at_every_load(tmp_path):
    """Excel's d-mmm-yy dates: a date column (five features), not 28 categories; applied as
    planned; a later value written another way is refused naming its line."""
    rows = [[f"k{i}", f"{1 + i % 28}-{('Jan', 'Feb', 'Mar', 'Apr')[i % 4]}-24", "ab"[i % 2]] for i in range(40)]
    table = read_csv_table(write_csv(tmp_path / "d.csv", ["id", "when", "label"], rows))
    p = plan_table(table, TableOptions(label_column="label"))
    when = p.columns[0]
    assert (when.kind, when.written) == ("date", "named") and when.numbers[0] == 19723.0  # 2024-01-01
    assert "column 'when' holds dates ('1-Jan-24'): read as days since 1970-01-01, with the season and weekday" in p.notes
    spec = fit_table_spec(p, np.arange(40))
    assert apply_table_spec(table, spec)[1] == ["when (days)", "when (season sin)", "when (season cos)", "when (weekday sin)", "when (weekday cos)"]
    rows[7][1] = "2024-01-08"
    later = read_csv_table(write_csv(tmp_path / "e.csv", ["id", "when", "label"], rows))
    with pytest.raises(DataError, match=r"line 9: column 'when' is not a date written as the others are \('2024-01-08'\); write it as D Mon YYYY"):
        apply_table_spec(later, spec)
    with pytest.raises(DataError, match=r"line 9: column 'when' holds dates \('1-Jan-24'\) but also '2024-01-08', a date written another way"):
        plan_table(later, TableOptions(label_column="label"))


QUALTRICS = [["StartDate", "Q1", "Q2", "label"], ["Start Date", "How old are you?", "Which colour?", "Did you buy?"],
             ['{"ImportId":"startDate","timeZone":"America/Denver"}', '{"ImportId":"QID1"}', '{"ImportId":"QID2"}', '{"ImportId":"QID3"}']]  # fmt: skip
SURVEYMONKEY = [["Respondent ID", "How old are you?", "Which colours do you like?", "", "label"], ["", "Response", "Red", "Blue", "Response"]]


@pytest.mark.parametrize(
    "head, words",
    [
        (QUALTRICS, ["line 3: holds Qualtrics' import ids", "lines 2-3 are header rows of a Qualtrics export", "delete them"]),
        (QUALTRICS[:1] + QUALTRICS[2:], ["line 2: holds Qualtrics' import ids", "line 2 is a header row", "delete it"]),
        (SURVEYMONKEY, ["line 2: holds SurveyMonkey's kinds of answer", "line 2 is a header row of a SurveyMonkey export"]),
    ],
)
def test_a_survey_exports_extra_header_rows_are_refused(db, head, words):
    """Read as answers, a survey export's question texts and import ids would be an item labelled
    'Did you buy?' (every column text) or a number column refused for a word: refused, naming the
    lines, nothing written."""
    answers = [[f"2024-03-0{1 + i % 9} 10:00:00" if head is not SURVEYMONKEY else str(1000 + i), str(20 + i), "Red" if i % 2 else "", "ab"[i % 2]]
               for i in range(20)]  # fmt: skip
    answers = [[*row[:3], "Blue" if i % 3 else "", row[3]] if head is SURVEYMONKEY else row for i, row in enumerate(answers)]
    write_csv(Path("s.csv"), head[0], head[1:] + answers)
    before = db_dump(db)
    assert_mistake(run("pool", "add", "s.csv"), *words)
    assert db_dump(db) == before


def test_magnitudes_multiply_an_amount_and_accountings_dash_is_zero():
    texts = ["1.2k", "450K", "3M", "2 mn", "$4.5bn", "(1.2k)", "999", "$ -", "12m", "5k%", "k"]
    assert unit_numbers(texts)[:8].tolist() == [1200.0, 450_000.0, 3e6, 2e6, 4.5e9, -1200.0, 999.0, 0.0]  # $ -: Excel's Accounting zero
    assert np.isnan(unit_numbers(texts)[8:]).all()  # 12m: metres or minutes as often as millions
    assert common_unit(["1.2k", "13k"]) is None and common_unit(["12 kg", "3 kg"]) == "kg"  # a magnitude is no unit
    # only a fraction before a magnitude shows magnitudes: else a race's 5k or courses 105B and 106M
    assert unit_numbers(["1.2k", "999", "3M"], None).tolist() == [1200.0, 999.0, 3e6]
    assert np.isnan(unit_numbers(["5k", "10k", "half-marathon"], None)).all() and np.isnan(unit_numbers(["105B", "106M", "200"], None)[:2]).all()
    assert common_unit(["12k", "13k"]) == "k"  # 12k, 13k alone: a unit, as before


def test_a_column_of_counts_written_with_magnitudes_is_numbers(tmp_path):
    """Followers written 999, 1.2k, 3M (a social network's export): numbers, 1.2k as 1200, with a
    note; once they were a mixed column left out as an identifier, or 12k read as 12 beside 999."""
    cells = ["999", "1.2k", "3M", "45K", "12k", "850"]
    rows = [[f"k{i}", cells[i % 6], "ab"[i % 2]] for i in range(30)]
    table = read_csv_table(write_csv(tmp_path / "f.csv", ["id", "followers", "label"], rows))
    p = plan_table(table, TableOptions(label_column="label"))
    assert (p.columns[0].kind, p.columns[0].written) == ("numeric", "units")
    assert p.columns[0].numbers[:6].tolist() == [999.0, 1200.0, 3e6, 45_000.0, 12_000.0, 850.0]
    assert any("'1.2k' and the like as thousands (k), millions (M, mn) and billions (B, bn)" in n for n in p.notes)
    spec = fit_table_spec(p, np.arange(30))
    x, _ = apply_table_spec(table, spec)
    column = spec["columns"][0]
    assert np.allclose(x[:, 0], (p.columns[0].numbers - column["mean"]) / column["scale"], atol=1e-6)  # read at load as planned


def test_merged_cells_get_a_note_naming_the_way_to_fill_them_down(tmp_path):
    """site: 'Site A' on row 0, then 9 empty rows, 'Site B', ... (merged cells saved as a csv): a
    note saying so; sparse values that are not so laid out (two in a row, a repeat) get none."""
    def sites(cell) -> list[str]:
        rows = [[f"k{i}", cell(i), f"{i % 7}.5", "ab"[i % 2]] for i in range(40)]
        p = plan_table(read_csv_table(write_csv(tmp_path / "m.csv", ["id", "site", "x", "label"], rows)),
                       TableOptions(label_column="label", missing="impute", categorical="auto"))  # fmt: skip
        return [n for n in p.notes if "merged cells" in n]

    assert sites(lambda i: f"Site {'ABCD'[i // 10]}" if i % 10 == 0 else "") == [
        "column 'site' holds a value only on the first row of each run of empty cells ('Site A' on line 2, then 9 empty), as merged cells "
        "are saved; if each value holds for the rows below it, fill it down in the sheet before `pool add` (its gaps are filled with the "
        "most frequent value, not the one above them)"]  # fmt: skip
    assert sites(lambda i: f"Site {'ABCD'[i // 10]}" if i % 10 in (0, 1) else "") == []  # two rows of a group named
    assert sites(lambda i: "Site A" if i % 10 == 0 else "") == []  # one value again: a sparse category
    assert sites(lambda i: f"Site {'ABCD'[i // 10]}" if i % 10 == 1 else "") == []  # the first row empty


def test_labels_that_are_nearly_one_per_row_are_refused_unless_named(db):
    """40 rows, 40 different labels ('species 0', ...): a name column taken for the labels, not
    40 classes of one row each: refused, nothing written; classes named by init are accepted."""
    write_csv(Path("n.csv"), ["x", "label"], [[str(i % 7), f"species {i}"] for i in range(40)])
    before = db_dump(db)
    assert_mistake(run("pool", "add", "n.csv"), "40 different values (species 0, species 1, species 2, ...) in 40 rows",
                   "nearly one class per row", "--label-column", "init --name t --classes")  # fmt: skip
    assert db_dump(db) == before
    ok("init", "--name", "n", "--classes", ",".join(f"species {i}" for i in range(40)))
    assert json.loads(ok("--json", "--project", "n", "pool", "add", "n.csv").stdout)["pool_items"] == 40


def test_currency_codes_and_a_typeset_minus_are_read_as_amounts():
    """USD 1,234.00 (a bank's export) and −10.5 (U+2212, Apple's Numbers): amounts, where they
    were an identifier left out and a column refused for mixing text and numbers."""
    texts = ["USD 1,234.00", "1,234.00 USD", "(USD 12)", "USD -5", "\u221210.5", "12 EUR", "ABC 12", "USDX 12", "EUR"]
    assert unit_numbers(texts)[:6].tolist() == [1234.0, 1234.0, -12.0, -5.0, -10.5, 12.0]
    assert np.isnan(unit_numbers(texts)[6:]).all()  # a code that names no currency, or a code alone
    assert decimal_comma_numbers(["12,50 EUR", "EUR 1.234,50", "\u22123,5"]).tolist() == [12.5, 1234.5, -3.5]
