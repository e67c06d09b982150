"""Bayesian Binning into Quantiles (calibnb/calibration/bbq.py): the estimator equals the paper's
equations written as loops (bbq_reference), the marginal likelihood equals scipy's beta-binomial,
and the edge cases (one sample, ties, all right or all wrong, binary columns, torch) are finite."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, softmax
from scipy.stats import betabinom

from calibnb.calibration import BayesianBinningQuantiles
from calibnb.calibration.baselines import TOP_MARGIN, top_label_confidence
from calibnb.calibration.bbq import MIDPOINT_CLIP, bbq_bin_counts, bbq_reference
from calibnb.data import load_predictions
from calibnb.metrics import ece, nll
from calibnb.metrics.binning import mass_edges_sorted
from calibnb.runs.posthoc import calibration_split


def top_of(calibrator, logits):
    """The recalibrated top-label confidence of each row."""
    probs = calibrator.predict_proba(logits)
    return probs.max(axis=1)


# ---- the fast path is the paper's Eq. 1 and 2 -------------------------------------------------


@pytest.mark.filterwarnings("ignore::calibnb.calibration.ProbabilitiesAsLogitsWarning")  # rows like (0, 1)
@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 160), k=st.sampled_from([2, 3, 7]), seed=st.integers(0, 2**16),
       decimals=st.sampled_from([0, 1, 6]), strength=st.sampled_from([0.1, 2.0, 30.0]),
       factor=st.sampled_from([1.0, 3.0, 10.0]), accuracy=st.floats(0.0, 1.0))
def test_the_estimator_equals_the_reference(n, k, seed, decimals, strength, factor, accuracy):
    """Rounded logits give tied confidences (decimals=0: few distinct values)."""
    rng = np.random.default_rng(seed)
    z = np.round(rng.normal(scale=3.0, size=(n, k)), decimals)
    y = np.where(rng.random(n) < accuracy, z.argmax(axis=1), rng.integers(0, k, n))
    bbq = BayesianBinningQuantiles(prior_strength=strength, range_factor=factor).fit(z, y)
    conf, top = top_label_confidence(z)
    test = np.round(rng.normal(scale=3.0, size=(50, k)), decimals)
    expected = bbq_reference(conf, (top == y).astype(float), top_label_confidence(test)[0], strength, factor)
    np.testing.assert_allclose(top_of(bbq, test), np.clip(expected, (1 + TOP_MARGIN) / k, 1.0),
                               rtol=0, atol=1e-12)


def test_a_single_model_predicts_the_beta_posterior_mean():
    """Five samples: one model of one bin [0, 1], midpoint 1/2, so (k + α)/(n + α + β)."""
    z = np.array([[2.0, 0.0], [1.0, 0.0], [0.0, 3.0], [0.5, 0.0], [0.0, 0.2]])
    y = np.array([0, 1, 1, 0, 0])  # 3 of the 5 predictions right
    bbq = BayesianBinningQuantiles(prior_strength=4.0).fit(z, y)
    np.testing.assert_array_equal(bbq.n_bins_, [1])
    assert bbq.model_weights_.tolist() == [1.0]
    np.testing.assert_allclose(bbq.bin_probability_, [(3 + 4.0 * 0.5) / (5 + 4.0)], rtol=1e-15)
    # log P(D | M) of one bin: the beta-binomial pmf without its binomial coefficient
    log_ml = betabinom.logpmf(3, 5, 2.0, 2.0) - math.log(math.comb(5, 3))
    np.testing.assert_allclose(bbq.log_marginal_likelihood_, [log_ml], rtol=1e-12)


def test_every_model_scores_its_marginal_likelihood_and_the_weights_are_its_softmax():
    rng = np.random.default_rng(3)
    z = rng.normal(scale=2.0, size=(400, 4))
    y = np.where(rng.random(400) < 0.6, z.argmax(axis=1), rng.integers(0, 4, 400))
    bbq = BayesianBinningQuantiles().fit(z, y)
    conf, top = top_label_confidence(z)
    correct = (top == y).astype(float)
    np.testing.assert_array_equal(bbq.n_bins_, np.arange(1, 75))  # 400^(1/3) = 7.37: 1 .. 74 (<= 80)
    for t, n_bins in enumerate(bbq.n_bins_):
        edges = mass_edges_sorted(np.sort(conf), int(n_bins))
        total = 0.0
        for lo, hi in zip(edges[:-1], edges[1:]):
            in_bin = (conf > lo) & (conf <= hi) if lo > 0 else conf <= hi
            n, m = int(in_bin.sum()), int(correct[in_bin].sum())
            p = np.clip((lo + hi) / 2, MIDPOINT_CLIP, 1 - MIDPOINT_CLIP)
            total += betabinom.logpmf(m, n, 2.0 * p, 2.0 * (1 - p)) - math.log(math.comb(n, m))
        np.testing.assert_allclose(bbq.log_marginal_likelihood_[t], total, rtol=1e-10)
    weights = np.exp(bbq.log_marginal_likelihood_ - bbq.log_marginal_likelihood_.max())
    np.testing.assert_allclose(bbq.model_weights_, weights / weights.sum(), rtol=1e-10)
    assert bbq.model_weights_.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_paper_range_of_bin_counts():
    np.testing.assert_array_equal(bbq_bin_counts(5000)[[0, -1]], [1, 171])  # 17.1 / 10 .. 10 · 17.1
    np.testing.assert_array_equal(bbq_bin_counts(50_000)[[0, -1]], [3, 369])
    np.testing.assert_array_equal(bbq_bin_counts(8000)[[0, -1]], [2, 200])  # cbrt(8000) is exactly 20
    np.testing.assert_array_equal(bbq_bin_counts(1), [1])
    np.testing.assert_array_equal(bbq_bin_counts(27, range_factor=1.0), [3])


# ---- behaviour ---------------------------------------------------------------------------------


def test_a_calibrated_binary_classifier_stays_calibrated():
    """Labels drawn from the model's own probabilities: BBQ's map stays within a bin's step of the
    identity (a dozen bins win), and its ECE on fresh samples is that of the calibrated model."""
    rng = np.random.default_rng(0)

    def sample(n):
        z = rng.normal(scale=2.0, size=n)
        return z, (rng.random(n) < expit(z)).astype(int)

    bbq = BayesianBinningQuantiles().fit(*sample(20_000))
    z, y = sample(20_000)
    calibrated = np.stack([1 - expit(z), expit(z)], axis=1)
    gap = np.abs(top_of(bbq, z) - calibrated.max(axis=1))
    assert gap.mean() < 0.015 and gap.max() < 0.06
    assert ece(bbq.predict_proba(z), y) < ece(calibrated, y) + 0.002


def test_it_fixes_an_over_confident_cifar_network():
    """The shipped CIFAR-100 DenseNet, calibrated on the post-hoc study's first half of split 0."""
    logits, labels = load_predictions("cifar100-densenet-bc-100")
    logits = logits.astype(np.float64)
    calibrate, test = calibration_split(0, len(labels))
    probs = BayesianBinningQuantiles().fit(logits[calibrate], labels[calibrate]).predict_proba(logits[test])
    before = softmax(logits[test], axis=1)
    assert ece(before, labels[test]) > 0.13 and ece(probs, labels[test]) < 0.025
    assert nll(probs, labels[test]) < nll(before, labels[test]) - 0.15
    np.testing.assert_array_equal(probs.argmax(axis=1), before.argmax(axis=1))


