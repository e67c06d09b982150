"""One fused forward and closed-form backward for the focal family, FCL and the Brier score.

Every focal-type loss is a function of two numbers per sample, the target's log-probability
``l_t = log p_t`` and a *dual* probability ``p_j`` (0 for plain focal loss)::

    loss = -B^gamma * l_t (+ lam * sum_k (p_k - y_k)^2),   B = 1 - p_t + p_j  (focal)
                                                           B = 1 + p_t - p_j  (inverse focal)

with ``gamma`` and the focal/inverse choice read off ``(p_t, p_j)`` without gradient (FLSD,
DFL-SD, AdaFocal, CalFocal). Writing ``sigma = -1`` (focal) or ``+1`` (inverse) and
``h = gamma B^(gamma-1) l_t``, the chain rule through ``log_softmax`` gives, per sample,
``dloss/dl_t = a = -B^gamma - sigma p_t h`` and ``dloss/dp_j = q = sigma h``; since
``d l_t/dz = e_t - p`` and ``d p_j/dz = p_j (e_j - p)``::

    dloss/dz = a e_t + q p_j e_j - (a + q p_j) p
             + 2 lam (p ⊙ p - (Q - p_t (1 - p_t)) p - p_t e_t),   Q = sum_{k != t} p_k^2

so the backward is one ``(N, K)`` pass over the softmax (three with the Brier term) plus two
scatters, instead of the graph of a dozen ``(N,)`` operations and the ``(N, K)``
gather/``log_softmax`` backward that autograd would record. The forward takes a single
exponential pass, ``e = exp(z - max z)``: ``p = e / sum(e)`` and ``l_t = z_t - max z -
log sum(e)`` (what ``log_softmax`` computes). ``h`` is computed as ``gamma B^gamma (l_t / B)``, which stays finite as
``B -> 0`` for every ``gamma >= 0`` (where ``l_t / B -> -1``); the value ``B^gamma`` is exact.
Double backward is not supported (``once_differentiable``). Every formula here is checked
against autograd through the plain definitions in ``tests/test_losses_fused.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

#: ``(p_t, p_j) -> (gamma, inverse)``: each sample's gamma (a number or ``(N,)``) and whether it
#: uses inverse focal loss (a bool or a boolean ``(N,)``); both are read without gradient.
GammaRule = Callable[[Tensor, Tensor], tuple["float | Tensor", "bool | Tensor"]]

#: The choices of ``p_j`` in Table 4 of Tao et al. (2023): rank below ``p_k`` and how to combine.
DUAL_CHOICES = {
    "none": (0, "rank"),  # p_j = 0: focal loss
    "largest": (1, "rank"),  # the paper's DFL
    "second": (2, "rank"),
    "third": (3, "rank"),
    "mean_top2": (2, "mean"),
    "mean_top3": (3, "mean"),
    "mean_all": (None, "mean"),
}


def dual_classes(logits: Tensor, targets: Tensor, dual: str, work: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The classes ``(N, r)`` that make up ``p_j`` and their weights ``(N, r)``: ``p_j = sum_c w_c p_c``.

    ``logits`` may be logits or log-probabilities: only differences within a row matter, and
    ``log p_k - log p_t = z_k - z_t``. Only classes strictly below the target count (ties are
    excluded); absent ranks get weight 0. The search needs no comparison over ``(N, K)``: the
    score ``1 / (z - z_t)`` is negative below the target, most negative for the closest class
    below, positive above it and ``+inf`` for ties (``x - x = +0``), so the ``r``-th class
    below the target is the smallest score once the ``r - 1`` classes found before are set to
    ``+inf``. Runs without autograd, in the single buffer ``work`` (a tensor like ``logits``,
    allocated if not given): on CPUs a fresh ``(N, K)`` buffer can cost more in page faults
    than the arithmetic, so each rank recomputes the scores rather than keeping a copy.
    """
    rank, how = DUAL_CHOICES[dual]
    with torch.no_grad():
        logits_t = logits.gather(1, targets[:, None])
        if rank is None:
            below = torch.sub(logits, logits_t, out=work).reciprocal_() < 0
            index = torch.arange(logits.shape[1], device=logits.device).expand_as(logits)
            weight = below.to(logits.dtype)
            return index, weight / weight.sum(1, keepdim=True).clamp_min(1)
        values, indices = [], []
        for _ in range(min(rank, logits.shape[1])):
            score = torch.sub(logits, logits_t, out=work).reciprocal_()
            if indices:
                score.scatter_(1, torch.cat(indices, dim=1), float("inf"))
            value, index = row_argmin(score, scratch=score)
            values.append(value)
            indices.append(index)
            work = score
        index = torch.cat(indices, dim=1)
        weight = torch.cat(values, dim=1).lt(0).to(logits.dtype)
        if how == "mean":
            return index, weight / rank
        if rank > logits.shape[1]:
            return index[:, :1], torch.zeros_like(weight[:, :1])
        return index[:, rank - 1 :], weight[:, rank - 1 :]


