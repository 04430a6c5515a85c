"""A labelling team's free text (support tickets) through `pool add`, `round` and `label`: a prose
column is named as free text with `--text-column` as the way in, a text pasted under several keys
is asked about once a batch, and a long ticket is shown whole, wrapped, with its paragraphs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, ok, run

TICKETS = [
    ("billing", "I was charged twice for my subscription this month, please refund the second payment"),
    ("billing", "The invoice for March shows the wrong price, we are on the yearly plan"),
    ("billing", "My credit card payment failed but the money left my account anyway"),
    ("billing", "Can I get a refund? I cancelled before the renewal date and still paid"),
    ("billing", "Why did the price go up without any notice? The invoice says 12 euros now"),
    ("billing", "Payment page says card declined, the bank says everything is fine"),
    ("billing", "Please send me a corrected invoice with our company VAT number on it"),
    ("bug", "The app crashes every time I open the settings page on my phone"),
    ("bug", "Export button does nothing, no error message, nothing in the downloads folder"),
    ("bug", "After the update the page freezes when I scroll through the reports"),
    ("bug", "Login fails with error 500 since this morning, colleagues have the same problem"),
    ("bug", "Les graphiques ne s'affichent plus depuis la mise à jour, écran blanc 😕"),
    ("bug", "Search returns no results even for words I can see on the screen"),
    ("bug", "The app closes by itself when I attach a photo to a ticket"),
    ("feature", "Would love a dark mode, my eyes hurt at night"),
    ("feature", "Please add an export to Excel for the monthly reports"),
    ("feature", "An integration with Slack would save our team a lot of time"),
    ("feature", "Keyboard shortcuts for the common actions would be great"),
    ("feature", "Could you add a way to share a dashboard with people outside the company?"),
    ("feature", "It would help to schedule reports to be emailed every Monday"),
    ("feature", "Ich wünsche mir eine deutsche Version der App, bitte"),
]
PASTED = "My invoice shows a charge I do not know, and the app crashes when I open it"  # billing or bug?


def write_tickets(path: Path, *, copies: int = 0, extra: list[tuple[str, str, str]] = ()) -> Path:
    """ticket_id, text, product, category: the TICKETS, then PASTED under `copies` keys (the
    last in capitals: TF-IDF reads it alike), then `extra` (key, text, category) rows."""
    rows = [[f"T{i:03d}", text, ("Phone", "Laptop")[i % 2], label] for i, (label, text) in enumerate(TICKETS)]
    rows += [[f"P{j}", PASTED.upper() if j == copies - 1 else PASTED, "Phone", "billing"] for j in range(copies)]
    rows += [[key, text, "Phone", label] for key, text, label in extra]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["ticket_id", "text", "product", "category"])
        writer.writerows(rows)
    return path


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t", "--task", "classification", "--classes", "billing,bug,feature")
    return cli_db


def test_a_prose_column_is_named_free_text_with_text_column_as_the_way_in(tmp_path):
    """Tickets are free text, not an identifier nor hundreds of categories: the refusal says so and
    names --text-column; a short name column beside it is an identifier, left out with a note."""
    names = [f"{first} {last}" for first in ("Ann", "Bo", "Cy", "Di", "Ed") for last in ("Lee", "Ng", "Ruiz", "Smith")]
    tickets = write_tickets(tmp_path / "tickets.csv")
    table = read_csv_table(tickets)
    with pytest.raises(DataError, match=r"column 'text' looks like free text, not a category \(21 different values in 21 rows, \d+ words in "
                       r"the median one\); pass --text-column text to read it as prose, or --ignore text$"):  # fmt: skip
        plan_table(table, TableOptions(label_column="category", key_column="ticket_id", categorical="auto"))
    with_names = tmp_path / "named.csv"
    lines = tickets.read_text(encoding="utf-8").splitlines()
    with_names.write_text("\n".join([lines[0] + ",customer"] + [f"{line},{names[i % 20]} {i}" for i, line in enumerate(lines[1:])]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"column 'text' looks like free text.*pass --text-column text to read it as prose, or --ignore text$"):
        plan_table(read_csv_table(with_names), TableOptions(label_column="category", key_column="ticket_id", categorical="auto"))
    named = plan_table(read_csv_table(with_names), TableOptions(label_column="category", key_column="ticket_id", categorical="auto", text_columns=("text",)))
    assert named.left_out == {"customer": "looks like an identifier: 21 different values in 21 rows"}  # a short name: left out, not prose
    planned = plan_table(table, TableOptions(label_column="category", key_column="ticket_id", categorical="auto", text_columns=("text",)))
    assert [(c.name, c.kind) for c in planned.columns] == [("text", "text"), ("product", "categorical")]


def test_pool_add_of_prose_without_text_column_is_one_line_and_writes_nothing(db):
    write_tickets(Path("tickets.csv"))
    before = db_dump(db)
    assert_mistake(run("pool", "add", "tickets.csv", "--label-column", "category", "--key-column", "ticket_id"),
                   "'text' looks like free text", "--text-column text")  # fmt: skip
    assert db_dump(db) == before


def test_a_text_pasted_under_several_keys_is_asked_once_a_batch(db):
    """PASTED under 12 keys (one in capitals) among 21 tickets: pool add notes the repeats, and no
    batch, random or chosen by BALD, asks about two copies; each round's candidates count the
    different inputs."""
    write_tickets(Path("tickets.csv"), copies=12)
    added = ok("--json", "pool", "add", "tickets.csv", "--label-column", "category", "--key-column", "ticket_id", "--text-column", "text")
    assert "11 pool rows repeat another row's features" in added.stdout and "22 different rows in all" in added.stdout
    fast = ("--device", "cpu", "--samples", "2", "--epochs", "2", "--oracle", "truth", "--k", "8")
    ok("round", *fast)  # a random first batch: 8 of 33 rows holds 2 copies or more about 9 times in 10 without this
    ok("round", *fast, "--acquisition", "bald")  # top-k: equal inputs score alike
    asked = _asked_by_round(db)
    assert sorted(asked) == [1, 2] and all(len(keys) == 8 for keys in asked.values())
    copies = {number: sum(key.startswith("P") for key in keys) for number, keys in asked.items()}
    assert max(copies.values()) <= 1, asked
    with PoolStore(db) as store:
        candidates = [r.acquisition_settings["candidates"] for r in store.rounds("t")]
    assert candidates == [22, 22 - 8 + copies[1]]  # a labelled copy leaves the other 11 as one input


def _asked_by_round(db: str) -> dict[int, list[str]]:
    """{round: the keys its queries asked}."""
    with PoolStore(db) as store:
        return {r.number: [q.key for q in store.queries("t", r.number)] for r in store.rounds("t")}


LONG = ("The export to Excel stopped working after Tuesday's update. " * 30 + "\n\n\n"
        "Steps:\n1. open Reports\n2. click Export\n\nThanks, Maria")  # 300 words and more, with paragraphs


def test_a_long_ticket_is_shown_whole_wrapped_with_its_paragraphs_and_round_trips_the_round_file(db, monkeypatch):
    """At the prompt a 330-word ticket with blank lines and a list comes whole, wrapped to the
    terminal's width, its lines kept; the round file holds it as written, and a label written
    into that file by a spreadsheet-like csv writer is read back with `label --from`."""
    write_tickets(Path("tickets.csv"), extra=[("L1", LONG, "bug"), ("L2", LONG.replace("Excel", "PDF"), "bug")])
    ok("pool", "add", "tickets.csv", "--label-column", "category", "--key-column", "ticket_id", "--text-column", "text")
    ok("round", "--device", "cpu", "--k", "23")  # every ticket, the long ones among them
    with Path("t-round-1.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["key"]: r["text"] for r in rows}["L1"] == LONG  # newlines and all
    order = [r["key"] for r in rows]
    monkeypatch.setenv("COLUMNS", "72")
    answers = "".join("bug\n" if key.startswith("L") else "s\n" for key in order)
    shown = run("label", input=answers).stdout
    screen = shown[shown.index(f"item {order.index('L1') + 1}/23: L1") :]
    screen = screen[: screen.index("label [")].splitlines()
    text = screen[screen.index("text:") + 1 :]
    assert all(len(line) <= 72 and line.startswith("  ") for line in text if line)  # $COLUMNS
    assert text[-6:] == ["", "  Steps:", "  1. open Reports", "  2. click Export", "", "  Thanks, Maria"]
    assert " ".join(" ".join(text).split()).startswith("The export to Excel stopped working after Tuesday's update. The export")
    for r in rows:
        r["label"] = "billing" if r["key"].startswith("T0") else ""
    with Path("t-round-1.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        writer.writeheader()
        writer.writerows(rows)
    ok("label", "--from", "t-round-1.csv")
    with PoolStore(db) as store:
        assert store.count_labelled("t") == 2 + sum(key.startswith("T0") for key in order)


def test_an_empty_ticket_is_no_words_and_the_summary_says_so(db):
    """An empty text has no indicator column: the summary says it reads as no words, and says
    imputed with an indicator only for the other columns' gaps."""
    path = write_tickets(Path("tickets.csv"), extra=[("E1", "", "bug")])
    added = ok("pool", "add", "tickets.csv", "--label-column", "category", "--key-column", "ticket_id", "--text-column", "text").stdout
    assert "Missing values: 1 (text 1); an empty text reads as no words." in " ".join(added.split())
    with path.open("a", encoding="utf-8") as fh:
        fh.write("E2,,,bug\n")  # no text, no product
    ok("init", "--name", "u", "--task", "classification", "--classes", "billing,bug,feature")
    added = ok("--project", "u", "pool", "add", "tickets.csv", "--label-column", "category", "--key-column", "ticket_id", "--text-column", "text").stdout
    assert ("Missing values: 3 (text 2, product 1); imputed, with an indicator per column; an empty text reads as no words."
            in " ".join(added.split()))  # fmt: skip


