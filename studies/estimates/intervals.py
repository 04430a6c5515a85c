"""Each stored round's 95 % interval under the library's rule (`activebayes.estimates.lure_estimate`:
Wilson's interval on Korn & Graubard's degrees-of-freedom adjusted size), from the round's raw
draws where the run kept them, else re-derived from the interval the run stored.

Re-derivation. A run written before the raw draws were kept stores, per round, the accuracy
estimate [1 − R̂, 1 − high, 1 − low] whose loss interval (low, high) is Wilson's interval of
p̂ = clip(R̂, 0, 1) on an effective size n with the normal quantile z (the rule of that time).
Wilson's bounds x are the roots of the score equation

    (x − p̂)² = (z²/n) · x (1 − x),   so   n = z² x (1 − x) / (x − p̂)²

from either bound x ∈ (0, 1), x ≠ p̂ (the one farther from p̂ is used; n = 0 when the interval
is [0, 1]). The draws, and so p̂ and n, do not depend on how the interval is formed, so the
interval under the current rule is `wilson_interval(p̂, df_adjusted_size(n, M))` with M the
round's drawn labels (K = 10 in every stored run: rounds of `--k 10`, every query drawn by a
stochastic arm and answered). `check` shows on fresh runs of the same seeds that this equals
the interval the library computes from the draws.

Clopper–Pearson's interval (Korn & Graubard's own choice) on a fractional size is given for the
comparison in `summary.py`: Beta(α/2; x, n − x + 1) to Beta(1 − α/2; x + 1, n − x), x = n p̂.

    .venv/bin/python studies/estimates/intervals.py --check FRESH_OUT [--against studies/estimates/results]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from activebayes.estimates import Z95, df_adjusted_size, effective_trials, lure_weights, wilson_interval

K = 10  # drawn labels per round of every stored run
Interval = Callable[[float, float, int], tuple[float, float]]  # (p̂, n, M) -> loss interval


def recovered_size(p: float, low: float, high: float, z: float = Z95) -> float:
    """n of Wilson's interval (low, high) of p with quantile z (module docstring); inf when the
    interval is the point p, 0 when it is [0, 1]."""
    bounds = [x for x in (low, high) if 0.0 < x < 1.0 and x != p]
    if not bounds:
        return math.inf if low == high == p else 0.0
    x = max(bounds, key=lambda b: abs(b - p))
    return z * z * x * (1.0 - x) / (x - p) ** 2


def loss_size(est_accuracy: list[float]) -> tuple[float, float]:
    """(p̂, n) behind a stored accuracy estimate [1 − R̂, low, high] of the earlier rule."""
    value, low, high = est_accuracy
    p = min(max(1.0 - value, 0.0), 1.0)
    return p, recovered_size(p, 1.0 - high, 1.0 - low)


def earlier_rule(p: float, n: float, m: int) -> tuple[float, float]:
    """The interval of the earlier rule: Wilson's on n with the normal quantile."""
    return wilson_interval(p, n)


def current_rule(p: float, n: float, m: int) -> tuple[float, float]:
    """The library's rule: Wilson's on n · (z / t_{M−1})²."""
    return wilson_interval(p, df_adjusted_size(n, m))


def clopper_pearson(p: float, n: float, alpha: float = 0.05) -> tuple[float, float]:
    """Clopper–Pearson's interval of p on n (fractional) trials (module docstring)."""
    from scipy import stats

    if n <= 0:
        return 0.0, 1.0
    x = n * p
    low = float(stats.beta.ppf(alpha / 2, x, n - x + 1)) if x > 0 else 0.0
    high = float(stats.beta.ppf(1 - alpha / 2, x + 1, n - x)) if n - x > 0 else 1.0
    return low, high


RULES: dict[str, Interval] = {
    "earlier": earlier_rule,  # Wilson, normal quantile (before issue 28)
    "current": current_rule,  # Wilson on Korn & Graubard's df-adjusted size
    "cp": lambda p, n, m: clopper_pearson(p, n),  # Clopper–Pearson on n (Korn & Graubard's factor (t_{n-1}/t_d)² = 1 here)
    "cp_adjusted": lambda p, n, m: clopper_pearson(p, df_adjusted_size(n, m)),  # Clopper–Pearson on n · (z/t)²
}


def draws_size(zero_one: list[float], q: list[float], pool: int) -> tuple[float, float, float, int]:
    """(R̂, p̂, n, M) of M drawn 0-1 losses with their q from a pool of N (no deterministic
    queries: the study's arms draw every query): n is the library's effective size before the
    adjustment (`effective_trials`)."""
    if any(x is None for x in q):
        raise ValueError("a round with deterministic queries: recompute it with stratified_estimate")
    v = lure_weights(q, pool)
    terms = v * np.asarray(zero_one, dtype=np.float64)
    m = len(q)
    value = float(terms.mean())
    p = min(max(value, 0.0), 1.0)
    return value, p, effective_trials(p, float(terms.var(ddof=1)) / m if m > 1 else math.inf, v), m


