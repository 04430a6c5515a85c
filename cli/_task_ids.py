"""Opaque ids for the items shown to a labeller of a pool whose keys could name the class.

An image folder imported with `--truth` (or converted before `img-NNNN` keys existed) keys its
items by their files' paths, `dark/dark0.png`, which can spell the class. What a labeller is
given of such a pool names each item by `activebayes.data.label_studio.task_id` instead:
`r<round>-q<rank>-<check>` for a round's query, `e-q<n>-<check>` for the n-th item drawn into the
evaluation set (check: the first hex digits of the image file's sha256), and its image is a copy
named after that id. So do the Label Studio tasks (`activebayes export`), the round file and the
queries table of `activebayes round`, and the file of `activebayes evaluate --budget`.
`resolver` maps such an id back to its key for `activebayes label --from`: round R's query of
that rank, or the evaluation set's item drawn n-th, provided its image file has that hash;
anything else (a hand-edited id, one of another project or database) maps to None and is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def path_key_hashes(info: Any) -> dict[str, str] | None:
    """{key: its image file's sha256} of an image-folder project whose keys are its files' paths;
    None for any other project (its keys name no file, or are neutral `img-NNNN`). DataError when
    the converted folder cannot be read."""
    if info.data_format != "image-folder" or not info.data_path:
        return None
    from activebayes.data.image_manifest import read_manifest

    manifest, _ = read_manifest(info.data_path)
    return dict(zip(manifest.keys, manifest.sha256)) if manifest.paths is None else None


def query_ids(info: Any, round_number: int | None, queries: Sequence[Any]) -> dict[str, str] | None:
    """{key: opaque id} of round `round_number`'s `queries` (objects with `key` and `rank`, 0 =
    first), or with `round_number` None of the evaluation set's items (`rank`: the place in its
    draw), where the keys could name the class (`path_key_hashes`); else None: they show the keys."""
    from activebayes.data.label_studio import task_id

    hashes = path_key_hashes(info)
    if hashes is None:
        return None
    return {q.key: task_id(round_number, q.rank, hashes[q.key]) for q in queries}


def resolver(store: Any, name: str, info: Any) -> Callable[[str], str | None]:
    """id -> key of project `name`'s ids (`query_ids`), None for an id that names no query of its
    rounds nor item of its evaluation set, or whose check is not that item's image's. The rounds
    and hashes are read on the first id, so a file of keys reads nothing more."""
    from activebayes.active_testing import SETTINGS_KEY
    from activebayes.data.label_studio import CHECK_DIGITS, parse_task_id

    known: dict[str, Any] = {}

    def key_of(number: int | None, rank: int) -> str | None:
        if number is None:  # the evaluation set's items, in draw order
            drawn = ((info.settings or {}).get(SETTINGS_KEY) or {}).get("items") or []
            return str(drawn[rank]["key"]) if rank < len(drawn) else None
        if number not in known["rounds"]:
            return None
        return next((q.key for q in store.queries(name, number) if q.rank == rank), None)

    def resolve(text: str) -> str | None:
        parsed = parse_task_id(text)
        if parsed is None:
            return None
        if not known:
            known["hashes"] = path_key_hashes(info) or {}
            known["rounds"] = {r.number for r in store.rounds(name)}
        number, rank, check = parsed
        key = key_of(number, rank)
        if key is None or known["hashes"].get(key, "")[:CHECK_DIGITS].lower() != check:
            return None
        return key

    return resolve
