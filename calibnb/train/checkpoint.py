"""Per-epoch checkpoints, so that ``resume=True`` continues a killed run exactly.

A checkpoint holds everything the rest of the run depends on: the weights, the optimiser and
scheduler states, the loss's state (AdaFocal's γ per bin, its bins and its history), the random
generator that shuffles and augments, the global torch RNG, and the history so far. Written
atomically, so a run killed while saving keeps its previous checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from ..atomic import atomic_path

CHECKPOINT = "checkpoint.pt"


def save_checkpoint(out_dir: str | os.PathLike, state: dict) -> Path:
    path = Path(out_dir) / CHECKPOINT
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
    return path


def load_checkpoint(out_dir: str | os.PathLike, device) -> dict | None:
    """The last checkpoint in ``out_dir``, or None when there is none."""
    path = Path(out_dir) / CHECKPOINT
    if not path.is_file():
        return None
    return torch.load(path, map_location=device, weights_only=False)
