"""One fused forward and closed-form backward for the focal family, FCL, Brier and label smoothing.

Every focal-type loss is a function of two numbers per sample, the target's log-probability
``l_t = log p_t`` and a *dual* probability ``p_j`` (0 for plain focal loss)::

    loss = -B^gamma * l_t (+ lam * sum_k (p_k - y_k)^2),   B = 1 - p_t + p_j  (focal)
                                                           B = 1 + p_t - p_j  (inverse focal)

with ``gamma`` and the focal/inverse choice one number for every sample
(:class:`FocalTerm`) or read off ``(p_t, p_j)`` without gradient (:class:`PerSampleFocalTerm`:
FLSD, DFL-SD, AdaFocal, CalFocal). A loss names its terms in a :class:`FocalTerms`, which
one autograd function reads. Writing ``sigma = -1`` (focal) or ``+1`` (inverse) and
``h = gamma B^(gamma-1) l_t``, the chain rule through ``log_softmax`` gives, per sample,
``dloss/dl_t = a = -B^gamma - sigma p_t h`` and ``dloss/dp_j = q = sigma h``; since
``d l_t/dz = e_t - p`` and ``d p_j/dz = p_j (e_j - p)``::

    dloss/dz = a e_t + q p_j e_j - (a + q p_j) p
             + 2 lam (p ⊙ p - (Q - p_t (1 - p_t)) p - p_t e_t),   Q = sum_{k != t} p_k^2

The forward keeps the three per-sample coefficients, of ``p``, of ``e_t`` and of the dual
classes ``e_j``, so the backward is one ``(N, K)`` pass over the softmax (two with the Brier
term), two scatters and a few ``(N, 1)`` products with the incoming gradient, instead of the graph of a dozen ``(N,)`` operations and the ``(N, K)`` gather/``log_softmax``
backward that autograd would record. The forward computes the softmax in parts, ``p = e / s``
with ``e = exp(z - z_t)``, from the differences ``z - z_t`` that the dual search also reads
(:func:`target_softmax`); ``e_t = 1``, so ``l_t = log p_t = -log s``, as accurate as
``log_softmax`` however small ``p_t``. The ``1 / s`` is folded into the per-sample coefficient
of ``p``, so ``e`` is never normalised (except for the Brier term, whose backward needs ``p``
itself). With a number ``gamma``, ``h = gamma B^(gamma-1) l_t``; with per-sample gammas,
``h = gamma B^gamma (l_t / B)``, which stays finite as ``B -> 0`` for every ``gamma >= 0``
(where ``l_t / B -> -1``); the value ``B^gamma`` is exact. The batch reduction is done inside,
so autograd records one node for the whole loss. Every tensor the backward reads is saved with
``save_for_backward``, so autograd's version check guards it; the backward writes its result
into the saved softmax only where autograd frees it next (:func:`donated`).

At the batch sizes of training, the fixed cost of each PyTorch call (more when a Python number
must be wrapped as a tensor) is a large part of a loss's time on a CPU (``make bench`` measures
it), so the per-sample terms are kept ``(N, 1)`` (no reshaping calls), and on the CPU numbers are
read with ``.item()`` rather than compared as tensors. On other devices, and for a loss built
with ``validate=False``, the computation is *host-free* (``host_free``): it reads no value back,
so a GPU never waits for the host (the rare overflowing rows and tied maxima that the CPU path
finds with one read are handled by a shift by the row maximum and by ``torch.min``, the CPU
fast paths' ``.item()`` by tensor products). Double backward is not supported
(``once_differentiable``). Every formula here is checked against autograd through the plain
definitions in ``tests/test_losses_fused.py``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from calibnb.losses._common import computes_host_free, per_sample_gradient, reduce

#: ``log2(e)``: ``exp(x) = exp2(x log2(e))`` (:func:`softmax_parts`).
LOG2_E = 1.0 / math.log(2.0)

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


def dual_classes(difference: Tensor, dual: str, host_free: bool = False) -> tuple[Tensor, Tensor]:
    """The classes ``(N, r)`` that make up ``p_j`` and their weights ``(N, r)``: ``p_j = sum_c w_c p_c``.

    ``difference`` is ``z - z_t`` ``(N, K)``, of logits or of log-probabilities alike
    (``log p_k - log p_t = z_k - z_t``); it is not modified. Only classes strictly below the
    target count (ties are excluded); absent ranks get weight 0. The search needs no comparison
    over ``(N, K)``: the score ``1 / (z - z_t)`` is negative below the target, most negative for
    the closest class below, positive above it and ``+inf`` for ties (``x - x = +0``), so the
    ``r``-th class below the target is the smallest score once the ``r - 1`` classes found
    before are set to ``+inf``. Runs without autograd; searches of several ranks keep the
    scores and write the indicators of :func:`row_argmin` to a second buffer, so each further
    rank costs three passes, not four. ``host_free`` searches without reading values back to
    the host (:func:`row_argmin`).
    """
    rank, how = DUAL_CHOICES[dual]
    with torch.no_grad():
        if rank is None:
            weight = (difference < 0).to(difference.dtype)
            index = torch.arange(difference.shape[1], device=difference.device).expand_as(difference)
            return index, weight / weight.sum(1, keepdim=True).clamp_min(1)
        score = torch.reciprocal(difference)
        if rank == 1:  # the paper's DFL: one search
            value, index = row_argmin(score, scratch=score, host_free=host_free)
            return index, value.lt(0).to(difference.dtype)
        scratch = torch.empty_like(score)
        above = torch.full_like(score[:, :1], float("inf"))
        values, indices = [], []
        for _ in range(min(rank, difference.shape[1])):
            if indices:
                score.scatter_(1, indices[-1], above)  # a tensor source: twice as fast as a number
            value, index = row_argmin(score, scratch=scratch, host_free=host_free)
            values.append(value)
            indices.append(index)
        index = torch.cat(indices, dim=1)
        weight = torch.cat(values, dim=1).lt(0).to(difference.dtype)
        if how == "mean":
            return index, weight / rank
        if rank > difference.shape[1]:
            return index[:, :1], torch.zeros_like(weight[:, :1])
        return index[:, rank - 1 :], weight[:, rank - 1 :]


def row_argmin(score: Tensor, scratch: Tensor | None = None, host_free: bool = False) -> tuple[Tensor, Tensor]:
    """``score.min(dim=1, keepdim=True)`` at a fraction of its cost on CPUs (see :func:`row_argmax`).

    The CPU search reads one number back to find rows with tied minima; ``host_free=True`` (a
    GPU, or a loss built with ``validate=False``) calls ``torch.min`` itself, which reads nothing
    and also returns the first index among equal scores.
    """
    if host_free:
        return score.min(dim=1, keepdim=True)
    return _row_extremum(score, False, scratch)


def row_argmax(
    score: Tensor, scratch: Tensor | None = None, maximum: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """``score.max(dim=1, keepdim=True)`` at a fraction of its cost on CPUs.

    ``max`` with indices runs a scalar loop, ``amax`` a vectorised one. The indicator
    ``score == max``, written as 1.0/0.0 into a float buffer (a boolean result is several times
    slower to write on CPUs), times the weights ``K + k`` of the classes ``k`` is the sum of
    ``K + k`` over the maxima, a sum of small integers (exact in float32 up to ``K = 3344``, in
    float64 beyond). It lies in ``[K, 2K)`` exactly when the maximum is unique, and is then
    ``K + index``; rows with tied maxima take the first 1 of their indicator, so the index is
    always ``torch.argmax``'s: the first among equal scores. ``score`` must not contain NaN.
    The indicator is written into ``scratch`` (a float tensor like ``score``, or ``score``
    itself, which is then overwritten) instead of a new buffer. ``maximum``, the row maxima
    ``(N, 1)`` if already known, spares their pass.
    """
    return _row_extremum(score, True, scratch, maximum)


def _row_extremum(
    score: Tensor, largest: bool, scratch: Tensor | None, value: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    if value is None:
        value = score.amax(dim=1, keepdim=True) if largest else score.amin(dim=1, keepdim=True)
    k = score.shape[1]
    dtype = score.dtype if 3 * k * k < 2**25 else torch.float64
    if scratch is None or scratch.dtype != dtype:
        scratch = torch.empty(score.shape, dtype=dtype, device=score.device)
    indicator = torch.eq(score, value, out=scratch)  # 1.0 at the extremum (a float comparison:
    # a boolean result is several times slower to write on CPUs)
    code = indicator @ _class_weights(k, dtype, score.device)  # K + index, or >= 2K for a tie
    index = code.sub_(k).long()[:, None]
    if code.max().item() >= k:  # ties (a host synchronisation)
        unclear = (index >= k).nonzero()[:, 0]
        index[unclear] = indicator[unclear].argmax(dim=1, keepdim=True)
    return value, index


@functools.lru_cache(maxsize=16)
def _class_weights(k: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The weights ``K, K + 1, ..., 2K - 1`` of :func:`row_argmax`'s indicator code."""
    return torch.arange(k, 2 * k, device=device, dtype=dtype)


