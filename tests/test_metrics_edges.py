"""Edge cases of the binned metrics, each pinned to a value worked out by hand."""

import numpy as np
import pytest
import torch

from calibnb import metrics
from calibnb.metrics import assign_bins, bin_edges, reliability_table

EDGES = np.linspace(0, 1, 16)


def binary(conf):
    """Two-class probabilities whose top-label confidence is ``conf`` (class 0 predicted)."""
    conf = np.asarray(conf, dtype=np.float64)
    return np.stack([conf, 1 - conf], axis=1)


def test_confidence_on_an_edge_belongs_to_the_bin_below():
    # 8/15 is the upper edge of bin 7 ((7/15, 8/15]); 0.54 lies in bin 8. torchmetrics' [lo, hi)
    # would put both in bin 8 and report |8/15 + 0.54 - 1| / 2 instead.
    probs, labels = binary([EDGES[8], 0.54]), np.array([0, 1])
    table = reliability_table(probs, labels)
    assert table["count"].tolist() == [0] * 7 + [1, 1] + [0] * 6
    expected = (abs(EDGES[8] - 1) + abs(0.54 - 0)) / 2
    assert metrics.ece(probs, labels) == pytest.approx(expected, abs=1e-15)
    assert metrics.mce(probs, labels) == pytest.approx(0.54, abs=1e-15)


@pytest.mark.parametrize("k", range(8, 16))
def test_every_edge_k_over_15_goes_to_bin_k_minus_1(k):
    assert assign_bins(np.array([EDGES[k]]), EDGES).item() == k - 1
    assert assign_bins(np.array([np.nextafter(EDGES[k], 2.0)]), EDGES).item() == min(k, 14)


def test_zero_and_one():
    assert assign_bins(np.array([0.0, 1.0]), EDGES).tolist() == [0, 14]
    one_hot = np.eye(3)[[0, 1, 2, 0]]
    right, wrong = np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
    table = reliability_table(one_hot, right)
    assert table["count"].iloc[-1] == 4
    for f in (metrics.ece, metrics.adaptive_ece, metrics.mce, metrics.classwise_ece):
        assert f(one_hot, right) == 0.0
    assert metrics.ece(one_hot, wrong) == metrics.mce(one_hot, wrong) == 1.0
    # classwise: each sample adds |1 - 0| to the top bin of its predicted class and |0 - 1| to
    # the bottom bin of its true class (gaps within a bin share a sign): 2N / N over K classes.
    assert metrics.classwise_ece(one_hot, wrong) == pytest.approx(2 / 3)
    assert metrics.brier(one_hot, wrong) == 2.0
    assert metrics.error_rate(one_hot, wrong) == 1.0
    assert metrics.nll(one_hot, wrong) == pytest.approx(-np.log(np.finfo(float).eps))
    assert metrics.nll(one_hot, right) == 0.0


@pytest.mark.parametrize("binning", ["width", "mass"])
def test_all_correct_and_all_wrong(binning):
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, 200)
    probs = binary(conf)
    # every bin's gap has the same sign, so ECE is the mean gap
    assert metrics.ece(probs, np.zeros(200, int), binning=binning) == pytest.approx(1 - conf.mean())
    assert metrics.ece(probs, np.ones(200, int), binning=binning) == pytest.approx(conf.mean())
    assert metrics.error_rate(probs, np.ones(200, int)) == 1.0


def test_one_sample():
    probs, labels = np.array([[0.7, 0.2, 0.1]]), np.array([1])
    for binning in ("width", "mass"):
        assert metrics.ece(probs, labels, binning=binning) == pytest.approx(0.7)
    assert metrics.mce(probs, labels) == pytest.approx(0.7)
    assert metrics.ece_sweep(probs, labels, return_n_bins=True) == (pytest.approx(0.7), 1)
    assert metrics.debiased_ece(probs, labels) == 0.0  # a bin needs two samples to debias
    assert metrics.classwise_ece(probs, labels) == pytest.approx((0.7 + 0.8 + 0.1) / 3)
    assert 0.0 <= metrics.smooth_ece(probs, labels) <= 1.0


