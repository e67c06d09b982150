"""Fuzzing the public API (issue 18, item 8): invalid and extreme-but-valid inputs to every metric,
loss and calibrator give either a clear error (``ValueError``/``TypeError`` naming an argument,
or ``NotFittedError``) or a finite, correct-shaped answer, never NaN/inf or a stray exception.

The callables are discovered (issue 25, item 7): every one in ``__all__`` of calibnb.losses,
calibnb.metrics and calibnb.calibration that takes probabilities, logits or log-probabilities
(:data:`test_public_api_validation.APIS`), so a new public function is fuzzed the day it is added.

Each hypothesis example draws one input of a category (valid, extreme, invalid) and calls the
function; :func:`outcome` classifies what happened. ``make test`` runs a bounded number of
examples; ``make test-slow`` runs many more (the ``slow`` profile below). With
``CALIBNB_FUZZ_COUNTS=<file>`` the counts per category are written there (for the issue note).
"""

from __future__ import annotations

import collections
import json
import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_public_api_validation import APIS, NAN_IN_RESULT, outcome

from calibnb import losses

COUNTS: collections.Counter = collections.Counter()
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEEP = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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

#: The arguments a drawn case fills: probabilities and their labels, logits and their targets.
PROBS_ARGUMENTS = ("probs", "probs_in", "probs_out", "val_probs")
LABEL_ARGUMENTS = ("labels", "targets", "val_labels")
INVALID_PROBS = {"nan", "negative", "unnormalised", "1-D", "labels out of range", "float labels",
                 "labels wrong length", "empty"}
LABEL_KINDS = {"labels out of range", "float labels", "labels wrong length"}
INVALID_LOGITS = {"nan", "inf", "targets out of range", "float targets", "1-D", "targets wrong length",
                  "beyond spread"}
TARGET_KINDS = {"targets out of range", "float targets", "targets wrong length"}


def fills(api, names) -> list[str]:
    return [p for p in api.roles if p in names]


def like(value, valid):
    """``value`` (a numpy array or a tensor) in the kind of ``valid``: a tensor or a numpy array."""
    if isinstance(valid, torch.Tensor):
        return torch.as_tensor(value) if not isinstance(value, torch.Tensor) else value
    return value.detach().numpy() if isinstance(value, torch.Tensor) else value


#: Every discovered callable that takes probabilities (metrics, OOD scores, the focal calibration
#: map, AdaFocal's validation update), and every one that takes logits or log-probabilities
#: (losses in both forms, calibrators, focal softmax): test_public_api_validation.APIS.
ON_PROBS = [api for api in APIS if fills(api, PROBS_ARGUMENTS)]
ON_LOGITS = [api for api in APIS if fills(api, ("logits", "logp"))]


def check_probs(api, case):
    kind, probs, labels = case
    labelled = fills(api, LABEL_ARGUMENTS)
    if kind in LABEL_KINDS and not labelled:
        kind = "valid"  # the labels are not an argument: the probabilities are valid
    if kind == "1-D" and labelled and api.name.startswith("calibnb.metrics.") and labels.max() <= 1:
        kind = "binary column"  # a metric's one column is P(class 1) of two classes: valid
    args = {p: like(probs, api.values[p]) for p in fills(api, PROBS_ARGUMENTS)}
    args.update({p: like(labels, api.values[p]) for p in labelled})
    result = outcome(lambda: api.run(**args), list(api.roles), api.name in NAN_IN_RESULT)
    if kind in INVALID_PROBS:
        assert result == "clear error", f"{api.name} accepted {kind} input"
    record("probabilities", kind, result)


def check_logits(api, case):
    kind, z, t = case
    labelled = fills(api, LABEL_ARGUMENTS)
    if kind in TARGET_KINDS and not labelled:
        kind = "valid"
    if kind == "float targets" and api.kind == "calibrator":
        kind = "whole-number float labels"  # numpy labels 1.0, 2.0 are the integers: valid
    if kind == "1-D" and api.kind == "calibrator" and t.max() <= 1:
        kind = "binary column"  # a calibrator's one column is the logit of class 1: valid
    args = {p: like(t, api.values[p]) for p in labelled}
    for p in fills(api, ("logits", "logp")):
        valid = api.values[p]
        value = torch.log_softmax(z.float() if z.dtype in (torch.float16, torch.bfloat16) else z, dim=-1) \
            if p == "logp" else z
        if not isinstance(valid, torch.Tensor):  # numpy: the calibrators and focal softmax, in float64
            value = value.detach().float().numpy() if kind == "half" else value.detach().double().numpy()
        args[p] = value
    in_torch = any(isinstance(v, torch.Tensor) for v in args.values())

    def call():
        result = api.run(**args)
        if api.kind == "calibrator":  # its predictions, then its score
            probs = result[0]
            shape = (z.shape[0], 2) if z.ndim == 1 else tuple(z.shape)
            assert probs.shape == shape and np.allclose(probs.sum(1), 1.0), "rows do not sum to 1"
        return result

    result = outcome(call, list(api.roles), api.name in NAN_IN_RESULT)
    # calibrators and focal softmax work in float64 numpy: no spread limit
    invalid = INVALID_LOGITS if in_torch else INVALID_LOGITS - {"beyond spread"}
    if kind in invalid:
        assert result == "clear error", f"{api.name} accepted {kind} input"
    record("logits", kind, result)


def fuzz(check, cases, apis, deep: bool = False):
    """One test: ``check(api, case)`` for every discovered callable and drawn case; ``deep`` runs
    300 examples per callable and is marked slow (``make test-slow``), else 25 (``make test``)."""

    @pytest.mark.parametrize("api", apis, ids=[api.name for api in apis])
    @(DEEP if deep else FAST)
    @given(case=cases)
    def test(api, case):
        check(api, case)

    return pytest.mark.slow(test) if deep else test


test_probabilities = fuzz(check_probs, probabilities(), ON_PROBS)
test_logits = fuzz(check_logits, logits_and_targets(), ON_LOGITS)
test_probabilities_deeply = fuzz(check_probs, probabilities(), ON_PROBS, deep=True)
test_logits_deeply = fuzz(check_logits, logits_and_targets(), ON_LOGITS, deep=True)


def test_the_fuzz_covers_every_metric_loss_and_calibrator():
    names = {api.name for api in ON_PROBS + ON_LOGITS}
    assert {api.name for api in APIS if api.kind in ("loss module", "calibrator")} <= names
    assert {f"calibnb.losses.{cls.__name__}" for cls in losses.LOSSES.values()} <= names
    metrics_on_labels = {api.name for api in APIS if api.name.startswith("calibnb.metrics.")
                         and {"probs", "labels"} <= set(api.roles)}
    assert len(metrics_on_labels) >= 12 and metrics_on_labels <= {api.name for api in ON_PROBS}
    assert {"calibnb.losses.focal_loss", "calibnb.losses.mmce_weighted", "calibnb.calibration.focal_softmax",
            "calibnb.losses.AdaFocalLoss.update", "calibnb.metrics.ood_auroc"} <= names


@pytest.fixture(scope="module", autouse=True)
def write_counts():
    yield
    target = os.environ.get("CALIBNB_FUZZ_COUNTS")
    if target:
        rows = [{"group": g, "input": k, "outcome": o, "count": c} for (g, k, o), c in sorted(COUNTS.items())]
        with open(target, "a") as f:
            f.write(json.dumps(rows) + "\n")
