"""Bin assignment shared by every binned calibration estimator.

Two binnings of confidences in ``[0, 1]``, both with half-open ``(lo, hi]`` bins:

* ``"width"``: ``n_bins`` equal-width bins on ``linspace(0, 1, n_bins + 1)`` as in
  :cite:t:`guo2017calibration` and the papers' code; a confidence of exactly 0 falls in the
  first bin (the papers' ``gt(lo) & le(hi)`` test drops it; top-label confidences are never 0).
* ``"mass"``: equal-mass (adaptive) bins of :cite:t:`nixon2019measuring` (AdaECE) and
  :cite:t:`kumar2019verified` (ECE_EM). The sorted confidences are split into ``n_bins`` groups
  whose sizes differ by at most one (``numpy.array_split``) and each interior edge is the midpoint
  between the last value of one group and the first of the next. No sample is dropped (the papers'
  ``np.interp`` edges with ``(lo, hi]`` bins lose the lowest confidence). Tied confidences always
  share a bin, so the binning does not depend on the order of the samples; when ties straddle a
  split some bins come out empty. These are the bins of Kumar et al.'s ``get_equal_bins``.

``bin_edges`` returns the ``n_bins + 1`` edges, ``assign_bins`` maps values to bin indices, and
``bin_sums`` accumulates the per-bin counts and sums the estimators need; all three are
vectorised (``bincount``/``searchsorted``, no Python loop over samples or bins) and check their
arguments. The metrics, which validated theirs once, call ``assign_bins_unchecked`` and
``bin_sums_unchecked``.
"""

from __future__ import annotations

import numpy as np

from calibnb._validation import DtypeError, check_choice, check_n_bins, check_vector, to_numpy

BINNINGS = ("width", "mass")


def bin_edges(confidences, n_bins: int = 15, binning: str = "width") -> np.ndarray:
    """Return the ``n_bins + 1`` non-decreasing bin edges, from 0 to 1.

    Parameters
    ----------
    confidences : array-like of shape (N,)
        Values in ``[0, 1]`` (only used by ``binning="mass"``, but always validated).
    n_bins : int
        Number of bins, at least 1.
    binning : {"width", "mass"}
        Equal-width edges ``linspace(0, 1, n_bins + 1)`` or equal-mass edges (module docstring).

    Examples
    --------
    >>> from calibnb.metrics import bin_edges
    >>> bin_edges([0.1, 0.4, 0.6, 0.9], n_bins=4)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    >>> bin_edges([0.1, 0.4, 0.6, 0.9], n_bins=2, binning="mass")  # midway between 0.4 and 0.6
    array([0. , 0.5, 1. ])

    Tied confidences share a bin, so a tie across the split leaves a bin empty:

    >>> bin_edges([0.3, 0.7, 0.7, 0.7], n_bins=2, binning="mass")
    array([0. , 0.7, 1. ])
    """
    conf = check_confidences(confidences)
    n_bins = check_n_bins(n_bins)
    check_choice(binning, "binning", BINNINGS)
    if binning == "width":
        return np.linspace(0.0, 1.0, n_bins + 1)
    return mass_edges_sorted(np.sort(conf), n_bins)


def mass_group_starts(n: int, n_bins: int) -> np.ndarray:
    """The first sorted index of each equal-mass group 1..n_bins-1 that holds a sample: groups of
    ``numpy.array_split``'s sizes (differing by at most one). They depend on ``n`` alone, so a
    device implementation (AdaFocal's validation bins) reads only the values at these indices.
    Increasing; groups left empty when ``n < n_bins`` are not listed."""
    q, r = divmod(n, n_bins)
    j = np.arange(1, n_bins)
    starts = j * q + np.minimum(j, r)
    return starts[starts < n]


