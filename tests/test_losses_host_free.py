"""Losses built with ``validate=False``: the same values and gradients as with checks, and
nothing read back to the host in a forward and backward pass (issue 15's validation switch)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from loss_variants import VARIANTS, saturated_logits

from calibnb.losses import LOSSES, AdaFocalLoss, CalFocalLoss, get_loss, mmce_loss
from calibnb.losses.baselines import mmce_with_gradient, mmce_with_gradient_on_device
from calibnb.train import train_step
from calibnb.train.host_reads import count_host_reads


def small_convnet() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32, 10),
    )


def test_the_counter_sees_reads_in_forward_backward_and_by_shape():
    """The counting tool can fail: each kind of read, in Python and in a custom backward."""

    class ReadsInBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            if grad.sum() > 0:  # bool(): a value-dependent branch
                pass
            return 2 * grad

    x = torch.randn(5, requires_grad=True)
    with count_host_reads() as reads:
        ReadsInBackward.apply(x).sum().backward()
        x.detach().sum().item()
        x.detach()[x.detach() > 0]  # a boolean mask: the output's shape depends on the values
        torch.nonzero(x.detach())
        float(x.detach()[0])
        x.detach().tolist()
    # the backward's bool() is seen as the ATen read it reaches (_local_scalar_dense: "item")
    assert reads.counts == {"item": 2, "mask_index": 1, "nonzero": 1, "float": 1, "tolist": 1}
    assert get_loss("focal_loss")(torch.randn(4, 3), torch.tensor([0, 1, 2, 0])) is not None
    with count_host_reads() as reads:
        get_loss("focal_loss")(torch.randn(4, 3), torch.tensor([0, 1, 2, 0]))
    assert reads.total > 0  # validate=True reads the checks' numbers


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_registered_loss_trains_a_bf16_step_without_reading_the_host(name):
    """The issue's criterion: ``get_loss(name, validate=False)`` in a whole optimisation step of a
    small conv net under CPU bf16 autocast, gradient clipping included: zero host reads, a finite
    loss, finite gradients, close to the float32 step."""
    x, y = torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))
    steps = {}
    for precision in ("bf16", "fp32"):
        model = small_convnet()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss_fn = get_loss(name, validate=False, reduction="sum")
        def autocast():
            return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")

        with count_host_reads() as reads:
            loss, logits = train_step(model, loss_fn, optimizer, x, y, autocast, grad_clip=2.0)
        assert reads.total == 0, (precision, dict(reads.counts))
        assert torch.isfinite(loss) and loss.dtype == torch.float32
        assert all(torch.isfinite(p).all() for p in model.parameters())
        steps[precision] = (loss, torch.cat([p.detach().ravel() for p in model.parameters()]))
    torch.testing.assert_close(steps["bf16"][0], steps["fp32"][0], rtol=0.05, atol=0.05)
    torch.testing.assert_close(steps["bf16"][1], steps["fp32"][1], rtol=0.05, atol=0.02)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("k", [2, 10])
def test_validate_false_computes_the_same_values_and_gradients(variant, k):
    """Saturated rows (p_t underflows, ties at the top, logit gaps beyond float32's exp range)
    and ordinary ones: the host-free path equals the checked one in float64."""
    z_sat, t_sat = saturated_logits(k)
    gen = torch.Generator().manual_seed(k)
    z = torch.cat([z_sat, 3.0 * torch.randn(26, k, generator=gen)]).double()
    z[-1] = z[-2]  # equal rows, and ties between a dual class and others
    z[-3, :2] = 100.0
    t = torch.cat([t_sat, torch.randint(0, k, (26,), generator=gen)])
    results = []
    for validate in (True, False):
        logits = z.clone().requires_grad_()
        value = VARIANTS[variant](validate=validate, reduction="sum")(logits, t)
        value.backward()
        results.append((value.detach(), logits.grad))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(results[1][1], results[0][1], rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("module", [True, False])
def test_validate_true_still_names_a_bad_target(module):
    logits, targets = torch.randn(4, 3), torch.tensor([0, 1, 3, 2])  # 3 == the number of classes
    call = get_loss("dual_focal_loss") if module else (lambda z, t: mmce_loss(z, t))
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 3\)"):
        call(logits, targets)
    with pytest.raises(TypeError, match="validate must be a bool"):
        get_loss("focal_loss", validate="no")


def test_validate_false_keeps_the_checks_that_read_no_values():
    loss = get_loss("focal_loss", validate=False)
    with pytest.raises(ValueError, match="targets must have shape"):
        loss(torch.randn(4, 3), torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="targets must be integer"):
        loss(torch.randn(4, 3), torch.zeros(4))


@pytest.mark.parametrize("case", ["mixed", "all correct", "all wrong", "calibrated"])
def test_mmce_on_the_device_equals_the_host_computation(case):
    gen = torch.Generator().manual_seed(3)
    r = torch.rand(50, generator=gen, dtype=torch.float64) * 0.9 + 0.1
    correct = torch.rand(50, generator=gen) < 0.7
    if case == "all correct":
        correct[:] = True
    elif case == "all wrong":
        correct[:] = False
    elif case == "calibrated":  # one correct and one wrong at the same confidence 1/2
        r, correct = torch.tensor([0.5, 0.5], dtype=torch.float64), torch.tensor([True, False])
    mmce, grad = mmce_with_gradient(r, correct, 0.4)
    with count_host_reads() as reads:
        mmce_dev, grad_dev = mmce_with_gradient_on_device(r, correct, 0.4)
    assert reads.total == 0
    assert mmce_dev.item() == pytest.approx(mmce, rel=1e-12, abs=1e-15)
    torch.testing.assert_close(grad_dev, grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls", [AdaFocalLoss, CalFocalLoss])
def test_the_validation_update_runs_on_tensors_without_reading_the_host(cls):
    """AdaFocal's and CalFocal's update from tensors equals the update from arrays, reads nothing
    with ``validate=False``, and its records reach ``history`` when it is read."""
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(10, 0.3), size=203)
    labels = np.where(rng.random(203) < 0.6, probs.argmax(1), rng.integers(0, 10, 203))
    from_arrays, from_tensors = cls(n_bins=7), cls(n_bins=7, validate=False)
    for _ in range(3):
        from_arrays.update(probs, labels)
        with count_host_reads() as reads:
            from_tensors.update(torch.from_numpy(probs), torch.from_numpy(labels))
        assert reads.total == 0
        probs = np.sqrt(probs) / np.sqrt(probs).sum(1, keepdims=True)  # a changed network
    for key, value in from_arrays.state_dict().items():
        torch.testing.assert_close(from_tensors.state_dict()[key], value, rtol=1e-12, atol=1e-12)
    assert len(from_tensors.history) == 3 and isinstance(from_tensors.history[0]["edges"], np.ndarray)
    for ours, theirs in zip(from_tensors.history, from_arrays.history):
        for key in theirs:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-12, atol=1e-12)
