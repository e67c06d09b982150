"""From logits to a run's ``metrics.json``: post-hoc calibration fitted on validation, metrics
on test before and after it.

:func:`evaluate_logits` is the one definition of a run's reported numbers. The training loop
calls it on the float16-rounded logits that it stores, so anyone can recompute a committed
``metrics.json`` exactly from the committed ``logits_*.npz`` (the integrity test does).
"""

from __future__ import annotations

import warnings

from scipy.special import softmax

from .._validation import check_logits, check_n_classes
from ..calibration import (
    EdgeOfSearchWarning,
    PAPER_FTS_TEMPERATURES,
    PAPER_GAMMAS,
    PAPER_TEMPERATURES,
    FocalTemperatureScaling,
    TemperatureScaling,
)
from ..metrics import calibration_report, ood_auroc


def fit_calibrators(
    val_logits, val_labels, n_bins: int = 15, ts_criterion: str = "ece", fts_criterion: str = "ece"
) -> tuple[TemperatureScaling, FocalTemperatureScaling]:
    """Temperature scaling and focal temperature scaling fitted on the validation logits, on the
    papers' fixed grids (their protocol: a best T or γ at a grid's edge warns, it does not
    extend the grid)."""
    with warnings.catch_warnings():  # the protocol's grids are fixed: an optimum on an edge is its result
        warnings.simplefilter("ignore", EdgeOfSearchWarning)
        ts = TemperatureScaling(criterion=ts_criterion, temperatures=PAPER_TEMPERATURES,
                                n_bins=n_bins).fit(val_logits, val_labels)
        fts = FocalTemperatureScaling(PAPER_GAMMAS, PAPER_FTS_TEMPERATURES, criterion=fts_criterion,
                                      n_bins=n_bins).fit(val_logits, val_labels)
    return ts, fts


def evaluate_logits(
    val_logits,
    val_labels,
    test_logits,
    test_labels,
    n_bins: int = 15,
    ts_criterion: str = "ece",
    fts_criterion: str = "ece",
    calibrators: tuple[TemperatureScaling, FocalTemperatureScaling] | None = None,
    ood_logits: dict | None = None,
) -> dict:
    """The ``metrics.json`` content of a run, without its ``gammas`` (the trainer adds them).

    ``{"val": {...}, "test": {"pre": {...}, "ts": {...}, "fts": {...}}, "temperature": T,
    "fts": {"gamma": γ, "temperature": T}}``, each ``{...}`` being
    :func:`calibnb.metrics.calibration_report` with ``n_bins`` bins. Temperature scaling and
    focal temperature scaling use their papers' protocols (``criterion="ece"``) unless asked
    otherwise; pass already fitted ``calibrators`` (from :func:`fit_calibrators`) to skip the fit.

    ``ood_logits`` (``{name: logits}``, logits of shifted inputs, e.g. from
    :func:`calibnb.data.load_shift`) adds ``"ood": {name: {"pre": a, "ts": a, "fts": a}}``: the
    AUROC of telling those inputs from the test set by the predictive entropy (Mukhoti et al.
    2020, Sec. 6), before and after each post-hoc calibration.

    Test (and shifted) logits with another number of classes than the validation logits are
    refused, naming both arguments: the calibrators fitted on one would be applied to the other.
    """
    val_logits = check_logits(val_logits, "val_logits")

    def like_val(z, name: str):
        return check_n_classes(check_logits(z, name), val_logits.shape[1], name, "val_logits have")

    test_logits = like_val(test_logits, "test_logits")
    ood_logits = {name: like_val(z, f"ood_logits[{name!r}]") for name, z in (ood_logits or {}).items()}
    ts, fts = calibrators or fit_calibrators(val_logits, val_labels, n_bins, ts_criterion, fts_criterion)
    metrics = {
        "val": calibration_report(softmax(val_logits, axis=1), val_labels, n_bins=n_bins),
        "test": {
            "pre": calibration_report(softmax(test_logits, axis=1), test_labels, n_bins=n_bins),
            "ts": calibration_report(ts.predict_proba(test_logits), test_labels, n_bins=n_bins),
            "fts": calibration_report(fts.predict_proba(test_logits), test_labels, n_bins=n_bins),
        },
        "temperature": float(ts.temperature_),
        "fts": {"gamma": float(fts.gamma_), "temperature": float(fts.temperature_)},
    }
    if ood_logits:
        stages = {"pre": lambda z: softmax(z, axis=1), "ts": ts.predict_proba, "fts": fts.predict_proba}
        metrics["ood"] = {
            name: {stage: ood_auroc(f(test_logits), f(z)) for stage, f in stages.items()}
            for name, z in ood_logits.items()
        }
    return metrics
