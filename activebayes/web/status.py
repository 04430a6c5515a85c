"""The status page's figures: counts, each labeller's answers and pace, the learning curve (an
inline SVG drawn here, no plotting library, no script) and, with several answers per item, the
items whose answers disagree. Those items are named as the labelling page names them
(`Labelling.name`): in an image pool "query R", R the rank in the round (the round file's `rank`
column), never the key, a file path that may spell the class (`cat/01.png`) of an item that some
labeller may still be asked.

    summary = project_status(store, "digits", name=page.name)
    svg = curve_svg([(10, 0.61), (20, 0.74)], "accuracy")
    version = status_version(store, "digits")   # changes whenever the page would

The page follows the project by asking for `status_version` (a few counts, cheap) every few
seconds and fetching itself again only when it changed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any

from activebayes.store.latest_round import open_queries

CURVE_METRICS = ("accuracy", "rmse")  # the test-split metric a round records, by task
WIDTH, HEIGHT, MARGIN = 480, 220, 44


@dataclass(frozen=True)
class LabellerPace:
    """`answers` recorded by `who` between `first` and `last`; `per_hour` their pace (None for a
    single answer)."""

    who: str
    answers: int
    first: datetime
    last: datetime

    @property
    def per_hour(self) -> float | None:
        seconds = (self.last - self.first).total_seconds()
        return None if self.answers < 2 or seconds <= 0 else (self.answers - 1) * 3600.0 / seconds


def curve_points(rounds: list[Any]) -> tuple[str | None, list[tuple[float, float]]]:
    """(metric name, [(labels fitted on, metric)]) over the rounds that recorded a test metric."""
    for name in CURVE_METRICS:
        points = [(float(r.labelled_count), float(r.metrics[name])) for r in rounds
                  if isinstance(r.metrics.get(name), (int, float)) and math.isfinite(r.metrics[name])]  # fmt: skip
        if points:
            return name, points
    return None, []


def _ticks(lo: float, hi: float) -> list[float]:
    if hi <= lo:
        return [lo]
    return [lo + (hi - lo) * i / 4 for i in range(5)]


def curve_svg(points: list[tuple[float, float]], metric: str) -> str:
    """An SVG line chart of `points` [(x, y)] (x: labels, y: `metric`), axes with 5 ticks each."""
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = min(ys), max(ys)
    if y_hi - y_lo < 1e-9:
        y_lo, y_hi = y_lo - 0.05, y_hi + 0.05
    if x_hi - x_lo < 1e-9:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    inner_w, inner_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def at(x: float, y: float) -> tuple[float, float]:
        return MARGIN + (x - x_lo) / (x_hi - x_lo) * inner_w, HEIGHT - MARGIN - (y - y_lo) / (y_hi - y_lo) * inner_h

    path = " ".join(f"{px:.1f},{py:.1f}" for px, py in (at(x, y) for x, y in points))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="curve" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-label="{escape(metric)} against the number of labels">',
             f'<rect x="{MARGIN}" y="{MARGIN}" width="{inner_w}" height="{inner_h}" class="plot"/>']  # fmt: skip
    for y in _ticks(y_lo, y_hi):
        _, py = at(x_lo, y)
        parts.append(f'<line x1="{MARGIN}" x2="{WIDTH - MARGIN}" y1="{py:.1f}" y2="{py:.1f}" class="grid"/>')
        parts.append(f'<text x="{MARGIN - 4}" y="{py + 4:.1f}" text-anchor="end">{y:.3g}</text>')
    for x in _ticks(x_lo, x_hi):
        px, _ = at(x, y_lo)
        parts.append(f'<text x="{px:.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle">{x:.0f}</text>')
    parts.append(f'<polyline points="{path}" class="line"/>')
    parts.extend(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" class="dot"/>' for px, py in (at(x, y) for x, y in points))
    parts.append(f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT - 6}" text-anchor="middle">labels</text>')
    parts.append(f'<text x="12" y="{MARGIN - 12}">{escape(metric)}</text></svg>')
    return "".join(parts)


def disagreements(answers: dict[str, list[tuple[str, str]]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The keys whose answers (who, value) in one round name more than one label."""
    return [(key, given) for key, given in answers.items() if len({v for _, v in given}) > 1]


def named_disagreements(store: Any, project: str, number: int, name: Callable[[Any], str] | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """`disagreements` of round `number`, each item called `name(query)` (default: its key); an
    answer outside the round's queries (none is recorded so) would be called "an item"."""
    found = disagreements(store.round_answers(project, number))
    if name is None or not found:
        return found
    queries = {q.key: q for q in store.queries(project, number)}
    return [(name(queries[key]) if key in queries else "an item", given) for key, given in found]


def project_status(store: Any, project: str, name: Callable[[Any], str] | None = None) -> dict[str, Any]:
    """Counts, rounds, labellers' paces and the learning curve of `project`; `name` says what the
    page calls a query of the latest round (`Labelling.name`; default: its key)."""
    rounds = store.rounds(project)
    metric, points = curve_points(rounds)
    latest = rounds[-1] if rounds else None
    waiting = open_queries(store, project, latest)
    return {
        "pool": store.count_items(project, split="pool"),
        "test": store.count_items(project, split="test"),
        "labelled": store.count_labelled(project),
        "candidates": store.count_candidates(project),
        "rounds": rounds,
        "latest": latest,
        "open": waiting,
        "can_run": waiting == 0,  # no round waits for answers, or every answer is in
        "labellers": [LabellerPace(*row) for row in store.answer_counts(project)],
        "metric": metric,
        "curve": curve_svg(points, metric) if metric else "",
        "disagreements": named_disagreements(store, project, latest.number, name) if latest is not None else [],
    }


def status_version(store: Any, project: str) -> str:
    """A short hash of what the status page shows, from four counts: the latest round and its
    stage, the items (`pool add --append` adds some), the labelled ones, and each labeller's
    answers and last answer (an answer taken back and given again moves the last). The candidates
    left change only with these (a label, a round's queries). Equal versions: the same page."""
    latest = store.latest_round(project)
    seen = {
        "round": [latest.number, latest.status.value] if latest is not None else None,
        "counts": [store.count_items(project), store.count_labelled(project)],
        "labellers": [[who, answers, str(last)] for who, answers, _, last in store.answer_counts(project)],
    }
    return hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()[:16]
