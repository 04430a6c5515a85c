"""Seeded Monte-Carlo coverage of the estimates `status` shows (activebayes.round_estimates.pool_estimate).

Imitates what the loop records: a pool of N items with known per-item losses under a fixed model,
a proposal q from scores (the model's expected loss), items drawn without replacement with their
recorded probabilities, and three draw schemes:
  uniform   a random round / the first random batch (q_m = 1/(N-m+1))
  proposal  power / active-testing draws, q ∝ (1-ε) e/Σe + ε/N, sequential without replacement
  auto      auto's round: D = 4r items fixed (top-r by expected loss), then r uniform from the rest
Prints coverage of each nominal 95 % interval and the bias of each shown value. The figures
quoted in `activebayes/estimate_intervals.py`'s docstring come from this script:

    OMP_NUM_THREADS=1 .venv/bin/python studies/estimates/coverage.py 1000              # kappa 6, the default
    OMP_NUM_THREADS=1 .venv/bin/python studies/estimates/coverage.py 1000 --kappa 2    # the cap at M before
    PYTHONPATH=OLD_CHECKOUT ... coverage.py 1000                                        # the t intervals of c02f931
    OMP_NUM_THREADS=1 .venv/bin/python studies/estimates/coverage.py 1000 --pooled     # auto's draws pooled over rounds

--pooled asks whether auto's 2 random draws a round could be pooled over the last W rounds into one
interval (`pooled_coverage`): each round's model is a different one, so W rounds' draws are 2W
draws of W models' losses; it prints how often the pooled MSE interval holds the latest model's
MSE and the W models' mean MSE, for learning curves whose first model in the window has `ratio`
times the latest one's MSE.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from activebayes import estimates
from activebayes.estimates import proposal_weights
from activebayes.round_estimates import LossTable, pool_estimate

N = 1000
COUNTS = (2, 5, 10, 20, 60)


def classification_pool(rng, heavy: bool):
    """Per-item p(y) of the true class (binary): 80 % easy (Beta(20,1)), 20 % hard (Beta(1,2));
    heavy: 2 % confidently wrong, p(y) log-uniform in [1e-6, 1e-2]."""
    n_hard = int(0.2 * N)
    p = np.concatenate([rng.beta(20, 1, N - n_hard), rng.beta(1, 2, n_hard)])
    if heavy:
        k = int(0.02 * N)
        p[:k] = np.exp(rng.uniform(np.log(1e-6), np.log(1e-2), k))
    p = np.clip(p, 1e-9, 1 - 1e-9)
    zero_one = (p < 0.5).astype(float)
    nll = -np.log(p)
    q = np.maximum(p, 1 - p)  # the model's confidence in its own label
    expected = -(q * np.log(q) + (1 - q) * np.log(1 - q))  # its entropy: the surrogate's expected NLL
    return {"zero_one": zero_one, "class_nll": nll}, expected


def regression_pool(rng, kind: str):
    """Residuals r_i and the model's predictive sd s_i: gauss (σ = 1), lognormal scales
    (σ_i = exp(0.5 N(0,1)); lognormal1: exp(N(0,1)); the model knows them), t3 (Student t_3 residuals, σ = 1)."""
    if kind == "gauss":
        s = np.ones(N)
        r = rng.normal(size=N)
    elif kind.startswith("lognormal"):
        s = np.exp((0.5 if kind == "lognormal" else 1.0) * rng.normal(size=N))
        r = s * rng.normal(size=N)
    else:
        s = np.full(N, math.sqrt(3.0))
        r = rng.standard_t(3, size=N)
    squared = r**2
    normal_nll = 0.5 * np.log(2 * np.pi * s**2) + squared / (2 * s**2)
    losses = {"squared": squared, "normal_nll": normal_nll}
    if "normal_misfit" in LossTable.__dataclass_fields__:  # absent before the Gaussian NLL's interval was summed (c02f931)
        losses["normal_misfit"] = squared / (2 * s**2)
    return losses, s**2


def sequential_draw(w, m, rng):
    keys = np.log(w) + rng.gumbel(size=len(w))
    pos = np.argsort(-keys)[:m]
    drawn = w[pos]
    left = w.sum() - np.concatenate([[0.0], np.cumsum(drawn)[:-1]])
    return pos, drawn / left


def one_draw(scheme, expected, m, rng):
    """(fixed positions [D], drawn positions [M], q [M]); pool size N."""
    if scheme == "uniform":
        pos = rng.choice(N, m, replace=False)
        return np.zeros(0, int), pos, 1.0 / (N - np.arange(m))
    if scheme == "proposal":
        pos, q = sequential_draw(proposal_weights(expected), m, rng)
        return np.zeros(0, int), pos, q
    d = 4 * m
    fixed = np.argsort(-expected)[:d]
    rest = np.setdiff1d(np.arange(N), fixed)
    pos = rng.choice(rest, m, replace=False)
    return fixed, pos, 1.0 / (len(rest) - np.arange(m))


FIGURES = {"classification": ("accuracy", "class_nll"), "regression": ("mse", "rmse", "normal_nll")}


def truth_of(losses, figure):
    if figure == "accuracy":
        return 1 - losses["zero_one"].mean()
    if figure == "mse":
        return losses["squared"].mean()
    if figure == "rmse":
        return math.sqrt(losses["squared"].mean())
    return losses[figure].mean()


def simulate(task, pool_kind, scheme, m, reps, seed):
    rng = np.random.default_rng(seed)
    losses, expected = classification_pool(rng, pool_kind == "heavy") if task == "classification" else regression_pool(rng, pool_kind)
    figures = FIGURES[task]
    truths = {f: truth_of(losses, f) for f in figures}
    covered = {f: 0 for f in figures}
    shown = {f: 0 for f in figures}
    below = {f: 0 for f in figures}
    values = {f: [] for f in figures}
    for _ in range(reps):
        fixed, pos, q = one_draw(scheme, expected, m, rng)
        table = lambda rows: LossTable(**{k: v[rows] for k, v in losses.items()})  # noqa: E731
        e = pool_estimate(table(fixed) if len(fixed) else None, table(pos), q, N, len(fixed) + m)
        for f in figures:
            est = e.rmse.map(lambda x: x * x) if f == "mse" else getattr(e, f)
            if est is None:
                continue
            finite = math.isfinite(est.high) and math.isfinite(est.low)
            shown[f] += finite
            covered[f] += est.low <= truths[f] <= est.high
            below[f] += est.high < truths[f]
            bounds = (0.0, 1.0) if f == "accuracy" else ((-math.inf, math.inf) if f == "normal_nll" else (0.0, math.inf))
            values[f].append(min(max(est.value, bounds[0]), bounds[1]))
    out = []
    for f in figures:
        v = np.asarray(values[f])
        scale = abs(truths[f]) if truths[f] != 0 else 1.0
        out.append((f, covered[f] / reps, below[f] / reps, shown[f] / reps, (v.mean() - truths[f]) / scale if len(v) else float("nan")))
    return out


CASES = [
    ("classification", "plain", "uniform"), ("classification", "plain", "proposal"), ("classification", "plain", "auto"),
    ("classification", "heavy", "uniform"), ("classification", "heavy", "proposal"),
    ("regression", "gauss", "uniform"), ("regression", "gauss", "auto"),
    ("regression", "lognormal", "uniform"), ("regression", "lognormal", "proposal"), ("regression", "lognormal", "auto"),
    ("regression", "t3", "uniform"), ("regression", "t3", "auto"),
    ("regression", "lognormal1", "uniform"), ("regression", "lognormal1", "proposal"),
]


def pooled_coverage(kind: str, rounds: int, ratio: float, reps: int, seed: int, per_round: int = 2) -> tuple[float, float, float, float]:
    """(share of pooled intervals holding the latest model's MSE, share whose upper end is at or
    above it, share holding the W models' mean MSE, share with a finite upper end): W = `rounds` rounds, each drawing `per_round` items
    uniformly; round t's model has squared errors r_i² c_t, c_t = ratio^((W − t)/(W − 1)) (c_W = 1),
    and the W·per_round losses, each under its own round's model, go to `pool_estimate` as one
    uniform sample."""
    rng = np.random.default_rng(seed)
    losses, _ = regression_pool(rng, kind)
    scale = ratio ** ((rounds - 1 - np.arange(rounds)) / max(rounds - 1, 1))  # [W], the last 1
    latest, mean = losses["squared"].mean(), losses["squared"].mean() * scale.mean()
    m = rounds * per_round
    held = under = held_mean = finite = 0
    for _ in range(reps):
        pos = rng.choice(N, m, replace=False)
        squared = losses["squared"][pos] * np.repeat(scale, per_round)
        e = pool_estimate(None, LossTable(squared=squared), 1.0 / (N - np.arange(m)), N, m).rmse.map(lambda x: x * x)
        held += e.low <= latest <= e.high
        under += latest <= e.high
        held_mean += e.low <= mean <= e.high
        finite += math.isfinite(e.high)
    return held / reps, under / reps, held_mean / reps, finite / reps


def main_pooled(reps: int) -> None:
    print(f"auto's 2 random draws a round pooled over W rounds: coverage of the nominal 95 % MSE interval, {reps} seeded draws each")
    print("per W: the interval holds the latest model's MSE, its upper end is above it, it holds the W models' mean MSE, finite upper end")
    print(f"{'pool':9s} {'ratio':>5s} " + " ".join(f"{'W=' + str(w) + ' latest upper mean finite':>30s}" for w in (1, 2, 5, 10, 20)))
    for i, kind in enumerate(("gauss", "lognormal", "t3")):
        for ratio in (1.0, 1.5, 2.0, 4.0):
            cells = [pooled_coverage(kind, w, ratio, reps, seed=100 * i + w) for w in (1, 2, 5, 10, 20)]
            print(f"{kind:9s} {ratio:5.1f} " + " ".join(f"{a:12.3f} {b:5.3f} {c:5.3f} {d:5.2f}" for a, b, c, d in cells))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reps", type=int, nargs="?", default=2000, help="seeded draws per cell")
    parser.add_argument("--kappa", type=float, default=None,
                        help="chi2_interval's cap on the squared CV (default MIN_SQUARED_CV; 2: the degrees of freedom capped at M)")
    parser.add_argument("--pooled", action="store_true", help="auto's random draws pooled over rounds (`pooled_coverage`) instead")
    args = parser.parse_args()
    reps = args.reps
    if args.pooled:
        main_pooled(reps)
        return
    if args.kappa is not None:  # the interval's kappa for this run
        estimates.chi2_interval.__defaults__ = (estimates.Z95, args.kappa)
    kappa = args.kappa if args.kappa is not None else getattr(estimates, "MIN_SQUARED_CV", "none: the code before it")
    print(f"coverage of nominal 95 % intervals over {reps} seeded draws each (kappa {kappa}); 'miss<' = the interval lies below the truth;")
    print("'finite' = share of draws with a finite interval; 'bias' = (mean shown value - truth) / |truth|; pool N = 1000")
    print(f"{'task':15s} {'pool':9s} {'scheme':8s} {'figure':10s} " + " ".join(f"{'M=' + str(m):>24s}" for m in COUNTS))
    print(" " * 45 + " ".join(f"{'cover miss< finite  bias':>24s}" for _ in COUNTS))
    for i, (task, kind, scheme) in enumerate(CASES):
        rows = {}
        for m in COUNTS:
            for f, cov, low, fin, bias in simulate(task, kind, scheme, m, reps, seed=1000 * i + m):
                rows.setdefault(f, []).append(f"{cov:5.3f} {low:5.3f} {fin:5.2f} {bias:+6.3f}")
        for f, cells in rows.items():
            print(f"{task:15s} {kind:9s} {scheme:8s} {f:10s} " + " ".join(f"{c:>24s}" for c in cells))


if __name__ == "__main__":
    main()