@dataclass(frozen=True)
class FocalTerm:
    """The focal term ``-B^gamma log p_t`` with one ``gamma`` for every sample (focal, inverse
    focal, dual focal loss, FCL); ``inverse`` takes ``B = 1 + p_t - p_j`` instead of
    ``1 - p_t + p_j``. ``gamma = 0`` is cross-entropy."""

    gamma: float
    inverse: bool = False

    def parts(self, p_t: Tensor, p_j: Tensor | float, logp_t: Tensor) -> tuple[Tensor, Tensor | float, Tensor | None]:
        """``(-loss, ma, q)`` per sample (:func:`_focal_parts`); cross-entropy takes ``ma = 1``
        and no ``q``. With one gamma the chain has fewer steps: ``h = gamma B^(gamma-1) l_t``
        directly (finite at ``B = 0`` for ``gamma >= 1``; below that, ``B^(gamma-1)`` is set to
        0 where ``B = 0``, where ``l_t = 0``)."""
        if self.gamma == 0:
            return logp_t, 1.0, None
        base = _base(p_t, p_j, self.inverse)
        slope = base.pow(self.gamma - 1.0)  # B^(gamma - 1)
        if self.gamma < 1:
            slope = torch.where(base > 0, slope, 0.0)
        q = slope.mul_(logp_t).mul_((1.0 if self.inverse else -1.0) * self.gamma)  # sigma h
        return _focal_parts(base.pow(self.gamma), p_t, q, logp_t)


