"""Reading a csv file into compact columns: its records (decoded, split at the separator read
from the header, each with the line and byte offset it starts on: `activebayes.data.csv_records`),
its header (row names named ROW_NAMES: `named_header`), and every record's cells
(`activebayes.data.csv_columns`). Every problem is a DataError naming the file and the line. What
the cells mean (numbers, categories, text, gaps) is `activebayes.data.tabular`'s job.

    table = read_csv_table(Path("pool.csv"), text_columns=("id", "label"))
    table.header                # ["id", "age", "colour", "label"]
    table.numbers("age")        # [N] float64: NaN where a cell is not a finite number
    table.text_codes("colour")  # ([N] int32 codes, -1 at a finite number; the distinct texts)
    table.column("id")          # ["a7", "b2", ...]  (stripped cells, one per record)
    table.lines                 # [N] the line each record starts on, for messages

The file is streamed in chunks of records, so no cell is ever a Python object for long: a cell
that parses as a finite number is kept as a float64, any other cell as an int32 code into the
column's distinct (stripped) texts. Columns named in `text_columns` (keys, labels, prose) keep
every cell as text. A number's own spelling ("3.50") is read back from the file when asked for
(`column`, `cell`, `read_records`), by the byte offset of its record.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.data.csv_columns import ColumnBuilder, CsvColumn, finite_or_nan  # noqa: F401 (finite_or_nan re-exported)
from activebayes.data.csv_encoding import Fallback, csv_text  # noqa: F401 (csv_text re-exported)
from activebayes.data.csv_records import (  # noqa: F401 (re-exported: the records were read here)
    CSV_DELIMITERS,
    CsvStream,
    csv_delimiter,
    csv_rows,
    delimiter_name,
    file_records,
    head_delimiter,
    is_blank,
    read_records,
    stream_records,
)
from activebayes.data.stray_rows import check_not_header, check_not_summary, check_not_survey_header, comment_fix
from activebayes.errors import DataError

_SHOWN_MAX = 60  # characters of a cell quoted in a message
_DATA_LIKE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)$")
CHUNK_ROWS = 8_192  # records decoded at a time
_SURVEY_HEADER_ROWS = 2  # records below the header that may be a survey export's further header rows


def shown(value: Any) -> str:
    """`value` quoted for a one-line message, cut to a few dozen characters."""
    text = str(value)
    if len(text) > _SHOWN_MAX:
        return repr(text[: _SHOWN_MAX - 20]) + f"... ({len(text)} characters)"
    return repr(text)


def not_a_column(where: str, what: str, name: str, header: Sequence[str]) -> DataError:
    """The refusal of a column `name` (given as `what`) that the table does not have: the one it
    was likely meant as (same name in another case, else a close spelling), and the columns."""
    import difflib

    same = [h for h in header if h.lower() == name.lower()]
    close = same or difflib.get_close_matches(name, list(header), n=1, cutoff=0.75)
    meant = f"did you mean {shown(close[0])}? " if close else ""
    listed = ", ".join(shown(h) for h in header[:20]) + (f" and {len(header) - 20} more" if len(header) > 20 else "")
    return DataError(f"{where}: {what} {name!r} is not a column; {meant}the columns are {listed}")



def csv_header(path: Path, what: str = "data file", *, name_row_names: bool = True) -> list[str]:
    """The column names on the first non-blank line of a csv file (decoded and split as
    `read_csv_table` does, row names named by `named_header` unless `name_row_names` is False);
    only the head of a UTF-8 file is read."""
    written = next(([h.strip() for h in row] for _, row in file_records(path) if not is_blank(row)), [])
    return named_header(written) if name_row_names else written


ROW_NAMES = "row_names"


def named_header(header: list[str]) -> list[str]:
    """`header` with the name ROW_NAMES for a first column without a name: row names, as R's
    write.csv and pandas' to_csv (with its index) write them. Unchanged when a column is
    already called ROW_NAMES."""
    if ROW_NAMES in header or len(header) < 2 or header[0] != "" or not any(header[1:]):
        return header
    return [ROW_NAMES, *header[1:]]


@dataclass(frozen=True)
class CsvTable:
    """A csv file's header and records, column by column (module docstring).

    header: the M column names; columns: name -> CsvColumn; lines: [N] the line each record starts
    on (blank records are skipped); offsets: [N] the byte offset where it starts (None for a file
    read whole as text); delimiter: the separator found; encoding: "utf-8", "utf-8-sig" (UTF-8
    after a byte-order mark, as Excel saves "CSV UTF-8"), "utf-16" or WINDOWS_1252, with
    `fallback` saying where a file stopped being UTF-8; row_names: whether the
    first column, ROW_NAMES, has no name in the file (`named_header`)."""

    path: Path
    header: list[str]
    columns: dict[str, CsvColumn]
    lines: np.ndarray
    offsets: np.ndarray | None
    delimiter: str
    encoding: str = "utf-8"
    fallback: Fallback | None = None
    row_names: bool = False

    def __len__(self) -> int:
        return int(self.lines.shape[0])

    def _encoded(self, name: str) -> CsvColumn:
        col = self.columns[name]
        if col.cells is None:
            return col
        builder = ColumnBuilder(False)
        for start in range(0, len(col.cells), CHUNK_ROWS):
            builder.add(col.cells[start : start + CHUNK_ROWS])
        return builder.finish()

    def numbers(self, name: str) -> np.ndarray:
        """[N] float64: each cell of column `name` as a finite number, NaN where it is not one."""
        col = self._encoded(name)
        return col.numbers if col.numbers is not None else np.full(len(self), np.nan)

    def text_codes(self, name: str) -> tuple[np.ndarray, list[str]]:
        """([N] int32 codes, -1 where a cell is a finite number; the distinct stripped texts)."""
        col = self._encoded(name)
        return (col.codes if col.codes is not None else np.full(len(self), -1, dtype=np.int32)), col.texts

    def category_codes(self, name: str) -> tuple[np.ndarray, list[str]]:
        """`text_codes` with each number as a text too, as spelled in the file ("4", "4.0" and
        "04" are three texts): the codes of a categorical column that holds numbers."""
        codes, texts = self.text_codes(name)
        if not (codes < 0).any():
            return codes, texts
        position: dict[str, int] = {}
        codes = np.asarray([position.setdefault(t, len(position)) for t in self.column(name)], dtype=np.int64)
        return codes, list(position)

    def column(self, name: str) -> list[str]:
        """The N stripped cells of column `name` as text (numbers as spelled in the file, which
        reads the file again for a column holding numbers)."""
        col = self.columns[name]
        if col.cells is not None:
            return list(col.cells)
        if col.numbers is None:
            return [col.texts[c] for c in col.codes.tolist()]
        j = self.header.index(name)
        return [row[j] for row in self.read_rows(None)]

    def cell(self, row: int, name: str) -> str:
        """The stripped cell of record `row` (0-based) in column `name`, as in the file."""
        col = self.columns[name]
        if col.cells is not None:
            return col.cells[row]
        if col.codes is not None and col.codes[row] >= 0:
            return col.texts[int(col.codes[row])]
        return self.read_rows([row])[0][self.header.index(name)]

    def read_rows(self, rows: Sequence[int] | None) -> list[list[str]]:
        """The stripped cells of the given records (every record when None), read from the file."""
        return read_records(self.path, self.offsets, rows, delimiter=self.delimiter, encoding=self.encoding)


def _check_header(path: Path, header: list[str], header_line: int) -> None:
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


def read_csv_table(path: Path, *, text_columns: Sequence[str] = ()) -> CsvTable:
    """The whole table of a csv file, streamed (module docstring); `text_columns` keep every cell
    as text. Refused (DataError naming the file and line): no header, a header naming a column
    twice or holding a value instead of a name (a missing header), a record with the wrong number
    of fields, the header repeated below or a last record that sums the table up ("Total":
    `activebayes.data.stray_rows`), a table with no records."""
    collecting = gc.isenabled()
    gc.disable()  # millions of short-lived cells and no reference cycles: the collector would only rescan them
    try:
        return _read(path, text_columns)
    finally:
        if collecting:
            gc.enable()


def _read(path: Path, text_columns: Sequence[str]) -> CsvTable:
    stream = CsvStream(path)
    delimiter = head_delimiter(stream, path)
    header: list[str] | None = None
    written: list[str] = []  # the header as written (`header` names row names)
    header_line = 1
    builders: list[ColumnBuilder] = []
    chunk: list[list[str]] = []
    chunk_lines: list[int] = []
    lines: list[np.ndarray] = []
    last_line, last_row = 0, []
    for line_no, row in stream_records(stream, delimiter):
        if is_blank(row):
            continue
        if header is None:
            written, header, header_line = [h.strip() for h in row], named_header([h.strip() for h in row]), line_no
            _check_header(path, header, line_no)
            builders = [ColumnBuilder(name in text_columns) for name in header]
            continue
        if len(row) != len(header) and not (lines or chunk) and sum(map(bool, written)) == 1:
            raise _title_above(path, written, header_line, f"line {line_no} has {len(row)} fields")
        if len(row) != len(header):
            first = len(row) == len(header) + 1 and not (lines or chunk)  # R's write.table leaves the row names unnamed so
            hint = " (or, if the first field is a row name, name it at the start of the header)" if first else ""
            raise DataError(
                f"{str(path)!r} line {line_no}: expected {len(header)} fields, got {len(row)} "
                f"(separator {delimiter_name(delimiter)}){comment_fix(row) or f'; quote a value that holds the separator{hint}'}"
            )
        if (written[0] in row[0]) if written[0] else not row[0].strip():  # a cheap first look for the header again (two exports joined)
            check_not_header(path, line_no, row, written)
        if len(chunk) < _SURVEY_HEADER_ROWS and not lines:
            check_not_survey_header(path, line_no, row, header_line)
        chunk.append(row)
        chunk_lines.append(line_no)
        last_line, last_row = line_no, row  # the last record may be a summary row
        if len(chunk) >= CHUNK_ROWS:
            _add_chunk(builders, chunk, chunk_lines, lines)
    if header is None:
        raise DataError(f"data file {str(path)!r}: empty; expected a header row of column names")
    if last_row:
        check_not_summary(path, last_line, last_row)
    if chunk:
        _add_chunk(builders, chunk, chunk_lines, lines)
    if not lines:
        raise DataError(f"data file {str(path)!r}: has a header but no rows; add one row per item")
    line_numbers = np.concatenate(lines)
    starts = stream.line_starts
    offsets = starts[line_numbers - 1] if starts is not None else None
    finished = [builder.finish() for builder in builders]
    row_names = header != written
    if row_names and not _has_values(finished[0]):
        header, row_names = written, False  # an empty first column (a sheet that starts at column B), not row names
    for j, (name, col) in enumerate(zip(header, finished)):
        if not name and _has_values(col) and sum(map(bool, written)) == 1:  # a title in the first cell, then the header
            raise _title_above(path, written, header_line, f"the lines below have values under the other {len(written) - 1}")
        if not name and _has_values(col):  # a value under no name
            raise DataError(f"{str(path)!r}: column {j + 1} has values but no name in the header; name it (or delete the column)")
    columns = dict(zip(header, finished))  # nameless columns (trailing separators) are empty; plan_table leaves them out
    return CsvTable(path, header, columns, line_numbers, offsets, delimiter, stream.encoding, stream.fallback, row_names)


def _title_above(path: Path, written: list[str], line: int, below: str) -> DataError:
    """The refusal of a first line that names one column only: a title above the header."""
    name = next(h for h in written if h)
    return DataError(f"{str(path)!r} line {line}: {shown(name)} is the only name on the first line, and {below}, so it looks like a title above "
                     "the header; delete the lines above the column names, so that the first line names every column")  # fmt: skip


def _has_values(col: CsvColumn) -> bool:
    return col.numbers is not None or any(col.cells or col.texts)


def _add_chunk(builders: list[ColumnBuilder], chunk: list[list[str]], chunk_lines: list[int], lines: list[np.ndarray]) -> None:
    """Hand a chunk of records to the column builders, column by column, and empty it."""
    for builder, col in zip(builders, zip(*chunk)):
        builder.add(col)
    lines.append(np.asarray(chunk_lines, dtype=np.int64))
    chunk.clear()
    chunk_lines.clear()
