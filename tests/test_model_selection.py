"""Choosing a network by its Laplace evidence (activebayes.model_selection) and `round --model auto`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import nn

from activebayes.errors import ConfigError
from activebayes.marglik import log_evidence
from activebayes.model_selection import DEFAULT_WIDTHS, candidate_name, mlp_candidates, select_model
from activebayes.training import TrainConfig

SHORT = TrainConfig(epochs=3, batch_size=16)


def blobs(n: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two well-separated Gaussian blobs in 2-D: x [n, 2], labels [n]."""
    generator = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, 2, generator=generator) * 0.3 + (y[:, None] * 2 - 1) * 3.0
    return x, y


class Blind(nn.Module):
    """Zeroes its input: a network behind it outputs its last bias whatever x (a constant)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0


def blind() -> nn.Module:
    return nn.Sequential(Blind(), nn.Linear(2, 2))


def linear() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 2))


def test_names_of_the_default_candidates():
    assert list(mlp_candidates(3, 2)) == ["mlp-1x64", "mlp-2x64", "mlp-2x128", "mlp-1x256"]
    assert len(DEFAULT_WIDTHS) == 4 and candidate_name((64, 32)) == "mlp-64-32"
    with pytest.raises(ConfigError, match="distinct"):
        mlp_candidates(3, 2, widths=((8,), (8,)))


def test_the_choice_is_the_argmax_of_the_evidences_it_reports_and_is_seeded():
    x, y = blobs()
    candidates = mlp_candidates(2, 2, widths=((4,), (8, 8), (16,)))
    choice = select_model(candidates, x, y, train=SHORT, seed=3, device="cpu")
    assert list(choice.evidences) == list(candidates)
    assert all(math.isfinite(v) for v in choice.evidences.values())
    assert choice.evidences[choice.name] == max(choice.evidences.values())
    assert choice.model_fn is candidates[choice.name]
    again = select_model(candidates, x, y, train=SHORT, seed=3, device="cpu")
    assert again.name == choice.name and again.evidences == choice.evidences
    assert choice.record() == {"model": choice.name, "evidences": choice.evidences}


def test_the_evidences_are_log_evidence_of_the_trained_networks():
    x, y = blobs()
    choice = select_model({"linear": linear}, x, y, train=SHORT, seed=0, device="cpu")
    direct = log_evidence(choice.model, x, y, "marglik")
    assert choice.evidences["linear"] == pytest.approx(float(direct), rel=1e-12)


@pytest.mark.parametrize("order", [("blind", "linear"), ("linear", "blind")])
def test_a_network_blind_to_x_loses_on_separable_data(order):
    # The blind network's likelihood is at best the class frequencies' (40 log 2 = 27.7 nats below
    # zero); the linear one separates the blobs (a 6-sigma gap) with a few nats of Occam factor.
    x, y = blobs()
    factories = {"blind": blind, "linear": linear}
    choice = select_model({k: factories[k] for k in order}, x, y, train=TrainConfig(epochs=60, lr=0.05, batch_size=40), seed=0, device="cpu")
    assert choice.name == "linear"
    assert choice.evidences["blind"] < choice.evidences["linear"] - 5.0


def test_a_tie_goes_to_the_earlier_candidate():
    x, y = blobs(16)
    choice = select_model({"first": linear, "second": linear}, x, y, train=SHORT, seed=1, device="cpu")
    assert choice.evidences["first"] == choice.evidences["second"] and choice.name == "first"


def test_regression_candidates():
    x = torch.linspace(-1, 1, 24)[:, None]
    y = (2 * x[:, 0]).float()
    choice = select_model(mlp_candidates(1, 1, widths=((4,), (8,))), x, y, train=SHORT, seed=0, device="cpu")
    assert set(choice.evidences) == {"mlp-1x4", "mlp-1x8"} and all(math.isfinite(v) for v in choice.evidences.values())
    assert choice.evidences[choice.name] == max(choice.evidences.values())


def test_mistakes():
    x, y = blobs(8)
    with pytest.raises(ConfigError, match="at least one"):
        select_model({}, x, y)
    with pytest.raises(ConfigError, match="factory"):
        select_model({"bad": 3}, x, y, train=SHORT)


# ---- round --model auto -----------------------------------------------------------------------


def test_round_model_auto_records_the_choice(cli_db):
    from cli_checks import ok
    from test_cli_round import TINY, add_project

    add_project("blobs")
    args = ("round", *TINY, "--k", "6", "--oracle", "truth", "--model", "auto")
    cold = json.loads(ok("--json", *args).stdout)
    assert cold["posterior_settings"]["model"] == "auto" and "model_choice" not in cold["posterior_settings"]
    data = json.loads(ok("--json", *args).stdout)
    choice = data["posterior_settings"]["model_choice"]
    assert data["posterior_settings"]["model"] == "auto" and data["labelled"] == 6
    assert list(choice["evidences"]) == ["mlp-1x64", "mlp-2x64", "mlp-2x128", "mlp-1x256"]
    assert choice["evidences"][choice["model"]] == max(choice["evidences"].values())
    shown = ok(*args).stdout
    assert "by Laplace evidence" in " ".join(shown.split())
    status = " ".join(ok("status").stdout.split())
    assert f"auto: {choice['model']}" in status
    waiting = ("--json", "round", *TINY, "--k", "6", "--model", "auto")
    started = json.loads(ok(*waiting).stdout)  # waits for its answers in a round file
    Path(started["csv"]).unlink()  # as if killed before writing it: the round is resumed with its recorded options
    resumed = json.loads(ok(*waiting).stdout)
    assert resumed["resumed"] and resumed["posterior_settings"] == started["posterior_settings"]


def test_round_model_auto_mistakes_are_one_line(cli_db):
    from cli_checks import assert_mistake, db_dump, ok, run
    from test_cli_regression import write_regression_csv

    write_regression_csv(Path("pool.csv"))
    ok("init", "--name", "reg", "--task", "regression")
    ok("pool", "add", "pool.csv", "--key-column", "id", "--label-column", "y", "--test-fraction", "0.25")
    before = db_dump(cli_db)
    assert_mistake(run("round", "--oracle", "truth", "--posterior", "gp", "--model", "auto"), "--model", "gp")
    common = ("round", "--epochs", "1", "--samples", "2", "--device", "cpu", "--oracle", "truth", "--posterior", "mc-dropout")
    assert_mistake(run(*common, "--model", "auto", "--likelihood", "heteroscedastic"), "--model auto", "heteroscedastic")
    assert db_dump(cli_db) == before
