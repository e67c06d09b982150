"""Numerical robustness of calibnb.losses: saturated softmax, bf16 autocast, K = 2, gradcheck,
and order properties between the losses (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from loss_variants import VARIANTS, saturated_logits

from calibnb.losses import (
    brier_loss,
    cross_entropy,
    dual_focal_loss,
    focal_loss,
    get_loss,
    inverse_focal_loss,
)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("reduction", ["sum", "none"])
def test_finite_loss_and_gradient_when_the_softmax_saturates(variant, k, reduction):
    loss_fn = VARIANTS[variant]()
    loss_fn.reduction = reduction
    z, t = saturated_logits(k)
    z.requires_grad_()
    value = loss_fn(z, t)
    assert torch.isfinite(value).all(), value
    value.sum().backward()
    assert torch.isfinite(z.grad).all(), z.grad


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_bf16_autocast_on_cpu(variant):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 10)
    x, t = 30.0 * torch.randn(32, 8), torch.randint(0, 10, (32,))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
        assert logits.dtype == torch.bfloat16
        value = VARIANTS[variant]()(logits, t)
    assert value.dtype == torch.float32 and torch.isfinite(value)
    value.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


#: CalFocal case 1 reads gamma off p_t itself and, like FLSD, passes no gradient through it,
#: so finite differences see a different function; tests/test_losses_adafocal.py checks it.
SMOOTH = sorted(set(VARIANTS) - {"calfocal 1"})


@pytest.mark.parametrize("variant", SMOOTH)
@pytest.mark.parametrize("k", [2, 5])
def test_gradcheck_float64(variant, k):
    loss_fn = VARIANTS[variant]()
    gen = torch.Generator().manual_seed(k)
    z = (2.0 * torch.randn(6, k, generator=gen, dtype=torch.float64)).requires_grad_()
    t = torch.randint(0, k, (6,), generator=gen)
    t[:2] = z[:2].detach().argmax(1)  # both correct and wrong predictions (MMCE's two sets)
    t[2] = z[2].detach().argmin()
    assert torch.autograd.gradcheck(lambda x: loss_fn(x, t), (z,), eps=1e-6, atol=1e-5)


def test_focal_gradient_near_certainty_is_the_analytic_limit():
    """d FL / d z_t = -(1-p)^g (1 - g p log p / (1 - p)) (1 - p) for two classes; finite for g < 1."""
    for gamma in (0.2, 0.5, 2.0):
        gap = torch.tensor([[20.0, 0.0]], dtype=torch.float64, requires_grad=True)
        focal_loss(gap, torch.tensor([0]), gamma=gamma).backward()
        p = torch.sigmoid(torch.tensor(20.0, dtype=torch.float64))
        u = 1 - p
        expected = -(u**gamma) * (1 - gamma * p * torch.log(p) / u) * u
        assert gap.grad[0, 0].item() == pytest.approx(expected.item(), rel=1e-6)


# ---------------------------------------------------------------- order properties


logit_rows = arrays(
    np.float64,
    st.tuples(st.integers(1, 8), st.integers(2, 6)),
    elements=st.floats(-30, 30, allow_nan=False, allow_infinity=False),
)


def as_case(z: np.ndarray, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    t = np.random.default_rng(seed).integers(0, z.shape[1], z.shape[0])
    return torch.tensor(z), torch.tensor(t)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(logit_rows, st.floats(0.0, 6.0), st.integers(0, 2**16))
def test_focal_family_is_ordered(z, gamma, seed):
    """FL_g <= DFL_g <= CE <= InvFL_g per sample; DFL's base 1 - p_k + p_j lies in [1 - p_k, 1]."""
    z, t = as_case(z, seed)
    ce = cross_entropy(z, t, reduction="none")
    fl = focal_loss(z, t, gamma=gamma, reduction="none")
    dfl = dual_focal_loss(z, t, gamma=gamma, reduction="none")
    inv = inverse_focal_loss(z, t, gamma=gamma, reduction="none")
    tol = 1e-12 * (1 + ce)
    assert (fl <= dfl + tol).all() and (dfl <= ce + tol).all() and (ce <= inv + tol).all()
    assert (fl >= 0).all() and (focal_loss(z, t, gamma=gamma + 1, reduction="none") <= fl + tol).all()


@settings(max_examples=60, deadline=None)
@given(logit_rows, st.integers(0, 2**16))
def test_brier_is_within_its_range_and_matches_its_expansion(z, seed):
    z, t = as_case(z, seed)
    b = brier_loss(z, t, reduction="none")
    p = torch.softmax(z, 1)
    p_t = p.gather(1, t[:, None]).squeeze(1)
    assert ((b >= 0) & (b <= 2)).all()
    torch.testing.assert_close(b, (p**2).sum(1) - 2 * p_t + 1, atol=1e-12, rtol=0)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("k", [2, 100])
def test_finite_up_to_the_largest_accepted_logit_spread(variant, dtype, k):
    """Logits whose rows span just under max_logit_spread(dtype) (float32: 5.2e33) give finite
    values and gradients for every loss, with the target at the top, the bottom and between; a
    row spanning more is refused with an error naming the logits (issue 18, item 4)."""
    from calibnb.losses._common import max_logit_spread

    limit = max_logit_spread(dtype)
    g = torch.Generator().manual_seed(k)
    z = (torch.rand(6, k, generator=g, dtype=torch.float64) - 0.5) * 0.999 * limit
    z[:, 0], z[:, 1] = 0.4995 * limit, -0.4995 * limit
    z = z.to(dtype).requires_grad_(True)
    targets = torch.tensor([0, 1, k - 1, 0, 1, k // 2])
    for reduction in ("mean", "sum"):
        loss = VARIANTS[variant]()
        loss.reduction = reduction
        value = loss(z, targets)
        (grad,) = torch.autograd.grad(value, z)
        assert torch.isfinite(value).all() and torch.isfinite(grad).all(), reduction
    wider = z.detach().clone()
    wider[0, 0] = 0.51 * limit
    wider[0, 1] = -0.51 * limit
    with pytest.raises(ValueError, match="logits: a row spans"):
        VARIANTS[variant]()(wider, targets)
