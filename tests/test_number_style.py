"""How a project writes its numbers (`activebayes.data.number_style`): which writing its recorded
settings imply, a round file's numbers written so (significant digits, the decimal mark), and a
person's regression answer read with either mark, an ambiguous one refused naming both readings,
and with the unit the target was written with, another unit refused naming it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activebayes.data.number_style import AnswerError, answer_number, fixed_number, project_unit, project_writing, same_unit, written_number

COMMA, PLAIN, UNITS = "decimal comma", "plain", "units"


def settings_of(label_written: str | None = None, *columns: str | None) -> dict:
    """Project settings as `pool add` records them: the target's writing and each numeric column's."""
    spec = {"columns": [{"name": f"c{j}", "kind": "numeric", **({"written": w} if w else {})} for j, w in enumerate(columns)]}
    if label_written:
        spec["label_written"] = label_written
    return {"features": spec}


@pytest.mark.parametrize(
    "settings, writing",
    [
        (settings_of(COMMA), COMMA),  # the target written 151,5
        (settings_of(None, None, COMMA), COMMA),  # no target (or a plain one): a feature written 28,0
        (settings_of(UNITS, COMMA), UNITS),  # the target says how, before the features
        (settings_of(None, None, "units"), PLAIN),  # amounts among the features: their commas are thousands
        (settings_of(), PLAIN),
        ({}, PLAIN),  # an array pool: no table spec
        (None, PLAIN),
    ],
)
def test_project_writing_from_the_recorded_settings(settings, writing):
    assert project_writing(settings) == writing


@pytest.mark.parametrize(
    "value, plain, comma",
    [
        (90.12002563476562, "90.12", "90,12"),  # a float32 prediction, without its noise
        (45.55027324372627, "45.5503", "45,5503"),
        (204.1696319580078, "204.17", "204,17"),
        (-3.25, "-3.25", "-3,25"),
        (0.0, "0", "0"),
        (-0.0, "0", "0"),
        (1234567.8, "1234568", "1234568"),  # no exponent below 1e15: the integer part kept whole
        (0.000123456789, "0.000123457", "0,000123457"),
        (1.5e-9, "1.5e-09", "1,5e-09"),
        (2.5e20, "2.5e+20", "2,5e+20"),
        (math.nan, "nan", "nan"),
    ],
)
def test_written_number_keeps_six_significant_digits_and_the_project_s_mark(value, plain, comma):
    assert written_number(value, PLAIN) == written_number(value, UNITS) == plain
    assert written_number(value, COMMA) == comma


def test_fixed_number_writes_a_probability_with_its_decimals():
    assert fixed_number(0.625, 4) == "0.6250" and fixed_number(0.625, 4, COMMA) == "0,6250"


@given(st.floats(min_value=-1e14, max_value=1e14, allow_nan=False).filter(lambda v: v == 0 or abs(v) >= 1e-4))
def test_a_written_number_reads_back_as_an_answer_within_its_digits(value):
    for writing in (PLAIN, COMMA):
        text = written_number(value, writing)
        assert answer_number(text, writing) == pytest.approx(value, rel=5e-6, abs=0)


@pytest.mark.parametrize(
    "text, plain, comma",
    [
        ("151,5", 151.5, 151.5),  # either mark, where one reading only is possible
        ("151.5", 151.5, 151.5),
        (" 151,5 ", 151.5, 151.5),
        ("-0,25", -0.25, -0.25),
        ("1e3", 1000.0, 1000.0),
        ("2,5e-05", 2.5e-05, 2.5e-05),  # as `export` writes a small label where the pool had decimal commas
        ("0,500", 0.5, 0.5),  # a leading 0 is no thousands group
        ("0.500", 0.5, 0.5),
        ("1234,567", 1234.567, 1234.567),  # four digits before the mark: no thousands group
        ("1,500e3", 1500.0, 1500.0),  # nor with an exponent
        ("1,500", None, 1.5),  # the project's own mark: a decimal
        ("1.500", 1.5, None),
        ("1,234.5", 1234.5, "no"),  # thousands grouped as the pool groups them
        ("1,234,567", 1234567.0, "no"),
        ("1.234,5", "no", 1234.5),
        ("1 234,5", "no", 1234.5),
        ("1.234.567", "no", 1234567.0),
        ("$1,200", "no", "no"),  # amounts only in a project whose target was written so
        ("abc", "no", "no"),
        ("nan", "no", "no"),
        ("inf", "no", "no"),
        ("1_000", "no", "no"),
        ("", "no", "no"),
    ],
)
def test_answer_number_reads_either_mark_and_refuses_what_reads_two_ways(text, plain, comma):
    for writing, expected in ((PLAIN, plain), (COMMA, comma)):
        if isinstance(expected, float):
            assert answer_number(text, writing) == expected
            continue
        with pytest.raises(AnswerError) as caught:
            answer_number(text, writing)
        if expected == "no":
            assert caught.value.what == "is not a finite number" and "151,5" in caught.value.fix
        else:  # ambiguous: both readings named, written as the project writes its numbers
            both = ("1500", "1.5") if writing == PLAIN else ("1500", "1,5")
            assert all(w in caught.value.what for w in both) and caught.value.fix == f"write {both[0]} or {both[1]}"


def test_a_project_of_amounts_reads_thousands_commas():
    assert answer_number("1,500", UNITS) == 1500.0 and answer_number("-1,500", UNITS) == -1500.0
    assert answer_number("$1,200", UNITS) == 1200.0 and answer_number("151,5", UNITS) == 151.5
    with pytest.raises(AnswerError):
        answer_number("1.234,5", UNITS)


def test_project_unit_from_the_recorded_settings():
    assert project_unit(settings_of("unit:kg")) == "kg" and project_unit(settings_of("unit:kg/m2", COMMA)) == "kg/m2"
    assert project_unit(settings_of(UNITS)) is None
    assert project_unit(settings_of(None, "unit:kg")) is None  # a feature's unit: not the answer's
    assert project_unit({}) is None and project_unit(None) is None


@pytest.mark.parametrize(
    "text, value",
    [("12.5 kg", 12.5), ("12.5kg", 12.5), (" -3 kg ", -3.0), (".5 kg", 0.5), ("12.5", 12.5), ("151,5", 151.5), ("1.5e3", 1500.0)],
)
def test_an_answer_may_carry_the_project_s_unit(text, value):
    assert answer_number(text, PLAIN, "kg") == value


@pytest.mark.parametrize(
    "text, writing, value",
    [("12,5 kg", COMMA, 12.5), ("12,5kg", COMMA, 12.5), ("-1.234,5 kg", COMMA, -1234.5), ("1 234,5 kg", COMMA, 1234.5),
     ("12,5 kg", PLAIN, 12.5), ("1,234.5 kg", PLAIN, 1234.5), ("1,5e3 kg", COMMA, 1500.0), ("12.5 Kg", PLAIN, 12.5)],
)  # fmt: skip
def test_the_unit_may_follow_any_number_the_answer_could_be_alone(text, writing, value):
    assert answer_number(text, writing, "kg") == value


@pytest.mark.parametrize("text, writing", [("1,500 kg", PLAIN), ("1.500 kg", COMMA)])
def test_a_number_ambiguous_alone_is_ambiguous_with_the_unit(text, writing):
    with pytest.raises(AnswerError) as caught:
        answer_number(text, writing, "kg")
    assert caught.value.what.startswith("could be 1500 or 1")


@pytest.mark.parametrize("written, unit", [("Kg", "kg"), ("kg", "Kg"), ("KW", "kW"), ("KWh", "kWh"), ("mL", "ml"), ("mmol/L", "mmol/l"),
                                           ("L/min", "l/min"), ("L", "l"), ("°c", "°C"), ("kg", "kg")])  # fmt: skip
def test_a_unit_s_letter_case_is_free_where_it_names_no_other_unit(written, unit):
    assert same_unit(written, unit)


@pytest.mark.parametrize("written, unit", [("M", "m"), ("S", "s"), ("MPa", "mPa"), ("Ms", "ms"), ("Mg", "mg"), ("KG", "kg"), ("K", "k"),
                                           ("KB", "kB"), ("Mb", "mb"), ("G", "g"), ("mg", "kg"), ("kg/m", "kg/m2"), ("Lb", "lb")])  # fmt: skip
def test_a_unit_s_letter_case_counts_where_it_may_name_another(written, unit):
    assert not same_unit(written, unit)


@pytest.mark.parametrize("text, written", [("12.5 lb", "lb"), ("12.5 KG", "KG"), ("12.5 kg/m2", "kg/m2"), ("12,5 lb", "lb")])
def test_an_answer_in_another_unit_is_refused_naming_the_project_s(text, written):
    with pytest.raises(AnswerError) as caught:
        answer_number(text, PLAIN, "kg")
    assert str(caught.value) == (f"is in {written}, but this project's numbers are in kg; "
                                 "write the value converted to kg, with or without the unit after it")  # fmt: skip


def test_a_unit_is_read_only_where_the_project_has_one():
    with pytest.raises(AnswerError) as caught:
        answer_number("12.5 kg", PLAIN)
    assert caught.value.what == "is not a finite number"
    with pytest.raises(AnswerError) as caught:
        answer_number("twelve kg", PLAIN, "kg")
    assert caught.value.what == "is not a finite number" and caught.value.fix.endswith("151.5 or 151.5 kg")
    assert answer_number("$1,578.50", UNITS) == 1578.5  # amounts: the target's own writing, as before


def test_the_refusal_is_what_then_how():
    with pytest.raises(AnswerError) as caught:
        answer_number("-1,500", PLAIN)
    assert str(caught.value) == (
        "could be -1500 or -1.5 (a comma between thousands, or a decimal comma, in a project whose numbers are written "
        "with decimal points); write -1500 or -1.5"
    )
    assert isinstance(caught.value, ValueError)  # a DataError: the prompt asks again, the CLI exits 2
