"""Oracles: simulated truth, a CSV of answers (validated whole before anything is written), and
the terminal prompt (streams injected)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from activebayes.errors import DataError
from activebayes.oracles import Answer, FileOracle, Oracle, PromptOracle, SimulatedOracle, image_art
from activebayes.store import PoolStore


def test_simulated_oracle_from_array_and_mapping():
    oracle = SimulatedOracle(np.array([3, 1, 4]), keys=["a", "b", "c"])
    assert oracle.ask(["c", "a"]) == [Answer("c", 4), Answer("a", 3)]
    assert type(oracle.ask(["b"])[0].value) is int  # numpy scalars become plain values
    assert SimulatedOracle({"x": "dog"}).ask(["x"]) == [Answer("x", "dog")]
    with pytest.raises(DataError, match="no true label for key 'zz'"):
        oracle.ask(["zz"])
    skipping = SimulatedOracle([1], missing="skip")
    assert skipping.ask(["0", "5"]) == [Answer("0", 1), Answer("5", None)]
    assert skipping.ask(["5"])[0].skipped and isinstance(skipping, Oracle)


def test_file_oracle_reads_and_answers(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("key,label\na,cat\nb,dog\na,cat\n\n")
    oracle = FileOracle(path, classes=["cat", "dog"], keys={"a", "b", "c"})
    assert oracle.answers() == [Answer("a", "cat"), Answer("b", "dog")]
    assert oracle.ask(["b", "c"]) == [Answer("b", "dog"), Answer("c", None)]
    partly_filled = tmp_path / "round-2.csv"
    partly_filled.write_text("key,label\na,cat\nb,\nc, \n")
    assert FileOracle(partly_filled, classes=["cat", "dog"]).answers() == [Answer("a", "cat")]
    headerless = tmp_path / "plain.csv"
    headerless.write_text("a,cat\n")
    assert FileOracle(headerless).answers() == [Answer("a", "cat")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("key,label\na,cat\nb\n", "line 3: expected 2 fields"),
        ("key,label\na,cat\nb,dog,x\n", "line 3: expected 2 fields"),
        ("key,label\n,cat\n", "line 2: expected a key before the label"),
        ("key,label\na,cat\nb,cow\n", "line 3: label 'cow' is not one of the classes"),
        ("key,label\na,cat\nzz,dog\n", "line 3: key 'zz' is not an item"),
        ("key,label\na,cat\nb,dog\na,dog\n", "line 4: key 'a' has label 'dog' but line 2 gave 'cat'"),
    ],
)
def test_file_oracle_validates_every_row_before_writing(tmp_path, body, message):
    path = tmp_path / "answers.csv"
    path.write_text(body)
    with PoolStore(f"sqlite:///{tmp_path / 'x.db'}") as store:
        store.create_project("p", classes=["cat", "dog"])
        store.add_items("p", keys=["a", "b"], rows=[0, 1])
        with pytest.raises(DataError, match=message) as err:
            store.record_observations("p", FileOracle(path, classes=["cat", "dog"], keys=store.item_keys("p")).answers())
        assert "answers.csv" in str(err.value)
        assert store.observations("p") == []


def test_file_oracle_missing_file(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        FileOracle(tmp_path / "none.csv")


def test_prompt_oracle_labels_skips_retries_and_quits():
    out = io.StringIO()
    oracle = PromptOracle(classes=range(3), input=io.StringIO("7\n2\ns\nq\n"), output=out)
    answers = oracle.ask(["a", "b", "c", "d"], np.zeros((4, 2)))
    assert answers == [Answer("a", "2"), Answer("b", None), Answer("c", None), Answer("d", None)]
    assert oracle.stop_requested
    text = out.getvalue()
    assert "'7' is not a label" in text and "item 3/4: c" in text and "item 4/4" not in text
    assert "x0" in text and "x1" in text  # a table row is drawn as a table


def test_prompt_oracle_end_of_input_acts_as_quit():
    oracle = PromptOracle(input=io.StringIO("yes\n"), output=io.StringIO())
    assert oracle.ask(["a", "b"]) == [Answer("a", "yes"), Answer("b", None)]
    assert oracle.stop_requested


def test_prompt_table_uses_feature_names():
    out = io.StringIO()
    PromptOracle(feature_names=["age", "height"], input=io.StringIO("s\n"), output=out).ask(["r"], np.array([[31.0, 1.82]]))
    assert "age" in out.getvalue() and "1.82" in out.getvalue() and "31" in out.getvalue()


def test_image_art_half_blocks_and_shades():
    img = np.zeros((28, 28))
    img[0, :] = 1.0  # top row bright: upper half blocks in the first line
    img[3, :] = 1.0  # row 3 is the lower pixel of the second line
    img[4:6, :] = 1.0  # rows 4 and 5 both bright: full blocks in the third line
    lines = image_art(img).split("\n")
    assert len(lines) == 14 and all(len(line) == 28 for line in lines)
    assert lines[0] == "▀" * 28 and lines[1] == "▄" * 28 and lines[2] == "█" * 28 and lines[3] == " " * 28
    small = np.array([[0.0, 1.0], [0.5, 0.25]])
    assert image_art(small).split("\n") == ["  ██", "▒▒░░"]
    digit = np.zeros((1, 28, 28))
    out = io.StringIO()
    PromptOracle(input=io.StringIO("s\n"), output=out).ask(["d"], digit)
    assert "\n" + " " * 28 + "\n" in out.getvalue()  # [1, 28, 28] is drawn as an image