def accuracy_interval(value: float, p: float, n: float, m: int, rule: str = "current") -> list[float]:
    """[1 − R̂, 1 − high, 1 − low]: the accuracy estimate of a loss estimate R̂ (clipped p̂, size n,
    M draws) with the loss interval (low, high) of `rule` (RULES)."""
    low, high = RULES[rule](p, n, m)
    return [1.0 - value, 1.0 - high, 1.0 - low]


def round_accuracy(record: dict[str, Any], rule: str = "current") -> list[float] | None:
    """[value, low, high] of a round's accuracy under `rule` (RULES), from its raw draws when the
    run kept them, else from its stored interval (written under the earlier rule, M = K)."""
    if "draws" in record:
        value, p, n, m = draws_size(record["draws"]["zero_one"], record["draws"]["q"], record["draws"]["pool"])
    elif record.get("est_accuracy"):
        p, n = loss_size(record["est_accuracy"])
        value, m = 1.0 - record["est_accuracy"][0], K
    else:
        return None
    return accuracy_interval(value, p, n, m, rule)


def active_testing_summary(at: dict[str, Any], rule: str = "current") -> dict[str, dict[str, float]] | None:
    """Active testing's MAE, coverage and width against the pool and the test split, recomputed
    from its raw draws under `rule`; None when the run kept no draws (its stored summary is the
    earlier rule's)."""
    if "draws" not in at:
        return None
    v = np.asarray([accuracy_interval(*draws_size(d["zero_one"], d["q"], at["pool"]), rule) for d in at["draws"]])
    out = {}
    for key, target in (("active_vs_pool", at["pool_accuracy"]), ("active_vs_test", at["test_accuracy"])):
        out[key] = {"mae": float(np.mean(np.abs(v[:, 0] - target))), "coverage": float(np.mean((v[:, 1] <= target) & (target <= v[:, 2]))),
                    "width": float(np.mean(v[:, 2] - v[:, 1]))}  # fmt: skip
    return out


def check(fresh: Path, against: Path) -> dict[str, Any]:
    """For every run under `fresh`/runs with raw draws, each round's fresh interval (the library's
    `lure_estimate` at run time) against the current rule re-derived (`round_accuracy`) from the
    interval the earlier rule gives on the same draws (Wilson's on `effective_trials`, the
    normal quantile): the largest difference. Where `against`/runs holds a stored run of the
    same name: whether it drew the same (its R̂ within 1e-6 of the fresh one each round) and the
    largest difference between the fresh interval and the one re-derived from the stored."""
    rows = []
    for path in sorted((fresh / "runs").rglob("*.json")):
        run = json.loads(path.read_text())
        rounds = [r for r in run["rounds"] if r.get("draws")]
        fresh_est = np.asarray([r["est_accuracy"] for r in rounds])
        earlier = [round_accuracy(r, "earlier") for r in rounds]  # Wilson's on the draws' effective size, the normal quantile
        rederived = np.asarray([round_accuracy({"est_accuracy": e}) for e in earlier])
        row = {"run": f"{path.parent.name}/{path.name}", "rounds": len(rounds),
               "max_diff_fresh_vs_rederived": float(np.abs(fresh_est - rederived).max())}  # fmt: skip
        stored_path = against / "runs" / path.parent.name / path.name
        if stored_path.exists():
            stored = [r for r in json.loads(stored_path.read_text())["rounds"] if r.get("est_accuracy")]
            if len(stored) == len(rounds):
                from_stored = np.asarray([round_accuracy({"est_accuracy": s["est_accuracy"]}) for s in stored])
                row["same_draws_as_stored"] = bool(np.allclose(fresh_est[:, 0], [s["est_accuracy"][0] for s in stored], atol=1e-6, rtol=0))
                row["max_diff_fresh_vs_rederived_from_stored"] = float(np.abs(fresh_est - from_stored).max())
        rows.append(row)
    return {"runs": len(rows), "rounds": sum(r["rounds"] for r in rows),
            "max_diff_fresh_vs_rederived": max((r["max_diff_fresh_vs_rederived"] for r in rows), default=None),
            "same_draws_as_stored": sum(bool(r.get("same_draws_as_stored")) for r in rows),
            "max_diff_vs_stored_same_draws": max((r["max_diff_fresh_vs_rederived_from_stored"] for r in rows if r.get("same_draws_as_stored")), default=None),
            "per_run": rows}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, required=True, help="an --out of run.py holding fresh runs with raw draws")
    parser.add_argument("--against", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    if not (args.check / "runs").is_dir():
        print(f"--check: no runs folder under {args.check}", file=sys.stderr)
        raise SystemExit(2)
    print(json.dumps(check(args.check, args.against), indent=1))


if __name__ == "__main__":
    main()
