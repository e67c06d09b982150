"""A loss and its derivative along the true-class probability, for plots like AdaFocal's Figure 3a.

The papers draw each loss as a function of ``p_t`` alone. For losses that also look at the
other classes (dual focal loss, the Brier term of FCL) the picture needs a path through the
simplex: here the remaining mass ``1 - p_t`` is split among the other classes in fixed
proportions ``rest``. The values and the derivatives ``d loss / d p_t`` along that path come
from the library's own loss through autograd, so the figures show exactly what is trained.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from calibnb._validation import check_real


def loss_along_pt(
    loss: Callable[[Tensor, Tensor], Tensor],
    p_t,
    rest: Sequence[float] = (1.0,),
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample loss and ``d loss / d p_t`` on the path ``p = (p_t, (1 - p_t) * rest)``.

    ``loss`` is any calibnb loss with ``reduction="none"`` (a functional wrapped in a lambda or
    a module); ``p_t`` are points in ``(0, 1)``; ``rest`` are non-negative proportions of the
    other classes (normalised to sum 1; the default is the binary case). The target is class 0;
    the logits are ``log p`` in float64.

    Examples
    --------
    >>> from calibnb.losses import brier_loss, cross_entropy, loss_along_pt
    >>> values, slopes = loss_along_pt(lambda z, t: cross_entropy(z, t, reduction="none"), [0.25, 0.5])
    >>> values.round(4), slopes.round(4)  # -log p_t and its derivative -1 / p_t
    (array([1.3863, 0.6931]), array([-4., -2.]))
    >>> brier = lambda z, t: brier_loss(z, t, reduction="none")
    >>> loss_along_pt(brier, [0.5], rest=(0.5, 0.5))[0].round(4)  # p = (0.5, 0.25, 0.25)
    array([0.375])
    """
    points = np.asarray(p_t, dtype=np.float64)
    if points.ndim != 1 or points.size == 0 or not ((points > 0) & (points < 1)).all():
        raise ValueError("p_t must be a non-empty 1-D array of values in (0, 1)")
    if np.ndim(rest) != 1:
        raise ValueError(f"rest must be a 1-D sequence of proportions, got {np.ndim(rest)} dimensions")
    weights = [check_real(w, f"rest[{i}]", minimum=0.0) for i, w in enumerate(rest)]
    if not weights or sum(weights) == 0:
        raise ValueError("rest must hold at least one positive proportion")
    share = torch.tensor(weights, dtype=torch.float64) / sum(weights)
    pt = torch.tensor(points, requires_grad=True)
    probs = torch.cat([pt[:, None], (1 - pt)[:, None] * share[None, :]], dim=1)
    values = loss(torch.log(probs), torch.zeros(len(points), dtype=torch.long))
    (grad,) = torch.autograd.grad(values.sum(), pt)
    return values.detach().numpy(), grad.numpy()
