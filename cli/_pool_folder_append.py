"""`activebayes pool add FOLDER --append`: the images put in a project's image folder since `pool
add` recorded it join the pool, keeping every item, label, round, query and score.

FOLDER is the project's own folder (the new images go into it, in sub-folders named after their
classes where the labels come from them). The steps mirror a table's append
(`activebayes_cli._pool_append`), so that a process killed at any instant leaves either the old
project or the whole appended one:
  1. under the round lock (no round starts or reads the pool meanwhile), check the folder: every
     recorded image unchanged and present, new images readable and like the old ones
     (`activebayes.data.image_append`) — nothing written yet;
  2. write a new converted folder (old items first, as they were, then the new) and its feature
     cache, under new names in the cache folder;
  3. ONE transaction (`activebayes.store.pool_append.append_pool`) records the new converted
     folder, its sha256, the settings and the new items (and their labels where known).
Files of a run killed before step 3 commits are unreferenced and harmless; after the commit the
previous converted folder and its feature cache are removed.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from activebayes_cli._app import CliError


def append_folder(st: Any, folder: Path, *, test_fraction: float, seed: int, image_size: str | None, skip_unreadable: bool,
                  labels_from_folders: bool) -> None:  # fmt: skip
    """Check, convert and record the new images of `folder`, the project's image folder; print
    the summary. `labels_from_folders` may only say what the project was added with."""
    from activebayes.data.image_manifest import read_manifest
    from activebayes.errors import DataError, RoundBusyError
    from activebayes_cli._design_project import refuse_design
    from activebayes_cli._output import after_pool_add, items_from
    from activebayes_cli._parse import fraction
    from activebayes_cli._pool_append import refuse_unappendable
    from activebayes_cli._pool_folder import folder_mistake, size_option

    fraction(test_fraction, "--test-fraction")
    size = size_option(image_size)
    store = st.store(upgrade=True)
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "pool add")
    refuse_unappendable(name, info, folder, image_folder=True)
    manifest, _ = read_manifest(info.data_path)
    if folder.resolve() != manifest.folder:
        raise CliError(f"--append: the images of project {name!r} are in {manifest.folder}, not {folder}",
                       f"put the new images in {manifest.folder} (sub-folders are read too) and run `pool add {manifest.folder} --append`")  # fmt: skip
    if labels_from_folders and manifest.y is None:
        raise CliError(f"--labels-from-folders: project {name!r} was added without it", "leave --labels-from-folders out with --append")
    if test_fraction > 0 and manifest.y is None:
        raise CliError(f"--test-fraction: the images of project {name!r} have no labels", "leave --test-fraction out")
    try:  # no round reads the pool while it is replaced, nor starts before the new items are in
        with store.round_lock(name):
            summary = _append(st, store, name, test_fraction=test_fraction, seed=seed, size=size, skip_unreadable=skip_unreadable)
    except RoundBusyError as exc:
        raise CliError(str(exc).partition("; ")[0], "wait for it to finish, then run this command again") from exc
    except DataError as exc:
        raise folder_mistake(exc) from exc
    from activebayes_cli._pool_folder import copies_notes

    for note in copies_notes(summary["copies"], manifest.y is not None):
        st.out.note(note)
    next_hint = after_pool_add(st, summary["truth"])

    def render(console: Any) -> None:
        console.print(
            items_from("Appended", summary, f"the new images in {folder}")
            + f" to project {name}"
            + (f" ({summary['labels']} labels imported)" if summary["labels"] else "")
            + (f"; {len(summary['unreadable'])} unreadable image(s) left out: {', '.join(map(repr, summary['unreadable'][:5]))}"
               if summary["unreadable"] else "")
            + f"; now {summary['total_pool_items']} pool items"
            + (f" and {summary['total_test_items']} test items" if summary["total_test_items"] else "")
            + "."
        )  # fmt: skip
        console.print(f"Next: {next_hint}")

    st.out.result(summary, render)


def _append(st: Any, store: Any, name: str, *, test_fraction: float, seed: int, size: Any, skip_unreadable: bool) -> dict[str, Any]:
    """Steps 1-3 of the module docstring, under the caller's round lock; returns the summary."""
    import numpy as np

    from activebayes.data import load_dataset, sha256_file
    from activebayes.data.feature_cache import remove_feature_cache, write_feature_cache
    from activebayes.data.image_append import append_images
    from activebayes.data.images import source_folder as data_folder
    from activebayes.store.pool_append import append_pool
    from activebayes_cli._pool_append import split_new_rows
    from activebayes_cli._pool_folder import cache_folder

    info = store.project(name)
    store.verify_data(name)  # the converted folder itself unchanged
    settings, cache_dir = info.settings, cache_folder(st.db)
    classes = info.classes if info.task == "classification" and info.classes else None
    npz, added = append_images(info.data_path, cache_dir, stem=name, classes=classes, image_size=size,
                               skip_unreadable=skip_unreadable, seed=seed)  # fmt: skip
    n_new = len(added["keys"])
    labels = added["labels"]
    new_j = np.arange(n_new)
    pool_j, test_j, observed = split_new_rows(new_j, labels, test_fraction, seed, known=settings.get("truth") == "known")
    rows, keys = added["rows"], added["keys"]
    appended = [*settings.get("appended", []), {
        "file": str(Path(data_folder(info.data_path))), "rows": n_new, "pool_items": int(pool_j.size), "test_items": int(test_j.size),
        "left_out": len(added["unreadable"]), "labels": len(observed), "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}]  # fmt: skip
    cache = None
    try:
        digest = sha256_file(npz)
        data = load_dataset(npz, classes=classes)  # the folder checked against the new manifest once more
        changes = {"appended": appended}
        cache = write_feature_cache(data, cache_dir, stem=name, data_format=info.data_format, settings={**settings, **changes},
                                    data_sha256=digest)  # fmt: skip
        changes["feature_cache"] = cache
        append_pool(
            store, name, npz, data_sha256=digest, replaces_sha256=info.data_sha256, settings=changes,
            pool_rows=rows[pool_j], pool_keys=[keys[j] for j in pool_j], test_rows=rows[test_j], test_keys=[keys[j] for j in test_j],
            observations=[(keys[j], labels[j]) for j in observed], who="import",
        )  # fmt: skip
    except BaseException:
        remove_feature_cache(cache)
        npz.unlink(missing_ok=True)
        raise
    remove_feature_cache(settings.get("feature_cache"))  # the previous files: no longer referenced
    previous = Path(info.data_path).resolve()
    if previous.parent == cache_dir.resolve():  # the previous converted folder, written into the cache folder (never a user's file)
        previous.unlink(missing_ok=True)
    return {
        "project": name, "file": str(Path(data.folder)), "format": info.data_format, "appended": True, "images": n_new,
        "pool_items": int(pool_j.size), "test_items": int(test_j.size), "labels": len(observed),
        "unreadable": [rel for rel, _ in added["unreadable"]], "truth": settings.get("truth", "none"),
        "total_pool_items": store.count_items(name, split="pool"), "total_test_items": store.count_items(name, split="test"),
        "data_path": str(npz), "keys": list(keys), "copies": added["copies"],
    }  # fmt: skip
