"""calibnb.losses against the authors' code, the papers' reductions, the registry and bad input.

The reference values come from minimal, independent re-implementations of the authors' own
procedures (plain loops over samples, numpy float64), each naming the repository, file and
function it follows and what differs from calibnb. The papers' code sums over the batch;
calibnb's ``"mean"`` is that sum divided by N.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import calibnb.losses
from calibnb.losses import (
    LOSSES,
    AdaFocalLoss,
    FocalLoss,
    adafocal_loss,
    brier_loss,
    cross_entropy,
    dual_focal_loss,
    dual_focal_loss_sd,
    focal_calibration_loss,
    focal_loss,
    focal_loss_sd,
    get_loss,
    inverse_focal_loss,
    label_smoothing_loss,
    mmce_loss,
    target_and_dual,
)

RTOL = 1e-5


# ---------------------------------------------------------------- reference re-implementations


def log_softmax_np(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def ref_focal(z, t, gamma):
    """torrvision/focal_calibration Losses/focal_loss.py, FocalLoss.forward: -(1-pt)^g log pt per sample."""
    logp = log_softmax_np(z)
    return np.array([-((1 - np.exp(logp[i, t[i]])) ** gamma) * logp[i, t[i]] for i in range(len(t))])


def ref_flsd(z, t, gamma=3.0, table=((0.2, 5.0), (0.5, 3.0))):
    """torrvision/focal_calibration Losses/focal_loss_adaptive_gamma.py, FocalLossAdaptive.get_gamma_list:
    the `gamma` argument for pt >= 0.5, else the first (threshold, gamma) with pt < threshold."""
    logp = log_softmax_np(z)
    out = []
    for i in range(len(t)):
        lp = logp[i, t[i]]
        pt = np.exp(lp)
        g = gamma
        if pt < 0.5:
            for threshold, value in table:
                if pt < threshold:
                    g = value
                    break
        out.append(-((1 - pt) ** g) * lp)
    return np.array(out)


def ref_adafocal_per_sample(lp, gamma):
    """3mcloud/adafocal losses/adafocal.py, AdaFocal.forward: -(1 - sign(g) pt + 1e-20)^|g| log pt."""
    pt = np.exp(lp)
    return -((1 - np.sign(gamma) * pt + 1e-20) ** abs(gamma)) * lp


def ref_dual_parts(z, t):
    """Linwei94/ICML2023-DualFocalLoss Losses/dual_focal_loss.py: mask p < p_k (strict), p_j = the
    largest masked probability (0 when none), sorted list of the masked ones for the ablations."""
    p = np.exp(log_softmax_np(z))
    rows = []
    for i in range(len(t)):
        pk = p[i, t[i]]
        below = sorted((v for v in p[i] if v < pk), reverse=True)
        rows.append((pk, below + [0.0] * len(p[i])))  # zero padding, as topk over the masked vector
    return rows


def ref_dual(z, t, gamma, pick):
    out = []
    for pk, below in ref_dual_parts(z, t):
        out.append(-((1 - pk + pick(below)) ** gamma) * np.log(pk))
    return np.array(out)


def ref_dual_sd(z, t):
    """Linwei94/ICML2023-DualFocalLoss Losses/dual_focal_loss_sd.py: FLSD's gamma rule on p_k - p_j."""
    out = []
    for pk, below in ref_dual_parts(z, t):
        d = pk - below[0]
        g = 3.0 if d >= 0.5 else (5.0 if d < 0.2 else 3.0)
        out.append(-((1 - pk + below[0]) ** g) * np.log(pk))
    return np.array(out)


def ref_fcl(z, t, gamma, lam):
    """EagleAdelaide/Focal-Calibration-Loss-FCL, FCLUngated.forward: focal + lam * sum_k (p_k - y_k)^2."""
    logp = log_softmax_np(z)
    p = np.exp(logp)
    out = []
    for i in range(len(t)):
        y = np.zeros(z.shape[1])
        y[t[i]] = 1.0
        out.append(-((1 - p[i, t[i]]) ** gamma) * logp[i, t[i]] + lam * ((p[i] - y) ** 2).sum())
    return np.array(out)


