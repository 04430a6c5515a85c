"""The round file: the columns it names, where an image pool's PNGs go, how an item is drawn as
a PNG (shared with `export --format label-studio`), and writing it (`round`, `evaluate`)."""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from activebayes.atomic_files import atomic_write
from activebayes_cli._app import CliError
from activebayes_cli._output import safe_name

QUERY_COLUMNS = ("key", "label", "score", "rank")
# the round's prediction for the item (`QueryInfo.prediction`), empty where it has none
PREDICTION_COLUMNS = {"classification": ("predicted", "probability"), "regression": ("predicted", "predicted_sd")}
RESERVED_COLUMNS = (*QUERY_COLUMNS, "predicted", "probability", "predicted_sd")
IMAGE_MIN_SIDE = 112  # PNGs of small images are enlarged (nearest neighbour) to at least this


def round_columns(task: str, show_guess: bool = False, opaque: bool = False) -> tuple[str, ...]:
    """The round file's leading columns for a project's task: key (with `opaque`, query: the
    items' opaque ids, `_task_ids`), label, score, rank, then, with `show_guess`
    (`--show-model-guess`), the prediction's (classification: predicted, probability;
    regression: predicted, predicted_sd)."""
    from activebayes.data.label_studio import QUERY_COLUMN

    named = (QUERY_COLUMN, *QUERY_COLUMNS[1:]) if opaque else QUERY_COLUMNS
    return (*named, *(PREDICTION_COLUMNS.get(task, ()) if show_guess else ()))


def prediction_cells(prediction: dict[str, Any] | None, task: str, writing: str = "plain") -> list[str]:
    """The prediction columns' cells of one query: the class and its probability (4 decimals),
    or the predictive mean and sd (`activebayes.data.number_style.written_number`: 6 significant
    digits), with the project's decimal mark (`writing`, `project_writing`); empty cells without
    a prediction (a cold-start round)."""
    from activebayes.data.number_style import fixed_number, written_number  # imported on use: the CLI starts without the data stack

    names = PREDICTION_COLUMNS.get(task, ())
    if not prediction:
        return [""] * len(names)
    if task == "classification":
        return [str(prediction["label"]), fixed_number(prediction["probability"], 4, writing)]
    return [written_number(prediction["mean"], writing), written_number(prediction["sd"], writing)]


def prediction_text(prediction: dict[str, Any] | None, writing: str = "plain") -> str:
    """"7 (0.62)" for a class and its probability, "3.1 ± 0.4" for a mean and sd, "" for none;
    with decimal commas ("7 (0,62)", "3,1 ± 0,4") in a project written so (`writing`)."""
    from activebayes.data.number_style import marked

    if not prediction:
        return ""
    if "label" in prediction:
        return f"{prediction['label']} ({marked(format(prediction['probability'], '.2f'), writing)})"
    return marked(f"{prediction['mean']:.4g} ± {prediction['sd']:.2g}", writing)


def images_folder(csv_path: Path) -> Path:
    """Where the PNGs of an image pool's queries go: `<csv name>-images/` next to the CSV."""
    return csv_path.with_name(f"{csv_path.stem}-images")


