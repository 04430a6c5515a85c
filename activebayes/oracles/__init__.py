"""Who answers the queries: `ask(keys, candidates) -> list[Answer]` (see `base`).

`SimulatedOracle` (held-back truth), `FileOracle` (a `key,label` CSV as spreadsheets write it:
a BOM, `;` or tab, `id`/`answer` headers, extra columns), `PromptOracle` (a person in the
terminal: skip, undo, help, Ctrl-C keeps what was typed; `on_answer` hands each answer over as it
is given), `SimulatedParticipant` (memory span, in `participant.py`, loaded lazily).
"""

from __future__ import annotations

import importlib

from activebayes.oracles.base import Answer, Oracle
from activebayes.oracles.file import FileOracle
from activebayes.oracles.prompt import PromptOracle, image_art
from activebayes.oracles.simulated import SimulatedOracle


def __getattr__(name: str):  # lazy: participant.py is written separately and imports design/
    if name == "SimulatedParticipant":
        return importlib.import_module("activebayes.oracles.participant").SimulatedParticipant
    raise AttributeError(name)


__all__ = ["Answer", "FileOracle", "Oracle", "PromptOracle", "SimulatedOracle", "SimulatedParticipant", "image_art"]