def ref_brier(z, t):
    """torrvision/focal_calibration Losses/brier_score.py: sum over classes of (onehot - softmax)^2."""
    return ref_fcl(z, t, 0.0, 1.0) - ref_focal(z, t, 0.0)


def ref_label_smoothing(z, t, alpha):
    """PyTorch's documented label smoothing: target (1 - a) onehot + a / K, cross-entropy against it."""
    logp = log_softmax_np(z)
    k = z.shape[1]
    return np.array([-(1 - alpha) * logp[i, t[i]] - alpha / k * logp[i].sum() for i in range(len(t))])


def ref_mmce_blocks(z, t, width=0.4):
    """torrvision/focal_calibration Losses/mmce.py, MMCE_weighted.forward, as sums over the three
    blocks (correct x correct, wrong x wrong, correct x wrong) of the weighted Laplacian kernel."""
    p = np.exp(log_softmax_np(z))
    r, pred = p.max(axis=1), p.argmax(axis=1)
    correct = [i for i in range(len(t)) if pred[i] == t[i]]
    wrong = [i for i in range(len(t)) if pred[i] != t[i]]
    k = lambda a, b: np.exp(-abs(r[a] - r[b]) / width)  # noqa: E731
    cc = sum((1 - r[a]) * (1 - r[b]) * k(a, b) for a in correct for b in correct)
    ww = sum(r[a] * r[b] * k(a, b) for a in wrong for b in wrong)
    cw = sum((1 - r[a]) * r[b] * k(a, b) for a in correct for b in wrong)
    return cc, ww, cw, len(correct), len(wrong)


def logits_case(k: int, dtype: torch.dtype, n: int = 64, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed + k)
    z = torch.tensor(3.0 * rng.standard_normal((n, k)), dtype=dtype)
    t = torch.tensor(rng.integers(0, k, n))
    return z, t


def as_ref(z: torch.Tensor) -> np.ndarray:
    return z.double().numpy()


CASES = [(k, dtype) for k in (10, 100) for dtype in (torch.float32, torch.float64)]


def assert_matches(ours_fn, ref_per_sample: np.ndarray):
    for reduction, ref in (("sum", ref_per_sample.sum()), ("mean", ref_per_sample.mean())):
        value = ours_fn(reduction).item()
        assert value == pytest.approx(ref, rel=RTOL), reduction
    np.testing.assert_allclose(ours_fn("none").double().numpy(), ref_per_sample, rtol=RTOL, atol=1e-7)


# ---------------------------------------------------------------- agreement with the authors' code


@pytest.mark.parametrize("k,dtype", CASES)
def test_focal_family_matches_reference(k, dtype):
    z, t = logits_case(k, dtype)
    zr, tr = as_ref(z), t.numpy()
    assert_matches(lambda r: cross_entropy(z, t, reduction=r), ref_focal(zr, tr, 0.0))
    for gamma in (1.0, 2.0, 3.0, 0.5):
        assert_matches(lambda r: focal_loss(z, t, gamma=gamma, reduction=r), ref_focal(zr, tr, gamma))
    assert_matches(lambda r: focal_loss_sd(z, t, reduction=r), ref_flsd(zr, tr))
    # the code's "FLSD-52": the same rule with the `--gamma` argument 2 above p_t = 0.5
    assert_matches(lambda r: focal_loss_sd(z, t, gammas=(5, 3, 2), reduction=r), ref_flsd(zr, tr, gamma=2.0))
    lp = log_softmax_np(zr)[np.arange(len(tr)), tr]
    assert_matches(lambda r: inverse_focal_loss(z, t, gamma=1.5, reduction=r), ref_adafocal_per_sample(lp, -1.5))


