"""`activebayes pool add FOLDER`: a folder of images (PNG, JPEG, WebP, BMP, GIF, TIFF; greyscale or RGB) as the pool.

Every image below FOLDER (sub-folders included) becomes one item whose key is its path relative
to FOLDER (POSIX separators). The images are decoded once, resized to --image-size HxW when given
(images of different sizes are refused without it), and stored as one .npz (format
"image-folder": [N, C, H, W] in [0, 1], never standardised) in `activebayes-cache/` next to a
SQLite database (for PostgreSQL: in the current folder). That file, which also holds each image's
sha256, is what the project records; every later load checks the folder against it, so a changed,
removed or added image is refused. The float32 pixels a network sees are written beside it once,
to the feature cache (`activebayes.data.feature_cache`), which every later load memory-maps.
Labels come from the sub-folder names (--labels-from-folders: `cat/01.png` is a 'cat') or from
--truth FILE (a key,label csv keyed by the relative paths).
Files that are not images (`activebayes.data.images.EXTENSIONS`) are skipped and counted; names starting with '.' are ignored.
Notes name pictures in a format not read (HEIC...), byte-for-byte copies (one picture in two class
folders has two labels) and class folders read another way (spaces around a name dropped, names
that differ only in case); a project created without classes needs two class folders or more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


from activebayes_cli._app import CliError
from activebayes_cli._context import sqlite_path
from activebayes_cli._design_project import refuse_design
from activebayes_cli._output import TRUTH_TEXT, after_pool_add, items_from
from activebayes_cli._pool_import import refuse_second_pool
from activebayes_cli._parse import existing_file, fraction

CACHE_FOLDER = "activebayes-cache"


def cache_folder(db_url: str) -> Path:
    """Where converted image folders go: `activebayes-cache/` next to a SQLite file, else in the
    current folder (a server database has no folder of its own; data paths are local anyway)."""
    path = sqlite_path(db_url)
    return (path.resolve().parent if path is not None else Path.cwd()) / CACHE_FOLDER


#: the library's argument names in its messages, as the flags of `pool add`
ARGUMENT_FLAGS = (("image_size=(H, W)", "--image-size HxW"), ("image_size", "--image-size"), ("labels_from_folders", "--labels-from-folders"))


def flag_names(message: str) -> str:
    """A library message about an image folder, naming `pool add`'s flags instead of arguments."""
    for argument, flag in ARGUMENT_FLAGS:
        message = message.replace(argument, flag)
    return message


def size_option(image_size: str | None) -> tuple[int, int] | None:
    """--image-size HxW as (H, W), None when not given; DataError naming the flag otherwise."""
    from activebayes.data.images import parse_image_size
    from activebayes.errors import DataError

    try:
        return parse_image_size(image_size) if image_size is not None else None
    except DataError as exc:
        raise DataError(flag_names(str(exc))) from exc


def folder_mistake(exc: Exception) -> Exception:
    """A library message about an image folder as `pool add` says it: its flags named, and
    --skip-unreadable offered for an unreadable image."""
    from activebayes.errors import DataError

    message = flag_names(str(exc))
    if "is not a readable image" in message:
        message = message.replace("; repair or remove it", "; repair or remove it, or pass --skip-unreadable to leave it out")
    return DataError(message)


