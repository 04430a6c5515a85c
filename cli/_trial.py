"""The trial a `round` runs before it records anything: fit the posterior on two items, score
them with the acquisition (epig against themselves as targets) and select one, so a model, a
posterior option or an acquisition that cannot work is refused in one line while the database is
unchanged. Also `posterior_device`, where a posterior's predictions run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from activebayes.errors import ConfigError
from activebayes_cli._app import CliError
from activebayes_cli._model import option_words, posterior_factory


def check_posterior(
    name: str, model_fn: Callable[[], Any], x: Any, n_classes: int, acquisition: Any, *, device: str, spec: str,
    options: Mapping[str, Any] | None = None,
) -> None:
    """Fit the posterior on two items (one epoch, two samples; with its --option `options`),
    score them with the acquisition and select one, as a round would: a CliError naming the
    problem when any step fails.

    MC dropout first needs a dropout layer in the network.
    """
    import numpy as np
    import torch

    from activebayes._device import resolve_device
    from activebayes.posteriors.mc_dropout import _MASKED

    if name == "mc-dropout" and not any(isinstance(m, _MASKED) for m in model_fn().modules()):
        raise CliError(
            f"--posterior mc-dropout: the network of --model {spec} has no dropout layer "
            "(nn.Dropout, Dropout1d/2d/3d), and MC dropout samples its dropout masks",
            "add dropout to the network, or pass --posterior deep-ensemble (no dropout needed)",
        )
    factory, _ = posterior_factory(name, model_fn, samples=2, epochs=1, device=device, options=options)
    check_joint_samples(acquisition, name, options)
    items = torch.from_numpy(np.array(x[:2])).float()
    n = items.shape[0]
    y = torch.arange(n) % n_classes
    try:
        with torch.random.fork_rng(devices=[]):
            posterior = factory(seed=0).fit(items, y)
            scores = trial_scores(posterior, items, acquisition, device)
            with torch.inference_mode():
                probs = posterior.predict_proba(items.to(resolve_device(device)))
                if tuple(probs.shape) != (n, n_classes):
                    raise ValueError(f"expected probabilities [{n}, {n_classes}], got {tuple(probs.shape)}")
                joint = posterior.predict(items.to(resolve_device(device))) if acquisition.needs_joint else scores
            acquisition.select(joint, 1, torch.Generator().manual_seed(0))
    except (Exception, SystemExit) as exc:  # the user's network (or its fit with this posterior): one line
        raise CliError(
            f"--posterior {name}{_with_options(options)} with --model {spec} and --acquisition {acquisition.name}: a trial fit and "
            f"scoring on {n} items failed ({type(exc).__name__}: {exc})",
            "fix the network (it must take the data's items and output one logit per class) or choose another --posterior"
            + (" or other --option values" if options else ""),
        ) from exc


def check_regression_posterior(
    name: str, model_fn: Callable[[], Any] | None, x: Any, acquisition: Any, *, device: str, spec: str,
    options: Mapping[str, Any] | None = None,
) -> None:
    """Fit the posterior (with its --option `options`) on three items with float targets,
    predict a GaussianPredictive and score them with the acquisition (nipv: select one with the
    model), as a regression round would: a one-line CliError when any step fails. A network
    posterior that does not fit float targets is refused naming gp."""
    import numpy as np
    import torch

    from activebayes.predictive import GaussianPredictive

    n = min(3, x.shape[0])
    items = torch.from_numpy(np.array(x[:n])).float()
    y = torch.linspace(-1.0, 1.0, n)
    factory, _ = posterior_factory(
        name, model_fn, samples=2 if name != "gp" else None, epochs=1 if name != "gp" else None, device=device, options=options
    )
    try:
        with torch.random.fork_rng(devices=[]):
            posterior = factory(seed=0).fit(items, y)
            with torch.inference_mode():
                pred = posterior.predict(items.to(posterior_device(posterior, device)))
    except Exception as exc:
        if name == "gp":
            raise CliError(
                f"--posterior gp{_with_options(options)}: a trial fit on {n} items failed ({type(exc).__name__}: {exc})",
                "check the data file's features (numbers, no NaN)" + (" and the --option values" if options else ""),
            ) from exc
        raise CliError(
            f"--posterior {name}: does not fit a regression project's float targets yet ({type(exc).__name__}: {exc})",
            "pass --posterior gp (the regression default)",
        ) from exc
    if not isinstance(pred, GaussianPredictive):
        raise CliError(
            f"--posterior {name}: predicts {type(pred).__name__}, not a Gaussian predictive, so it does not do regression yet",
            "pass --posterior gp (the regression default)",
        )
    check_joint_samples(acquisition, name, options)
    try:
        with torch.random.fork_rng(devices=[]):
            trial_scores(posterior, items, acquisition, device)
            if acquisition.needs_model:
                from activebayes.acquisition.nipv import nipv_select

                nipv_select(posterior, items.double(), items.double(), 1)
    except Exception as exc:
        raise CliError(
            f"--posterior {name} with --model {spec} and --acquisition {acquisition.name}: a trial fit and scoring on {n} items failed "
            f"({type(exc).__name__}: {exc})",
            "choose another --acquisition or --posterior",
        ) from exc


def trial_scores(posterior: Any, items: Any, acquisition: Any, device: str) -> Any:
    """The trial items' scores [n], by `score_pool` as a round scores: batch-bald / nipv their
    pre-filter score, epig the items against themselves as targets (ValueError for another shape)."""
    from activebayes.scoring import score_pool

    scored, score_fn = posterior, acquisition.score
    if getattr(acquisition, "needs_targets", False):
        from activebayes.acquisition.epig import TargetPosterior, paired_epig

        scored, score_fn = TargetPosterior(posterior, items), paired_epig
    elif acquisition.needs_joint or getattr(acquisition, "needs_model", False):
        score_fn = acquisition.prefilter_score
    n = items.shape[0]
    scores = score_pool(scored, items, score_fn, batch_size=n, device=device).scores
    if tuple(scores.shape) != (n,):
        raise ValueError(f"expected {n} acquisition scores, got shape {tuple(scores.shape)}")
    return scores


def check_joint_samples(acquisition: Any, name: str, options: Mapping[str, Any] | None) -> None:
    """epig needs posterior samples shared by every item: a one-line CliError for --option values
    that make them per item (masks=independent, predictive=analytic; `epig.check_joint_samples`)."""
    if not getattr(acquisition, "needs_targets", False):
        return
    from types import SimpleNamespace

    from activebayes.acquisition.epig import check_joint_samples as check

    try:
        check(SimpleNamespace(**(options or {})))
    except ConfigError as exc:
        what, _, fix = str(exc).partition("; ")
        raise CliError(f"--acquisition {acquisition.name} with --posterior {name}{_with_options(options)}: {what.removeprefix('epig: ')}", fix) from exc


def _with_options(options: Mapping[str, Any] | None) -> str:
    """The options as ` --option k=v ...` after the posterior an error message names ("" without any)."""
    return f" {option_words(options)}" if options else ""


def posterior_device(posterior: Any, device: str) -> Any:
    """Where a fitted posterior predicts: its `device_` when it records one, else `device`."""
    from activebayes._device import resolve_device

    return getattr(posterior, "device_", None) or resolve_device(device)
