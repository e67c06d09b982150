"""Temperature scaling: the papers' ECE grid protocol and the exact NLL minimiser."""

import numpy as np
import pytest
import torch
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator

from calibnb.calibration import PAPER_TEMPERATURES, TemperatureScaling
from calibnb.metrics import ece


def overconfident(seed: int, n: int = 3000, k: int = 10, scale: float = 3.0):
    """Logits of a softmax model whose labels are drawn at temperature ``scale``: the true
    calibration is T = scale, so TS should land near it."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=(n, k))
    y = np.array([rng.choice(k, p=p) for p in softmax(z / scale, axis=1)])
    return z, y


def papers_grid_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """Independent re-implementation of ``ModelWithTemperature.set_temperature(cross_validate=
    'ece')`` in ``torrvision/focal_calibration``, ``temperature_scaling.py``: T starts at 0.1 and
    grows by ``T += 0.1`` a hundred times (so it drifts: 0.30000000000000004), keeping T when the
    ECE is strictly below the best so far; ``ECELoss`` in ``Metrics/metrics.py``: 15 bins
    ``gt(lo) & le(hi)`` on ``linspace(0, 1, 16)``. Theirs runs in float32 on the GPU; this copy
    uses float64. calibnb uses the rounded grid 0.1, 0.2, ..., 10.0 instead of the drifting sum."""
    z, y = torch.from_numpy(logits), torch.from_numpy(labels)
    edges = torch.linspace(0, 1, 16, dtype=torch.float64)
    best, t_best, t = 10**7, 1.0, 0.1
    for _ in range(100):
        conf, pred = torch.softmax(z / t, dim=1).max(dim=1)
        acc = pred.eq(y)
        err = 0.0
        for lo, hi in zip(edges[:-1], edges[1:]):
            inside = conf.gt(lo.item()) * conf.le(hi.item())
            if inside.float().mean().item() > 0:
                gap = conf[inside].mean() - acc[inside].double().mean()
                err += abs(gap.item()) * inside.double().mean().item()
        if best > err:
            t_best, best = t, err
        t += 0.1
    return t_best


@pytest.mark.parametrize("seed,scale", [(0, 3.0), (1, 1.5), (2, 0.5), (3, 6.0)])
def test_ece_criterion_selects_the_papers_grid_temperature(seed, scale):
    z, y = overconfident(seed, scale=scale)
    ts = TemperatureScaling("ece").fit(z, y)
    assert ts.temperature_ == pytest.approx(papers_grid_temperature(z, y), abs=1e-9)
    assert ts.scores_.shape == PAPER_TEMPERATURES.shape
    assert ts.best_score_ == ece(ts.predict_proba(z), y)


def test_ece_criterion_takes_the_first_minimum():
    # Separable data: every T at or below the point where all confidences round to 1 has ECE 0.
    z = np.array([[40.0, 0.0], [0.0, 40.0], [40.0, 0.0]])
    y = np.array([0, 1, 0])
    ts = TemperatureScaling("ece", temperatures=[0.5, 0.1, 0.2, 3.0]).fit(z, y)
    assert ts.scores_[0] == ts.scores_[1] == 0.0
    assert ts.temperature_ == 0.5


@pytest.mark.parametrize("seed,scale", [(4, 2.5), (5, 0.7)])
def test_nll_criterion_matches_scikit_learn_temperature_scaling(seed, scale):
    z, y = overconfident(seed, scale=scale)
    ts = TemperatureScaling("nll").fit(z, y)

    class Logits(ClassifierMixin, BaseEstimator):  # a "classifier" whose decision function is X
        def fit(self, x, t):
            self.classes_ = np.unique(t)
            return self

        def decision_function(self, x):
            return x

        def predict(self, x):
            return x.argmax(axis=1)

    frozen = FrozenEstimator(Logits().fit(z, y))
    sk = CalibratedClassifierCV(frozen, method="temperature").fit(z, y)
    beta = sk.calibrated_classifiers_[0].calibrators[0].beta_
    assert ts.temperature_ == pytest.approx(1.0 / beta, abs=1e-3)
    assert ts.temperature_ == pytest.approx(scale, rel=0.15)  # the generating temperature
    # and it is the minimum of a dense grid
    grid = np.linspace(ts.temperature_ - 0.05, ts.temperature_ + 0.05, 2001)
    nlls = [-log_softmax(z / t, axis=1)[np.arange(len(y)), y].mean() for t in grid]
    assert abs(grid[int(np.argmin(nlls))] - ts.temperature_) < 1e-3
    assert ts.best_score_ == pytest.approx(min(nlls), abs=1e-12)


def test_predict_proba_is_the_scaled_softmax_and_accepts_tensors():
    """A tensor in, a float64 tensor out, on its device (numpy in, numpy out)."""
    z, y = overconfident(6)
    ts = TemperatureScaling().fit(torch.from_numpy(z).float(), torch.from_numpy(y))
    p = ts.predict_proba(torch.from_numpy(z))
    assert torch.is_tensor(p) and p.dtype == torch.float64
    np.testing.assert_allclose(p.numpy(), softmax(z / ts.temperature_, axis=1), atol=1e-15)
    assert ts.predict_proba(z).dtype == np.float64


def test_bad_input():
    z, y = overconfident(7, n=50)
    with pytest.raises(ValueError, match="not fitted"):
        TemperatureScaling().predict_proba(z)
    with pytest.raises(ValueError, match="logits"):
        TemperatureScaling().fit(np.where(np.eye(50, 10) > 0, np.nan, z), y)
    with pytest.raises(ValueError, match="labels"):
        TemperatureScaling().fit(z, y[:-1])
    with pytest.raises(ValueError, match="temperatures"):
        TemperatureScaling(temperatures=[]).fit(z, y)
    with pytest.raises(ValueError, match="temperatures"):
        TemperatureScaling(temperatures=[1.0, -2.0]).fit(z, y)
    with pytest.raises(ValueError, match="criterion"):
        TemperatureScaling("brier").fit(z, y)
    with pytest.raises(ValueError, match="binning"):
        TemperatureScaling(binning="quantile").fit(z, y)


def _device(name):
    if name == "cuda" and not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA device")
    return torch.device(name)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("binning", ["width", "mass"])
def test_streamed_ece_grid_equals_the_metric_at_every_temperature(device, binning, monkeypatch):
    """The streamed top-label confidences (several blocks of rows, a near-tie that the metric's
    TIE_RTOL rule breaks towards the first class at a high T) score each grid temperature as
    ece(softmax(z / T), y) does, to rounding; on the logits' device."""
    from calibnb.calibration import _grid
    from calibnb.calibration.temperature import top_label_confidences
    from calibnb.calibration._grid import batched_ece
    monkeypatch.setattr(_grid, "BLOCK_ELEMENTS", 700)  # 70 rows of 10 classes per block
    z, y = overconfident(5, n=500)
    z[3] = 0.0
    z[3, 4], z[3, 1] = 2.0, 2.0 - 1e-13  # near-tie: the first class wins at large T
    y[3] = 1
    temperatures = np.array([0.05, 0.5, 1.0, 3.0, 50.0, 5e3])
    conf, correct = top_label_confidences(torch.from_numpy(z).to(_device(device)),
                                          torch.from_numpy(y).to(_device(device)), temperatures)
    assert conf.device.type == device
    fast = batched_ece(conf.cpu().numpy(), correct.cpu().numpy(), 15, binning)
    reference = [ece(softmax(z / t, axis=1), y, 15, binning) for t in temperatures]
    np.testing.assert_allclose(fast, reference, rtol=0, atol=1e-12)
    assert correct[-1, 3] == 1.0 and correct[0, 3] == 0.0  # TIE_RTOL: class 1 first at T = 5e3


