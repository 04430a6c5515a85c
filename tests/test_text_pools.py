"""A labelling team's free text (support tickets) through `pool add`, `round` and `label`: a prose
column is named as free text with `--text-column` as the way in, a text pasted under several keys
is asked about once a batch, and a long ticket is shown whole, wrapped, with its paragraphs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.csv_table import read_csv_table
from activebayes.data.tabular import TableOptions, plan_table
from activebayes.errors import DataError
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
    names --text-column, also beside another refused column; a short name column stays an identifier."""
    names = [f"{first} {last}" for first in ("Ann", "Bo", "Cy", "Di", "Ed") for last in ("Lee", "Ng", "Ruiz", "Smith")]
    tickets = write_tickets(tmp_path / "tickets.csv")
    table = read_csv_table(tickets)
    with pytest.raises(DataError, match=r"column 'text' looks like free text, not a category \(21 different values in 21 rows, \d+ words in "
                       r"the median one\); pass --text-column text to read it as prose, or --ignore text$"):  # fmt: skip
        plan_table(table, TableOptions(label_column="category", key_column="ticket_id", categorical="auto"))
    with_names = tmp_path / "named.csv"
    lines = tickets.read_text(encoding="utf-8").splitlines()
    with_names.write_text("\n".join([lines[0] + ",customer"] + [f"{line},{names[i % 20]} {i}" for i, line in enumerate(lines[1:])]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as refused:
        plan_table(read_csv_table(with_names), TableOptions(label_column="category", key_column="ticket_id", categorical="auto"))
    line = str(refused.value)
    assert "'text' looks like free text" in line and "'customer' looks like an identifier" in line
    assert "; read the free text with --text-column text; leave the others out with --ignore customer, or take one as" in line
    planned = plan_table(table, TableOptions(label_column="category", key_column="ticket_id", categorical="auto", text_columns=("text",)))
    assert [(c.name, c.kind) for c in planned.columns] == [("text", "text"), ("product", "categorical")]


def test_pool_add_of_prose_without_text_column_is_one_line_and_writes_nothing(db):
    write_tickets(Path("tickets.csv"))
    before = db_dump(db)
    assert_mistake(run("pool", "add", "tickets.csv", "--label-column", "category", "--key-column", "ticket_id"),
                   "'text' looks like free text", "--text-column text")  # fmt: skip
    assert db_dump(db) == before
