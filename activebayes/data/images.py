"""Folders of images (PNG, JPEG, WebP, BMP, GIF, TIFF, PPM/PGM/PBM; greyscale or RGB) as pools: converted once,
checked every load.

`convert_folder(folder, cache_dir)` reads every image below `folder` (sub-folders included; names
starting with "." are ignored, other non-image files are skipped and counted, a linked folder
is read once), decodes it with
Pillow, resizes it to `image_size` (H, W) when given, and writes ONE file
`<cache_dir>/<stem>-<random>.image-folder.npz` (`activebayes.data.image_manifest`: the pixels
uint8 [N, C, H, W], the keys, each image's path and sha256, the labels from the sub-folders).
With labels from the sub-folders the keys are `img-<number>`, not the paths, so that no key
shows a person labelling the class folder (`image_manifest.hidden_keys`); otherwise each key is
the image's path relative to `folder`, POSIX separators.

That file is what the store records (path + sha256, format "image-folder"), so the manifest is
itself checksummed. `load_image_pool` (reached through `load_dataset`) checks the folder against
the manifest, refusing any image changed, removed or added since (one DataError line), and returns
an `ImageFolderDataset` whose `x` is float32 [N, C, H, W] in [0, 1] and whose `folder` and
`paths` locate each item's original file (`source_path`). `pool add FOLDER --append` adds the
images put in the folder since (`activebayes.data.image_append`).

Why convert once rather than decode every round: the pixels a round scores are exactly the ones
`pool add` validated (a later Pillow, or a resize setting, cannot change them), a round reads one
array instead of decoding N files, and the store's existing sha256 check covers the manifest.
Rounds still hash the source files, because the round file and the prompt point the person at the
ORIGINAL images and those must be what the model saw.

Images of different sizes are refused unless `image_size` is given (then every image is resized,
aspect ratio not kept): silently stretching them to whichever file sorts first would hide a
mistake. An image is turned upright as its EXIF orientation says (a phone's photo is stored
sideways with a tag that every viewer, and the labelling page, applies), so the model sees what
the person labelling sees; sizes are compared upright. Colours are converted to sRGB from the
ICC profile a file embeds (a browser shows them so). Transparent pixels are laid on white,
as the labelling page shows them; 16-bit greyscale is scaled to 8 bits; of an animated GIF or a
multi-page TIFF the first frame is read (`activebayes.data.image_decode`).

Without `image_size`, images of more than MAX_PIXELS_UNSIZED pixels (2048 x 2048) are refused,
before the rest are decoded: a folder of 12-megapixel photos would take 146 MB an image as a
round holds it (float32 RGB), and the default networks' first layer alone would have 2.3 billion
weights. Passing their own size as `image_size` keeps them as they are.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.dataset import Dataset, check_labels
from activebayes.data.image_decode import decode_image
from activebayes.data.image_manifest import SUFFIX, Manifest, hidden_keys, read_manifest, write_manifest
from activebayes.errors import DataError

FORMAT = "image-folder"
EXTENSIONS = (".png", ".jpg", ".jpeg", ".jfif", ".jpe", ".webp", ".bmp", ".gif", ".tif", ".tiff", ".ppm", ".pgm", ".pbm", ".pnm")
EXTENSIONS_TEXT = "/".join(EXTENSIONS)  # for messages: .png/.jpg/...
#: pictures in formats Pillow does not read (or names it does not take for images): named apart
#: from other skipped files, with the way to include them
UNREAD_PICTURES = (".heic", ".heif", ".avif", ".jp2", ".svg", ".psd", ".ico", ".dng", ".cr2", ".nef", ".arw", ".raw")
UNREAD_PICTURES_FIX = "convert them to PNG or JPEG to include them"
#: files a file manager writes into a folder of pictures (Windows' thumbnail caches, folder settings): not counted
SYSTEM_FILES = frozenset({"thumbs.db", "ehthumbs.db", "ehthumbs_vista.db", "desktop.ini"})
#: without a size to resize to, an image of more pixels is refused (module docstring)
MAX_PIXELS_UNSIZED = 2048 * 2048
#: 16-bit images whose values all lie below this (12 bits) are noted (`DecodedImages.dim_deep`)
DIM_DEEP = 4096


@dataclass(frozen=True)
class ImageFolderDataset(Dataset):
    """A Dataset of an image folder; `folder` is where the original files are, `paths` each item's
    file relative to it (None: the keys are those paths)."""

    folder: Path | None = None
    paths: list[str] | None = None

    @cached_property
    def _file_of_key(self) -> dict[str, str]:
        return dict(zip(self.keys or (), self.paths or ()))

    def file_of(self, key: str) -> str | None:
        """Item `key`'s file relative to `folder` (POSIX separators), or None for an unknown key."""
        if self.paths is None:
            return key
        return self._file_of_key.get(key)


