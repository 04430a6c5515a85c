"""Amounts and dates written as text (`activebayes.data.parsed_columns`, `pool add`): prices with
currency signs and thousands separators, shares with %, and ISO dates become numbers and
calendar features, recorded in the spec and applied at every load equal to the scikit-learn
pipeline; values checked against hand-computed days and angles."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from activebayes.data.csv_table import read_csv_table
from activebayes.data.parsed_columns import (
    CALENDAR_PARTS,
    CLOCK_PARTS,
    accounting_note,
    calendar_features,
    date_order,
    decimal_comma_numbers,
    has_times,
    iso_days,
    number_writing,
    percent_scale_note,
    unit_numbers,
    written_days,
    written_numbers,
)
from activebayes.data.table_spec import _object_matrix, apply_table_spec, build_pipeline, fit_table_spec
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from cli_checks import assert_mistake, db_dump, ok, run


def write_csv(path: Path, header: list[str], rows: list[list[str]], delimiter: str = ",") -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_unit_numbers_read_amounts_as_written():
    texts = ["$1,578.97", "53%", "-$1,200", "$-3", "0", "12.5", "€ 3", "£2,000,000", "¥7", "1,234,567.5", "7 %", "12 €", "-4$"]
    assert unit_numbers(texts).tolist() == [1578.97, 53, -1200, -3, 0, 12.5, 3, 2e6, 7, 1234567.5, 7, 12, -4]
    bad = ["1,23", "12,3456", "abc", "+-3", "$", "%", "1.2.3", "XYZ 3", "1e5", "--1", "", "$3%", "€3€"]
    assert np.isnan(unit_numbers(bad)).all()


def test_unit_numbers_read_accounting_negatives_and_spaced_thousands():
    """Accounting writes a negative amount in parentheses (SAP with a minus after it); many locales group thousands with a
    no-break, narrow no-break or thin space, Switzerland with an apostrophe. One kind of mark per
    number; an ASCII space (two numbers in a cell?) or a sign inside parentheses is no amount."""
    texts = ["(1,200)", "($12.50)", "(7)", "(53%)", "12\u00a0345", "1\u202f234\u202f567.5", "1\u2009000", "1'234'567", "2\u2019500",
             "1,234.50-", "5-"]  # fmt: skip
    assert unit_numbers(texts).tolist() == [-1200, -12.5, -7, -53, 12345, 1234567.5, 1000, 1234567, 2500, -1234.5, -5]
    bad = ["(-5)", "((5))", "()", "(abc)", "12 345", "1,234\u00a0567", "12\u00a034", "(1,200", "1'23", "-5-", "$5-", "abc-", "-", "1-2-"]
    assert np.isnan(unit_numbers(bad)).all()
    assert accounting_note(["3", "1,234.50-", "(7)"]) == "; '1,234.50-' with a minus after it is negative, as accounting writes it"
    assert accounting_note(["(7)"]) == "; '(7)' in parentheses is negative, as accounting writes it" and accounting_note(["3", "-4"]) == ""


def test_decimal_comma_accounting_negatives_are_read_in_a_semicolon_file(tmp_path):
    """(1.234,50) in a ;-file, as a German ledger writes a negative balance: −1234.5, with the note,
    and so at every load."""
    assert decimal_comma_numbers(["(1.234,50)", "(3,5)", "1.234,50-"]).tolist() == [-1234.5, -3.5, -1234.5]  # SAP: the minus after
    assert np.isnan(decimal_comma_numbers(["(-3,5)", "(3,5", "((3,5))"])).all()
    rows = [[str(i), "(1.234,50)" if i % 3 == 0 else f"{i}.500,75", "ab"[i % 2]] for i in range(24)]
    path = write_csv(tmp_path / "konto.csv", ["id", "saldo", "label"], rows, delimiter=";")
    p = plan_table(read_csv_table(path), TableOptions(label_column="label"))
    assert p.columns[0].written == "decimal comma" and p.columns[0].numbers[:3].tolist() == [-1234.5, 1500.75, 2500.75]
    assert any("'saldo' is written with decimal commas" in n and "'(1.234,50)' in parentheses is negative" in n for n in p.notes)
    x, names = apply_table_spec(read_csv_table(path), fit_table_spec(p, np.arange(24)))
    values = p.columns[0].numbers
    np.testing.assert_allclose(x[:, names.index("saldo")], (values - values.mean()) / values.std(), rtol=1e-5)


def test_percentages_beside_shares_of_one_get_a_note(tmp_path):
    """"53%" beside "0.5": read as written (53 and 0.5), with a note that 0.5 is not 50 %; no note
    when a plain number is over 1 (7 beside 12%), when every % is within 1 %, or with no plain one."""
    note = percent_scale_note("share", ["53%", "12%"], np.array([0.0, 0.5, 0.25]))
    assert note == ("column 'share' writes some values with % ('53%') and others as plain numbers no bigger than 1 (0.5): each is read as "
                    "written, 0.5 not 50 %; if the plain ones are shares of 1, write them as percentages")  # fmt: skip
    assert percent_scale_note("p", ["12%"], np.array([0.5, 7.0])) is None
    assert percent_scale_note("p", ["0.5%"], np.array([0.5])) is None
    assert percent_scale_note("p", ["12%"], np.zeros(0)) is None and percent_scale_note("p", ["12%"], np.zeros(3)) is None
    rows = [[str(i), ("53%", "0.5", "12%", "0.25")[i % 4], "ab"[i % 2]] for i in range(24)]
    p = plan_table(read_csv_table(write_csv(tmp_path / "s.csv", ["id", "share", "label"], rows)), TableOptions(label_column="label"))
    assert p.columns[0].numbers[:4].tolist() == [53, 0.5, 12, 0.25]
    assert any(n.startswith("column 'share' writes some values with % ('53%')") for n in p.notes)


def test_a_column_of_accounting_negatives_and_spaced_thousands_is_read_as_numbers(tmp_path):
    """A comma-delimited sheet whose amounts are "(1,234)" beside "1,500", and "12 345" with
    no-break spaces: numbers ("units"), with a note naming the parentheses, applied alike at every
    load; before, the first was refused and the second left out as an identifier."""
    rows = [[str(i), f"({i},234)" if i % 3 == 0 else f"{i},500", f"{i}\u00a0{100 + i}", "ab"[i % 2]] for i in range(1, 31)]
    path = write_csv(tmp_path / "ledger.csv", ["id", "balance", "spent", "label"], rows)
    p = plan_table(read_csv_table(path), TableOptions(label_column="label", categorical="auto", missing="impute"))
    balance, spent = (next(c for c in p.columns if c.name == n) for n in ("balance", "spent"))
    assert (balance.kind, balance.written, spent.kind, spent.written) == ("numeric", "units", "numeric", "units")
    assert balance.numbers[:3].tolist() == [1500, 2500, -3234] and spent.numbers[:2].tolist() == [1101, 2102]
    assert any("'balance' holds amounts written as text" in n and "'(3,234)' in parentheses is negative" in n for n in p.notes)
    spec = fit_table_spec(p, np.arange(30))
    x, names = apply_table_spec(read_csv_table(path), spec)
    column = names.index("balance")
    values = np.asarray([-float(r[1][1:-1].replace(",", "")) if r[1].startswith("(") else float(r[1].replace(",", "")) for r in rows])
    np.testing.assert_allclose(x[:, column], (values - values.mean()) / values.std(), rtol=1e-5)


def test_decimal_comma_numbers_read_the_european_way():
    texts = ["3,5", "-1.234,5", "1.234.567", "7", "+0,25", "1.234", "5\u202f180,37", "1\u00a0234\u00a0567", "12 345,5", "12,50 €",
             "€ 3,5", "53,5 %", "-7 $"]  # fmt: skip
    assert decimal_comma_numbers(texts).tolist() == [3.5, -1234.5, 1234567, 7, 0.25, 1234, 5180.37, 1234567, 12345.5, 12.5, 3.5, 53.5, -7]
    bad = ["3.5", "1,2,3", "1.23,4", "abc", "", ",5", "1.234 567", "12 34,5", "1 2345", "€3,5 €", "3,5%%"]
    assert np.isnan(decimal_comma_numbers(bad)).all()


def test_a_semicolon_file_with_decimal_commas_is_read_as_numbers(tmp_path):
    """x: 3,5 / 1.234,5 / 7 in a ;-file (1.234 there is a thousand); in a ,-file "1,100" is a
    thousands separator; one value that is no number written so is refused naming its line."""
    rows = [[("3,5", "1.234,5", "7", "1.234")[i % 4], f"0,{i}", "ab"[i % 2]] for i in range(24)]
    f = write_csv(tmp_path / "e.csv", ["x", "y", "label"], rows, delimiter=";")
    p = plan_table(read_csv_table(f), TableOptions(label_column="label"))
    assert [(c.kind, c.written) for c in p.columns] == [("numeric", "decimal comma")] * 2
    assert p.columns[0].numbers[:4].tolist() == [3.5, 1234.5, 7, 1234] and p.columns[1].numbers[:3].tolist() == [0, 0.1, 0.2]
    assert "column 'x' is written with decimal commas ('3,5'): read as numbers" in p.notes
    spec = fit_table_spec(p, np.arange(24))
    x, _ = apply_table_spec(p.table, spec)
    matrix = _object_matrix(p)
    np.testing.assert_allclose(x, build_pipeline(p).fit(matrix).transform(matrix), atol=1e-5)
    assert spec["columns"][0]["written"] == "decimal comma"
    quoted = write_csv(tmp_path / "q.csv", ["x", "label"], [[f"1,{100 + i}", "ab"[i % 2]] for i in range(24)])
    assert plan_table(read_csv_table(quoted), TableOptions(label_column="label")).columns[0].numbers[:2].tolist() == [1100, 1101]
    rows[5][0] = "1.2.3"
    bad = write_csv(tmp_path / "b.csv", ["x", "y", "label"], rows, delimiter=";")
    with pytest.raises(DataError, match=r"line 7: column 'x' is written with a decimal comma \('3,5'\) but holds '1.2.3', not a number"):
        plan_table(read_csv_table(bad), TableOptions(label_column="label"))


@settings(max_examples=200, deadline=None)
@given(st.decimals(min_value=-1e9, max_value=1e9, places=2, allow_nan=False, allow_infinity=False))
def test_amounts_and_decimal_commas_round_trip(value):
    """Any amount written with $ and thousands separators, or the European way, reads back as itself."""
    us = f"{value:,.2f}"
    european = us.replace(",", "_").replace(".", ",").replace("_", ".")
    dollars = ("-$" + us[1:]) if us.startswith("-") else "$" + us
    assert unit_numbers([us, dollars, us + "%"]).tolist() == [float(value)] * 3
    assert decimal_comma_numbers([european]).tolist() == [float(value)]


@settings(max_examples=200, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2100, 12, 31)))
def test_iso_days_round_trip(moment):
    """Python's own ISO text of any date and time reads back as its days since 1970-01-01."""
    moment = moment.replace(microsecond=0)
    days = (moment - dt.datetime(1970, 1, 1)).total_seconds() / 86400
    assert iso_days([moment.isoformat(), moment.isoformat(sep=" ")]) == pytest.approx([days, days], abs=1e-9)
    assert iso_days([moment.date().isoformat()]).tolist() == [float(math.floor(days))]


