"""A `round` call's options, and those an unfinished round recorded: a resumed round runs with the
options it was started with, and an option given explicitly that differs is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import typer

from activebayes_cli._app import CliError
from activebayes_cli._options import given as option_given


@dataclass(frozen=True)
class RoundOptions:
    """The options a round is fitted and selected with (recorded in its row)."""

    posterior: str
    model: str
    samples: int | None
    epochs: int | None
    acquisition: str
    k: int
    predict_samples: int | None = None  # the loop's n_samples (S at scoring), None: the posterior's
    options: dict[str, Any] = field(default_factory=dict)  # --option: the posterior's own constructor options

    def text(self) -> str:
        from activebayes_cli._model import option_words

        parts = [f"--posterior {self.posterior}"] + ([] if self.posterior == "gp" else [f"--model {self.model}"])
        parts += [f"--samples {self.samples}"] if self.samples is not None else []
        parts += [f"--epochs {self.epochs}"] if self.epochs is not None else []
        own = {key: value for key, value in self.options.items() if key != "likelihood"}
        parts += [f"--likelihood {self.options['likelihood']}"] if "likelihood" in self.options else []
        parts += [option_words(own)] if own else []
        return " ".join([*parts, f"--acquisition {self.acquisition}", f"--k {self.k}"])


def recorded_options(rnd: Any, call: RoundOptions) -> RoundOptions:
    """The options round `rnd` was started with. A round started by this CLI records them all
    (its posterior_settings hold "model"; --samples/--epochs absent there mean the posterior's
    defaults, "options" absent no --option). A round recorded without them (an older CLI, the
    Python API) takes what it did not record from this call."""
    from activebayes.acquisition import resolve_acquisition
    from activebayes.errors import ConfigError
    from activebayes_cli._model import EPOCH_KEYS, REGRESSION_POSTERIORS, SAMPLE_KEYS

    settings = dict(rnd.posterior_settings or {})
    unknown = sorted(set(settings) - {"model", "model_choice", "training", "options", *SAMPLE_KEYS, *EPOCH_KEYS})  # training, model_choice: recomputed
    if not isinstance(settings.get("options", {}), dict):
        unknown.append("options")  # not a table of options: nothing to rebuild from
    try:
        acquisition = resolve_acquisition(rnd.acquisition).name
    except ConfigError:
        acquisition = None
    if rnd.posterior not in REGRESSION_POSTERIORS or unknown or acquisition is None:
        what = f"posterior {rnd.posterior!r}" + (f" with settings {unknown}" if unknown else "")
        what += "" if acquisition is not None else f" and acquisition {rnd.acquisition!r}"
        raise CliError(
            f"round {rnd.number} stopped while {rnd.status.value!r} and was started with {what}, which `activebayes round` cannot rebuild",
            "resume it from Python with the same options, or pass --restart-round to discard it and start a new round",
        )
    by_cli = "model" in settings
    samples = next((settings[k] for k in SAMPLE_KEYS if k in settings), None if by_cli else call.samples)
    epochs = next((settings[k] for k in EPOCH_KEYS if k in settings), None if by_cli else call.epochs)
    options = settings.get("options", {} if by_cli else call.options)
    acq_settings = dict(rnd.acquisition_settings or {})
    return RoundOptions(
        rnd.posterior, settings.get("model", call.model), samples, epochs, acquisition,
        int(acq_settings.get("batch_size", call.k)), acq_settings.get("n_samples"), dict(options),
    )  # fmt: skip


def differences(ctx: typer.Context, call: RoundOptions, rec: RoundOptions, seed: int, rnd: Any) -> list[str]:
    """The options given explicitly in this call that differ from the round's recorded ones."""
    from activebayes.loop import round_seed
    from activebayes_cli._model import EPOCH_KEYS, SAMPLE_KEYS, option_words, posterior_default

    def given(param: str) -> bool:
        return option_given(ctx, param)

    def shown(value: Any, keys: tuple[str, ...]) -> Any:
        return value if value is not None else f"the {rec.posterior} default ({posterior_default(rec.posterior, keys)})"

    out = []
    for param, option, mine, theirs in (
        ("posterior", "--posterior", call.posterior, rec.posterior),
        ("model", "--model", call.model, rec.model),
        ("acquisition", "--acquisition", call.acquisition, rec.acquisition),
        ("k", "--k", call.k, rec.k),
    ):
        if given(param) and mine != theirs:
            typed = ctx.params.get(param, mine) if param == "model" else mine  # a file as typed, not resolved
            out.append(f"{option} {typed} (recorded: {theirs})")
    for param, option, mine, theirs, keys in (
        ("samples", "--samples", call.samples, rec.samples, SAMPLE_KEYS),
        ("epochs", "--epochs", call.epochs, rec.epochs, EPOCH_KEYS),
    ):
        if given(param) and mine != (theirs if theirs is not None else posterior_default(rec.posterior, keys)):
            out.append(f"{option} {mine} (recorded: {shown(theirs, keys)})")
    if (given("posterior_options") or given("likelihood")) and call.options != rec.options:
        out.append(f"{option_words(call.options)} (recorded: {option_words(rec.options) or 'no --option'})")
    if given("seed") and round_seed(seed, rnd.number) != rnd.seed:
        out.append(f"--seed {seed} (round {rnd.number} was started with another seed)")
    return out
