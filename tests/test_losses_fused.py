"""The fused, closed-form backward passes of calibnb.losses against autograd through the plain formulas.

Each loss is written here the plain way (``log_softmax``, gathers, a masked sort for ``p_j``,
the O(N^2) kernel sum for MMCE) and differentiated by autograd in float64; the library's
forward values and its hand-written gradients must agree with it to rounding, for
K = 2, 10, 100, random upstream gradients (``reduction="none"``), rows with ties and saturated
rows. Also: the fast row-wise argmin/argmax used to find ``p_j`` and the top label.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibnb.losses import (
    AdaFocalLoss,
    CalFocalLoss,
    brier_loss,
    dual_focal_loss,
    dual_focal_loss_sd,
    focal_calibration_loss,
    focal_loss,
    focal_loss_sd,
    inverse_focal_loss,
    label_smoothing_loss,
    mmce_loss,
    mmce_weighted,
)
from calibnb.losses._fused import difference_to_target, row_argmax, row_argmin, softmax_parts, target_softmax
from calibnb.losses.baselines import _ascending_order

KS = [2, 10, 100]


def hard_logits(k: int, n: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 logits with random rows, a class tied with the target, the target on top, at the
    bottom, and saturated rows (p_t = 1 - 1e-13, p_t ~ 1e-26, and p_t ~ e^-800, whose logit
    differences overflow exp)."""
    gen = torch.Generator().manual_seed(seed + k)
    z = 3.0 * torch.randn(n, k, generator=gen, dtype=torch.float64)
    t = torch.randint(0, k, (n,), generator=gen)
    z[0, t[0]] = z[0, (t[0] + 1) % k]  # a tie with the target (excluded from p_j)
    t[1] = z[1].argmax()  # correct prediction: p_j is the runner-up
    t[2] = z[2].argmin()  # nothing below: p_j = 0 (k = 2: p_j = 0 either way)
    z[3] = 0.0
    z[3, t[3]] = 30.0  # p_t = 1 - (k-1) e^-30
    z[4] = 0.0
    z[4, (t[4] + 1) % k] = 60.0  # p_t ~ e^-60
    z[5] = -1.0
    z[5, t[5]] = 0.0
    z[5, (t[5] + 1) % k] = 800.0  # p_t ~ e^-800 underflows; e^(z_k - z_t) overflows float64
    return z, t


def plain_dual(logp: torch.Tensor, t: torch.Tensor, dual: str) -> torch.Tensor:
    """p_j by the definition: probabilities strictly below p_t, sorted, the rank or the mean."""
    p = logp.exp()
    p_t = p.gather(1, t[:, None])
    below = torch.where(p < p_t, p, torch.zeros_like(p))
    if dual == "mean_all":
        return below.sum(1) / (p < p_t).sum(1).clamp_min(1)
    ranked = torch.cat([below.sort(1, descending=True).values, torch.zeros_like(p)], dim=1)
    rank = {"largest": 1, "second": 2, "third": 3, "mean_top2": 2, "mean_top3": 3}[dual]
    if dual.startswith("mean"):
        return ranked[:, :rank].mean(1)
    return ranked[:, rank - 1]


def plain_focal(z, t, gamma, dual=None, inverse=False):
    """-(1 -+ (p_t - p_j))^gamma log p_t through plain autograd (gamma a number or (N,) tensor)."""
    logp = torch.log_softmax(z, 1)
    logp_t = logp.gather(1, t[:, None]).squeeze(1)
    p_j = plain_dual(logp, t, dual) if dual else torch.zeros_like(logp_t)
    d = logp_t.exp() - p_j
    base = torch.where(torch.as_tensor(inverse), 1 + d, 1 - d)
    return -base ** torch.as_tensor(gamma, dtype=z.dtype) * logp_t


def plain_brier(z, t):
    p = torch.softmax(z, 1)
    return ((p - torch.nn.functional.one_hot(t, z.shape[1])) ** 2).sum(1)


def plain_mmce(z, t, width=0.4):
    """sqrt(v^T K v + 1e-10) with the full N x N Laplacian kernel (Kumar et al. 2018)."""
    p = torch.softmax(z, 1)
    r, predicted = p.max(1)
    correct = predicted == t
    m, n = correct.sum(), (~correct).sum()
    if m == 0 or n == 0:
        return z.sum() * 0
    v = torch.where(correct, (1 - r) / m, -r / n)
    kernel = torch.exp(-(r[:, None] - r[None, :]).abs() / width)
    return torch.sqrt(v @ kernel @ v + 1e-10)