def _idx_shape(path: Path) -> tuple[int, ...]:
    """The array shape in an IDX file's header (raw or .gz), without reading the data."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        head = fh.read(4)
        if len(head) < 4:
            return ()
        return tuple(int(d) for d in np.frombuffer(fh.read(4 * head[3]), dtype=">u4"))


def image_shape(info: Any, data: Any) -> tuple[int, ...] | None:
    """The shape of one item as an image ([H, W] or [C, H, W], C = 1 or 3), or None for a table
    pool. Image pools: MNIST IDX images (flattened or [1, H, W]) and arrays [N, H, W] or
    [N, C, H, W] in .npy/.npz files."""
    shape = tuple(int(s) for s in data.x.shape[1:])
    if len(shape) == 2 or (len(shape) == 3 and shape[0] in (1, 3)):
        return shape
    if len(shape) == 1 and data.format == "idx":
        header = _idx_shape(Path(data.path))
        if len(header) == 3 and header[1] * header[2] == shape[0]:
            return header[1:]
    return None


def feature_columns(info: Any, data: Any) -> list[str]:
    """The names of the features' columns in the round file: a csv pool's own feature columns (as
    in the file: no key, label or ignored column), else x0, x1, ... over the flattened item. A name that clashes
    with key, label, score, rank, the prediction's columns or another column gets a 'feature_'
    prefix."""
    raw_columns = getattr(data, "raw_columns", None)
    if raw_columns is not None:  # a csv table: its feature columns as in the file
        names = list(raw_columns)
    else:
        width = int(np.prod(data.x.shape[1:]))
        own = getattr(data, "feature_names", None)
        names = list(own) if own is not None and len(own) == width else [f"x{j}" for j in range(width)]
    taken = set(RESERVED_COLUMNS)
    out = []
    for name in names:
        while name in taken:
            name = f"feature_{name}"
        taken.add(name)
        out.append(name)
    return out


def write_png(path: Path, pixels: np.ndarray) -> None:
    """A grey ([H, W] / [1, H, W]) or colour ([3, H, W]) image as PNG; values outside [0, 1]
    are scaled by the image's own range; small images are enlarged to be seen."""
    from matplotlib.image import imsave

    img = np.asarray(pixels, dtype=np.float64)
    if img.ndim == 3:
        img = img[0] if img.shape[0] == 1 else img.transpose(1, 2, 0)
    lo, hi = float(img.min()), float(img.max())
    if lo < 0.0 or hi > 1.0:
        img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    factor = max(1, math.ceil(IMAGE_MIN_SIDE / max(img.shape[:2])))
    img = img.repeat(factor, axis=0).repeat(factor, axis=1)
    with atomic_write(path, "wb") as fh:
        imsave(fh, img, cmap="gray", vmin=0.0, vmax=1.0, format="png")


def copy_original(data: Any, key: str, rank: int, folder: Path, name: str | None = None) -> Path:
    """A copy of item `key`'s original image, `<folder>/<rank + 1>-<name or key>.<png or jpg>`:
    what a person labelling opens of an image folder, as the original's path may name its class
    folder; named by `name` (its opaque id, `_task_ids`) where the keys are those paths. The picture
    upright and without the file's metadata, which can name it too (`data.image_copies`). A file
    of the same name is replaced."""
    from activebayes.data.image_copies import write_bare_copy
    from activebayes.data.images import source_path

    source = source_path(data, key)
    assert source is not None, key  # the key of one of the pool's queries
    folder.mkdir(exist_ok=True)
    return write_bare_copy(source, folder / f"{rank + 1:03d}-{safe_name(name or key)}")


def _text(value: Any) -> str:
    """A feature as its shortest exact text (float32 keeps its own short repr)."""
    return str(value.item()) if isinstance(value, np.integer) else str(value)


