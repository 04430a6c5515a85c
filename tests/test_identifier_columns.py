"""Numeric identifiers under names the id/key rule does not know (`key_columns.numeric_identifier`):
NHANES's seqn, the ESS's idno, a Student or subject column of numbers, patnr, pupilNR; and order
numbers under a bare number word (No, Order, obs) when they count up down the file. Each is left
out of the features with a note naming it and the ways in, unless --features names it. Quantities
under like names stay features: counts (cases, students, SSINum), a life table's number alive, a
cumulative count, a year or a time index counting the rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.key_columns import counts_up, name_words, names_a_number, names_an_entity, numeric_identifier
from cli_checks import ok
from table_files import plan, write_csv

N = 40
SHUFFLED = np.random.default_rng(0).permutation(N)


@pytest.mark.parametrize("name", ["idno", "seqn", "SEQN", "Student", "subject", "Subject", "respondent", "patient", "Person", "Individual",
                                  "case", "serial", "uid", "patnr", "patid", "caseid", "idcase", "studyid", "hhid", "pupilNR", "obs_number",
                                  "Case No", "customer_id", "StudentID", "bib", "Bib", "bib_num", "BibNo", "iso_num", "ISONum"])  # fmt: skip
def test_names_of_a_thing_or_an_identifiers_number(name):
    assert names_an_entity(name)


@pytest.mark.parametrize("name", ["cases", "students", "subjects", "number", "SSINum", "NumMDs", "num_of_adults", "obs", "No", "Order",
                                  "year", "age", "time", "t", "resp", "valid", "paid", "lot", "district", "count", "StreetNum",
                                  "house_number", "iso", "ISO", "bibs", "iso_alpha"])  # fmt: skip
def test_names_that_alone_say_no_identifier(name):
    assert not names_an_entity(name)


def test_number_words_and_the_words_of_a_name():
    assert [names_a_number(n) for n in ("No", "nr", "Number", "Order", "obs", "INDEX", "HouseNum", "count", "cases", "numbers")] == [True] * 7 + [False] * 3
    assert name_words("pupilNR") == ["pupil", "nr"] and name_words("Person_ID") == ["person", "id"] and name_words("obs.number2") == ["obs", "number", "2"]


def test_counting_up_is_rising_mostly_by_ones():
    assert counts_up(np.arange(1, 31.0)) and counts_up(np.asarray([1, 2, 3, 5, 6, 7, 10, 11.0]))  # a few skipped
    assert not counts_up(np.asarray([1, 3, 5, 7, 9, 11.0]))  # rising, never by one: a cumulative count's way
    assert not counts_up(np.asarray([1, 2, 3, 4, 3, 5.0]))  # one step down
    assert not counts_up(np.asarray([5.0]))


def test_the_rule_needs_distinct_whole_numbers():
    run = np.arange(1, N + 1.0)
    assert numeric_identifier("subject", run[SHUFFLED]) and numeric_identifier("No", run)
    assert not numeric_identifier("subject", run[:19])  # under IDENTIFIER_MIN_VALUES values
    assert not numeric_identifier("subject", run + 0.5)  # not whole numbers
    assert not numeric_identifier("Student", np.arange(N) % 5 + 1.0)  # a grade 1-5: repeats
    assert not numeric_identifier("No", run[SHUFFLED])  # a number word over values that do not count up


def table(tmp_path, name, values) -> object:
    rows = [[v, f"{(i * 0.37) % 1:.3f}", "ab"[i % 2]] for i, v in enumerate(values)]
    return write_csv(tmp_path / "t.csv", [name, "x", "label"], rows)


@pytest.mark.parametrize(
    ("name", "values", "counting"),
    [
        ("idno", [str(50013 + 37 * int(i)) for i in SHUFFLED], False),  # the ESS's respondent numbers, shuffled
        ("seqn", [str(233 + 15 * i) for i in range(N)], False),  # NHANES's sequence numbers, sorted, far apart
        ("Student", [str(2 + int(i) * 3) for i in SHUFFLED], False),
        ("patnr", [str(i + 1) for i in range(N)], False),
        ("pupilNR", [str(17001 + 7 * int(i)) for i in SHUFFLED], False),
        ("No", [str(i + 1 + (i > 10) + (i > 30)) for i in range(N)], True),  # an order number, two skipped
        ("Order", [str(398481 + i) for i in range(N)], True),
        ("bib_num", [str(1003 + 4 * int(i)) for i in SHUFFLED], False),  # a race's bib numbers
        ("bib", [str(101 + int(i)) for i in SHUFFLED], False),
        ("iso_num", [str(4 + 8 * int(i)) for i in SHUFFLED], False),  # ISO 3166 numeric codes, one row per country
    ],
)
def test_an_identifier_under_another_name_is_left_out_with_the_ways_in(tmp_path, name, values, counting):
    planned = plan(table(tmp_path, name, values))
    assert [c.name for c in planned.columns] == ["x"] and planned.key_column is None  # never the key unasked
    assert planned.left_out == {name: f"looks like an identifier: {N} different whole numbers in {N} rows"}
    order = ", counting up down the file" if counting else ""
    note = (f"column {name!r} looks like an identifier ({N} different whole numbers in {N} rows{order}): left out of the features; "
            f"pass --key-column {name} if it names the items, or name it in --features to use it as a number")  # fmt: skip
    assert note in planned.notes
    kept = plan(table(tmp_path, name, values), features=(name, "x"))
    assert [c.name for c in kept.columns] == [name, "x"] and not kept.left_out
    keyed = plan(table(tmp_path, name, values), key_column=name)
    assert keyed.key_column == name and [c.name for c in keyed.columns] == ["x"]


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("cases", [str(3 + 7 * int(i)) for i in SHUFFLED]),  # a count of cases, distinct
        ("students", [str(120 + 11 * int(i)) for i in SHUFFLED]),
        ("number", [str(1000 - 12 * i) for i in range(N)]),  # a life table's number alive, falling
        ("SSINum", [str(1495 + 1700 * int(i)) for i in SHUFFLED]),  # recipients of SSI: a count
        ("Number", [str(10 * i * (i + 1)) for i in range(N)]),  # a cumulative count: rising, never by one
        ("obs", [str(5 + 3 * int(i)) for i in SHUFFLED]),  # observed counts beside expected ones
        ("year", [str(1980 + i) for i in range(N)]),  # a series' years: a real trend
        ("t", [str(i + 1) for i in range(N)]),  # a time index counting the rows: noted, kept
        ("subject", [f"{i + 0.5}" for i in SHUFFLED]),  # not whole numbers
        ("Student", [str(i % 9) for i in range(N)]),  # repeats: a group, not one per row
        ("StreetNum", [str(2 + 6 * int(i)) for i in SHUFFLED]),  # an address's house number: distinct here, no identifier
        ("iso_num", [str(4 + 8 * (i % 10)) for i in range(N)]),  # a panel's country codes: repeated
    ],
)
def test_quantities_under_like_names_stay_features(tmp_path, name, values):
    planned = plan(table(tmp_path, name, values))
    assert [c.name for c in planned.columns] == [name, "x"] and not planned.left_out
    assert not any("looks like an identifier" in n for n in planned.notes)


def test_pool_add_leaves_out_a_respondent_number_and_keeps_it_when_asked(cli_db):
    """The reproduction: NHANES's seqn (sorted respondent numbers, 233, 248, ...) was a numeric
    feature; now `pool add` leaves it out, names it under Not features with its reason and the ways
    in, and --features keeps it."""
    rows = [[str(233 + 15 * i), f"{(i * 0.37) % 1:.3f}", "ab"[i % 2]] for i in range(N)]
    write_csv(Path("t.csv"), ["seqn", "x", "label"], rows)
    ok("init", "--name", "t")
    summary = json.loads(ok("--json", "pool", "add", "t.csv").stdout)
    assert summary["not_features"] == {"seqn": f"looks like an identifier: {N} different whole numbers in {N} rows"}
    assert list(summary["columns"]) == ["x"] and any("pass --key-column seqn" in n and "--features" in n for n in summary["notes"])
    ok("init", "--name", "u")
    kept = json.loads(ok("--json", "--project", "u", "pool", "add", "t.csv", "--features", "seqn,x").stdout)
    assert list(kept["columns"]) == ["seqn", "x"] and "seqn" not in (kept.get("not_features") or {})
