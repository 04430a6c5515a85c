"""Opaque ids for the Label Studio tasks of a pool whose keys could name the class.

An image folder imported with `--truth` (or converted before `img-NNNN` keys existed) keys its
items by their files' paths, `dark/dark0.png`, which can spell the class. Its tasks carry
`activebayes.data.label_studio.task_id` instead, `r<round>-q<rank>-<check>` (check: the first
hex digits of the image file's sha256), and its images are copies named after that id
(`activebayes export`). `resolver` maps such an id back to its key for `activebayes label
--from`: round R's query of that rank, provided its image file has that hash; anything else
(a hand-edited id, a task of another project or database) maps to None and is refused.
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


def export_ids(info: Any, round_number: int, queries: Sequence[Any]) -> dict[str, str] | None:
    """{key: task id} of round `round_number`'s `queries` where the keys could name the class
    (`path_key_hashes`), else None: the tasks carry the keys."""
    from activebayes.data.label_studio import task_id

    hashes = path_key_hashes(info)
    if hashes is None:
        return None
    return {q.key: task_id(round_number, q.rank, hashes[q.key]) for q in queries}


def resolver(store: Any, name: str, info: Any) -> Callable[[str], str | None]:
    """id -> key of project `name`'s tasks (`export_ids`), None for an id that names no query of
    its rounds or whose check is not that query's image's. The rounds and hashes are read on the
    first id, so a file of keys reads nothing more."""
    from activebayes.data.label_studio import CHECK_DIGITS, parse_task_id

    known: dict[str, Any] = {}

    def resolve(text: str) -> str | None:
        parsed = parse_task_id(text)
        if parsed is None:
            return None
        if not known:
            known["hashes"] = path_key_hashes(info) or {}
            known["rounds"] = {r.number for r in store.rounds(name)}
        number, rank, check = parsed
        if number not in known["rounds"]:
            return None
        query = next((q for q in store.queries(name, number) if q.rank == rank), None)
        if query is None or known["hashes"].get(query.key, "")[:CHECK_DIGITS].lower() != check:
            return None
        return query.key

    return resolve
