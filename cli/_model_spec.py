"""`--model`: a spec turned into the checked factory of fresh networks a round trains.

The spec is `mlp`, `cnn` (activebayes.nets.default_model), `auto` (cli/_model_auto.py),
`pkg.module:factory` (imported like `python -m` would, the working directory first on the path)
or `path/to/file.py:factory` (the file imported by its path, its folder first on the path). A
user's factory is called once here and must return a `torch.nn.Module` (`_user_network` checks
it further, and runs two pool items through it before a round: `check_model_output`); every
failure is one CliError line.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from activebayes.errors import ConfigError, closest_name
from activebayes_cli._app import CliError

BUILTIN_MODELS = ("mlp", "cnn")
MODEL_FORMS = "mlp, cnn, auto, pkg.mod:factory or path/to/file.py:factory"
#: `--model auto`: MLPs of a few widths, the one of highest Laplace evidence each round (cli/_model_auto.py).
AUTO_MODEL = "auto"


def _split_spec(spec: str) -> tuple[str, str]:
    """('pkg.module' or 'path/to/file.py', 'factory') of a --model spec."""
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        close = closest_name(spec.lower(), [*BUILTIN_MODELS, AUTO_MODEL])
        fix = f"did you mean --model {close}?" if close else "pass e.g. --model mypkg.nets:make_net or --model ./nets.py:make_net"
        raise CliError(f"--model: expected {MODEL_FORMS}, got {spec!r}", fix)
    return target, attr


def _is_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target or os.sep in target


def normalize_model_spec(spec: str) -> str:
    """The spec as a round records it: a file's path made absolute, anything else as given."""
    if spec in BUILTIN_MODELS or spec == AUTO_MODEL:
        return spec
    target, attr = _split_spec(spec)
    if _is_path(target):
        return f"{Path(target).expanduser().resolve()}:{attr}"
    return spec


def _import_file(spec: str, target: str) -> Any:
    path = Path(target).expanduser()
    if not path.is_file():
        raise CliError(f"--model {spec}: no file at {path}", "give the path of a .py file (relative to the current folder) before the colon")
    path = path.resolve()
    name = "_activebayes_model_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise CliError(f"--model {spec}: {path} is not a Python file", "give the path of a .py file before the colon")
    module = importlib.util.module_from_spec(loader_spec)
    if str(path.parent) not in sys.path:  # like `python file.py`: the file's own folder imports
        sys.path.insert(0, str(path.parent))
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        loader_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the user's file (even sys.exit() in it): one line
        sys.modules.pop(name, None)
        from activebayes_cli._user_network import import_fix

        raise CliError(f"--model {spec}: importing {path} failed ({type(exc).__name__}: {exc})", import_fix(exc, "fix the file")) from exc
    return module


def _import_module(spec: str, module_name: str) -> Any:
    if os.getcwd() not in sys.path:  # like `python -m`: modules in the working directory import
        sys.path.insert(0, os.getcwd())
    from activebayes_cli._user_network import import_failure

    try:
        return importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # not found, or the module's own code failed (or exited) while importing
        sys.modules.pop(module_name, None)
        raise import_failure(spec, module_name, exc) from exc


def import_factory(spec: str) -> Callable[[], Any]:
    """The callable named by 'pkg.module:factory' or 'path/to/file.py:factory' (dots after the
    colon walk attributes)."""
    target, attr = _split_spec(spec)
    module = _import_file(spec, target) if _is_path(target) else _import_module(spec, target)
    found: Any = module
    for part in attr.split("."):
        if not hasattr(found, part):
            close = difflib.get_close_matches(part, [n for n in dir(found) if not n.startswith("_")], n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise CliError(f"--model: module {target!r} has no attribute {attr!r}{hint}", "check the name after the colon")
        found = getattr(found, part)
    if not callable(found):
        raise CliError(f"--model: {spec!r} is not callable", "point at a function returning a torch.nn.Module")
    return found


def model_factory(spec: str, input_shape: Sequence[int], n_classes: int) -> Callable[[], Any]:
    """The model factory for `--model` (checked: a user factory must build an nn.Module)."""
    from torch import nn

    from activebayes.nets import ModelKind, default_model

    if spec == AUTO_MODEL:  # the checks before a round run on an MLP; the round chooses among its candidates
        spec = "mlp"
    if spec in {kind.value for kind in ModelKind}:
        try:
            return default_model(spec, input_shape, n_classes)
        except ConfigError as exc:
            raise CliError(
                f"--model {spec}: does not fit items of shape {tuple(input_shape)} ({exc})",
                "use --model mlp, or images [1, H, W] for cnn (pool add --image-layout chw)",
            ) from exc
    from activebayes_cli._user_network import call_failure, check_no_arguments, check_user_network

    factory = import_factory(spec)
    check_no_arguments(spec, factory)
    try:
        model = factory()
    except (Exception, SystemExit) as exc:  # the user's code (even sys.exit() in it): one line
        raise call_failure(spec, exc, f"calling {spec}()") from exc
    if not isinstance(model, nn.Module):
        raise CliError(
            f"--model: {spec}() returned {type(model).__name__}, not a torch.nn.Module",
            "return a fresh network from the factory",
        )
    check_user_network(spec, model, factory)
    return factory
