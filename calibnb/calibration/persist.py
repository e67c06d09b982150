"""Fitted calibrators saved as JSON and restored, never pickled.

A pickle runs code when it is read; a calibrator file is data: the class name (one of
:data:`CALIBRATORS`, the calibrators of :mod:`calibnb.calibration`; any other class is refused by
name), its hyper-parameters (``get_params()``) and its fitted state (the attributes whose names
end in ``_``), with calibnb's version::

    {"format": "calibnb-calibrator", "format_version": 1, "calibnb": "0.1.0",
     "class": "TemperatureScaling",
     "params": {"criterion": "nll", "temperatures": null, "n_bins": 15, "binning": "width"},
     "fitted": {"n_classes_": 10, "temperature_": 1.104..., "best_score_": 0.98...}}

Values that JSON has no word for are tagged objects: an array is ``{"type": "ndarray", "dtype":
"float64", "shape": [3], "data": [...]}`` (nested lists), a tuple ``{"type": "tuple", "items":
[...]}``, a float NaN or infinity ``{"type": "float", "value": "nan"}`` (and ``"nan"``,
``"inf"``, ``"-inf"`` stand for those entries inside an array's data), the spline of
:class:`SplineCalibration` ``{"type": "BSpline", ...}`` and the isotonic fit of
:class:`IsotonicCalibration` ``{"type": "IsotonicRegression", "params": {...}, "fitted": {...}}``.
Floats are written with Python's shortest round-trip repr, so a restored calibrator predicts
exactly what the saved one did.

Restoring trusts nothing: the envelope's keys, the class, every hyper-parameter (the checks the
class's ``fit`` makes), every fitted attribute (the names the class sets, and for each its type,
shape and range: a positive temperature, weights on the simplex, sorted bin edges, thresholds in
[0, 1], a consistent spline, BBQ's model weights the softmax of its scores), and at last a prediction on a probe, which must be finite
probabilities. Each refusal is a ``ValueError`` naming the file (or ``where``) and the key.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
from scipy.interpolate import BSpline
from scipy.special import softmax
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression

from .._validation import MAX_BINS, check_choice, check_grid, check_int, check_n_bins, check_real
from ..atomic import write_json
from .baselines import (
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    SplineCalibration,
)
from .bbq import BayesianBinningQuantiles
from .focal_temperature import FocalTemperatureScaling
from .identity import Uncalibrated
from .linear import DirichletCalibration, MatrixScaling, VectorScaling, check_regularisation
from .temperature import TemperatureScaling

__all__ = ["CALIBRATORS", "FORMAT", "FORMAT_VERSION", "calibrator_from_json", "calibrator_to_json",
           "load_calibrator", "save_calibrator"]

FORMAT, FORMAT_VERSION = "calibnb-calibrator", 1
#: The classes a calibrator file may name, by name.
CALIBRATORS = {cls.__name__: cls for cls in (
    TemperatureScaling, FocalTemperatureScaling, EnsembleTemperatureScaling, HistogramBinning,
    IsotonicCalibration, SplineCalibration, BayesianBinningQuantiles, VectorScaling, MatrixScaling,
    DirichletCalibration, Uncalibrated)}
ENVELOPE = ("format", "format_version", "calibnb", "class", "params", "fitted")
#: The dtypes an array may have in a calibrator file.
DTYPES = ("float64", "float32", "int64", "int32", "bool")
#: A calibrator file larger than this is refused before it is read (the largest real one, a spline
#: or isotonic fit on a million samples, is a few tens of MB).
MAX_FILE_BYTES = 512 * 2**20
_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


# -- writing ---------------------------------------------------------------------------------


def calibrator_to_json(estimator) -> dict:
    """The JSON document (a dict of JSON values) of a fitted calibrator of :data:`CALIBRATORS`.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import TemperatureScaling
    >>> from calibnb.calibration.persist import calibrator_from_json, calibrator_to_json
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)
    >>> ts = TemperatureScaling(criterion="nll").fit(logits, labels)
    >>> document = calibrator_to_json(ts)
    >>> document["class"], document["params"]["criterion"], round(document["fitted"]["temperature_"], 2)
    ('TemperatureScaling', 'nll', 2.06)
    >>> restored = calibrator_from_json(document)
    >>> bool((restored.predict_proba(logits) == ts.predict_proba(logits)).all())
    True
    """
    import calibnb

    cls = type(estimator)
    if CALIBRATORS.get(cls.__name__) is not cls:
        raise TypeError(f"estimator: only the calibrators of calibnb.calibration ({', '.join(CALIBRATORS)}) "
                        f"can be saved, got {cls.__module__}.{cls.__qualname__}")
    fitted = _fitted_attributes(estimator)
    missing = [name for name in SPECS[cls.__name__].required if name not in fitted]
    if missing:
        raise NotFittedError(f"estimator: this {cls.__name__} is not fitted (it has no {missing[0]}); "
                             "call fit before saving it")
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "calibnb": calibnb.__version__,
        "class": cls.__name__,
        "params": {k: _encode(v, f"params.{k}") for k, v in estimator.get_params(deep=False).items()},
        "fitted": {k: _encode(v, f"fitted.{k}") for k, v in fitted.items()},
    }


def save_calibrator(estimator, path: str | os.PathLike) -> Path:
    """Write :func:`calibrator_to_json` of ``estimator`` to ``path``, atomically.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> from calibnb.calibration import HistogramBinning
    >>> from calibnb.calibration.persist import load_calibrator, save_calibrator
    >>> logits = np.random.default_rng(0).normal(size=(200, 4))
    >>> labels = logits.argmax(axis=1)
    >>> histogram = HistogramBinning(n_bins=5).fit(logits, labels)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = save_calibrator(histogram, Path(folder) / "calibrator.json")
    ...     restored = load_calibrator(path)
    >>> restored.bin_accuracy_
    array([1., 1., 1., 1., 1.])
    """
    return write_json(path, calibrator_to_json(estimator))


def _fitted_attributes(estimator) -> dict:
    return {k: v for k, v in vars(estimator).items() if k.endswith("_") and not k.startswith("_")}


def _encode(value, where: str):
    """A JSON value standing for ``value`` (see the module docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"type": "float", "value": _special(value)}
    if isinstance(value, np.ndarray):
        if str(value.dtype) not in DTYPES:
            raise TypeError(f"{where}: an array of dtype {value.dtype} cannot be saved (one of {DTYPES})")
        data = value.tolist()
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            data = _map_nested(data, lambda x: x if math.isfinite(x) else _special(x))
        return {"type": "ndarray", "dtype": str(value.dtype), "shape": list(value.shape), "data": data}
    if isinstance(value, list):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"type": "tuple", "items": [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, BSpline):
        return {"type": "BSpline", "t": _encode(np.asarray(value.t), f"{where}.t"),
                "c": _encode(np.asarray(value.c), f"{where}.c"), "k": int(value.k),
                "extrapolate": _encode(value.extrapolate, f"{where}.extrapolate"), "axis": int(value.axis)}
    if type(value) is IsotonicRegression:
        fitted = {k: v for k, v in _fitted_attributes(value).items() if k != "f_"}  # f_ is rebuilt
        return {"type": "IsotonicRegression",
                "params": {k: _encode(v, f"{where}.params.{k}") for k, v in value.get_params().items()},
                "fitted": {k: _encode(v, f"{where}.fitted.{k}") for k, v in fitted.items()}}
    raise TypeError(f"{where}: a value of type {type(value).__name__} cannot be saved")


