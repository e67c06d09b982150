"""Per-epoch checkpoints, so that ``resume=True`` continues a killed run exactly.

A checkpoint holds everything the rest of the run depends on: the weights, the optimiser and
scheduler states, the loss's state (AdaFocal's γ per bin, its bins and its history), the random
generator that shuffles and augments, the global torch RNG, and the history so far. Written
atomically, so a run killed while saving keeps its previous checkpoint.

**A checkpoint never runs code.** It holds only tensors and plain Python data (numpy arrays are
stored as tensors, numpy scalars as Python numbers), and it is read with
``torch.load(weights_only=True)``, which refuses anything else: a checkpoint planted in a shared
run folder cannot execute code on resume; it is refused with an error naming the file.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import torch

from ..atomic import atomic_path

CHECKPOINT = "checkpoint.pt"


def save_checkpoint(out_dir: str | os.PathLike, state: dict) -> Path:
    """Write ``state`` as ``out_dir/checkpoint.pt`` atomically, as tensors and plain data only."""
    path = Path(out_dir) / CHECKPOINT
    with atomic_path(path) as tmp:
        torch.save(plain(state), tmp)
    return path


def load_checkpoint(out_dir: str | os.PathLike, device) -> dict | None:
    """The last checkpoint in ``out_dir``, or None when there is none.

    Read with ``weights_only=True``: a file that needs anything but tensors and plain data to
    load (code, classes) is refused with a ``ValueError`` naming it, and nothing in it runs.
    """
    path = Path(out_dir) / CHECKPOINT
    if not path.is_file():
        return None
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as error:
        reason = str(error).splitlines()[-1] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path} is not a checkpoint that loads as tensors and plain data "
                         f"(refused, nothing in it was run): {reason}") from None


def plain(value):
    """``value`` with numpy arrays as tensors and numpy scalars as Python numbers, recursively
    through dicts, lists and tuples: what ``torch.load(weights_only=True)`` accepts."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, np.generic):
        return value.item()
    return value
