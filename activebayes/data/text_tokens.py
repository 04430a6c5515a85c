"""The terms of a document, for text written with spaces between words and for Chinese and
Japanese, which are written without them.

scikit-learn's default analyzer (accents stripped, lower case, then the regular expression
`\\b\\w\\w+\\b`) reads a run of word characters as one term. Han and kana characters are word
characters, so a Chinese or Japanese sentence up to its punctuation becomes a single term that
no other document shares, and TF-IDF learns nothing from it. `terms` keeps that analyzer for
every stretch of text outside those scripts, and reads a run of Han or kana characters
c₁c₂…c_m as its characters and its overlapping pairs (the bigrams that CJK search engines
index, e.g. Lucene's CJKBigramFilter, plus the single characters, which carry much of the
meaning in a short text):

    terms("退款很慢")  = ["退", "款", "很", "慢", "退款", "款很", "很慢"]
    terms("Café 退款") = ["cafe", "退", "款", "退款"]

The text is first brought to Unicode's NFKC form (full-width Latin and half-width kana to their
usual forms); accents are stripped outside Han and kana only, since stripping them there would
also strip kana's voicing marks (が to か). On text with no Han or kana character `terms` gives
exactly scikit-learn's default terms, so a vocabulary learnt before is read the same way.
Hangul is written with spaces and is left to the word rule.

`words(text)` counts words the same way for the free-text rule of `pool add`: the runs of
non-space characters outside Han and kana that hold a letter or digit, and one word for every two Han or kana characters
(the mean length of a Chinese word is about 1.5 characters; a Japanese one is longer).
"""

from __future__ import annotations

import re
import unicodedata

TOKENS = "words+cjk"  # the name recorded with a text model read by `terms`

_WORD = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token pattern
_CJK_RUN = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+)")


def _strip_accents(text: str) -> str:
    """`text` without combining marks after NFKD (scikit-learn's `strip_accents_unicode`)."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _pieces(text: str) -> list[tuple[str, bool]]:
    """(piece, is Han or kana) for the stretches of NFKC(text), in order."""
    parts = _CJK_RUN.split(unicodedata.normalize("NFKC", text))
    return [(p, i % 2 == 1) for i, p in enumerate(parts) if p]


def terms(text: str) -> list[str]:
    """The terms of one document (module docstring)."""
    out: list[str] = []
    for piece, cjk in _pieces(text):
        if cjk:
            out.extend(piece)
            out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        else:
            out.extend(_WORD.findall(_strip_accents(piece).lower()))
    return out


def words(text: str) -> float:
    """The number of words in `text` (module docstring): space-separated runs with a letter or
    digit outside Han and kana, plus half the number of Han and kana characters."""
    return sum(len(piece) / 2 if cjk else sum(any(c.isalnum() for c in w) for w in piece.split()) for piece, cjk in _pieces(text))
