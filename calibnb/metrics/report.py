"""Every metric of the papers' tables in one call: one validation, one top-label pass, one sort."""

from __future__ import annotations

import numpy as np

from calibnb._validation import check_n_bins, check_probs_labels
from calibnb.metrics.bias_corrected import debiased_from_bins, sweep_sorted
from calibnb.metrics.binning import assign_bins_unchecked, bin_sums_unchecked, mass_edges_sorted
from calibnb.metrics.binned import classwise_ece_unchecked, ece_from_bins, mce_from_bins
from calibnb.metrics.scores import brier_unchecked, nll_unchecked
from calibnb.metrics.smooth import smooth_ece_auto
from calibnb.metrics.toplabel import top_label_unchecked


def calibration_report(probs, labels, n_bins: int = 15) -> dict[str, float]:
    """All metrics as fractions, keyed as in a run's ``metrics.json``.

    Keys: ``ece`` (equal-width), ``adaece`` (equal-mass), ``classwise_ece``, ``mce``, ``nll``,
    ``brier``, ``error``, ``smooth_ece``, ``debiased_ece``, ``ece_sweep``. Each equals the
    function of the same name (``adaece``: ``adaptive_ece``, ``error``: ``error_rate``) called on
    ``(probs, labels)`` with ``n_bins`` (``ece_sweep`` and ``smooth_ece`` have no bins).

    Examples
    --------
    >>> from calibnb.metrics import calibration_report
    >>> probs = [[0.7, 0.2, 0.1], [0.1, 0.55, 0.35], [0.05, 0.05, 0.9], [0.45, 0.35, 0.2]]
    >>> report = calibration_report(probs, [0, 2, 2, 0])
    >>> {key: round(value, 3) for key, value in report.items()}
    {'ece': 0.375, 'adaece': 0.375, 'classwise_ece': 0.267, 'mce': 0.55, 'nll': 0.578,
     'brier': 0.339, 'error': 0.25, 'smooth_ece': 0.111, 'debiased_ece': 0.0, 'ece_sweep': 0.1}
    """
    p, y = check_probs_labels(probs, labels)
    n_bins = check_n_bins(n_bins)
    conf, correct = top_label_unchecked(p, y)
    order = np.argsort(conf, kind="stable")
    s_conf, s_acc = conf[order], correct[order]

    width_edges = np.linspace(0.0, 1.0, n_bins + 1)
    width = bin_sums_unchecked(assign_bins_unchecked(conf, width_edges), n_bins, conf, correct)
    mass_edges = mass_edges_sorted(s_conf, n_bins)
    mass = bin_sums_unchecked(assign_bins_unchecked(s_conf, mass_edges), n_bins, s_conf, s_acc)
    return {
        "ece": ece_from_bins(*width),
        "adaece": ece_from_bins(*mass),
        "classwise_ece": classwise_ece_unchecked(p, y, n_bins),
        "mce": mce_from_bins(*width),
        "nll": nll_unchecked(p, y),
        "brier": brier_unchecked(p, y),
        "error": float(1.0 - correct.mean()),
        "smooth_ece": smooth_ece_auto(conf, conf - correct)[0],
        "debiased_ece": debiased_from_bins(*mass),
        "ece_sweep": sweep_sorted(s_conf, s_acc, conf.size)[0],
    }