@pytest.mark.parametrize("k,dtype", CASES)
def test_dual_focal_family_matches_reference(k, dtype):
    z, t = logits_case(k, dtype)
    zr, tr = as_ref(z), t.numpy()
    assert_matches(lambda r: dual_focal_loss(z, t, gamma=5.0, reduction=r), ref_dual(zr, tr, 5.0, lambda b: b[0]))
    assert_matches(lambda r: dual_focal_loss_sd(z, t, reduction=r), ref_dual_sd(zr, tr))
    # Table 4 ablations (dual_focal_loss_ablation.py). The code's "mean" variants take
    # torch.mean over the *batch* of the summed ranks (one scalar for all samples); calibnb and
    # this reference take the per-sample mean that the paper's table describes.
    picks = {
        "second": lambda b: b[1],
        "third": lambda b: b[2],
        "mean_top2": lambda b: (b[0] + b[1]) / 2,
        "mean_top3": lambda b: (b[0] + b[1] + b[2]) / 3,
        0.1: lambda b: 0.1,
        0.2: lambda b: 0.2,
    }
    for dual, pick in picks.items():
        assert_matches(lambda r: dual_focal_loss(z, t, gamma=2.0, dual=dual, reduction=r), ref_dual(zr, tr, 2.0, pick))
    mean_all = []
    for pk, below in ref_dual_parts(zr, tr):
        values = [v for v in below if v > 0]
        mean_all.append(-((1 - pk + (sum(values) / max(len(values), 1))) ** 2.0) * np.log(pk))
    assert_matches(lambda r: dual_focal_loss(z, t, gamma=2.0, dual="mean_all", reduction=r), np.array(mean_all))


@pytest.mark.parametrize("k,dtype", CASES)
def test_fcl_and_baselines_match_reference(k, dtype):
    z, t = logits_case(k, dtype)
    zr, tr = as_ref(z), t.numpy()
    for gamma, lam in ((2.0, 0.5), (4.0, 1.5), (5.0, 4.5)):
        assert_matches(
            lambda r: focal_calibration_loss(z, t, gamma=gamma, lam=lam, reduction=r), ref_fcl(zr, tr, gamma, lam)
        )
    l1 = ref_focal(zr, tr, 2.0) + 0.5 * 2 * (1 - np.exp(log_softmax_np(zr)[np.arange(len(tr)), tr]))
    assert_matches(lambda r: focal_calibration_loss(z, t, gamma=2.0, lam=0.5, norm="l1", reduction=r), l1)
    assert_matches(lambda r: brier_loss(z, t, reduction=r), ref_brier(zr, tr))
    assert_matches(lambda r: label_smoothing_loss(z, t, alpha=0.05, reduction=r), ref_label_smoothing(zr, tr, 0.05))


