"""Who answers the queries: `ask(keys, candidates) -> list[Answer]` (see `base`).

`SimulatedOracle` (held-back truth; `truth_oracle` builds one for a store project),
`FileOracle` (a `key,label` CSV as spreadsheets write it: a BOM, `;` or tab, `id`/`answer`
headers, extra columns), `PromptOracle` (a person in the terminal: skip, undo, help, Ctrl-C
keeps what was typed; `on_answer` hands each answer over as it is given). The memory-span participant of a design session is `activebayes.design.SimulatedParticipant`.
"""

from __future__ import annotations

from activebayes.oracles.base import Answer, Oracle
from activebayes.oracles.file import FileOracle
from activebayes.oracles.prompt import PromptOracle, image_art
from activebayes.oracles.simulated import NoTruthError, SimulatedOracle, truth_oracle

__all__ = ["Answer", "FileOracle", "NoTruthError", "Oracle", "PromptOracle", "SimulatedOracle", "image_art", "truth_oracle"]
