"""`[loop] stop_when` in study configs, and where each run's stopping signal fired in
results.json (activebayes.stopping.first_stop)."""

from __future__ import annotations

import json
from types import SimpleNamespace

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
    assert first_stop(rounds(None, 0.9, 0.995, 0.999, 0.999, 1.0)) == 50  # mean of the last 3 >= 0.99 at round 5
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
