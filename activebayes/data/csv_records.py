"""A csv file's records: its text decoded block by block (UTF-8, UTF-16 with a BOM, or
Windows-1252 where the bytes are not UTF-8: `activebayes.data.csv_encoding`), its separator (`,`,
`;` or tab, read from the header, or named by Excel's `sep=` line), and every record's fields
with the line it starts on and, for a file read in blocks, its byte offset (`CsvStream`), so
that a record can be read again by seeking to it (`read_records`). A record that is not valid
CSV is a DataError naming the file and the line. Building the table's columns from the records
is `activebayes.data.csv_table`'s job.

    stream = CsvStream(Path("pool.csv"))
    for line, fields in stream_records(stream, head_delimiter(stream, stream.path)):
        ...                         # (1, ["id", "age", "label"]), (2, ["a7", "31", "yes"]), ...
    stream.line_starts              # [lines + 1] byte offset where each line starts
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.data.csv_encoding import UTF16_BOMS, WINDOWS_1252, Fallback, check_no_nul, csv_text, decode_text, windows_1252
from activebayes.errors import DataError

CSV_DELIMITERS = (",", ";", "\t")
# the longest cell read: 2**31 - 1 characters, the most a C long holds on every platform (Python's csv default, 131,072,
# refuses a text column holding whole documents); a file's one cell can be no longer than the file itself
FIELD_SIZE_LIMIT = 2**31 - 1
csv.field_size_limit(max(csv.field_size_limit(), FIELD_SIZE_LIMIT))


def delimiter_name(d: str) -> str:
    return "tab" if d == "\t" else repr(d)


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


def _record_error(path: Path, line: int, exc: csv.Error) -> DataError:
    reason = str(exc)
    if "field larger than field limit" in reason:
        reason = f"a field is longer than {csv.field_size_limit()} characters"
    elif "NUL" in reason:
        reason = "it holds a NUL byte"
    return DataError(f"{str(path)!r} line {line}: not a valid CSV record ({reason}); fix that line")


def csv_rows(text: str, path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number where the record starts, fields) of every record; a record that is not valid
    CSV (a NUL byte, a field over FIELD_SIZE_LIMIT, a quote never closed, ...) is a DataError naming the line."""
    return _numbered(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), path, lambda: text[-3:])


def _numbered(reader: Any, path: Path, tail: Callable[[], str]) -> Iterator[tuple[int, list[str]]]:
    """(line where the record starts, fields) of each record a csv.reader gives (see `csv_rows`);
    `tail()` the text's last characters once it is read. A last record whose last field runs over
    lines to the end of a text that does not end in a quote opened a quote never closed (the csv
    module reads the rest of the file into that one value): DataError naming the line it opened on."""
    held: tuple[int, list[str]] | None = None  # a record whose last field holds a line break: the last one, perhaps
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            if held is not None and not tail().rstrip().endswith('"'):
                rest = f"lines {held[0]} to {line - 1}" if line - 1 > held[0] else f"line {held[0]}"
                raise DataError(f"{str(path)!r} line {held[0]}: a quoted value opens on this line and is never closed, so the rest of the "
                                f"file ({rest}) reads as one value; close the quote (a quote inside a quoted value is written twice, \"\")")  # fmt: skip
            if held is not None:
                yield held
            return
        except csv.Error as exc:
            raise _record_error(path, line, exc) from None
        if held is not None:
            yield held
            held = None
        if row and ("\n" in row[-1] or "\r" in row[-1]):
            held = line, row
        else:
            yield line, row


_BLOCK_BYTES = 1 << 23  # bytes decoded at a time (cut after the block's last newline)


