"""Binned calibration errors: ECE, AdaECE, MCE, classwise ECE and the reliability table.

For top-label confidences r_i = max_k p_ik and correctness c_i = 1[argmax_k p_ik = y_i], with
bins B_1..B_M (``calibnb.metrics.binning``), Guo et al. (2017, Eq. 3) define

    ECE = sum_m |B_m| / N * |acc(B_m) - conf(B_m)|,      MCE = max_m |acc(B_m) - conf(B_m)|,

over non-empty bins. With equal-mass bins the ECE is the AdaECE of Mukhoti et al. (2020, Sec. 5)
/ ECE_EM of Nixon et al. (2019). Classwise ECE (Kull et al. 2019, used by Mukhoti et al. 2020) is
the mean over the K classes of the equal-width ECE of p_k against 1[y = k].
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibnb._validation import check_choice, check_n_bins, check_probs_labels
from calibnb.metrics.binning import BINNINGS, assign_bins_unchecked, bin_sums_unchecked, mass_edges_sorted
from calibnb.metrics.binned_device import device_bin_sums
from calibnb.metrics.rowpass import row_statistics
from calibnb.metrics.streaming import is_tensor
from calibnb.metrics.toplabel import top_label

_CLASSWISE_CHUNK = 1 << 22  # probabilities binned per step of classwise_ece (bounds memory)


def ece(probs, labels, n_bins: int = 15, binning: str = "width") -> float:
    """Top-label expected calibration error (Guo et al. 2017, Eq. 3), as a fraction.

    ``binning="width"``: 15 equal-width ``(lo, hi]`` bins as in the papers' tables (ECE);
    ``binning="mass"``: equal-mass bins without dropping samples (AdaECE / ECE_EM).
    One streamed pass over ``probs`` (``calibnb.metrics.rowpass.row_statistics``), then the
    N confidences are binned; a torch tensor is reduced and binned on its device (CPU or CUDA).

    Examples
    --------
    >>> from calibnb.metrics import ece
    >>> probs = [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35], [0.05, 0.05, 0.9], [0.45, 0.35, 0.2]]
    >>> labels = [0, 2, 2, 0]  # top-label confidences 0.7, 0.55, 0.9, 0.45; the second is wrong
    >>> ece(probs, labels)  # one sample per bin: (0.3 + 0.55 + 0.1 + 0.55) / 4
    0.375

    A perfectly calibrated prediction: 75% confident and right 3 times in 4.

    >>> ece([[0.75, 0.25]] * 4, [0, 0, 0, 1])
    0.0
    """
    conf, correct, _, _ = row_statistics(probs, labels)
    return ece_from_bins(*_top_label_bins(conf, correct, n_bins, binning))


def adaptive_ece(probs, labels, n_bins: int = 15) -> float:
    """AdaECE (Mukhoti et al. 2020, Sec. 5): ``ece(probs, labels, n_bins, binning="mass")``.

    Examples
    --------
    >>> from calibnb.metrics import adaptive_ece, ece
    >>> probs = [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35], [0.05, 0.05, 0.9], [0.45, 0.35, 0.2]]
    >>> labels = [0, 2, 2, 0]  # top-label confidences 0.7, 0.55, 0.9, 0.45; the second is wrong
    >>> round(adaptive_ece(probs, labels, n_bins=2), 4)  # bins {0.45, 0.55} and {0.7, 0.9}
    0.1
    >>> round(ece(probs, labels, n_bins=2), 4)  # equal width: bins {0.45} and {0.55, 0.7, 0.9}
    0.175
    """
    return ece(probs, labels, n_bins=n_bins, binning="mass")


def mce(probs, labels, n_bins: int = 15, binning: str = "width") -> float:
    """Maximum calibration error (Guo et al. 2017, Eq. 5): the largest gap of a non-empty bin.

    Examples
    --------
    >>> from calibnb.metrics import mce
    >>> probs = [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35], [0.05, 0.05, 0.9], [0.45, 0.35, 0.2]]
    >>> labels = [0, 2, 2, 0]  # top-label confidences 0.7, 0.55, 0.9, 0.45; the second is wrong
    >>> round(mce(probs, labels), 4)  # the bins of 0.45 (right) and of 0.55 (wrong)
    0.55
    """
    conf, correct, _, _ = row_statistics(probs, labels)
    return mce_from_bins(*_top_label_bins(conf, correct, n_bins, binning))


def ece_from_bins(count: np.ndarray, conf_sum: np.ndarray, acc_sum: np.ndarray) -> float:
    """sum_b |B_b|/N |conf_b - acc_b| = sum_b |sum conf - sum correct| / N from ``bin_sums``."""
    return float(np.abs(conf_sum - acc_sum).sum() / count.sum())


def mce_from_bins(count: np.ndarray, conf_sum: np.ndarray, acc_sum: np.ndarray) -> float:
    """max over non-empty bins of |conf_b - acc_b| from ``bin_sums``."""
    full = count > 0
    return float((np.abs(conf_sum[full] - acc_sum[full]) / count[full]).max())


def classwise_ece(probs, labels, n_bins: int = 15) -> float:
    """Classwise ECE: mean over all K = ``probs.shape[1]`` classes of the equal-width ECE of p_k.

    (Kull et al. 2019; Mukhoti et al. 2020, Sec. 5.) A probability of exactly 0 falls in the first
    bin. The papers' code takes K = max(label) + 1 and skips exact zeros; see the chapter.
    Vectorised over classes: one ``bincount`` over (class, bin) pairs, in chunks of rows.

    Examples
    --------
    >>> from calibnb.metrics import classwise_ece
    >>> probs = [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35], [0.05, 0.05, 0.9], [0.45, 0.35, 0.2]]
    >>> labels = [0, 2, 2, 0]  # top-label confidences 0.7, 0.55, 0.9, 0.45; the second is wrong
    >>> round(classwise_ece(probs, labels), 4)
    0.2667
    """
    p, y = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    return classwise_ece_unchecked(p, y, n_bins)


def classwise_ece_unchecked(p: np.ndarray, y: np.ndarray, n_bins: int) -> float:
    """``classwise_ece`` on validated float64 probabilities and int64 labels."""
    n, k = p.shape
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    offsets = np.arange(k) * n_bins
    conf_sum = np.zeros(k * n_bins)  # per (class, bin): sum of p_k, then sum of 1[y = k]
    acc_sum = np.zeros(k * n_bins)
    rows = max(1, _CLASSWISE_CHUNK // k)
    for start in range(0, n, rows):
        chunk, y_chunk = p[start : start + rows], y[start : start + rows]
        cells = _first_bin_heavy_assign(chunk, edges)
        cells += offsets  # (rows, K) index of the (class, bin) cell of each probability
        conf_sum += np.bincount(cells.ravel(), weights=chunk.ravel(), minlength=k * n_bins)
        hits = cells[np.arange(chunk.shape[0]), y_chunk]  # the cell of each sample's true class
        acc_sum += np.bincount(hits, minlength=k * n_bins)
    per_class = np.abs(conf_sum - acc_sum).reshape(k, n_bins).sum(axis=1) / n
    return float(per_class.mean())


def _first_bin_heavy_assign(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``assign_bins`` for class probabilities, most of which lie in the first bin.

    Only values above ``edges[1]`` are searched: with many classes most probabilities lie in the
    first bin, and they need no binary search.
    """
    above = values > edges[1]
    cells = np.zeros(values.shape, dtype=np.int64)
    cells[above] = assign_bins_unchecked(values[above], edges)
    return cells