def test_ties_in_equal_mass_binning_stay_together():
    # sizes 2 + 2 would split the three 0.6s; the edge is their midpoint 0.6 and (lo, hi] keeps
    # all of them in bin 0, leaving bin 1 with the single 0.9.
    probs, labels = binary([0.6, 0.9, 0.6, 0.6]), np.array([0, 0, 1, 0])
    assert bin_edges(probs.max(1), 2, "mass").tolist() == [0.0, 0.6, 1.0]
    table = reliability_table(probs, labels, n_bins=2, binning="mass")
    assert table["count"].tolist() == [3, 1]
    assert metrics.adaptive_ece(probs, labels, n_bins=2) == pytest.approx(
        (abs(1.8 - 2) + abs(0.9 - 1)) / 4
    )
    # all tied: one non-empty bin whatever n_bins is
    same = binary(np.full(10, 0.8))
    labels = np.array([0] * 6 + [1] * 4)
    assert metrics.adaptive_ece(same, labels) == pytest.approx(0.2)
    assert reliability_table(same, labels, binning="mass")["count"].max() == 10


def test_equal_mass_edges_are_midpoints_of_array_split_groups():
    conf = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.6])  # sorted: .1 .2 .3 .5 .6 .7 .9
    # array_split sizes 3, 2, 2 -> boundaries between .3|.5 and .6|.7
    assert bin_edges(conf, 3, "mass") == pytest.approx([0.0, 0.4, 0.65, 1.0])
    assert bin_edges(conf, 3, "width") == pytest.approx([0, 1 / 3, 2 / 3, 1])
    # more bins than samples: one sample per bin, the rest empty at the top
    bins = assign_bins(conf, bin_edges(conf, 10, "mass"))
    assert np.bincount(bins, minlength=10).tolist() == [1] * 7 + [0] * 3


def test_two_classes_and_one_bin():
    probs = binary([0.9, 0.8, 0.6, 0.55])
    labels = np.array([0, 1, 0, 0])
    gap = abs((0.9 + 0.8 + 0.6 + 0.55) / 4 - 0.75)
    for binning in ("width", "mass"):
        assert metrics.ece(probs, labels, n_bins=1, binning=binning) == pytest.approx(gap)
        assert metrics.mce(probs, labels, n_bins=1, binning=binning) == pytest.approx(gap)
    # K = 2 classwise: both columns are the same calibration problem mirrored, so equal ECEs
    assert metrics.classwise_ece(probs, labels, n_bins=1) == pytest.approx(gap)


def test_empty_bins_are_listed_with_nan_means_and_do_not_count():
    probs, labels = binary([0.95, 0.97, 0.55]), np.array([0, 1, 0])
    table = reliability_table(probs, labels)
    empty = table["count"] == 0
    assert empty.sum() == 13
    assert table.loc[empty, ["confidence", "accuracy", "gap"]].isna().all().all()
    full = table[~empty]
    weighted_gaps = (full["count"] * full["gap"].abs()).sum() / 3
    assert weighted_gaps == pytest.approx(metrics.ece(probs, labels))
    assert full["gap"].tolist() == pytest.approx([0.55 - 1, 0.96 - 0.5])  # signed conf - acc
    assert metrics.mce(probs, labels) == pytest.approx(0.46)


def test_torch_inputs_give_the_same_floats():
    rng = np.random.default_rng(1)
    probs = torch.softmax(torch.randn(300, 5, generator=torch.Generator().manual_seed(0)), 1)
    labels = torch.from_numpy(rng.integers(0, 5, 300))
    report = metrics.calibration_report(probs, labels)
    assert report == metrics.calibration_report(probs.numpy(), labels.numpy())
    assert all(type(v) is float for v in report.values())