def _special(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _map_nested(data, f):
    return [_map_nested(x, f) for x in data] if isinstance(data, list) else f(data)


# -- reading ---------------------------------------------------------------------------------


def load_calibrator(path: str | os.PathLike):
    """The calibrator saved in the JSON file ``path`` (:func:`save_calibrator`), checked as
    :func:`calibrator_from_json` checks it; a ``ValueError`` naming ``path`` if it is not one.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from calibnb.calibration.persist import load_calibrator
    >>> with tempfile.TemporaryDirectory() as folder:  # doctest: +ELLIPSIS
    ...     path = Path(folder) / "calibrator.json"
    ...     _ = path.write_text('{"format": "calibnb-calibrator", "class": "os.system"}')
    ...     load_calibrator(path)
    Traceback (most recent call last):
    ValueError: .../calibrator.json: class 'os.system' is not a calibrator of calibnb.calibration; one of ...
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(f"{size:,} bytes is larger than a calibrator file can be ({MAX_FILE_BYTES:,})")
        text = path.read_bytes().decode("utf-8")
        document = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a calibrator file (JSON): it is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a calibrator file (JSON): {error}") from None
    except ValueError as error:
        raise ValueError(f"{path}: not a calibrator file (JSON): {error}") from None
    except RecursionError:
        raise ValueError(f"{path}: not a calibrator file (JSON): nested too deeply") from None
    return calibrator_from_json(document, where=str(path))


def _no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a key appears twice: {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON (write {{\"type\": \"float\", \"value\": \"nan\"}})")


def calibrator_from_json(document, where: str = "calibrator"):
    """The fitted calibrator that ``document`` (:func:`calibrator_to_json`) describes.

    Everything is checked (the module docstring); each refusal is a ``ValueError`` naming
    ``where`` and the key.

    Examples
    --------
    >>> from calibnb.calibration.persist import calibrator_from_json
    >>> document = {"format": "calibnb-calibrator", "format_version": 1, "calibnb": "0.1.0",
    ...             "class": "TemperatureScaling",
    ...             "params": {"criterion": "nll", "temperatures": None, "n_bins": 15, "binning": "width"},
    ...             "fitted": {"n_classes_": 3, "temperature_": 2.0, "best_score_": 0.5}}
    >>> calibrator_from_json(document).predict_proba([[2.0, 0.0, 0.0]]).round(3)
    array([[0.576, 0.212, 0.212]])
    >>> document["fitted"]["temperature_"] = -1.0
    >>> calibrator_from_json(document)
    Traceback (most recent call last):
    ValueError: calibrator: fitted.temperature_ must be > 0, got -1.0
    """
    if not isinstance(document, dict):
        raise ValueError(f"{where}: a calibrator file holds a JSON object, got {_kind(document)}")
    if document.get("format") != FORMAT:
        raise ValueError(f"{where}: not a calibrator file: its 'format' is {document.get('format')!r}, "
                         f"not {FORMAT!r}")
    name = document.get("class")
    if not isinstance(name, str) or name not in CALIBRATORS:
        raise ValueError(f"{where}: class {name!r} is not a calibrator of calibnb.calibration; "
                         f"one of {', '.join(CALIBRATORS)}")
    _keys(document, ENVELOPE, ENVELOPE, where)
    if document["format_version"] != FORMAT_VERSION or isinstance(document["format_version"], bool):
        raise ValueError(f"{where}: format_version {document['format_version']!r} is not one this calibnb "
                         f"reads ({FORMAT_VERSION})")
    if not isinstance(document["calibnb"], str):
        raise ValueError(f"{where}: calibnb must be the version string of the calibnb that wrote it")
    cls, spec = CALIBRATORS[name], SPECS[name]
    params = _section(document, "params", where)
    names = cls._get_param_names()
    _keys(params, names, names, f"{where}: params of {name}")
    decoded = {k: _decode(v, f"{where}: params.{k}") for k, v in params.items()}
    try:
        spec.check_params(decoded, f"{where}: params.")
    except (TypeError, ValueError) as error:  # a wrong type in a file is a bad file
        message = str(error)
        raise ValueError(message if message.startswith(where) else f"{where}: params: {message}") from None
    estimator = cls(**decoded)
    fitted = _section(document, "fitted", where)
    _keys(fitted, spec.required, [*spec.required, *spec.optional, *GENERIC], f"{where}: fitted attributes of {name}")
    state = {}
    for key, value in fitted.items():
        check = spec.attributes.get(key) or GENERIC[key]
        state[key] = check(_decode(value, f"{where}: fitted.{key}"), f"{where}: fitted.{key}")
    spec.check_state(state, decoded, f"{where}: fitted.")
    _check_class_count(state, f"{where}: fitted.")
    for key, value in state.items():
        setattr(estimator, key, value)
    _check_prediction(estimator, where)
    return estimator


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(type(value), type(value).__name__)


def _section(document: dict, key: str, where: str) -> dict:
    if not isinstance(document[key], dict):
        raise ValueError(f"{where}: {key} must be a JSON object, got {_kind(document[key])}")
    return document[key]


def _keys(mapping: dict, required, allowed, where: str) -> None:
    missing = [k for k in required if k not in mapping]
    if missing:
        raise ValueError(f"{where}: no {missing[0]!r}")
    unknown = [k for k in mapping if k not in allowed]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(allowed)}")


def _decode(value, where: str):
    """The Python value a JSON value of :func:`_encode` stands for (structure checked)."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [_decode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    kind = value.get("type")
    if kind == "float":
        _keys(value, ("type", "value"), ("type", "value"), where)
        if value["value"] not in _SPECIAL:
            raise ValueError(f"{where}: a tagged float is one of {list(_SPECIAL)}, got {value['value']!r}")
        return _SPECIAL[value["value"]]
    if kind == "tuple":
        _keys(value, ("type", "items"), ("type", "items"), where)
        if not isinstance(value["items"], list):
            raise ValueError(f"{where}: items must be a list")
        return tuple(_decode(v, f"{where}[{i}]") for i, v in enumerate(value["items"]))
    if kind == "ndarray":
        return _decode_array(value, where)
    if kind == "BSpline":
        keys = ("type", "t", "c", "k", "extrapolate", "axis")
        _keys(value, keys, keys, where)
        return {"type": "BSpline", **{k: _decode(value[k], f"{where}.{k}") for k in keys[1:]}}
    if kind == "IsotonicRegression":
        keys = ("type", "params", "fitted")
        _keys(value, keys, keys, where)
        for key in keys[1:]:
            if not isinstance(value[key], dict):
                raise ValueError(f"{where}.{key} must be a JSON object")
        return {"type": kind, **{key: {k: _decode(v, f"{where}.{key}.{k}") for k, v in value[key].items()}
                                 for key in keys[1:]}}
    raise ValueError(f"{where}: an object must be a tagged value (type ndarray, tuple, float, BSpline or "
                     f"IsotonicRegression), got type {kind!r}")


def _decode_array(value: dict, where: str) -> np.ndarray:
    keys = ("type", "dtype", "shape", "data")
    _keys(value, keys, keys, where)
    dtype, shape = value["dtype"], value["shape"]
    if dtype not in DTYPES:
        raise ValueError(f"{where}: dtype must be one of {DTYPES}, got {dtype!r}")
    if (not isinstance(shape, list) or len(shape) > 3
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
        raise ValueError(f"{where}: shape must be a list of at most 3 sizes >= 0, got {shape!r}")
    flat: list = []
    _flatten(value["data"], shape, flat, f"{where}.data")
    if dtype == "bool":
        if not all(isinstance(x, bool) for x in flat):
            raise ValueError(f"{where}: a bool array holds true and false only")
    elif dtype.startswith("int"):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
            raise ValueError(f"{where}: an {dtype} array holds integers only")
        info = np.iinfo(dtype)
        if flat and not info.min <= min(flat) <= max(flat) <= info.max:
            raise ValueError(f"{where}: a value does not fit {dtype}")
    else:
        if not all((isinstance(x, (int, float)) and not isinstance(x, bool)) or x in _SPECIAL for x in flat):
            raise ValueError(f"{where}: a {dtype} array holds numbers (and 'nan', 'inf', '-inf') only")
        flat = [_SPECIAL[x] if isinstance(x, str) else x for x in flat]
    with np.errstate(over="raise"):
        try:
            return np.array(flat, dtype=dtype).reshape(shape)
        except FloatingPointError:
            raise ValueError(f"{where}: a value overflows {dtype}") from None


def _flatten(data, shape: list, out: list, where: str) -> None:
    if not shape:
        if isinstance(data, (list, dict)):
            raise ValueError(f"{where}: nested deeper than its shape")
        out.append(data)
        return
    if not isinstance(data, list) or len(data) != shape[0]:
        raise ValueError(f"{where}: does not have the shape it declares")
    for i, item in enumerate(data):
        _flatten(item, shape[1:], out, f"{where}[{i}]")


# -- the checks of each class's hyper-parameters and fitted state ------------------------------


def _real(value, where: str, minimum=None, positive=False, maximum=None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where} must be a number, got {_kind(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{where} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{where} must be > 0, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{where} must be >= {minimum:g}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{where} must be <= {maximum:g}, got {value}")
    return value


def _array(value, where: str, ndim: int = 1, finite: bool = True, low=None, high=None,
           sorted_: bool = False, min_size: int = 0) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fi":
        raise ValueError(f"{where} must be a numeric array (a tagged ndarray), got {_kind(value)}")
    value = value.astype(np.float64)
    if value.ndim != ndim:
        raise ValueError(f"{where} must have {ndim} dimension(s), got shape {value.shape}")
    if value.size < min_size:
        raise ValueError(f"{where} must have at least {min_size} entries, got {value.size}")
    if finite and not np.isfinite(value).all():
        raise ValueError(f"{where} must be finite")
    checked = value[~np.isnan(value)]
    if low is not None and (checked < low).any():
        raise ValueError(f"{where} must be >= {low:g}, got {checked.min()}")
    if high is not None and (checked > high).any():
        raise ValueError(f"{where} must be <= {high:g}, got {checked.max()}")
    if sorted_ and (np.diff(value) < 0).any():
        raise ValueError(f"{where} must be sorted (non-decreasing)")
    return value


#: The most classes a calibrator file may declare (restoring predicts on a probe of that width).
MAX_CLASSES = 1_000_000


def _n_classes(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= MAX_CLASSES:
        raise ValueError(f"{where} must be an integer >= 2 and at most {MAX_CLASSES:,} (the classes of the "
                         f"fitted logits), got {value!r}")
    return value


def _score(value, where):
    return value if isinstance(value, float) and math.isnan(value) else _real(value, where)


def _temperature(value, where):
    return _real(value, where, positive=True)


def _scores(ndim):
    return lambda value, where: _array(value, where, ndim=ndim, finite=False)


def _grid(minimum=None, positive=False):
    return lambda value, where: _array(value, where, low=minimum, min_size=1) if not positive else \
        _positive_array(value, where)


def _positive_array(value, where):
    value = _array(value, where, min_size=1)
    if (value <= 0).any():
        raise ValueError(f"{where} must be > 0")
    return value


def _line(value, where):
    if not isinstance(value, tuple) or len(value) != 2:
        raise ValueError(f"{where} must be a tuple (intercept, slope)")
    return tuple(_real(v, f"{where}[{i}]") for i, v in enumerate(value))


def _weights(value, where):
    value = _array(value, where, low=0.0, high=1.0)
    if value.shape != (3,) or abs(value.sum() - 1.0) > 1e-9:
        raise ValueError(f"{where} must be 3 weights >= 0 that sum to 1, got {value.tolist()}")
    return value


def _spline(value, where):
    if not isinstance(value, dict) or value.get("type") != "BSpline":
        raise ValueError(f"{where} must be a tagged BSpline")
    t = _array(value["t"], f"{where}.t", sorted_=True, min_size=8)
    c = _array(value["c"], f"{where}.c")
    if value["k"] != 3 or value["axis"] != 0 or not isinstance(value["extrapolate"], bool):
        raise ValueError(f"{where}: a calibrator's spline is cubic (k 3), along axis 0, with extrapolate "
                         f"true or false; got k {value['k']!r}, axis {value['axis']!r}")
    if c.size != t.size - 4:
        raise ValueError(f"{where}: {t.size} knots need {t.size - 4} coefficients, got {c.size}")
    return BSpline(t, c, 3, extrapolate=value["extrapolate"])


#: What :class:`IsotonicCalibration` builds: the only isotonic fit a calibrator file may hold.
ISOTONIC_PARAMS = {"increasing": True, "out_of_bounds": "clip", "y_max": 1.0, "y_min": 0.0}


def _isotonic(value, where):
    if not isinstance(value, dict) or value.get("type") != "IsotonicRegression":
        raise ValueError(f"{where} must be a tagged IsotonicRegression")
    params, fitted = value["params"], value["fitted"]
    if params != ISOTONIC_PARAMS or any(isinstance(v, bool) != isinstance(ISOTONIC_PARAMS[k], bool)
                                        for k, v in params.items()):
        raise ValueError(f"{where}.params must be those IsotonicCalibration sets, {ISOTONIC_PARAMS}")
    required = ("X_min_", "X_max_", "X_thresholds_", "y_thresholds_", "increasing_")
    _keys(fitted, required, (*required, "n_features_in_"), f"{where}.fitted")
    x = _array(fitted["X_thresholds_"], f"{where}.fitted.X_thresholds_", sorted_=True, min_size=1)
    y = _array(fitted["y_thresholds_"], f"{where}.fitted.y_thresholds_", low=0.0, high=1.0, sorted_=True)
    if y.size != x.size:
        raise ValueError(f"{where}.fitted: X_thresholds_ and y_thresholds_ differ in length")
    low, high = (_real(fitted[k], f"{where}.fitted.{k}") for k in ("X_min_", "X_max_"))
    if not low <= high or fitted["increasing_"] is not True:
        raise ValueError(f"{where}.fitted: X_min_ <= X_max_ and increasing_ true are required")
    isotonic = IsotonicRegression(**ISOTONIC_PARAMS)
    isotonic.X_min_, isotonic.X_max_, isotonic.increasing_ = low, high, True
    isotonic.X_thresholds_, isotonic.y_thresholds_ = x, y
    if "n_features_in_" in fitted:
        isotonic.n_features_in_ = check_int(fitted["n_features_in_"], f"{where}.fitted.n_features_in_", minimum=1)
    isotonic._build_f(x, y)  # the interpolant f_, as unpickling rebuilds it
    return isotonic


class _Spec:
    """What a class's file holds: ``required`` fitted attributes (those ``predict_proba`` reads, and
    ``n_classes_``), ``optional`` ones (the search's record), a check of each, of the
    hyper-parameters, and of the state as a whole."""

    def __init__(self, attributes: dict, required, check_params=None, check_state=None):
        self.attributes = {"n_classes_": _n_classes, **attributes}
        self.required = ("n_classes_", *required)
        self.optional = tuple(k for k in attributes if k not in self.required)
        self.check_params = check_params or (lambda params, where: None)
        self.check_state = check_state or (lambda state, params, where: None)


def _scaling_params(choices: dict, grids: dict, more=()):
    def check(params, where):
        for key, allowed in choices.items():
            check_choice(params[key], f"{where}{key}", allowed)
        if "n_bins" in params:
            check_n_bins(params["n_bins"], f"{where}n_bins")
        for key, (minimum, positive) in grids.items():
            if params[key] is not None:
                check_grid(params[key], None, f"{where}{key}", positive=positive, minimum=minimum)
        for key, minimum in more:
            check_int(params[key], f"{where}{key}", minimum=minimum)
    return check


def _histogram_state(state, params, where):
    edges, accuracy = state["edges_"], state["bin_accuracy_"]
    if edges.size != params["n_bins"] + 1 or accuracy.size != params["n_bins"]:
        raise ValueError(f"{where}edges_ and bin_accuracy_ must have n_bins + 1 = {params['n_bins'] + 1} and "
                         f"n_bins entries, got {edges.size} and {accuracy.size}")


def _bbq_params(params, where):
    check_real(params["prior_strength"], f"{where}prior_strength", minimum=0.0, strict_minimum=True)
    check_real(params["range_factor"], f"{where}range_factor", minimum=1.0)


def _bbq_state(state, params, where):
    """One weight and one log marginal likelihood per model, the weights their softmax (within
    rounding); the averaged map's edges strictly increasing from 0 to 1, one probability a cell."""
    counts, weights, log_ml = state["n_bins_"], state["model_weights_"], state["log_marginal_likelihood_"]
    if (counts != np.round(counts)).any() or (counts < 1).any() or (np.diff(counts) != 1).any():
        raise ValueError(f"{where}n_bins_ must be consecutive whole bin counts >= 1")
    if not weights.size == log_ml.size == counts.size:
        raise ValueError(f"{where}n_bins_, model_weights_ and log_marginal_likelihood_ must have one entry a "
                         f"model, got {counts.size}, {weights.size} and {log_ml.size}")
    if (log_ml > 1e-9).any() or np.abs(weights - softmax(log_ml)).max() > 1e-9:
        raise ValueError(f"{where}model_weights_ must be the softmax of log_marginal_likelihood_ (each <= 0)")
    edges, probability = state["edges_"], state["bin_probability_"]
    if edges[0] != 0.0 or edges[-1] != 1.0 or (np.diff(edges) <= 0).any():
        raise ValueError(f"{where}edges_ must increase strictly from 0 to 1")
    if probability.size != edges.size - 1:
        raise ValueError(f"{where}bin_probability_ must have one entry a cell of edges_ ({edges.size - 1}), "
                         f"got {probability.size}")
    state["n_bins_"] = counts.astype(np.int64)
def _affine_params(names):
    def check(params, where):
        for key in names:
            check_regularisation(params[key], f"{where}{key}", allow_none=key == "reg_mu" and "reg_lambda" in names)
        check_int(params["cv"], f"{where}cv", minimum=2)
    return check


def _affine_state(diagonal: bool):
    """``coef_`` (K, K), or (K,) for vector scaling, and ``intercept_`` (K,) of the fitted class count."""
    def check(state, params, where):
        k = state["n_classes_"]
        shape = (k,) if diagonal else (k, k)
        if state["coef_"].shape != shape or state["intercept_"].shape != (k,):
            raise ValueError(f"{where}coef_ and intercept_ must have shapes {shape} and {(k,)} "
                             f"(n_classes_ is {k}), got {state['coef_'].shape} and {state['intercept_'].shape}")
    return check


def _affine_spec(diagonal: bool):
    names = ("reg_mu",) if diagonal else ("reg_lambda", "reg_mu")
    return _Spec(
        {"coef_": lambda v, w: _array(v, w, ndim=1 if diagonal else 2),
         "intercept_": lambda v, w: _array(v, w),
         "reg_lambda_": lambda v, w: _real(v, w, minimum=0.0),
         "reg_mu_": lambda v, w: _real(v, w, minimum=0.0),
         "cv_scores_": lambda v, w: _array(v, w, ndim=2 if np.ndim(v) == 2 else 1, finite=False),
         "n_iter_": lambda v, w: check_int(v, w, minimum=0)},
        ["coef_", "intercept_"], _affine_params(names), _affine_state(diagonal))


SPECS = {
    "TemperatureScaling": _Spec(
        {"temperature_": _temperature, "best_score_": _score, "scores_": _scores(1),
         "temperatures_": _grid(positive=True)},  # the searched grid, once extended at its edge
        ["temperature_"],
        _scaling_params({"criterion": ("ece", "nll"), "binning": ("width", "mass")},
                        {"temperatures": (None, True)})),
    "FocalTemperatureScaling": _Spec(
        {"gamma_": lambda v, w: _real(v, w, minimum=-1.0), "temperature_": _temperature,
         "best_score_": _score, "scores_": _scores(2), "gammas_": _grid(-1.0), "temperatures_": _grid(positive=True),
         "line_": _line, "line_gammas_": _scores(1), "line_temperatures_": _scores(1), "line_scores_": _scores(1)},
        ["gamma_", "temperature_"],
        _scaling_params({"criterion": ("ece", "nll"), "search": ("grid", "loop", "line"),
                         "binning": ("width", "mass")},
                        {"gammas": (-1.0, False), "temperatures": (None, True)})),
    "EnsembleTemperatureScaling": _Spec(
        {"temperature_": _temperature, "weights_": _weights}, ["temperature_", "weights_"],
        _scaling_params({"loss": ("mse", "nll")}, {})),
    "HistogramBinning": _Spec(
        {"edges_": lambda v, w: _array(v, w, low=0.0, high=1.0, sorted_=True, min_size=2),
         "bin_accuracy_": lambda v, w: _array(v, w, low=0.0, high=1.0, min_size=1)},
        ["edges_", "bin_accuracy_"], _scaling_params({}, {}), _histogram_state),
    "IsotonicCalibration": _Spec({"isotonic_": _isotonic}, ["isotonic_"]),
    "SplineCalibration": _Spec(
        {"spline_": _spline,
         "sorted_conf_": lambda v, w: _array(v, w, low=0.0, high=1.0, sorted_=True, min_size=1)},
        ["spline_", "sorted_conf_"], _scaling_params({}, {}, more=[("n_knots", 2)])),
    "BayesianBinningQuantiles": _Spec(
        {"n_bins_": lambda v, w: _array(v, w, low=1.0, high=MAX_BINS, min_size=1),
         "log_marginal_likelihood_": lambda v, w: _array(v, w, min_size=1),
         "model_weights_": lambda v, w: _array(v, w, low=0.0, high=1.0, min_size=1),
         "edges_": lambda v, w: _array(v, w, low=0.0, high=1.0, sorted_=True, min_size=2),
         "bin_probability_": lambda v, w: _array(v, w, low=0.0, high=1.0, min_size=1)},
        ["n_bins_", "log_marginal_likelihood_", "model_weights_", "edges_", "bin_probability_"],
        _bbq_params, _bbq_state),
    "VectorScaling": _affine_spec(diagonal=True),
    "MatrixScaling": _affine_spec(diagonal=False),
    "DirichletCalibration": _affine_spec(diagonal=False),
    "Uncalibrated": _Spec({}, []),
}


def _classes(value, where):
    value = _array(value, where)
    return value.astype(np.int64) if (value == np.round(value)).all() else value


#: scikit-learn's attributes of any fitted estimator, which a calibrator may also carry.
GENERIC = {"n_features_in_": lambda v, w: check_int(v, w, minimum=1), "classes_": _classes}


def _check_class_count(state: dict, where: str) -> None:
    """scikit-learn's ``n_features_in_`` and ``classes_`` agree with the class count fitted (one
    column, ``n_features_in_ = 1``, is binary logits: two classes)."""
    k = state.get("n_classes_")
    if k is None:
        return
    features = state.get("n_features_in_", k)
    if features != k and (features, k) != (1, 2):
        raise ValueError(f"{where}n_features_in_ is {features}, but n_classes_ is {k}")
    if "classes_" in state and not np.array_equal(state["classes_"], np.arange(k)):
        raise ValueError(f"{where}classes_ must be 0..{k - 1} (n_classes_ is {k})")


def _check_prediction(estimator, where: str) -> None:
    """The restored calibrator maps a probe of logits to finite probabilities."""
    columns = getattr(estimator, "n_features_in_", estimator.n_classes_)  # 1: binary logits
    probe = np.linspace(-3.0, 3.0, 4 * columns).reshape(4, columns)
    probe[1] = 0.0
    with np.errstate(all="ignore"):
        probs = estimator.predict_proba(probe)
    if not (np.isfinite(probs).all() and (probs >= 0).all() and np.allclose(probs.sum(axis=1), 1.0)):
        raise ValueError(f"{where}: the restored {type(estimator).__name__} does not give probabilities")
