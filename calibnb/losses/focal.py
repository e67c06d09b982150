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

import torch
import torch.nn.functional as F
from torch import Tensor

from calibnb.losses._common import check_logits_targets, check_reduction, check_validate, lookup
from calibnb.losses._fused import FocalTerm, PerSampleFocalTerm, focal_family
from calibnb.losses.declarations import FOCAL, FOCAL_SD, INVERSE_FOCAL


def cross_entropy(logits: Tensor, targets: Tensor, reduction: str = "mean", validate: bool = True) -> Tensor:
    """Cross-entropy ``-log p_t``: ``torch.nn.functional.cross_entropy`` behind calibnb's checks
    (``validate``: see :func:`focal_loss`).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import cross_entropy
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> cross_entropy(z, t, reduction="none")
    tensor([0.2413, 1.1019], dtype=torch.float64)
    >>> round(cross_entropy(z, t).item(), 4)
    0.6716
    """
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return F.cross_entropy(logits, targets, reduction=reduction)


def focal_loss(
    logits: Tensor, targets: Tensor, gamma: float = FOCAL.default("gamma"), reduction: str = "mean", validate: bool = True
) -> Tensor:
    """Focal loss ``-(1 - p_t)^gamma log p_t`` (Mukhoti et al. 2020, Eq. 1; Lin et al. 2017).

    ``gamma = 0`` is cross-entropy; the default ``gamma = 3`` is Mukhoti et al.'s FL-3. ``gamma``
    is at most ``FOCAL_GAMMA_MAX`` (1000), as are FLSD's ``gammas``.

    ``validate=False`` skips the checks that read values (finite logits, targets in range) and
    computes without reading anything back to the host: for a training loop that checked its
    data once (``calibnb.losses._common.check_logits_targets()``).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> focal_loss(z, t, gamma=2, reduction="none")  # the confident right sample weighs little
    tensor([0.0111, 0.4914], dtype=torch.float64)
    >>> round(focal_loss(z, t, gamma=2).item(), 4)
    0.2512
    >>> round(focal_loss(z, t, gamma=0).item(), 4)  # gamma = 0 is cross-entropy
    0.6716
    """
    [gamma] = FOCAL.checked(gamma=gamma)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return focal_family(logits, targets, FocalTerm(gamma), reduction=reduction, validate=validate)


def focal_loss_sd(
    logits: Tensor,
    targets: Tensor,
    gammas: Sequence[float] = FOCAL_SD.default("gammas"),
    thresholds: Sequence[float] = FOCAL_SD.default("thresholds"),
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """Sample-dependent focal loss (FLSD, Mukhoti et al. 2020, §5).

    Each sample's gamma is read off its own ``p_t`` (no gradient through gamma): ``gammas[i]``
    for ``thresholds[i-1] <= p_t < thresholds[i]``. The default is FLSD-53 (5 below 0.2, else
    3); ``gammas=(5, 3, 2)`` is the three-level schedule that the authors' code runs as "FLSD-52".
    ``validate``: see :func:`focal_loss`.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import focal_loss, focal_loss_sd
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> focal_loss_sd(z, t, reduction="none")  # both p_t at least 0.2: gamma 3, focal loss FL-3
    tensor([0.0024, 0.3281], dtype=torch.float64)
    >>> focal_loss(z, t, gamma=3, reduction="none")
    tensor([0.0024, 0.3281], dtype=torch.float64)
    >>> focal_loss_sd(z, torch.tensor([1, 2]), reduction="none")  # p_t = 0.18 < 0.2 takes gamma 5
    tensor([0.6643, 0.3281], dtype=torch.float64)
    """
    gammas, thresholds = FOCAL_SD.checked(gammas=gammas, thresholds=thresholds)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    focal = PerSampleFocalTerm(lambda p_t, p_j: scheduled_gamma(p_t, gammas, thresholds))
    return focal_family(logits, targets, focal, reduction=reduction, validate=validate)


def inverse_focal_loss(
    logits: Tensor, targets: Tensor, gamma: float = INVERSE_FOCAL.default("gamma"), reduction: str = "mean", validate: bool = True
) -> Tensor:
    """Inverse focal loss ``-(1 + p_t)^gamma log p_t`` (Ghosh et al. 2022, Eq. 1).

    It weights confident samples *more* than cross-entropy does and so counters
    under-confidence; AdaFocal switches to it in bins where focal loss with small gamma is
    still under-confident. ``gamma`` is at most ``INVERSE_GAMMA_MAX`` (100): beyond it the
    weight leaves float32's range. ``validate``: see :func:`focal_loss`.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import inverse_focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> inverse_focal_loss(z, t, gamma=1, reduction="none")  # the confident sample weighs (1 + 0.79)
    tensor([0.4309, 1.4680], dtype=torch.float64)
    >>> round(inverse_focal_loss(z, t, gamma=0).item(), 4)  # gamma = 0 is cross-entropy
    0.6716
    """
    [gamma] = INVERSE_FOCAL.checked(gamma=gamma)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return focal_family(logits, targets, FocalTerm(gamma, inverse=True), reduction=reduction, validate=validate)


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
