"""The benchmark's arms: an acquisition, the cold start's first batch and cover_classes, and
which arm the CLI's defaults make.

An arm is `ACQUISITION[/FIRST[/cover]]`: "epig/random", "random/typical" and "power-epig/auto"
name the first batch (the loop's `first`); "epig" takes the CLI's (`default_first`); plain
"random" is uniform throughout. The default arm of a task is read from the CLI's constants
(`activebayes_cli._model.DEFAULT_ACQUISITION` and `DEFAULT_FIRST`), never from a name written
here or in config.json, so the reports mark what a round with no options does today.
"""

from __future__ import annotations


def arm_parts(arm: str) -> tuple[str, str | None, bool]:
    """(acquisition, first batch, cover_classes) of an arm: "epig/random", "random/typical" or
    "power-epig/auto" name the first batch (the loop's `first`), "epig" takes the CLI's
    (`activebayes_cli._model.default_first`); plain "random" is uniform throughout (random first batch too). A third part "cover"
    ("power-epig/random/cover") turns on the loop's `cover_classes`, off otherwise."""
    acquisition, _, rest = arm.partition("/")
    first, _, cover = rest.partition("/")
    return acquisition, first or ("random" if acquisition == "random" else None), cover == "cover"


def default_arm(task: str) -> str:
    """The arm a round with no --acquisition and no --first runs on `task`, e.g.
    "power-margin/auto" for classification."""
    from activebayes_cli._model import DEFAULT_FIRST, default_acquisition

    return f"{default_acquisition(task)}/{DEFAULT_FIRST}"


def is_default(arm: str, task: str) -> bool:
    """Whether `arm` runs as the CLI's defaults do on `task` (the same acquisition, first batch
    and cover_classes): on regression "auto/random" is "auto/auto", since `--first auto` is a
    uniform first batch there."""
    from activebayes.acquisition.typical import first_batch_as_run
    from activebayes_cli._model import DEFAULT_COVER_CLASSES, DEFAULT_FIRST

    acquisition, first, cover = arm_parts(arm)
    want, want_first, _ = arm_parts(default_arm(task))
    return (acquisition == want and cover == DEFAULT_COVER_CLASSES
            and first_batch_as_run(first or DEFAULT_FIRST, task) == first_batch_as_run(want_first or DEFAULT_FIRST, task))  # fmt: skip
