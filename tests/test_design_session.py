"""The simulated participant, the session runner and its baselines."""

from __future__ import annotations

import pytest
import torch

from activebayes.design import GridPosterior, MemorySpanModel, SimulatedParticipant, run_design_session
from activebayes.errors import ConfigError

DESIGNS = torch.arange(1.0, 15.0, dtype=torch.float64)


def test_participant_deterministic_and_seeded_draws():
    who = SimulatedParticipant(6.0, deterministic=True)
    assert [who.answer(n) for n in range(1, 15)] == [1] * 5 + [0] * 9  # Pyro's y = (l < 6)
    a = SimulatedParticipant(6.5, slope=1.0, seed=11)
    b = SimulatedParticipant(6.5, slope=1.0, seed=11)
    answers = [a.answer(6.5) for _ in range(4000)]
    assert answers[:50] == [b.answer(6.5) for _ in range(50)]
    assert sum(answers) / 4000 == pytest.approx(0.5, abs=0.03)
    lapsing = SimulatedParticipant(20.0, lapse=0.2, seed=2)
    assert sum(lapsing.answer(3) for _ in range(4000)) / 4000 == pytest.approx(0.8, abs=0.03)
    from activebayes.oracles.base import Answer

    assert a.ask(["k1", "k2"], [1.0, 30.0]) == [Answer("k1", 1), Answer("k2", 0)]
    assert who.ask(["digits=3", "digits=9,rate=1.5"]) == [Answer("digits=3", 1), Answer("digits=9,rate=1.5", 0)]


def test_pyro_working_memory_tutorial_setting():
    # Pyro's OED tutorial: prior N(7, 2²), designs 1..14, participant recalls iff length < 6
    post = GridPosterior(MemorySpanModel(), n_theta=801)
    trace = run_design_session(post, DESIGNS, SimulatedParticipant(6.0, deterministic=True), 10, seed=0)
    assert len(trace.trials) == 10
    assert [t.design for t in trace.trials[:3]] == [7.0, 6.0, 5.0]
    assert 5.4 <= post.mean <= 5.8
    assert post.sd == pytest.approx(0.65, abs=0.05)
    assert trace.trials[-1].mean == post.mean and trace.trials[-1].sd == post.sd
    # every chosen design was the EIG argmax, so its EIG is the largest offered; EIG falls as we learn
    eigs = [t.eig for t in trace.trials]
    assert eigs[0] == pytest.approx(0.2311, abs=1e-3) and eigs[-1] < eigs[0] / 3


def test_baseline_design_sequences():
    who = SimulatedParticipant(7.2, deterministic=True)
    fixed = run_design_session(GridPosterior(MemorySpanModel()), DESIGNS, who, 16, "fixed")
    assert [t.design for t in fixed.trials] == [float(v) for v in range(1, 15)] + [1.0, 2.0]
    stair = run_design_session(GridPosterior(MemorySpanModel()), DESIGNS, who, 6, "staircase")
    # starts at the prior mean 7: recalled -> 8: missed -> 7 -> 8 ...
    assert [t.design for t in stair.trials] == [7.0, 8.0, 7.0, 8.0, 7.0, 8.0]
    assert [t.outcome for t in stair.trials] == [1, 0, 1, 0, 1, 0]
    r1 = run_design_session(GridPosterior(MemorySpanModel()), DESIGNS, SimulatedParticipant(6.0, seed=1), 20, "random", seed=5)
    r2 = run_design_session(GridPosterior(MemorySpanModel()), DESIGNS, SimulatedParticipant(6.0, seed=1), 20, "random", seed=5)
    assert [t.design for t in r1.trials] == [t.design for t in r2.trials]
    assert len({t.design for t in r1.trials}) > 5


def test_target_sd_stops_early_and_errors():
    post = GridPosterior(MemorySpanModel(slope=2.0))
    trace = run_design_session(post, DESIGNS, SimulatedParticipant(6.5, slope=2.0, seed=3), 100, target_sd=0.5)
    assert 0 < len(trace.trials) < 100
    assert post.sd <= 0.5 and trace.trials[-2].sd > 0.5
    with pytest.raises(ConfigError, match="strategy"):
        run_design_session(GridPosterior(MemorySpanModel()), DESIGNS, SimulatedParticipant(6.0), 3, "greedy")
    with pytest.raises(ConfigError, match="target_sd"):
        run_design_session(GridPosterior(MemorySpanModel()), DESIGNS, SimulatedParticipant(6.0), 3, target_sd=-1.0)


def test_eig_beats_random_on_average_over_simulated_participants():
    gen = torch.Generator().manual_seed(0)
    spans = 7.0 + 2.0 * torch.randn(40, generator=gen, dtype=torch.float64)
    errors = {"eig": 0.0, "random": 0.0}
    for i, span in enumerate(spans.tolist()):
        for strategy in errors:
            post = GridPosterior(MemorySpanModel(), n_theta=201)
            run_design_session(post, DESIGNS, SimulatedParticipant(span, seed=i), 15, strategy, seed=i)
            errors[strategy] += (post.mean - span) ** 2 / len(spans)
    assert errors["eig"] < errors["random"]


def test_learnt_slope_session_and_json_trace():
    post = GridPosterior(MemorySpanModel(), learn_slope=True, n_theta=101, n_slope=20)
    trace = run_design_session(post, DESIGNS, SimulatedParticipant(8.0, slope=2.5, seed=4), 30)
    out = trace.to_dict()
    assert set(out["posterior"]) == {"mean", "sd", "interval", "slope_mean"}
    assert len(out["trials"]) == 30 and abs(out["posterior"]["mean"] - 8.0) < 1.5


def test_two_dimensional_designs_digits_and_rate():
    # 6 digits at 2/s is as hard as 7 at 1/s when rate_cost = 1: the session treats them alike
    model = MemorySpanModel(rate_cost=1.0)
    designs = torch.tensor([[d, r] for d in range(3, 12) for r in (1.0, 2.0)], dtype=torch.float64)
    post = GridPosterior(model)
    trace = run_design_session(post, designs, SimulatedParticipant(6.0, deterministic=True), 4)
    first = trace.trials[0].design
    assert isinstance(first, list) and first[0] + (first[1] - 1.0) == 7.0
    for t in trace.trials:  # the simulated participant sees the digits only; the model the difficulty
        assert t.outcome == int(t.design[0] < 6.0)
