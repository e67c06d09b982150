"""Post-hoc baselines (ETS, spline, histogram binning, isotonic), synthetic logits, simplex plots."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.special import softmax  # noqa: E402

from calibnb import plots_simplex  # noqa: E402
from calibnb.calibration import (  # noqa: E402
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    SplineCalibration,
    TemperatureScaling,
)
from calibnb.synthetic import overconfident_logits  # noqa: E402
from calibnb.metrics import ece, reliability_table  # noqa: E402

ALL = [EnsembleTemperatureScaling, SplineCalibration, HistogramBinning, IsotonicCalibration]


@pytest.fixture(scope="module")
def data():
    z_val, y_val, _ = overconfident_logits(3000, 10, temperature=2.0, seed=0)
    z_test, y_test, _ = overconfident_logits(5000, 10, temperature=2.0, seed=1)
    return z_val, y_val, z_test, y_test


def test_synthetic_logits_follow_their_stated_model():
    z, y, true = overconfident_logits(20000, 5, temperature=2.0, label_noise=0.1, seed=3)
    np.testing.assert_allclose(true, 0.9 * softmax(z / 2.0, axis=1) + 0.02)
    # labels are drawn from true_probs: the mean true probability of each class matches its share
    np.testing.assert_allclose(np.bincount(y, minlength=5) / y.size, true.mean(axis=0), atol=0.01)
    assert ece(true, y, 15, "mass") < 0.02 < ece(softmax(z, axis=1), y, 15, "mass")


@pytest.mark.parametrize("method", ALL)
def test_calibrates_keeps_the_prediction_and_the_simplex(method, data):
    z_val, y_val, z_test, y_test = data
    p = method().fit(z_val, y_val).predict_proba(z_test)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert (p >= 0).all()
    np.testing.assert_array_equal(p.argmax(axis=1), z_test.argmax(axis=1))
    raw = ece(softmax(z_test, axis=1), y_test, 15, "mass")
    assert ece(p, y_test, 15, "mass") < raw / 4  # the raw model is badly over-confident


def test_ensemble_ts_weights_on_the_simplex_and_no_worse_than_ts(data):
    z_val, y_val, _, _ = data
    for loss in ("mse", "nll"):
        ets = EnsembleTemperatureScaling(loss).fit(z_val, y_val)
        assert (ets.weights_ >= 0).all() and ets.weights_.sum() == pytest.approx(1.0)
        p = ets.predict_proba(z_val)
        q = softmax(z_val / ets.temperature_, axis=1)  # the mixture with weights (1, 0, 0)
        onehot = np.eye(10)[y_val]
        if loss == "mse":
            assert ((p - onehot) ** 2).sum(1).mean() <= ((q - onehot) ** 2).sum(1).mean() + 1e-9
        else:
            rows = np.arange(len(y_val))
            assert -np.log(p[rows, y_val]).mean() <= -np.log(q[rows, y_val]).mean() + 1e-9
    # and its temperature is the NLL temperature when the loss is the NLL
    ts = TemperatureScaling("nll").fit(z_val, y_val)
    assert EnsembleTemperatureScaling("nll").fit(z_val, y_val).temperature_ == pytest.approx(
        ts.temperature_, abs=1e-4)


def test_histogram_binning_predicts_the_reliability_table_accuracy(data):
    z_val, y_val, _, _ = data
    hb = HistogramBinning(15).fit(z_val, y_val)
    table = reliability_table(softmax(z_val, axis=1), y_val, 15, "mass")
    np.testing.assert_array_equal(hb.edges_, np.r_[table["lo"], table["hi"].iloc[-1]])
    np.testing.assert_allclose(hb.bin_accuracy_, table["accuracy"], rtol=0, atol=1e-15)


def test_spline_derivative_is_the_running_accuracy():
    # Two classes, top-label confidence c uniform on (0.5, 0.95): wrong when c < 0.6, right
    # above. The cumulative accuracy's derivative, hence the recalibrated confidence, steps 0 -> 1
    # (floored at 1/K = 0.5 for a predicted class).
    rng = np.random.default_rng(5)
    c = rng.uniform(0.5, 0.95, 4000)
    z = np.stack([np.log(c), np.log(1 - c)], axis=1)  # class 0 predicted
    y = (c < 0.6).astype(int)
    p = SplineCalibration(n_knots=12).fit(z, y).predict_proba(z)[:, 0]
    assert np.median(p[c > 0.75]) > 0.97 and np.median(p[c < 0.57]) < 0.55


def test_isotonic_is_monotone_in_the_confidence(data):
    z_val, y_val, z_test, _ = data
    iso = IsotonicCalibration().fit(z_val, y_val)
    conf = softmax(z_test, axis=1).max(axis=1)
    new = iso.predict_proba(z_test).max(axis=1)
    order = np.argsort(conf)
    assert (np.diff(new[order]) >= -1e-12).all()


@pytest.mark.parametrize("method", ALL)
def test_bad_input(method):
    z, y, _ = overconfident_logits(50, 4)
    with pytest.raises(ValueError, match="not fitted"):
        method().predict_proba(z)
    with pytest.raises(ValueError, match="logits"):
        method().fit(np.full_like(z, np.nan), y)
    with pytest.raises(ValueError, match="labels"):
        method().fit(z, y[:-1])
    with pytest.raises(ValueError, match="loss"):
        EnsembleTemperatureScaling("hinge").fit(z, y)


def test_simplex_helpers():
    pts = plots_simplex.simplex_points(10)
    assert pts.shape == (66, 3)
    np.testing.assert_allclose(pts.sum(axis=1), 1.0)
    np.testing.assert_allclose(plots_simplex.to_plane(np.eye(3)),
                               [[0, 0], [1, 0], [0.5, np.sqrt(3) / 2]], atol=1e-15)
    fig, (a, b) = plt.subplots(1, 2)
    plots_simplex.plot_simplex_arrows(a, pts, pts, "identity")
    plots_simplex.plot_simplex_heatmap(b, pts, pts[:, 0] - pts[:, 1], "difference")
    plt.close(fig)
    with pytest.raises(ValueError, match="3 classes"):
        plots_simplex.to_plane(np.full((2, 4), 0.25))