def test_export_writes_each_labelled_items_text_as_imported(db):
    """A --text-column pool's export holds each labelled ticket's text, as in the file (accents and
    emoji included), after its key (csv) and in its JSON item; `label --from` reads the csv back.
    With the data file moved, the labels are still written, with a note saying the text is not."""
    write_tickets(Path("tickets.csv"))
    ok("pool", "add", "tickets.csv", "--label-column", "category", "--key-column", "ticket_id", "--text-column", "text")
    ok("round", "--device", "cpu", "--samples", "2", "--epochs", "2", "--oracle", "truth", "--k", "21")
    ok("export", "labels.csv")
    with open("labels.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][:3] == ["key", "text", "row"]
    text_of = {f"T{i:03d}": text for i, (_, text) in enumerate(TICKETS)}
    assert len(rows) == 22 and {row[0]: row[1] for row in rows[1:]} == text_of
    ok("export", "labels.json")
    items = json.loads(Path("labels.json").read_text(encoding="utf-8"))["items"]
    assert list(items[0])[:3] == ["key", "text", "row"] and {item["key"]: item["text"] for item in items} == text_of
    ok("label", "--from", "labels.csv")  # every answer a repeat: harmless
    Path("tickets.csv").rename("moved.csv")
    moved = ok("export", "again.csv")
    note = " ".join(moved.stderr.split())
    assert "note: the text of the items is left out of the export" in note and "of project 't' is missing" in note
    assert Path("again.csv").read_text(encoding="utf-8").splitlines()[0] == "key,row,split,label,who,source,round,time"


def test_the_repeats_note_counts_in_the_singular_and_the_plural():
    from activebayes_cli._pool_import import repeated_rows_note

    x = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 3.0], [0.0, 1.0]], dtype=np.float32)
    assert repeated_rows_note(x, np.arange(3))[0].startswith("1 pool row repeats another row's features")
    assert repeated_rows_note(x, np.arange(4))[0].startswith("2 pool rows repeat another row's features")
    assert repeated_rows_note(x, np.arange(1, 3)) == []
