"""`FileOracle`: a human's answers from a `key,label` CSV file.

What a person's spreadsheet program writes is read as meant:

* UTF-8 with or without a byte-order mark (Excel's "CSV UTF-8"), or UTF-16 with one (Excel's
  "Unicode Text");
* `,`, `;` or tab between fields (the first line's most frequent one);
* a header naming the key column `key`, `id` or `item` and the label column `label`, `answer` or
  `class` (any case, any order; other columns are ignored), or no header at all (then every row
  is exactly `key,label`);
* `3.0` for class `3` and `26.0` for item key `26`, where the classes / keys are integers.

Every message names the file and its line number, counted as a text editor does (the header is
line 1).

`activebayes export`'s JSON ({"project", "items": [{"key", "label", ...}]}) is read as its
items' key,label rows (messages name the item, counted from 1). A Label Studio JSON export (a
`.json` file, or any file whose text is a JSON list or object) is read as well:
`activebayes.data.label_studio.answers_from_export` turns its tasks into the same
key,label rows, checked the same way; messages then name the task (counted from 1) instead of
the line, and a task without a usable annotation is unanswered. Label Studio's CSV export is a
CSV whose `activebayes_key` (or `activebayes_query`) column is the key column: its `id` column
numbers Label Studio's tasks, not the items.

Where a pool's keys could name the class (an image folder keyed by its files' paths), its round
and evaluation files name each item by an opaque id (`activebayes.data.label_studio.task_id`,
`r1-q3-1f3a9c0d2b`) in a `query` column instead of `key`. With `resolve`, a `query` column is
the key column where the header names no other; a key field that is no key of the project but
has the form of such an id is read as the key `resolve` maps it to, and one `resolve` does not
know (edited, or written for another project or database) is a DataError naming the line.
Such an item is named in messages as the file names it (`names`: its id), never by its key.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from activebayes.data.label_spellings import spelling_key
from activebayes.data.label_studio import KEY, QUERY, QUERY_COLUMN, parse_task_id
from activebayes.data.csv_encoding import csv_text
from activebayes.data.table_gaps import formula_errors, label_gap_markers
from activebayes.errors import DataError, closest_name
from activebayes.oracles.base import Answer

KEY_NAMES = ("key", "id", "item")
LABEL_NAMES = ("label", "answer", "class")
DELIMITERS = (",", ";", "\t")
_INTEGRAL = re.compile(r"^([+-]?\d+)\.0*$")  # "26.0", "3.", "-1.00": a spreadsheet's integer


def integral_text(text: str) -> str | None:
    """"26.0" -> "26" (what a spreadsheet makes of the integer 26); None for any other text."""
    found = _INTEGRAL.match(text)
    return str(int(found.group(1))) if found else None


def _either(names: Sequence[str]) -> str:
    """("key", "id", "item") -> "key, id or item"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _delimiter(text: str) -> str:
    """The most frequent of `,`, `;` and tab on the first non-blank line (`,` when none)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    counts = {d: first.count(d) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: counts[d])  # ties keep the earlier: "," first
    return best if counts[best] else ","


def _own_export(exported: Any, source: str) -> list[tuple[int, str, str]] | None:
    """(item number from 1, key, label) of each item of `activebayes export`'s JSON, {"project":
    ..., "items": [{"key", "label", ...}]}; None for any other JSON (a Label Studio export).
    DataError naming `source` and the item for an item without its key and label."""
    if not (isinstance(exported, Mapping) and "project" in exported and isinstance(exported.get("items"), list)):
        return None
    rows = []
    for number, item in enumerate(exported["items"], start=1):
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), (str, int)) or "label" not in item:
            raise DataError(f"{source} item {number}: expected an object with a \"key\" and a \"label\", as `activebayes export` writes them")
        rows.append((number, str(item["key"]), "" if item["label"] is None else str(item["label"])))
    return rows


def _json(text: str, path: Path) -> Any:
    """The parsed JSON of a labels file that is JSON (a `.json` name, or text that opens with `[`
    or `{` and parses); None for a CSV. A `.json` file that does not parse is a DataError."""
    opening = text.lstrip()[:1]
    if path.suffix.lower() != ".json" and opening not in ("[", "{"):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if path.suffix.lower() != ".json":
            return None  # a CSV after all
        raise DataError(
            f"labels file {str(path)!r} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "export it again from Label Studio as JSON"
        ) from None


class FileOracle:
    """Answers read from a CSV of `key,label` rows (see the module docstring for the forms read).

    The whole file is read and EVERY row validated on construction, before anything can be
    recorded: malformed rows (a different number of fields than the header, an empty key), a key
    given two different labels, a label not among `classes`, a key not in `keys`. Each error is a
    DataError naming the file and line. Repeated rows with the same label are kept once. A row
    whose label is empty is a question not answered yet (a partly filled `<project>-round-N.csv`): it is
    skipped, and its key listed in `unanswered`.

    Args:
        path: the CSV file.
        classes: allowed labels (compared as text), or None for any.
        keys: the known item keys (any container, e.g. a set), or None to skip that check.
        key_names, label_names: header names accepted besides KEY_NAMES / LABEL_NAMES (e.g. the
            project's own key column).
        resolve: an opaque id -> its key (None: unknown), for Label Studio tasks that carry one
            instead of the key (`activebayes.data.label_studio.answers_from_export`) and CSV rows
            that name it in the key's place (module docstring).
        project: the project's name; a Label Studio task exported from another project is refused.

    Attributes:
        labels: key -> label, in file order.  lines: key -> the line that gave it.
        names: key -> the opaque id the file named it by, for the keys `resolve` gave (a message
            about such an item names it so: `name_of`).
        unanswered: keys of rows with an empty label.  header: the header's fields, or None.
        delimiter: the field separator found.  unit: what `lines` count: "line" of a CSV, or
        "task" of a Label Studio JSON export.  disputes: key -> the labels its Label Studio
        annotators disagree on (`label_studio.disputes`; the latest one is in `labels`).
    """

    stop_requested = False

    def __init__(
        self,
        path: str | Path,
        *,
        classes: Sequence[Any] | None = None,
        keys: Container[str] | None = None,
        key_names: Sequence[str] = (),
        label_names: Sequence[str] = (),
        resolve: Callable[[str], str | None] | None = None,
        project: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.classes = [str(c) for c in classes] if classes is not None else None
        self.key_names = tuple(dict.fromkeys([*KEY_NAMES, *(n.strip().lower() for n in key_names if n)]))
        self.label_names = tuple(dict.fromkeys([*LABEL_NAMES, *(n.strip().lower() for n in label_names if n)]))
        self.lines: dict[str, int] = {}
        self.unanswered: list[str] = []
        self.header: list[str] | None = None
        self.delimiter = ","
        self.unit = "line"
        self.names: dict[str, str] = {}
        self.project = project
        self.disputes: dict[str, list[str]] = {}
        self.resolve = self._naming(resolve) if resolve is not None else None
        self.labels: dict[str, str] = self._read(keys)

    def _naming(self, resolve: Callable[[str], str | None]) -> Callable[[str], str | None]:
        """`resolve`, keeping in `names` the first id that named each key it gives."""

        def named(text: str) -> str | None:
            key = resolve(text)
            if key is not None:
                self.names.setdefault(key, text)
            return key

        return named

    def name_of(self, key: str) -> str:
        """`key` as the file names it: its opaque id where the file gave one (the key could spell
        the class), else the key."""
        return self.names.get(key, key)

    # ---- normalising one field ----------------------------------------------------------
    def _key(self, text: str, known: Container[str] | None) -> str:
        if known is None or text in known:
            return text
        for form in ("NFC", "NFD"):  # 'café.png' typed (composed) names the file a Mac stores decomposed, and back
            if (spelled := unicodedata.normalize(form, text)) in known:
                return spelled
        whole = integral_text(text)
        return whole if whole is not None and whole in known else text

    def _resolved(self, text: str, known: Container[str] | None, at: str) -> str:
        """The key an opaque id in a key's place names (`resolve`); any other text as it is."""
        if self.resolve is None or (known is not None and text in known) or parse_task_id(text) is None:
            return text
        key = self.resolve(text)
        if key is None:
            raise DataError(
                f"{at}: query {text!r} names no query of this project's rounds or evaluation set (edited, or written for "
                "another project or database); label the file `activebayes round` or `evaluate` wrote, unedited"
            )
        return key

    def _label(self, text: str) -> str:
        if self.classes is None or text in self.classes:
            return text
        whole = integral_text(text)
        return whole if whole is not None and whole in self.classes else text

    def _where(self, line: int) -> str:
        return f"{str(self.path)!r} {self.unit} {line}"

    # ---- the header ---------------------------------------------------------------------
    def _columns(self, fields: list[str], line: int, known: Container[str] | None) -> tuple[int, int, int, bool]:
        """(key column, label column, fields per row, first row is a header) from the first row."""
        names = [f.lower() for f in fields]
        exported = [n for n in (KEY, QUERY) if n in names]  # Label Studio's CSV export: its `id` is the task's, not the item's
        key_at = names.index(exported[0]) if exported else next((i for i, n in enumerate(names) if n in self.key_names), None)
        if key_at is None and self.resolve is not None and QUERY_COLUMN in names:  # a file that names its items by opaque ids
            key_at = names.index(QUERY_COLUMN)
        label_at = next((i for i, n in enumerate(names) if n in self.label_names), None)
        if key_at is not None and label_at is not None and key_at != label_at:
            return key_at, label_at, len(fields), True
        if len(fields) == 2:
            key, label = self._key(fields[0], known), self._label(fields[1])
            key_ok = known is not None and key in known
            label_ok = self.classes is not None and label in self.classes
            if key_ok or label_ok or (known is None and self.classes is None) or (known is None and not label):
                return 0, 1, 2, False  # no header: the first row is an answer
        accepted = (
            f"name the key column {_either(self.key_names)} and the label column {_either(self.label_names)} "
            "(other columns are ignored), or leave the header out and write key,label rows"
        )
        shown = self.delimiter.join(fields)
        if key_at is not None:
            what = f"header {shown!r} has no label column"
        elif label_at is not None:
            what = f"header {shown!r} has no key column"
        else:
            what = f"header {shown!r} is not recognised"
        raise DataError(f"{self._where(line)}: {what}; {accepted}")

    # ---- the file -----------------------------------------------------------------------
    def _read(self, known: Container[str] | None) -> dict[str, str]:
        if not self.path.is_file():
            raise DataError(f"labels file {str(self.path)!r} does not exist")
        text = csv_text(self.path, "labels file")
        exported = _json(text, self.path)
        own = _own_export(exported, repr(str(self.path))) if exported is not None else None
        if own is not None:
            self.unit = "item"
            return self._check(((n, self._key(k, known), self._label(v)) for n, k, v in own), known)
        if exported is not None:
            from activebayes.data.label_studio import answers_from_export, disputes, export_tasks

            self.unit = "task"
            tasks = export_tasks(exported)  # JSON-MIN's records gathered into tasks
            rows = answers_from_export(tasks, repr(str(self.path)), self.resolve, self.project)
            self.disputes = {self._key(key, known): found for (number, key, _), task in zip(rows, tasks)
                             if (found := disputes(task, self._where(number)))}  # fmt: skip
            return self._check(((n, self._key(k, known), self._label(v)) for n, k, v in rows), known)
        return self._check(self._csv_rows(text, known), known)

    def _csv_rows(self, text: str, known: Container[str] | None) -> Iterator[tuple[int, str, str]]:
        """(line, key, label) of each answer row of a CSV text (the header and blank lines left out)."""
        self.delimiter = _delimiter(text)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=self.delimiter)
        columns: tuple[int, int, int, bool] | None = None
        while True:
            line = reader.line_num + 1  # where this record starts; the header is line 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise DataError(f"{self._where(line)}: not valid CSV ({exc}); fix that line and run the command again") from None
            if not row or all(not f.strip() for f in row):
                continue
            fields = [f.strip() for f in row]
            if columns is None:
                columns = self._columns(fields, line, known)
                if columns[3]:
                    self.header = fields
                    continue
            key_at, label_at, width, has_header = columns
            at = self._where(line)
            if len(fields) != width and not (len(fields) > width and not any(fields[width:])):
                like = f"like the header {self.delimiter.join(self.header)!r}" if has_header else "'key,label'"
                raise DataError(
                    f"{at}: expected {width} fields {like}, got {len(fields)}: {self.delimiter.join(row)!r}; "
                    "fix that line (quote a label that holds the separator) and run the command again"
                )
            key, label = self._resolved(self._key(fields[key_at], known), known, at), self._label(fields[label_at])
            if not key:
                raise DataError(
                    f"{at}: expected a key before the label, got {self.delimiter.join(row)!r}; fill in the key or delete the line"
                )
            yield line, key, label

    def _check(self, rows: Iterator[tuple[int, str, str]], known: Container[str] | None) -> dict[str, str]:
        """key -> label of every answered row, each checked (class, known key, one label per key)."""
        labels: dict[str, str] = {}
        allowed = set(self.classes) if self.classes is not None else None
        unit = self.unit
        for line, key, label in rows:
            at = self._where(line)
            if not label:
                if key not in labels and key not in self.unanswered:
                    self.unanswered.append(key)  # not answered yet
                continue
            if allowed is not None and label not in allowed:
                shown = ", ".join(self.classes[:20]) + (" ..." if len(self.classes) > 20 else "")
                spelled = [c for c in self.classes if spelling_key(c) == spelling_key(label)]
                gap = not spelled and bool(formula_errors([label], label_gap_markers(None))[0])  # "?", "N/A": a gap, no class
                close = None if spelled or gap else closest_name(label, self.classes, cutoff=0.8)  # a typo: 'setosaa'
                fix = (f"write it {spelled[0]!r}, as the class is spelled, on {unit} {line}" if spelled else
                       f"leave the label empty on {unit} {line} to skip the item, or write its class there" if gap else
                       f"did you mean {close!r}? correct {unit} {line}" if close else f"correct {unit} {line}")  # fmt: skip
                raise DataError(f"{at}: label {label!r} is not one of the classes {shown}; {fix} and run the command again")
            if known is not None and key not in known:
                raise DataError(
                    f"{at}: key {key!r} is not an item of this project; correct {unit} {line} "
                    "(keys are the project's item keys, as its round files and exports name them) and run the command again"
                )
            if key in labels and labels[key] != label:
                item = f"the item of query {self.names[key]!r}" if key in self.names else f"key {key!r}"
                raise DataError(
                    f"{at}: {item} has label {label!r} but {unit} {self.lines[key]} gave {labels[key]!r}; "
                    f"keep one of the two {unit}s and run the command again"
                )
            labels.setdefault(key, label)
            self.lines.setdefault(key, line)
        self.unanswered = [k for k in self.unanswered if k not in labels]
        return labels

    def answers(self) -> list[Answer]:
        """Every answer in the file, in file order."""
        return [Answer(k, v) for k, v in self.labels.items()]

    def ask(self, keys: Sequence[str], candidates: Any = None) -> list[Answer]:
        """The file's answer for each key; None (skipped) for keys the file does not answer."""
        return [Answer(str(k), self.labels.get(str(k))) for k in keys]