def assert_same_value_and_gradient(ours_fn, plain_fn, z, t):
    """Per-sample values and the gradient for random upstream weights agree with autograd."""
    upstream = torch.rand(len(t), dtype=z.dtype, generator=torch.Generator().manual_seed(1)) + 0.5
    z1 = z.clone().requires_grad_()
    ours = ours_fn(z1, t)
    (grad_ours,) = torch.autograd.grad((ours * upstream).sum(), z1)
    z2 = z.clone().requires_grad_()
    plain = plain_fn(z2, t)
    (grad_plain,) = torch.autograd.grad((plain * upstream).sum(), z2)
    torch.testing.assert_close(ours.detach(), plain.detach(), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grad_ours, grad_plain, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("gamma", [0.0, 0.5, 2.0, 5.0])
def test_focal_and_inverse_focal(k, gamma):
    z, t = hard_logits(k)
    assert_same_value_and_gradient(
        lambda x, y: focal_loss(x, y, gamma=gamma, reduction="none"), lambda x, y: plain_focal(x, y, gamma), z, t
    )
    assert_same_value_and_gradient(
        lambda x, y: inverse_focal_loss(x, y, gamma=gamma, reduction="none"),
        lambda x, y: plain_focal(x, y, gamma, inverse=True),
        z,
        t,
    )


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("dual", ["largest", "second", "third", "mean_top2", "mean_top3", "mean_all"])
def test_dual_focal_gradient_includes_the_dual_probability(k, dual):
    z, t = hard_logits(k)
    for gamma in (0.5, 5.0):
        assert_same_value_and_gradient(
            lambda x, y: dual_focal_loss(x, y, gamma=gamma, dual=dual, reduction="none"),
            lambda x, y: plain_focal(x, y, gamma, dual=dual),
            z,
            t,
        )


@pytest.mark.parametrize("k", KS)
def test_fixed_offset_passes_no_gradient_through_it(k):
    z, t = hard_logits(k)

    def plain(x, y):
        logp_t = torch.log_softmax(x, 1).gather(1, y[:, None]).squeeze(1)
        return -(1 - logp_t.exp() + 0.2) ** 3.0 * logp_t

    assert_same_value_and_gradient(lambda x, y: dual_focal_loss(x, y, 3.0, 0.2, "none"), plain, z, t)


def flsd_gamma(statistic: torch.Tensor) -> torch.Tensor:
    """FLSD-53: 5 below 0.2, else 3 (read without gradient)."""
    s = statistic.detach()
    return torch.where(s < 0.2, 5.0, 3.0).to(s.dtype)


@pytest.mark.parametrize("k", KS)
def test_sample_dependent_variants(k):
    z, t = hard_logits(k)

    def plain_flsd(x, y):
        p_t = torch.softmax(x, 1).gather(1, y[:, None]).squeeze(1)
        return plain_focal(x, y, flsd_gamma(p_t))

    def plain_dfl_sd(x, y):
        logp = torch.log_softmax(x, 1)
        d = logp.gather(1, y[:, None]).squeeze(1).exp() - plain_dual(logp, y, "largest")
        return plain_focal(x, y, flsd_gamma(d), dual="largest")

    assert_same_value_and_gradient(lambda x, y: focal_loss_sd(x, y, reduction="none"), plain_flsd, z, t)
    assert_same_value_and_gradient(lambda x, y: dual_focal_loss_sd(x, y, reduction="none"), plain_dfl_sd, z, t)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("base", ["focal", "dual"])
def test_adafocal_with_focal_and_inverse_bins(k, base):
    z, t = hard_logits(k)
    loss = AdaFocalLoss(n_bins=4, base=base, reduction="none")
    loss.gammas.copy_(torch.tensor([-2.0, 0.5, 3.0, -0.2], dtype=torch.float64))
    loss.edges.copy_(torch.tensor([0.0, 0.1, 0.3, 0.7, 1.0], dtype=torch.float64))

    def plain(x, y):
        logp = torch.log_softmax(x, 1)
        p_j = plain_dual(logp, y, "largest") if base == "dual" else 0.0
        d = (logp.gather(1, y[:, None]).squeeze(1).exp() - p_j).detach()
        gamma = loss.gammas[torch.bucketize(d, loss.edges[1:-1], right=True)]
        return plain_focal(x, y, gamma.abs(), "largest" if base == "dual" else None, inverse=gamma < 0)

    assert_same_value_and_gradient(loss, plain, z, t)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("case", [1, 2])
def test_calfocal(k, case):
    z, t = hard_logits(k)
    loss = CalFocalLoss(n_bins=3, lam=10.0, case=case, reduction="none")
    loss.accuracies.copy_(torch.tensor([0.1, 0.4, 0.95], dtype=torch.float64))
    loss.confidences.copy_(torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64))

    def plain(x, y):
        p_t = torch.softmax(x, 1).gather(1, y[:, None]).squeeze(1).detach()
        b = torch.bucketize(p_t, loss.edges[1:-1], right=True)
        level = p_t if case == 1 else loss.confidences[b]
        return plain_focal(x, y, torch.exp(10.0 * (level - loss.accuracies[b])).clamp_max(1e3))

    assert_same_value_and_gradient(loss, plain, z, t)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("gamma, lam", [(2.0, 0.5), (0.0, 1.0), (0.5, 3.0)])
