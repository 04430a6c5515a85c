"""Folders of images (PNG, JPEG, WebP, BMP, GIF, TIFF; greyscale or RGB) as pools: converted once,
checked every load.

`convert_folder(folder, cache_dir)` reads every image below `folder` (sub-folders included; names
starting with "." are ignored, other non-image files are skipped and counted), decodes it with
Pillow, resizes it to `image_size` (H, W) when given, and writes ONE file
`<cache_dir>/<stem>-<random>.image-folder.npz` holding

    x       uint8 [N, C, H, W]   C = 1 when every image is grey (R = G = B), else 3 (RGB)
    keys    [N]                  the images' paths relative to `folder`, POSIX separators, sorted
    y       [N]                  with labels_from_folders: each image's top sub-folder name
    sha256  [N]                  each image file's sha256 (the source manifest)
    folder  []                   the folder's absolute path

That file is what the store records (path + sha256, format "image-folder"), so the manifest is
itself checksummed. `load_image_pool` (reached through `load_dataset`) checks the folder against
the manifest, refusing any image changed, removed or added since (one DataError line), and returns
an `ImageFolderDataset` whose `x` is float32 [N, C, H, W] in [0, 1] and whose `folder` locates
each item's original file (`source_path`).

Why convert once rather than decode every round: the pixels a round scores are exactly the ones
`pool add` validated (a later Pillow, or a resize setting, cannot change them), a round reads one
array instead of decoding N files, and the store's existing sha256 check covers the manifest.
Rounds still hash the source files, because the round file and the prompt point the person at the
ORIGINAL images and those must be what the model saw.

Images of different sizes are refused unless `image_size` is given (then every image is resized,
aspect ratio not kept): silently stretching them to whichever file sorts first would hide a
mistake. An image is turned upright as its EXIF orientation says (a phone's photo is stored
sideways with a tag that every viewer, and the labelling page, applies), so the model sees what
the person labelling sees; sizes are compared upright. An alpha channel is dropped; 16-bit
greyscale is scaled to 8 bits; of an animated GIF or a multi-page TIFF the first frame is read.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.dataset import Dataset, check_labels
from activebayes.errors import DataError

FORMAT = "image-folder"
SUFFIX = ".image-folder.npz"
EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
EXTENSIONS_TEXT = "/".join(EXTENSIONS)  # for messages: .png/.jpg/...
_SIXTEEN_BIT = ("I", "I;16", "I;16B", "I;16L", "I;16N")


@dataclass(frozen=True)
class ImageFolderDataset(Dataset):
    """A Dataset of an image folder; `folder` is where the original files are (keys are relative to it)."""

    folder: Path | None = None


def is_image_pool(path: str | Path) -> bool:
    """Whether a data file is a converted image folder (by its name)."""
    return Path(path).name.lower().endswith(SUFFIX)


def source_folder(path: str | Path) -> Path | None:
    """The image folder a converted pool (`*.image-folder.npz`) was made from, read from its
    archive without loading the images; None for any other file or one that cannot be read."""
    if not is_image_pool(path):
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            return Path(str(archive["folder"]))
    except (OSError, ValueError, KeyError):
        return None


def source_path(data: Any, key: str) -> Path | None:
    """The original file of item `key` of an image-folder pool, or None for other pools."""
    folder = getattr(data, "folder", None)
    return None if folder is None else Path(folder, *key.split("/"))


def parse_image_size(text: str) -> tuple[int, int]:
    """'HxW' (e.g. 28x28) or 'N' (N x N) -> (H, W); DataError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:[xX×]\s*(\d+)\s*)?", text or "")
    if not match:
        raise DataError(f"image_size: expected HxW (e.g. 28x28) or one number for a square, got {text!r}; e.g. '32x32'")
    h, w = int(match.group(1)), int(match.group(2) or match.group(1))
    if not (1 <= h <= 8192 and 1 <= w <= 8192):
        raise DataError(f"image_size: sides must be 1 to 8192 pixels, got {h}x{w}; choose a smaller size")
    return h, w


def scan_folder(folder: str | Path) -> tuple[list[str], list[str]]:
    """(image files, other files) below `folder`: POSIX paths relative to it, sorted. Files and
    folders whose name starts with '.' are ignored (not counted)."""
    root = Path(folder)
    images: list[str] = []
    others: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        base = Path(dirpath).relative_to(root)
        for name in filenames:
            if name.startswith("."):
                continue
            rel = (base / name).as_posix()
            (images if name.lower().endswith(EXTENSIONS) else others).append(rel)
    return sorted(images), sorted(others)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def manifest_sha256(keys: Sequence[str], hashes: Sequence[str]) -> str:
    """One sha256 over the sorted (path, sha256) pairs of a folder."""
    digest = hashlib.sha256()
    for key, value in zip(keys, hashes):
        digest.update(f"{key}\t{value}\n".encode())
    return digest.hexdigest()


