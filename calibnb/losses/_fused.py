"""One fused forward and closed-form backward for the focal family, FCL, Brier and label smoothing.

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

The forward keeps the three per-sample coefficients, of ``p``, of ``e_t`` and of the dual
classes ``e_j``, so the backward is one ``(N, K)`` pass over the softmax, written into it (two
with the Brier term), two scatters and a few ``(N, 1)`` products with the incoming gradient,
instead of the graph of a dozen ``(N,)`` operations and the ``(N, K)`` gather/``log_softmax``
backward that autograd would record. The forward is one call of ``torch.softmax``, whose fused
kernel costs less on CPUs than a bare ``exp`` over the logits, and takes ``l_t = log p_t`` from
it; where ``p_t`` falls below the smallest normal float (it has lost precision, or underflowed
to 0), ``l_t = z_t - logsumexp(z)`` from that row's logits instead (a host synchronisation,
like the input checks). With a number ``gamma``, ``h = gamma B^(gamma-1) l_t``; with
per-sample gammas, ``h = gamma B^gamma (l_t / B)``, which stays finite as ``B -> 0`` for every
``gamma >= 0`` (where ``l_t / B -> -1``); the value ``B^gamma`` is exact. The batch reduction
is done inside, so autograd records one node for the whole loss.

At the batch sizes of training, the fixed cost of each PyTorch call (more when a Python number
must be wrapped as a tensor) is a large part of a loss's time on a CPU (``make bench`` measures
it), so the per-sample terms are kept ``(N, 1)`` (no reshaping calls), and numbers are read
with ``.item()`` rather than compared as tensors. Double backward is not supported
(``once_differentiable``). Every formula here is checked against autograd through the plain
definitions in ``tests/test_losses_fused.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from calibnb.losses._common import per_sample_gradient, reduce

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
    ``+inf``. Runs without autograd; the scores go to ``work`` (a tensor like ``logits``,
    allocated if not given), and searches of several ranks keep them and write the indicators
    of :func:`row_argmin` to a second buffer, so each further rank costs three passes, not five.
    """
    rank, how = DUAL_CHOICES[dual]
    with torch.no_grad():
        logits_t = logits.gather(1, targets[:, None])
        if rank is None:
            below = torch.sub(logits, logits_t, out=work).reciprocal_() < 0
            index = torch.arange(logits.shape[1], device=logits.device).expand_as(logits)
            weight = below.to(logits.dtype)
            return index, weight / weight.sum(1, keepdim=True).clamp_min(1)
        if rank == 1:  # the paper's DFL: one search
            score = torch.sub(logits, logits_t, out=work).reciprocal_()
            value, index = row_argmin(score, scratch=score)
            return index, value.lt(0).to(logits.dtype)
        score = torch.sub(logits, logits_t, out=work).reciprocal_()
        scratch = torch.empty_like(score)
        above = torch.full_like(logits_t, float("inf"))
        values, indices = [], []
        for _ in range(min(rank, logits.shape[1])):
            if indices:
                score.scatter_(1, indices[-1], above)  # a tensor source: twice as fast as a number
            value, index = row_argmin(score, scratch=scratch)
            values.append(value)
            indices.append(index)
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
    ``score == max``, written as 1.0/0.0 into a float buffer (a boolean result is several times
    slower to write on CPUs), times the weights ``K + k`` of the classes ``k`` is the sum of
    ``K + k`` over the maxima, a sum of small integers (exact in float32 up to ``K = 3344``, in
    float64 beyond). It lies in ``[K, 2K)`` exactly when the maximum is unique, and is then
    ``K + index``; rows with tied maxima take the first 1 of their indicator, so the index is
    always ``torch.argmax``'s: the first among equal scores. ``score`` must not contain NaN.
    The indicator is written into ``scratch`` (a float tensor like ``score``, or ``score``
    itself, which is then overwritten) instead of a new buffer.
    """
    return _row_extremum(score, True, scratch)


def _row_extremum(score: Tensor, largest: bool, scratch: Tensor | None) -> tuple[Tensor, Tensor]:
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


def focal_family(
    logits: Tensor,
    targets: Tensor,
    rule: GammaRule | None,
    dual: str = "none",
    brier: float = 0.0,
    offset: float = 0.0,
    smoothing: float = 0.0,
    reduction: str = "none",
) -> Tensor:
    """The loss of the focal family, reduced by ``reduction``, with a fused, closed-form backward.

    ``rule`` gives gamma and the focal/inverse choice from ``(p_t, p_j)``, or is ``None`` for no
    focal term (``brier=1`` alone is the Brier score); ``dual`` picks ``p_j``
    (:data:`DUAL_CHOICES`); with ``dual="none"``, ``p_j`` is the constant ``offset`` (no
    gradient). ``brier`` adds ``brier * sum_k (p_k - y_k)^2`` (FCL). ``smoothing`` adds
    ``alpha (z_t - mean_k z_k)``, which turns cross-entropy (``gamma = 0``) into cross-entropy
    against the smoothed label ``(1 - alpha) y + alpha / K``: ``-sum_k s_k log p_k = -l_t +
    alpha (z_t - mean_k z_k)``, whose gradient ``alpha (e_t - 1/K)`` needs no pass of its own.
    The reduction happens inside the fused function, which spares autograd a node. Takes
    validated float logits, int64 targets and a validated ``reduction``.
    """
    return _FocalFamily.apply(logits, targets, rule, dual, brier, offset, smoothing, reduction)


def log_target_probability(logits: Tensor, targets: Tensor, p_t: Tensor) -> Tensor:
    """``log p_t`` from the softmax's ``p_t``, exact also where ``p_t`` is subnormal or 0.

    ``targets`` and ``p_t`` are ``(N,)`` or ``(N, 1)``; the result has ``p_t``'s shape.
    ``log(p_t)`` carries ``p_t``'s relative precision while ``p_t`` is a normal float; below
    that, the few rows concerned take ``z_t - logsumexp(z)`` from their logits (what
    ``log_softmax`` computes), so a sample the network gets confidently wrong keeps a finite,
    exact loss.
    """
    logp_t = p_t.log()
    tiny = torch.finfo(p_t.dtype).tiny
    if p_t.min().item() < tiny:  # a host synchronisation, like the input checks
        low = (p_t.view(-1) < tiny).nonzero()[:, 0]
        rows = logits[low]
        exact = rows.gather(1, targets.view(-1, 1)[low])[:, 0] - rows.logsumexp(dim=1)
        logp_t.view(-1)[low] = exact
    return logp_t


def _focal_terms(rule: GammaRule, p_t: Tensor, p_j: "Tensor | float", logp_t: Tensor):
    """``(-loss, ma, q)`` of the focal term, each ``(N, 1)``: ``ma = -dloss/dl_t``, ``q = dloss/dp_j``.

    ``q`` is None when gamma is 0 everywhere (cross-entropy, ``ma = 1``). With a number gamma
    the chain has fewer steps: ``h = gamma B^(gamma-1) l_t`` directly (finite at ``B = 0`` for
    ``gamma >= 1``; below that, ``B^(gamma-1)`` is set to 0 where ``B = 0``, where ``l_t = 0``).
    """
    gamma, inverse = rule(p_t, p_j)
    if not isinstance(gamma, Tensor) and gamma == 0:
        return logp_t, 1.0, None
    if isinstance(inverse, Tensor):
        sigma = torch.where(inverse, 1.0, -1.0)
        base = torch.sub(p_t, p_j).mul_(sigma).add_(1.0)
    else:
        sigma = 1.0 if inverse else -1.0
        if isinstance(p_j, Tensor):
            base = (torch.sub(p_t, p_j) if inverse else torch.sub(p_j, p_t)).add_(1.0)
        else:
            base = torch.add(p_t, 1.0 - p_j) if inverse else torch.rsub(p_t, 1.0 + p_j)
    weight_t = base.pow(gamma)
    if isinstance(gamma, Tensor):
        # sigma h with h = gamma B^gamma (l_t / B); at B = 0 (p_t = 1, l_t = 0) the term is 0
        q = torch.div(logp_t, base).nan_to_num_(0.0).mul_(weight_t).mul_(gamma).mul_(sigma)
    else:
        slope = base.pow(gamma - 1.0)  # B^(gamma - 1)
        if gamma < 1:
            slope = torch.where(base > 0, slope, 0.0)
        q = slope.mul_(logp_t).mul_(sigma * gamma)  # sigma h
    ma = torch.addcmul(weight_t, p_t, q)  # B^gamma + sigma p_t h
    return weight_t.mul_(logp_t), ma, q


class _FocalFamily(torch.autograd.Function):
    """The forward keeps, per sample, the coefficients of the gradient in ``p``, ``e_t`` and
    the dual classes, so the backward is a few multiplications by the incoming gradient."""

    @staticmethod
    def forward(
        ctx, logits: Tensor, targets: Tensor, rule: GammaRule | None, dual: str, brier: float, offset: float,
        smoothing: float, reduction: str,
    ) -> Tensor:
        t = targets.unsqueeze(1)
        if dual != "none":
            index, weight = dual_classes(logits, targets, dual)
        p = torch.softmax(logits, dim=1)  # the backward writes the gradient into it
        p_t = p.gather(1, t)
        logp_t = log_target_probability(logits, t, p_t)
        if dual == "none":
            index = weighted_p = None
            p_j = offset
        else:
            weighted_p = weight.mul_(p.gather(1, index))
            p_j = weighted_p.sum(1, keepdim=True) if weighted_p.shape[1] > 1 else weighted_p
        if rule is None:
            minus_loss, ma, q = None, 0.0, None
        else:
            minus_loss, ma, q = _focal_terms(rule, p_t, p_j, logp_t)
        if q is None:  # no gradient through p_j
            index = None
        # dloss/dz = row p - ma e_t + q sum_c w_c p_c e_c (+ the Brier and smoothing terms)
        row = ma if index is None else torch.addcmul(ma, q, p_j, value=-1.0)
        at_target = -ma
        loss = minus_loss.neg() if minus_loss is not None else torch.zeros_like(p_t)
        if brier:  # + 2 lam (p ⊙ p - (Q - p_t (1 - p_t)) p - p_t e_t),  Q = sum_{k != t} p_k^2
            others = torch.linalg.vector_norm(p.scatter_(1, t, torch.zeros_like(p_t)), dim=1, keepdim=True).square_()
            p.scatter_(1, t, p_t)
            one_minus_p_t = 1.0 - p_t
            loss = loss.add_(others + one_minus_p_t.square(), alpha=brier)
            row = others.sub_(p_t * one_minus_p_t).mul_(-2.0 * brier).add_(row)
            at_target = torch.add(at_target, p_t, alpha=-2.0 * brier)
        if smoothing:  # + alpha (e_t - 1/K)
            loss = loss.add_(logits.gather(1, t).sub_(logits.mean(dim=1, keepdim=True)), alpha=smoothing)
            at_target = at_target + smoothing
        ctx.brier, ctx.smoothing, ctx.reduction = brier, smoothing, reduction
        ctx.softmax = p  # an attribute, not saved: the backward may write into it
        at_dual = None if index is None else q * weighted_p
        ctx.save_for_backward(logits, t, _as_tensor(row, p_t), _as_tensor(at_target, p_t), index, at_dual)
        return reduce(loss.view(-1), reduction)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor):
        logits, t, row, at_target, index, at_dual = ctx.saved_tensors
        p = take_softmax(ctx, logits)
        grad = per_sample_gradient(grad, ctx.reduction, len(t))
        if ctx.brier:  # p * (row grad + 2 lam grad p)
            grad_logits = p.mul_(_plus_multiple(row * grad, p, 2.0 * ctx.brier * grad))
        else:
            grad_logits = p.mul_(row * grad)
        if ctx.smoothing:
            grad_logits.sub_(grad * (ctx.smoothing / p.shape[1]))
        grad_logits.scatter_add_(1, t, at_target * grad)
        if index is not None:
            grad_logits.scatter_add_(1, index, at_dual * grad)
        return grad_logits, None, None, None, None, None, None, None


def take_softmax(ctx, logits: Tensor) -> Tensor:
    """The forward's softmax ``ctx.softmax``, handed over for the backward to write into.

    On CPUs a fresh (N, K) buffer costs more in page faults than the arithmetic, so the first
    backward takes the forward's; a second backward (``retain_graph=True``) finds it gone and
    recomputes it.
    """
    p, ctx.softmax = ctx.softmax, None
    return torch.softmax(logits, dim=1) if p is None else p


def _plus_multiple(row: Tensor, p: Tensor, scale: Tensor) -> Tensor:
    """``row + scale * p`` as a new tensor like ``p``; ``scale`` is 0-dim or ``(N, 1)``.

    A 0-dim ``scale`` on the CPU is read as a number (free there) for ``torch.add(alpha=)``:
    ``addcmul`` with a broadcast tensor took 4x as long on (4096, 100).
    """
    if scale.ndim == 0 and scale.device.type == "cpu":
        return torch.add(row, p, alpha=scale.item())
    return torch.add(row, p * scale)


def _as_tensor(value: "Tensor | float", like: Tensor) -> Tensor:
    """A per-sample coefficient as an ``(N, 1)`` tensor (``value`` may be a number)."""
    return value if isinstance(value, Tensor) else torch.full_like(like, value)
