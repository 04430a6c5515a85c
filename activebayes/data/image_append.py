"""New images for an image-folder pool (`pool add FOLDER --append`): the images put in the
project's folder since `pool add` recorded it, converted as the first ones were, into a new
converted folder that holds the old items first, exactly as they were, then the new ones.

    out, added = append_images(npz, cache_dir, stem="shapes", classes=["a", "b"], seed=0)

Kept as they were: every recorded image's key, row, pixels and sha256 (the old pixels are copied
from the converted file, never decoded again), the pixels' size and channels, the labelling (from
sub-folders, or none) and the way items are keyed (`img-<number>` numbers continue after the
last one, in an order drawn with `seed`; otherwise the new images' paths). Refused in one line
(DataError, nothing written): a recorded image changed or removed, no new image, a new image of
another size (without a resize recorded or given), in colour where the pool is grey, or in a
sub-folder that is not a class.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.dataset import sha256_file
from activebayes.data.image_manifest import hidden_keys, read_manifest, write_manifest
from activebayes.data.images import changes_text, channels_first, decode_images, folder_changes, folder_labels, is_grey, same_files
from activebayes.errors import DataError


def append_images(
    npz: str | Path,
    cache_dir: str | Path,
    *,
    stem: str,
    classes: Sequence[Any] | None = None,
    image_size: tuple[int, int] | None = None,
    skip_unreadable: bool = False,
    seed: int = 0,
) -> tuple[Path, dict[str, Any]]:
    """Convert the images added to the folder of converted folder `npz` (module docstring) into
    a new converted folder in `cache_dir`; returns (its path, {"rows": the new items' rows [M],
    "keys", "labels" (None without labels from sub-folders), "paths", "unreadable": [(path,
    reason)], "size", "channels", "copies": the groups of byte-for-byte copies (`same_files`)
    holding a new image}). `image_size`: may only repeat the pool's (H, W); it lets new
    images of other sizes be resized to it."""
    manifest, x_old = read_manifest(npz, pixels=True)
    assert x_old is not None
    folder = manifest.folder
    changes = folder_changes(folder, manifest.files, manifest.sha256, manifest.left_out, follow_links=manifest.follows_links)
    kept_as_were = {"changed": changes["changed"], "removed": changes["removed"]}
    if any(kept_as_were.values()):
        raise DataError(
            f"image folder {str(folder)!r}: {changes_text(kept_as_were)} since `pool add` recorded it; restore them "
            "(an append adds new images and keeps every recorded one as it was), or create a new project"
        )
    new = changes["added"]
    if not new:
        raise DataError(
            f"image folder {str(folder)!r} holds no image added since `pool add` recorded it; put the new images in it "
            "(sub-folders are read too) and run this again"
        )
    channels, size = int(x_old.shape[1]), (int(x_old.shape[2]), int(x_old.shape[3]))
    if image_size is not None and tuple(image_size) != size:
        raise DataError(
            f"image_size: the project's images are {size[0]}x{size[1]}, not {image_size[0]}x{image_size[1]}; "
            f"pass image_size {size[0]}x{size[1]} or leave it out"
        )
    labels = folder_labels(folder, new, classes) if manifest.y is not None else None
    resize = manifest.image_size or image_size
    first = manifest.files[0] if manifest.files else "the project's images"
    images = decode_images(folder, new, resize, skip_unreadable=skip_unreadable, same_as=None if resize else (first, size),
                           alpha_on_white=manifest.alpha_on_white, icc_to_srgb=manifest.icc_to_srgb)  # fmt: skip
    if channels == 1 and not is_grey(images.rgb):
        colour = next(rel for rel, img in zip(images.rels, images.rgb) if not is_grey(img[None]))
        raise DataError(
            f"image folder {str(folder)!r}: {colour!r} is in colour but the project's images are grey (1 channel, as its "
            "network takes them); save it in greyscale, or create a new project for colour images"
        )
    rels = images.rels
    if labels is not None:
        by_rel = dict(zip(new, labels))
        labels = [by_rel[rel] for rel in rels]
    keys = hidden_keys(len(rels), seed=seed, start=len(manifest.keys)) if manifest.paths is not None else list(rels)
    left_out = {rel: h for rel, h in manifest.left_out.items() if rel not in new}  # a repaired one is read again
    left_out.update({rel: sha256_file(folder / rel) for rel, _ in images.unreadable})
    combined = replace(
        manifest,
        keys=[*manifest.keys, *keys],
        sha256=[*manifest.sha256, *(sha256_file(folder / rel) for rel in rels)],
        paths=[*manifest.paths, *rels] if manifest.paths is not None else None,
        y=np.concatenate([np.asarray(manifest.y, dtype=str), np.asarray(labels, dtype=str)]) if manifest.y is not None else None,
        left_out=left_out,
    )
    x = np.concatenate([x_old, channels_first(images.rgb, channels)])
    out = write_manifest(cache_dir, stem, combined, x)
    n_old = len(manifest.keys)
    return out, {
        "rows": np.arange(n_old, n_old + len(rels)),
        "keys": keys,
        "labels": labels,
        "paths": rels,
        "unreadable": images.unreadable,
        "size": list(size),
        "channels": channels,
        "copies": [g for g in same_files(combined.files, combined.sha256) if set(g) & set(rels)],
    }


__all__ = ["append_images"]