def keys_hide_paths(data: Any) -> bool:
    """Whether a pool's keys are not its images' paths (labels from sub-folders: a path would show
    the class), so that what a person labelling sees of an image must not name its file."""
    return getattr(data, "paths", None) is not None


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
    """The original file of item `key` of an image-folder pool, or None for other pools (and an
    unknown key)."""
    folder = getattr(data, "folder", None)
    rel = data.file_of(key) if folder is not None else None
    return None if rel is None else Path(folder, *rel.split("/"))


def parse_image_size(text: str) -> tuple[int, int]:
    """'HxW' (e.g. 28x28) or 'N' (N x N) -> (H, W); DataError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:[xX×]\s*(\d+)\s*)?", text or "")
    if not match:
        raise DataError(f"image_size: expected HxW (e.g. 28x28) or one number for a square, got {text!r}; e.g. '32x32'")
    h, w = int(match.group(1)), int(match.group(2) or match.group(1))
    if not (1 <= h <= 8192 and 1 <= w <= 8192):
        raise DataError(f"image_size: sides must be 1 to 8192 pixels, got {h}x{w}; choose a smaller size")
    return h, w


def scan_folder(folder: str | Path, *, follow_links: bool = True) -> tuple[list[str], list[str]]:
    """(image files, other files) below `folder`: POSIX paths relative to it, sorted. Files and
    folders whose name starts with '.', and SYSTEM_FILES, are ignored (not counted). A linked folder is read as a
    folder (`ln -s /data/cats cats`), each real folder once, so a link back up the tree (a loop)
    adds nothing (`follow_links` False: linked folders are passed over, as in a folder converted
    before they were read; `Manifest.follows_links`). DataError (one line) for a name that is not UTF-8 (no key or label could hold
    it) and for a link to nothing."""
    root = Path(folder)
    images: list[str] = []
    others: list[str] = []
    seen = {os.path.realpath(root)}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=follow_links):
        base = Path(dirpath).relative_to(root)
        kept = []
        for d in sorted(dirnames):
            real = os.path.realpath(os.path.join(dirpath, d))
            if not d.startswith(".") and real not in seen:
                seen.add(real)
                kept.append(d)
        dirnames[:] = kept
        for name in [*(f for f in filenames if not f.startswith(".")), *dirnames]:
            _check_name(root, base / name)
        for name in filenames:
            if name.startswith(".") or name.lower() in SYSTEM_FILES:
                continue
            rel = (base / name).as_posix()
            if os.path.islink(root / rel) and not os.path.exists(root / rel):
                raise DataError(
                    f"image folder {str(root)!r}: {rel!r} is a link to {os.readlink(root / rel)!r}, which does not exist; "
                    "restore its target or remove the link"
                )
            (images if name.lower().endswith(EXTENSIONS) else others).append(rel)
    return sorted(images), sorted(others)


def _check_name(root: Path, rel: Path) -> None:
    """DataError unless `rel`'s name is UTF-8 (os.walk gives undecodable bytes as surrogates)."""
    try:
        rel.as_posix().encode()
    except UnicodeEncodeError:
        shown = os.fsencode(rel.as_posix()).decode("utf-8", "backslashreplace")
        raise DataError(
            f"image folder {str(root)!r}: the name '{shown}' is not UTF-8 (written by another system's encoding); "
            "rename it with plain or UTF-8 characters"
        ) from None


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


def folder_labels(folder: Path, rels: Sequence[str], classes: Sequence[Any] | None) -> list[str]:
    """Each image's top sub-folder name as its label; DataError for an image directly in `folder`
    or (with `classes`) a sub-folder that is not one of them."""
    loose = [k for k in rels if "/" not in k]
    if loose:
        raise DataError(
            f"labels_from_folders: {len(loose)} image(s) lie directly in {str(folder)!r}, e.g. {loose[0]!r}; "
            "put every image in a sub-folder named after its label"
        )
    labels = [k.split("/", 1)[0] for k in rels]
    if classes is not None:
        allowed = {str(c) for c in classes}
        bad = next((i for i, lab in enumerate(labels) if lab not in allowed), None)
        if bad is not None:
            raise DataError(
                f"labels_from_folders: the folder {labels[bad]!r} (of {rels[bad]!r}) is not one of the project's "
                f"classes {sorted(allowed)[:20]}; rename the folder, or create the project with those classes"
            )
    return labels