def test_number_writing_and_rewriting_of_a_label_column():
    assert number_writing(["1.5", "2", ""], ";") is None  # plain numbers
    assert number_writing(["3,5", "1.234,5", ""], ";") == "decimal comma" and number_writing(["3,5"], ",") is None
    assert number_writing(["$1,200", "53%", "7"], ",") == "units" and number_writing(["$1,200", "free"], ",") is None
    assert written_numbers(["3,5", "1.234", "", "x"], "decimal comma") == ["3.5", "1234", "", "x"]
    assert written_numbers(["$1,200", "-$2.25"], "units") == ["1200", "-2.25"] and written_numbers(["a"], None) == ["a"]


def test_iso_days_against_hand_computed_dates():
    texts = ["1970-01-01", "1970-01-02T12:00", "2000-03-01", "2024/03/04", "2024-3-4", "2024-03-04 06:00:00Z",
             "1970-01-01T01:00+01:00", "1970-01-01T00:00:00.5-0030", "1969-12-31"]  # fmt: skip
    # 2000-03-01: 30 years of 365 days, 7 leap days (72, 76, ..., 96), then 31 + 29 days of 2000
    expected = [0, 1.5, 30 * 365 + 7 + 60, 19786, 19786, 19786.25, 0, (0.5 + 1800) / 86400, -1]
    assert iso_days(texts) == pytest.approx(expected, abs=1e-9)
    bad = ["2024-02-30", "2024-13-01", "01/03/2024", "2024-03-01T25:00", "2024-03", "20240301", "2024-03/01", "yesterday"]
    assert np.isnan(iso_days(bad)).all()
    assert has_times(["2024-03-04", "2024-03-04 06:00"]) and not has_times(["2024-03-04", "2024/03/05"])