def row_argmin(score: Tensor, scratch: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``score.min(dim=1, keepdim=True)`` at a fraction of its cost on CPUs (see :func:`row_argmax`)."""
    return _row_extremum(score, False, scratch)


def row_argmax(score: Tensor, scratch: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``score.max(dim=1, keepdim=True)`` at a fraction of its cost on CPUs.

    ``max`` with indices runs a scalar loop, ``amax`` a vectorised one. The indicator
    ``sign(score - max)`` is 0 at the maxima and -1 elsewhere; its product with the weights
    ``K + k`` of the classes ``k`` is ``sum_{maxima} (K + k) - sum_k (K + k)``, a sum of small
    integers (exact in float32 up to ``K = 3344``, in float64 beyond). It lies in ``[K, 2K)``
    exactly when the maximum is unique, and is then ``K + index``. Other rows (ties, or a
    maximum of ``+-inf``, where ``inf - inf`` makes the indicator NaN exactly at the maxima) take
    the first maximum of the indicator, so the index is always ``torch.argmax``'s: the first
    among equal scores. The indicator is written into ``scratch`` (a tensor like ``score``, or
    ``score`` itself, which is then overwritten) instead of a new buffer.
    """
    return _row_extremum(score, True, scratch)


def _row_extremum(score: Tensor, largest: bool, scratch: Tensor | None) -> tuple[Tensor, Tensor]:
    value = score.amax(dim=1, keepdim=True) if largest else score.amin(dim=1, keepdim=True)
    difference = torch.sub(score, value, out=scratch) if largest else torch.sub(value, score, out=scratch)
    indicator = difference.sign_()
    k = score.shape[1]
    dtype = score.dtype if 3 * k * k < 2**25 else torch.float64
    weights = torch.arange(k, 2 * k, device=score.device, dtype=dtype)
    code = (indicator.to(dtype) @ weights).add_((3 * k * k - k) // 2).nan_to_num_(-1.0)
    index = code.sub_(k).round_().long()
    unclear = ((index < 0) | (index >= k)).nonzero().squeeze(1)
    index = index[:, None]
    if len(unclear):
        index[unclear] = indicator[unclear].argmax(dim=1, keepdim=True)  # NaN counts as the maximum
    return value, index


def focal_family(
    logits: Tensor,
    targets: Tensor,
    rule: GammaRule | None,
    dual: str = "none",
    brier: float = 0.0,
    offset: float = 0.0,
) -> Tensor:
    """Per-sample loss ``(N,)`` of the focal family with a fused, closed-form backward.

    ``rule`` gives gamma and the focal/inverse choice from ``(p_t, p_j)``, or is ``None`` for no
    focal term (``brier=1`` alone is the Brier score); ``dual`` picks ``p_j``
    (:data:`DUAL_CHOICES`); with ``dual="none"``, ``p_j`` is the constant ``offset`` (no
    gradient). ``brier`` adds ``brier * sum_k (p_k - y_k)^2`` (FCL). Takes validated float
    logits and int64 targets.
    """
    return _FocalFamily.apply(logits, targets, rule, dual, brier, offset)


class _FocalFamily(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx, logits: Tensor, targets: Tensor, rule: GammaRule | None, dual: str, brier: float, offset: float
    ) -> Tensor:
        # one exponential pass: e = exp(z - max z), p = e / total, log p_t = z_t - max z - log total;
        # p itself is never formed, 1 / total goes into the per-row coefficients
        e = torch.empty_like(logits)  # first the dual search's scores, then exp(z - max z)
        if dual != "none":
            index, weight = dual_classes(logits, targets, dual, work=e)
        shift = logits.amax(dim=1, keepdim=True)
        e = torch.sub(logits, shift, out=e).exp_()
        inv_total = e.sum(dim=1).reciprocal_()
        t = targets[:, None]
        logp_t = (logits.gather(1, t) - shift).squeeze_(1).add_(inv_total.log())
        p_t = e.gather(1, t).squeeze_(1).mul_(inv_total)
        one_minus_p_t = torch.expm1(logp_t).neg_()  # exact even when p_t rounds to 1
        if dual == "none":
            index, weighted_p = None, None
            p_j = torch.full_like(p_t, offset)
        else:
            weighted_p = weight.mul_(e.gather(1, index)).mul_(inv_total[:, None])
            p_j = weighted_p.sum(1)
        if rule is None:
            zero = torch.zeros_like(p_t)
            loss, a, q = zero, zero, zero
        else:
            gamma, inverse = rule(p_t, p_j)
            if isinstance(inverse, Tensor):
                base = torch.where(inverse, 1.0 + p_t - p_j, one_minus_p_t + p_j)
                sigma = torch.where(inverse, 1.0, -1.0).to(p_t.dtype)
            else:
                base = 1.0 + p_t - p_j if inverse else one_minus_p_t + p_j
                sigma = 1.0 if inverse else -1.0
            weight_t = base.pow(gamma)
            ratio = torch.where(base > 0, logp_t / base, 0.0)  # l_t / B -> -1 as B -> 0
            q = ratio.mul_(weight_t).mul_(sigma * gamma)  # sigma h, h = gamma B^gamma l_t / B
            a = torch.addcmul(weight_t, p_t, q).neg_()  # -B^gamma - sigma p_t h
            loss = weight_t.mul_(logp_t).neg_()
        if brier:
            e_t = e.gather(1, t)
            others = torch.linalg.vecdot(e.scatter_(1, t, 0.0), e) * inv_total.square()  # sum_{k != t} p_k^2
            e.scatter_(1, t, e_t)
            loss = loss + brier * (others + one_minus_p_t.square())
            brier_shift = others - p_t * one_minus_p_t  # sum_k p_k (p_k - y_k), without cancellation
        else:
            brier_shift = None
        ctx.brier = brier
        ctx.save_for_backward(e, inv_total, targets, p_t, p_j, a, q, index, weighted_p, brier_shift)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        e, inv_total, targets, p_t, p_j, a, q, index, weighted_p, brier_shift = ctx.saved_tensors
        grad_t, grad_j = grad * a, grad * q
        row = grad_t + grad_j * p_j if index is not None else grad_t
        if ctx.brier:  # p * (scale * p - row) with p = e / total
            scale = 2.0 * ctx.brier * grad
            row = row + scale * brier_shift
            grad_t = grad_t - scale * p_t
            grad_logits = e.mul((scale * inv_total.square())[:, None]).sub_((row * inv_total)[:, None]).mul_(e)
        else:
            grad_logits = e * (-row * inv_total)[:, None]
        grad_logits.scatter_add_(1, targets[:, None], grad_t[:, None])
        if index is not None:
            grad_logits.scatter_add_(1, index, grad_j[:, None] * weighted_p)
        return grad_logits, None, None, None, None, None