@dataclass(frozen=True)
class DecodedImages:
    """Images read from a folder: `rgb` uint8 [N, H, W, 3] of the readable files `rels`, and the
    files left out as unreadable, (path, reason); resized to another aspect ratio, `stretched`:
    (path, its (H, W)) of each image whose H/W is more than 10 % off the size's."""

    rgb: np.ndarray
    rels: list[str]
    unreadable: list[tuple[str, str]]
    stretched: list[tuple[str, tuple[int, int]]] = field(default_factory=list)
    deep: list[tuple[str, int]] = field(default_factory=list)
    animated: list[str] = field(default_factory=list)

    def dim_deep(self) -> dict[str, Any] | None:
        """When the 16-bit (or 32-bit integer) images all lie below DIM_DEEP: {"images": their
        number, "max": their largest value, "example": the path of one holding it}; else None.
        Read on the 0-65535 scale, such images (a 12-bit camera's, 8-bit ones saved as 16-bit)
        keep round(max / 257) + 1 grey levels of 256."""
        if not self.deep or max(v for _, v in self.deep) >= DIM_DEEP:
            return None
        example, top = max(self.deep, key=lambda d: d[1])
        return {"images": len(self.deep), "max": top, "example": example}


def decode_images(
    folder: Path, rels: Sequence[str], image_size: tuple[int, int] | None, *, skip_unreadable: bool,
    same_as: tuple[str, tuple[int, int]] | None = None, alpha_on_white: bool = True, icc_to_srgb: bool = True,
) -> DecodedImages:  # fmt: skip
    """Decode the images `rels` of `folder` (resized to `image_size` when given; each as
    `image_decode.decode_image` reads it, `alpha_on_white` and `icc_to_srgb` passed on). Without a size every
    image must have the same (H, W) as the first, or as `same_as` (an image's path and its
    (H, W)) when given: DataError otherwise, naming both; and without `same_as` the first must
    have at most MAX_PIXELS_UNSIZED pixels. An unreadable image is refused, or with
    `skip_unreadable` left out and listed."""
    deep: list[tuple[str, int]] = []
    animated: list[str] = []
    pixels: list[np.ndarray] = []
    kept: list[str] = []
    first = same_as
    unreadable: list[tuple[str, str]] = []
    stretched: list[tuple[str, tuple[int, int]]] = []
    for rel in rels:
        try:
            one = decode_image(folder, rel, image_size, alpha_on_white=alpha_on_white, icc_to_srgb=icc_to_srgb)
            arr, original = one.pixels, one.original
        except DataError as exc:
            if not skip_unreadable:
                raise
            unreadable.append((rel, str(exc).split(" is not a readable image (", 1)[-1].rsplit(");", 1)[0]))
            continue
        if image_size is None:
            if first is None:
                first = (rel, original)
                _check_unsized(folder, rel, original, len(rels))
            elif original != first[1]:
                raise DataError(
                    f"image folder {str(folder)!r}: {rel!r} is {original[0]}x{original[1]} but {first[0]!r} is "
                    f"{first[1][0]}x{first[1][1]} (HxW); pass image_size=(H, W) to resize every image to one size"
                )
        elif abs(math.log(original[0] * image_size[1] / (original[1] * image_size[0]))) > math.log(1.1):
            stretched.append((rel, original))
        pixels.append(arr)
        kept.append(rel)
        if one.deep_max is not None:
            deep.append((rel, one.deep_max))
        if one.frames > 1:
            animated.append(rel)
    if not pixels:
        raise DataError(f"image folder {str(folder)!r}: none of its {len(rels)} image(s) is readable, e.g. {unreadable[0][0]!r}")
    return DecodedImages(np.stack(pixels), kept, unreadable, stretched, deep, animated)


