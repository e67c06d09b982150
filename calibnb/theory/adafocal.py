"""The per-bin evidence behind AdaFocal (Ghosh et al. 2022, §4, Figures 1 and 2).

Figure 1: with 15 equal-mass validation bins, the signed calibration gap ``E_val,b = C_val,b -
A_val,b`` of each bin under several fixed focal-loss gammas; no single gamma is best in every bin
(:func:`fixed_gamma_runs`, :func:`per_bin_gaps`, :func:`best_gamma_per_bin`). Figure 2: training
samples grouped by the *validation* bin boundaries (on their true-class probability, as AdaFocal
looks gammas up) have a mean confidence ``C_train,b`` that moves with ``C_val,b`` when gamma
changes (:func:`train_val_bin_confidence`), which is what lets AdaFocal steer training bins by
validation statistics.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import check_labels, check_n_bins, check_probs
from ..metrics import reliability_table
from ..metrics.binning import assign_bins

__all__ = ["fixed_gamma_runs", "per_bin_gaps", "best_gamma_per_bin", "train_val_bin_confidence"]

#: The book's small CPU stand-in for the paper's ResNet-50 on CIFAR-10: an MLP on 5000
#: Fashion-MNIST images, 15 epochs of the ``cpu`` recipe, 1500 validation images (100 per bin).
BOOK_RUN = {"dataset": "fashion-mnist", "model": "mlp", "train_size": 5000, "val_size": 1500, "epochs": 15}


def fixed_gamma_runs(gammas: tuple[float, ...] = (0.0, 1.0, 3.0), **train_params) -> dict:
    """Train one model per focal-loss ``gamma`` with :func:`calibnb.train.train` and return
    ``{gamma: (val_probs, val_labels)}`` (softmax of the stored validation logits).

    ``train_params`` override :data:`BOOK_RUN` (any :class:`calibnb.train.TrainConfig` field);
    every run shares the seed, the split and the recipe, so only gamma differs (gamma = 0 is
    cross-entropy). Runs on one torch thread (:func:`calibnb.toy.single_threaded`).
    """
    from ..toy import single_threaded
    from ..train import train

    params = {**BOOK_RUN, "progress": False, **train_params}
    runs = {}
    for gamma in gammas:
        with single_threaded():
            result = train({**params, "loss": "focal_loss", "loss_params": {"gamma": float(gamma)}})
        logits, labels = result["logits"]["val"]
        z = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(z)
        runs[gamma] = (probs / probs.sum(axis=1, keepdims=True), labels)
    return runs


def per_bin_gaps(runs: dict, n_bins: int = 15) -> pd.DataFrame:
    """Signed gaps ``C_val,b - A_val,b`` on ``n_bins`` equal-mass bins, one row per run.

    ``runs`` maps a label (e.g. gamma) to ``(val_probs, val_labels)``; each run is binned on its
    own top-label confidences, as in the paper's Fig. 1. Columns are the bin indices; an empty
    bin (possible only with tied confidences) is NaN.
    """
    if not runs:
        raise ValueError("runs must hold at least one (probs, labels) pair")
    rows = {name: reliability_table(p, y, n_bins, binning="mass")["gap"].to_numpy() for name, (p, y) in runs.items()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(index="run", columns="bin")


def best_gamma_per_bin(gaps: pd.DataFrame) -> pd.Series:
    """For each bin (column of :func:`per_bin_gaps`), the run whose ``|gap|`` is smallest."""
    return gaps.abs().idxmin(axis=0).rename("best")


def train_val_bin_confidence(train_probs, train_labels, val_probs, val_labels, n_bins: int = 15) -> pd.DataFrame:
    """Ghosh et al.'s Fig. 2 / Fig. 10 ("common binning") for one model.

    The validation set is split into ``n_bins`` equal-mass bins of top-label confidence; each
    training sample is put into the validation bin holding its *true-class* probability.
    Columns: ``lo``, ``hi`` (edges), ``val_confidence`` ``C_val,b`` (mean top-label confidence),
    ``val_accuracy`` ``A_val,b``, ``train_count`` and ``train_confidence`` ``C_train,true,b``
    (mean true-class probability of the training samples in the bin; NaN when none falls in it,
    where the paper draws 0).
    """
    train_probs = check_probs(train_probs, "train_probs")
    train_labels = check_labels(train_labels, train_probs.shape[0], train_probs.shape[1], "train_labels")
    n_bins = check_n_bins(n_bins)
    table = reliability_table(val_probs, val_labels, n_bins, binning="mass")
    edges = np.append(table["lo"].to_numpy(), table["hi"].to_numpy()[-1])
    p_true = train_probs[np.arange(len(train_labels)), train_labels]
    bins = assign_bins(p_true, edges)
    count = np.bincount(bins, minlength=n_bins)
    total = np.bincount(bins, weights=p_true, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        train_conf = np.where(count > 0, total / count, np.nan)
    return pd.DataFrame({
        "lo": table["lo"], "hi": table["hi"],
        "val_confidence": table["confidence"], "val_accuracy": table["accuracy"],
        "train_count": count, "train_confidence": train_conf,
    }).rename_axis("bin")
