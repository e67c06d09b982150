"""A fast loss beside its reference form: how far apart they are, and how much faster it is.

What each method chapter's "Making it fast" section prints: on one batch of logits, the largest
difference in value and in gradient between :mod:`calibnb.losses` and
:mod:`calibnb.losses.reference` (float64), and the time of a forward and backward pass of each
(float32, the training dtype), measured by ``torch.utils.benchmark`` on the machine that runs it.
"""

from __future__ import annotations

import torch
from torch.utils import benchmark

import calibnb.losses as fast
from calibnb._validation import check_int
from calibnb.losses import reference


def compare_with_reference(name: str, n: int = 4096, k: int = 100, seed: int = 0,
                           min_run_time: float = 0.5, **params) -> dict:
    """Compare ``calibnb.losses.<name>`` with ``calibnb.losses.reference.<name>`` on random logits.

    Returns ``{"value_difference", "gradient_difference", "reference_ms", "fast_ms", "speed_up"}``:
    the largest absolute differences on ``(n, k)`` float64 logits (scale 3, random targets), and
    the median milliseconds of ``loss.backward()`` on float32 logits for each form.
    """
    if name not in reference.__all__ or not hasattr(fast, name):
        raise ValueError(f"name must be a loss with a reference form, one of {sorted(reference.__all__)}, got {name!r}")
    n, k = check_int(n, "n", minimum=1), check_int(k, "k", minimum=2)
    gen = torch.Generator().manual_seed(seed)
    logits = 3.0 * torch.randn(n, k, generator=gen, dtype=torch.float64)
    targets = torch.randint(0, k, (n,), generator=gen)
    forms = {"fast": getattr(fast, name), "reference": getattr(reference, name)}
    values, grads, times = {}, {}, {}
    for form, loss in forms.items():
        z = logits.clone().requires_grad_()
        value = loss(z, targets, **params, reduction="none")
        values[form], (grads[form],) = value.detach(), torch.autograd.grad(value.sum(), z)
        z32 = logits.float().requires_grad_()
        timer = benchmark.Timer("loss(z, t, **params).backward()",
                                globals={"loss": loss, "z": z32, "t": targets, "params": params})
        times[form] = timer.blocked_autorange(min_run_time=min_run_time).median * 1e3
    return {
        "value_difference": float((values["fast"] - values["reference"]).abs().max()),
        "gradient_difference": float((grads["fast"] - grads["reference"]).abs().max()),
        "reference_ms": times["reference"],
        "fast_ms": times["fast"],
        "speed_up": times["reference"] / times["fast"],
    }


def format_comparison(report: dict) -> str:
    """The two lines a chapter prints for a :func:`compare_with_reference` report."""
    return (f"largest difference: value {report['value_difference']:.1e}, "
            f"gradient {report['gradient_difference']:.1e}\n"
            f"reference {report['reference_ms']:.2f} ms, fast {report['fast_ms']:.2f} ms: "
            f"{report['speed_up']:.1f}x faster")
