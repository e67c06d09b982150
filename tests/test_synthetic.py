"""calibnb.synthetic: the known-calibration model behind the measuring-calibration chapter."""

import numpy as np
import pytest

from calibnb.synthetic import linear_overconfidence, linear_overconfidence_errors


def test_linear_overconfidence_has_the_stated_accuracy_curve():
    probs, labels = linear_overconfidence(200_000, slope=0.6, seed=1)
    conf = probs[:, 0]
    assert probs.shape == (200_000, 2) and np.allclose(probs.sum(1), 1.0)
    assert conf.min() >= 0.5 and conf.max() <= 1.0
    high = conf > 0.9  # accuracy there is 0.5 + 0.6 * (E[c | c > 0.9] - 0.5) = 0.5 + 0.6 * 0.45
    assert (labels[high] == 0).mean() == pytest.approx(0.77, abs=0.01)
    gap = conf - (labels == 0)
    assert gap.mean() == pytest.approx(linear_overconfidence_errors(0.6)[0], abs=0.005)


def test_perfect_slope_is_calibrated_and_bad_arguments_are_named():
    assert linear_overconfidence_errors(1.0) == (0.0, 0.0)
    with pytest.raises(ValueError, match="slope must be <= 1"):
        linear_overconfidence(10, slope=1.5)
    with pytest.raises(ValueError, match="n_samples must be >= 1"):
        linear_overconfidence(0)
    a, _ = linear_overconfidence(5, seed=3)
    b, _ = linear_overconfidence(5, seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_overconfident_logits_follow_their_tempered_softmax():
    from scipy.special import softmax

    from calibnb.synthetic import overconfident_logits

    logits, labels, true_probs = overconfident_logits(20_000, n_classes=4, temperature=2.0, label_noise=0.1, seed=0)
    assert logits.shape == (20_000, 4) and labels.dtype == np.int64
    np.testing.assert_allclose(true_probs, 0.9 * softmax(logits / 2.0, axis=1) + 0.1 / 4)
    # labels are drawn from true_probs: the mean true probability of the drawn label matches
    # the mean of sum_k p_k^2 (its expectation)
    drawn = true_probs[np.arange(len(labels)), labels].mean()
    assert drawn == pytest.approx((true_probs**2).sum(1).mean(), abs=0.01)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        overconfident_logits(10, temperature=0.0)


def test_adafocal_stream_settles_each_bin_and_switches_the_under_confident_one():
    # nbs/adafocal.md: over-confident bins raise gamma to about offset / slope and oscillate
    # there; the under-confident bin crosses S_th = 0.2, switches to inverse focal loss and
    # settles at a negative gamma (fixed points 6.25, 3, 1.25, -0.75).
    from calibnb.synthetic import adafocal_stream

    offsets = np.array([0.25, 0.12, 0.05, -0.03])
    trace, gaps = adafocal_stream(offsets, slope=0.04, noise=0.01, epochs=150, seed=0)
    assert trace.shape == (151, 4) and gaps.shape == (150, 4)
    np.testing.assert_array_equal(trace[0], 1.0)
    settled = trace[-50:].mean(axis=0)  # measured: 6.28, 3.02, 1.20, -0.61
    np.testing.assert_allclose(settled[:3], offsets[:3] / 0.04, rtol=0.05)
    # the inverse-focal bin approaches -0.75 slowly (a multiplicative step on a small gap)
    assert (trace[-50:, 3] < 0).all() and -0.8 < settled[3] < -0.5
    assert np.abs(gaps[-50:].mean(axis=0)).max() < 0.01  # every gap closes
    exact, _ = adafocal_stream(offsets, noise=0.0, epochs=1500)
    np.testing.assert_allclose(exact[-1], offsets / 0.04, rtol=1e-3)
    with pytest.raises(ValueError, match="slope must be > 0"):
        adafocal_stream(offsets, slope=0.0)
