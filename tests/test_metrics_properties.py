"""Properties of the calibration metrics, checked with hypothesis and on synthetic models."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from calibnb import metrics
from calibnb.metrics.toplabel import TIE_RTOL
from calibnb.synthetic import linear_overconfidence, linear_overconfidence_errors

BOUNDED = [
    lambda p, y: metrics.ece(p, y),
    lambda p, y: metrics.ece(p, y, binning="mass"),
    lambda p, y: metrics.ece(p, y, n_bins=4),
    metrics.mce,
    metrics.classwise_ece,
    metrics.debiased_ece,
    metrics.ece_sweep,
    metrics.smooth_ece,
]


@st.composite
def problems(draw, max_n=60, max_k=6, distinct=False):
    """Softmax of bounded logits and integer labels; ties possible unless ``distinct``."""
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(2, max_k))
    logits = draw(arrays(np.float64, (n, k), elements=st.floats(-8, 8), unique=distinct))
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    labels = draw(arrays(np.int64, n, elements=st.integers(0, k - 1)))
    return probs, labels


@pytest.mark.slow  # about 5 s: eight metrics per example
@settings(max_examples=100, deadline=None)
@given(problems())
def test_every_calibration_error_lies_in_0_1(problem):
    probs, labels = problem
    for metric in BOUNDED:
        assert 0.0 <= metric(probs, labels) <= 1.0


@pytest.mark.slow  # about 5 s: a full calibration report per example
@settings(max_examples=40, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_invariant_to_sample_permutation(problem, rnd):
    probs, labels = problem
    perm = np.array(rnd.sample(range(len(labels)), len(labels)))
    before = metrics.calibration_report(probs, labels)
    after = metrics.calibration_report(probs[perm], labels[perm])
    assert after == pytest.approx(before, abs=1e-12)


@pytest.mark.slow  # about 5 s: a full calibration report per example
@settings(max_examples=40, deadline=None)
@given(problems(distinct=True), st.randoms(use_true_random=False))
def test_invariant_to_a_consistent_relabelling_of_classes(problem, rnd):
    probs, labels = problem
    top2 = np.sort(probs, 1)[:, -2:]
    # a tie, or a near-tie within TIE_RTOL (which the metrics read as a tie), is broken by class order
    assume(np.all(top2[:, 1] - top2[:, 0] > 2 * TIE_RTOL * top2[:, 1]))
    k = probs.shape[1]
    new_of_old = np.array(rnd.sample(range(k), k))
    relabelled = np.empty_like(probs)
    relabelled[:, new_of_old] = probs
    before = metrics.calibration_report(probs, labels)
    after = metrics.calibration_report(relabelled, new_of_old[labels])
    assert after == pytest.approx(before, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(problems(), st.integers(1, 20))
def test_mce_bounds_ece_with_equal_width_bins(problem, n_bins):
    probs, labels = problem
    assert metrics.mce(probs, labels, n_bins) >= metrics.ece(probs, labels, n_bins) - 1e-15


def calibrated_binary(n, rng):
    """A calibrated model: confidence c ~ U(0.5, 1) for class 0, and P(label 0 | c) = c."""
    conf = rng.uniform(0.5, 1.0, n)
    probs = np.stack([conf, 1 - conf], axis=1)
    labels = (rng.random(n) >= conf).astype(np.int64)
    return probs, labels


@pytest.mark.parametrize("binning", ["width", "mass"])
def test_ece_of_a_calibrated_model_vanishes_as_n_grows(binning):
    rng = np.random.default_rng(0)
    means = []
    for n in (1_000, 10_000, 100_000):
        draws = [calibrated_binary(n, rng) for _ in range(5)]
        means.append(np.mean([metrics.ece(p, y, binning=binning) for p, y in draws]))
    # the plug-in bias shrinks like sqrt(n_bins / N): about a factor sqrt(10) per step
    assert means[0] > 2 * means[1] > 4 * means[2]
    assert means[2] < 0.01


def test_debiased_squared_ece_is_unbiased_on_a_calibrated_model():
    # With 15 equal-mass bins and N = 1500 the plug-in squared L2 error of a calibrated model has
    # mean about sum_b a_b (1 - a_b) / N ~ 1.5e-3 (pure noise), while the debiased one has mean 0
    # up to -(within-bin variance of the confidence) / (n_b - 1) ~ -1e-6 per bin.
    rng = np.random.default_rng(1)
    debiased, plugin = [], []
    for _ in range(400):
        probs, labels = calibrated_binary(1500, rng)
        debiased.append(metrics.debiased_ece(probs, labels, squared=True))
        table = metrics.reliability_table(probs, labels, binning="mass")
        plugin.append((table["count"] * table["gap"] ** 2).sum() / 1500)
    debiased, plugin = np.array(debiased), np.array(plugin)
    standard_error = debiased.std(ddof=1) / np.sqrt(len(debiased))
    assert abs(debiased.mean()) < 3 * standard_error
    assert plugin.mean() > 20 * standard_error
    # and the returned L2 value is the square root of the clipped estimate
    probs, labels = calibrated_binary(1500, rng)
    assert metrics.debiased_ece(probs, labels) == pytest.approx(
        np.sqrt(max(metrics.debiased_ece(probs, labels, squared=True), 0.0))
    )


def test_debiased_ece_recovers_a_known_miscalibration():
    # P(label 0 | c) = c - 0.1: the true top-label L2 calibration error is 0.1.
    rng = np.random.default_rng(2)
    estimates = []
    for _ in range(100):
        conf = rng.uniform(0.6, 1.0, 3000)
        labels = (rng.random(3000) >= conf - 0.1).astype(np.int64)
        estimates.append(metrics.debiased_ece(np.stack([conf, 1 - conf], 1), labels, squared=True))
    assert np.mean(estimates) == pytest.approx(0.01, abs=3 * np.std(estimates) / 10)


def test_ece_sweep_uses_the_last_monotone_number_of_bins():
    # correctness sorted by confidence: 0 0 1 0 1 1 1 1. Two bins: accuracies 1/4, 1 (monotone);
    # three (sizes 3, 3, 2): 1/3, 2/3, 1 (monotone); four (2 each): 0, 1/2, 1, 1 (monotone);
    # five (2, 2, 2, 1, 1): 0, 1/2, 1, 1, 1; six (2, 2, 1, 1, 1, 1): 0, 1/2, 1, 1, 1, 1;
    # seven (2, 1, 1, 1, 1, 1, 1): 0, 1, 0 -> not monotone, so 6 bins.
    conf = np.linspace(0.55, 0.9, 8)
    correct = np.array([0, 0, 1, 0, 1, 1, 1, 1])
    probs = np.stack([conf, 1 - conf], 1)
    value, n_bins = metrics.ece_sweep(probs, 1 - correct, return_n_bins=True)
    assert n_bins == 6
    sizes = [2, 2, 1, 1, 1, 1]
    bounds = np.cumsum([0] + sizes)
    gaps = [abs(conf[a:b].sum() - correct[a:b].sum()) for a, b in zip(bounds, bounds[1:])]
    expected = sum(gaps) / 8
    assert value == pytest.approx(expected, abs=1e-15)
    assert metrics.ece_sweep(probs, 1 - correct, max_bins=3, return_n_bins=True)[1] == 3


def test_estimators_on_the_chapter_overconfident_model():
    # nbs/measuring_calibration.md: conf ~ U(0.5, 1), P(right | c) = 0.5 + 0.8 (c - 0.5), so
    # CE_1 = 0.2 E[c - 0.5] = 0.05 and CE_2 = 0.2 sqrt(E[(c - 0.5)^2]) = 0.2 / sqrt(12).
    rng = np.random.default_rng(5)
    assert linear_overconfidence_errors(0.8) == pytest.approx((0.05, 0.2 / np.sqrt(12)), abs=1e-15)

    def draw(n):
        return linear_overconfidence(n, 0.8, rng)

    big = [draw(30_000) for _ in range(5)]
    for metric in (metrics.ece, metrics.adaptive_ece, metrics.ece_sweep):
        assert np.mean([metric(p, y) for p, y in big]) == pytest.approx(0.05, abs=0.004)
    assert np.mean([metrics.debiased_ece(p, y) for p, y in big]) == pytest.approx(
        0.2 / np.sqrt(12), abs=0.004
    )
    small = [draw(100) for _ in range(20)]
    assert np.mean([metrics.ece(p, y) for p, y in small]) > 0.05 + 0.03  # plug-in bias at N = 100
