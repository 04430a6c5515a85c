"""`round --target FILE`: the target inputs x* of epig / power-epig, read as the pool is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from activebayes_cli._app import CliError


def check_targets(path: Path | None, acq: Any, info: Any, data: Any, resumed: Any) -> Any:
    """--target as a float tensor [M, ...] of target inputs (None: the loop draws pool items);
    a CliError when the acquisition takes no targets, the file is unreadable or does not match
    the pool, or a resumed round was started otherwise."""
    if path is not None and not getattr(acq, "needs_targets", False):
        raise CliError(f"--target: --acquisition {acq.name} takes no target inputs", "leave --target out, or pass --acquisition epig")
    if resumed is not None and getattr(acq, "needs_targets", False):
        given = (resumed.acquisition_settings or {}).get("epig_target_source") == "given"
        if given != (path is not None):
            what = "with --target FILE" if given else "without --target (pool items as targets)"
            raise CliError(f"round {resumed.number} was started {what}", f"{'pass the same --target FILE' if given else 'leave --target out'} to resume it, or pass --restart-round")
    if path is None:
        return None
    import torch

    from activebayes.data import load_dataset
    from activebayes.errors import ActiveBayesError
    from activebayes_cli._parse import existing_file

    existing_file(path, "--target")
    fix = "give a .csv/.npz/.npy of target inputs with the pool's columns, or a .txt of item keys, one per line"
    if path.suffix.lower() == ".txt":
        try:
            keys = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"--target: cannot read {path} ({exc})", fix) from exc
        index = {key: row for row, key in enumerate(data.keys if data.keys is not None else map(str, range(len(data.x))))}
        unknown = [key for key in keys if key not in index]
        if not keys or unknown:
            raise CliError(f"--target: {path} names {'no key' if not keys else f'{len(unknown)} unknown key(s), e.g. {unknown[0]!r}'}", fix)
        x = data.x[np.asarray([index[key] for key in keys])]
    else:
        settings = info.settings or {}
        try:
            x = load_dataset(path, image_layout=settings.get("image_layout", "flat"), features=settings.get("features")).x
        except (ActiveBayesError, OSError, ValueError) as exc:
            raise CliError(f"--target: cannot use {path} ({exc})", fix) from exc
    if tuple(x.shape[1:]) != tuple(data.x.shape[1:]):
        raise CliError(f"--target: {path} has items of shape {tuple(x.shape[1:])}, the pool {tuple(data.x.shape[1:])}", fix)
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
