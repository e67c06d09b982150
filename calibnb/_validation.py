"""Input checks shared by every public function of calibnb.

The contract (ARCHITECTURE.md, "Cross-cutting rules"): bad input raises ``ValueError`` or ``TypeError`` whose
message names the argument and the problem; nothing returns NaN silently. Arrays may be numpy
arrays, torch tensors (any device, any float dtype) or nested sequences; the numpy-side checks
return float64 / int64 numpy arrays so that callers compute in float64.
"""

from __future__ import annotations

import difflib
import numbers

import numpy as np

#: Rows of a probability matrix must sum to 1 within this absolute tolerance. Softmax outputs
#: computed in float32 or float64 are well inside it. Half-precision inputs (float16, bfloat16)
#: are allowed twice their machine epsilon instead (2e-3 and 1.6e-2), since rounding each entry
#: moves the sum by about that much.
SIMPLEX_ATOL = 1e-4
_HALF_EPS = {"float16": 2.0**-10, "torch.float16": 2.0**-10, "torch.bfloat16": 2.0**-7}


class DtypeError(TypeError, ValueError):
    """An array of the wrong dtype (float labels, say).

    Both a ``TypeError`` (the type is wrong, as in numpy and torch) and a ``ValueError`` (the
    issues' contract: every bad input to a metric or loss is a ``ValueError``), so either
    ``except`` clause catches it.
    """


def to_numpy(x, name: str) -> np.ndarray:
    """Return ``x`` as a numpy array (torch tensors are detached and moved to the CPU)."""
    if hasattr(x, "tocsr") or hasattr(x, "to_dense") and getattr(x, "is_sparse", False):
        raise TypeError(f"{name} is sparse: sparse input is not supported; pass a dense array "
                        f"(.toarray() or .to_dense())")
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, without importing torch
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be array-like, got {type(x).__name__}") from exc
    if arr.dtype == object:
        raise TypeError(f"{name} must be a numeric array, got dtype object")
    return arr


def check_probs(probs, name: str = "probs", atol: float = SIMPLEX_ATOL,
                binary: bool = False) -> np.ndarray:
    """Validate a probability matrix ``(N, K)`` and return it as float64.

    Raises ``ValueError`` when it is not 2-D, empty, has fewer than two classes, holds NaN/inf
    or negative entries, or has a row whose sum differs from 1 by more than ``atol``; when the
    values look like logits (some outside [0, 1]) the message says to apply a softmax first.
    With ``binary``, a 1-D array ``(N,)`` is the probability of class 1 of two classes (as
    scikit-learn's ``y_prob`` and netcal's binary input) and becomes ``(1 − p, p)``.
    """
    atol = max(atol, 2 * _HALF_EPS.get(str(getattr(probs, "dtype", "")), 0.0))
    if binary and np.ndim(to_numpy(probs, name)) == 1:
        p = check_vector(probs, name, minimum=0.0, maximum=1.0)
        if p.size == 0:
            raise ValueError(f"{name} is empty: it has no samples")
        return np.column_stack([1.0 - p, p])
    arr = _real_matrix(probs, name).astype(np.float64, copy=False)
    if (arr < 0).any():
        raise ValueError(f"{name} contains negative probabilities (min {arr.min():.3g})"
                         + _logits_hint(arr))
    sums = arr.sum(axis=1)
    worst = np.abs(sums - 1.0).max()
    if worst > atol:
        row = int(np.abs(sums - 1.0).argmax())
        raise ValueError(
            f"{name} rows must sum to 1 (tolerance {atol:g}); row {row} sums to {sums[row]:.6g}"
            + _logits_hint(arr)
        )
    return arr


def _logits_hint(arr: np.ndarray) -> str:
    """The hint of a probability error whose values look like logits (some outside [0, 1])."""
    if (arr < 0).any() or (arr > 1).any():
        return ("; these look like logits: apply a softmax first "
                "(scipy.special.softmax(z, axis=1))")
    return ""


