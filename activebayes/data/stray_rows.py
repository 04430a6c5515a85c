"""Records of a csv file that are no rows of its table, as spreadsheets and joined exports leave
them: the header again further down (two exports pasted one under the other), a survey export's
second and third header rows (Qualtrics' question texts and `{"ImportId": ...}` row, SurveyMonkey's
row of "Response" under the questions), and a summary row at the end ("Total", "Grand total",
"Sum", ...). Read as items they would be a pool item keyed
"Total" or a column of numbers refused for holding its own name; each is refused instead, in one
line naming the line and what to delete, since every later command reads the file by its
records' byte offsets, and an append copies the file whole.

    check_not_header(path, line_no, row, written_header)   # DataError for a repeated header
    check_not_summary(path, line_no, row)                   # DataError for a last record "Total"
    check_not_survey_header(path, line_no, row, header_line) # DataError for Qualtrics' or SurveyMonkey's extra header rows
    comment_fix(row)                                        # the fix for a comment line of the wrong length

A comment line (`# exported 2024-01-01`), which CSV has no such thing as, is a record of the
wrong length; its refusal says what it looks like.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from activebayes.errors import DataError

_SUMMARY = re.compile(
    r"^(grand\s+total|sub-?total|totals?|sum|summe|gesamt|insgesamt|totaal|totale|total\s+g[ée]n[ée]ral|suma|итого|合计|合計|总计|小計)\s*:?$",
    re.IGNORECASE,
)


def check_not_header(path: Path, line_no: int, row: Sequence[str], header: Sequence[str]) -> None:
    """DataError when record `row` (on `line_no`) repeats the `header` as written (every cell the
    same name, stripped, a byte-order mark before it ignored; a header with at least two names)."""
    cells = [c.strip().lstrip("\ufeff").strip() for c in row]  # `cat` of two "CSV UTF-8" files: the second's byte-order mark
    if sum(map(bool, header)) >= 2 and cells == list(header):
        raise DataError(f"{str(path)!r} line {line_no}: the header is repeated there (files joined one under the other?); "
                        "delete that line, so that the column names are on the first line alone")  # fmt: skip


_QUALTRICS_IMPORT_ID = re.compile(r'^\{\s*"ImportId"\s*:', re.IGNORECASE)  # {"ImportId":"QID1"}: Qualtrics' third header row
_SURVEYMONKEY_KINDS = ("response", "open-ended response", "other (please specify)")  # under the question in the second row


def check_not_survey_header(path: Path, line_no: int, row: Sequence[str], header_line: int) -> None:
    """DataError when record `row` (on `line_no`, one of the first below the header on
    `header_line`) is a survey export's extra header row: Qualtrics' import ids (half the
    non-empty cells or more `{"ImportId": ...}`, the question texts on the lines above), or
    SurveyMonkey's kinds of answer (two cells or more "Response", "Open-Ended Response", ...).
    Read as answers they would be an item whose label is a question's text."""
    cells = [c.strip() for c in row if c.strip()]
    ids = [c for c in cells if _QUALTRICS_IMPORT_ID.match(c)]
    kinds = [c for c in cells if c.casefold() in _SURVEYMONKEY_KINDS]
    if len(cells) >= 2 and 2 * len(ids) >= len(cells):
        what, export = f"Qualtrics' import ids ({ids[0]!r})", "Qualtrics"
    elif len(kinds) >= 2:
        what, export = f"SurveyMonkey's kinds of answer ({kinds[0]!r} under a question)", "SurveyMonkey"
    else:
        return
    rows = f"lines {header_line + 1}-{line_no} are header rows" if line_no > header_line + 1 else f"line {line_no} is a header row"
    raise DataError(f"{str(path)!r} line {line_no}: holds {what}, so {rows} of a {export} export, not answers; "
                    f"delete {'them' if line_no > header_line + 1 else 'it'}, so that one line of column names (each column its own) "
                    "is above the answers")  # fmt: skip


def summary_label(row: Sequence[str]) -> str | None:
    """The first non-empty cell of `row` when it names a summary row ("Total", "Grand total:",
    "Sum", "Summe", ...), else None."""
    first = next((c.strip() for c in row if c.strip()), "")
    return first if _SUMMARY.match(first) else None


def check_not_summary(path: Path, line_no: int, row: Sequence[str]) -> None:
    """DataError when the table's last record `row` (on `line_no`) is a summary row (`summary_label`)."""
    label = summary_label(row)
    if label is not None:
        raise DataError(f"{str(path)!r} line {line_no}: the last row starts with {label!r}, a spreadsheet's summary row rather than an item; "
                        "delete it (and any other total rows), then run the command again")  # fmt: skip


def comment_fix(row: Sequence[str]) -> str:
    """The end of the refusal of a record of the wrong length that starts with `#`: a comment
    line, which CSV has no way to write, and its fix; "" for any other record."""
    first = next((c.strip() for c in row if c.strip()), "")
    return ", and it starts with '#': a comment, which CSV has no way to write; delete the comment lines" if first.startswith("#") else ""