def _decode(folder: Path, rel: str, size: tuple[int, int] | None) -> tuple[np.ndarray, tuple[int, int]]:
    """(uint8 [H, W, 3] pixels, original (H, W)) of one image; DataError naming it when unreadable."""
    from PIL import Image, ImageOps

    path = folder / rel
    try:
        with Image.open(path) as img:
            img.load()
            img = ImageOps.exif_transpose(img)  # upright, as viewers show it
            original = (img.height, img.width)
            if img.mode in _SIXTEEN_BIT:
                arr = np.asarray(img, dtype=np.float64)
                img = Image.fromarray(np.clip(np.round(arr / 257.0), 0, 255).astype(np.uint8), "L")
            elif img.mode == "F":
                img = Image.fromarray(np.clip(np.round(np.asarray(img, dtype=np.float64)), 0, 255).astype(np.uint8), "L")
            img = img.convert("RGB")
            if size is not None and (img.height, img.width) != size:
                img = img.resize((size[1], size[0]), Image.Resampling.BILINEAR)
            return np.asarray(img, dtype=np.uint8), original
    except Exception as exc:  # noqa: BLE001 - Pillow raises OSError, ValueError, SyntaxError, DecompressionBombError...
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"image folder {str(folder)!r}: {rel!r} is not a readable image ({reason}); repair or remove it") from None