def reliability_table(probs, labels, n_bins: int = 15, binning: str = "width") -> pd.DataFrame:
    """Per-bin statistics of the top-label confidence, one row per bin (empty bins included).

    Columns: ``lo``, ``hi`` (the ``(lo, hi]`` edges), ``count``, ``confidence`` and ``accuracy``
    (bin means; NaN for an empty bin, whose mean is undefined) and ``gap`` = confidence - accuracy
    (signed, as AdaFocal uses it; NaN for an empty bin). ``(count * |gap|).sum() / N`` is the ECE.

    Examples
    --------
    >>> from calibnb.metrics import reliability_table
    >>> probs = [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35], [0.05, 0.05, 0.9], [0.45, 0.35, 0.2]]
    >>> labels = [0, 2, 2, 0]  # top-label confidences 0.7, 0.55, 0.9, 0.45; the second is wrong
    >>> reliability_table(probs, labels, n_bins=4).round(3)
         lo    hi  count  confidence  accuracy    gap
    0  0.00  0.25      0         NaN       NaN    NaN
    1  0.25  0.50      1       0.450       1.0 -0.550
    2  0.50  0.75      2       0.625       0.5  0.125
    3  0.75  1.00      1       0.900       1.0 -0.100
    """
    conf, correct = top_label(probs, labels)
    n_bins = check_n_bins(n_bins)
    check_choice(binning, "binning", BINNINGS)
    edges = _edges(conf, n_bins, binning)
    count, conf_sum, acc_sum = bin_sums_unchecked(assign_bins_unchecked(conf, edges), n_bins, conf, correct)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf, mean_acc = conf_sum / count, acc_sum / count
    return pd.DataFrame(
        {
            "lo": edges[:-1],
            "hi": edges[1:],
            "count": count.astype(np.int64),
            "confidence": mean_conf,
            "accuracy": mean_acc,
            "gap": mean_conf - mean_acc,
        }
    )


def _top_label_bins(conf, correct, n_bins, binning: str):
    """Validate the binning arguments and return the per-bin sums of the top-label view (summed
    on the device of tensors, :func:`calibnb.metrics.binned_device.device_bin_sums`)."""
    n_bins = check_n_bins(n_bins)
    check_choice(binning, "binning", BINNINGS)
    if is_tensor(conf):
        return device_bin_sums(conf, correct, n_bins, binning)
    edges = _edges(conf, n_bins, binning)
    return bin_sums_unchecked(assign_bins_unchecked(conf, edges), n_bins, conf, correct)


def _edges(conf: np.ndarray, n_bins: int, binning: str) -> np.ndarray:
    if binning == "width":
        return np.linspace(0.0, 1.0, n_bins + 1)
    return mass_edges_sorted(np.sort(conf), n_bins)
