"""`[loop] stop_when` in study configs, and where each run's stopping signal fired in
results.json (activebayes.stopping.first_stop)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from activebayes.errors import ConfigError
from activebayes.stopping import first_stop
from activebayes.study import StudyConfig, run_study

TINY = {
    "name": "tiny", "seed": 0, "repeats": 1, "acquisitions": ["power-bald"],
    "data": {"dataset": "digits", "test_fraction": 0.3, "pool_size": 200},
    "loop": {"initial": 20, "batch_size": 10, "max_labels": 60},
    "model": {"posterior": "mc-dropout", "hidden": [16], "epochs": 2, "n_samples": 4},
}  # fmt: skip


def rounds(*agreements):
    return [SimpleNamespace(metrics={} if a is None else {"agreement": a}, labelled_count=10 * (i + 1)) for i, a in enumerate(agreements)]


def test_first_stop_reads_the_recorded_agreements():
    assert first_stop(rounds(None, 0.9, 0.995, 0.999, 0.999, 1.0)) == 50  # mean of the last 3 >= 0.98 first at round 5 (0.9647 at 4)
    assert first_stop(rounds(None, 1.0, 1.0)) is None  # fewer than 3 pairs
    assert first_stop(rounds(0.5, 0.6, 0.7, 0.8)) is None


def test_stop_when_is_a_checked_loop_key():
    config = StudyConfig.from_dict({**TINY, "loop": {**TINY["loop"], "stop_when": "stable"}})
    assert config.stop_when == "stable" and config.to_dict()["stop_when"] == "stable"
    assert "stop_when" not in StudyConfig.from_dict(TINY).to_dict()  # the default keeps older records resumable
    with pytest.raises(ConfigError, match=r'loop.stop_when.*"never" or "stable"'):
        StudyConfig.from_dict({**TINY, "loop": {**TINY["loop"], "stop_when": "soon"}})


def test_a_run_stops_when_the_signal_fires_and_results_say_where(tmp_path, monkeypatch):
    import activebayes.stopping as stopping

    def fires_after_two_fitted_rounds(recorded, **_):
        done = [r for r in recorded if r.status == "done"]
        return done[1].labelled_count if len(done) >= 2 else None

    monkeypatch.setattr(stopping, "first_stop", fires_after_two_fitted_rounds)
    monkeypatch.setattr("activebayes.study_results.first_stop", fires_after_two_fitted_rounds)
    config = StudyConfig.from_dict({**TINY, "loop": {**TINY["loop"], "stop_when": "stable"}})
    run_study(config, tmp_path / "out", device="cpu")
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [p["labels"] for p in doc["curves"]["power-bald"]] == [20, 30]  # stopped before max_labels = 60
    assert doc["stopped_at"]["labels"] == {"power-bald": [30]}


# ---- studies/estimates: its MNIST part and its reading of the thresholds --------------------------
def _estimates_study(name):
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "studies" / "estimates"
    for path in (folder, folder.parent / "benchmark"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    spec = importlib.util.spec_from_file_location(f"estimates_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_mnist_part_is_skipped_without_the_idx_files(tmp_path):
    run = _estimates_study("run")
    assert run.mnist_npz(tmp_path, source=tmp_path / "no-mnist") is None
    assert not list(tmp_path.iterdir())  # nothing written


def test_stop_points_and_threshold_readings_by_hand():
    summary = _estimates_study("summary")
    # kappas after rounds 2..6; test accuracy 0.80 .. 0.90, the last 0.90: plateau at 50 labels (0.89 >= 0.89)
    tests = [0.80, 0.84, 0.86, 0.88, 0.89, 0.90]
    kappas = [None, 0.90, 0.985, 0.985, 0.985, 0.99]
    run = {"rounds": [{"labels": 10 * (i + 1), "test_accuracy": t, "agreement": k} for i, (t, k) in enumerate(zip(tests, kappas))]}
    points = summary.stop_points(run)
    # mean of the last 3: 0.9567 at 40, 0.985 at 50, 0.9867 at 60
    assert points["plateau"] == 50 and points["last"] == 60
    assert points["stop_0.99"] is None and points["stop_0.98"] == 50 and points["stop_0.95"] == 40
    assert points["test_at_stop_0.95"] == 0.88
    reading = summary.threshold_reading([points, points | {"stop_0.98": None}], 0.95)
    assert reading["fired"] == 2 and reading["early"] == 2 and reading["after_plateau"] == -10
    assert reading["accuracy_given_up"] == pytest.approx(0.02)
    at_98 = summary.threshold_reading([points], 0.98)
    assert at_98["early"] == 0 and at_98["good"] == 1 and at_98["saved"] == pytest.approx(1 - 50 / 60)


def test_a_stored_interval_is_re_derived_under_the_current_rule():
    from activebayes.estimates import effective_trials, lure_estimate, lure_weights, wilson_interval

    intervals = _estimates_study("intervals")
    for p, n in ((0.2, 7.3), (0.0, 9.1), (1.0, 4.0), (0.55, 2.5)):  # n from Wilson's bounds, both ends of [0, 1] included
        assert intervals.recovered_size(p, *wilson_interval(p, n)) == pytest.approx(n, rel=1e-12)
    draws = {"pool": 60, "zero_one": [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
             "q": [0.05, 0.01, 0.02, 0.1, 0.015, 0.03, 0.02, 0.04, 0.025, 0.05]}  # fmt: skip
    v = lure_weights(draws["q"], 60)
    terms = v * np.asarray(draws["zero_one"])
    p = terms.mean()
    low, high = wilson_interval(p, effective_trials(p, terms.var(ddof=1) / 10, v))  # the earlier rule, as a stored run kept it
    stored = {"est_accuracy": [1 - p, 1 - high, 1 - low]}
    now = lure_estimate(draws["zero_one"], draws["q"], 60, bounded=True).map(lambda r: 1 - r, increasing=False)
    assert intervals.round_accuracy(stored) == pytest.approx([now.value, now.low, now.high], abs=1e-12)
    assert intervals.round_accuracy({**stored, "draws": draws}) == pytest.approx([now.value, now.low, now.high], abs=1e-12)
    assert intervals.round_accuracy(stored, "earlier") == pytest.approx(stored["est_accuracy"], abs=1e-12)
