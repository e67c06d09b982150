"""calibnb.metrics agrees with independent implementations on continuous data.

Peers (test-only dependencies): torchmetrics (top-label ECE / MCE, computes in float32, bins
``[lo, hi)``), the ``calibration`` package of Kumar et al. 2019 (``get_ece``, ``get_ece_em``,
marginal ECE, debiased top-label L2), ``relplot`` of Błasiok & Nakkiran (smECE) and
scikit-learn (log-loss, Brier, ROC AUC). On continuous confidences no value sits on a bin edge,
so the edge conventions cannot differ and the numbers must agree to rounding.
"""

import numpy as np
import pytest
import torch
from calibration import get_ece, get_ece_em
from calibration.utils import get_top_calibration_error, lower_bound_scaling_top_ce
from relplot import smECE
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
from torchmetrics.functional.classification import multiclass_calibration_error

from calibnb import metrics
from calibnb.metrics import top_label

SETTINGS = [(0, 2000, 10, 2.0), (1, 500, 3, 1.0), (2, 3000, 100, 4.0), (3, 1000, 2, 3.0)]


def softmax_data(seed, n, k, scale, dtype=np.float64):
    """Softmax of scaled Gaussian logits; labels agree with the argmax 70 % of the time."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * scale
    probs = torch.softmax(torch.as_tensor(logits), dim=1).numpy().astype(dtype)
    labels = np.where(rng.random(n) < 0.7, probs.argmax(1), rng.integers(0, k, n))
    return probs, labels


@pytest.mark.parametrize("seed, n, k, scale", SETTINGS)
@pytest.mark.parametrize("norm, ours", [("l1", metrics.ece), ("max", metrics.mce)])
def test_ece_and_mce_match_torchmetrics(seed, n, k, scale, norm, ours):
    # float32 inputs so that both sides bin the very same confidences; torchmetrics sums in float32
    probs, labels = softmax_data(seed, n, k, scale, np.float32)
    theirs = multiclass_calibration_error(
        torch.from_numpy(probs), torch.from_numpy(labels), num_classes=k, n_bins=15, norm=norm
    ).item()
    assert ours(probs, labels, n_bins=15) == pytest.approx(theirs, abs=1e-5)


@pytest.mark.parametrize("seed, n, k, scale", SETTINGS)
@pytest.mark.parametrize("n_bins", [1, 10, 15])
def test_ece_matches_kumar_get_ece_and_get_ece_em(seed, n, k, scale, n_bins):
    probs, labels = softmax_data(seed, n, k, scale)
    width = get_ece(probs, labels, num_bins=n_bins)
    mass = get_ece_em(probs, labels, num_bins=n_bins)
    assert metrics.ece(probs, labels, n_bins=n_bins) == pytest.approx(width, abs=1e-12)
    assert metrics.ece(probs, labels, n_bins, binning="mass") == pytest.approx(mass, abs=1e-12)
    assert metrics.adaptive_ece(probs, labels, n_bins) == pytest.approx(mass, abs=1e-12)


@pytest.mark.parametrize("seed, n, k, scale", SETTINGS)
def test_classwise_ece_matches_kumar_marginal_ece(seed, n, k, scale):
    # Kumar's marginal ECE: per class, equal-width (lo, hi] bins on p_k vs 1[y = k], mean over k
    probs, labels = softmax_data(seed, n, k, scale)
    theirs = get_ece(probs, labels, num_bins=15, mode="marginal")
    assert metrics.classwise_ece(probs, labels) == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("seed, n, k, scale", SETTINGS)
def test_debiased_ece_matches_kumar_debiased_top_label_l2(seed, n, k, scale):
    probs, labels = softmax_data(seed, n, k, scale)
    theirs = lower_bound_scaling_top_ce(probs, labels, p=2, debias=True, num_bins=15)
    assert metrics.debiased_ece(probs, labels) == pytest.approx(theirs, abs=1e-12)
    # on continuous confidences their user-facing entry point takes the same branch
    assert metrics.debiased_ece(probs, labels) == pytest.approx(
        get_top_calibration_error(probs, labels, p=2, debias=True), abs=1e-12
    )


@pytest.mark.parametrize("seed, n, k, scale", SETTINGS + [(4, 20000, 10, 0.3), (5, 40, 5, 2.0)])
def test_smooth_ece_matches_relplot(seed, n, k, scale):
    probs, labels = softmax_data(seed, n, k, scale)
    conf, correct = top_label(probs, labels)
    theirs, their_sigma = smECE(conf, correct, return_width=True)
    ours, sigma = metrics.smooth_ece(probs, labels, return_sigma=True)
    assert sigma == their_sigma
    assert ours == pytest.approx(float(theirs), abs=1e-9)


def test_smooth_ece_matches_relplot_on_nearly_calibrated_data():
    # labels drawn from the model itself: the bandwidth search reaches relplot's floor of 1e-3
    rng = np.random.default_rng(7)
    probs, _ = softmax_data(7, 50000, 4, 1.0)
    labels = (rng.random((50000, 1)) > probs.cumsum(1)).sum(1)
    conf, correct = top_label(probs, labels)
    theirs, their_sigma = smECE(conf, correct, return_width=True)
    ours, sigma = metrics.smooth_ece(probs, labels, return_sigma=True)
    assert (sigma, ours) == (their_sigma, pytest.approx(float(theirs), abs=1e-9))


@pytest.mark.parametrize("seed, n, k, scale", SETTINGS)
def test_nll_brier_error_match_sklearn_and_torch(seed, n, k, scale):
    probs, labels = softmax_data(seed, n, k, scale)
    classes = np.arange(k)
    assert metrics.nll(probs, labels) == pytest.approx(log_loss(labels, probs, labels=classes))
    log_probs = torch.log(torch.from_numpy(probs))
    nll_torch = torch.nn.functional.nll_loss(log_probs, torch.from_numpy(labels))
    assert metrics.nll(probs, labels) == pytest.approx(nll_torch.item(), abs=1e-12)
    theirs = brier_score_loss(labels, probs, labels=classes, scale_by_half=False)
    assert metrics.brier(probs, labels) == pytest.approx(theirs, abs=1e-12)
    assert metrics.error_rate(probs, labels) == pytest.approx(np.mean(probs.argmax(1) != labels))


@pytest.mark.parametrize("score", ["entropy", "max_prob"])
def test_ood_auroc_matches_sklearn_with_ood_positive(score):
    p_in, _ = softmax_data(0, 700, 10, 3.0)
    p_out, _ = softmax_data(1, 400, 10, 1.0)  # flatter softmax: more uncertain
    if score == "entropy":
        s_in = -(p_in * np.log(p_in)).sum(1)
        s_out = -(p_out * np.log(p_out)).sum(1)
    else:
        s_in, s_out = -p_in.max(1), -p_out.max(1)
    assert metrics.ood_score(p_in, score) == pytest.approx(s_in, abs=1e-12)
    truth = np.r_[np.zeros(700), np.ones(400)]
    theirs = roc_auc_score(truth, np.r_[s_in, s_out])
    ours = metrics.ood_auroc(p_in, p_out, score=score)
    assert ours == pytest.approx(theirs, abs=1e-12)
    assert ours > 0.9  # the flatter outputs are recognised as OOD


def test_ood_auroc_counts_ties_as_one_half_like_sklearn():
    p_in = np.array([[0.5, 0.5], [0.9, 0.1], [0.7, 0.3]])
    p_out = np.array([[0.5, 0.5], [0.7, 0.3]])
    theirs = roc_auc_score([0, 0, 0, 1, 1], -np.r_[p_in.max(1), p_out.max(1)])
    assert metrics.ood_auroc(p_in, p_out, score="max_prob") == pytest.approx(theirs, abs=1e-12)
    assert metrics.ood_auroc(p_in, p_out, score="max_prob") == pytest.approx(4.0 / 6.0)


def test_smooth_ece_bandwidth_floor_matches_relplot_on_perfect_predictions():
    # zero residuals: smECE_σ = 0 for every σ, so the search ends at relplot's floor (2**-9)
    probs, labels = np.eye(4)[[0, 1, 2, 3, 1]], np.array([0, 1, 2, 3, 1])
    conf, correct = top_label(probs, labels)
    theirs, their_sigma = smECE(conf, correct, return_width=True)
    assert metrics.smooth_ece(probs, labels, return_sigma=True) == (float(theirs), their_sigma)
    assert their_sigma == 2.0**-9
