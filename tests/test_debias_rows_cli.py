"""`activebayes round --debias` on a table whose rows repeat: the rounds record their candidate
rows and each query's copies, and the fit trains with the per-row weights read back from those
records (`activebayes.debias`), not with the weights of groups of one row."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import activebayes.debias as debias
from cli_checks import ok


def write_repeating_table(path: Path) -> None:
    """40 distinct rows along f0 (three classes), then rows 0-9 four times more: 80 rows."""
    rng = np.random.default_rng(0)
    rows = [[f"{2 * (i % 3) + rng.normal():.4f}", f"{rng.normal():.4f}", f"c{i % 3}"] for i in range(40)]
    rows += [rows[i] for _ in range(4) for i in range(10)]
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "f0", "f1", "label"])
        writer.writerows([f"r{i:03d}", *row] for i, row in enumerate(rows))


def test_round_debias_trains_with_the_rounds_copies(cli_db, tmp_path, monkeypatch):
    write_repeating_table(tmp_path / "t.csv")
    ok("init", "--name", "t")
    ok("pool", "add", "t.csv", "--label-column", "label", "--seed", "0")
    for _ in range(3):
        ok("round", "--oracle", "truth", "--acquisition", "power-bald", "--k", "4", "--epochs", "2", "--first", "random")
    from activebayes.store import PoolStore

    with PoolStore(cli_db, create=False) as store:
        _, keys, _ = store.labels("t")  # the labels the --debias round fits on
    used = []
    plain_sample_weights = debias.sample_weights
    monkeypatch.setattr(debias, "sample_weights", lambda w: used.append(np.asarray(w)) or plain_sample_weights(w))
    ok("round", "--oracle", "truth", "--acquisition", "power-bald", "--k", "4", "--epochs", "2", "--debias")
    with PoolStore(cli_db, create=False) as store:
        rounds = store.rounds("t")
        assert rounds[-1].acquisition_settings["debias"] is True
        for rnd in rounds[:3]:
            settings = rnd.acquisition_settings
            assert settings["candidate_rows"] > settings["candidates"] and len(settings["copies"]) == 4
        assert len(keys) == 12 and len(used) >= 1 and store.count_labelled("t") == 16
        np.testing.assert_allclose(used[0], debias.lure_training_weights(store, "t", keys), rtol=1e-12)
        stripped = _without_groups(store)
        assert not np.allclose(used[0], debias.lure_training_weights(stripped, "t", keys))


def _without_groups(store):
    """`store` read as if its rounds had recorded no candidate rows or copies."""
    from dataclasses import replace
    from types import SimpleNamespace

    drop = ("candidate_rows", "copies")
    rounds = [replace(r, acquisition_settings={k: v for k, v in r.acquisition_settings.items() if k not in drop}) for r in store.rounds("t")]
    return SimpleNamespace(rounds=lambda project: rounds, queries=store.queries, count_items=store.count_items)
