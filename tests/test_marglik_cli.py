"""`activebayes round --posterior laplace` with the whole network and online marglik training,
through --option (subset=all, prior_precision=online), and its one-line mistakes."""

from __future__ import annotations

import json

import pytest

from cli_checks import assert_mistake, db_dump, ok, run
from test_cli_round import TINY, add_project

LAPLACE_ALL = ("--posterior", "laplace", "--option", "subset=all", "--option", "prior_precision=online")


@pytest.fixture
def pooled(cli_db):
    add_project("blobs")
    return cli_db


def test_round_with_whole_network_marglik_laplace(pooled, monkeypatch):
    from activebayes.posteriors.laplace import Laplace

    fitted = []
    fit = Laplace.fit

    def spy(self, x, y):
        fitted.append(fit(self, x, y))
        return fitted[-1]

    monkeypatch.setattr(Laplace, "fit", spy)
    args = ("--json", "round", *TINY, "--k", "4", "--oracle", "truth", *LAPLACE_ALL)
    ok(*args)  # the cold start: a random first batch
    data = json.loads(ok(*args).stdout)
    assert data["status"] == "done" and data["posterior"] == "laplace" and data["labelled"] == 4
    assert data["posterior_settings"]["options"] == {"subset": "all", "prior_precision": "online"}
    assert fitted and all(la.subset == "all" and la.marglik_ is not None and la.marglik_.best_epoch is not None for la in fitted)


@pytest.mark.parametrize(
    "options, words",
    [(["--option", "subset=everything"], ["--option subset: expected one of", "'all'"]),
     (["--option", "subset=all", "--option", "hessian=lowrank"], ["--option hessian: expected one of", "'lowrank'"]),
     (["--option", "prior_precision=onlin"], ["--option prior_precision: expected a positive number", "'onlin'"]),
     (["--option", "prior_precision=[1.0, 2.0]"], ["--option prior_precision"])],
)  # fmt: skip
def test_mistakes_are_one_line(pooled, options, words):
    before = db_dump(pooled)
    assert_mistake(run("round", *TINY, "--oracle", "truth", "--posterior", "laplace", *options), *words)
    assert db_dump(pooled) == before
