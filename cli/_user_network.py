"""Checks of the network a `--model module:factory` builds, made once when the factory is
resolved, before anything is recorded: what would otherwise fail later with a message about
something else (a dtype named as a shape mismatch), or not fail at all (one network shared by
every member of an ensemble).

  * weights in float32: activebayes feeds float32 items (an image folder's pixels in [0, 1]), so a
    `.double()` or `.half()` network fails its first forward pass with "mat1 and mat2 must have the
    same dtype";
  * weights with values: a network built on the meta device has shapes only;
  * a new network at each call: an ensemble trains several members and each round fits afresh,
    so a factory returning one module kept in a global would train one network for all.

A network on the GPU is fine: training and prediction move it to the round's `--device`; on a
machine where torch sees no CUDA device, a factory that puts it there is named as such.

Also here, what the checks say about a factory that cannot be called with no arguments
(`check_no_arguments`), a module that fails to import (`import_failure`: its own import of a
missing package is no misspelt --model), a call that fails (`call_failure`), and a network whose
forward pass returns something other than logits [N, C] (`output_mistake`: a tuple, a dict or a
Hugging Face output whose `.logits` is what to return, or one value per item for two classes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activebayes_cli._app import CliError


def check_user_network(spec: str, model: Any, factory: Callable[[], Any]) -> None:
    """A one-line CliError when the nn.Module `model` that `factory` (named `spec`) built has
    weights other than float32, weights on the meta device, or is what a second call returns."""
    import torch

    params = list(model.parameters())
    other = sorted({str(p.dtype).removeprefix("torch.") for p in params if p.is_floating_point() and p.dtype != torch.float32})
    if other:
        raise CliError(
            f"--model {spec}: the network's weights are {', '.join(other)}, and activebayes trains and predicts on float32 items",
            "build it in float32 (leave out .double(), .half() or .to(dtype) in the factory)",
        )
    if any(p.is_meta for p in [*params, *model.buffers()]):
        raise CliError(
            f"--model {spec}: the network's weights are on the meta device (shapes without values)",
            "build it on the CPU (a round moves it to --device)",
        )
    try:
        again = factory()
    except (Exception, SystemExit) as exc:  # the user's code, failing on a second call only
        raise call_failure(spec, exc, f"calling {spec}() a second time") from exc
    if again is model:
        raise CliError(
            f"--model {spec}: each call returns the same network object",
            "build a new network inside the factory (an ensemble trains several, and each round fits one afresh)",
        )


def check_no_arguments(spec: str, factory: Callable[..., Any]) -> None:
    """A one-line CliError when `factory` (a function or a class) has parameters without
    defaults: each network is built by calling it with none."""
    import inspect

    try:
        inspect.signature(factory).bind()
    except TypeError:
        needed = [n for n, p in inspect.signature(factory).parameters.items()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]  # fmt: skip
        raise CliError(
            f"--model {spec}: the factory takes {', '.join(needed)} without defaults, and each network is built by calling it "
            "with no arguments",
            f"give {'them defaults' if len(needed) > 1 else 'it a default'}, or point --model at a function of none that "
            "calls it (def make(): return ...)",
        ) from None
    except ValueError:  # a builtin or C callable without a signature: its call says
        return


def import_failure(spec: str, module_name: str, exc: BaseException) -> CliError:
    """The one-line CliError for module `module_name` of --model `spec` failing to import with
    `exc`: a misspelt or unreachable module when `exc` says that module (or a package above it)
    is not found, else the module's own code failing, with the underlying error."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    unnamed = "" in module_name.split(".")  # '.mod' (relative) or 'a..b': no module's name
    if unnamed or missing is not None and (module_name == missing or module_name.startswith(missing + ".")):
        return CliError(
            f"--model: cannot import module {module_name!r} ({type(exc).__name__}: {exc})",
            "check the spelling and that the module is on PYTHONPATH (run from its folder), or give a file as path/to/file.py:factory",
        )
    return CliError(f"--model {spec}: importing module {module_name!r} failed ({type(exc).__name__}: {exc})", import_fix(exc, "fix the module"))


