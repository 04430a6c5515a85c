"""studies/benchmark model variants (variants.py, `run.py --model-variant`) and the paired comparison
of two variants (compare_variants.py): the marglik variant trains the CLI's posterior by online
marginal-likelihood training with the CLI's epochs, its runs are kept apart from the default's, and
the comparison pairs seeds. No test says which variant wins."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from test_benchmark import _module, _run


def test_the_marglik_variant_trains_by_online_marglik_with_the_clis_epochs():
    from activebayes.marglik import MarglikConfig
    from activebayes.posteriors import MCDropout
    from activebayes_cli._model import model_factory, posterior_factory

    variants = _module("variants")
    factory, settings = posterior_factory("mc-dropout", model_factory("mlp", (3,), 2), samples=4, epochs=20, device="cpu")
    same, same_settings = variants.apply_variant("default", factory, settings)
    assert same is factory and same_settings == settings
    factory, settings = variants.apply_variant("marglik", factory, settings)
    assert settings["variant"] == "marglik"
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(12, 3, generator=g), torch.randint(0, 2, (12,), generator=g)
    unfitted = factory(seed=0)
    post = unfitted.fit(x, y)
    assert isinstance(post, MCDropout) and post.train.epochs == 20 and post.train.weight_decay == 0.0  # --epochs kept
    assert post.train.marglik == MarglikConfig(hessian="kron", frequency=math.ceil(20 / variants.MAX_FITS))
    assert unfitted.training["weight_decay"] == 0.0 and unfitted.training["marglik_frequency"] == 2
    assert post.predict_proba(x).shape == (12, 2)
    with pytest.raises(ValueError, match="model variant"):
        variants.apply_variant("nope", factory, settings)


@pytest.mark.slow
def test_variant_runs_are_kept_apart(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "k": 10, "max_labels": 10, "test_fraction": 0.3, "max_rows": 3000, "seeds": [0], "tables": ["iris"],
        "arms": {"classification": ["random"], "regression": ["random"]},
    }))  # fmt: skip
    args = ["--config", str(config), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "tables"), "--jobs", "1", "--no-report"]
    first = _run(*args, "--model-variant", "marglik")
    assert "1 run(s) to do, 0 already finished" in first.stdout
    run = json.loads((tmp_path / "out" / "runs" / "iris" / "random" / "seed0.json").read_text())
    assert run["settings"]["model_variant"] == "marglik" and [p["labels"] for p in run["curve"]] == [10]
    assert "0 run(s) to do, 1 already finished" in _run(*args, "--model-variant", "marglik").stdout
    assert "1 run(s) to do, 0 already finished" in _run(*args).stdout  # the default variant does not reuse it


def _fake(table: str, arm: str, seed: int, values: list[float], metric: str = "accuracy") -> dict:
    return {"table": table, "arm": arm, "seed": seed, "metric": metric, "settings": {},
            "curve": [{"labels": 10 * (i + 1), metric: v} for i, v in enumerate(values)]}  # fmt: skip


def test_the_comparison_pairs_seeds_and_signs_regression():
    compare = _module("compare_variants").compare
    base = [_fake("t", "random", s, [0.5, 0.6]) for s in (0, 1, 2)] + [_fake("t", "epig", s, [0.6, 0.7]) for s in (0, 1, 2)]
    base += [_fake("r", "random", 0, [2.0, 1.0], "rmse"), _fake("r", "random", 1, [3.0, 1.0], "rmse")]
    variant = [_fake("t", "random", 0, [0.6, 0.7]), _fake("t", "random", 1, [0.5, 0.8]), _fake("t", "epig", 0, [0.7, 0.7])]
    variant += [_fake("r", "random", 0, [1.0, 1.0], "rmse"), _fake("r", "random", 1, [3.0, 3.0], "rmse")]
    result = compare(base, variant)
    t_random = result["variant_vs_base"]["random"]["t"]
    assert t_random["seeds"] == 2 and t_random["delta"] == pytest.approx(0.1)  # seed 2: only the base holds it
    assert t_random["se"] == pytest.approx(0.0, abs=1e-12)
    r_random = result["variant_vs_base"]["random"]["r"]
    assert r_random["delta"] == pytest.approx((0.5 - 1.0) / 2)  # RMSE: base's minus the variant's (a flipped sign gives +0.25)
    assert result["variant_vs_base"]["epig"]["t"] == {"delta": pytest.approx(0.05), "se": None, "seeds": 1}
    assert result["vs_random"]["base"]["epig"]["t"]["delta"] == pytest.approx(0.1)
    assert result["medians"]["random"]["positive"] == 1 and result["medians"]["random"]["tables"] == 2
