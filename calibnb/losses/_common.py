"""Shared plumbing of the losses: input checks, reductions and a focal weight with finite gradients.

Every loss takes logits ``(N, K)`` and integer targets ``(N,)`` (ARCHITECTURE.md, "Cross-cutting rules").
Shape and dtype checks are free; the value checks (finite logits, targets in ``[0, K)``, the
row spread) need the values on the host, so :func:`check_logits_targets` does them in one fused
reduction and costs exactly one device-to-host synchronisation per call (on the CPU, four
reads). ``validate=False`` skips them, for a training loop that checked its data once: such a
loss reads nothing back to the host (:func:`computes_host_free`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from calibnb._validation import SIMPLEX_ATOL, check_choice

REDUCTIONS = ("mean", "sum", "none")
_HALF = (torch.float16, torch.bfloat16)


def check_logits_targets(
    logits: Tensor, targets: Tensor, validate: bool = True, name: str = "logits"
) -> tuple[Tensor, Tensor]:
    """Validate ``(logits, targets)`` and return them ready to compute with.

    Half-precision logits (float16, bfloat16, e.g. under ``torch.autocast``) are upcast to
    float32, as ``torch.nn.functional.cross_entropy`` does under autocast; targets become int64.
    Raises ``TypeError`` for non-tensors and wrong dtypes, ``ValueError`` for wrong shapes,
    NaN/inf logits and targets outside ``[0, K)``. ``validate=False`` (a training loop that
    checked its data once) keeps the checks of types and shapes, which read no values, and
    skips those of the values, so nothing is read back from the device. ``name`` is the
    argument that holds the logits, for the messages (``"logp"`` for log-probabilities).
    """
    if not isinstance(logits, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(logits).__name__}")
    if not isinstance(targets, Tensor):
        raise TypeError(f"targets must be a torch.Tensor, got {type(targets).__name__}")
    if not logits.is_floating_point():
        raise TypeError(f"{name} must have a floating dtype, got {logits.dtype}")
    if targets.dtype == torch.bool or targets.is_floating_point() or targets.is_complex():
        raise TypeError(f"targets must be integer class indices, got dtype {targets.dtype}")
    if logits.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_classes), got shape {tuple(logits.shape)}")
    n, k = logits.shape
    if n == 0:
        raise ValueError(f"{name} is empty: it has no samples")
    if k < 2:
        raise ValueError(f"{name} must have at least 2 classes (columns), got {k}")
    if targets.shape != (n,):
        raise ValueError(f"targets must have shape ({n},) to match {name}, got {tuple(targets.shape)}")
    if targets.device != logits.device:
        raise ValueError(f"targets is on {targets.device} but {name} is on {logits.device}")
    if not validate:
        return (logits.float() if logits.dtype in _HALF else logits), targets.long()
    # One fused check, one host sync: the sum of the logits is finite unless some logit is NaN
    # or inf (or finite ones overflow it: then the exact element-wise test decides), and the
    # largest row spread (max - min) bounds every log-probability the losses compute.
    t_lo, t_hi = targets.aminmax()
    detached = logits.detach()
    total = detached.sum()
    spread = (detached.amax(dim=1).double() - detached.amin(dim=1).double()).max()
    if logits.device.type == "cpu":  # reading a number costs nothing on the host
        total, spread, t_min, t_max = total.item(), spread.item(), t_lo.item(), t_hi.item()
    else:
        total, spread, t_min, t_max = torch.stack(
            [total.double(), spread, t_lo.double(), t_hi.double()]).tolist()
    if not math.isfinite(total) and not bool(torch.isfinite(logits).all()):
        raise ValueError(f"{name} contains NaN or inf")
    if logits.dtype in _HALF:
        logits = logits.float()
    limit = max_logit_spread(logits.dtype)
    if not spread <= limit:
        raise ValueError(f"{name}: a row spans {spread:.3g} (largest minus smallest logit), more than "
                         f"the {limit:.3g} that {logits.dtype} losses and gradients can represent; "
                         "rescale the logits")
    if t_min < 0 or t_max >= k:
        raise ValueError(f"targets must lie in [0, {k}); got values in [{int(t_min)}, {int(t_max)}]")
    return logits, targets.long()


def check_log_probs(logp: Tensor, targets: Tensor, name: str = "logp") -> tuple[Tensor, Tensor]:
    """Validate log-probabilities ``(N, K)`` and their targets (:func:`check_logits_targets`), and
    that each row is a log-probability vector: ``logsumexp`` within the tolerance of
    :data:`calibnb._validation.SIMPLEX_ATOL` (a row of probabilities summing to 1) of 0, so that
    logits given by mistake are refused instead of read as probabilities above 1."""
    half = getattr(logp, "dtype", None) in _HALF  # rounded to 2**-11 or 2**-8: a looser tolerance
    logp, targets = check_logits_targets(logp, targets, name=name)
    atol = 2.0**-5 if half else SIMPLEX_ATOL
    worst = torch.logsumexp(logp.detach().double(), dim=1).abs().max().item()
    if not worst <= atol:
        raise ValueError(f"{name} must hold log-probabilities (each row's logsumexp 0, as log_softmax "
                         f"gives), but a row's logsumexp is {worst:.3g} away from 0")
    return logp, targets


def max_logit_spread(dtype: torch.dtype) -> float:
    """The largest row spread (max − min logit) the losses accept in ``dtype``: the dtype's largest
    value over 2**16. A log-probability is at most the spread in size, and the losses sum K of
    them or multiply them by factors such as γ (1 − p)^(γ−1); the headroom keeps every value and
    gradient finite (float32: 5.2e33, float64: 2.7e303; half precision computes in float32)."""
    return torch.finfo(dtype).max / 2.0**16


#: The largest γ of the focal losses (focal, dual focal, FCL, FLSD's schedule, AdaFocal's and
#: CalFocal's bins). Beyond it ``(1 - p)^γ`` has underflowed for every ``p`` that matters (γ = 1000
#: weighs ``p = 0.02`` by 2e-9), and the gradient's factor ``γ (1 - p)^(γ-1) log p`` reaches γ times
#: the row spread: 1e3 keeps it within the 2**16 headroom of :func:`max_logit_spread` (γ = 1e40 gave
#: NaN gradients on float32 logits). The papers use at most 20 (AdaFocal's γ_max); CalFocal caps
#: its γ at 1e3.
FOCAL_GAMMA_MAX = 1e3

#: The largest γ of inverse focal loss (and the largest |γ| of AdaFocal's inverse focal bins): its
#: weight (1 + p_t)^γ reaches 2^γ, and 2^100 leaves float32 (whose largest value is about 2^128)
#: room for the gradient's further factors.
INVERSE_GAMMA_MAX = 100.0

#: The largest weight ``lam`` of a term added to a loss (FCL's Brier term, MMCE). Beyond about
#: 1 / eps(float32) = 8e6 the base loss is below the rounding of the added term, so the sum is
#: the term alone; 1e6 keeps every float32 value and gradient finite (lam = 1e300 gave inf).
#: The papers use 0.5 to 8.
TERM_WEIGHT_MAX = 1e6


def check_reduction(reduction: str) -> str:
    """Validate ``reduction`` against ``"mean" | "sum" | "none"``."""
    return check_choice(reduction, "reduction", REDUCTIONS)


def check_validate(validate: bool) -> bool:
    """Validate the ``validate`` switch of the losses (a bool)."""
    if not isinstance(validate, bool):
        raise TypeError(f"validate must be a bool, got {validate!r}")
    return validate


def computes_host_free(logits: Tensor, validate: bool) -> bool:
    """Whether a loss must compute without reading values back to the host: when asked to
    (``validate=False``) and on every device but the CPU, where the branches that read a number
    (rare overflows and ties, handled apart) are free and faster."""
    return not validate or logits.device.type != "cpu"


def reduce(loss: Tensor, reduction: str) -> Tensor:
    """Apply ``reduction`` to per-sample losses ``(N,)``."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def lookup(table: Tensor, statistic: Tensor, boundaries: Tensor) -> Tensor:
    """``table[i]`` where ``boundaries[i-1] <= statistic < boundaries[i]``, shaped like ``statistic``.

    ``table`` has one entry more than the increasing ``boundaries``. ``bucketize`` over the
    flattened values and ``take`` are each cheaper than ``bucketize`` over the ``(N, 1)`` column
    and an indexing.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses._common import lookup
    >>> gammas, thresholds = torch.tensor([5.0, 3.0, 2.0]), torch.tensor([0.2, 0.5])
    >>> lookup(gammas, torch.tensor([0.1, 0.2, 0.49, 0.9]), thresholds)  # a boundary opens its bin
    tensor([5., 3., 3., 2.])
    """
    index = torch.bucketize(statistic.detach().reshape(-1), boundaries, right=True)
    return torch.take(table, index).view(statistic.shape)


def per_sample_gradient(grad: Tensor, reduction: str, n: int) -> Tensor:
    """The gradient of a reduced loss with respect to its ``n`` per-sample values, ``(n, 1)`` or
    0-dim (the same for every sample): the adjoint of :func:`reduce`."""
    if reduction == "mean":
        return grad.div(n)
    return grad.view(-1, 1) if reduction == "none" else grad
