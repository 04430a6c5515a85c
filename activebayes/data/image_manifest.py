"""What a converted image folder (`<stem>-<random>.image-folder.npz`) holds, read and written in one
place (`activebayes.data.images` converts a folder, `activebayes.data.image_append` adds images).

    x                  uint8 [N, C, H, W]   C = 1 when every image is grey, else 3 (RGB)
    keys               [N]   the items' keys (what the store, the round file and a labeller see)
    paths              [N]   each item's file relative to `folder` (POSIX separators); absent when
                             the keys are the paths themselves
    sha256             [N]   each item's file's sha256 (the source manifest)
    folder             []    the folder's absolute path
    y                  [N]   with labels from sub-folders: each image's top sub-folder name
    unreadable         [U]   files left out as unreadable (--skip-unreadable), with
    unreadable_sha256  [U]   their sha256 (later loads accept them while they stay unchanged)
    image_size         [2]   (H, W) every image was resized to (--image-size), when one was given
    follows_links      []    True: linked folders are read (`images.scan_folder`); absent in a
                             folder converted before they were, which keeps reading it without
    alpha_on_white     []    True: transparent pixels were laid on white (`image_decode`); absent
                             in a folder converted when the alpha was dropped, whose appended
                             images are read that way too
    icc_to_srgb        []    True: colours were converted to sRGB from each file's ICC profile
                             (`image_decode`); absent in a folder converted before, whose
                             appended images are read as stored too

Keys. A pool whose labels are its sub-folders' names would show the answer in a key that is the
path (`cat/01.png`): wherever a person labelling sees a key (the round file, the terminal prompt,
the labelling page, Label Studio tasks) the class folder would be in it. Such a pool keys its
items `img-<number>` instead (`hidden_keys`): the numbers 1..N in a seeded random order, so that
neither a key nor its number follows the sorted paths (and with them the classes), and the same
seed gives the same keys. Other pools (labels from a --truth file, or none) keep the relative path
as the key, as every converted folder did before `paths` existed; a file without `paths` reads
as keys = paths, so projects made then keep their keys and work as they did.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from activebayes.errors import DataError

SUFFIX = ".image-folder.npz"
KEY_PREFIX = "img-"
_REQUIRED = ("x", "keys", "sha256", "folder")


@dataclass(frozen=True)
class Manifest:
    """What a converted image folder records about its images (module docstring); `paths` None:
    the keys are the paths."""

    folder: Path
    keys: list[str]
    sha256: list[str]
    paths: list[str] | None = None
    y: np.ndarray | None = None
    left_out: dict[str, str] = field(default_factory=dict)
    image_size: tuple[int, int] | None = None
    follows_links: bool = False
    alpha_on_white: bool = False
    icc_to_srgb: bool = False

    @property
    def files(self) -> list[str]:
        """Each item's file relative to `folder`, in item order."""
        return self.paths if self.paths is not None else self.keys


def hidden_keys(n: int, *, seed: int, start: int = 0) -> list[str]:
    """Keys `img-<number>` for n new items, the numbers start+1 .. start+n in an order drawn with
    `seed` (and `start`, so a later batch is drawn apart), zero-padded to at least 4 digits."""
    width = max(4, len(str(start + n)))
    order = np.random.default_rng([int(seed), int(start)]).permutation(n)
    return [f"{KEY_PREFIX}{start + int(p) + 1:0{width}d}" for p in order]


def read_manifest(path: str | Path, *, pixels: bool = False) -> tuple[Manifest, np.ndarray | None]:
    """(the manifest of converted image folder `path`, its uint8 pixels [N, C, H, W] when
    `pixels`, else None); DataError naming the file when it cannot be read or is not one."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = set(_REQUIRED) - set(archive.files)
            if missing:
                raise DataError(f"data file {str(path)!r}: not a converted image folder (no {sorted(missing)})")
            names = set(archive.files)
            manifest = Manifest(
                folder=Path(str(archive["folder"])),
                keys=[str(k) for k in archive["keys"].tolist()],
                sha256=[str(h) for h in archive["sha256"].tolist()],
                paths=[str(p) for p in archive["paths"].tolist()] if "paths" in names else None,
                y=archive["y"] if "y" in names else None,
                left_out=dict(zip(map(str, archive["unreadable"].tolist()), map(str, archive["unreadable_sha256"].tolist())))
                if "unreadable" in names else {},
                image_size=tuple(int(s) for s in archive["image_size"].tolist()) if "image_size" in names else None,  # type: ignore[arg-type]
                follows_links="follows_links" in names and bool(archive["follows_links"]),
                alpha_on_white="alpha_on_white" in names and bool(archive["alpha_on_white"]),
                icc_to_srgb="icc_to_srgb" in names and bool(archive["icc_to_srgb"]),
            )  # fmt: skip
            x = archive["x"] if pixels else None
    except (OSError, ValueError) as exc:
        raise DataError(f"data file {str(path)!r}: cannot read the converted image folder: {exc}") from exc
    return manifest, x


def write_manifest(cache_dir: str | Path, stem: str, manifest: Manifest, x: np.ndarray) -> Path:
    """Write `manifest` and pixels `x` as a new `<stem>-<random>.image-folder.npz` in `cache_dir`,
    through a temporary file renamed when whole; returns its path."""
    arrays: dict[str, np.ndarray] = {
        "x": x,
        "keys": np.asarray(manifest.keys, dtype=str),
        "sha256": np.asarray(manifest.sha256, dtype=str),
        "folder": np.asarray(str(manifest.folder)),
    }
    if manifest.paths is not None:
        arrays["paths"] = np.asarray(manifest.paths, dtype=str)
    if manifest.y is not None:
        arrays["y"] = np.asarray(manifest.y, dtype=str)
    if manifest.left_out:
        arrays["unreadable"] = np.asarray(list(manifest.left_out), dtype=str)
        arrays["unreadable_sha256"] = np.asarray(list(manifest.left_out.values()), dtype=str)
    if manifest.follows_links:
        arrays["follows_links"] = np.asarray(True)
    if manifest.alpha_on_white:
        arrays["alpha_on_white"] = np.asarray(True)
    if manifest.icc_to_srgb:
        arrays["icc_to_srgb"] = np.asarray(True)
    if manifest.image_size is not None:
        arrays["image_size"] = np.asarray(manifest.image_size, dtype=np.int64)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "pool"
    out = cache_dir / f"{safe}-{secrets.token_hex(4)}{SUFFIX}"
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


__all__ = ["KEY_PREFIX", "Manifest", "SUFFIX", "hidden_keys", "read_manifest", "write_manifest"]
