"""Whole numbers of 2**53 or more (`activebayes.data.csv_columns.number_code`): written as a
string of digits (a 20-digit account number) they are codes, refused as a feature in one line
that counts their digits; written with a power of ten or a decimal point (6.02214E+23, 1e20,
123456789012345678.0) they are quantities, read as numbers. Through `pool add`, on SQLite and
PostgreSQL; Excel's display of long ids (1.23457E+15) is `test_excel_long_numbers`'."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_columns import number_code
from cli_checks import assert_mistake, db_dump, ok, run
from table_files import write_csv
from test_excel_long_numbers import db, rows_with  # noqa: F401 - db is a fixture

QUANTITIES = ["6.02214E+23", "1.2e+24", "3E22", "6.0221408E+23", "123456789012345678.0", "1e20"]
CODES = ["12345678901234567890", "98765432109876543210", "55555555555555555555", "10203040506070809000"]


@pytest.mark.parametrize(
    ("cells", "code"),
    [
        (["6.02214E+23", "1e20", "12.0"], None),
        (["+12345678901234567890", "7"], "+12345678901234567890"),
        (["6.02214E+23", " 12345678901234567890 "], "12345678901234567890"),  # the first cell written as digits
        (["02134", "1"], "02134"),
        (["02.0", "0.5E1"], None),
        (["9007199254740991", "-9007199254740991"], None),  # below 2**53: exact
    ],
)
def test_number_code(cells, code):
    values = np.array([float(c) for c in cells])
    assert number_code(cells, values) == code


def test_pool_add_reads_large_numbers_in_scientific_notation_as_quantities(db):
    write_csv(Path("q.csv"), ["key", "moles", "x", "label"], rows_with(QUANTITIES))
    added = json.loads(ok("--json", "pool", "add", "q.csv", "--key-column", "key").stdout)
    assert added["pool_items"] == 24 and added["features"] == [2]  # moles and x
    assert not any("moles" in n for n in added["notes"])


def test_pool_add_refuses_a_column_of_long_digit_codes_counting_their_digits(db):
    write_csv(Path("c.csv"), ["key", "account", "x", "label"], rows_with(CODES))
    before = db_dump(db)
    assert_mistake(run("pool", "add", "c.csv", "--key-column", "key"), "'account' holds codes written in digits, not quantities",
                   "'12345678901234567890': 20 digits, more than a float holds exactly", "--ignore account")  # fmt: skip
    assert db_dump(db) == before


def test_a_code_among_quantities_is_named_by_its_own_digits(db):
    write_csv(Path("m.csv"), ["key", "account", "x", "label"], rows_with(["6.02214E+23", "1e20", *CODES[1:2]]))
    assert_mistake(run("pool", "add", "m.csv", "--key-column", "key"), "'98765432109876543210': 20 digits, more than a float holds exactly")
