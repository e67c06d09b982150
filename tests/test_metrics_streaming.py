"""The streamed metrics and ETS: equal to the whole-matrix equations across block boundaries, and
on torch tensors equal to numpy, on each device ("cpu" always; "cuda" marked ``gpu``, failing
without CUDA as tests/test_gpu.py does)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from scipy.special import softmax

import calibnb.metrics.streaming as streaming
from calibnb.calibration import (EnsembleTemperatureScaling, HistogramBinning, IsotonicCalibration,
                                 SplineCalibration)
from calibnb.calibration._search import TEMPERATURE_CAP, bounded_log_search
from calibnb.calibration.baselines import ETS_LOG_T_BOUNDS, _BlockScores, _RowStats
from calibnb.metrics import adaptive_ece, bin_sums, brier, ece, error_rate, mce, nll
from calibnb.metrics.binned_device import device_bin_sums
from calibnb.metrics.binning import bin_edges
from calibnb.metrics.rowpass import device_row_statistics, row_statistics
from calibnb.metrics.scores import brier_unchecked, nll_unchecked
from calibnb.metrics.toplabel import TIE_RTOL, top_label_unchecked

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture
def device(request):
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA device")
    return torch.device(request.param)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows, so that every test crosses many block boundaries."""
    monkeypatch.setattr(streaming, "BLOCK_ELEMENTS", 37)
    monkeypatch.setattr(streaming, "DEVICE_BLOCK_ELEMENTS", 53)


def logits_labels(n=700, k=12, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=scale, size=(n, k))
    y = (z / 2 + rng.gumbel(size=(n, k))).argmax(axis=1)
    return z, y


def with_near_ties(p):
    """Rows whose top two classes differ by less than TIE_RTOL, in either order."""
    p = p.copy()
    for i in range(0, p.shape[0], 7):
        order = np.argsort(-p[i])
        a, b = order[0], order[1]
        p[i, b] = p[i, a] * (1.0 - TIE_RTOL / 4)  # b is near-tied with the top a
        p[i] /= p[i].sum()
    return p


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_statistics_equal_the_whole_matrix(small_blocks, dtype):
    z, y = logits_labels()
    p = with_near_ties(softmax(z, axis=1)).astype(dtype)
    conf, correct, p_true, sum_sq = row_statistics(p, y, true_class=True, squares=True)
    p64 = p.astype(np.float64)
    want_conf, want_correct = top_label_unchecked(p64, y)
    np.testing.assert_array_equal(conf, want_conf)
    np.testing.assert_array_equal(correct, want_correct)
    np.testing.assert_array_equal(p_true, p64[np.arange(len(y)), y])
    np.testing.assert_allclose(sum_sq, (p64 * p64).sum(axis=1), rtol=1e-14)
    assert nll(p, y) == pytest.approx(nll_unchecked(p64, y), rel=1e-14)
    assert brier(p, y) == pytest.approx(brier_unchecked(p64, y), rel=1e-13)


def test_near_ties_go_to_the_first_class_in_every_block(small_blocks):
    p = np.full((40, 5), 0.1)
    p[:, 1] = 0.3
    p[:, 3] = 0.3 * (1.0 + TIE_RTOL / 8)  # the largest, but tied with class 1 within TIE_RTOL
    p /= p.sum(axis=1, keepdims=True)
    conf, correct, _, _ = row_statistics(p, np.full(40, 1))
    assert (correct == 1.0).all()
    np.testing.assert_array_equal(conf, p[:, 1])


def test_a_bad_block_raises_the_whole_matrix_message(small_blocks):
    z, y = logits_labels()
    p = softmax(z, axis=1)
    for value, message in ((np.nan, "NaN or inf"), (-0.1, "negative"), (0.7, "sum to 1")):
        bad = p.copy()
        bad[500, 3] = value
        with pytest.raises(ValueError, match=message):
            ece(bad, y)
    with pytest.raises(ValueError, match="labels must lie in"):
        nll(p, np.where(np.arange(len(y)) == 600, 12, y))