class CsvStream:
    """A csv file's text, decoded block by block: UTF-8 (a BOM dropped) streamed in blocks cut
    after a newline (so no character is split), or UTF-16 (a BOM) decoded whole. A file whose
    bytes stop being UTF-8 after ASCII alone is read as Windows-1252 from there on (`encoding`,
    and `fallback` says where; `decode_text`), also in a later pass from the start. `lines()` are
    the lines as `io.StringIO(newline="")` splits them, as csv.reader wants them; after they have
    been read, `line_starts` holds the byte offset where each line starts (None for a file whose
    lines csv counts differently from its b"\\n": UTF-16, or a lone carriage return)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("rb") as fh:
            head = fh.read(3)
        utf16 = head.startswith(UTF16_BOMS)
        self.encoding = "utf-16" if utf16 else "utf-8-sig" if head == b"\xef\xbb\xbf" else "utf-8"  # utf-8-sig: Excel's "CSV UTF-8"
        self.fallback: Fallback | None = None
        self._starts: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
        self._lone_cr = utf16
        self.tail = ""  # the last characters of the text read so far (`_numbered`)

    @property
    def line_starts(self) -> np.ndarray | None:
        return None if self._lone_cr else np.concatenate(self._starts)

    def lines(self) -> Iterator[str]:
        if self.encoding == "utf-16":
            text = csv_text(self.path)
            self.tail = text[-3:]
            return iter(io.StringIO(text, newline=""))
        return itertools.chain.from_iterable(self._blocks())

    def _blocks(self) -> Iterator[io.StringIO]:
        self._starts, self._lone_cr = [np.zeros(1, dtype=np.int64)], False  # a pass from the start
        with self.path.open("rb") as fh:
            position, rest, first, newlines, ascii_so_far = 0, b"", True, 0, True
            while True:
                chunk = fh.read(_BLOCK_BYTES)
                data = rest + chunk
                cut = data.rfind(b"\n") + 1 if chunk else len(data)
                if chunk and cut == 0:  # no newline yet
                    rest = data
                    continue
                block, rest = data[:cut], data[cut:]
                if not block:
                    return
                if self.encoding == WINDOWS_1252:
                    text = windows_1252(block, self.path, "data file", offset=position, line=newlines + 1)
                else:
                    text, fallback = decode_text(block, self.path, "data file", head=first, ascii_before=ascii_so_far,
                                                 offset=position, line=newlines + 1)  # fmt: skip
                    if fallback is not None:
                        self.encoding, self.fallback = WINDOWS_1252, fallback
                    ascii_so_far = ascii_so_far and block.isascii()
                check_no_nul(text, self.path, newlines + 1)
                codes = np.frombuffer(block, dtype=np.uint8)
                ends = np.flatnonzero(codes == 10)
                self._starts.append(ends + (position + 1))
                newlines += int(ends.size)
                cr = np.flatnonzero(codes == 13)
                if cr.size and (cr[-1] + 1 >= codes.size or (codes[np.minimum(cr + 1, codes.size - 1)] != 10).any()):
                    self._lone_cr = True
                position, first, self.tail = position + len(block), False, (self.tail + text[-3:])[-3:]
                yield io.StringIO(text, newline="")
                if not chunk:
                    return


def file_records(path: Path, delimiter: str | None = None) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of every record of a csv file, the header and blank records included (and
    Excel's `sep=` line left out)."""
    stream = CsvStream(path)
    return stream_records(stream, delimiter or head_delimiter(stream, path))


def stream_records(stream: CsvStream, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """`file_records` of an open `stream` split at `delimiter`; afterwards the stream holds the
    file's encoding and its lines' byte offsets."""
    reader = csv.reader(stream.lines(), delimiter=delimiter)
    return _without_sep_line(_numbered(reader, stream.path, lambda: stream.tail))


_SEP_LINE = re.compile(r"sep=([,;\t])\r?\n?")  # Excel's first line naming the separator, e.g. `sep=;`


def head_delimiter(stream: CsvStream, path: Path) -> str:
    """The separator that Excel's `sep=` line names when the file's first non-blank line is one,
    else `csv_delimiter` of the file's text up to that line (only that much read)."""
    head = []
    for line in stream.lines():
        head.append(line)
        if line.strip():
            break
    named = _SEP_LINE.fullmatch(head[-1]) if head else None
    return named.group(1) if named else csv_delimiter("".join(head), path)


def _without_sep_line(records: Iterator[tuple[int, list[str]]]) -> Iterator[tuple[int, list[str]]]:
    """`records` less a first non-blank one that is Excel's `sep=` line (split at the separator it
    names: ["sep=", ""]), which Excel reads to split the file and never shows."""
    looking = True
    for line, row in records:
        if looking and not is_blank(row):
            looking = False
            if row == ["sep=", ""]:
                continue
        yield line, row


def is_blank(row: list[str]) -> bool:
    return not row or not (row[0].strip() or "".join(row).strip())


def read_records(path: Path, offsets: np.ndarray | None, rows: Sequence[int] | None, *, delimiter: str,
                 encoding: str = "utf-8") -> list[list[str]]:  # fmt: skip
    """The stripped cells of records `rows` (0-based, blank records and the header not counted;
    every record when None) of a csv file: by seeking to each record's byte offset when `offsets`
    are known (decoding with the file's `encoding`, as `read_csv_table` found it), else by reading
    the file through."""
    if offsets is not None and rows is not None:
        out = []
        with path.open("rb") as fh:
            for r in rows:
                fh.seek(int(offsets[int(r)]))
                record = next(csv.reader((raw.decode(encoding, errors="replace") for raw in fh), delimiter=delimiter))
                out.append([f.strip() for f in record])
        return out
    wanted = None if rows is None else {int(r) for r in rows}
    found: dict[int, list[str]] = {}
    records = (row for _, row in file_records(path, delimiter) if not is_blank(row))
    next(records, None)  # the header
    for index, row in enumerate(records):
        if wanted is None or index in wanted:
            found[index] = [f.strip() for f in row]
    return list(found.values()) if rows is None else [found[int(r)] for r in rows]
