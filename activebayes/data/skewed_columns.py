"""Heavy-tailed numeric columns, read as log(1 + x) before they are standardised
(`pool add --log-skewed`).

A count, an amount of money, an area or a population is non-negative and heavy-tailed: most
values small, a few huge (spam7's counts of characters have a median of 0 and a maximum of
15,841). Standardised as it is, z = (v − mean) / scale, such a column is a spike near one value
plus a few outliers many standard deviations away: a network fitted on a few labels sees nearly
one value on most rows, and the outliers dominate its fit. log(1 + v) keeps the order of the
values, keeps 0 at 0, and turns a multiplicative spread (10, 100, 1,000) into an additive one,
so the standardised feature spreads the rows out.

The rule (`heavy_tailed`), decided once at `pool add` and recorded in the spec as the column's
"log": true (`activebayes.data.table_spec`), so that every later load, `--append` file and
feature-cache rebuild applies the same transform: a column of kind "numeric" (amounts written
with units or decimal commas by their parsed values; not durations, dates, clock times,
categories or text) is logged when

- every value present in the file is >= 0 (log(1 + v) needs v > −1; a negative value says the
  column is a difference or a signed quantity, not a count);
- its present values on the pool rows (those the spec is fitted on) take at least MIN_DISTINCT
  distinct values (a 0/1 flag or a five-point scale is a few levels, not a tail);
- their sample skewness, the biased Fisher-Pearson coefficient (scipy.stats.skew's default),

      g1 = m3 / m2^(3/2),   m_k = (1/n) Σ (v_i − v̄)^k,

  is greater than SKEWNESS_LIMIT = 2, the skewness of an exponential distribution: a column
  more skewed than that has a tail that standardising leaves as outliers. A normal column has
  g1 ≈ 0, a uniform one 0, a Poisson count of mean λ 1/√λ; a log-normal one with σ = 1 has 6.2.

The feature is then z = (log1p(v) − mean) / scale, mean and scale those of log1p over the pool
rows. A gap is filled, as before the log, with the pool median of v; since log1p is increasing,
log1p(median of v) is the median of the log1p values (for an even count, the mean of the two
middle values is taken before the log). A later value below 0 in a logged column is refused
(`negative_value_error`), never clipped.

It is an option, not the default, by the benchmark: on the 29 classification tables of the
benchmark, held-out and confirmation sets with such a column (README_EXPERIMENTS.md,
`studies/benchmark/log_counts.py`), logging them left the median accuracy over 10-100 labels
where it was (+0.0003 with random labels, +0.0002 with the default acquisition) and cost more
than 2 SE on 5 tables with the default acquisition against 4 it helped (up to −0.048 on one,
+0.116 on another). Without the option, `pool add` names such columns in one note
(`skewed_hint`), since on some tables the log is worth much.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from activebayes.data.clock_columns import DURATION, STOPWATCH

SKEWNESS_LIMIT = 2.0  # g1 above this (an exponential distribution's skewness): the column is logged
MIN_DISTINCT = 10  # fewer distinct values than this: levels, not a tail; left linear


def skewness(values: np.ndarray) -> float:
    """The biased Fisher-Pearson sample skewness g1 = m3 / m2^(3/2) of [n] finite `values`
    (module docstring); 0.0 for fewer than 2 values or a constant column."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return 0.0
    d = v - v.mean()
    m2 = float(np.mean(d * d))
    if m2 <= 0.0:
        return 0.0
    return float(np.mean(d * d * d) / m2**1.5)


def heavy_tailed(numbers: np.ndarray, rows: np.ndarray) -> float | None:
    """The pool skewness of a numeric column when the rule (module docstring) logs it, else None.
    `numbers` [N] float64, NaN where missing, over every row of the file; `rows` the pool rows."""
    present = numbers[np.isfinite(numbers)]
    if present.size == 0 or present.min() < 0.0:
        return None
    pool = numbers[rows]
    pool = pool[np.isfinite(pool)]
    g1 = skewness(pool)  # one pass; the sort that counts distinct values only for a skewed column
    return g1 if g1 > SKEWNESS_LIMIT and np.unique(pool).size >= MIN_DISTINCT else None


def logged_columns(plan: Any, rows: np.ndarray) -> dict[str, float]:
    """{column: pool skewness} of the numeric columns of a planned table
    (`activebayes.data.tabular.TablePlan`) that the rule logs, fitted on `rows`; durations
    (hours written 95:10, a stopwatch's 1:23.4) are times, never logged."""
    rows = np.asarray(rows, dtype=np.int64)
    out: dict[str, float] = {}
    for c in plan.columns:
        if c.kind == "numeric" and c.written not in (DURATION, STOPWATCH) and (g1 := heavy_tailed(c.numbers, rows)) is not None:
            out[c.name] = g1
    return out


def skewed_note(name: str, g1: float) -> str:
    """The `pool add --log-skewed` note on a column read as log(1 + x)."""
    return f"column {name!r} is heavy-tailed (skewness {g1:.1f}, no negative values): its feature is log(1 + x), standardised"


def skewed_hint(skewed: dict[str, float], shown: int = 5) -> str:
    """The one `pool add` note, without --log-skewed, naming the columns the option would log
    ({column: pool skewness}, the first `shown` of them)."""
    names = ", ".join(f"{name!r} ({g1:.1f})" for name, g1 in list(skewed.items())[:shown])
    more = f" and {len(skewed) - shown} more" if len(skewed) > shown else ""
    return (f"heavy-tailed number column(s), no value below 0 (skewness over {SKEWNESS_LIMIT:g}): {names}{more}; "
            "--log-skewed reads them as log(1 + x) before standardising (README: it helps on some tables, costs on others)")  # fmt: skip


def negative_value_error(path: str, line: int, name: str, cell: str) -> str:
    """The one line refusing a value below 0 in a column recorded as log(1 + x)."""
    return (f"{path!r} line {line}: column {name!r} holds {cell}, below 0, but its feature is log(1 + x), fitted at `pool add` "
            "on values of 0 or more (--log-skewed); correct the value, or import the data into a new project without --log-skewed")  # fmt: skip