def test_calendar_features_on_known_days():
    """2024-03-04 was a Monday (weekday 0), 1970-01-01 a Thursday (3); 1 January is season 0; noon
    is half a turn of the clock."""
    monday, thursday = 19786.0, 0.0
    features = calendar_features(np.asarray([monday, thursday + 0.5, 19723.0]), clock=True)  # 19723: 2024-01-01
    assert features.shape == (3, len(CALENDAR_PARTS) + len(CLOCK_PARTS))
    assert features[:, 0].tolist() == [monday, 0.5, 19723.0]
    assert features[0, 3:5] == pytest.approx([0, 1], abs=1e-12)  # Monday
    turn = 2 * math.pi * 3 / 7
    assert features[1, 3:5] == pytest.approx([math.sin(turn), math.cos(turn)])  # Thursday
    assert features[2, 1:3] == pytest.approx([0, 1], abs=1e-12)  # 1 January
    season = 2 * math.pi * (monday - 19723.0) / 365.25
    assert features[0, 1:3] == pytest.approx([math.sin(season), math.cos(season)])
    assert features[1, 5:7] == pytest.approx([0, -1], abs=1e-12) and features[0, 5:7] == pytest.approx([0, 1], abs=1e-12)
    assert calendar_features(np.asarray([0.0])).shape == (1, 5)


