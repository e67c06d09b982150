"""Bad input to every metric raises an error whose message names the argument."""

import numpy as np
import pytest
import torch

from calibnb import metrics
from calibnb._validation import SIMPLEX_ATOL

GOOD_P = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4]])
GOOD_Y = np.array([0, 2, 2])

PAIR_METRICS = [
    metrics.ece,
    metrics.adaptive_ece,
    metrics.classwise_ece,
    metrics.mce,
    metrics.nll,
    metrics.brier,
    metrics.error_rate,
    metrics.smooth_ece,
    metrics.debiased_ece,
    metrics.ece_sweep,
    metrics.reliability_table,
    metrics.calibration_report,
]
BINNED = [
    metrics.ece,
    metrics.adaptive_ece,
    metrics.classwise_ece,
    metrics.mce,
    metrics.debiased_ece,
    metrics.reliability_table,
    metrics.calibration_report,
]


def with_entry(value, row=0, col=0):
    p = GOOD_P.copy()
    p[row, col] = value
    return p


@pytest.mark.parametrize("metric", PAIR_METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "probs, message",
    [
        (with_entry(np.nan), "probs contains NaN or inf"),
        (with_entry(np.inf), "probs contains NaN or inf"),
        (np.array([[1.2, -0.2], [0.5, 0.5], [0.5, 0.5]]), "probs contains negative"),
        (with_entry(0.7 + 2 * SIMPLEX_ATOL), "probs rows must sum to 1"),
        (GOOD_P[:, 0], r"labels must lie in \[0, 2\).*probs is one column"),  # binary: labels 0/1
        (GOOD_P[None], "probs must be 2-D"),
        (GOOD_P[:2], "labels has 3 entries but probs has 2 rows"),
    ],
)
def test_bad_probs(metric, probs, message):
    with pytest.raises(ValueError, match=message):
        metric(probs, GOOD_Y)


@pytest.mark.parametrize("metric", PAIR_METRICS, ids=lambda f: f.__name__)
def test_rows_within_the_documented_tolerance_are_accepted(metric):
    metric(with_entry(0.7 + SIMPLEX_ATOL / 2), GOOD_Y)  # 1e-4 absolute, see _validation


@pytest.mark.parametrize("metric", PAIR_METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "labels, error, message",
    [
        (np.array([0, 3, 1]), ValueError, r"labels must lie in \[0, 3\)"),
        (np.array([0, -1, 1]), ValueError, r"labels must lie in \[0, 3\)"),
        (np.array([0, 1]), ValueError, "labels has 2 entries"),
        (np.array([[0, 1, 2]]), ValueError, "labels must be 1-D"),
        (np.array([0.0, 1.5, 2.0]), TypeError, r"labels must be integer.*1\.5"),
        (torch.tensor([0.0, 1.0, 2.5]), TypeError, r"labels must be integer.*2\.5"),
    ],
)
def test_bad_labels(metric, labels, error, message):
    with pytest.raises(error, match=message):
        metric(GOOD_P, labels)


@pytest.mark.parametrize("metric", BINNED, ids=lambda f: f.__name__)
def test_bad_n_bins(metric):
    with pytest.raises(ValueError, match="n_bins must be >= 1"):
        metric(GOOD_P, GOOD_Y, n_bins=0)
    with pytest.raises(TypeError, match="n_bins must be an integer"):
        metric(GOOD_P, GOOD_Y, n_bins=2.5)


def test_bad_options():
    with pytest.raises(ValueError, match="binning must be one of"):
        metrics.ece(GOOD_P, GOOD_Y, binning="equal")
    with pytest.raises(ValueError, match="binning must be one of"):
        metrics.reliability_table(GOOD_P, GOOD_Y, binning="quantile")
    with pytest.raises(ValueError, match="max_bins must be >= 1"):
        metrics.ece_sweep(GOOD_P, GOOD_Y, max_bins=0)
    with pytest.raises(TypeError, match="squared must be a bool"):
        metrics.debiased_ece(GOOD_P, GOOD_Y, squared="yes")


