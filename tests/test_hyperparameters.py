"""Every numeric hyper-parameter of the public API, given NaN, ±inf, a negative, zero, a huge
value or a fraction where an integer belongs (issue 18, item 5): a ``ValueError``/``TypeError``
that names the parameter, or a finite answer, never NaN, a crash or a silent acceptance of NaN.

The parameters are found by introspection (every keyword argument whose default is a number), so
a new hyper-parameter is swept the day it is added.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
import torch
from test_fuzz import finite_result

from calibnb import calibration, losses, metrics
from calibnb.data import augment, train_val_split

ODD = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "negative": -1.0, "zero": 0.0,
       "huge": 1e300, "fraction": 2.5, "bool": True}

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(scale=3.0, size=(64, 5))
LABELS = np.r_[LOGITS[:48].argmax(1), RNG.integers(0, 5, 16)]
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(1, keepdims=True)
IMAGES = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)


def numeric_parameters(callable_) -> list[str]:
    return [p.name for p in inspect.signature(callable_).parameters.values()
            if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)]


def loss_call(name):
    def call(**params):
        z = torch.tensor(LOGITS, requires_grad=True)
        value = losses.get_loss(name, **params)(z, torch.tensor(LABELS))
        (grad,) = torch.autograd.grad(value, z)
        return [value.detach().numpy(), grad.numpy()]
    return call


def metric_call(name):
    return lambda **params: getattr(metrics, name)(PROBS, LABELS, **params)


def calibrator_call(cls):
    return lambda **params: cls(**params).fit(LOGITS, LABELS).predict_proba(LOGITS)


CASES = (
    [(f"loss {n}", loss_call(n), numeric_parameters(losses.LOSSES[n])) for n in sorted(losses.LOSSES)]
    + [(f"metric {n}", metric_call(n), numeric_parameters(getattr(metrics, n)))
       for n in ("ece", "adaptive_ece", "classwise_ece", "mce", "debiased_ece", "smooth_ece", "ece_sweep",
                 "reliability_table", "calibration_report")]
    + [(f"calibrator {c.__name__}", calibrator_call(c), numeric_parameters(c))
       for c in (getattr(calibration, n) for n in calibration.__all__) if inspect.isclass(c)]
    + [("augment", lambda **p: augment(IMAGES, (0.5,) * 3, (0.25,) * 3, **p), numeric_parameters(augment)),
       ("train_val_split", lambda **p: train_val_split(**{"n": 100, "val_size": 10, **p}),
        ["n", *numeric_parameters(train_val_split)])]
    + [("adafocal_update", lambda **p: losses.adafocal_update([1.0, -0.5], [0.1, -0.2], **p),
        numeric_parameters(losses.adafocal_update))]
    + [("focal_calibration_map", lambda **p: calibration.focal_calibration_map(PROBS, **p), ["gamma"])]
)
SWEEP = [(label, call, parameter, kind) for label, call, parameters in CASES for parameter in parameters
         for kind in ODD]


@pytest.mark.parametrize("label, call, parameter, kind", SWEEP,
                         ids=[f"{label}-{parameter}-{kind}" for label, _, parameter, kind in SWEEP])
def test_an_odd_hyperparameter_is_refused_by_name_or_gives_a_finite_answer(label, call, parameter, kind):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call(**{parameter: ODD[kind]})
    except (ValueError, TypeError) as error:
        assert parameter in str(error), f"{label}: the error does not name {parameter!r}: {error}"
        return
    assert kind not in ("nan", "bool"), f"{label} accepted {parameter}={ODD[kind]!r}"
    assert finite_result(result), f"{label}: {parameter}={ODD[kind]!r} gave a non-finite answer"
