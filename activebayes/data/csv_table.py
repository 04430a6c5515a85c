"""Reading a csv file into a table of text cells: its encoding (UTF-8, or UTF-16 with a BOM), its
separator (`,`, `;` or tab, read from the header), its header and its records, each with the line
it starts on. Every problem is a DataError naming the file and the line. What the cells mean
(numbers, categories, text, gaps) is `activebayes.data.tabular`'s job.

    table = read_csv_table(Path("pool.csv"))
    table.header        # ["id", "age", "colour", "label"]
    table.column("age") # ["31", "", "47", ...]  (stripped cells, one per record)
    table.lines         # the line each record starts on, for messages
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activebayes.errors import DataError

CSV_DELIMITERS = (",", ";", "\t")
_SHOWN_MAX = 60  # characters of a cell quoted in a message
_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+$")
_DATA_LIKE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)$")


def shown(value: Any) -> str:
    """`value` quoted for a one-line message, cut to a few dozen characters."""
    text = str(value)
    if len(text) > _SHOWN_MAX:
        return repr(text[: _SHOWN_MAX - 20]) + f"... ({len(text)} characters)"
    return repr(text)


def delimiter_name(d: str) -> str:
    return "tab" if d == "\t" else repr(d)


def csv_text(path: Path, what: str = "data file") -> str:
    """The text of a csv file: UTF-8 (a byte-order mark dropped) or UTF-16 with its BOM (Excel's
    "Unicode Text"); DataError naming the file when it is neither."""
    raw = path.read_bytes()
    encoding = "utf-16" if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{what} {str(path)!r} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start}); "
            "save it as 'CSV UTF-8' and run the command again"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise DataError(f"{str(path)!r} line {line}: holds a NUL byte, so it is not CSV text; save the file as 'CSV UTF-8'")
    return text


def csv_delimiter(text: str, path: Path) -> str:
    """The field separator of a csv text, read from its first non-blank line: the one of `,`,
    `;` and tab that splits it (`,` when none does). A first line that splits at more than one
    is ambiguous: DataError naming the file and line."""
    lines = text.splitlines()
    number, first = next(((i + 1, line) for i, line in enumerate(lines) if line.strip()), (1, ""))
    splitting = []
    for d in CSV_DELIMITERS:
        if d not in first:
            continue
        try:
            fields = next(csv.reader([first], delimiter=d), [])
        except csv.Error:
            continue
        if len(fields) > 1:
            splitting.append(d)
    if len(splitting) > 1:
        names = " and ".join(delimiter_name(d) for d in splitting)
        raise DataError(
            f"{str(path)!r} line {number}: the header splits at both {names}, so the field separator is ambiguous; "
            "save the file with one separator (quote names that hold another)"
        )
    return splitting[0] if splitting else ","


def csv_rows(text: str, path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number where the record starts, fields) of every record; a record that is not valid
    CSV (a NUL byte, a field over the csv module's size limit, ...) is a DataError naming the line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            reason = str(exc)
            if "field larger than field limit" in reason:
                reason = f"a field is longer than {csv.field_size_limit()} characters"
            elif "NUL" in reason:
                reason = "it holds a NUL byte"
            raise DataError(f"{str(path)!r} line {line}: not a valid CSV record ({reason}); fix that line") from None
        yield line, row


def csv_header(path: Path, what: str = "data file") -> list[str]:
    """The column names on the first line of a csv file (decoded and split as `_load_csv` does)."""
    text = csv_text(path, what)
    for _, row in csv_rows(text, path, csv_delimiter(text, path)):
        if row and any(f.strip() for f in row):
            return [h.strip() for h in row]
    return []


@dataclass(frozen=True)
class CsvTable:
    """A csv file's header and records as stripped text cells.

    header: the M column names; records: N lists of M cells; lines: the line each record
    starts on (blank records are skipped); delimiter: the separator found."""

    path: Path
    header: list[str]
    records: list[list[str]]
    lines: list[int]
    delimiter: str

    def __len__(self) -> int:
        return len(self.records)

    def column(self, name: str) -> list[str]:
        """The N cells of column `name`."""
        j = self.header.index(name)
        return [r[j] for r in self.records]


def read_csv_table(path: Path) -> CsvTable:
    """The whole table of a csv file. Refused (DataError naming the file and line): no header, a
    header naming a column twice or holding a value instead of a name (a missing header), a record
    with the wrong number of fields, a table with no records."""
    text = csv_text(path)
    delimiter = csv_delimiter(text, path)
    records = csv_rows(text, path, delimiter)
    header = None
    header_line = 1
    for header_line, row in records:
        if row and any(f.strip() for f in row):
            header = [h.strip() for h in row]
            break
    if not header:
        raise DataError(f"data file {str(path)!r}: empty; expected a header row of column names")
    where_header = f"{str(path)!r} line {header_line}"
    seen: set[str] = set()
    for name in header:
        if name in seen and name:
            raise DataError(f"{where_header}: the column {shown(name)} is named more than once; give every column its own name")
        seen.add(name)
    looks_like_data = [h for h in header if _DATA_LIKE.match(h) or h.lower() in ("nan", "inf", "-inf")]
    if looks_like_data:
        raise DataError(
            f"{where_header}: the header holds {shown(looks_like_data[0])}, a value rather than a column name "
            "(is the header missing?); add a first line naming the columns, e.g. key,f0,f1,label"
        )
    cells: list[list[str]] = []
    lines: list[int] = []
    for line_no, row in records:
        if not row or all(not f.strip() for f in row):
            continue
        if len(row) != len(header):
            raise DataError(
                f"{str(path)!r} line {line_no}: expected {len(header)} fields, got {len(row)} "
                f"(separator {delimiter_name(delimiter)}); quote a value that holds the separator"
            )
        cells.append([f.strip() for f in row])
        lines.append(line_no)
    if not cells:
        raise DataError(f"data file {str(path)!r}: has a header but no rows; add one row per item")
    return CsvTable(path, header, cells, lines, delimiter)


def decimal_comma_at(values: list[str]) -> int | None:
    """The index of the first cell written with a decimal comma ("3,5"), or None."""
    return next((i for i, v in enumerate(values) if _DECIMAL_COMMA.match(v)), None)