def add_folder(
    st: Any,
    folder: Path,
    *,
    image_size: str | None,
    labels_from_folders: bool,
    truth: Path | None,
    key_column: str | None,
    label_column: str | None,
    test_fraction: float,
    labels_are_known: bool,
    seed: int,
    skip_unreadable: bool = False,
) -> None:
    """Check everything, convert the folder, record it through `register_pool`; print the summary."""
    from activebayes.data.images import FORMAT, convert_folder
    from activebayes.errors import DataError
    from activebayes_cli._pool_import import register_pool

    if not folder.is_dir():
        if folder.exists():
            raise CliError(f"--image-size/--labels-from-folders: {folder} is a file, not a folder of images", "leave them out for a data file")
        raise CliError(f"FILE: no file or folder at {folder}", "check the path")
    if key_column is not None or label_column is not None:
        raise CliError(
            "--key-column/--label-column: a folder of images has no columns",
            "leave them out (keys are the images' paths; labels come from --labels-from-folders or --truth FILE)",
        )
    if truth is not None and labels_from_folders:
        raise CliError("--truth and --labels-from-folders: both give the labels", "use one of them")
    if truth is not None:
        existing_file(truth, "--truth")
    fraction(test_fraction, "--test-fraction")
    if (labels_are_known or test_fraction > 0) and truth is None and not labels_from_folders:
        option = "--labels-are-known" if labels_are_known else "--test-fraction"
        raise CliError(f"{option}: the images of {folder} have no labels", "add --labels-from-folders or --truth FILE")
    size = size_option(image_size)
    store = st.store(upgrade=True)
    name = st.project_name()
    info = store.project(name)
    refuse_design(st, name, info, "pool add")
    refuse_second_pool(store, name, info)
    classes = info.classes if info.task == "classification" and info.classes else None
    try:
        npz, images = convert_folder(
            folder, cache_folder(st.db), image_size=size, labels_from_folders=labels_from_folders, classes=classes, stem=name,
            skip_unreadable=skip_unreadable,
        )
    except DataError as exc:
        raise folder_mistake(exc) from exc
    try:
        folder_notes = class_folder_notes(folder, name, labels_from_folders=labels_from_folders, truth=truth,
                                          infer=info.task == "classification" and not classes)  # fmt: skip
        summary = register_pool(
            store, name, npz, truth=truth, test_fraction=test_fraction, labels_are_known=labels_are_known, seed=seed,
            text_folder=cache_folder(st.db),  # the features' cache goes beside the converted folder
        )
    except BaseException:
        npz.unlink(missing_ok=True)  # nothing was recorded: leave no converted copy behind
        raise
    summary.update(
        file=str(folder.resolve()), format=FORMAT, converted=str(npz), images=images["images"],
        skipped=images["skipped"], image_size=images["size"], channels=images["channels"],
        manifest_sha256=images["manifest_sha256"],
    )  # fmt: skip
    summary["notes"].extend(folder_file_notes(images, labels_from_folders))
    if images["unreadable"]:
        shown_files = ", ".join(f"{rel!r} ({reason})" for rel, reason in images["unreadable"][:5])
        more = f" and {len(images['unreadable']) - 5} more" if len(images["unreadable"]) > 5 else ""
        summary["notes"].append(f"left out {len(images['unreadable'])} unreadable image(s) (--skip-unreadable): {shown_files}{more}")
    summary["unreadable"] = [rel for rel, _ in images["unreadable"]]
    if labels_from_folders:  # a class is a folder's name here, not a label in a file
        summary["notes"] = [n.replace("correct them in the file (or add --merge-label-spellings)", "rename their folders to one name")
                            for n in summary["notes"]]  # fmt: skip
    summary["notes"] = folder_notes + summary["notes"]
    for note in summary["notes"]:
        st.out.note(st.as_typed(note))  # a note's commands work as typed too
    next_hint = after_pool_add(st, summary["truth"])

    def render(console: Any) -> None:
        c, (h, w) = images["channels"], images["size"]
        console.print(
            items_from("Added", summary, f"the images in {folder}")
            + f" ({'grey' if c == 1 else 'RGB'} {h}x{w}, features [{c}, {h}, {w}]; "
            + f"{TRUTH_TEXT[summary['truth']]})."
        )
        console.print(f"Next: {next_hint}")

    st.out.result(summary, render)


def folder_file_notes(images: dict[str, Any], labels_from_folders: bool) -> list[str]:
    """Notes on the files of a converted folder (`convert_folder`'s summary) read in a way worth
    knowing: pictures in a format not read, other files skipped, byte-for-byte copies (with
    labels from sub-folders, a copy in another class folder gives one picture two labels), 16-bit
    images that use a few of their levels, animations, and images stretched to --image-size's shape."""
    from activebayes.data.images import EXTENSIONS_TEXT, UNREAD_PICTURES_FIX

    notes = []
    pictures = images["unread_pictures"]
    if pictures:
        notes.append(f"left out {len(pictures)} picture(s) in a format not read, e.g. {pictures[0]!r}; {UNREAD_PICTURES_FIX}")
    if images["skipped"] > len(pictures):
        notes.append(f"skipped {images['skipped'] - len(pictures)} file(s) that are not {EXTENSIONS_TEXT}, e.g. {images['skipped_example']!r}")
    notes.extend(copies_notes(images["copies"], labels_from_folders))
    dim = images.get("dim_deep")
    if dim:
        notes.append(f"{dim['images']} 16-bit image(s) hold values up to {dim['max']} of 0-65535 only, e.g. {dim['example']!r} (a "
                     f"12-bit camera's, or 8-bit pictures saved as 16-bit), so they keep {round(dim['max'] / 257) + 1} grey level(s) "
                     "of 256; stretch them to 0-65535, or save them as 8-bit images, and add them again")  # fmt: skip
    animated = images.get("animated")
    if animated:
        notes.append(f"{len(animated)} image(s) hold several frames (an animation, a multi-page TIFF), e.g. {animated[0]!r}: the model "
                     "reads the first frame, the labelling page may play them all; save the frame that shows the class as a still image")  # fmt: skip
    stretched = images["stretched"]
    if stretched:
        (h, w), (rel, (oh, ow)) = images["size"], stretched[0]
        notes.append(f"stretched {len(stretched)} image(s) of another shape to {h}x{w} (--image-size keeps no aspect ratio), "
                     f"e.g. {rel!r} ({oh}x{ow}); crop or pad them first to keep their proportions")  # fmt: skip
    return notes