@pytest.mark.parametrize("k,dtype", CASES)
def test_mmce_matches_reference_with_single_normalisation(k, dtype):
    z, t = logits_case(k, dtype, seed=3)
    t[: len(t) // 2] = z[: len(t) // 2].argmax(1)  # half correct, so both sets are populated
    zr, tr = as_ref(z), t.numpy()
    cc, ww, cw, m, n = ref_mmce_blocks(zr, tr)
    ce = ref_focal(zr, tr, 0.0)
    # calibnb (Kumar et al.'s definition): blocks / m^2, n^2, mn once
    ours_mmce = np.sqrt(cc / m**2 + ww / n**2 - 2 * cw / (m * n) + 1e-10)
    # the reference code: torch.mean over each block (already / m^2 ...) and then / (m^2 + 1e-5) again
    code_squared = cc / m**2 / (m * m + 1e-5) + ww / n**2 / (n * n + 1e-5) - 2 * cw / (m * n) / (m * n + 1e-5)
    code_mmce = np.sqrt(code_squared + 1e-10)
    assert ours_mmce != pytest.approx(code_mmce, rel=1e-2)  # the double normalisation matters
    assert mmce_loss(z, t, lam=2.0).item() == pytest.approx(ce.mean() + 2.0 * ours_mmce, rel=RTOL)
    # the training objective of the reference loop: N * (mean CE + lam * MMCE_w)
    objective = len(tr) * (ce.mean() + 2 * ours_mmce)
    assert mmce_loss(z, t, lam=2.0, reduction="sum").item() == pytest.approx(objective, rel=RTOL)
    assert mmce_loss(z, t, reduction="none").mean().item() == pytest.approx(mmce_loss(z, t).item(), rel=RTOL)


def test_mmce_is_zero_when_all_predictions_are_right_or_all_wrong():
    z, _ = logits_case(10, torch.float64, n=16)
    right = z.argmax(1)
    wrong = (right + 1) % 10
    for t in (right, wrong):
        assert mmce_loss(z, t, lam=5.0).item() == pytest.approx(cross_entropy(z, t).item(), rel=1e-12)


@pytest.mark.parametrize("k,dtype", CASES)
@pytest.mark.parametrize("base", ["focal", "dual"])
def test_adafocal_forward_matches_reference(k, dtype, base):
    z, t = logits_case(k, dtype, seed=5)
    zr, tr = as_ref(z), t.numpy()
    edges = np.array([0.0, 0.05, 0.1, 0.3, 0.6, 0.9, 1.0])
    gammas = np.array([20.0, 5.0, -0.2, 1.0, 0.0, -2.0])
    logp = log_softmax_np(zr)
    p = np.exp(logp)
    ref = []
    for i in range(len(tr)):
        pk = p[i, tr[i]]
        pj = max([v for v in p[i] if v < pk], default=0.0) if base == "dual" else 0.0
        d = pk - pj
        # 3mcloud/adafocal AdaFocal.get_gamma_per_sample: [lo, hi) bins, below the first upper
        # edge -> bin 0, at or above the last lower edge -> last bin
        last = len(gammas) - 1
        b = next(
            j for j in range(len(gammas)) if (j == 0 and d < edges[1]) or j == last or edges[j] <= d < edges[j + 1]
        )
        g = gammas[b]
        # AdaDualFocal (Linwei94 Losses/adadualfocal.py) has no inverse branch; calibnb's
        # negative gamma uses (1 + p_k - p_j)^|g|, the sign rule of 3mcloud's AdaFocal.forward
        ref.append(-((1 - np.sign(g) * d + 1e-20) ** abs(g)) * logp[i, tr[i]])
    ref = np.array(ref)
    g_t, e_t = torch.tensor(gammas), torch.tensor(edges)
    assert_matches(lambda r: adafocal_loss(z, t, g_t, e_t, base=base, reduction=r), ref)


# ---------------------------------------------------------------- the papers' reductions


def test_gamma_zero_and_lambda_zero_reduce_to_simpler_losses():
    z, t = logits_case(10, torch.float64, seed=7)
    ce = F.cross_entropy(z, t, reduction="none")
    torch.testing.assert_close(focal_loss(z, t, gamma=0.0, reduction="none"), ce)
    torch.testing.assert_close(dual_focal_loss(z, t, gamma=0.0, reduction="none"), ce)
    torch.testing.assert_close(inverse_focal_loss(z, t, gamma=0.0, reduction="none"), ce)
    zero = AdaFocalLoss(n_bins=5, gamma_init=0.0, reduction="none")
    torch.testing.assert_close(zero(z, t), ce)
    torch.testing.assert_close(AdaFocalLoss(gamma_init=0.0, base="dual", reduction="none")(z, t), ce)
    torch.testing.assert_close(label_smoothing_loss(z, t, alpha=0.0, reduction="none"), ce)
    torch.testing.assert_close(mmce_loss(z, t, lam=0.0, reduction="none"), ce)
    for gamma in (0.5, 2.0, 3.0):
        fl = focal_loss(z, t, gamma=gamma, reduction="none")
        torch.testing.assert_close(focal_calibration_loss(z, t, gamma=gamma, lam=0.0, reduction="none"), fl)
        torch.testing.assert_close(focal_loss_sd(z, t, gammas=(gamma,) * 3, reduction="none"), fl)
        torch.testing.assert_close(focal_loss_sd(z, t, gammas=(gamma,), thresholds=(), reduction="none"), fl)
        torch.testing.assert_close(dual_focal_loss(z, t, gamma=gamma, dual=0.0, reduction="none"), fl)
        torch.testing.assert_close(AdaFocalLoss(gamma_init=gamma, reduction="none")(z, t), fl)
    fcl_ce = focal_calibration_loss(z, t, gamma=0.0, lam=1.0, reduction="none")
    torch.testing.assert_close(fcl_ce, ce + brier_loss(z, t, reduction="none"))
    inverse = adafocal_loss(z, t, torch.tensor([-1.5]), torch.tensor([0.0, 1.0]), reduction="none")
    torch.testing.assert_close(inverse, inverse_focal_loss(z, t, gamma=1.5, reduction="none"))


def test_gradients_of_the_reductions_agree_too():
    z, t = logits_case(10, torch.float64, seed=8)
    grads = []
    candidates = (
        lambda x: F.cross_entropy(x, t),
        lambda x: focal_loss(x, t, gamma=0.0),
        lambda x: dual_focal_loss(x, t, gamma=0.0),
    )
    for fn in candidates:
        x = z.clone().requires_grad_()
        fn(x).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[1], grads[0])
    torch.testing.assert_close(grads[2], grads[0])


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_reductions_are_consistent(name):
    z, t = logits_case(10, torch.float64, seed=9)
    t[:20] = z[:20].argmax(1)
    per_sample = get_loss(name, reduction="none")(z, t)
    assert per_sample.shape == (len(t),)
    torch.testing.assert_close(get_loss(name, reduction="mean")(z, t), per_sample.mean())
    torch.testing.assert_close(get_loss(name, reduction="sum")(z, t), per_sample.sum())