@pytest.mark.parametrize("device", DEVICES, indirect=True)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("metric", [ece, adaptive_ece, mce, nll, brier, error_rate,
                                    lambda p, y: ece(p, y, 10, "mass")])
def test_a_metric_of_tensors_equals_numpy(device, dtype, metric):
    z, y = logits_labels(n=2000, k=30, seed=1)
    p = with_near_ties(softmax(z, axis=1))
    tensor = torch.from_numpy(p).to(device=device, dtype=dtype)
    want = metric(tensor.cpu().numpy(), y)
    got = metric(tensor, torch.from_numpy(y).to(device))
    assert isinstance(got, float)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("binning", ["width", "mass"])
def test_device_kernels_on_a_cpu_tensor_equal_numpy(small_blocks, binning):
    """The CUDA path, run on CPU tensors: the same statistics and bins as numpy."""
    z, y = logits_labels(n=1500, k=20, seed=2)
    p = with_near_ties(softmax(z, axis=1))
    stats = device_row_statistics(torch.from_numpy(p), torch.from_numpy(y), True, True)
    for got, want in zip(stats, row_statistics(p, y, True, True)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-14, atol=0)
    conf, correct = stats[0], stats[1]
    edges = bin_edges(conf.numpy(), 15, binning)
    from calibnb.metrics import assign_bins

    want = bin_sums(assign_bins(conf.numpy(), edges), 15, conf.numpy(), correct.numpy())
    for got, expected in zip(device_bin_sums(conf, correct, 15, binning), want):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-12)


def test_device_validation_refuses_bad_tensors():
    from calibnb._validation import check_device_logit_columns, check_device_probs_labels

    p = torch.softmax(torch.randn(50, 4, dtype=torch.float64), dim=1)
    y = torch.randint(0, 4, (50,))
    for bad, message in ((p - 0.5, "negative"), (p * 2, "sum to 1"),
                         (p.masked_fill(p > 0.9, float("nan")).index_fill(0, torch.tensor([3]), float("nan")),
                          "NaN or inf"), (p[:, :1].squeeze(1)[:0], "empty")):
        with pytest.raises(ValueError, match=message):
            check_device_probs_labels(bad, y[: len(bad)])
    with pytest.raises(ValueError, match="labels must lie in"):
        check_device_probs_labels(p, y + 4)
    with pytest.raises(ValueError, match="labels has 49 entries"):
        check_device_probs_labels(p, y[:49])
    with pytest.raises(TypeError, match="labels must be integer"):
        check_device_probs_labels(p, y + 0.5)
    with pytest.raises(ValueError, match="logits contains NaN"):
        check_device_logit_columns(torch.full((3, 2), float("inf")))
    z, columns = check_device_logit_columns(torch.tensor([0.5, -1.0]))
    assert columns == 1 and z.tolist() == [[0.0, 0.5], [0.0, -1.0]]


def reference_ets(z, y, loss):
    """Zhang et al. (2020), Eq. (9), as the equation reads: softmax copies, a one-hot, the mixture."""
    onehot = np.eye(z.shape[1])[y]

    def score(p):
        if loss == "mse":
            return float(((p - onehot) ** 2).sum(axis=1).mean())
        return float(-np.log(np.maximum((p * onehot).sum(axis=1), 1e-300)).mean())

    t = bounded_log_search(lambda t: score(softmax(z / t, axis=1)), ETS_LOG_T_BOUNDS,
                           tuple(np.log(TEMPERATURE_CAP)), "reference", xatol=1e-8)
    def mixture(w, x):
        return (w[0] * softmax(x / t, axis=1) + w[1] * softmax(x, axis=1)) + w[2] / x.shape[1]

    mix = minimize(lambda w: score(mixture(w, z)), x0=np.ones(3) / 3, method="SLSQP",
                   bounds=[(0.0, 1.0)] * 3, constraints={"type": "eq", "fun": lambda w: w.sum() - 1.0})
    w = np.clip(mix.x, 0.0, 1.0) / np.clip(mix.x, 0.0, 1.0).sum()
    return t, w, lambda x: mixture(w, x)