def _check_unsized(folder: Path, rel: str, size: tuple[int, int], n: int) -> None:
    """DataError when image `rel`, of (H, W) `size`, has more than MAX_PIXELS_UNSIZED pixels (the
    first of `n` images read without a size to resize them to)."""
    h, w = size
    if h * w <= MAX_PIXELS_UNSIZED:
        return
    held = n * h * w * 3 * 4 / 2**30  # float32 RGB, as a round holds the pool
    keep = f", or image_size {h}x{w} to keep them as they are" if max(h, w) <= 8192 else ""
    raise DataError(
        f"image folder {str(folder)!r}: {rel!r} is {h}x{w} ({h * w / 1e6:.1f} megapixels), and a round would hold "
        f"{n} image(s) of that size ({held:.1f} GiB) where networks train on small ones; pass image_size=(H, W) to resize "
        f"every image (e.g. image_size 224x224){keep}"
    )


def is_grey(rgb: np.ndarray) -> bool:
    """Whether every image of uint8 [N, H, W, 3] has R = G = B."""
    return bool((rgb[..., 0] == rgb[..., 1]).all() and (rgb[..., 1] == rgb[..., 2]).all())


def channels_first(rgb: np.ndarray, channels: int) -> np.ndarray:
    """uint8 [N, H, W, 3] as [N, C, H, W] with C = `channels` (1: the grey channel)."""
    return np.ascontiguousarray((rgb[..., :1] if channels == 1 else rgb).transpose(0, 3, 1, 2))


