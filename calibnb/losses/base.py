"""What a training loop may call on a loss module besides ``forward``.

Every loss that :func:`calibnb.losses.get_loss` builds is a :class:`TrainingLoss`, so the trainer
(:class:`calibnb.train.Trainer`) calls these hooks on any loss and knows no loss class: the
losses that learn from the validation set (AdaFocal, CalFocal) override them, the others keep
the defaults, which do nothing.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from calibnb._validation import check_labels, check_probs


class TrainingLoss(nn.Module):
    """A loss module with the training loop's hooks (all no-ops here)."""

    #: Whether :meth:`observe_validation` does anything (the trainer's in-epoch updates,
    #: ``adafocal_update_every``, are allowed only for such losses).
    learns_from_validation = False

    def observe_validation(self, val_probs, val_labels) -> None:
        """Learn from the validation set's probabilities ``(N, K)`` and labels ``(N,)``, after an
        epoch or every few steps (AdaFocal's γ update, Ghosh et al. 2022, Algorithm 1). A loss
        that learns nothing still checks them (``validation_set()``)."""
        validation_set(val_probs, val_labels, getattr(self, "validate", True))

    def adapted_gammas(self) -> list[float] | None:
        """The γ the loss has adapted so far, for the epoch's history row (None: it adapts none)."""
        return None

    def run_record(self) -> dict:
        """Entries the loss adds to the run's ``metrics.json`` at the end (JSON-ready)."""
        return {}


def validation_set(val_probs, val_labels, validate: bool = True) -> tuple[Tensor, Tensor]:
    """``(val_probs, val_labels)`` as tensors where the probabilities are (on the CPU for arrays).

    Arrays are always checked as probabilities and their labels (:func:`calibnb._validation.check_probs`,
    :func:`~calibnb._validation.check_labels`); tensors only when ``validate``, since checking values
    on a GPU reads them back to the host (the trainer's in-epoch updates pass ``validate=False``
    tensors), and otherwise only their shapes.
    """
    if not isinstance(val_probs, Tensor) or validate:
        probs = check_probs(val_probs, "val_probs")
        checked = probs, check_labels(val_labels, *probs.shape, name="val_labels", probs_name="val_probs")
        device = val_probs.device if isinstance(val_probs, Tensor) else torch.device("cpu")
        return tuple(torch.from_numpy(a).to(device) for a in checked)
    if val_probs.ndim != 2 or not isinstance(val_labels, Tensor) or val_labels.shape != val_probs.shape[:1]:
        raise ValueError(f"val_probs (N, K) and val_labels (N,) do not fit: {tuple(val_probs.shape)}, "
                         f"{tuple(getattr(val_labels, 'shape', ()))}")
    return val_probs, val_labels
