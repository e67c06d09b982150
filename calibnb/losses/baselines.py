"""The baselines the papers train against: Brier loss, label smoothing and MMCE.

Mukhoti et al. (2020) compare focal loss with Brier loss (Brier 1950), label smoothing
(Müller et al. 2019) and the weighted MMCE of Kumar et al. (2018); the later papers reuse
their table.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from calibnb.losses._common import (
    check_log_probs, check_logits_targets, check_reduction, check_validate, computes_host_free,
    per_sample_gradient, reduce,
)
from calibnb.losses._fused import FocalTerm, donated, focal_family, row_argmax, softmax_parts
from calibnb.losses.declarations import LABEL_SMOOTHING, MMCE

#: Added under the square root of MMCE_w, as in the reference code: it bounds the gradient
#: of ``sqrt`` at a perfectly calibrated batch.
MMCE_SQRT_EPS = 1e-10


def brier_loss(logits: Tensor, targets: Tensor, reduction: str = "mean", validate: bool = True) -> Tensor:
    """Brier loss ``sum_k (p_k - y_k)^2`` with ``y`` the one-hot label (Brier 1950).

    The ``"mean"`` reduction is what Mukhoti et al.'s code trains on (sum over classes, mean
    over the batch). Computed with FCL's fused Brier term (``calibnb.losses._fused``).
    ``validate``: see :func:`calibnb.losses.focal_loss`.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import brier_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> round(brier_loss(z, t).item(), 4)
    0.3747
    >>> y = torch.nn.functional.one_hot(t, num_classes=3)
    >>> round(((torch.softmax(z, dim=1) - y) ** 2).sum(dim=1).mean().item(), 4)
    0.3747
    """
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return focal_family(logits, targets, None, brier=1.0, reduction=reduction, validate=validate)


def label_smoothing_loss(
    logits: Tensor, targets: Tensor, alpha: float = LABEL_SMOOTHING.default("alpha"), reduction: str = "mean", validate: bool = True
) -> Tensor:
    """Cross-entropy against the smoothed label ``(1 - alpha) y + alpha / K`` (Müller et al. 2019).

    PyTorch's convention (``cross_entropy(label_smoothing=alpha)``): the ``alpha / K`` mass also
    goes to the true class. Computed as ``-log p_t + alpha (z_t - mean_k z_k)`` in the fused
    focal family (``calibnb.losses._fused.focal_family()``), faster than PyTorch's.
    ``alpha = 0.05`` is the setting in Mukhoti et al.'s tables; their code has no label
    smoothing, and the FCL code spreads ``alpha / (K - 1)`` over the other classes instead.
    ``validate``: see :func:`calibnb.losses.focal_loss`.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import label_smoothing_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> round(label_smoothing_loss(z, t, alpha=0.05).item(), 4)
    0.7091
    >>> round(torch.nn.functional.cross_entropy(z, t, label_smoothing=0.05).item(), 4)
    0.7091
    """
    [alpha] = LABEL_SMOOTHING.checked(alpha=alpha)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return focal_family(logits, targets, FocalTerm(0.0), smoothing=alpha, reduction=reduction, validate=validate)


def mmce_loss(
    logits: Tensor,
    targets: Tensor,
    lam: float = MMCE.default("lam"),
    width: float = MMCE.default("width"),
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """Cross-entropy plus ``lam`` times the weighted MMCE of the batch (Kumar et al. 2018).

    ``"mean"`` is ``mean CE + lam * MMCE_w`` and ``"sum"`` is ``N`` times that, the objective of
    Mukhoti et al.'s training loop (``lam = 2``, kernel width 0.4); ``"none"`` adds the batch
    term to every sample's cross-entropy, so that its mean is the ``"mean"`` value.
    See :func:`mmce_weighted` for the normalisation; ``width >= 0.01`` keeps the exponents of its
    prefix sums within +-50, and ``lam <= 1e6`` (``TERM_WEIGHT_MAX``)
    the float32 values. Forward and backward are fused: ``MMCE_w`` depends on the logits only
    through the top-label confidences ``r``, so the gradient is the cross-entropy's plus
    ``lam dMMCE_w/dr_i * r_i (e_max - p)`` (``mmce_with_gradient()``); no double backward.
    ``validate``: see :func:`calibnb.losses.focal_loss`; on a GPU, or with ``validate=False``,
    MMCE_w is computed where the logits are (``mmce_with_gradient_on_device()``).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import cross_entropy, mmce_loss, mmce_weighted
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> round(mmce_loss(z, t, lam=2.0).item(), 4)
    1.3801
    >>> mmce = mmce_weighted(torch.log_softmax(z, dim=1), t)
    >>> round((cross_entropy(z, t) + 2.0 * mmce).item(), 4)  # mean cross-entropy + lam MMCE_w
    1.3801
    """
    lam, width = MMCE.checked(lam=lam, width=width)
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    return _CrossEntropyPlusMMCE.apply(logits, targets, lam, width, reduction, computes_host_free(logits, validate))


class _CrossEntropyPlusMMCE(torch.autograd.Function):
    """Cross-entropy plus ``lam`` MMCE_w, reduced, with a closed-form backward from the forward's
    softmax: ``dL/dz = g_ce (p - e_t) + g_mmce lam dMMCE_w/dr_i r_i (e_max - p)``."""

    @staticmethod
    def forward(
        ctx, logits: Tensor, targets: Tensor, lam: float, width: float, reduction: str, host_free: bool
    ) -> Tensor:
        t = targets.unsqueeze(1)
        e, s, m, logp_t = softmax_parts(logits, t)  # p = e / s, with e = 1 at the row maximum m
        predicted = logits.argmax(dim=1, keepdim=True) if host_free else row_argmax(logits, maximum=m)[1]
        r = s.reciprocal_()  # the top-label confidence
        of_confidences = mmce_with_gradient_on_device if host_free else mmce_with_gradient
        mmce, grad_r = of_confidences(r.view(-1), predicted.view(-1) == targets, width)
        penalty = lam * mmce
        ctx.lam, ctx.reduction = lam, reduction
        ctx.save_for_backward(e, t, predicted, r, grad_r.view(-1, 1).mul_(r))
        # the batch term once per sample: mean CE + lam MMCE_w, N times that for "sum"
        return reduce(logp_t.view(-1).neg().add_(penalty), reduction)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        e, t, predicted, inv_s, through_r = ctx.saved_tensors  # through_r = dMMCE_w/dr_i * r_i
        n = len(through_r)
        grad_ce = per_sample_gradient(grad, ctx.reduction, n).expand(n, 1)
        through_r = through_r * (grad_ce.sum() * ctx.lam)  # every sample carries lam MMCE_w
        grad_logits = torch.mul(e, (grad_ce - through_r).mul_(inv_s), out=donated(e))  # p (...) = e (...) / s
        grad_logits.scatter_add_(1, t, grad_ce.neg())
        return grad_logits.scatter_add_(1, predicted, through_r), None, None, None, None, None


def mmce_weighted(logp: Tensor, targets: Tensor, width: float = MMCE.default("width")) -> Tensor:
    """Weighted MMCE ``MMCE_w`` of a batch (Kumar et al. 2018) with the Laplacian kernel.

    With ``r`` the top-label confidences, ``C`` the ``m`` correct and ``W`` the ``n`` wrong
    predictions and ``k(a, b) = exp(-|a - b| / width)``::

        MMCE_w^2 = sum_{C x C} (1-r_i)(1-r_j) k / m^2 + sum_{W x W} r_i r_j k / n^2
                   - 2 sum_{C x W} (1-r_i) r_j k / (m n)

    and ``MMCE_w = sqrt(MMCE_w^2 + 1e-10)``; zero when ``C`` or ``W`` is empty. The reference
    code (torrvision/focal_calibration, ``MMCE_weighted``) takes means over each block and then
    divides by ``m^2``, ``n^2``, ``m n`` again, i.e. it normalises twice; calibnb normalises
    once, as in Kumar et al.'s definition. Takes log-probabilities ``(N, K)`` (``log_softmax``
    of logits) and targets in ``[0, K)``, both checked (``check_log_probs()``);
    differentiable through ``r`` (``mmce_with_gradient()`` gives ``dMMCE_w/dr``).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import mmce_weighted
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> logp = torch.log_softmax(z, dim=1)
    >>> round(mmce_weighted(logp, t).item(), 4)  # one right prediction (r = 0.79), one wrong (r = 0.37)
    0.3542
    >>> mmce_weighted(logp, torch.tensor([0, 1])).item()  # no wrong prediction: zero
    0.0
    """
    [width] = MMCE.checked(width=width)
    logp, targets = check_log_probs(logp, targets)
    log_r, predicted = logp.max(dim=1)
    return _MMCEOfConfidences.apply(log_r.exp(), predicted == targets, width)


class _MMCEOfConfidences(torch.autograd.Function):
    @staticmethod
    def forward(ctx, r: Tensor, correct: Tensor, width: float) -> Tensor:
        mmce, grad_r = mmce_with_gradient(r, correct, width)
        ctx.save_for_backward(grad_r)
        return r.new_tensor(mmce)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        (grad_r,) = ctx.saved_tensors
        return grad * grad_r, None, None


def mmce_with_gradient(r: Tensor, correct: Tensor, width: float) -> tuple[float, Tensor]:
    """``MMCE_w`` (a number) of confidences ``r`` ``(N,)`` with correctness ``correct``, and
    ``dMMCE_w / dr``.

    ``MMCE_w^2 = v^T K v`` with ``v = 1_C (1 - r) / m - 1_W r / n``. For the one-dimensional
    Laplacian kernel, with the confidences sorted, ``left_i = sum_{j <= i} v_j k_ij`` and
    ``right_i = sum_{j >= i} v_j k_ij`` are prefix sums, so the cost is ``O(N log N)``, not
    ``O(N^2)``: ``v^T K v = 2 sum_i v_i left_i - sum_i v_i^2`` and, since
    ``dk_ij/dr_i = -sign(r_i - r_j) k_ij / width``,
    ``d(v^T K v)/dr_i = 2 (K v)_i dv_i/dr_i - 2 v_i (left_i - right_i) / width``
    with ``(K v)_i = left_i + right_i - v_i`` and ``dv_i/dr_i = -1/m`` (correct) or ``-1/n``.
    The ``N`` numbers are worked on in float64 with numpy on the host: the sort and the dozen
    ``O(N)`` steps cost less there than as PyTorch calls, and the result is read on the host
    anyway; the gradient comes back in ``r``'s dtype, on its device.
    """
    confidence = r.detach().cpu()
    confidence = (confidence if confidence.dtype == torch.float64 else confidence.float()).numpy()
    hit = correct.cpu().numpy()
    m = int(np.count_nonzero(hit))
    n = hit.size - m
    if m == 0 or n == 0:
        return 0.0, torch.zeros_like(r)
    order = _ascending_order(confidence)
    ranked, hit = confidence[order].astype(np.float64), hit[order]
    dv = np.where(hit, -1.0 / m, -1.0 / n)  # dv/dr
    v = np.where(hit, (1.0 - ranked) / m, -ranked / n)
    up = np.exp((ranked - 0.5) / width)  # centred exponents stay within +-50 for width >= 0.01
    down = 1.0 / up
    left = np.cumsum(v * up) * down  # sum_{j <= i} v_j exp(-(s_i - s_j)), s = r / width
    right = np.cumsum((v * down)[::-1])[::-1] * up  # sum_{j >= i} v_j exp(-(s_j - s_i))
    raw = 2.0 * (v @ left) - v @ v
    mmce = math.sqrt(max(raw, 0.0) + MMCE_SQRT_EPS)
    scale = 1.0 / mmce if raw > 0 else 0.0  # d sqrt(x) / dx = 1 / (2 sqrt(x)), times 2 below
    # d(v^T K v)/dr / 2 = (K v) dv - v (left - right) / width, with K v = left + right - v
    half = ((left + right - v) * dv - v * (left - right) / width) * scale
    gradient = np.empty_like(half)
    gradient[order] = half
    return mmce, torch.from_numpy(gradient).to(device=r.device, dtype=r.dtype)


def mmce_with_gradient_on_device(r: Tensor, correct: Tensor, width: float) -> tuple[Tensor, Tensor]:
    """``mmce_with_gradient()`` as tensor operations where ``r`` is: no value is read back.

    The same sorted prefix sums in float64 (``torch.sort``, ``cumsum``); the cases that the
    host version decides with a branch (no correct or no wrong prediction: ``MMCE_w = 0``; a
    batch calibrated to rounding: gradient 0) are ``torch.where`` selections. Returns
    ``MMCE_w`` as a 0-dim tensor and ``dMMCE_w/dr`` in ``r``'s dtype.
    """
    confidence = r.detach().to(torch.float64)
    m = correct.sum()
    n = correct.numel() - m
    both = (m > 0) & (n > 0)
    m, n = m.clamp_min(1).to(torch.float64), n.clamp_min(1).to(torch.float64)
    ranked, order = torch.sort(confidence, stable=True)
    hit = correct[order]
    dv = torch.where(hit, -1.0 / m, -1.0 / n)
    v = torch.where(hit, (1.0 - ranked) / m, -ranked / n)
    up = torch.exp((ranked - 0.5) / width)
    down = up.reciprocal()
    left = torch.cumsum(v * up, 0) * down
    right = torch.cumsum((v * down).flip(0), 0).flip(0) * up
    raw = torch.where(both, 2.0 * (v @ left) - v @ v, 0.0)
    mmce = torch.where(both, torch.sqrt(raw.clamp_min(0.0) + MMCE_SQRT_EPS), 0.0)
    scale = torch.where(raw > 0, mmce.reciprocal(), 0.0)
    half = ((left + right - v) * dv - v * (left - right) / width) * scale
    gradient = torch.empty_like(half).scatter_(0, order, half)
    return mmce.to(r.dtype), gradient.to(r.dtype)


def _ascending_order(values: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``values`` (confidences).

    Non-negative float32 values are sorted as 64-bit keys, the value's bits above its index: the
    bits of a float without its sign bit order as the float does, and numpy sorts 64-bit
    integers with SIMD instructions where its argsort cannot. Other values go to ``np.argsort``.
    """
    if values.dtype != np.float32 or values.size >= 2**32 or np.signbit(values).any():
        return np.argsort(values, kind="stable")
    keys = values.view(np.uint32).astype(np.uint64) << np.uint64(32) | np.arange(values.size, dtype=np.uint64)
    keys.sort()
    return (keys & np.uint64(0xFFFFFFFF)).astype(np.intp)