def test_dual_probability_follows_the_notes_examples():
    # (probabilities, target, expected p_j) from notes/reference-implementations.md
    examples = [
        ([0.5, 0.3, 0.2], 1, 0.2),
        ([0.2, 0.5, 0.3], 1, 0.3),
        ([0.2, 0.3, 0.5], 0, 0.0),
        ([0.4, 0.4, 0.2], 0, 0.2),  # the tie with p_k is excluded
        ([0.6, 0.2, 0.2], 1, 0.0),
    ]
    for probs, target, expected in examples:
        logp = torch.log(torch.tensor([probs], dtype=torch.float64))
        _, p_j = target_and_dual(logp, torch.tensor([target]))
        assert p_j.item() == pytest.approx(expected, abs=1e-12)
    logp = torch.log(torch.tensor([[0.05, 0.3, 0.1, 0.4, 0.15]], dtype=torch.float64))
    t = torch.tensor([1])
    expected = {"largest": 0.15, "second": 0.1, "third": 0.05, "mean_top2": 0.125, "mean_top3": 0.1, "mean_all": 0.1}
    for dual, value in expected.items():
        assert target_and_dual(logp, t, dual)[1].item() == pytest.approx(value, abs=1e-12), dual
    assert target_and_dual(logp, torch.tensor([4]), "third")[1].item() == 0.0  # nothing below p = 0.05


def test_gradient_flows_through_the_dual_probability():
    z = torch.tensor([[2.0, 1.5, -1.0]], dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0])
    dual_focal_loss(z, t, gamma=2.0).backward()
    with_pj = z.grad.clone()
    z.grad = None
    p = torch.softmax(z, 1)[0].detach()
    offset = float(p[1])  # the same p_j, but as a constant
    dual_focal_loss(z, t, gamma=2.0, dual=offset).backward()
    assert not torch.allclose(with_pj, z.grad)


# ---------------------------------------------------------------- registry and modules