def import_fix(exc: BaseException, otherwise: str) -> str:
    """How to fix code that failed to import with `exc`: install the package a
    ModuleNotFoundError names, else `otherwise`."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    return f"install {missing!r} in this environment, or fix the import" if missing else otherwise


def call_failure(spec: str, exc: BaseException, when: str) -> CliError:
    """The one-line CliError for the user's network code failing with `exc` `when` (e.g.
    "calling nets.py:make()"): one that reaches for a GPU torch does not see is named so."""
    import torch

    text = f"{type(exc).__name__}: {exc}"
    if not torch.cuda.is_available() and ("CUDA" in str(exc) or "cuda" in str(exc)):
        return CliError(
            f"--model {spec}: {when} failed ({text}): the network is put on a CUDA GPU, and torch sees none on this machine",
            "build it on the CPU, without .cuda() or .to('cuda') (a round moves it to --device)",
        )
    return CliError(f"--model {spec}: {when} failed ({text})", "fix the factory")


def check_model_output(model_fn: Any, x: Any, n_classes: int, spec: str) -> None:
    """Build the network once and run two items through it: logits [2, C] expected."""
    import numpy as np
    import torch

    try:
        with torch.no_grad():
            out = model_fn().to("cpu").eval()(torch.from_numpy(np.array(x[:2])).float())  # a writable copy: the cache is mapped read-only
    except Exception as exc:  # the user's network or a shape mismatch: one line
        shape = tuple(x.shape[1:])
        failure = call_failure(spec, exc, f"a forward pass on items of shape {shape}")
        if failure.fix != "fix the factory":  # one that reaches for a GPU not there
            raise failure from exc
        raise CliError(
            failure.what,
            f"make the network take items of shape {shape} (an image folder's size is set by pool add --image-size; "
            "IDX images become [1, H, W] with --image-layout chw), or fix the error its forward raises",
        ) from exc
    mistake = output_mistake(out, n_classes)
    if mistake is None and out.shape[0] != min(2, x.shape[0]):
        mistake = f"expected logits [N, {n_classes}] for {min(2, x.shape[0])} items, got {tuple(out.shape)}; keep one row per item"
    if mistake is not None:
        raise CliError(f"--model {spec}: {mistake.split('; ', 1)[0]}", mistake.split("; ", 1)[1])


def output_mistake(out: Any, n_classes: int) -> str | None:
    """What is wrong with a forward pass's output `out` on 2 items for `n_classes` classes (the
    fix after "; "), or None when it is a tensor [2, n_classes] (or [1, n_classes] on 1 item)."""
    import torch

    want = f"logits [N, {n_classes}]"
    if isinstance(out, torch.Tensor):
        if out.ndim == 2 and out.shape[1] == n_classes:
            return None
        if n_classes == 2 and (out.ndim == 1 or out.ndim == 2 and out.shape[1] == 1):
            return (f"expected {want} for the project's 2 classes, got {tuple(out.shape)}: one value per item, as a "
                    "sigmoid output has; end the network with 2 outputs (nn.Linear(..., 2)), one logit per class")  # fmt: skip
        return f"expected {want} for the project's {n_classes} classes, got {tuple(out.shape)}; make the network output {n_classes} values per item"
    logits = out.get("logits") if isinstance(out, dict) else getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        pick = "['logits']" if isinstance(out, dict) else ".logits"
        return (f"forward returns a {type(out).__name__} holding {pick}, not a tensor; return the logits alone from "
                f"forward (wrap the network: def forward(self, x): return self.net(x){pick})")  # fmt: skip
    if isinstance(out, (tuple, list)):
        return (f"forward returns a {type(out).__name__} of {len(out)}, not a tensor; return only the {want} from "
                "forward (wrap the network and pick the logits out)")  # fmt: skip
    return f"forward returns a {type(out).__name__}, not a tensor; return the {want} from forward"


__all__ = ["call_failure", "check_model_output", "check_no_arguments", "check_user_network", "import_failure", "import_fix", "output_mistake"]
