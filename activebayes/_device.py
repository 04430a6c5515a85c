"""Device resolution shared by training, scoring and the loop."""

from __future__ import annotations

import torch

from activebayes.errors import ConfigError


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """`"auto"` picks CUDA when present, else CPU; anything else is checked and returned."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise ConfigError(f"device: expected 'auto', 'cpu' or 'cuda[:i]', got {device!r}") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device={device!r}: no CUDA device is available; use device='cpu' or 'auto'")
    return resolved