def check_labels(
    labels, n_samples: int, n_classes: int, name: str = "labels", probs_name: str = "probs"
) -> np.ndarray:
    """Validate integer class labels ``(N,)`` in ``[0, n_classes)`` and return them as int64.

    Whole-number floats (1.0, 2.0, as pandas and scikit-learn often hand labels over) are taken
    as the integers they equal; any other float (1.5, NaN) is refused, naming the first.
    ``probs_name`` is the argument the ``N`` rows come from, named when the lengths differ."""
    arr = to_numpy(labels, name)
    if arr.dtype != bool and np.issubdtype(arr.dtype, np.floating):
        arr = _whole_floats(arr, name)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise DtypeError(f"{name} must be integer class indices, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n_samples,), got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(f"{name} has {arr.shape[0]} entries but {probs_name} has {n_samples} rows")
    if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(
            f"{name} must lie in [0, {n_classes}); got values in [{arr.min()}, {arr.max()}]"
        )
    return arr.astype(np.int64, copy=False)


def _whole_floats(arr: np.ndarray, name: str) -> np.ndarray:
    """Float labels that are all whole numbers, as int64; a ``DtypeError`` naming the first that
    is not."""
    whole = np.isfinite(arr) & (arr == np.round(arr)) & (np.abs(arr) < 2.0**53)
    if not whole.all():
        at = np.unravel_index(int(np.argmin(whole)), arr.shape)
        raise DtypeError(f"{name} must be integer class indices (whole numbers), got "
                         f"{arr[at]} at index {at[0] if len(at) == 1 else at}")
    return arr.astype(np.int64)


def check_probs_labels(probs, labels, atol: float = SIMPLEX_ATOL, names=("probs", "labels")):
    """Validate a ``(probs, labels)`` pair; return ``(float64 probs, int64 labels)``.

    ``probs`` may be one column ``(N,)``, the probability of class 1 of two (:func:`check_probs`
    with ``binary``); ``names`` are the arguments' names in the messages."""
    p = check_probs(probs, names[0], atol=atol, binary=True)
    try:
        y = check_labels(labels, p.shape[0], p.shape[1], names[1], probs_name=names[0])
    except ValueError as error:
        if np.ndim(to_numpy(probs, names[0])) != 1:
            raise
        raise type(error)(f"{error} ({names[0]} is one column: the probability of class 1 "
                          f"of two classes)") from None
    return p, y


def check_logits(logits, name: str = "logits") -> np.ndarray:
    """Validate a logit matrix ``(N, K)`` (finite, 2-D, K >= 2) and return it as float64."""
    return _real_matrix(logits, name).astype(np.float64, copy=False)


def check_logit_columns(logits, name: str = "logits") -> tuple[np.ndarray, int]:
    """Validate a calibrator's logits: ``(N, K)`` with K >= 2, or one binary column ``(N,)`` or
    ``(N, 1)``, the logit of class 1 against class 0 (as scikit-learn's binary classifiers and
    netcal take it), which becomes ``(0, z)``. Returns the float64 ``(N, K)`` logits and the
    number of columns given (1 for a binary column, as scikit-learn's ``n_features_in_``)."""
    arr = to_numpy(logits, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is "
                         f"required: one binary logit column, or one column per class")
    z = _real_matrix(arr, name, min_columns=1).astype(np.float64, copy=False)
    if z.shape[1] == 1:
        return np.column_stack([np.zeros_like(z[:, 0]), z[:, 0]]), 1
    return z, z.shape[1]


def check_logits_labels(logits, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validate a ``(logits, labels)`` pair (:func:`check_logits`, :func:`check_labels`, one label
    per logit row); return ``(float64 logits, int64 labels)``."""
    z = check_logits(logits, "logits")
    return z, check_labels(labels, z.shape[0], z.shape[1], "labels", probs_name="logits")


def check_n_classes(logits: np.ndarray, n_classes: int, name: str, expected_by: str) -> np.ndarray:
    """Refuse validated ``logits`` whose number of classes (columns) is not ``n_classes``.

    Logits of another class count would be scored or calibrated without error and mean nothing
    (a temperature fitted on 5 classes applied to 7). The message reads ``f"{name} have 7
    classes but {expected_by} 5"``, e.g. ``expected_by="the calibrator was fitted on"``.
    """
    if logits.shape[1] != n_classes:
        raise ValueError(f"{name} have {logits.shape[1]} classes but {expected_by} {n_classes}")
    return logits


def check_vector(
    values,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    min_size: int = 1,
    non_decreasing: bool = False,
    allow_nan: bool = False,
) -> np.ndarray:
    """Validate a 1-D array of real numbers (at least ``min_size`` of them, within optional bounds,
    sorted if ``non_decreasing``) and return it as float64.

    NaN is refused unless ``allow_nan`` (where NaN marks something, such as an empty bin); inf
    always. Bins' edges, per-bin parameters and per-sample statistics go through here.
    """
    arr = to_numpy(values, name)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} entries, got {arr.size}")
    arr = arr.astype(np.float64, copy=False)
    if np.isinf(arr).any() or (not allow_nan and np.isnan(arr).any()):
        raise ValueError(f"{name} contains {'inf' if allow_nan else 'NaN or inf'}")
    present = arr[~np.isnan(arr)] if allow_nan else arr
    if minimum is not None and present.size and present.min() < minimum:
        raise ValueError(f"{name} must be >= {minimum:g}, got values down to {present.min():g}")
    if maximum is not None and present.size and present.max() > maximum:
        raise ValueError(f"{name} must be <= {maximum:g}, got values up to {present.max():g}")
    if non_decreasing and (np.diff(arr) < 0).any():
        at = int(np.argmax(np.diff(arr) < 0))
        raise ValueError(f"{name} must be sorted (non-decreasing), but entry {at + 1} ({arr[at + 1]:g}) "
                         f"is below entry {at} ({arr[at]:g})")
    return arr


#: :func:`_real_matrix` checks finiteness on blocks of about this many entries.
FINITE_CHECK_ELEMENTS = 1 << 18


def _real_matrix(x, name: str, min_columns: int = 2) -> np.ndarray:
    """A finite real ``(N, K)`` array with N >= 1 and K >= ``min_columns``, in its own dtype."""
    arr = to_numpy(x, name)
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise DtypeError(f"{name} must hold real numbers, got dtype {arr.dtype} "
                         f"(Complex data not supported)")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    check_matrix_shape(arr.shape, name, min_columns)
    # a block of rows at a time: no N x K mask of the whole matrix
    rows = max(1, FINITE_CHECK_ELEMENTS // arr.shape[1])
    if not all(np.isfinite(arr[start : start + rows]).all() for start in range(0, arr.shape[0], rows)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def check_matrix_shape(shape: tuple, name: str, min_columns: int = 2) -> None:
    """``shape`` is ``(N, K)`` with N >= 1 and K >= ``min_columns`` (a numpy array's or a tensor's)."""
    shape = tuple(shape)
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_classes), got shape {shape}")
    if shape[0] == 0:
        raise ValueError(f"{name} is empty: it has no samples")
    if shape[1] < min_columns:
        raise ValueError(f"{name} must have at least 2 classes (columns), got {shape[1]}")


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """Validate an integer hyper-parameter (bools are rejected) with optional bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


#: The most bins any binned estimator or calibrator accepts: a million bins is far beyond any
#: use (the papers use 15) and costs tens of MB; a larger count is refused before allocating.
MAX_BINS = 1_000_000


def check_n_bins(value, name: str = "n_bins") -> int:
    """Validate a number of bins: an integer in ``[1, MAX_BINS]``, refused before any allocation."""
    value = check_int(value, name, minimum=1)
    if value > MAX_BINS:
        raise ValueError(f"{name} must be at most {MAX_BINS:,}, got {value:,}")
    return value


def check_real(
    value,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_minimum: bool = False,
) -> float:
    """Validate a finite real hyper-parameter within optional bounds and return it as float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None:
        if strict_minimum and value <= minimum:
            raise ValueError(f"{name} must be > {minimum:g}, got {value:g}")
        if not strict_minimum and value < minimum:
            raise ValueError(f"{name} must be >= {minimum:g}, got {value:g}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum:g}, got {value:g}")
    return value


def check_grid(values, default, name: str, positive: bool = False,
               minimum: float | None = None) -> np.ndarray:
    """A non-empty 1-D float64 grid of finite values (``default`` when ``values`` is None), each
    ``> 0`` if ``positive``, else ``>= minimum`` if given: a calibrator's candidate parameters."""
    grid = np.asarray(default if values is None else values, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {grid.shape}")
    for v in grid:
        check_real(float(v), name, minimum=0.0 if positive else minimum, strict_minimum=positive)
    return grid


def check_type(value, name: str, types, what: str):
    """``value`` if it is an instance of ``types``, else a ``TypeError`` naming ``name`` and saying
    ``what`` it must be."""
    if not isinstance(value, types):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def check_table(table, name: str = "table", columns=()):
    """``table`` if it is a pandas DataFrame with ``columns``; a ``TypeError``/``ValueError`` naming
    ``name`` and the first missing column otherwise."""
    import pandas as pd

    check_type(table, name, pd.DataFrame, "a pandas DataFrame (a calibnb.runs.load_results table)")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{name} has no column {missing[0]!r}")
    return table


def did_you_mean(name, known) -> str:
    """The hint for a mistyped name: `` (did you mean 'gamma'?)`` when a close match exists
    (``difflib``), else an empty string."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_choice(value, name: str, choices) -> str:
    """Validate that ``value`` is one of ``choices`` (used for string options). A bool is not
    taken for the number it equals (``case=True`` is not ``case=1``)."""
    if isinstance(value, bool) and not any(isinstance(c, bool) for c in choices):
        raise TypeError(f"{name} must be one of {sorted(choices)}, got the bool {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


# --- Torch tensors kept on their device (the streamed metrics and ETS) -------------------------

def check_device_logit_columns(logits, name: str = "logits"):
    """:func:`check_logit_columns` for a torch tensor, kept on its device and in its float dtype
    (integers become float64): ``(N, K)`` with K >= 2, or one binary column, which becomes
    ``(0, z)``. Returns the tensor and the number of columns given."""
    z = _device_matrix(logits, name, min_columns=1)
    if z.shape[1] == 1:
        return _torch().cat([z.new_zeros(z.shape), z], dim=1), 1
    return z, z.shape[1]


def check_device_probs_labels(probs, labels, atol: float = SIMPLEX_ATOL, names=("probs", "labels")):
    """:func:`check_probs_labels` for torch tensors, kept on the device of ``probs`` (labels are
    moved there); the same refusals and messages. Returns ``(probs, int64 labels)``."""
    atol = max(atol, 2 * _HALF_EPS.get(str(getattr(probs, "dtype", "")), 0.0))
    p = _device_matrix(probs, names[0], min_columns=2, binary=True)
    if bool((p < 0).any()):
        raise ValueError(f"{names[0]} contains negative probabilities (min {float(p.min()):.3g})"
                         + _logits_hint(np.array([float(p.min()), float(p.max())])))
    error = (p.sum(dim=1, dtype=_torch().float64) - 1.0).abs()
    worst = float(error.max())
    if worst > atol:
        row = int(error.argmax())
        raise ValueError(f"{names[0]} rows must sum to 1 (tolerance {atol:g}); row {row} sums to "
                         f"{float(p[row].double().sum()):.6g}"
                         + _logits_hint(np.array([float(p.min()), float(p.max())])))
    return p, check_device_labels(labels, p, names[1], names[0])


def check_device_labels(labels, like, name: str = "labels", probs_name: str = "probs"):
    """:func:`check_labels` for a torch tensor (or array) of labels, as int64 on ``like``'s device,
    with ``like.shape == (N, K)``."""
    torch = _torch()
    if not torch.is_tensor(labels):
        return torch.as_tensor(check_labels(labels, like.shape[0], like.shape[1], name, probs_name),
                               device=like.device)
    if labels.is_floating_point():
        if not bool((torch.isfinite(labels) & (labels == labels.round())).all()):
            raise DtypeError(f"{name} must be integer class indices (whole numbers), got dtype "
                             f"{labels.dtype} with other values")
        labels = labels.to(torch.int64)
    if labels.dtype == torch.bool or labels.is_complex() or labels.is_floating_point():
        raise DtypeError(f"{name} must be integer class indices, got dtype {labels.dtype}")
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n_samples,), got shape {tuple(labels.shape)}")
    if labels.shape[0] != like.shape[0]:
        raise ValueError(f"{name} has {labels.shape[0]} entries but {probs_name} has {like.shape[0]} rows")
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= like.shape[1]:
        raise ValueError(f"{name} must lie in [0, {like.shape[1]}); got values in [{low}, {high}]")
    return labels.to(device=like.device, dtype=torch.int64)


def _device_matrix(x, name: str, min_columns: int, binary: bool = False):
    """A finite real tensor ``(N, K)``, N >= 1, K >= 2 (one column of logits is allowed with
    ``min_columns=1``; a 1-D ``binary`` probability column becomes ``(1 − p, p)``)."""
    torch = _torch()
    if x.is_sparse:
        raise TypeError(f"{name} is sparse: sparse input is not supported; pass a dense array "
                        f"(.toarray() or .to_dense())")
    if x.is_complex():
        raise DtypeError(f"{name} must hold real numbers, got dtype {x.dtype} (Complex data not supported)")
    if x.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {x.dtype}")
    x = x.detach()
    if not x.is_floating_point():
        x = x.to(torch.float64)
    if x.ndim == 1:
        x = torch.stack([1.0 - x, x], dim=1) if binary else x[:, None]
    check_matrix_shape(x.shape, name, min_columns)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return x


def _torch():
    import torch
    return torch