def convert_folder(
    folder: str | Path,
    cache_dir: str | Path,
    *,
    image_size: tuple[int, int] | None = None,
    labels_from_folders: bool = False,
    classes: Sequence[Any] | None = None,
    stem: str = "pool",
    skip_unreadable: bool = False,
) -> tuple[Path, dict[str, Any]]:
    """Read, check and convert an image folder (see the module docstring); returns (the .npz
    written in `cache_dir`, a summary: images, skipped, skipped_example, size, channels,
    manifest_sha256, unreadable). Everything is checked before the file is written; DataError
    otherwise. An image that cannot be decoded is refused, or with `skip_unreadable` left out and
    listed in `unreadable` as (path, reason); the manifest records it, so later loads accept it
    as long as it stays unchanged."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise DataError(f"image folder {str(folder)!r} does not exist; check the path")
    keys, others = scan_folder(folder)
    if not keys:
        extra = f" ({len(others)} other file(s), e.g. {others[0]!r})" if others else ""
        raise DataError(
            f"image folder {str(folder)!r} holds no images{extra}; put {EXTENSIONS_TEXT} files in it (sub-folders are read too)"
        )
    labels: list[str] | None = None
    if labels_from_folders:
        loose = [k for k in keys if "/" not in k]
        if loose:
            raise DataError(
                f"labels_from_folders: {len(loose)} image(s) lie directly in {str(folder)!r}, e.g. {loose[0]!r}; "
                "put every image in a sub-folder named after its label"
            )
        labels = [k.split("/", 1)[0] for k in keys]
        if classes is not None:
            allowed = {str(c) for c in classes}
            bad = next((i for i, lab in enumerate(labels) if lab not in allowed), None)
            if bad is not None:
                raise DataError(
                    f"labels_from_folders: the folder {labels[bad]!r} (of {keys[bad]!r}) is not one of the project's "
                    f"classes {sorted(allowed)[:20]}; rename the folder, or create the project with those classes"
                )
    pixels: list[np.ndarray] = []
    first: tuple[str, tuple[int, int]] | None = None
    unreadable: list[tuple[str, str]] = []
    for rel in keys:
        try:
            arr, original = _decode(folder, rel, image_size)
        except DataError as exc:
            if not skip_unreadable:
                raise
            unreadable.append((rel, str(exc).split(" is not a readable image (", 1)[-1].rsplit(");", 1)[0]))
            continue
        if image_size is None:
            if first is None:
                first = (rel, original)
            elif original != first[1]:
                raise DataError(
                    f"image folder {str(folder)!r}: {rel!r} is {original[0]}x{original[1]} but {first[0]!r} is "
                    f"{first[1][0]}x{first[1][1]} (HxW); pass image_size=(H, W) to resize every image to one size"
                )
        pixels.append(arr)
    if not pixels:
        raise DataError(f"image folder {str(folder)!r}: none of its {len(keys)} image(s) is readable, e.g. {unreadable[0][0]!r}")
    if unreadable:
        left_out = {rel for rel, _ in unreadable}
        if labels is not None:
            labels = [lab for k, lab in zip(keys, labels) if k not in left_out]
        keys = [k for k in keys if k not in left_out]
    x = np.stack(pixels)  # [N, H, W, 3]
    grey = bool((x[..., 0] == x[..., 1]).all() and (x[..., 1] == x[..., 2]).all())
    x = np.ascontiguousarray((x[..., :1] if grey else x).transpose(0, 3, 1, 2))
    hashes = [_sha256(folder / rel) for rel in keys]
    arrays: dict[str, np.ndarray] = {
        "x": x,
        "keys": np.asarray(keys, dtype=str),
        "sha256": np.asarray(hashes, dtype=str),
        "folder": np.asarray(str(folder)),
    }
    if labels is not None:
        arrays["y"] = np.asarray(labels, dtype=str)
    if unreadable:
        arrays["unreadable"] = np.asarray([rel for rel, _ in unreadable], dtype=str)
        arrays["unreadable_sha256"] = np.asarray([_sha256(folder / rel) for rel, _ in unreadable], dtype=str)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "pool"
    out = cache_dir / f"{safe}-{secrets.token_hex(4)}{SUFFIX}"
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, out)
    summary = {
        "images": len(keys),
        "skipped": len(others),
        "skipped_example": others[0] if others else None,
        "size": [int(x.shape[2]), int(x.shape[3])],
        "channels": int(x.shape[1]),
        "manifest_sha256": manifest_sha256(keys, hashes),
        "unreadable": unreadable,
    }
    return out, summary


def check_folder(folder: Path, keys: Sequence[str], hashes: Sequence[str], left_out: dict[str, str] | None = None) -> None:
    """DataError (one line) unless `folder` holds exactly the images `keys` with sha256 `hashes`,
    besides the unreadable files `left_out` ({path: sha256}) at `pool add`, unchanged."""
    if not folder.is_dir():
        raise DataError(f"image folder {str(folder)!r} of this pool is missing; restore it or create a new project")
    now, _ = scan_folder(folder)
    left_out = left_out or {}
    now = [k for k in now if not (k in left_out and _sha256(folder / k) == left_out[k])]
    recorded = dict(zip(keys, hashes))
    added = [k for k in now if k not in recorded]
    removed = sorted(set(recorded) - set(now))
    changed = [k for k in now if k in recorded and _sha256(folder / k) != recorded[k]]
    if added or removed or changed:
        parts = [
            f"{len(items)} {what} (e.g. {items[0]!r})"
            for items, what in ((changed, "changed"), (removed, "removed"), (added, "added"))
            if items
        ]
        raise DataError(
            f"image folder {str(folder)!r} changed since `pool add` recorded it: {', '.join(parts)}; "
            "restore it or create a new project"
        )


def load_image_pool(path: str | Path, *, classes: Sequence[Any] | None = None) -> ImageFolderDataset:
    """A converted image folder: checks the source folder against its manifest, then returns the
    images as float32 [N, C, H, W] in [0, 1] (labels, if any, in `y`; keys = relative paths)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = {"x", "keys", "sha256", "folder"} - set(archive.files)
            if missing:
                raise DataError(f"data file {str(path)!r}: not a converted image folder (no {sorted(missing)})")
            x = archive["x"]
            keys = [str(k) for k in archive["keys"].tolist()]
            hashes = [str(h) for h in archive["sha256"].tolist()]
            folder = Path(str(archive["folder"]))
            y = archive["y"] if "y" in archive.files else None
            left_out = (
                dict(zip(archive["unreadable"].tolist(), archive["unreadable_sha256"].tolist())) if "unreadable" in archive.files else {}
            )
    except (OSError, ValueError) as exc:
        raise DataError(f"data file {str(path)!r}: cannot read the converted image folder: {exc}") from exc
    check_folder(folder, keys, hashes, left_out)
    if classes is not None and y is not None:
        check_labels(y, classes, path)
    return ImageFolderDataset(x.astype(np.float32) / 255.0, y, keys, path, FORMAT, folder=folder)


__all__ = [
    "EXTENSIONS",
    "EXTENSIONS_TEXT",
    "FORMAT",
    "ImageFolderDataset",
    "SUFFIX",
    "check_folder",
    "convert_folder",
    "is_image_pool",
    "load_image_pool",
    "manifest_sha256",
    "parse_image_size",
    "scan_folder",
    "source_path",
]