def test_fcl_brier_term(k, gamma, lam):
    z, t = hard_logits(k)
    assert_same_value_and_gradient(
        lambda x, y: focal_calibration_loss(x, y, gamma, lam, reduction="none"),
        lambda x, y: plain_focal(x, y, gamma) + lam * plain_brier(x, y),
        z,
        t,
    )
    assert_same_value_and_gradient(lambda x, y: brier_loss(x, y, reduction="none"), plain_brier, z, t)


@pytest.mark.parametrize("k", KS)
def test_mmce_gradient_flows_through_the_top_label_confidence(k):
    z, t = hard_logits(k, n=64)
    t[5:20] = z[5:20].argmax(1)  # enough correct predictions at every k

    def plain(x, y):
        ce = torch.nn.functional.cross_entropy(x, y, reduction="none")
        return ce + 2.0 * plain_mmce(x, y)

    assert_same_value_and_gradient(lambda x, y: mmce_loss(x, y, reduction="none"), plain, z, t)
    z1, z2 = z.clone().requires_grad_(), z.clone().requires_grad_()
    ours = mmce_weighted(torch.log_softmax(z1, 1), t, 0.1)
    plain_value = plain_mmce(z2, t, 0.1)
    torch.testing.assert_close(ours, plain_value, rtol=1e-10, atol=0)
    torch.testing.assert_close(torch.autograd.grad(ours, z1)[0], torch.autograd.grad(plain_value, z2)[0])


def test_mmce_of_an_all_correct_batch_has_zero_gradient():
    z = torch.randn(8, 5, dtype=torch.float64, requires_grad=True)
    mmce_weighted(torch.log_softmax(z, 1), z.detach().argmax(1)).backward()
    assert torch.equal(z.grad, torch.zeros_like(z))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("k", [1, 2, 10, 100, 6000])
