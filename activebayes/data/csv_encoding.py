"""The text of a csv file, as people save it: UTF-8 (a byte-order mark dropped), UTF-16 with its
byte-order mark (Excel's "Unicode Text"), or, when its bytes are not UTF-8, Windows-1252 (what
Excel on Windows saves as "CSV", e.g. a German sheet with umlauts), read as such only where
nothing before the first byte that is not UTF-8 was other than ASCII, so a UTF-8 file is never
half-read as something else. A file that mixes UTF-8 with other bytes, or holds a byte that
Windows-1252 does not define, is a DataError naming the byte, its offset and line.

    csv_text(Path("answers.csv"), "labels file")   # the whole text, whichever of the three
    decode_text(block, path, "data file", head=True, ascii_before=True)   # (text, Fallback | None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from activebayes.errors import DataError

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
WINDOWS_1252 = "cp1252"  # what Excel on Windows writes as "CSV (Comma delimited)"
_UTF8_LETTER = re.compile(rb"[\xc2\xc3][\x80-\xbf]|\xe2[\x80-\x84][\x80-\xbf]")  # Latin-1 letters, punctuation and € in UTF-8
_EXAMPLE_SIDE = 20  # characters quoted on each side of the first one that is not ASCII


@dataclass(frozen=True)
class Fallback:
    """Where a file stopped being UTF-8 and was read as Windows-1252: its line, and that line as
    read (e.g. 'id;Größe;Stadt'; of a line over 60 characters, the 20 on each side of the first
    that is not ASCII), for the note that lets a person check the reading."""

    line: int
    example: str


def decode_text(block: bytes, path: Path, what: str, *, head: bool, ascii_before: bool, offset: int = 0,
                line: int = 1) -> tuple[str, Fallback | None]:  # fmt: skip
    """(text, fallback) of `block`, a part of a csv file cut at a newline that starts `offset`
    bytes and `line` - 1 newlines into the file: UTF-8 (a byte-order mark dropped at the head),
    else Windows-1252 when nothing before the first byte that is not UTF-8 (in the file,
    `ascii_before`, and in the block) was other than ASCII; a Fallback then says where. A file
    that mixes UTF-8 with other bytes, or holds a byte Windows-1252 does not define (0x81, 0x8d,
    0x8f, 0x90, 0x9d: no Western text), is a DataError naming the byte, its offset and line."""
    try:
        return block.decode("utf-8-sig" if head else "utf-8"), None
    except UnicodeDecodeError as exc:
        bad = exc.start + (3 if head and block.startswith(b"\xef\xbb\xbf") else 0)  # utf-8-sig counts after its BOM
    if not (ascii_before and block[:bad].isascii()):
        raise DataError(f"{what} {str(path)!r} mixes UTF-8 with other text ({_byte_at(block, bad, offset, line)}); "
                        "save it as 'CSV UTF-8' and run the command again")  # fmt: skip
    text = windows_1252(block, path, what, offset=offset, line=line)
    at = bad  # one character a byte, and the bytes before it are ASCII
    start = text.rfind("\n", 0, at) + 1
    stop = min(len(text), *(i for i in (text.find("\n", at), text.find("\r", at)) if i >= 0))
    if stop - start > 3 * _EXAMPLE_SIDE:  # a long line: the characters around the first that is not ASCII
        start, stop = max(start, at - _EXAMPLE_SIDE), min(stop, at + _EXAMPLE_SIDE)
    return text, Fallback(line + block.count(b"\n", 0, bad), text[start:stop].strip())


def windows_1252(block: bytes, path: Path, what: str, *, offset: int = 0, line: int = 1) -> str:
    """`block` (starting `offset` bytes and `line` - 1 newlines into the file) of a file that is
    not UTF-8, as Windows-1252; a byte that it does not define, or a UTF-8 letter or sign among
    the bytes (é written C3 A9, reads 'Ã©'; – written E2 80 93, reads 'â€“': a file that mixes the
    two), is a DataError naming it, its offset and line."""
    try:
        text = block.decode(WINDOWS_1252)
    except UnicodeDecodeError as exc:
        raise DataError(f"{what} {str(path)!r} is neither UTF-8 nor Windows-1252 text ({_byte_at(block, exc.start, offset, line)}); "
                        "save it as 'CSV UTF-8' and run the command again") from None  # fmt: skip
    utf8 = _UTF8_LETTER.search(block)
    if utf8 is not None:
        raise DataError(f"{what} {str(path)!r} mixes UTF-8 with other text ({_byte_at(block, utf8.start(), offset, line)}, "
                        f"which with the next reads {block[utf8.start():utf8.end()].decode('utf-8')!r} in UTF-8); "
                        "save it as 'CSV UTF-8' and run the command again")  # fmt: skip
    return text


def _byte_at(block: bytes, at: int, offset: int, line: int) -> str:
    """Where byte `at` of a block is in its file, for a message."""
    line += block.count(b"\n", 0, at)
    return f"byte {block[at]:#04x} at offset {offset + at}, line {line}"


def csv_text(path: Path, what: str = "data file") -> str:
    """The text of a csv file: UTF-8 (a byte-order mark dropped), UTF-16 with its BOM (Excel's
    "Unicode Text"), or Windows-1252 (`decode_text`); DataError naming the file when it is none
    of them or holds a NUL byte."""
    raw = path.read_bytes()
    if raw.startswith(UTF16_BOMS):
        try:
            text = raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise DataError(f"{what} {str(path)!r} is not UTF-16 text after its byte-order mark (offset {exc.start}); "
                            "save it as 'CSV UTF-8' and run the command again") from None  # fmt: skip
    else:
        text, _ = decode_text(raw, path, what, head=True, ascii_before=True)
    check_no_nul(text, path)
    return text


def check_no_nul(text: str, path: Path, line: int = 1) -> None:
    """DataError naming the line of a NUL byte in `text` (which starts on `line` of its file)."""
    nul = text.find("\x00")
    if nul >= 0:
        line += text.count("\n", 0, nul)
        raise DataError(f"{str(path)!r} line {line}: holds a NUL byte, so it is not CSV text; save the file as 'CSV UTF-8'")