def test_the_fit_does_not_depend_on_the_order_of_the_samples():
    rng = np.random.default_rng(1)
    z = np.round(rng.normal(size=(300, 3)), 1)
    y = rng.integers(0, 3, 300)
    order = rng.permutation(300)
    a, b = BayesianBinningQuantiles().fit(z, y), BayesianBinningQuantiles().fit(z[order], y[order])
    np.testing.assert_array_equal(a.edges_, b.edges_)
    np.testing.assert_allclose(a.bin_probability_, b.bin_probability_, rtol=0, atol=1e-15)


@pytest.mark.parametrize("labels, low, high", [("right", 0.9, 1.0), ("wrong", 0.0, 0.1)])
def test_all_right_or_all_wrong_stays_finite_and_inside_zero_one(labels, low, high):
    rng = np.random.default_rng(2)
    z = rng.normal(scale=3.0, size=(1000, 5))
    y = z.argmax(axis=1) if labels == "right" else (z.argmax(axis=1) + 1) % 5
    bbq = BayesianBinningQuantiles().fit(z, y)
    assert np.isfinite(bbq.log_marginal_likelihood_).all() and (bbq.log_marginal_likelihood_ <= 0).all()
    assert low < bbq.bin_probability_.min() and bbq.bin_probability_.max() < high
    probs = bbq.predict_proba(z)
    assert np.isfinite(probs).all() and np.allclose(probs.sum(axis=1), 1.0)