def test_bad_binning_helpers():
    with pytest.raises(ValueError, match="confidences must lie in"):
        metrics.bin_edges(np.array([0.2, 1.5]), 3, "mass")
    with pytest.raises(ValueError, match="confidences contains NaN"):
        metrics.bin_edges(np.array([0.2, np.nan]), 3, "mass")
    with pytest.raises(ValueError, match="confidences must be a non-empty 1-D"):
        metrics.bin_edges(np.zeros((2, 2)), 3)
    with pytest.raises(ValueError, match="n_bins must be >= 1"):
        metrics.bin_edges(np.array([0.2]), 0)


def test_bad_ood_inputs():
    with pytest.raises(ValueError, match="probs_out contains NaN"):
        metrics.ood_auroc(GOOD_P, with_entry(np.nan))
    with pytest.raises(ValueError, match="probs_in rows must sum to 1"):
        metrics.ood_auroc(with_entry(0.9), GOOD_P)
    with pytest.raises(ValueError, match="probs_in has 3 classes but probs_out has 2"):
        metrics.ood_auroc(GOOD_P, np.array([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="score must be one of"):
        metrics.ood_auroc(GOOD_P, GOOD_P, score="energy")



def _absurd_bins_calls():
    from calibnb import calibration, losses, metrics

    p, y, z = np.full((4, 2), 0.5), np.zeros(4, int), np.zeros((4, 2))
    binned = [metrics.ece, metrics.adaptive_ece, metrics.classwise_ece, metrics.mce,
              metrics.reliability_table, metrics.debiased_ece, metrics.calibration_report]
    calibrators = [calibration.TemperatureScaling, calibration.FocalTemperatureScaling,
                   calibration.HistogramBinning]
    return ([(f.__name__, lambda n, f=f: f(p, y, n_bins=n)) for f in binned]
            + [(c.__name__, lambda n, c=c: c(n_bins=n).fit(z, y)) for c in calibrators]
            + [("AdaFocalLoss", lambda n: losses.AdaFocalLoss(n_bins=n))])


@pytest.mark.parametrize("name, call", _absurd_bins_calls(), ids=lambda v: v if isinstance(v, str) else "")
def test_an_absurd_bin_count_is_refused_before_allocating(name, call):
    """10**9 bins used to be allocated (and killed by the memory limit); now they are refused
    by name, at once (issue 18, item 5). A million bins is the most any estimator takes."""
    with pytest.raises(ValueError, match="n_bins must be at most 1,000,000, got 1,000,000,000"):
        call(10**9)


@pytest.mark.parametrize("metric", PAIR_METRICS, ids=lambda f: f.__name__)
def test_whole_number_float_labels_are_the_integers(metric):
    """Labels handed over as floats (pandas, scikit-learn) count as the integers they equal."""
    as_int = metric(GOOD_P, GOOD_Y)
    as_float = metric(GOOD_P, GOOD_Y.astype(np.float64))
    if hasattr(as_int, "equals"):  # the reliability table
        assert as_int.equals(as_float)
    else:
        assert as_float == as_int


@pytest.mark.parametrize("metric", PAIR_METRICS, ids=lambda f: f.__name__)
def test_one_column_of_probabilities_is_binary(metric):
    """``(N,)`` is the probability of class 1 (scikit-learn's y_prob, netcal's binary input)."""
    p1 = np.array([0.9, 0.2, 0.65, 0.4, 0.55])
    y = np.array([1, 0, 1, 1, 0])
    two = metric(np.column_stack([1 - p1, p1]), y)
    one = metric(p1, y)
    if hasattr(two, "equals"):
        assert two.equals(one)
    else:
        assert one == two
    with pytest.raises(ValueError, match=r"probs must be <= 1"):
        metric(p1 + 0.5, y)


def test_logits_given_as_probabilities_get_the_softmax_hint():
    rng = np.random.default_rng(0)
    logits, labels = rng.normal(scale=5.0, size=(50, 3)), rng.integers(0, 3, 50)
    with pytest.raises(ValueError, match=r"negative probabilities.*look like logits.*"
                                         r"scipy\.special\.softmax\(z, axis=1\)"):
        metrics.ece(logits, labels)
    with pytest.raises(ValueError, match=r"sum to 1.*look like logits"):  # positive logits
        metrics.nll(np.abs(logits), labels)
    with pytest.raises(ValueError, match=r"sum to 1 \(tolerance [^)]*\); row \d+ sums to [\d.]+$"):
        metrics.nll(GOOD_P * 0.5, GOOD_Y)  # within [0, 1]: no hint
