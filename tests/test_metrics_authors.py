"""calibnb.metrics against the papers' own metric code, with every difference stated exactly.

The reference is ``torrvision/focal_calibration``, ``Metrics/metrics.py`` (Mukhoti et al. 2020;
copied by the DFL, AdaFocal and FCL repositories). The functions below re-implement *their*
procedures independently with plain loops in float64 (their torch modules work in float32 on
logits; here they take probabilities, which is what they softmax to):

* ``their_ece``     follows ``ECELoss.forward``: 15 bins from ``linspace(0, 1, 16)``, a sample is
  in a bin when ``conf > lo and conf <= hi``, weight = count / N, empty bins skipped.
* ``their_adaece``  follows ``AdaptiveECELoss``: edges ``np.interp(linspace(0, N, n_bins + 1),
  arange(N), sort(conf))`` and the same ``(lo, hi]`` test, so the lowest confidence is never in a
  bin while the weights still divide by N. calibnb drops nothing.
* ``their_classwise`` follows ``ClasswiseECELoss``: K = max(label) + 1 classes, per class the
  ``(lo, hi]`` test (a probability of exactly 0 is in no bin). calibnb uses K = probs.shape[1].
* ``their_mce``     follows ``maximum_calibration_error`` / ``_populate_bins``: bin index
  ``ceil(n_bins * conf - 1)``, max over all bins of |acc - conf| (empty bins count as 0).
"""

import math

import numpy as np
import pytest
import torch

from calibnb import metrics
from calibnb.metrics import top_label


def their_binned_ece(conf, correct, edges, n_total):
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        members = [i for i in range(len(conf)) if lo < conf[i] <= hi]
        if members:
            gap = abs(sum(conf[i] for i in members) - sum(correct[i] for i in members))
            total += gap / len(members) * (len(members) / n_total)
    return total


def their_ece(probs, labels, n_bins=15):
    conf, correct = top_label(probs, labels)
    return their_binned_ece(conf, correct, np.linspace(0, 1, n_bins + 1), len(conf))


def their_adaece(probs, labels, n_bins=15):
    conf, correct = top_label(probs, labels)
    n = len(conf)
    edges = np.interp(np.linspace(0, n, n_bins + 1), np.arange(n), np.sort(conf))
    return their_binned_ece(conf, correct, edges, n)


def their_classwise(probs, labels, n_bins=15):
    n_classes = int(max(labels)) + 1
    per_class = []
    for k in range(n_classes):
        hit = (np.asarray(labels) == k).astype(float)
        edges = np.linspace(0, 1, n_bins + 1)
        per_class.append(their_binned_ece(probs[:, k], hit, edges, len(hit)))
    return float(np.mean(per_class))


def their_mce(probs, labels, n_bins=15):
    conf, correct = top_label(probs, labels)
    count, conf_sum, acc_sum = [0] * n_bins, [0.0] * n_bins, [0.0] * n_bins
    for c, a in zip(conf, correct):
        b = int(math.ceil(n_bins * c - 1))
        count[b] += 1
        conf_sum[b] += c
        acc_sum[b] += a
    return max(abs(acc_sum[b] - conf_sum[b]) / count[b] if count[b] else 0.0 for b in range(n_bins))


def softmax_data(seed, n, k, scale=2.0):
    rng = np.random.default_rng(seed)
    probs = torch.softmax(torch.as_tensor(rng.normal(size=(n, k)) * scale), 1).numpy()
    labels = np.where(rng.random(n) < 0.7, probs.argmax(1), rng.integers(0, k, n))
    return probs, labels


@pytest.mark.parametrize("seed, n, k", [(0, 600, 10), (1, 301, 3), (2, 800, 2)])
def test_ece_and_mce_equal_theirs(seed, n, k):
    probs, labels = softmax_data(seed, n, k)
    assert metrics.ece(probs, labels) == pytest.approx(their_ece(probs, labels), abs=1e-12)
    assert metrics.mce(probs, labels) == pytest.approx(their_mce(probs, labels), abs=1e-12)


@pytest.mark.parametrize("seed, m, k", [(0, 40, 10), (1, 7, 3), (2, 100, 5)])
def test_their_adaece_drops_the_lowest_sample_when_n_is_one_past_a_multiple(seed, m, k):
    # With N = 15 m + 1 distinct confidences their np.interp edges put samples 1..m, m+1..2m, ...
    # of the sorted order into the 15 bins and no bin holds sample 0, while every weight divides
    # by N. So theirs = (N - 1) / N * calibnb's AdaECE of the N - 1 other samples, exactly.
    n = 15 * m + 1
    probs, labels = softmax_data(seed, n, k)
    conf, _ = top_label(probs, labels)
    keep = np.ones(n, bool)
    keep[conf.argmin()] = False
    ours_without_lowest = metrics.adaptive_ece(probs[keep], labels[keep])
    expected = (n - 1) / n * ours_without_lowest
    assert their_adaece(probs, labels) == pytest.approx(expected, abs=1e-12)
    # on the full data the two differ, by at most the dropped sample's share and re-binning
    ours, theirs = metrics.adaptive_ece(probs, labels), their_adaece(probs, labels)
    assert ours != pytest.approx(theirs, abs=1e-12)
    assert abs(ours - theirs) < 2 * 15 / n


@pytest.mark.parametrize("seed, n, k", [(0, 500, 10), (1, 300, 4)])
def test_classwise_ece_equals_theirs_when_every_class_occurs(seed, n, k):
    probs, labels = softmax_data(seed, n, k)
    labels[:k] = np.arange(k)  # max(label) + 1 == K
    assert metrics.classwise_ece(probs, labels) == pytest.approx(
        their_classwise(probs, labels), abs=1e-12
    )


def test_classwise_ece_their_k_drops_trailing_classes():
    # Labels never reach the last two classes: their K' = K - 2. A class that never occurs has
    # accuracy 0 in every bin, so its ECE is the mean of p_k; hence, exactly,
    # K * calibnb = K' * theirs + sum over the missing classes of mean(p_k).
    probs, labels = softmax_data(3, 400, 6)
    labels = labels % 4
    labels[:4] = np.arange(4)
    k, k_theirs = 6, 4
    expected = (k_theirs * their_classwise(probs, labels) + probs[:, 4:].mean(0).sum()) / k
    assert metrics.classwise_ece(probs, labels) == pytest.approx(expected, abs=1e-12)


def test_classwise_ece_exact_zero_probabilities():
    # Their (lo, hi] test skips p_k = 0 exactly; calibnb puts it in the first bin. A zero adds
    # nothing to a bin's confidence sum, so the two agree unless the zero is a true class's
    # probability: then calibnb also counts that hit, |0 + ... - 1| in the first bin.
    probs = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.2, 0.8, 0.0], [0.3, 0.3, 0.4]])
    labels = np.array([0, 1, 2, 2])  # sample 2 has true class 2 with probability 0
    # class 2: bin 0 (calibnb) holds p = 0, 0 (rows 0, 2) with one hit -> |0 - 1| / N = 1/4;
    # their bin 0 is empty; both have row 1 (0.5, no hit) and row 3 (0.4, hit).
    assert metrics.classwise_ece(probs, labels) == pytest.approx(
        their_classwise(probs, labels) + (1.0 / 4) / 3, abs=1e-12
    )
    labels_no_zero_hit = np.array([0, 1, 1, 2])
    assert metrics.classwise_ece(probs, labels_no_zero_hit) == pytest.approx(
        their_classwise(probs, labels_no_zero_hit), abs=1e-12
    )
