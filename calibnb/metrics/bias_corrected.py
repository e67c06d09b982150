"""Binned estimators that correct the upward bias of the plug-in ECE.

* ``debiased_ece``: Kumar, Liang & Ma (2019, Sec. 5, "debiased estimator"), the top-label L2
  calibration error over equal-mass bins with the per-bin variance of the accuracy subtracted;
  the same number as ``calibration.get_top_calibration_error(p=2, debias=True)`` on continuous
  confidences (``lower_bound_scaling_top_ce``, 15 equal-mass bins).
* ``ece_sweep``: Roelofs et al. (2022, Sec. 4), the equal-mass L1 ECE with the largest number of
  bins for which the bin accuracies are still monotone (non-decreasing) in confidence.
"""

from __future__ import annotations

import numpy as np

from calibnb._validation import check_int, check_n_bins
from calibnb.metrics.binning import assign_bins_unchecked, bin_sums_unchecked, mass_edges_sorted
from calibnb.metrics.toplabel import top_label


def debiased_ece(probs, labels, n_bins: int = 15, squared: bool = False) -> float:
    """Debiased top-label L2 calibration error with equal-mass bins (Kumar et al. 2019).

    Per bin b with n_b >= 2 samples, mean confidence r_b and accuracy a_b, the squared gap is
    corrected by the variance of a_b: e_b = (r_b - a_b)^2 - a_b (1 - a_b) / (n_b - 1); bins with
    fewer than two samples contribute 0. The estimate of the squared error, E^2 = sum_b n_b / N e_b,
    is unbiased for a calibrated bin whose confidences are constant and can be negative; it is
    returned as is with ``squared=True``, otherwise ``sqrt(max(E^2, 0))``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.metrics import debiased_ece, ece
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 1000)  # calibrated: class 0 is right with probability conf
    >>> probs, labels = np.column_stack([conf, 1 - conf]), (rng.random(1000) > conf).astype(int)
    >>> round(ece(probs, labels, binning="mass"), 4)  # the plug-in estimate: noise reads as error
    0.0336
    >>> debiased_ece(probs, labels)  # the squared estimate is slightly negative
    0.0
    >>> round(debiased_ece(probs, labels, squared=True), 6)
    -0.000469
    """
    conf, correct = top_label(probs, labels)
    n_bins = check_n_bins(n_bins)
    if not isinstance(squared, bool):
        raise TypeError(f"squared must be a bool, got {squared!r}")
    edges = mass_edges_sorted(np.sort(conf), n_bins)
    bins = bin_sums_unchecked(assign_bins_unchecked(conf, edges), n_bins, conf, correct)
    return debiased_from_bins(*bins, squared=squared)


def debiased_from_bins(count, conf_sum, acc_sum, squared: bool = False) -> float:
    """``debiased_ece`` from the per-bin sums of ``binning.bin_sums``."""
    full = count >= 2
    n_b, r, a = count[full], conf_sum[full] / count[full], acc_sum[full] / count[full]
    squared_error = float((n_b * ((r - a) ** 2 - a * (1.0 - a) / (n_b - 1.0))).sum() / count.sum())
    return squared_error if squared else float(np.sqrt(max(squared_error, 0.0)))


def ece_sweep(probs, labels, max_bins: int | None = None, return_n_bins: bool = False):
    """ECE_SWEEP (Roelofs et al. 2022): equal-mass L1 ECE at the largest monotone bin count.

    For b = 1, 2, ... the confidences are split into b equal-mass bins (as in ``ece(...,
    binning="mass")``); the sweep stops at the first b whose non-empty bins' accuracies are not
    non-decreasing in confidence and uses b - 1 bins (or ``max_bins``, default N, if none fails).
    The sweep stops at N bins whatever ``max_bins``: beyond N the equal-mass bins hold one sample
    each and the rest are empty, so every b > N gives the bins (and the ECE) of b = N.
    One sort, then O(b log N) per step from cumulative sums. With ``return_n_bins=True`` returns
    ``(ece, b)``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.metrics import ece_sweep
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 1000)  # calibrated: class 0 is right with probability conf
    >>> probs, labels = np.column_stack([conf, 1 - conf]), (rng.random(1000) > conf).astype(int)
    >>> value, n_bins = ece_sweep(probs, labels, return_n_bins=True)
    >>> round(value, 4), n_bins  # 7 equal-mass bins would have a less accurate bin above another
    (0.022, 6)
    """
    conf, correct = top_label(probs, labels)
    max_bins = conf.size if max_bins is None else min(check_int(max_bins, "max_bins", minimum=1), conf.size)
    order = np.argsort(conf, kind="stable")
    value, n_bins = sweep_sorted(conf[order], correct[order], max_bins)
    return (value, n_bins) if return_n_bins else value


def sweep_sorted(s_conf: np.ndarray, s_acc: np.ndarray, max_bins: int) -> tuple[float, int]:
    """``ece_sweep`` on confidences sorted ascending (and their correctness); ``(ece, b)``."""
    n = s_conf.size
    cum_conf = np.concatenate(([0.0], np.cumsum(s_conf)))
    cum_acc = np.concatenate(([0.0], np.cumsum(s_acc)))

    def bin_stats(b: int):
        ends = np.searchsorted(s_conf, mass_edges_sorted(s_conf, b)[1:-1], side="right")
        bounds = np.concatenate(([0], ends, [n]))
        count = np.diff(bounds)
        full = count > 0
        return count[full], np.diff(cum_conf[bounds])[full], np.diff(cum_acc[bounds])[full]

    best, n_bins = bin_stats(1), 1
    for b in range(2, max_bins + 1):
        stats = bin_stats(b)
        if np.any(np.diff(stats[2] / stats[0]) < 0):
            break
        best, n_bins = stats, b
    return float(np.abs(best[1] - best[2]).sum() / n), n_bins
