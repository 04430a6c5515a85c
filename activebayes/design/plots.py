"""Figures of a design session (matplotlib, Agg backend): the posterior of θ and the designs over trials."""

from __future__ import annotations

from pathlib import Path

from activebayes.design.session import SessionTrace
from activebayes.figures import save_png


def plot_session(trace: SessionTrace, path: str | Path, *, true_span: float | None = None) -> Path:
    """Write a PNG: left, p(θ | data) on the grid (and the 90% interval); right, the design of each
    trial (filled: recalled, open: not) with the posterior mean ± sd after it. Returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    post = trace.posterior
    if post is not None:
        step = float(post.theta_grid[1] - post.theta_grid[0])
        left.plot(post.theta_grid.numpy(), (post.marginal() / step).numpy(), color="C0")
        lo, hi = post.interval(0.9)
        left.axvspan(lo, hi, color="C0", alpha=0.15, label=f"90% interval [{lo:.2f}, {hi:.2f}]")
        left.axvline(post.mean, color="C0", ls="--", label=f"mean {post.mean:.2f} (sd {post.sd:.2f})")
    if true_span is not None:
        left.axvline(true_span, color="k", lw=1, label=f"true span {true_span:g}")
    left.set_xlabel("span θ (digits)")
    left.set_ylabel("posterior density")
    left.legend(fontsize=8)
    trials = trace.trials
    if trials:
        x = [t.index + 1 for t in trials]
        digits = [t.design if isinstance(t.design, float) else t.design[0] for t in trials]
        mean = [t.mean for t in trials]
        sd = [t.sd for t in trials]
        right.fill_between(x, [m - s for m, s in zip(mean, sd)], [m + s for m, s in zip(mean, sd)], color="C0", alpha=0.2)
        right.plot(x, mean, color="C0", label="posterior mean ± sd")
        hit = [(i, d) for i, d, t in zip(x, digits, trials) if t.outcome == 1]
        miss = [(i, d) for i, d, t in zip(x, digits, trials) if t.outcome == 0]
        if hit:
            right.scatter(*zip(*hit), color="C2", label="recalled", zorder=3)
        if miss:
            right.scatter(*zip(*miss), facecolors="none", edgecolors="C3", label="not recalled", zorder=3)
    if true_span is not None:
        right.axhline(true_span, color="k", lw=1)
    right.set_xlabel("trial")
    right.set_ylabel("digits shown")
    right.set_title(f"strategy: {trace.strategy}", fontsize=9)
    right.legend(fontsize=8)
    fig.tight_layout()
    try:
        return save_png(fig, path, dpi=110)
    finally:
        plt.close(fig)