def copies_notes(copies: list[list[str]], labels_from_folders: bool) -> list[str]:
    """A note on the groups of byte-for-byte copies among a folder's images (`same_files`), if
    any; with labels from sub-folders a group across class folders is one picture with two labels."""
    if not copies:
        return []
    clash = [g for g in copies if labels_from_folders and len({rel.split("/", 1)[0] for rel in g}) > 1]
    return [
        f"{sum(len(g) - 1 for g in copies)} image(s) are byte-for-byte copies of another, e.g. "
        + " = ".join(map(repr, (clash or copies)[0][:3]))
        + (f"; {len(clash)} picture(s) lie in two class folders or more, so have two labels: remove the wrong copies"
           if clash else "; each copy is an item of its own")
    ]  # fmt: skip


def class_folder_notes(folder: Path, project: str, *, labels_from_folders: bool, truth: Path | None, infer: bool) -> list[str]:
    """Check, before anything is recorded, that a project whose classes come from its images
    (`infer`: created without --classes) gets them: labels from sub-folders or --truth, and with
    sub-folders at least two, not a split of the data (`train/`, `val/`, each with the same class
    folders); a one-line CliError naming the folder otherwise. Returns a note for each class
    folder whose name has spaces around it (labels are read without them), and one where every
    class folder holds the same sub-folders (`shared_sub_folders`)."""
    import shlex

    from activebayes.data.images import folder_labels, scan_folder

    again = f"`activebayes delete {shlex.quote(project)}`, `activebayes init --name {shlex.quote(project)} --classes A,B,...` and `pool add` again"
    if infer and not labels_from_folders and truth is None:
        raise CliError(
            f"--classes: project {project!r} was created without classes and the images of {folder} have no labels to read them from",
            f"add --labels-from-folders (a sub-folder per class) or --truth FILE, or name the classes: {again}",
        )
    rels = scan_folder(folder)[0] if labels_from_folders else []
    if not rels:  # no labels from sub-folders, or no image (which `convert_folder` refuses in its own words)
        return []
    named = sorted(set(folder_labels(folder, rels, None)))
    classes = sorted({n.strip() for n in named})
    if infer and len(classes) < 2:
        raise CliError(
            f"--labels-from-folders: the images of {folder} are in {len(classes)} class folder(s) {classes}, a classifier needs at least 2",
            f"put each class's images in a sub-folder named after it, or name the classes: {again}",
        )
    notes = [f"the folder {n!r} is read as the class {n.strip()!r} (spaces around a folder's name are dropped)" for n in named if n != n.strip()]
    nested = shared_sub_folders(rels)
    if nested:
        tops, subs = nested
        example = f"`activebayes pool add {shlex.quote(str(folder / tops[0]))} --labels-from-folders`"
        if all(top.strip().lower() in SPLIT_NAMES for top in tops):
            raise CliError(
                f"--labels-from-folders: the folders of {folder} are {tops}, a split of the data, each holding the same folders "
                f"{subs[:5]}; their names, not the split's, are the classes",
                f"add one split's folder, e.g. {example}",
            )
        notes.append(f"every class folder ({', '.join(tops[:5])}) holds the same sub-folders ({', '.join(subs[:5])}) and no image of its "
                     f"own; if those sub-folders are the classes, add each folder on its own, e.g. {example}")  # fmt: skip
    return notes


#: top folder names that split a data set rather than name a class
SPLIT_NAMES = frozenset({"train", "training", "val", "valid", "validation", "test", "testing", "dev", "eval"})


def shared_sub_folders(rels: list[str]) -> tuple[list[str], list[str]] | None:
    """(the top folders, the sub-folders every one of them holds) when no image of `rels` lies
    directly in a top folder and each holds the same two or more sub-folders (`train/cat/1.png`,
    `val/cat/2.png`, ...: a split of the data, or classes with sub-groups); None otherwise."""
    subs: dict[str, set[str]] = {}
    for rel in rels:
        parts = rel.split("/")
        if len(parts) < 3:
            return None
        subs.setdefault(parts[0], set()).add(parts[1])
    shared = next(iter(subs.values()), set())
    if len(subs) < 2 or len(shared) < 2 or any(names != shared for names in subs.values()):
        return None
    return sorted(subs), sorted(shared)


def remove_converted_folder(store: Any, info: Any) -> None:
    """Delete the converted image folder of a project just deleted (`delete`): the
    `<stem>-<random>.image-folder.npz` that `pool add FOLDER` (or an append) wrote into an
    `activebayes-cache/` folder, unless a project left in `store` records the same file (one
    given to its `pool add` as it was). The images themselves are the user's and stay, as does
    any other data file."""
    from activebayes.data.images import FORMAT, is_image_pool

    if info.data_format != FORMAT or not info.data_path or not is_image_pool(info.data_path):
        return
    path = Path(info.data_path).resolve()
    if path.parent.name != CACHE_FOLDER:
        return
    for other in store.projects():
        recorded = store.project(other).data_path
        if recorded and Path(recorded).resolve() == path:
            return
    path.unlink(missing_ok=True)