def test_registry_names_are_the_functional_names():
    expected = {
        "cross_entropy", "focal_loss", "focal_loss_sd", "inverse_focal_loss", "dual_focal_loss",
        "dual_focal_loss_sd", "focal_calibration_loss", "brier_loss", "label_smoothing_loss",
        "mmce_loss", "adafocal", "calfocal",
    }
    assert set(LOSSES) == expected
    loss = get_loss("focal_loss", gamma=2.0)
    assert isinstance(loss, FocalLoss) and loss.gamma == 2.0
    z, t = logits_case(10, torch.float32)
    torch.testing.assert_close(loss(z, t), focal_loss(z, t, gamma=2.0))
    assert "gamma=2.0" in repr(loss)


def test_adafocal_state_travels_with_the_module():
    loss = get_loss("adafocal", n_bins=4)
    state = loss.state_dict()
    assert set(state) == {"gammas", "edges", "_extra_state"}  # the extra state is the update history
    assert state["gammas"].tolist() == [1.0] * 4
    assert state["edges"].tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert state["_extra_state"] == []
    loss.update(np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.7, 0.3]]), np.array([0, 1, 1, 0]))
    again = get_loss("adafocal", n_bins=4)
    again.load_state_dict(loss.state_dict())
    assert again.gammas.tolist() == loss.gammas.tolist() != [1.0] * 4
    assert len(again.history) == 1
    for key, value in loss.history[0].items():
        np.testing.assert_array_equal(again.history[0][key], value)


# ---------------------------------------------------------------- bad input


BAD_INPUTS = [
    (torch.tensor([[0.0, float("nan")]]), torch.tensor([0]), ValueError, "logits contains NaN or inf"),
    (torch.tensor([[0.0, float("inf")]]), torch.tensor([0]), ValueError, "logits contains NaN or inf"),
    (torch.tensor([[0.0, -float("inf")]]), torch.tensor([0]), ValueError, "logits contains NaN or inf"),
    (torch.zeros(2, 3), torch.tensor([0, 3]), ValueError, r"targets must lie in \[0, 3\)"),
    (torch.zeros(2, 3), torch.tensor([-1, 0]), ValueError, r"targets must lie in \[0, 3\)"),
    (torch.zeros(2, 3), torch.tensor([0.0, 1.0]), TypeError, "targets must be integer"),
    (torch.zeros(2, 3), torch.tensor([True, False]), TypeError, "targets must be integer"),
    (torch.zeros(2, 3), torch.tensor([0, 1, 2]), ValueError, r"targets must have shape \(2,\)"),
    (torch.zeros(3), torch.tensor([0, 1, 2]), ValueError, "logits must be 2-D"),
    (torch.zeros(2, 1), torch.tensor([0, 0]), ValueError, "at least 2 classes"),
    (torch.zeros(0, 3), torch.zeros(0, dtype=torch.long), ValueError, "logits is empty"),
    (torch.zeros(2, 3, dtype=torch.long), torch.tensor([0, 1]), TypeError, "logits must have a floating dtype"),
    (np.zeros((2, 3)), torch.tensor([0, 1]), TypeError, "logits must be a torch.Tensor"),
]


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("logits,targets,error,message", BAD_INPUTS)
def test_bad_input_is_refused_with_a_clear_message(name, logits, targets, error, message):
    with pytest.raises(error, match=message):
        get_loss(name)(logits, targets)