def shop(path: Path, n: int = 60) -> Path:
    """date (ISO; a gap every 13th row), at (dates with times), price ($, thousands), share (%, and
    a plain 0), city, label."""
    rows = []
    for i in range(n):
        date = "" if i % 13 == 4 else f"2024-{1 + i % 12:02d}-{1 + (7 * i) % 28:02d}"
        rows.append([date, f"2023-06-{1 + i % 30:02d} {i % 24:02d}:{(11 * i) % 60:02d}", f"${(37 * i) % 2900 + 1:,}.{i % 100:02d}",
                     "0" if i % 9 == 0 else f"{(13 * i) % 100}%", ("Oslo", "Bergen")[i % 2], "ab"[(i // 2) % 2]])  # fmt: skip
    return write_csv(path, ["date", "at", "price", "share", "city", "label"], rows)


def test_dates_and_amounts_are_planned_recorded_and_equal_the_pipeline(tmp_path):
    p = plan_table(read_csv_table(shop(tmp_path / "s.csv")), TableOptions(label_column="label", categorical="auto", missing="impute"))
    assert [(c.name, c.kind, c.written, c.clock) for c in p.columns] == [
        ("date", "date", None, False), ("at", "date", None, True), ("price", "numeric", "units", False),
        ("share", "numeric", "units", False), ("city", "categorical", None, False)]  # fmt: skip
    assert p.columns[2].numbers[:3].tolist() == [1.0, 38.01, 75.02] and p.columns[3].numbers[:3].tolist() == [0, 13, 26]
    assert p.columns[0].numbers[0] == 19723 and np.isnan(p.columns[0].numbers[4])  # 2024-01-01, a gap
    assert any("'price' holds amounts written as text ('$1.00')" in n for n in p.notes)
    assert any("'at' holds dates" in n and "time of day" in n for n in p.notes)
    pool_rows = np.arange(0, 60, 3)
    spec = fit_table_spec(p, pool_rows)
    assert json.loads(json.dumps(spec)) == spec
    x, names = apply_table_spec(p.table, spec)
    matrix = _object_matrix(p)
    reference = build_pipeline(p).fit(matrix[pool_rows]).transform(matrix)
    assert x.shape == reference.shape == (60, len(names))
    np.testing.assert_allclose(x, reference, atol=1e-5)
    assert names[:7] == ["date (days)", "date (season sin)", "date (season cos)", "date (weekday sin)", "date (weekday cos)",
                         "date (missing)", "at (days)"]  # fmt: skip
    assert names[11:] == ["at (time sin)", "at (time cos)", "price", "share", "city=Bergen", "city=Oslo"]
    date = spec["columns"][0]
    assert date["kind"] == "date" and date["clock"] is False and len(date["mean"]) == 5 and date["indicator"]
    assert date["fill"] == pytest.approx(np.nanmedian(p.columns[0].numbers[pool_rows]))
    assert x[:, :5].mean(axis=0)[0] != 0 and x[pool_rows][:, :5].mean(axis=0) == pytest.approx(np.zeros(5), abs=1e-5)

    changed = write_csv(tmp_path / "c.csv", ["date", "at", "price", "share", "city", "label"],
                        [["2024-01-05", "2023-06-01 10:00", "$3", "4%", "Oslo", "a"], ["tomorrow", "2023-06-01 10:00", "$3", "4%", "Oslo", "a"]])  # fmt: skip
    with pytest.raises(DataError, match=r"line 3: column 'date' is not a date written as the others are \('tomorrow'\); write it as YYYY-MM-DD"):
        apply_table_spec(read_csv_table(changed), spec)
    priced = write_csv(tmp_path / "d.csv", ["date", "at", "price", "share", "city", "label"],
                       [["2024-01-05", "2023-06-01 10:00", "free", "4%", "Oslo", "a"]])  # fmt: skip
    with pytest.raises(DataError, match=r"line 2: column 'price' is not a number \('free'\)"):
        apply_table_spec(read_csv_table(priced), spec)


def test_what_is_not_an_amount_or_a_date_stays_as_before(tmp_path):
    """Dates beside plain numbers are refused naming the first number."""
    mixed = write_csv(tmp_path / "m.csv", ["x", "label"], [["2024-01-01" if i % 3 else str(i), "ab"[i % 2]] for i in range(30)])
    with pytest.raises(DataError, match=r"line 2: column 'x' holds dates \('2024-01-01'\) but also '0', which is not one \(10 of 30"):
        plan_table(read_csv_table(mixed), TableOptions(label_column="label", categorical="auto"))  # not 21 levels


def test_date_order_is_settled_by_a_day_over_twelve():
    assert date_order(["8/18/2024", "3/1/2024"]) == "mdy" and date_order(["18/8/2024", "3/1/2024"]) == "dmy"
    assert date_order(["1.2.2024"]) == "dmy"  # dots: day first, as in Germany
    assert date_order(["3/1/2024", "04-02-2024"]) == "either"  # no day over 12: never guessed
    assert date_order(["13/1/2024", "1/13/2024"]) == "mixed"  # both orders: refused, naming one of each
    assert date_order(["13/13/2024", "3/14/2024"]) == "mdy"  # a value that is no date settles nothing
    assert date_order(["2/30/2024", "x", "2024-03-01"]) is None


def test_written_days_against_hand_computed_dates():
    """31/12/2024 is 2024-12-31, 20088 days after 1970-01-01; 2:30 PM is 14:30; 12:00 AM is midnight."""
    day = 20088.0
    assert written_days(["31/12/2024", "31.12.2024", "31-12-2024", "31/12/2024 14:30", "1/1/2025"], "dmy").tolist() == [
        day, day, day, day + 14.5 / 24, day + 1]  # fmt: skip
    assert written_days(["12/31/2024", "12/31/2024 2:30 PM", "12/31/2024 12:00 AM", "12/31/2024 12:15 p.m.", "12/31/2024, 06:00:30"], "mdy") == (
        pytest.approx([day, day + 14.5 / 24, day, day + 12.25 / 24, day + (6 * 3600 + 30) / 86400]))  # fmt: skip
    assert np.isnan(written_days(["31.12.2024", "2/30/2024", "12.31.24", "13:00 PM", "12/31/2024 13:00 PM", "2024-12-31"], "mdy")).all()
    assert written_days(["12/31/24", "12/31/99"], "mdy").tolist() == [day, day - 25 * 365 - 7]  # spreadsheets' short dates: 2024, 1999
    assert written_days(["2024-12-31"], "ymd").tolist() == [day] and np.isnan(written_days(["31/12/2024"], "ymd")).all()
    assert has_times(["31/12/2024 14:30"]) and not has_times(["31/12/2024"])


@settings(max_examples=200, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2100, 12, 31)), st.sampled_from(["/", "-", "."]))
def test_day_first_and_month_first_dates_round_trip(moment, sep):
    """Any date and minute written day-first (any separator) or month-first (not with dots) reads
    back as its days since 1970-01-01, with a 24-hour or a 12-hour clock."""
    moment = moment.replace(second=0, microsecond=0)
    days = (moment - dt.datetime(1970, 1, 1)).total_seconds() / 86400
    clock, twelve = f"{moment.hour}:{moment.minute:02d}", moment.strftime("%I:%M %p")
    dmy = f"{moment.day}{sep}{moment.month}{sep}{moment.year:04d}"
    assert written_days([f"{dmy} {clock}", f"{dmy} {twelve}"], "dmy") == pytest.approx([days, days], abs=1e-9)
    if sep != ".":
        mdy = f"{moment.month:02d}{sep}{moment.day:02d}{sep}{moment.year:04d}"
        assert written_days([f"{mdy} {clock}", mdy], "mdy") == pytest.approx([days, math.floor(days)], abs=1e-9)


def test_spreadsheet_dates_are_planned_recorded_and_equal_the_pipeline(tmp_path):
    """Month-first dates as Excel in the US saves them (with times), day-first ones with a gap:
    read in their order, with a note, recorded as written, applied equal to the pipeline; a later
    value written the other way is refused naming it; dates that no day settles stay categories, with
    a note (or, too many to be categories, are refused with the way to write them as ISO dates)."""
    rows = [[f"{1 + i % 12}/{1 + (5 * i) % 28}/2024 {1 + i % 12}:{i % 60:02d} {'AP'[i % 2]}M", "" if i == 3 else f"{1 + (3 * i) % 28}.{1 + i % 12}.2023",
             "ab"[i % 2]] for i in range(40)]  # fmt: skip
    f = write_csv(tmp_path / "x.csv", ["at", "day", "label"], rows)
    p = plan_table(read_csv_table(f), TableOptions(label_column="label", missing="impute"))
    assert [(c.kind, c.written, c.clock) for c in p.columns] == [("date", "mdy", True), ("date", "dmy", False)]
    assert p.columns[1].numbers[0] == pytest.approx((dt.date(2023, 1, 1) - dt.date(1970, 1, 1)).days) and np.isnan(p.columns[1].numbers[3])
    assert p.columns[0].numbers[1] == pytest.approx((dt.datetime(2024, 2, 6, 14, 1) - dt.datetime(1970, 1, 1)).total_seconds() / 86400)
    assert "column 'at' holds dates ('1/1/2024 1:00 AM', month first): read as days since 1970-01-01, with the season, weekday and time of day" in p.notes
    assert any("'day' holds dates ('1.1.2023', day first)" in n for n in p.notes)
    spec = fit_table_spec(p, np.arange(40))
    assert [c.get("written") for c in spec["columns"]] == ["mdy", "dmy"]
    x, _ = apply_table_spec(p.table, spec)
    matrix = _object_matrix(p)
    np.testing.assert_allclose(x, build_pipeline(p).fit(matrix).transform(matrix), atol=1e-5)
    rows[7][0] = "2024-02-06 14:01"
    with pytest.raises(DataError, match=r"line 9: column 'at' is not a date written as the others are \('2024-02-06 14:01'\); write it as MM/DD/YYYY"):
        apply_table_spec(read_csv_table(write_csv(tmp_path / "y.csv", ["at", "day", "label"], rows)), spec)
    either = write_csv(tmp_path / "e.csv", ["when", "x", "label"], [[f"{1 + i % 12:02d}/{1 + i // 12:02d}/2024", str(i % 7), "ab"[i % 2]] for i in range(60)])
    unread = plan_table(read_csv_table(either), TableOptions(label_column="label", categorical="auto"))
    assert [c.name for c in unread.columns] == ["x"] and list(unread.left_out) == ["when"]
    assert any(n.startswith("column 'when' looks like an identifier (60 different values in 60 rows): left out") and n.endswith(
               "since its values are dates that read as well day-first as month-first ('01/01/2024'; no day is over 12), writing them as "
               "YYYY-MM-DD reads them as dates") for n in unread.notes)  # fmt: skip
    mixed = write_csv(tmp_path / "m.csv", ["when", "label"], [["31/12/2024" if i == 3 else "12/31/2024" if i == 7 else "01/02/2024", "ab"[i % 2]]
                                                            for i in range(30)])  # fmt: skip
    with pytest.raises(DataError, match=r"column 'when' holds dates written day first \('31/12/2024', line 5\) and month first "
                                         r"\('12/31/2024', line 9\); write them all one way, best as YYYY-MM-DD"):  # fmt: skip
        plan_table(read_csv_table(mixed), TableOptions(label_column="label", categorical="auto"))
    iso = write_csv(tmp_path / "i.csv", ["when", "label"], [["31/12/2024" if i == 4 else f"2024-01-{1 + i:02d}", "ab"[i % 2]] for i in range(30)])
    with pytest.raises(DataError, match=r"line 6: column 'when' holds dates \('2024-01-01'\) but also '31/12/2024', a date written another "
                                         r"way; write them all one way, best as YYYY-MM-DD$"):  # fmt: skip
        plan_table(read_csv_table(iso), TableOptions(label_column="label", categorical="auto"))
    colours = write_csv(tmp_path / "c.csv", ["colour", "label"], [[("red", "blue", "01/02/2024")[i % 3], "ab"[i % 2]] for i in range(30)])
    assert not any("day-first" in n for n in plan_table(read_csv_table(colours), TableOptions(label_column="label", categorical="auto")).notes)
    few = write_csv(tmp_path / "f.csv", ["visit", "label"], [[f"0{1 + i % 3}/02/2024", "ab"[i % 2]] for i in range(40)])
    p = plan_table(read_csv_table(few), TableOptions(label_column="label", categorical="auto"))
    assert p.columns[0].kind == "categorical" and p.columns[0].levels == ["01/02/2024", "02/02/2024", "03/02/2024"]  # as before: never guessed
    assert ("column 'visit': its values are dates that read as well day-first as month-first ('01/02/2024'; no day is over 12), so they "
            "are taken as categories; write them as YYYY-MM-DD to read them as dates") in p.notes


def test_a_date_or_amount_column_with_a_stray_value_names_it(tmp_path):
    """Mostly dates (or prices) and one value that is none: one line naming it and the way out,
    not a column of categories; a column of letters with a few numbers is categories as before."""
    dates = [["2024-02-30" if i == 6 else f"2024-01-{1 + i % 28:02d}", "ab"[i % 2]] for i in range(30)]
    f = write_csv(tmp_path / "d.csv", ["when", "label"], dates)
    with pytest.raises(DataError, match=r"line 8: column 'when' holds dates \('2024-01-01'\) but also '2024-02-30', which is not one "
                                         r"\(1 of 30 values\); correct it, or pass --na-values"):
        plan_table(read_csv_table(f), TableOptions(label_column="label", categorical="auto"))
    prices = [["unknown" if i in (3, 9) else ("12" if i == 0 else f"${i},000"), "ab"[i % 2]] for i in range(30)]
    g = write_csv(tmp_path / "p.csv", ["price", "label"], prices)
    with pytest.raises(DataError, match=r"line 5: column 'price' holds amounts \('\$1,000'\) but also 'unknown', which is not one \(2 of 30"):
        plan_table(read_csv_table(g), TableOptions(label_column="label", categorical="auto"))
    marked = plan_table(read_csv_table(g), TableOptions(label_column="label", categorical="auto", missing="impute", na_values=("unknown",)))
    assert marked.columns[0].written == "units" and marked.columns[0].numbers[:2].tolist() == [12, 1000]


def test_regression_labels_written_like_the_features(cli_db):
    """A ;-file whose target has decimal commas and a ,-file whose prices carry $ and thousands:
    `pool add` reads both targets as numbers, and the truth answers with the numbers."""
    write_csv(Path("eu.csv"), ["id", "x", "price"], [[f"k{i}", f"{i},5", f"{3 * i},25"] for i in range(20)], delimiter=";")
    write_csv(Path("us.csv"), ["id", "x", "price"], [[f"k{i}", str(i), f"${100 + i},500"] for i in range(20)])
    for name, file, first in (("eu", "eu.csv", 0.25), ("us", "us.csv", 100500)):
        ok("init", "--name", name, "--task", "regression")
        added = ok("--project", name, "pool", "add", file, "--label-column", "price")
        assert f"the labels in 'price' are {'written with decimal commas' if name == 'eu' else 'amounts written as text'}" in " ".join(added.output.split())
        ok("--project", name, "round", "--oracle", "truth", "--k", "3", "--device", "cpu")
        from activebayes.store import PoolStore

        with PoolStore(cli_db, create=False) as store:
            _, keys, values = store.labels(name)
        assert len(keys) == 3 and all(float(v) == pytest.approx(first + (3 if name == "eu" else 1000) * int(k[1:])) for k, v in zip(keys, values))


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t")
    return cli_db


def test_pool_add_and_a_round_on_dates_and_amounts(db):
    """The CLI says how each column was read, a round runs on the features, and a file whose date
    column no longer parses is refused at the next load in one line, leaving the database as it was."""
    shop(Path("s.csv"))
    added = ok("--json", "pool", "add", "s.csv", "--label-column", "label", "--test-fraction", "0.25")
    summary = json.loads(added.stdout)
    assert summary["features"] == [17]  # date 5 and its gap indicator, at 7, price, share, city 2
    said = " ".join(added.stderr.split())
    assert "column 'date' holds dates ('2024-01-01'): read as days since 1970-01-01, with the season and weekday" in said
    assert "column 'share' holds amounts written as text" in said
    ok("round", "--oracle", "truth", "--k", "4", "--device", "cpu")
    rows = list(csv.reader(Path("s.csv").open(newline="")))
    rows[3][0] = "someday"
    write_csv(Path("s.csv"), rows[0], rows[1:])
    before = db_dump(db)
    assert_mistake(run("round", "--oracle", "truth", "--k", "4", "--device", "cpu"), "s.csv")
    assert db_dump(db) == before
