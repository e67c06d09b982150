"""Every numeric hyper-parameter of the public API, given NaN, ±inf, a negative, zero, a huge
value or a fraction where an integer belongs (issue 18, item 5): a ``ValueError``/``TypeError``
that names the parameter, or a finite answer, never NaN, a crash or a silent acceptance of NaN.
Every string option, given a value it does not know, is refused by name.

The callables are those :mod:`test_public_api_validation` discovers in ``__all__`` of
calibnb.losses, calibnb.metrics and calibnb.calibration (issue 25, item 7; calibnb.atomic,
calibnb.runs and calibnb.train are left out while they are rewritten), and their parameters are
found by introspection (every parameter whose default or example is a number, or that is
annotated ``int | None``/``float | None``), so a new function or hyper-parameter is swept the day
it is added. Losses are swept on float64 logits and on the float32 logits they train on.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
import torch
from test_public_api_validation import APIS, NAN_IN_RESULT, finite_result

from calibnb import metrics
from calibnb.data import augment, train_val_split

ODD = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "negative": -1.0, "zero": 0.0,
       "huge": 1e300, "fraction": 2.5, "bool": True}

IMAGES = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)


def numeric_parameters(callable_) -> list[str]:
    return [p.name for p in inspect.signature(callable_).parameters.values()
            if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)]


def in_float32(api):
    """``api.run`` with its float64 tensors (logits, log-probabilities) in float32, or None."""
    wide = {k: v for k, v in api.values.items() if isinstance(v, torch.Tensor) and v.dtype == torch.float64}
    if not wide:
        return None
    narrow = {k: v.float() for k, v in wide.items()}
    return lambda **params: api.run(**narrow, **params)


CASES = (
    [(api.name, api.run, api.parameters("number")) for api in APIS if api.parameters("number")]
    + [(f"{api.name} (float32)", in_float32(api), api.parameters("number"))
       for api in APIS if api.parameters("number") and in_float32(api)]
    # beyond the discovered modules, kept from issue 18
    + [("augment", lambda **p: augment(IMAGES, (0.5,) * 3, (0.25,) * 3, **p), numeric_parameters(augment)),
       ("train_val_split", lambda **p: train_val_split(**{"n": 100, "val_size": 10, **p}),
        ["n", *numeric_parameters(train_val_split)])]
)
#: A huge integer where an integer belongs: refused or bounded, not a loop or an allocation that
#: never ends (``ece_sweep(max_bins=10**12)`` swept up to 10**12 bin counts). The data helpers,
#: which allocate what they are asked for, are not given it.
HUGE_INTEGER = {"huge integer": 10**12}
SWEEP = [(label, call, parameter, kind) for label, call, parameters in CASES for parameter in parameters
         for kind in {**ODD, **(HUGE_INTEGER if label.startswith("calibnb.") else {})}]
VALUES = {**ODD, **HUGE_INTEGER}


def test_the_sweep_covers_the_discovered_callables():
    labels = {label for label, _, _ in CASES}
    assert len(labels) >= 40
    for name in ("calibnb.losses.focal_loss", "calibnb.losses.FocalLoss (float32)", "calibnb.metrics.ece_sweep",
                 "calibnb.calibration.FocalTemperatureScaling", "calibnb.losses.adafocal_update"):
        assert name in labels
    numbers = {(label, p) for label, _, ps in CASES for p in ps}
    assert ("calibnb.metrics.ece_sweep", "max_bins") in numbers  # an ``int | None`` default
    assert ("calibnb.calibration.focal_calibration_map", "gamma") in numbers  # a required number


@pytest.mark.parametrize("label, call, parameter, kind", SWEEP,
                         ids=[f"{label}-{parameter}-{kind}" for label, _, parameter, kind in SWEEP])
def test_an_odd_hyperparameter_is_refused_by_name_or_gives_a_finite_answer(label, call, parameter, kind):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call(**{parameter: VALUES[kind]})
    except (ValueError, TypeError) as error:
        assert parameter in str(error), f"{label}: the error does not name {parameter!r}: {error}"
        return
    assert kind not in ("nan", "bool"), f"{label} accepted {parameter}={VALUES[kind]!r}"
    assert finite_result(result, label in NAN_IN_RESULT), \
        f"{label}: {parameter}={VALUES[kind]!r} gave a non-finite answer"


def test_ece_sweep_stops_at_one_bin_per_sample():
    probs, labels = np.eye(3)[np.arange(30) % 3], np.arange(30) % 3  # monotone at every bin count
    assert metrics.ece_sweep(probs, labels, max_bins=HUGE_INTEGER["huge integer"], return_n_bins=True) == (0.0, 30)


CHOICES = [(api.name, api.run, parameter) for api in APIS for parameter in api.parameters("choice")]


@pytest.mark.parametrize("label, call, parameter", CHOICES, ids=[f"{label}-{p}" for label, _, p in CHOICES])
def test_an_unknown_option_is_refused_by_name(label, call, parameter):
    with pytest.raises(ValueError) as error:
        call(**{parameter: "no-such-option"})
    assert parameter in str(error.value), f"{label}: the error does not name {parameter!r}: {error.value}"