@pytest.mark.parametrize("loss", ["mse", "nll"])
@pytest.mark.parametrize("scale", [3.0, 0.3])
def test_streamed_ets_equals_the_equation(small_blocks, loss, scale):
    z, y = logits_labels(n=900, k=7, seed=3, scale=scale)
    t, w, predict = reference_ets(z, y, loss)
    ets = EnsembleTemperatureScaling(loss).fit(z, y)
    assert ets.temperature_ == t  # the same bits: each row's loss is computed as on the whole matrix
    np.testing.assert_array_equal(ets.weights_, w)
    np.testing.assert_array_equal(ets.predict_proba(z), predict(z))


@pytest.mark.parametrize("loss", ["mse", "nll"])
def test_ets_from_row_sums_agrees_with_the_equation(monkeypatch, small_blocks, loss):
    """Above ETS_EXACT_ELEMENTS the search runs on per-row sums: the same T and weights up to the
    tolerance of the searches."""
    z, y = logits_labels(n=900, k=7, seed=7)
    t, w, predict = reference_ets(z, y, loss)
    monkeypatch.setattr("calibnb.calibration.baselines.ETS_EXACT_ELEMENTS", 0)
    ets = EnsembleTemperatureScaling(loss).fit(z, y)
    assert ets.temperature_ == pytest.approx(t, rel=1e-6)
    np.testing.assert_allclose(ets.weights_, w, atol=1e-5)
    np.testing.assert_allclose(ets.predict_proba(z), predict(z), atol=1e-6)


@pytest.mark.parametrize("loss", ["mse", "nll"])
def test_ets_row_sums_on_a_cpu_tensor_equal_numpy(small_blocks, loss):
    """The device path of ETS's search, on CPU tensors: the same losses as numpy."""
    z, y = logits_labels(n=600, k=9, seed=4)
    host, device = _RowStats(z, y, loss), _RowStats(torch.from_numpy(z), torch.from_numpy(y), loss)
    exact = _BlockScores(z, y, loss)  # the equation, row by row
    for t in (0.3, 1.0, 2.7):
        assert device.tempered_loss(t) == pytest.approx(host.tempered_loss(t), rel=1e-13)
        assert host.tempered_loss(t) == pytest.approx(exact.tempered_loss(t), rel=1e-12)
    w = np.array([0.5, 0.3, 0.2])
    assert device.mixture_loss(1.7)(w) == pytest.approx(host.mixture_loss(1.7)(w), rel=1e-13)
    assert host.mixture_loss(1.7)(w) == pytest.approx(exact.mixture_loss(1.7)(w), rel=1e-12)


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_ets_on_tensors_equals_numpy(device):
    z, y = logits_labels(n=1200, k=15, seed=5)
    ets = EnsembleTemperatureScaling().fit(z, y)
    on_device = EnsembleTemperatureScaling().fit(torch.from_numpy(z).to(device), torch.from_numpy(y).to(device))
    # on a GPU the search uses per-row sums, equal up to the flat optimum's tolerance
    assert on_device.temperature_ == pytest.approx(ets.temperature_, rel=1e-6)
    np.testing.assert_allclose(on_device.weights_, ets.weights_, atol=1e-5)
    probs = on_device.predict_proba(torch.from_numpy(z).to(device))
    assert isinstance(probs, torch.Tensor) and probs.device.type == device.type
    assert probs.dtype == torch.float64
    np.testing.assert_allclose(probs.cpu().numpy(), on_device.predict_proba(z), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("method", [HistogramBinning, IsotonicCalibration, SplineCalibration])
def test_top_label_calibrators_stream_bit_for_bit(monkeypatch, method):
    z, y = logits_labels(n=800, k=10, seed=6)
    whole = method().fit(z, y).predict_proba(z)
    monkeypatch.setattr(streaming, "BLOCK_ELEMENTS", 37)
    np.testing.assert_array_equal(method().fit(z, y).predict_proba(z), whole)