BAD_PARAMS = [
    ("focal_loss", {"gamma": -1.0}, "gamma must be >= 0"),
    ("inverse_focal_loss", {"gamma": -0.5}, "gamma must be >= 0"),
    ("dual_focal_loss", {"gamma": -2.0}, "gamma must be >= 0"),
    ("dual_focal_loss", {"dual": "fourth"}, "dual must be one of"),
    ("dual_focal_loss", {"dual": 1.5}, "dual must be <= 1"),
    ("focal_calibration_loss", {"lam": -0.1}, "lam must be >= 0"),
    ("focal_calibration_loss", {"norm": "l3"}, "norm must be one of"),
    ("focal_loss_sd", {"gammas": (5.0, 3.0)}, "gammas needs one entry more than thresholds"),
    ("focal_loss_sd", {"thresholds": (0.5, 0.2)}, "strictly increasing"),
    ("focal_loss_sd", {"gammas": (5.0, -3.0, 3.0)}, r"gammas\[1\] must be >= 0"),
    ("mmce_loss", {"lam": -2.0}, "lam must be >= 0"),
    ("label_smoothing_loss", {"alpha": 1.5}, "alpha must be <= 1"),
    ("adafocal", {"lam": -1.0}, "lam must be >= 0"),
    ("adafocal", {"n_bins": 0}, "n_bins must be >= 1"),
    ("adafocal", {"gamma_init": 50.0}, r"gamma_init must lie in \[gamma_min, gamma_max\] = \[-2, 20\], got 50"),
    ("adafocal", {"base": "triple"}, "base must be one of"),
    ("calfocal", {"case": 3}, "case must be one of"),
    ("cross_entropy", {"reduction": "avg"}, "reduction must be one of"),
]


@pytest.mark.parametrize("name,params,message", BAD_PARAMS)
def test_bad_hyper_parameters_fail_at_construction(name, params, message):
    with pytest.raises(ValueError, match=message):
        get_loss(name, **params)


def test_unknown_names_and_parameters():
    with pytest.raises(ValueError, match="name must be one of"):
        get_loss("focal")
    with pytest.raises(TypeError):
        get_loss("focal_loss", gama=2.0)


# ---------------------------------------------------------------- loss curves for the figures


def test_loss_along_pt_gives_the_analytic_focal_derivative():
    from calibnb.losses import loss_along_pt

    p = np.linspace(0.05, 0.95, 19)
    for gamma in (0.0, 1.0, 3.0, 5.0):
        values, grads = loss_along_pt(lambda z, t: focal_loss(z, t, gamma=gamma, reduction="none"), p)
        np.testing.assert_allclose(values, -((1 - p) ** gamma) * np.log(p), rtol=1e-12)
        expected = gamma * (1 - p) ** (gamma - 1) * np.log(p) - (1 - p) ** gamma / p if gamma else -1 / p
        np.testing.assert_allclose(grads, expected, rtol=1e-9)
    # on a three-class path the dual probability is the larger of the two others below p_t
    values, _ = loss_along_pt(lambda z, t: dual_focal_loss(z, t, gamma=2.0, reduction="none"), p, rest=(0.7, 0.3))
    others = np.stack([0.7 * (1 - p), 0.3 * (1 - p)], axis=1)
    p_j = np.where(others < p[:, None], others, 0).max(axis=1)
    np.testing.assert_allclose(values, -((1 - p + p_j) ** 2) * np.log(p), rtol=1e-12)
    with pytest.raises(ValueError, match="p_t must be"):
        loss_along_pt(lambda z, t: focal_loss(z, t, reduction="none"), [0.0, 0.5])


MODULE_CASES = [(name, cls) for name, cls in LOSSES.items() if name not in ("adafocal", "calfocal")]


@pytest.mark.parametrize(("name", "cls"), MODULE_CASES, ids=[name for name, _ in MODULE_CASES])
def test_every_module_is_a_class_of_its_functional_equal_to_it(name, cls):
    """The module classes are ordinary classes a reader can open (``inspect.getsource``) that name
    their functional, whose parameters are the functional's, and whose output is the functional's."""
    source = inspect.getsource(cls)
    assert source.startswith(f"class {cls.__name__}(") and f"functional = staticmethod({name})" in source
    functional = getattr(calibnb.losses, name)
    assert cls.functional is functional
    public = list(inspect.signature(functional).parameters.values())[2:]
    ours = list(inspect.signature(cls).parameters.values())
    assert [(p.name, p.default) for p in ours] == [(p.name, p.default) for p in public]
    z, t = logits_case(10, torch.float64)
    for reduction in ("mean", "none"):
        torch.testing.assert_close(cls(reduction=reduction)(z, t), functional(z, t, reduction=reduction))
    assert repr(cls()).startswith(f"{cls.__name__}(") and "reduction='mean'" in repr(cls())
