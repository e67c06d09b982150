"""The reference losses (the papers' equations, plain autograd) equal the fast public losses.

In float64, per sample (``reduction="none"``) and reduced, values to 1e-9 relative and gradients
(for random upstream weights) to 1e-7 relative, on random logits for K = 2, 10, 100, on the hard
rows of ``test_losses_fused.hard_logits`` (a class tied with the target, saturated and underflowing
probabilities), on rows where two classes tie for ``p_j``, and on logits drawn by hypothesis.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import calibnb.losses as fast
from calibnb.losses import reference
from test_losses_fused import hard_logits

CASES = [  # (name, hyper-parameters): every loss, its paper settings and the edge settings
    ("cross_entropy", {}),
    ("focal_loss", {"gamma": 3.0}),
    ("focal_loss", {"gamma": 0.0}),
    ("focal_loss", {"gamma": 1.5}),
    ("focal_loss_sd", {}),
    ("focal_loss_sd", {"gammas": (5.0, 3.0, 2.0), "thresholds": (0.2, 0.5)}),
    ("inverse_focal_loss", {"gamma": 1.0}),
    ("inverse_focal_loss", {"gamma": 2.5}),
    ("dual_focal_loss", {"gamma": 5.0}),
    ("dual_focal_loss", {"gamma": 2.0, "dual": "second"}),
    ("dual_focal_loss", {"gamma": 2.0, "dual": "third"}),
    ("dual_focal_loss", {"gamma": 2.0, "dual": "mean_top2"}),
    ("dual_focal_loss", {"gamma": 2.0, "dual": "mean_top3"}),
    ("dual_focal_loss", {"gamma": 2.0, "dual": "mean_all"}),
    ("dual_focal_loss", {"gamma": 3.0, "dual": 0.2}),
    ("dual_focal_loss_sd", {}),
    ("focal_calibration_loss", {"gamma": 2.0, "lam": 0.5}),
    ("focal_calibration_loss", {"gamma": 1.0, "lam": 2.0, "norm": "l1"}),
    ("brier_loss", {}),
    ("label_smoothing_loss", {"alpha": 0.05}),
    ("label_smoothing_loss", {"alpha": 0.3}),
    ("mmce_loss", {"lam": 2.0, "width": 0.4}),
]
IDS = [f"{name}-{'-'.join(map(str, params.values())) or 'default'}" for name, params in CASES]


def assert_equal_loss(fast_fn, reference_fn, z: torch.Tensor, t: torch.Tensor) -> None:
    upstream = torch.rand(len(t), dtype=z.dtype, generator=torch.Generator().manual_seed(1)) + 0.5
    results = []
    for fn in (fast_fn, reference_fn):
        x = z.clone().requires_grad_()
        value = fn(x, t)
        (grad,) = torch.autograd.grad((value * upstream).sum(), x)
        results.append((value.detach(), grad))
    (value, grad), (value_ref, grad_ref) = results
    torch.testing.assert_close(value, value_ref, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(grad, grad_ref, rtol=1e-7, atol=1e-12)


def random_logits(k: int, n: int = 64, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return 4.0 * torch.randn(n, k, generator=gen, dtype=torch.float64), torch.randint(0, k, (n,), generator=gen)


def tied_dual_logits(k: int):
    """Rows where the two largest classes below the target tie (the gradient of ``p_j`` goes to
    the first of them in both forms), plus a row where everything below ties."""
    z, t = random_logits(k, n=8, seed=3)
    t[:] = 0
    z[:, 0] = 5.0
    if k > 2:
        z[:, 1] = z[:, 2] = 2.0
    z[-1, 1:] = -1.0
    return z, t


@pytest.mark.parametrize("k", [2, 10, 100])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_reference_equals_the_fast_loss(name, params, k):
    for z, t in (random_logits(k), hard_logits(k), tied_dual_logits(k)):
        assert_equal_loss(
            lambda x, y: getattr(fast, name)(x, y, **params, reduction="none"),
            lambda x, y: getattr(reference, name)(x, y, **params, reduction="none"),
            z, t,
        )


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_reductions_agree(name, params, reduction):
    z, t = random_logits(10, n=32, seed=5)
    assert_equal_loss(
        lambda x, y: getattr(fast, name)(x, y, **params, reduction=reduction).expand(len(y)),
        lambda x, y: getattr(reference, name)(x, y, **params, reduction=reduction).expand(len(y)),
        z, t,
    )


@pytest.mark.parametrize("base", ["focal", "dual"])
@pytest.mark.parametrize("k", [2, 10])
def test_reference_adafocal_equals_the_fast_one(base, k):
    gammas = torch.tensor([5.0, 2.0, 0.5, -0.2, -1.5], dtype=torch.float64)  # focal and inverse bins
    edges = torch.tensor([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], dtype=torch.float64)
    for z, t in (random_logits(k), hard_logits(k)):
        assert_equal_loss(
            lambda x, y: fast.adafocal_loss(x, y, gammas, edges, base=base, reduction="none"),
            lambda x, y: reference.adafocal_loss(x, y, gammas, edges, base=base, reduction="none"),
            z, t,
        )


@settings(max_examples=60, deadline=None)
@given(
    z=arrays("float64", st.tuples(st.integers(1, 12), st.integers(2, 6)),
             elements=st.integers(-1920, 1920).map(lambda i: i / 64)),
    data=st.data(),
    gamma=st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0]),
)
def test_reference_equals_fast_on_any_logits(z, data, gamma):
    """Logits on a grid of 1/64 in [-30, 30], so that ``z_k - z_t`` is exact and every tie is a
    true tie, which both forms break by class index. (Logits such as 0 and 4e-87 below a target
    at 1 tie after the fast form's subtraction but not before; there ``p_j`` is the same, and its
    gradient, a subgradient at a kink, goes to either class.)"""
    z = torch.from_numpy(z)
    t = torch.tensor(data.draw(st.lists(st.integers(0, z.shape[1] - 1), min_size=len(z), max_size=len(z))))
    for name, params in [("focal_loss", {"gamma": gamma}), ("dual_focal_loss", {"gamma": gamma}),
                         ("focal_calibration_loss", {"gamma": gamma}), ("inverse_focal_loss", {"gamma": gamma})]:
        assert_equal_loss(
            lambda x, y: getattr(fast, name)(x, y, **params, reduction="none"),
            lambda x, y: getattr(reference, name)(x, y, **params, reduction="none"),
            z, t,
        )


def test_the_reference_is_short_cites_its_source_and_keeps_the_public_signature():
    for name in reference.__all__:
        function = getattr(reference, name)
        assert len(inspect.getsource(function).splitlines()) <= 30, name
        assert max(map(len, inspect.getsource(function).splitlines())) <= 76, name  # the book's column
        assert inspect.getdoc(function), name
        if name != "dual_probability":  # same parameters, same defaults
            ours, public = (list(inspect.signature(f).parameters.values()) for f in (function, getattr(fast, name)))
            # the public loss adds the switch a training loop uses; the reference always validates
            assert (public[-1].name, public[-1].default) == ("validate", True), name
            assert [(p.name, p.default) for p in ours] == [(p.name, p.default) for p in public[:-1]]


@pytest.mark.parametrize("name", ["focal_loss", "dual_focal_loss", "mmce_loss", "brier_loss"])
def test_the_reference_refuses_bad_input_like_the_fast_loss(name):
    z = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="targets"):
        getattr(reference, name)(z, torch.tensor([0, 1, 9]))
    with pytest.raises(ValueError, match="reduction"):
        getattr(reference, name)(z, torch.tensor([0, 1, 2]), reduction="avg")


def test_compare_with_reference_reports_agreement_and_times():
    from calibnb.losses.compare import compare_with_reference, format_comparison

    report = compare_with_reference("dual_focal_loss", n=64, k=10, min_run_time=0.01, gamma=2.0)
    assert set(report) == {"value_difference", "gradient_difference", "reference_ms", "fast_ms", "speed_up"}
    assert report["value_difference"] < 1e-12 and report["gradient_difference"] < 1e-12
    assert report["reference_ms"] > 0 and report["fast_ms"] > 0
    assert report["speed_up"] == pytest.approx(report["reference_ms"] / report["fast_ms"])
    assert format_comparison(report).startswith("largest difference: value ")
    with pytest.raises(ValueError, match="name must be a loss with a reference form"):
        compare_with_reference("adafocal")
