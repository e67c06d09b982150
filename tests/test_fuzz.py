"""Fuzzing the public API (issue 18, item 8): invalid and extreme-but-valid inputs to every metric,
loss and calibrator give either a clear error (``ValueError``/``TypeError`` naming an argument,
or ``NotFittedError``) or a finite, correct-shaped answer, never NaN/inf or a stray exception.

Each hypothesis example draws one input of a category (valid, extreme, invalid) and calls the
function; :func:`outcome` classifies what happened. ``make test`` runs a bounded number of
examples; ``make test-slow`` runs many more (the ``slow`` profile below). With
``CALIBNB_FUZZ_COUNTS=<file>`` the counts per category are written there (for the issue note).
"""

from __future__ import annotations

import collections
import json
import os
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from calibnb import calibration, losses, metrics

COUNTS: collections.Counter = collections.Counter()
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEEP = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Words by which an error names what is wrong with an argument.
ARGUMENT_NAMES = ("probs", "labels", "logits", "targets", "n_bins", "gamma", "alpha", "lam",
                  "temperature", "reduction", "scores", "criterion", "binning")


def outcome(call, *names) -> str:
    """``"clear error"``, ``"finite result"``, or an assertion error describing the failure."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
    except (ValueError, TypeError) as error:
        message = str(error)
        assert any(n in message for n in (*ARGUMENT_NAMES, *names)), f"unclear error: {message!r}"
        return "clear error"
    except NotFittedError:
        return "clear error"
    assert finite_result(result), f"non-finite result {result!r}"
    return "finite result"


def finite_result(result) -> bool:
    """Whether every number in ``result`` (a tensor, array, dict of numbers, DataFrame, or a
    tuple/list of them) is finite; a reliability table's NaN for an empty bin is by design."""
    values = result if isinstance(result, (tuple, list)) else [result]
    for value in values:
        nan_allowed = hasattr(value, "columns") and "count" in value.columns
        if isinstance(value, torch.Tensor):
            value = value.detach().double().numpy()
        if isinstance(value, dict):
            value = np.array([v for v in value.values() if isinstance(v, (int, float))], dtype=float)
        if hasattr(value, "to_numpy"):
            value = value.select_dtypes("number").to_numpy(dtype=float)
        array = np.asarray(value, dtype=float)
        if not np.isfinite(array[~np.isnan(array)] if nan_allowed else array).all():
            return False
    return True


# ---- inputs ---------------------------------------------------------------------------------

finite = st.floats(-1e6, 1e6, allow_nan=False, width=64)
odd_float = st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 2.0, 1e308, -1e308, 0.0, 1.0])


@st.composite
def probabilities(draw):
    """(category, probs, labels): valid rows (also one-hot, one sample, K = 2, a single class
    present), and invalid ones (NaN, negative, not summing to 1, wrong shapes and labels)."""
    n = draw(st.integers(1, 30))
    k = draw(st.integers(2, 6))
    raw = np.array(draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=n * k, max_size=n * k)))
    raw = raw.reshape(n, k) + draw(st.sampled_from([0.0, 1e-300]))
    rows = raw.sum(1, keepdims=True)
    probs = np.where(rows > 0, raw / np.where(rows > 0, rows, 1), 1.0 / k)
    labels = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(["valid", "one-hot", "single class", "nan", "negative",
                                 "unnormalised", "1-D", "labels out of range", "float labels",
                                 "labels wrong length", "empty"]))
    if kind == "one-hot":
        probs = np.eye(k)[labels]
    elif kind == "single class":
        labels[:] = 0
    elif kind == "nan":
        probs[0, 0] = draw(odd_float.filter(lambda v: not 0 <= v <= 1))
    elif kind == "negative":
        probs[0] = -probs[0]
    elif kind == "unnormalised":
        probs = probs * 2 + 0.1
    elif kind == "1-D":
        probs = probs[:, 0]
    elif kind == "labels out of range":
        labels[0] = draw(st.sampled_from([-1, k, 10**9]))
    elif kind == "float labels":
        labels = labels + 0.5
    elif kind == "labels wrong length":
        labels = np.append(labels, 0)
    elif kind == "empty":
        probs, labels = probs[:0], labels[:0]
    return kind, probs, labels


@st.composite
def logits_and_targets(draw):
    """(category, logits tensor, targets tensor) for the losses and calibrators."""
    n = draw(st.integers(1, 12))
    k = draw(st.integers(2, 5))
    scale = draw(st.sampled_from([1.0, 30.0, 1e4, 1e30]))
    z = torch.tensor(draw(st.lists(st.floats(-1, 1), min_size=n * k, max_size=n * k)),
                     dtype=torch.float64).reshape(n, k) * scale
    t = torch.tensor(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(["valid", "huge", "half", "nan", "inf", "targets out of range",
                                 "float targets", "1-D", "targets wrong length", "beyond spread"]))
    if kind == "huge":
        z = z.float() * 1e3
    elif kind == "half":
        z = z.clamp(-6e4, 6e4).to(draw(st.sampled_from([torch.float16, torch.bfloat16])))
    elif kind == "nan":
        z[0, 0] = float("nan")
    elif kind == "inf":
        z[0, -1] = float("inf")
    elif kind == "targets out of range":
        t[0] = draw(st.sampled_from([-1, k]))
    elif kind == "float targets":
        t = t.double()
    elif kind == "1-D":
        z = z[:, 0]
    elif kind == "targets wrong length":
        t = torch.cat([t, t[:1]])
    elif kind == "beyond spread":
        z = z.float()
        z[0, 0], z[0, 1] = 3e38, -3e38
    return kind, z, t


