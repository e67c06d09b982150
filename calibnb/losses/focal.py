"""Cross-entropy, focal loss, sample-dependent focal loss (FLSD) and inverse focal loss.

Focal loss (Lin et al. 2017) as a calibration loss is the subject of Mukhoti et al. (2020,
"Calibrating deep neural networks using focal loss", Eq. 1 and §5 for FLSD-53); inverse focal
loss is Eq. 1 of Ghosh et al. (2022, AdaFocal). All are computed by
:func:`calibnb.losses._fused.focal_family`: one softmax, ``log p_t`` as ``log_softmax`` computes
it (finite and exact however small ``p_t``), and a closed-form backward (no double backward).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from calibnb._validation import check_real
from calibnb.losses._common import check_focal_gamma, check_logits_targets, check_reduction, check_validate, lookup
from calibnb.losses._fused import FocalTerm, PerSampleFocalTerm, focal_family

#: The largest γ of inverse focal loss: its weight (1 + p_t)^γ reaches 2^γ, and 2^100 leaves
#: float32 (whose largest value is about 2^128) room for the gradient's further factors.
INVERSE_GAMMA_MAX = 100.0

#: FLSD-53 of Mukhoti et al.: gamma 5 for p_t < 0.2, 3 for 0.2 <= p_t < 0.5, 3 above.
FLSD53_GAMMAS = (5.0, 3.0, 3.0)
FLSD_THRESHOLDS = (0.2, 0.5)


def cross_entropy(logits: Tensor, targets: Tensor, reduction: str = "mean", validate: bool = True) -> Tensor:
    """Cross-entropy ``-log p_t``: ``torch.nn.functional.cross_entropy`` behind calibnb's checks
    (``validate``: see :func:`focal_loss`)."""
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return F.cross_entropy(logits, targets, reduction=reduction)


def focal_loss(
    logits: Tensor, targets: Tensor, gamma: float = 3.0, reduction: str = "mean", validate: bool = True
) -> Tensor:
    """Focal loss ``-(1 - p_t)^gamma log p_t`` (Mukhoti et al. 2020, Eq. 1; Lin et al. 2017).

    ``gamma = 0`` is cross-entropy; the default ``gamma = 3`` is Mukhoti et al.'s FL-3. ``gamma``
    is at most :data:`~calibnb.losses._common.FOCAL_GAMMA_MAX` (1000), as are FLSD's ``gammas``.

    ``validate=False`` skips the checks that read values (finite logits, targets in range) and
    computes without reading anything back to the host: for a training loop that checked its
    data once (:func:`calibnb.losses._common.check_logits_targets`).
    """
    gamma = check_focal_gamma(gamma)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return focal_family(logits, targets, FocalTerm(gamma), reduction=reduction, validate=validate)


def focal_loss_sd(
    logits: Tensor,
    targets: Tensor,
    gammas: Sequence[float] = FLSD53_GAMMAS,
    thresholds: Sequence[float] = FLSD_THRESHOLDS,
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """Sample-dependent focal loss (FLSD, Mukhoti et al. 2020, §5).

    Each sample's gamma is read off its own ``p_t`` (no gradient through gamma): ``gammas[i]``
    for ``thresholds[i-1] <= p_t < thresholds[i]``. The default is FLSD-53 (5 below 0.2, else
    3); ``gammas=(5, 3, 2)`` is the three-level schedule that the authors' code runs as "FLSD-52".
    ``validate``: see :func:`focal_loss`.
    """
    gammas, thresholds = check_schedule(gammas, thresholds)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    focal = PerSampleFocalTerm(lambda p_t, p_j: scheduled_gamma(p_t, gammas, thresholds))
    return focal_family(logits, targets, focal, reduction=reduction, validate=validate)


def inverse_focal_loss(
    logits: Tensor, targets: Tensor, gamma: float = 1.0, reduction: str = "mean", validate: bool = True
) -> Tensor:
    """Inverse focal loss ``-(1 + p_t)^gamma log p_t`` (Ghosh et al. 2022, Eq. 1).

    It weights confident samples *more* than cross-entropy does and so counters
    under-confidence; AdaFocal switches to it in bins where focal loss with small gamma is
    still under-confident. ``gamma`` is at most :data:`INVERSE_GAMMA_MAX` (100): beyond it the
    weight leaves float32's range. ``validate``: see :func:`focal_loss`.
    """
    gamma = check_inverse_gamma(gamma)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return focal_family(logits, targets, FocalTerm(gamma, inverse=True), reduction=reduction, validate=validate)


def check_inverse_gamma(gamma: float) -> float:
    """Validate inverse focal loss's ``gamma``: in ``[0, INVERSE_GAMMA_MAX]``."""
    return check_real(gamma, "gamma", minimum=0.0, maximum=INVERSE_GAMMA_MAX)


def check_schedule(gammas: Sequence[float], thresholds: Sequence[float]) -> tuple[tuple, tuple]:
    """Validate an FLSD schedule: ``len(gammas) == len(thresholds) + 1``, thresholds increasing in (0, 1)."""
    for name, values in (("gammas", gammas), ("thresholds", thresholds)):
        if np.ndim(values) != 1:
            raise ValueError(f"{name} must be a 1-D sequence of numbers, got {np.ndim(values)} dimensions")
    gammas = tuple(check_focal_gamma(g, f"gammas[{i}]") for i, g in enumerate(gammas))
    thresholds = tuple(
        check_real(t, f"thresholds[{i}]", minimum=0.0, maximum=1.0, strict_minimum=True)
        for i, t in enumerate(thresholds)
    )
    if len(gammas) != len(thresholds) + 1:
        raise ValueError(
            f"gammas needs one entry more than thresholds, got {len(gammas)} and {len(thresholds)}"
        )
    if any(b <= a for a, b in zip(thresholds, thresholds[1:])):
        raise ValueError(f"thresholds must be strictly increasing, got {list(thresholds)}")
    return gammas, thresholds


def scheduled_gamma(statistic: Tensor, gammas: tuple, thresholds: tuple) -> Tensor:
    """``gammas[i]`` where ``thresholds[i-1] <= statistic < thresholds[i]`` (vectorised lookup)."""
    gammas, thresholds = _schedule_tensors(gammas, thresholds, statistic.dtype, statistic.device)
    return lookup(gammas, statistic, thresholds)


@functools.lru_cache(maxsize=32)
def _schedule_tensors(gammas: tuple, thresholds: tuple, dtype: torch.dtype, device: torch.device):
    """The schedule as tensors, made once per dtype and device (a training loop calls the loss
    thousands of times with the same schedule)."""
    return (torch.tensor(gammas, dtype=dtype, device=device),
            torch.tensor(thresholds, dtype=dtype, device=device))