def write_round_csv(path: Path, queries: list[Any], info: Any, data: Any, show_guess: bool = False,
                    ids: Mapping[str, str] | None = None) -> Path | None:  # fmt: skip
    """The form a person fills in: columns key, label (empty), score, rank (1 = best), with
    `show_guess` the round's prediction (`round_columns`: the most probable class and its
    probability, or the predictive mean and sd; empty in a cold-start round; left out by default,
    as the labelling page and the prompt leave it: it anchors the answer), then the item's features under their
    own names, or for an image pool the path (relative to the CSV) of a PNG of the item in
    `images_folder(path)`, for an image folder a copy of its original file there
    (`copy_original`), as the original's path may name its class folder. `ids` (key -> opaque id,
    `_task_ids.query_ids`: a pool whose keys are those paths) names the items in a `query` column
    instead of `key`, and the copies after them. Returns that folder, or None. Written as the pool's csv came
    (`write_csv_like_pool`), its score, mean and sd with 6 significant digits and, like its
    probability, with a decimal comma where the pool's numbers had one (`project_writing`)."""
    from activebayes.data.number_style import project_writing, written_number

    shape = image_shape(info, data)
    folder = images_folder(path) if shape is not None else None
    writing = project_writing(getattr(info, "settings", None))  # decimal commas where the pool had them
    leading = list(round_columns(info.task, show_guess, opaque=ids is not None))
    rows = [[ids[q.key] if ids is not None else q.key, "", written_number(q.score, writing), str(q.rank + 1),
             *(prediction_cells(q.prediction, info.task, writing) if show_guess else [])] for q in queries]  # fmt: skip
    if getattr(data, "folder", None) is not None and folder is not None:  # `pool add FOLDER`: copies of the originals
        header = [*leading, "image"]
        for row, q in zip(rows, queries):
            copy = copy_original(data, q.key, q.rank, folder, ids[q.key] if ids is not None else None)
            row.append(copy.relative_to(path.parent).as_posix())
    elif folder is not None:
        folder.mkdir(exist_ok=True)
        header = [*leading, "image"]
        for row, q in zip(rows, queries):
            png = folder / f"{q.rank + 1:03d}-{safe_name(q.key)}.png"
            write_png(png, np.asarray(data.x[q.row]).reshape(shape))
            row.append(png.relative_to(path.parent).as_posix())
    else:
        header = [*leading, *feature_columns(info, data)]
        shown = data.raw if getattr(data, "raw", None) is not None else data.x  # as in the file, not standardised
        for row, q in zip(rows, queries):
            row.extend(_text(v) for v in np.asarray(shown[q.row]).reshape(-1))
    raw = getattr(data, "raw", None)
    write_csv_like_pool(path, header, rows, getattr(raw, "encoding", "utf-8"), getattr(raw, "delimiter", ","))
    return folder


def write_csv_like_pool(path: Path, header: list[str], rows: list[list[Any]], encoding: str | None, delimiter: str | None) -> None:
    """Write a csv as the pool's csv came (`encoding` and `delimiter` as read at `pool add`; None
    for a pool that was no csv): with `;` between the cells when it had them (as spreadsheets in
    most of Europe save "CSV", which a comma file opens there as one column), and with a UTF-8
    byte-order mark when a spreadsheet saved it (Windows-1252, or its own mark), so that Excel
    opens it as its user's own file and shows its accents. Written whole or not at all
    (`atomic_write`): a failure or a kill leaves no torn file."""
    from activebayes.data.csv_encoding import WINDOWS_1252  # imported on use: the CLI starts without the data stack

    excel = encoding in (WINDOWS_1252, "utf-8-sig")
    with atomic_write(path, newline="", encoding="utf-8-sig" if excel else "utf-8") as fh:
        writer = csv.writer(fh, delimiter=";" if delimiter == ";" else ",")
        writer.writerow(header)
        writer.writerows(rows)


def check_round_file(path: Path, info: Any, data: Any, force: bool) -> None:
    """Refuse (before anything is recorded) to overwrite an existing round file or image folder."""
    if path.is_dir():
        raise CliError(f"--csv: {path} is a folder", "give a file name, e.g. --csv answers/round.csv")
    if force:
        return
    if path.exists():
        raise CliError(
            f"the round file {path} already exists (answers may have been filled in)",
            "label from it first, move it away, choose another file with --csv PATH, or pass --force to overwrite it",
        )
    if image_shape(info, data) is not None:
        refuse_filled_folder(images_folder(path), "image folder", f"round file {path}", "choose another --csv PATH")


def refuse_filled_folder(folder: Path, kind: str, owner: str, instead: str) -> None:
    """Refuse (before anything is written) to write image files into `folder`, the `kind` of the
    file `owner`, where it already holds some; `instead` is the other way out (--force skips this)."""
    if folder.is_dir() and any(folder.iterdir()):
        raise CliError(f"the {kind} {folder} of {owner} already exists", f"move it away, {instead}, or pass --force")