def test_ties_confidences_of_one_and_a_single_sample():
    tied = BayesianBinningQuantiles().fit(np.zeros((50, 3)), np.r_[np.zeros(40, dtype=int), np.ones(10, dtype=int)])
    assert tied.edges_.tolist() == [0.0, 1 / 3, 1.0]  # every model's bins collapse onto the one value
    probs = tied.predict_proba(np.zeros((2, 3)))  # 40 of 50 right: close to 0.8, class 0 kept
    assert probs.argmax(axis=1).tolist() == [0, 0] and 0.75 < probs[0, 0] < 0.8
    sharp = np.array([[800.0, 0.0], [700.0, 0.0], [0.0, 900.0], [1.0, 0.0]] * 10)  # confidence 1.0
    bbq = BayesianBinningQuantiles().fit(sharp, np.array([0, 0, 1, 1] * 10))
    assert np.isfinite(bbq.log_marginal_likelihood_).all() and bbq.edges_[-1] == 1.0
    assert np.isfinite(bbq.predict_proba(sharp * 10)).all()
    one = BayesianBinningQuantiles().fit([[2.0, 0.0, 0.0]], [0])
    np.testing.assert_allclose(one.bin_probability_, [(1 + 2.0 * 0.5) / 3])


def test_binary_columns_two_columns_and_torch_agree():
    rng = np.random.default_rng(4)
    z = rng.normal(scale=2.0, size=200)
    y = (rng.random(200) < expit(z / 2)).astype(int)
    column = BayesianBinningQuantiles().fit(z, y)
    pair = BayesianBinningQuantiles().fit(np.stack([np.zeros(200), z], axis=1), y)
    tensor = BayesianBinningQuantiles().fit(torch.from_numpy(z[:, None]), torch.from_numpy(y))
    assert column.n_features_in_ == 1 and pair.n_features_in_ == 2
    np.testing.assert_allclose(column.predict_proba(z), pair.predict_proba(np.stack([np.zeros(200), z], axis=1)),
                               rtol=0, atol=1e-15)
    np.testing.assert_array_equal(tensor.predict_proba(torch.from_numpy(z)), column.predict_proba(z))


# ---- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("params, error, message", [
    ({"prior_strength": 0.0}, ValueError, "prior_strength must be > 0"),
    ({"prior_strength": "2"}, TypeError, "prior_strength must be a real number"),
    ({"prior_strength": float("nan")}, ValueError, "prior_strength must be finite"),
    ({"range_factor": 0.5}, ValueError, "range_factor must be >= 1"),
    ({"range_factor": True}, TypeError, "range_factor must be a real number"),
])
def test_bad_hyper_parameters_are_refused_by_name(params, error, message):
    with pytest.raises(error, match=message):
        BayesianBinningQuantiles(**params).fit(5 * np.eye(3), [0, 1, 2])


def test_a_mistyped_hyper_parameter_is_refused():
    with pytest.raises(TypeError, match="prior_strenght"):
        BayesianBinningQuantiles(prior_strenght=2.0)


def test_the_reference_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match="correct has 2 entries but confidences has 3"):
        bbq_reference([0.5, 0.6, 0.7], [1, 0], [0.5])
    with pytest.raises(ValueError, match="confidences"):
        bbq_reference([0.5, 1.5], [1, 0], [0.5])
