"""Memory-span study: EIG-chosen lists vs random, fixed ascending and 1-up/1-down staircase designs.

200 simulated participants, spans drawn from the prior θ ~ N(7, 2²), no lapse, designs 1..15
digits, up to 50 trials each, in two settings: the slope known (1, the participants' slope), and
the slope learnt on a joint (θ, s) grid with the participants' slopes drawn from its prior
LogNormal(0, 0.5²); there EIG is scored for θ alone (the slope a nuisance, `target="theta"`) and,
as a second row, for (θ, s) jointly. Every strategy meets the same participants (same span, same
seed of the participant's answers). Reported after 10, 20, 30 and 50 trials: the RMSE of the
posterior mean against the true span, and the mean posterior sd; and the first trial count at
which EIG reaches random design's 30-trial RMSE.

    .venv/bin/python studies/memory_span/run.py [--participants 200] [--trials 50] [--seed 0]

Writes results.json (the same bytes for the same seed), timings.json (the seconds), results.md and
rmse.png next to this file (or into --out).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from activebayes.design import EIGTable, GridPosterior, MemorySpanModel, SimulatedParticipant, run_design_session

# row label -> (strategy, EIG target)
ROWS = {"eig": ("eig", "theta"), "eig (θ and slope)": ("eig", "all"), "random": ("random", "all"),
        "fixed": ("fixed", "all"), "staircase": ("staircase", "all")}  # fmt: skip
CHECKPOINTS = (10, 20, 30, 50)


def run(n_participants: int, n_trials: int, seed: int, *, learn_slope: bool = False) -> dict:
    """Curves [strategy][t] of RMSE and mean sd after t+1 trials, over the same participants."""
    model = MemorySpanModel()
    designs = torch.arange(1.0, 16.0, dtype=torch.float64)

    def prior() -> GridPosterior:
        if learn_slope:
            return GridPosterior(model, learn_slope=True, n_theta=201, n_slope=30)
        return GridPosterior(model, n_theta=401)

    table = EIGTable(prior(), designs)  # one table for every session: same grid, same designs
    gen = torch.Generator().manual_seed(seed)
    spans = (7.0 + 2.0 * torch.randn(n_participants, generator=gen, dtype=torch.float64)).tolist()
    if learn_slope:  # each participant's slope from the prior LogNormal(0, 0.5²)
        slopes = (0.5 * torch.randn(n_participants, generator=gen, dtype=torch.float64)).exp().tolist()
    else:
        slopes = [1.0] * n_participants
    rows = [r for r in ROWS if learn_slope or r != "eig (θ and slope)"]
    sq = {s: [0.0] * n_trials for s in rows}
    sds = {s: [0.0] * n_trials for s in rows}
    var = {s: [0.0] * n_trials for s in rows}
    per_participant = {s: torch.zeros(n_participants, n_trials, dtype=torch.float64) for s in rows}
    seconds = {s: 0.0 for s in rows}
    for i, (span, slope) in enumerate(zip(spans, slopes)):
        for row in rows:
            strategy, target = ROWS[row]
            who = SimulatedParticipant(span, slope=slope, seed=seed * 100_003 + i)
            start = time.perf_counter()
            trace = run_design_session(
                prior(), designs, who, n_trials, strategy, seed=seed * 100_003 + i, table=table, target=target
            )
            seconds[row] += time.perf_counter() - start
            for t, trial in enumerate(trace.trials):
                sq[row][t] += (trial.mean - span) ** 2 / n_participants
                sds[row][t] += trial.sd / n_participants
                var[row][t] += trial.sd**2 / n_participants
                per_participant[row][i, t] = (trial.mean - span) ** 2
    rmse = {s: [math.sqrt(v) for v in sq[s]] for s in rows}
    # spans come from the prior, so E[(mean − θ)²] = E[Var(θ | data)]: the root mean posterior
    # variance estimates the same Bayes risk as the RMSE with far less Monte Carlo noise
    root_var = {s: [math.sqrt(v) for v in var[s]] for s in rows}
    # paired difference of squared errors, EIG − staircase, and its standard error, per trial count
    diff = per_participant["eig"] - per_participant["staircase"]  # [P, T]
    paired = {"mean": diff.mean(0).tolist(), "se": (diff.std(0) / math.sqrt(n_participants)).tolist()}
    return {"rmse": rmse, "mean_sd": sds, "root_mean_var": root_var, "eig_minus_staircase_sq_error": paired,
            "seconds": seconds, "spans": spans, "slopes": slopes}


def first_reaching(curve: list[float], level: float) -> int | None:
    """The first trial count n (1-based) with curve[n−1] <= level, or None."""
    return next((t + 1 for t, v in enumerate(curve) if v <= level), None)


def markdown(result: dict, n_participants: int, n_trials: int, title: str) -> str:
    rmse, sd = result["rmse"], result["mean_sd"]
    checks = [c for c in CHECKPOINTS if c <= n_trials]
    lines = [f"### {title}", "", f"{n_participants} simulated participants, θ ~ N(7, 2²); RMSE of the posterior mean "
             "(mean posterior sd in brackets), digits.", ""]  # fmt: skip
    lines.append("| strategy | " + " | ".join(f"{c} trials" for c in checks) + " |")
    lines.append("|---|" + "---|" * len(checks))
    for s in rmse:
        cells = [f"{rmse[s][c - 1]:.3f} ({sd[s][c - 1]:.3f})" for c in checks]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    root_var, paired = result["root_mean_var"], result["eig_minus_staircase_sq_error"]
    lines += ["", "Root mean posterior variance (the Bayes risk the RMSE estimates, with much less noise, "
              "since spans come from the prior):", ""]  # fmt: skip
    lines.append("| strategy | " + " | ".join(f"{c} trials" for c in checks) + " |")
    lines.append("|---|" + "---|" * len(checks))
    for s in root_var:
        lines.append(f"| {s} | " + " | ".join(f"{root_var[s][c - 1]:.3f}" for c in checks) + " |")
    cells = [f"{paired['mean'][c - 1]:+.3f} ± {paired['se'][c - 1]:.3f}" for c in checks]
    lines += ["", "Paired squared-error difference EIG − staircase (mean ± standard error over participants): "
              + ", ".join(f"{c} trials {cell}" for c, cell in zip(checks, cells)) + "."]  # fmt: skip
    if n_trials >= 30:
        target = rmse["random"][29]
        n_eig = first_reaching(rmse["eig"], target)
        lines += ["", f"Random design's 30-trial RMSE is {target:.3f}; EIG reaches it after "
                  f"{n_eig if n_eig is not None else '> ' + str(n_trials)} trials "
                  f"({'within' if n_eig is not None and n_eig <= 10 else 'NOT within'} a third of 30)."]  # fmt: skip
        beats = [c for c in checks if rmse["eig"][c - 1] < rmse["staircase"][c - 1]]
        lines.append(f"EIG has a lower RMSE than the staircase at {len(beats)} of {len(checks)} checkpoints "
                     f"({', '.join(str(c) for c in beats) or 'none'}).")  # fmt: skip
        beats_var = [c for c in checks if root_var["eig"][c - 1] < root_var["staircase"][c - 1]]
        lines.append(f"EIG has a lower root mean posterior variance than the staircase at {len(beats_var)} of "
                     f"{len(checks)} checkpoints ({', '.join(str(c) for c in beats_var) or 'none'}).")  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(results: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for ax, (title, result) in zip(axes[0], results.items()):
        for s in result["rmse"]:
            curve = result["rmse"][s]
            ax.plot(range(1, len(curve) + 1), curve, label=s)
        ax.set_xlabel("trials")
        ax.set_ylabel("RMSE of the span estimate (digits)")
        ax.set_title(title, fontsize=9)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=200)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: these tensors are small)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {
        "known slope (participants' slope 1 = the model's)": {"learn_slope": False},
        "learnt slope (participants' slopes from LogNormal(0, 0.5²), joint 201 × 30 (θ, s) grid)": {"learn_slope": True},
    }
    results, timings, parts = {}, {}, ["## Memory span: EIG vs baseline designs", ""]
    for title, kw in settings.items():
        start = time.perf_counter()
        results[title] = run(args.participants, args.trials, args.seed, **kw)
        timings[title] = {"seconds": results[title].pop("seconds"), "wall_s": time.perf_counter() - start}
        parts.append(markdown(results[title], args.participants, args.trials, title))
        print(parts[-1])
        print(f"({timings[title]['wall_s']:.1f} s; per strategy {timings[title]['seconds']})\n")
    parts.append(
        "Notes. Every strategy's estimate is the same exact grid posterior mean; only the designs differ. "
        "The 1-up/1-down staircase starts at the prior mean (7 digits, EIG's first design too) and "
        "converges on the 50% point of the psychometric function, which is exactly θ here, so it is "
        "a strong baseline for this estimand; against it, EIG's RMSE differences are mostly within "
        "the paired standard errors above, while its expected posterior variance is lower. With a "
        "learnt slope, scoring EIG for (θ, s) jointly spends trials on the slope and is worse for θ "
        "after 30 trials than scoring θ alone.\n"
    )
    parts.append("Command: `.venv/bin/python studies/memory_span/run.py` (seed 0, 1 torch thread); figure: rmse.png.\n")
    (args.out / "results.md").write_text("\n".join(parts))
    (args.out / "results.json").write_text(json.dumps(results, indent=1))  # the same bytes for the same seed
    (args.out / "timings.json").write_text(json.dumps(timings, indent=1))  # the seconds, different every run
    plot(results, args.out / "rmse.png")


if __name__ == "__main__":
    main()