def mass_edges_sorted(sorted_conf: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-mass edges of already sorted confidences (no validation; see ``bin_edges``):
    midpoints between the groups of :func:`mass_group_starts`."""
    s = mass_group_starts(sorted_conf.shape[0], n_bins)
    interior = np.ones(n_bins - 1)  # groups left empty when N < n_bins start at the top edge
    interior[: len(s)] = (sorted_conf[s - 1] + sorted_conf[s]) / 2.0
    return np.concatenate(([0.0], interior, [1.0]))


def assign_bins(values, edges) -> np.ndarray:
    """Index in ``[0, len(edges) - 1)`` of the ``(lo, hi]`` bin holding each value.

    Values at or below ``edges[1]`` go to bin 0 (so 0 lands in the first bin) and values above
    ``edges[-2]`` to the last bin. Works on arrays of any shape (e.g. all class probabilities).
    ``values`` must be finite and ``edges`` a sorted (non-decreasing) 1-D array of at least two
    finite numbers; the metrics, which bin validated values, call ``assign_bins_unchecked()``.

    Examples
    --------
    >>> from calibnb.metrics import assign_bins
    >>> assign_bins([0.0, 0.25, 0.3, 1.0], [0.0, 0.25, 0.5, 0.75, 1.0])  # (lo, hi] bins
    array([0, 0, 1, 3])
    """
    values, edges = check_values_and_edges(values, edges)
    return np.searchsorted(edges[1:-1], values, side="left")


def assign_bins_unchecked(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """:func:`assign_bins` on finite values and sorted edges (no validation)."""
    return np.searchsorted(edges[1:-1], values, side="left")


def check_values_and_edges(values, edges) -> tuple[np.ndarray, np.ndarray]:
    """The arguments of :func:`assign_bins`: finite real ``values`` of any shape, and ``edges`` a
    sorted 1-D array of at least two finite numbers (float64)."""
    arr = to_numpy(values, "values")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"values must hold real numbers, got dtype {arr.dtype}")
    if not np.isfinite(arr).all():
        raise ValueError("values contains NaN or inf")
    return arr, check_vector(edges, "edges", min_size=2, non_decreasing=True)


def bin_sums(bins, n_bins: int, confidences, correct):
    """Per-bin ``(count, sum of confidences, sum of correctness)``, each of shape (n_bins,).

    ``bins`` are integer bin indices in ``[0, n_bins)`` (:func:`assign_bins`), ``confidences``
    and ``correct`` values in ``[0, 1]`` of the same length. The metrics, which sum validated
    arrays, call ``bin_sums_unchecked()``.

    Examples
    --------
    >>> from calibnb.metrics import bin_sums
    >>> count, conf_sum, acc_sum = bin_sums([0, 0, 1], 2, [0.2, 0.4, 0.7], [0.0, 1.0, 1.0])
    >>> count, conf_sum, acc_sum
    (array([2., 1.]), array([0.6, 0.7]), array([1., 1.]))
    >>> print(f"{abs(conf_sum - acc_sum).sum() / count.sum():.4f}")  # the ECE of the two bins
    0.2333
    """
    n_bins = check_n_bins(n_bins)
    index = to_numpy(bins, "bins")
    if index.dtype == bool or not np.issubdtype(index.dtype, np.integer):
        raise DtypeError(f"bins must be integer bin indices, got dtype {index.dtype}")
    if index.ndim != 1:
        raise ValueError(f"bins must be a 1-D array, got shape {index.shape}")
    if index.size and (index.min() < 0 or index.max() >= n_bins):
        raise ValueError(f"bins must lie in [0, {n_bins}) (n_bins); got values in [{index.min()}, {index.max()}]")
    arrays = [check_vector(a, name, minimum=0.0, maximum=1.0, min_size=0)
              for a, name in ((confidences, "confidences"), (correct, "correct"))]
    for a, name in zip(arrays, ("confidences", "correct")):
        if a.shape != index.shape:
            raise ValueError(f"{name} has {a.size} entries but bins has {index.size}")
    return bin_sums_unchecked(index, n_bins, *arrays)


def bin_sums_unchecked(bins: np.ndarray, n_bins: int, confidences: np.ndarray, correct: np.ndarray):
    """:func:`bin_sums` on validated arrays (no validation)."""
    count = np.bincount(bins, minlength=n_bins).astype(np.float64)
    conf_sum = np.bincount(bins, weights=confidences, minlength=n_bins)
    acc_sum = np.bincount(bins, weights=correct, minlength=n_bins)
    return count, conf_sum, acc_sum


def check_confidences(confidences, name: str = "confidences") -> np.ndarray:
    """Validate a 1-D, non-empty array of finite values in ``[0, 1]``; return it as float64."""
    arr = to_numpy(confidences, name)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    if arr.min() < 0 or arr.max() > 1:
        raise ValueError(f"{name} must lie in [0, 1]; got values in [{arr.min()}, {arr.max()}]")
    return arr
