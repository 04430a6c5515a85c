"""`round --model auto`: before a round's posterior is built, train the MLP candidates of
`activebayes.model_selection.mlp_candidates` (hidden layers 1x64, 2x64, 2x128, 1x256, dropout 0.5
as `--model mlp`) on the labelled items, each with the training the round's posterior would give
its network (`training_record`: the same epochs and weight decay λ/N, the round's seed), and build
the posterior with the one of highest Laplace evidence (prior precision maximised post hoc). The
round records {"model": "mlp-2x128", "evidences": {...}} as posterior_settings["model_choice"].
The first round (no labels) chooses nothing and records no choice. The candidates are MAP
networks trained with the task loss, also for posteriors that train theirs otherwise (mfvi's KL
term, a batch ensemble's members); a snapshot ensemble's candidates train for --epochs (its cycle)
or TrainConfig's default epochs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from activebayes_cli._app import CliError
from activebayes_cli._model import AUTO_MODEL, training_record

#: The key of posterior_settings that holds the choice.
CHOICE_KEY = "model_choice"


def check_auto_model(model: str, options: Mapping[str, Any]) -> None:
    """A one-line CliError for `--model auto` with a likelihood the evidence does not cover (the
    heteroscedastic one: the evidence is of a categorical or a fixed-noise Gaussian likelihood)."""
    if model == AUTO_MODEL and options.get("likelihood", "gaussian") != "gaussian":
        raise CliError(
            f"--model auto: chooses by the evidence of a categorical or gaussian likelihood, not --likelihood {options['likelihood']}",
            "leave --likelihood out, or pass --model mlp",
        )


def choose_model(
    posterior: str, x: Any, y: Any, n_outputs: int, *, epochs: int | None, seed: int, device: str
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """(the winning factory, the choice as recorded) for a round of `posterior` fitting on the
    labelled items (x [N, ...] float32, y [N]: class indices or floats); `epochs`: --epochs."""
    import math

    import torch

    from activebayes.errors import ConfigError
    from activebayes.model_selection import mlp_candidates, select_model
    from activebayes.posteriors import resolve_posterior
    from activebayes.training import TrainConfig

    cls = resolve_posterior(posterior)
    record = training_record(cls, len(x), epochs if cls.epochs_option is None else None)
    train = TrainConfig(epochs=int(record.get("epochs") or epochs or TrainConfig().epochs), weight_decay=record["weight_decay"])
    candidates = mlp_candidates(math.prod(x.shape[1:]), n_outputs)
    try:
        choice = select_model(candidates, torch.as_tensor(x), torch.as_tensor(y), train=train, seed=seed, device=device)
    except ConfigError as exc:
        raise CliError(f"--model auto: {exc}", "pass --model mlp (or another --model)") from exc
    return choice.model_fn, choice.record()


def round_model(
    options: Any, store: Any, project: str, data: Any, info: Any, *, seed: int, device: str, model_fn: Callable[[], Any] | None
) -> tuple[Callable[[], Any] | None, dict[str, Any]]:
    """(the network factory of a round, {CHOICE_KEY: the choice} to record with it): with
    `--model auto` and labels, the candidate of highest evidence on the project's labelled items
    (round seed `seed`); otherwise `model_fn` as it is and nothing to record."""
    import numpy as np

    if options.model != AUTO_MODEL:
        return model_fn, {}
    check_auto_model(options.model, options.options)
    rows, _, values = store.labels(project)
    if len(rows) == 0:
        return model_fn, {}
    from activebayes_cli._model import network_outputs

    x = np.ascontiguousarray(data.x[np.asarray(rows, dtype=np.int64)]).astype(np.float32)
    if info.task == "classification":
        index = {c: i for i, c in enumerate(info.classes or [])}
        y = np.asarray([index[v] for v in values], dtype=np.int64)
    else:  # in units of their spread, as the round fits them (activebayes.posteriors.standardised)
        import torch

        from activebayes.target_units import standardise_targets

        y = standardise_targets(torch.tensor([float(v) for v in values], dtype=torch.float64))[0].float().numpy()
    outputs = network_outputs(info.task, len(info.classes or []), options.options)
    chosen, record = choose_model(options.posterior, x, y, outputs, epochs=options.epochs, seed=seed, device=device)
    return chosen, {CHOICE_KEY: record}


def choice_text(settings: Mapping[str, Any] | None) -> str | None:
    """"model mlp-2x128 by evidence (mlp-1x64 -41.2, ...)" of a round's recorded choice, or None."""
    choice = (settings or {}).get(CHOICE_KEY)
    if not isinstance(choice, Mapping):
        return None
    evidences = choice.get("evidences", {})
    parts = ", ".join(f"{name} {value:.4g}" if isinstance(value, (int, float)) else f"{name} -" for name, value in evidences.items())
    return f"model {choice.get('model')} by Laplace evidence (log q(D | M): {parts})"
