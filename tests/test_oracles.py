"""Oracles: simulated truth, a CSV of answers (validated whole before anything is written), and
the terminal prompt (streams injected)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from activebayes.errors import DataError
from activebayes.oracles import Answer, FileOracle, Oracle, PromptOracle, SimulatedOracle, image_art
from activebayes.oracles.prompt import name_value_cells
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


def test_truth_oracle_answers_from_a_projects_held_back_labels(tmp_path):
    from types import SimpleNamespace

    from activebayes.data import Dataset, label_text
    from activebayes.oracles import NoTruthError, truth_oracle

    class Store:  # what truth_oracle reads of a PoolStore: the settings, and the asked items' rows
        def __init__(self, settings):
            self.settings = settings

        def project(self, name):
            return SimpleNamespace(settings=self.settings)

        def items(self, name, *, keys):
            found = [k for k in ("a", "b", "c") if k in keys]
            return np.arange(len(found)), np.asarray([ord(k) - ord("a") for k in found]), found

    labelled = Dataset(np.zeros((3, 2)), np.array([3.0, 1.0, 2.5]), ["a", "b", "c"], tmp_path / "x.npz", "npz")
    assert truth_oracle(Store({}), "p", labelled).ask(["a", "c"]) == [Answer("a", "3"), Answer("c", "2.5")]
    assert [label_text(v) for v in (np.int64(3), 3.0, " 3", "cat")] == ["3", "3", "3", "cat"]
    unlabelled = Dataset(np.zeros((3, 2)), None, None, tmp_path / "x.npy", "npy")
    with pytest.raises(NoTruthError, match="project 'p' has no held-back truth"):
        truth_oracle(Store({}), "p", unlabelled)
    truth = tmp_path / "truth.csv"
    truth.write_text("key,label\n0,a\n1,b\n2,a\n")
    with pytest.raises(DataError, match="truth file .* is missing or changed"):
        truth_oracle(Store({"truth_path": str(truth), "truth_sha256": "0" * 64}), "p", unlabelled)
    from activebayes.data import sha256_file

    oracle = truth_oracle(Store({"truth_path": str(truth), "truth_sha256": sha256_file(truth)}), "p", unlabelled)
    assert oracle.ask(["1", "2"]) == [Answer("1", "b"), Answer("2", "a")]


def test_truth_oracle_looks_up_only_the_asked_items_of_a_store(tmp_path):
    """A store project's truth: the asked keys' rows come from the store, the labels from y at
    those rows (items added in another order than the rows, a test split, text labels padded)."""
    from activebayes.data import Dataset
    from activebayes.oracles import truth_oracle

    n = 1000
    keys = [f"k{i:04d}" for i in range(n)]
    y = np.asarray([f" {i % 7} " for i in range(n)])  # label_text strips
    np.savez(tmp_path / "x.npz", x=np.zeros((n, 1)))  # the project's data file (its sha256 is recorded)
    store = PoolStore(f"sqlite:///{tmp_path / 'truth.db'}")
    store.create_project("p", classes=range(7))
    order = np.random.default_rng(0).permutation(n)
    store.import_pool("p", tmp_path / "x.npz", pool_rows=order[:900], pool_keys=[keys[i] for i in order[:900]],
                      test_rows=order[900:], test_keys=[keys[i] for i in order[900:]])  # fmt: skip
    oracle = truth_oracle(store, "p", Dataset(np.zeros((n, 1)), y, keys, tmp_path / "x.npz", "npz"))
    asked = [keys[5], keys[999], keys[int(order[950])], keys[5]]
    assert oracle.ask(asked) == [Answer(k, str(int(k[1:]) % 7)) for k in asked]
    with pytest.raises(DataError, match="no true label for key 'nope'"):
        oracle.ask([keys[1], "nope"])
    store.close()


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
        ("key,label\na,cat\nb,cow\n", "line 3: label 'cow' is not one of the classes cat, dog; correct line 3 and run"),
        ("key,label\na,cat\nb,?\n", "line 3: label '\\?' is not one of the classes cat, dog; leave the label empty on line 3 to skip the item"),
        ("key,label\na,N/A\n", "line 2: label 'N/A' is not one of the classes cat, dog; leave the label empty on line 2 to skip the item"),
        ("key,label\na,cat\nb,dogg\n", "line 3: label 'dogg' is not one of the classes cat, dog; did you mean 'dog'\\? correct line 3"),
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


def test_prompt_oracle_shows_hints_under_their_items():
    out = io.StringIO()
    answers = PromptOracle(classes="ab", input=io.StringIO("a\nb\n"), output=out, hints={"y": "b (0.91)"}).ask(["x", "y"])
    assert answers == [Answer("x", "a"), Answer("y", "b")]
    assert "item 1/2: x\nlabel" in out.getvalue() and "item 2/2: y\nmodel: b (0.91)\nlabel" in out.getvalue()


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


# ---- FileOracle: what a spreadsheet writes -------------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [
        "\ufeffkey,label\na,cat\nb,dog\n".encode(),  # Excel "CSV UTF-8": a byte-order mark
        b"id;answer\na;cat\nb;dog\n",  # semicolons, other header names
        b"Label\tItem\tnote\ncat\ta\t\ndog\tb\tsure\n",  # tabs, any order and case, extra column
        "key\tlabel\r\na\tcat\r\nb\tdog\r\n".encode("utf-16"),  # Excel "Unicode Text"
        b'comment,key,label\n"one, two",a,cat\n"x",b,dog\n',  # a quoted separator in an ignored column
        b"a,cat\nb,dog\n",  # no header
    ],
)
def test_file_oracle_reads_spreadsheet_forms(tmp_path, raw):
    path = tmp_path / "answers.csv"
    path.write_bytes(raw)
    oracle = FileOracle(path, classes=["cat", "dog"], keys={"a", "b"})
    assert oracle.labels == {"a": "cat", "b": "dog"}
    first = 1 if oracle.header is None else 2
    assert oracle.lines == {"a": first, "b": first + 1}


def test_file_oracle_integers_written_as_decimals(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("key,label\n26.0,3.0\n7,1.00\n8.,2\n")
    oracle = FileOracle(path, classes=range(5), keys={"26", "7", "8", "9.0"})
    assert oracle.labels == {"26": "3", "7": "1", "8": "2"}
    path.write_text("key,label\n9.0,1\n")  # a key that really is "9.0" stays itself
    assert FileOracle(path, classes=range(5), keys={"9", "9.0"}).labels == {"9.0": "1"}
    path.write_text("key,label\n26.5,1\n")
    with pytest.raises(DataError, match="line 2: key '26.5' is not an item"):
        FileOracle(path, classes=range(5), keys={"26"})
    path.write_text("key,label\n26,3.5\n")
    with pytest.raises(DataError, match="line 2: label '3.5' is not one of the classes"):
        FileOracle(path, classes=range(5), keys={"26"})
    path.write_text("key,label\n26.0,3.0\n")  # without keys or classes nothing is guessed
    assert FileOracle(path).labels == {"26.0": "3.0"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"id,lable\na,cat\n", "line 1: header 'id,lable' has no label column; name the key column key, id or item and the label column label, answer or class"),
        (b"name,label\na,cat\n", "line 1: header 'name,label' has no key column"),
        (b"foo,bar,baz\na,cat,x\n", "line 1: header 'foo,bar,baz' is not recognised"),
        ("\ufeffkey,label\na,cat\n\nb,cow\n".encode(), "line 4: label 'cow'"),  # file lines: header 1, blank 3
        (b'key,label,note\na,cat,"two\nlines"\nb,cow,x\n', "line 4: label 'cow'"),  # a quoted line break
        (b"a,cow\n", "line 1: label 'cow'"),
        (b"key,label\na,caf\x81\n", r"neither UTF-8 nor Windows-1252 text \(byte 0x81 at offset 15, line 2\); save it as 'CSV UTF-8'"),
        (b"key,label\na,caf\xe9\n", "line 2: label 'caf\xe9'"),  # Windows-1252, read as such
    ],
)
def test_file_oracle_names_the_problem_and_the_file_line(tmp_path, raw, message):
    path = tmp_path / "answers.csv"
    path.write_bytes(raw)
    with pytest.raises(DataError, match=message):
        FileOracle(path, classes=["cat", "dog"], keys={"a", "b"})


def test_file_oracle_accepts_the_projects_own_column_names(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("sample,truth\na,cat\n")
    assert FileOracle(path, classes=["cat", "dog"], keys={"a"}, key_names=["Sample"], label_names=["truth"]).labels == {"a": "cat"}


def test_file_oracle_lists_unanswered_rows(tmp_path):
    path = tmp_path / "round-1.csv"
    path.write_text("key,label\na,\nb,dog\nc,\nc,\n")
    oracle = FileOracle(path, classes=["cat", "dog"])
    assert oracle.labels == {"b": "dog"} and oracle.unanswered == ["a", "c"]


# ---- PromptOracle: undo, help, Ctrl-C, answers handed over as given -------------------------------
class Interrupting(io.StringIO):
    """stdin whose read after the given lines is a Ctrl-C."""

    def readline(self, *args):
        line = super().readline(*args)
        if line == "":
            raise KeyboardInterrupt
        return line


def test_prompt_hands_each_answer_over_and_undo_takes_it_back():
    events = []

    def on_answer(key, label):
        events.append(("answer", key, label))
        return len(events)  # e.g. the observation's id

    def on_undo(key, token):
        events.append(("undo", key, token))

    out = io.StringIO()
    oracle = PromptOracle(classes="abc", input=io.StringIO("a\nb\nu\nc\ns\nq\n"), output=out, on_answer=on_answer, on_undo=on_undo)
    answers = oracle.ask(["k1", "k2", "k3", "k4"])
    assert answers == [Answer("k1", "a"), Answer("k2", "c"), Answer("k3", None), Answer("k4", None)]
    assert events == [("answer", "k1", "a"), ("answer", "k2", "b"), ("undo", "k2", 2), ("answer", "k2", "c")]
    assert "undone: k2 was 'b'; asking it again" in out.getvalue()
    assert out.getvalue().count("item 2/4: k2") == 2 and oracle.stop_requested and not oracle.interrupted


def test_prompt_undo_goes_back_over_skips_and_stops_at_the_session_start():
    out = io.StringIO()
    oracle = PromptOracle(classes="ab", input=io.StringIO("u\na\ns\nu\nu\nb\nb\ns\n"), output=out)
    assert oracle.ask(["k1", "k2", "k3"]) == [Answer("k1", "b"), Answer("k2", "b"), Answer("k3", None)]
    assert out.getvalue().count("nothing to undo") == 2  # before any answer, and after the only one was undone
    assert not oracle.stop_requested


def test_prompt_refused_undo_and_rejected_answer():
    out = io.StringIO()

    def on_answer(key, label):
        if label == "x":
            raise DataError("label: expected a number, got 'x'")
        return key

    def on_undo(key, token):
        out.write("  cannot undo: round closed\n")
        return False

    oracle = PromptOracle(input=io.StringIO("x\n1.5\nu\nq\n"), output=out, on_answer=on_answer, on_undo=on_undo)
    assert oracle.ask(["r1", "r2"]) == [Answer("r1", "1.5"), Answer("r2", None)]
    text = out.getvalue()
    assert "expected a number, got 'x'" in text and "cannot undo: round closed" in text
    assert text.count("item 1/2") == 1  # a rejected answer asks again without redrawing


def test_prompt_ctrl_c_keeps_what_was_answered():
    oracle = PromptOracle(classes="abc", input=Interrupting("a\nb\n"), output=io.StringIO())
    assert oracle.ask(["k1", "k2", "k3"]) == [Answer("k1", "a"), Answer("k2", "b"), Answer("k3", None)]
    assert oracle.stop_requested and oracle.interrupted


def test_prompt_help_and_keys_that_clash_with_classes():
    out = io.StringIO()
    oracle = PromptOracle(classes=["q", "s", "x"], input=io.StringIO("?\ns\n:s\n:q\n"), output=out)
    assert oracle.ask(["k1", "k2", "k3"]) == [Answer("k1", "s"), Answer("k2", None), Answer("k3", None)]
    text = out.getvalue()
    assert "(:s skip, u undo, :q quit, ? help)" in text
    assert "one of: q, s, x" in text and "Ctrl-C" in text


def test_a_class_may_be_typed_as_its_number_unless_classes_are_numbers():
    """1 for the first class, as the labelling page's number keys; classes named by numbers
    (digits 0-9, ratings 1-5) are typed as named, and a number past the list is no label."""
    out = io.StringIO()
    oracle = PromptOracle(classes=["cat", "dog", "owl"], input=io.StringIO("2\n4\nowl\n?\n3\n"), output=out)
    assert oracle.ask(["k1", "k2", "k3"]) == [Answer("k1", "dog"), Answer("k2", "owl"), Answer("k3", "owl")]
    text = out.getvalue()
    assert "label [1 cat, 2 dog, 3 owl]" in text and "'4' is not a label" in text and "or its number (1 for cat)" in text
    assert "show every column" not in text  # `a` is listed only for a row that was cut
    typo = PromptOracle(classes=["cat", "dog", "owl"], input=io.StringIO("catt\ncat\n"), output=(out := io.StringIO()))
    assert typo.ask(["k"]) == [Answer("k", "cat")]  # the typo is named, never taken for the class
    assert "'catt' is not a label; did you mean 'cat'? type one of the classes" in out.getvalue()
    ratings = PromptOracle(classes=["1", "2", "5"], input=io.StringIO("3\n5\n"), output=(out := io.StringIO()))
    assert ratings.ask(["k"]) == [Answer("k", "5")] and "label [1, 2, 5]" in out.getvalue() and "'3' is not a label" in out.getvalue()


def test_prompt_takes_3_0_for_class_3():
    oracle = PromptOracle(classes=range(5), input=io.StringIO("3.0\n"), output=io.StringIO())
    assert oracle.ask(["k"]) == [Answer("k", "3")]


def test_prompt_layout_follows_the_width():
    names = [f"feature_{j}" for j in range(8)]
    row = np.arange(8) * 1.5
    wide = PromptOracle(feature_names=names, width=160).render_row(row)
    assert wide.splitlines()[1].count("feature_") == 8  # one table: every name in its header
    assert max(len(line) for line in wide.splitlines()) <= 160 and "…" not in wide
    narrow = PromptOracle(feature_names=names, width=60).render_row(row)
    assert narrow.splitlines() == [f"{n}: {v:>4}" for n, v in zip(names, ["0", "1.5", "3", "4.5", "6", "7.5", "9", "10.5"])]
    assert PromptOracle(width=160).render_row(np.zeros(30)).startswith("x0:")  # 30 columns: never all "…"


def test_a_row_of_thousands_of_columns_is_cut_to_the_screen_and_a_shows_it_whole():
    names = [f"gene_{j:04d}" for j in range(3000)]
    row = np.round(np.linspace(-1, 1, 3000), 3)
    out = io.StringIO()
    oracle = PromptOracle(classes=["x", "y"], feature_names=names, width=100, height=24, output=out,
                          input=io.StringIO("a\ny\n"))  # fmt: skip
    assert oracle.ask(["k"], row[None, :]) == [Answer("k", "y")]
    drawn, rest = out.getvalue().split("label [1 x, 2 y]", 1)
    cells = drawn.splitlines()[1:]  # after "item 1/1: k"
    assert len(cells) == 16  # height 24 less 8 lines for the prompt and its context
    per_line = cells[0].count("gene_")
    assert per_line == 100 // len("gene_0000: -0.999   ") and cells[1].lstrip().startswith("gene_0001:")  # down, then across
    shown = per_line * 15
    assert cells[-1] == f"… {3000 - shown:,} more columns: type a to show every one"
    assert all(max(len(line) for line in cells[:-1]) <= 100 for line in cells)
    assert sum(line.count("gene_") for line in cells) == shown
    assert all(f"{n}:" in rest for n in names)  # `a` drew every cell, then the prompt came back
    assert rest.count("label [1 x, 2 y]") == 1


def test_a_short_row_keeps_one_line_a_cell_and_a_long_text_its_own_line():
    names = [f"f{j}" for j in range(10)] + ["review"]
    values = [str(j) for j in range(10)] + ["a very long review " * 10]
    text, left_out = name_value_cells(names, values, width=80, max_lines=16)
    lines = text.splitlines()
    assert left_out == 0 and lines[:10] == [f"f{j}: {j}" for j in range(10)]
    assert lines[10] == "review:" and " ".join(" ".join(lines[11:]).split()) == values[-1].strip()  # whole, wrapped
    assert all(line.startswith("  ") and len(line) <= 80 for line in lines[11:]) and len(lines) == 14  # 190 characters: 3 lines
    packed, left_out = name_value_cells(names, values, width=24, max_lines=6)  # too many lines: packed
    assert left_out == 0 and packed.splitlines()[:5] == ["f0: 0   f4: 4   f8: 8", "f1: 1   f5: 5   f9: 9", "f2: 2   f6: 6",
                                                         "f3: 3   f7: 7", "review:"]  # fmt: skip


def test_the_show_all_key_gives_way_to_a_class_named_a():
    out = io.StringIO()
    oracle = PromptOracle(classes=["a", "b"], feature_names=[f"c{j}" for j in range(500)], width=60, height=20,
                          input=io.StringIO("a\n"), output=out)  # fmt: skip
    assert oracle.ask(["k"], np.zeros((1, 500))) == [Answer("k", "a")]
    assert "type :a to show every one" in out.getvalue()
    assert PromptOracle(input=io.StringIO(":a\nq\n"), output=(out := io.StringIO())).ask(["k"]) == [Answer("k", None)]
    assert "every column of this item is shown already" in out.getvalue()


def test_prompt_height_from_the_environment(monkeypatch):
    monkeypatch.setenv("LINES", "50")
    assert PromptOracle().terminal_height() == 50
    assert PromptOracle(height=30).terminal_height() == 30


def test_prompt_width_from_the_environment(monkeypatch):
    monkeypatch.setenv("COLUMNS", "77")
    assert PromptOracle().terminal_width() == 77
    assert PromptOracle(width=50).terminal_width() == 50


def test_colour_art_draws_two_pixels_a_cell_in_their_own_colours():
    from activebayes.oracles.terminal_art import colour_art, picture

    red_over_blue = np.zeros((3, 2, 1))  # channels first, as a colour pool stores it: [3, H, W]
    red_over_blue[0, 0, 0] = red_over_blue[2, 1, 0] = 1.0
    image = picture(red_over_blue)
    assert image.shape == (2, 1, 3)
    assert colour_art(image) == "\x1b[38;2;255;0;0m\x1b[48;2;0;0;255m▀\x1b[0m"
    grey = colour_art(np.asarray([[0.0, 1.0], [0.5, 0.25]]))  # grey levels, not a threshold
    assert grey == "\x1b[38;2;0;0;0m\x1b[48;2;128;128;128m▀\x1b[38;2;255;255;255m\x1b[48;2;64;64;64m▀\x1b[0m"
    shrunk = colour_art(np.random.default_rng(0).uniform(size=(6, 300, 3)), max_width=100)  # 3 x 3 blocks: aspect kept
    assert shrunk.count("▀") == 100 and shrunk.count("\n") == 0


def test_colour_only_where_the_terminal_shows_it(monkeypatch):
    from activebayes.oracles.terminal_art import shows_colour

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLORTERM", "truecolor")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert shows_colour(Tty()) and not shows_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not shows_colour(Tty())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("COLORTERM", "")
    assert not shows_colour(Tty())
    out = io.StringIO()
    PromptOracle(classes=["r", "b"], colour=True, input=io.StringIO("r\n"), output=out).ask(["k"], np.ones((1, 3, 4, 4)))
    assert "\x1b[38;2;" in out.getvalue()
    out = io.StringIO()
    PromptOracle(classes=["r", "b"], input=io.StringIO("r\n"), output=out).ask(["k"], np.ones((1, 3, 4, 4)))
    assert "\x1b[" not in out.getvalue()  # not a terminal: plain characters


def test_file_oracle_reads_a_float_spelling_as_its_class(tmp_path):
    """An answer '1.0' to a project of classes 0 and 1 (a spreadsheet that wrote its column as
    floats) is the class '1', as `pool add --merge-label-spellings` reads such labels."""
    path = tmp_path / "answers.csv"
    path.write_text("key,label\na,0\nb,1.0\n")
    assert FileOracle(path, classes=["0", "1"], keys=["a", "b"]).answers() == [Answer("a", "0"), Answer("b", "1")]