def test_row_argmin_and_argmax_equal_torch_argmin_and_argmax(dtype, k):
    gen = torch.Generator().manual_seed(k)
    score = torch.randn(64, k, generator=gen, dtype=dtype)
    score[:, 0] = torch.randint(-1, 2, (64,), generator=gen).to(dtype)  # many ties at k <= 2
    score[1] = float("inf")
    score[2] = -float("inf")
    score[3, k // 2] = -float("inf")
    score[4, k - 1] = float("inf")
    for fast, reference in ((row_argmin, score.min), (row_argmax, score.max)):
        value, index = fast(score)
        expected, _ = reference(dim=1, keepdim=True)
        assert torch.equal(value, expected)
        assert index.shape == (64, 1) and index.dtype == torch.long
        assert torch.equal(score.gather(1, index), expected)
    assert torch.equal(row_argmin(score)[1], score.argmin(1, keepdim=True))  # the first among ties
    assert torch.equal(row_argmax(score)[1], score.argmax(1, keepdim=True))


@pytest.mark.parametrize("loss_fn", [focal_loss, dual_focal_loss, focal_calibration_loss, mmce_loss])
def test_double_backward_is_refused(loss_fn):
    z = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0, 1, 2, 3, 0, 1])
    (grad,) = torch.autograd.grad(loss_fn(z, t), z, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|double backward|does not require grad"):
        torch.autograd.grad(grad.sum(), z)


def plain_label_smoothing(z, t, alpha):
    """Cross-entropy against (1 - alpha) y + alpha / K, written out."""
    target = (1 - alpha) * torch.nn.functional.one_hot(t, z.shape[1]).to(z.dtype) + alpha / z.shape[1]
    return -(target * torch.log_softmax(z, 1)).sum(1)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("alpha", [0.0, 0.05, 0.3])
def test_label_smoothing(k, alpha):
    z, t = hard_logits(k)
    assert_same_value_and_gradient(
        lambda x, y: label_smoothing_loss(x, y, alpha=alpha, reduction="none"),
        lambda x, y: plain_label_smoothing(x, y, alpha),
        z,
        t,
    )


FUSED = {
    "focal": lambda x, y, r: focal_loss(x, y, gamma=3.0, reduction=r),
    "dual focal": lambda x, y, r: dual_focal_loss(x, y, gamma=5.0, reduction=r),
    "FCL": lambda x, y, r: focal_calibration_loss(x, y, reduction=r),
    "Brier": lambda x, y, r: brier_loss(x, y, reduction=r),
    "label smoothing": lambda x, y, r: label_smoothing_loss(x, y, reduction=r),
}


@pytest.mark.parametrize("name", FUSED)
def test_mean_and_sum_reduce_inside_the_fused_function(name):
    """The reductions happen inside the fused function: value and gradient equal those of the
    per-sample losses summed or averaged by autograd."""
    z, t = hard_logits(10)
    for reduction, reduce in (("mean", torch.mean), ("sum", torch.sum)):
        z1, z2 = z.clone().requires_grad_(), z.clone().requires_grad_()
        ours, plain = FUSED[name](z1, t, reduction), reduce(FUSED[name](z2, t, "none"))
        ours.backward()
        plain.backward()
        torch.testing.assert_close(ours, plain, rtol=1e-12, atol=0)
        torch.testing.assert_close(z1.grad, z2.grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", FUSED)
def test_backward_twice_with_a_retained_graph(name):
    """The first backward writes into the forward's softmax; a second one recomputes it."""
    z, t = hard_logits(10)
    z = z.requires_grad_()
    loss = FUSED[name](z, t, "mean")
    (first,) = torch.autograd.grad(loss, z, retain_graph=True)
    (second,) = torch.autograd.grad(loss, z)
    assert torch.equal(first, second)


@pytest.mark.parametrize("name", [*FUSED, "MMCE"])
def test_the_backward_reads_only_saved_tensors(name):
    """Every tensor a fused backward reads is saved with ``save_for_backward``, where autograd's
    version check guards it: the node keeps no tensor in an attribute of its own."""
    z, t = hard_logits(10)
    loss_fn = FUSED.get(name, lambda x, y, r: mmce_loss(x, y, reduction=r))
    node = loss_fn(z.requires_grad_(), t, "mean").grad_fn
    assert node.saved_tensors
    assert [key for key, value in vars(node).items() if isinstance(value, torch.Tensor)] == []


@pytest.mark.parametrize("dtype, gap", [(torch.float32, 200.0), (torch.float64, 1000.0)])
def test_target_probability_below_the_smallest_normal_float(dtype, gap):
    """Where p_t underflows (e^-200 in float32, e^-1000 in float64), log p_t is still exact,
    from the row's logits as in log_softmax: the loss is -log p_t = gap + log(1 + (K - 2) e^-gap) exactly, not inf."""
    k = 10
    z = torch.zeros(3, k, dtype=dtype)
    z[:, 1] = gap
    t = torch.tensor([0, 1, 2])  # p_t underflows for rows 0 and 2, is ~1 for row 1
    assert torch.softmax(z, 1)[0, 0] < torch.finfo(dtype).tiny
    z.requires_grad_()
    loss = focal_loss(z, t, gamma=0.0, reduction="none")
    torch.testing.assert_close(loss.detach(), torch.tensor([gap, 0.0, gap], dtype=dtype))
    focal = focal_loss(z, t, gamma=3.0, reduction="none")
    torch.testing.assert_close(focal.detach(), torch.tensor([gap, 0.0, gap], dtype=dtype))
    (grad,) = torch.autograd.grad(focal.sum(), z)
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_parts_are_the_softmax_and_log_softmax(dtype):
    """e / s is the softmax to within the one rounding that exp2((z - m) log2 e) adds to the
    exponent (relative error |z - m| eps/2) plus 16 eps for exp2, the sum and the division
    (torch.softmax's own float32 error on these logits reaches 17 eps); e is exactly 1 at the
    row maximum; log p_t is log_softmax's, also for saturated rows (logits of +-1e4) and ties."""
    gen = torch.Generator().manual_seed(7)
    z = (6.0 * torch.randn(64, 100, generator=gen)).to(dtype)
    t = torch.randint(0, 100, (64, 1), generator=gen)
    z[0] = 0.0  # all tied
    z[1, 3] = z[1, 5] = z[1].max() + 1.0  # a tied maximum
    z[2] = 1e4 * torch.sign(torch.randn(100, generator=gen)).to(dtype)
    e, s, m, logp_t = softmax_parts(z, t)
    exact = torch.softmax(z.double(), dim=1)
    eps = torch.finfo(dtype).eps
    bound = ((z - m).abs().double() * eps / 2 + 16 * eps) * exact
    assert ((e / s).double() - exact).abs().le(bound + torch.finfo(dtype).tiny).all()
    assert torch.equal(m, z.amax(dim=1, keepdim=True))
    assert torch.equal(e.amax(dim=1), torch.ones(64, dtype=dtype)) and s.ge(1).all()
    reference = torch.log_softmax(z.double(), dim=1).gather(1, t)
    torch.testing.assert_close(logp_t.double(), reference, rtol=4 * eps, atol=4 * eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mmce_sorts_confidences_with_ties_in_index_order(dtype):
    """The sort behind MMCE's prefix sums (64-bit keys for float32, argsort otherwise)."""
    values = np.random.default_rng(3).random(1000).astype(dtype)
    values[::7] = values[0]  # ties
    values[5] = 0.0
    order = _ascending_order(values)
    assert np.array_equal(values[order], np.sort(values))
    if dtype == np.float32:  # the keys break ties by index
        assert np.array_equal(order, np.argsort(values, kind="stable"))
    signed = values.copy()
    signed[[1, 2]] = -0.5, -0.0  # no longer ordered by their bits: argsort instead
    assert np.array_equal(signed[_ascending_order(signed)], np.sort(signed))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_target_softmax_is_shifted_by_the_target_and_falls_back_where_exp_overflows(dtype):
    """What the focal-loss chapter states: e_t = 1, so s >= 1 and log p_t = -log s, log_softmax's
    value; rows whose differences overflow exp are those of softmax_parts (the max shift)."""
    gen = torch.Generator().manual_seed(11)
    z = (6.0 * torch.randn(32, 50, generator=gen)).to(dtype)
    t = torch.randint(0, 50, (32, 1), generator=gen)
    gap = 200.0 if dtype == torch.float32 else 1000.0  # beyond exp's range: the fallback
    z[3, (t[3, 0] + 1) % 50] = z[3, t[3, 0]] + gap
    e, s, logp_t = target_softmax(z, t, difference_to_target(z, t))
    regular = torch.ones(32, dtype=torch.bool)
    regular[3] = False
    assert torch.equal(e.gather(1, t)[regular], torch.ones(31, 1, dtype=dtype))
    assert s.ge(1).all() and torch.isfinite(s).all()
    assert torch.equal(logp_t[regular], -s.log()[regular])
    eps = torch.finfo(dtype).eps
    reference = torch.log_softmax(z.double(), dim=1).gather(1, t)
    torch.testing.assert_close(logp_t.double(), reference, rtol=8 * eps, atol=8 * eps)
    fallback = softmax_parts(z[3:4], t[3:4])
    assert torch.equal(e[3:4], fallback[0]) and torch.equal(s[3:4], fallback[1])
    assert torch.equal(logp_t[3:4], fallback[3])
