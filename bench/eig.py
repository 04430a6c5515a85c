"""EIG benchmark: our grid fast path vs QUEST+ (per trial) and vs Pyro's nested Monte Carlo (accuracy).

    .venv/bin/python bench/eig.py [--trials 30] [--threads 1]

1. Per trial (update with the answer + choose the next design), 15 designs (1..15 digits), on
   a 601-point θ grid and on a 201 × 100 (θ, slope) grid, against `questplus.QuestPlus` with the
   same grids, prior, psychometric function and answers. QUEST+ offers a normal-CDF function, so
   both sides use the probit link with γ = λ = 0.01: QUEST+'s intensity is −ξ, its mean −θ and its
   sd 1/slope, so p = γ + (1−γ−λ) Φ((−ξ + θ) · slope) is the same function. QUEST+'s minimum
   expected entropy rule picks the same design as maximum EIG (E[H_post] = H_now − EIG); the script
   checks that the designs and posterior means agree.
2. Accuracy at the prior (θ ~ N(7, 2²), logit, slope 1; and slope ~ LogNormal(0, 0.5²)): Pyro's
   `pyro.contrib.oed.eig.nmc_eig` at several (N, M) against the exact EIG, and the time of each.
Timings are medians of repeated runs in one process; torch threads are fixed by --threads.
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np
import torch

from _common import bench_parser, parse_and_set_threads
from activebayes.design import EIGTable, GridPosterior, MemorySpanModel, SimulatedParticipant

DESIGNS = torch.arange(1.0, 16.0, dtype=torch.float64)


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def grids(joint: bool) -> tuple[GridPosterior, MemorySpanModel]:
    model = MemorySpanModel(link="probit", guess=0.01, lapse=0.01)
    theta = torch.linspace(-3.0, 17.0, 201 if joint else 601, dtype=torch.float64)
    if joint:
        return GridPosterior(model, theta_grid=theta, learn_slope=True, n_slope=100), model
    return GridPosterior(model, theta_grid=theta), model


def questplus_for(post: GridPosterior):
    from questplus import QuestPlus

    theta = post.theta_grid.numpy()
    prior_theta = np.exp(-0.5 * ((theta - 7.0) / 2.0) ** 2)
    # QUEST+ wants increasing coordinates: mean = −θ reversed; the prior follows the same order
    param_domain = {"mean": -theta[::-1], "sd": np.array([1.0 / post.model.slope]), "lower_asymptote": 0.01, "lapse_rate": 0.01}
    prior = {"mean": prior_theta[::-1], "sd": np.array([1.0]), "lower_asymptote": np.array([1.0]), "lapse_rate": np.array([1.0])}
    if post.slope_grid is not None:
        slopes = post.slope_grid.numpy()
        sd = 1.0 / slopes[::-1]  # increasing sd
        param_domain["sd"] = sd
        prior["sd"] = np.exp(-0.5 * (np.log(1.0 / sd) / 0.5) ** 2)  # log s ~ N(0, 0.5²)
    return QuestPlus(
        stim_domain={"intensity": -DESIGNS.numpy()[::-1]},
        param_domain=param_domain,
        outcome_domain={"response": ["Correct", "Incorrect"]},
        prior=prior,
        func="norm_cdf",
        stim_scale="linear",
        stim_selection_method="min_entropy",
        param_estimation_method="mean",
    )


def per_trial(joint: bool, n_trials: int, seed: int) -> dict[str, float]:
    post, model = grids(joint)
    label = "201x100 (θ, slope)" if joint else "601 θ"
    setup_start = time.perf_counter()
    table = EIGTable(post, DESIGNS)
    setup_ours = time.perf_counter() - setup_start
    setup_start = time.perf_counter()
    qp = questplus_for(post)
    setup_qp = time.perf_counter() - setup_start
    who = SimulatedParticipant(6.3, slope=1.4, guess=0.01, lapse=0.01, link="probit", seed=seed)
    ours_t, qp_t, agree = [], [], 0
    d = int(table.eig(post.weights).argmax())
    stim = qp.next_stim
    for _ in range(n_trials):
        agree += int(abs(-stim["intensity"] - float(DESIGNS[d])) < 1e-9)
        y = who.answer(float(DESIGNS[d]))

        start = time.perf_counter()
        table.update(post, d, y)
        d_next = int(table.eig(post.weights).argmax())
        ours_t.append(time.perf_counter() - start)

        start = time.perf_counter()
        qp.update(stim={"intensity": -float(DESIGNS[d])}, outcome={"response": "Correct" if y else "Incorrect"})
        stim = qp.next_stim
        qp_t.append(time.perf_counter() - start)
        d = d_next
    qp_mean = -qp.param_estimate["mean"]
    ours, theirs = statistics.median(ours_t), statistics.median(qp_t)
    print(f"[{label}] G={post.n_points}: per trial (update + next design), median of {n_trials}: "
          f"ours {ours * 1e6:.0f} µs, QUEST+ {theirs * 1e3:.2f} ms  -> {theirs / ours:.0f}x faster")  # fmt: skip
    print(f"    set-up: ours {setup_ours * 1e3:.1f} ms (tables), QUEST+ {setup_qp * 1e3:.1f} ms;"
          f" same design on {agree}/{n_trials} trials; posterior mean θ ours {post.mean:.6f} vs QUEST+ {qp_mean:.6f}")  # fmt: skip
    return {"ours_s": ours, "questplus_s": theirs, "ratio": theirs / ours, "agree": agree}


def pyro_model(learn_slope: bool):
    import pyro
    import pyro.distributions as dist

    def model(design):
        with pyro.plate_stack("plate", design.shape[:-1]):
            theta = pyro.sample("theta", dist.Normal(7.0, 2.0)).unsqueeze(-1)
            slope = pyro.sample("slope", dist.LogNormal(0.0, 0.5)).unsqueeze(-1) if learn_slope else 1.0
            return pyro.sample("y", dist.Bernoulli(logits=slope * (theta - design)).to_event(1))

    return model


def accuracy(learn_slope: bool, repeats: int) -> None:
    import pyro
    from pyro.contrib.oed.eig import nmc_eig

    model = MemorySpanModel()  # logit, slope 1 (or learnt), no lapse: Pyro's tutorial model
    if learn_slope:
        post = GridPosterior(model, learn_slope=True, n_theta=201, n_slope=100, slope_log_sd=0.5)
        # the default slope grid spans ±3σ of log s; the reference below uses ±5σ and 400 × 400
        fine = GridPosterior(model, theta_grid=torch.linspace(-5, 19, 481, dtype=torch.float64),
                             slope_grid=torch.linspace(-2.5, 2.5, 400, dtype=torch.float64).exp())  # fmt: skip
    else:
        post = GridPosterior(model, theta_grid=torch.linspace(-3, 17, 601, dtype=torch.float64))
        fine = GridPosterior(model, theta_grid=torch.linspace(-7, 21, 20001, dtype=torch.float64))
    label = "201x100 (θ, slope)" if learn_slope else "601 θ"
    reference = EIGTable(fine, DESIGNS).eig(fine.weights)
    ours_eig = EIGTable(post, DESIGNS).eig(post.weights)
    t_ours_build = median_time(lambda: EIGTable(post, DESIGNS).eig(post.weights), repeats)
    table = EIGTable(post, DESIGNS)
    t_ours = median_time(lambda: table.eig(post.weights), repeats * 20)
    print(f"[{label}] exact EIG over 15 designs: {t_ours * 1e6:.0f} µs per trial from the stored tables "
          f"({t_ours_build * 1e3:.2f} ms building them); max |ours − fine-grid reference| = "
          f"{float((ours_eig - reference).abs().max()):.1e} nats")  # fmt: skip
    designs32 = DESIGNS.float().unsqueeze(-1)  # [15, 1], Pyro's layout
    targets = ["theta", "slope"] if learn_slope else ["theta"]
    for n, m in ((100, 100), (1000, 100), (1000, 1000), (4000, 1000)):
        errors, times = [], []
        for r in range(3):
            pyro.set_rng_seed(r)
            start = time.perf_counter()
            est = nmc_eig(pyro_model(learn_slope), designs32, ["y"], targets, N=n, M=m)
            times.append(time.perf_counter() - start)
            errors.append(float((est.double() - reference).abs().max()))
        t = statistics.median(times)
        print(f"    Pyro nmc_eig N={n:>4} M={m:>4}: {t * 1e3:8.1f} ms ({t / t_ours:8.0f}x ours), "
              f"max error over designs {statistics.mean(errors):.3f} nats (mean of 3 seeds; worst {max(errors):.3f})")  # fmt: skip


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parse_and_set_threads(parser)
    warnings.filterwarnings("ignore")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)\n== per trial: ours vs QUEST+ ==")
    per_trial(False, args.trials, args.seed)
    per_trial(True, args.trials, args.seed)
    print("\n== accuracy at the prior: exact grid EIG vs Pyro's nested Monte Carlo ==")
    accuracy(False, 20)
    accuracy(True, 10)


if __name__ == "__main__":
    main()