def record(group: str, kind: str, result: str) -> None:
    COUNTS[(group, kind, result)] += 1


# ---- the contract -----------------------------------------------------------------------------

METRICS = ["ece", "adaptive_ece", "classwise_ece", "mce", "nll", "brier", "error_rate", "smooth_ece",
           "debiased_ece", "ece_sweep", "calibration_report", "reliability_table"]
INVALID_PROBS = {"nan", "negative", "unnormalised", "1-D", "labels out of range", "float labels",
                 "labels wrong length", "empty"}


def check_metric(name, case):
    kind, probs, labels = case
    result = outcome(lambda: getattr(metrics, name)(probs, labels))
    if kind in INVALID_PROBS:
        assert result == "clear error", f"{name} accepted {kind} input"
    record("metrics", kind, result)


LOSS_PARAMS = {"focal_loss": {"gamma": 3.0}, "inverse_focal_loss": {"gamma": 2.0},
               "dual_focal_loss": {"gamma": 2.0}, "focal_calibration_loss": {"gamma": 2.0, "lam": 1.0},
               "label_smoothing_loss": {"alpha": 0.05}}
INVALID_LOGITS = {"nan", "inf", "targets out of range", "float targets", "1-D", "targets wrong length",
                  "beyond spread"}


def check_loss(name, case):
    kind, z, t = case
    z = z.clone().requires_grad_(True) if z.is_floating_point() else z

    def call():
        value = losses.get_loss(name, **LOSS_PARAMS.get(name, {}))(z, t)
        (grad,) = torch.autograd.grad(value, z)
        return value, grad

    result = outcome(call)
    if kind in INVALID_LOGITS:
        assert result == "clear error", f"{name} accepted {kind} input"
    record("losses", kind, result)


CALIBRATORS = {
    "TemperatureScaling": lambda: calibration.TemperatureScaling(),
    "TemperatureScaling nll": lambda: calibration.TemperatureScaling("nll"),
    "FocalTemperatureScaling": lambda: calibration.FocalTemperatureScaling(
        gammas=[-0.5, 0.0, 1.0], temperatures=[0.5, 1.0, 2.0]),
    "EnsembleTemperatureScaling": lambda: calibration.EnsembleTemperatureScaling(),
    "HistogramBinning": lambda: calibration.HistogramBinning(),
    "IsotonicCalibration": lambda: calibration.IsotonicCalibration(),
    "SplineCalibration": lambda: calibration.SplineCalibration(),
}


def check_calibrator(name, case):
    kind, z, t = case
    z, t = z.detach().double().numpy() if kind != "half" else z.float().numpy(), t.numpy()

    def call():
        fitted = CALIBRATORS[name]().fit(z, t)
        probs = fitted.predict_proba(z)
        assert probs.shape == z.shape and np.allclose(probs.sum(1), 1.0), "rows do not sum to 1"
        return probs

    result = outcome(call)
    if kind in INVALID_LOGITS - {"beyond spread"}:  # calibrators work in float64: no spread limit
        assert result == "clear error", f"{name} accepted {kind} input"
    record("calibrators", kind, result)


def fuzz(check, cases, names, deep: bool = False):
    """One test: ``check(name, case)`` for every name and drawn case; ``deep`` runs 300 examples
    per name and is marked slow (``make test-slow``), else 25 (``make test``)."""

    @pytest.mark.parametrize("name", names)
    @(DEEP if deep else FAST)
    @given(case=cases)
    def test(name, case):
        check(name, case)

    return pytest.mark.slow(test) if deep else test


LOSS_NAMES = sorted(losses.LOSSES)
test_metrics = fuzz(check_metric, probabilities(), METRICS)
test_losses = fuzz(check_loss, logits_and_targets(), LOSS_NAMES)
test_calibrators = fuzz(check_calibrator, logits_and_targets(), list(CALIBRATORS))
test_metrics_deeply = fuzz(check_metric, probabilities(), METRICS, deep=True)
test_losses_deeply = fuzz(check_loss, logits_and_targets(), LOSS_NAMES, deep=True)
test_calibrators_deeply = fuzz(check_calibrator, logits_and_targets(), list(CALIBRATORS), deep=True)


@pytest.fixture(scope="module", autouse=True)
def write_counts():
    yield
    target = os.environ.get("CALIBNB_FUZZ_COUNTS")
    if target:
        rows = [{"group": g, "input": k, "outcome": o, "count": c} for (g, k, o), c in sorted(COUNTS.items())]
        with open(target, "a") as f:
            f.write(json.dumps(rows) + "\n")
