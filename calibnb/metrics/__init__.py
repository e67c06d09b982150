"""Calibration metrics on probabilities ``(N, K)`` and integer labels ``(N,)``.

Inputs may be numpy arrays or torch tensors; everything is computed in float64 and returned as a
plain ``float`` fraction. Bad input raises ``ValueError``/``TypeError`` naming the argument.
The probabilities are read a block of rows at a time (no N x K temporary of the whole matrix);
``ece`` in both binnings, ``adaptive_ece``, ``mce``, ``nll``, ``brier`` and ``error_rate``
compute on a CUDA tensor's device and return only the final float.

Modules, one concept each:

* ``binning``: equal-width / equal-mass ``(lo, hi]`` bins (``bin_edges``, ``assign_bins``,
  ``bin_sums``), reused by the calibrators' grid search and by AdaFocal;
* ``toplabel``: confidence and correctness of the predicted class;
* ``streaming``: blocks of rows; ``rowpass``: one validated pass for the per-row statistics
  (confidence, correctness, true-class probability, sum of squares), on the host or a device;
  ``binned_device``: the ECE's bins summed on a torch device;
* ``binned``: ECE, AdaECE, MCE, classwise ECE, reliability table;
* ``bias_corrected``: Kumar et al.'s debiased L2 ECE, Roelofs et al.'s ECE_SWEEP;
* ``smooth``: Błasiok & Nakkiran's smooth ECE;
* ``scores``: NLL, Brier score, error rate;
* ``ood``: OOD-detection AUROC from entropy or maximum probability;
* ``report``: all of the above in one call;
* ``scorers``: the metrics in scikit-learn's order ``(y_true, y_prob)`` and ready scorers.

Labels may be whole-number floats (1.0, 2.0: the integers they equal; 1.5 is refused), and
``probs`` of two classes may be one column ``(N,)``, the probability of class 1, as
scikit-learn's ``y_prob`` and netcal's binary input.
"""

from calibnb.metrics.bias_corrected import debiased_ece, ece_sweep
from calibnb.metrics.binning import assign_bins, bin_edges, bin_sums
from calibnb.metrics.binned import adaptive_ece, classwise_ece, ece, mce, reliability_table
from calibnb.metrics.ood import ood_auroc, ood_score
from calibnb.metrics.report import calibration_report
from calibnb.metrics.scorers import (
    adaptive_ece_score,
    brier_score,
    classwise_ece_score,
    ece_score,
    nll_score,
)
from calibnb.metrics.scores import brier, error_rate, nll
from calibnb.metrics.smooth import smooth_ece
from calibnb.metrics.toplabel import top_label

__all__ = [
    "adaptive_ece",
    "adaptive_ece_score",
    "assign_bins",
    "bin_edges",
    "bin_sums",
    "brier",
    "brier_score",
    "calibration_report",
    "classwise_ece",
    "classwise_ece_score",
    "debiased_ece",
    "ece",
    "ece_score",
    "ece_sweep",
    "error_rate",
    "mce",
    "nll",
    "nll_score",
    "ood_auroc",
    "ood_score",
    "reliability_table",
    "smooth_ece",
    "top_label",
]