def convert_folder(
    folder: str | Path,
    cache_dir: str | Path,
    *,
    image_size: tuple[int, int] | None = None,
    labels_from_folders: bool = False,
    classes: Sequence[Any] | None = None,
    stem: str = "pool",
    skip_unreadable: bool = False,
    seed: int = 0,
    hide_keys: bool | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Read, check and convert an image folder (see the module docstring); returns (the .npz
    written in `cache_dir`, a summary: images, skipped, skipped_example, size, channels,
    manifest_sha256, unreadable, copies (`same_files`), unread_pictures (`unread_pictures`),
    stretched (`DecodedImages.stretched`), dim_deep (`DecodedImages.dim_deep`), animated (the
    images of several frames, of which the first was read)). Everything is checked before the file is written; DataError
    otherwise. An image that cannot be decoded is refused, or with `skip_unreadable` left out and
    listed in `unreadable` as (path, reason); the manifest records it, so later loads accept it
    as long as it stays unchanged. `hide_keys` (default: `labels_from_folders`): key the items
    `img-<number>` in an order drawn with `seed` (`image_manifest.hidden_keys`), not by path."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise DataError(f"image folder {str(folder)!r} does not exist; check the path")
    rels, others = scan_folder(folder)
    if not rels:
        pictures = unread_pictures(others)
        if pictures:
            raise DataError(f"image folder {str(folder)!r} holds no image activebayes reads, only {len(pictures)} picture(s) such as "
                            f"{pictures[0]!r}; {UNREAD_PICTURES_FIX}")  # fmt: skip
        extra = f" ({len(others)} other file(s), e.g. {others[0]!r})" if others else ""
        raise DataError(
            f"image folder {str(folder)!r} holds no images{extra}; put {EXTENSIONS_TEXT} files in it (sub-folders are read too)"
        )
    if labels_from_folders:
        folder_labels(folder, rels, classes)  # checked before any image is decoded
    images = decode_images(folder, rels, image_size, skip_unreadable=skip_unreadable)
    rels = images.rels
    x = channels_first(images.rgb, 1 if is_grey(images.rgb) else 3)
    hashes = [_sha256(folder / rel) for rel in rels]
    hide = labels_from_folders if hide_keys is None else hide_keys
    manifest = Manifest(
        folder=folder, keys=hidden_keys(len(rels), seed=seed) if hide else list(rels), sha256=hashes,
        paths=list(rels) if hide else None, y=np.asarray(folder_labels(folder, rels, None), dtype=str) if labels_from_folders else None,
        left_out={rel: _sha256(folder / rel) for rel, _ in images.unreadable}, image_size=image_size, follows_links=True,
        alpha_on_white=True, icc_to_srgb=True,
    )  # fmt: skip
    out = write_manifest(cache_dir, stem, manifest, x)
    summary = {
        "images": len(rels),
        "skipped": len(others),
        "skipped_example": next((rel for rel in others if not rel.lower().endswith(UNREAD_PICTURES)), None),
        "unread_pictures": unread_pictures(others),
        "size": [int(x.shape[2]), int(x.shape[3])],
        "channels": int(x.shape[1]),
        "manifest_sha256": manifest_sha256(rels, hashes),
        "unreadable": images.unreadable,
        "copies": same_files(rels, hashes),
        "stretched": images.stretched,
        "dim_deep": images.dim_deep(),
        "animated": images.animated,
    }
    return out, summary


def unread_pictures(others: Sequence[str]) -> list[str]:
    """The files of `others` that are pictures in a format not read (UNREAD_PICTURES)."""
    return [rel for rel in others if rel.lower().endswith(UNREAD_PICTURES)]


def same_files(rels: Sequence[str], hashes: Sequence[str]) -> list[list[str]]:
    """The groups of two or more of `rels` with the same sha256 `hashes` (byte-for-byte copies),
    each in path order, the groups in the order of their first path."""
    groups: dict[str, list[str]] = {}
    for rel, digest in zip(rels, hashes):
        groups.setdefault(digest, []).append(rel)
    return [group for group in groups.values() if len(group) > 1]


def check_folder(folder: Path, keys: Sequence[str], hashes: Sequence[str], left_out: dict[str, str] | None = None, *,
                 follow_links: bool = True) -> None:  # fmt: skip
    """DataError (one line) unless `folder` holds exactly the images `keys` (their paths) with
    sha256 `hashes`, besides the unreadable files `left_out` ({path: sha256}) at `pool add`, unchanged."""
    changes = folder_changes(folder, keys, hashes, left_out, follow_links=follow_links)
    if changes["added"] or changes["removed"] or changes["changed"]:
        raise DataError(
            f"image folder {str(folder)!r} changed since `pool add` recorded it: {changes_text(changes)}; "
            "restore it, add new images with `pool add FOLDER --append`, or create a new project"
        )


def folder_changes(folder: Path, rels: Sequence[str], hashes: Sequence[str], left_out: dict[str, str] | None = None, *,
                   follow_links: bool = True) -> dict[str, list[str]]:  # fmt: skip
    """{"changed", "removed", "added"}: the images of `folder` whose sha256 differs from `hashes`,
    those of `rels` gone, and those not among `rels` (an unreadable file of `left_out` unchanged
    is none of them; one changed since counts as added); DataError when the folder is missing."""
    if not folder.is_dir():
        raise DataError(f"image folder {str(folder)!r} of this pool is missing; restore it or create a new project")
    now, _ = scan_folder(folder, follow_links=follow_links)
    left_out = left_out or {}
    now = [k for k in now if not (k in left_out and _sha256(folder / k) == left_out[k])]
    recorded = dict(zip(rels, hashes))
    return {
        "changed": [k for k in now if k in recorded and _sha256(folder / k) != recorded[k]],
        "removed": sorted(set(recorded) - set(now)),
        "added": [k for k in now if k not in recorded],
    }


def changes_text(changes: dict[str, list[str]]) -> str:
    """'1 changed (e.g. 'a.png'), 2 added (e.g. ...)' of `folder_changes`' non-empty lists."""
    return ", ".join(f"{len(items)} {what} (e.g. {items[0]!r})" for what, items in changes.items() if items)


def load_image_pool(path: str | Path, *, classes: Sequence[Any] | None = None) -> ImageFolderDataset:
    """A converted image folder: checks the source folder against its manifest, then returns the
    images as float32 [N, C, H, W] in [0, 1] (labels, if any, in `y`)."""
    manifest, x = read_manifest(path, pixels=True)
    check_folder(manifest.folder, manifest.files, manifest.sha256, manifest.left_out, follow_links=manifest.follows_links)
    if classes is not None and manifest.y is not None:
        check_labels(manifest.y, classes, Path(path))
    assert x is not None
    return image_dataset(Path(path), x.astype(np.float32) / 255.0, manifest)


def image_dataset(path: Path, x: np.ndarray, manifest: Manifest) -> ImageFolderDataset:
    """The Dataset of converted image folder `path` with features `x` [N, C, H, W]."""
    return ImageFolderDataset(x, manifest.y, manifest.keys, path, FORMAT, folder=manifest.folder, paths=manifest.paths)


__all__ = [
    "EXTENSIONS",
    "EXTENSIONS_TEXT",
    "FORMAT",
    "ImageFolderDataset",
    "SUFFIX",
    "check_folder",
    "convert_folder",
    "folder_changes",
    "keys_hide_paths",
    "is_image_pool",
    "load_image_pool",
    "manifest_sha256",
    "parse_image_size",
    "scan_folder",
    "source_path",
]
