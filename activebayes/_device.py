"""Device resolution shared by training, scoring and the loop."""

from __future__ import annotations

import torch

from activebayes.errors import ConfigError


def parse_device(device: str | torch.device = "auto") -> str | torch.device:
    """`device` checked for its form only ("auto", or what torch.device accepts), not for the
    hardware: what a constructor can refuse before anything runs."""
    if isinstance(device, torch.device) or device == "auto":
        return device
    try:
        return torch.device(device)  # type: ignore[arg-type]
    except (RuntimeError, TypeError):
        raise ConfigError(f"device: expected 'auto', 'cpu' or 'cuda[:i]', got {device!r}") from None


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """`"auto"` picks CUDA when present, else CPU; anything else is checked and returned."""
    resolved = parse_device(device)
    if isinstance(resolved, str):  # "auto"
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device={device!r}: no CUDA device is available; use device='cpu' or 'auto'")
    return resolved