@dataclass(frozen=True)
class PerSampleFocalTerm:
    """The focal term with each sample's own gamma, ``gamma_of(p_t, p_j)`` ``(N, 1)``, read
    without gradient (FLSD, DFL-SD, CalFocal, AdaFocal); ``p_j`` is the number ``offset`` when
    there is no dual class. ``signed``: a negative gamma ``-g`` is inverse focal loss with ``g``
    (AdaFocal); otherwise every gamma is focal."""

    gamma_of: Callable[[Tensor, Tensor | float], Tensor]
    signed: bool = False

    def parts(self, p_t: Tensor, p_j: Tensor | float, logp_t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(-loss, ma, q)`` per sample (:func:`_focal_parts`), with ``h = gamma B^gamma (l_t / B)``,
        which is 0 at ``B = 0`` (``p_t = 1``, ``l_t = 0``) for every ``gamma >= 0``."""
        gamma = self.gamma_of(p_t, p_j)
        if self.signed:
            sigma = torch.where(gamma < 0, 1.0, -1.0)
            gamma = gamma.abs()
            base = torch.sub(p_t, p_j).mul_(sigma).add_(1.0)
        else:
            sigma = -1.0
            base = _base(p_t, p_j, False)
        weight_t = base.pow(gamma)
        q = torch.div(logp_t, base).nan_to_num_(0.0).mul_(weight_t).mul_(gamma).mul_(sigma)  # sigma h
        return _focal_parts(weight_t, p_t, q, logp_t)


@dataclass(frozen=True)
class FocalTerms:
    """What a loss of the focal family adds up per sample (module docstring): the focal term
    (None: none, as in the Brier score), ``p_j``'s choice ``dual`` (:data:`DUAL_CHOICES`) or,
    with ``dual="none"``, the constant ``offset``, the Brier term's weight ``brier`` and label
    smoothing's ``smoothing``."""

    focal: FocalTerm | PerSampleFocalTerm | None
    dual: str = "none"
    offset: float = 0.0
    brier: float = 0.0
    smoothing: float = 0.0


def focal_family(
    logits: Tensor,
    targets: Tensor,
    focal: FocalTerm | PerSampleFocalTerm | None,
    dual: str = "none",
    brier: float = 0.0,
    offset: float = 0.0,
    smoothing: float = 0.0,
    reduction: str = "none",
    validate: bool = True,
) -> Tensor:
    """The loss of the focal family, reduced by ``reduction``, with a fused, closed-form backward.

    ``focal`` is the focal term (:class:`FocalTerm`, :class:`PerSampleFocalTerm`), or ``None``
    for none (``brier=1`` alone is the Brier score); ``dual`` picks ``p_j``
    (:data:`DUAL_CHOICES`); with ``dual="none"``, ``p_j`` is the constant ``offset`` (no
    gradient). ``brier`` adds ``brier * sum_k (p_k - y_k)^2`` (FCL). ``smoothing`` adds
    ``alpha (z_t - mean_k z_k)``, which turns cross-entropy (``gamma = 0``) into cross-entropy
    against the smoothed label ``(1 - alpha) y + alpha / K``: ``-sum_k s_k log p_k = -l_t +
    alpha (z_t - mean_k z_k)``, whose gradient ``alpha (e_t - 1/K)`` needs no pass of its own.
    The reduction happens inside the fused function, which spares autograd a node. Takes
    validated float logits, int64 targets and a validated ``reduction``; ``validate=False``
    computes without reading any value back to the host (:func:`calibnb.losses._common.computes_host_free`).
    """
    terms = FocalTerms(focal, dual, offset, brier, smoothing)
    return _FocalFamily.apply(logits, targets, terms, reduction, computes_host_free(logits, validate))


def softmax_parts(logits: Tensor, t: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """``(e, s, m, log p_t)``: the softmax ``p = e / s`` in parts, and the targets' log-probability.

    ``e = exp(z - m)`` with ``m`` the row maximum, so ``e`` is 1 at the maximum and ``s``, the
    row sum of ``e``, is at least 1. ``log p_t = (z_t - m) - log s`` is what ``log_softmax``
    computes: finite and accurate however small ``p_t`` (no underflow to ``log 0``).
    ``e`` is computed as ``exp2((z - m) log2(e))``: on CPUs PyTorch's ``exp2`` and the product
    cost less than its ``exp``; the product with ``log2(e)`` adds one rounding to the exponent,
    a relative error of at most ``|z - m| eps / 2`` in ``e`` on top of a few ``eps``, the same
    order as ``torch.softmax``'s own error in float32 (``tests/test_losses_fused.py``).
    ``t`` ``(N, 1)`` holds the targets; without it, ``log p_t`` is None.
    """
    m = logits.amax(dim=1, keepdim=True)
    e, s = _exp_and_sum(torch.sub(logits, m))
    if t is None:
        return e, s, m, None
    return e, s, m, logits.gather(1, t).sub_(m).sub_(s.log())


def target_softmax(
    logits: Tensor, t: Tensor, difference: Tensor, host_free: bool = False
) -> tuple[Tensor, Tensor, Tensor]:
    """``(e, s, log p_t)`` with ``p = e / s``, shifted by the target's logit instead of the maximum.

    ``e = exp(z - z_t)`` is written into ``difference`` (``z - z_t``, which the dual search also
    reads), so the softmax costs three passes (scale, ``exp2``, sum; see :func:`softmax_parts`)
    and no row maximum. ``e_t = 1``, so ``s >= 1`` and ``log p_t = -log s``, finite however
    small ``p_t``. In a row where some ``z_k - z_t`` is beyond the exponent range (about 88.7 in
    float32: a sample the network gets confidently wrong), ``e`` or ``s`` overflows to ``inf``;
    those rows, found with one host synchronisation, are recomputed shifted by their maximum
    (:func:`softmax_parts`). ``t`` ``(N, 1)`` holds the targets.

    ``host_free=True`` (a GPU, or a loss built with ``validate=False``) cannot look for such rows
    without reading a value back, so it shifts every row by its maximum: one more pass, ``e =
    exp(z - max_k z_k)`` (then ``e_t <= 1``), and ``log p_t = -(max_k z_k - z_t) - log s``.
    ``difference`` is overwritten in both cases.
    """
    if host_free:
        above = difference.amax(dim=1, keepdim=True)  # max_k z_k - z_t >= 0
        e, s = _exp_and_sum(difference.sub_(above))
        return e, s, s.log().add_(above).neg_()
    e, s = _exp_and_sum(difference)
    logp_t = s.log().neg_()
    if s.max().item() == float("inf"):
        rows = (s.view(-1) == float("inf")).nonzero()[:, 0]
        e[rows], s[rows], _, logp_t[rows] = softmax_parts(logits[rows], t[rows])
    return e, s, logp_t


def difference_to_target(logits: Tensor, t: Tensor) -> Tensor:
    """``z - z_t`` ``(N, K)`` for targets ``t`` ``(N, 1)``: what the dual search and
    :func:`target_softmax` read."""
    return torch.sub(logits, logits.gather(1, t))


def _exp_and_sum(shifted: Tensor) -> tuple[Tensor, Tensor]:
    """``exp`` of the shifted logits, in place (as ``exp2`` of their product with ``log2(e)``,
    :func:`softmax_parts`), and its row sums."""
    e = shifted.mul_(LOG2_E).exp2_()
    return e, e.sum(dim=1, keepdim=True)


def _base(p_t: Tensor, p_j: Tensor | float, inverse: bool) -> Tensor:
    """``B = 1 - p_t + p_j``, or ``1 + p_t - p_j`` if ``inverse``; one operation for a number ``p_j``."""
    if isinstance(p_j, Tensor):
        return (torch.sub(p_t, p_j) if inverse else torch.sub(p_j, p_t)).add_(1.0)
    return torch.add(p_t, 1.0 - p_j) if inverse else torch.rsub(p_t, 1.0 + p_j)


def _focal_parts(weight_t: Tensor, p_t: Tensor, q: Tensor, logp_t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(-loss, ma, q)`` of the focal term, each ``(N, 1)``, from ``B^gamma`` (``weight_t``,
    overwritten) and ``q = dloss/dp_j = sigma h``: ``ma = -dloss/dl_t = B^gamma + sigma p_t h``."""
    ma = torch.addcmul(weight_t, p_t, q)
    return weight_t.mul_(logp_t), ma, q


class _FocalFamily(torch.autograd.Function):
    """The forward keeps, per sample, the coefficients of the gradient in ``p``, ``e_t`` and
    the dual classes, so the backward is a few multiplications by the incoming gradient."""

    @staticmethod
    def forward(ctx, logits: Tensor, targets: Tensor, terms: FocalTerms, reduction: str, host_free: bool) -> Tensor:
        t = targets.unsqueeze(1)
        difference = difference_to_target(logits, t)
        if terms.dual != "none":
            index, weight = dual_classes(difference, terms.dual, host_free)
        # z_t - mean_k z_k as the mean of the differences, before the softmax overwrites them:
        # the differences are bounded by the row spread, a sum of the logits themselves is not
        # (four logits of 3e38 overflow float32 however close they are)
        margin = difference.mean(dim=1, keepdim=True).neg_() if terms.smoothing else None
        e, s, logp_t = target_softmax(logits, t, difference, host_free)  # p = e / s
        inv_s = s.reciprocal_()
        p_t = logp_t.exp()
        if terms.dual == "none":
            index = weighted_p = None
            p_j = terms.offset
        else:
            weighted_p = weight.mul_(e.gather(1, index)).mul_(inv_s)
            p_j = weighted_p.sum(1, keepdim=True) if weighted_p.shape[1] > 1 else weighted_p
        if terms.focal is None:
            minus_loss, ma, q = None, 0.0, None
        else:
            minus_loss, ma, q = terms.focal.parts(p_t, p_j, logp_t)
        if q is None:  # no gradient through p_j
            index = None
        # dloss/dz = row p - ma e_t + q sum_c w_c p_c e_c (+ the Brier and smoothing terms)
        row = ma if index is None else torch.addcmul(ma, q, p_j, value=-1.0)
        at_target = -ma
        loss = minus_loss.neg() if minus_loss is not None else torch.zeros_like(p_t)
        if terms.brier:  # + 2 lam (p ⊙ p - (Q - p_t (1 - p_t)) p - p_t e_t),  Q = sum_{k != t} p_k^2
            p = e.mul_(inv_s)  # the Brier term's backward needs p itself
            p_at_t = p.gather(1, t)
            others = torch.linalg.vector_norm(p.scatter_(1, t, torch.zeros_like(p_t)), dim=1, keepdim=True).square_()
            p.scatter_(1, t, p_at_t)
            one_minus_p_t = 1.0 - p_t
            loss = loss.add_(others + one_minus_p_t.square(), alpha=terms.brier)
            row = others.sub_(p_t * one_minus_p_t).mul_(-2.0 * terms.brier).add_(row)
            at_target = torch.add(at_target, p_t, alpha=-2.0 * terms.brier)
        else:  # row p = (row / s) e: the backward needs no normalised softmax
            row = inv_s * row
        if terms.smoothing:  # + alpha (e_t - 1/K)
            loss = loss.add_(margin, alpha=terms.smoothing)
            at_target = at_target + terms.smoothing
        ctx.brier, ctx.smoothing, ctx.reduction, ctx.host_free = terms.brier, terms.smoothing, reduction, host_free
        at_dual = None if index is None else q * weighted_p
        # e is p itself with the Brier term, e = s p without
        ctx.save_for_backward(e, t, _as_tensor(row, p_t), _as_tensor(at_target, p_t), index, at_dual)
        return reduce(loss.view(-1), reduction)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        e, t, row, at_target, index, at_dual = ctx.saved_tensors
        grad = per_sample_gradient(grad, ctx.reduction, len(t))
        if ctx.brier:  # p * (row grad + 2 lam grad p)
            grad_logits = _plus_multiple(row * grad, e, 2.0 * ctx.brier * grad, ctx.host_free).mul_(e)
        else:  # e (row / s) grad
            grad_logits = torch.mul(e, row * grad, out=donated(e))
        if ctx.smoothing:
            grad_logits.sub_(grad * (ctx.smoothing / e.shape[1]))
        grad_logits.scatter_add_(1, t, at_target * grad)
        if index is not None:
            grad_logits.scatter_add_(1, index, at_dual * grad)
        return grad_logits, None, None, None, None


def donated(saved: Tensor) -> Tensor | None:
    """``saved``, for a backward to write its result into, when autograd frees the saved tensors
    after this backward (no retained graph: AOT autograd donates its saved buffers on the same
    condition); ``None`` otherwise, for a new buffer, so that a retained graph keeps its saved
    tensors as they were and a second backward repeats the first.

    On CPUs a fresh ``(N, K)`` buffer costs a measurable part of a loss's time (``make bench``).
    """
    return None if _keeps_graph() else saved


#: Whether the running backward keeps the graph (``retain_graph``); always, where PyTorch does not say.
_keeps_graph = getattr(torch._C._autograd, "_get_current_graph_task_keep_graph", lambda: True)


def _plus_multiple(row: Tensor, p: Tensor, scale: Tensor, host_free: bool) -> Tensor:
    """``row + scale * p`` as a new tensor like ``p``; ``scale`` is 0-dim or ``(N, 1)``.

    A 0-dim ``scale`` on the CPU is read as a number (free there) for ``torch.add(alpha=)``,
    which is several times faster than ``addcmul`` with a broadcast tensor. ``host_free``
    reads nothing.
    """
    if scale.ndim == 0 and not host_free:
        return torch.add(row, p, alpha=scale.item())
    return torch.add(row, p * scale)


def _as_tensor(value: "Tensor | float", like: Tensor) -> Tensor:
    """A per-sample coefficient as an ``(N, 1)`` tensor (``value`` may be a number)."""
    return value if isinstance(value, Tensor) else torch.full_like(like, value)