def test_streamed_ece_grid_selects_as_the_plain_loop():
    z, y = overconfident(6, n=2000, k=50)
    ts = TemperatureScaling(binning="mass").fit(z, y)
    loop = [ece(softmax(z / t, axis=1), y, 15, "mass") for t in ts.temperatures_]
    np.testing.assert_allclose(ts.scores_, loop, rtol=0, atol=1e-12)
    assert ts.temperature_ == ts.temperatures_[int(np.argmin(loop))]
    assert ts.best_score_ == ece(ts.predict_proba(z), y, 15, "mass")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("criterion, binning", [("ece", "width"), ("ece", "mass"), ("nll", "width")])
def test_a_tensor_is_fitted_on_its_device_as_numpy_is(device, criterion, binning, monkeypatch):
    """Logits on a device: the grid's confidences, the batched ECE and the NLL search run there
    (several blocks of rows), the temperature is numpy's (the ECE grid's exactly, the NLL's to the
    search's tolerance), and predict_proba returns a float64 tensor on the same device."""
    from calibnb.calibration import _grid
    from calibnb.metrics import streaming
    monkeypatch.setattr(_grid, "BLOCK_ELEMENTS", 700)
    monkeypatch.setattr(streaming, "DEVICE_BLOCK_ELEMENTS", 700)
    z, y = overconfident(8, n=900)
    on = _device(device)
    numpy_fit = TemperatureScaling(criterion, binning=binning).fit(z, y)
    tensor_fit = TemperatureScaling(criterion, binning=binning).fit(
        torch.from_numpy(z).float().to(on), torch.from_numpy(y).to(on))
    if criterion == "ece":
        float32_fit = TemperatureScaling(criterion, binning=binning).fit(z.astype(np.float32), y)
        assert tensor_fit.temperature_ == float32_fit.temperature_
        np.testing.assert_allclose(tensor_fit.scores_, float32_fit.scores_, rtol=0, atol=1e-12)
    else:
        assert tensor_fit.temperature_ == pytest.approx(numpy_fit.temperature_, rel=1e-6)
    probs = tensor_fit.predict_proba(torch.from_numpy(z).to(on))
    assert probs.device.type == device and probs.dtype == torch.float64
    np.testing.assert_allclose(probs.cpu().numpy(), softmax(z / tensor_fit.temperature_, axis=1),
                               rtol=0, atol=1e-15)
    fitted = z.astype(np.float32).astype(np.float64) / tensor_fit.temperature_  # what fit saw
    assert tensor_fit.best_score_ == pytest.approx(
        ece(softmax(fitted, axis=1), y, 15, binning) if criterion == "ece"
        else -log_softmax(fitted, axis=1)[np.arange(900), y].mean(), abs=1e-12)
