"""The post-hoc study: every calibrator of calibnb on published CIFAR network outputs.

For each network of :func:`calibnb.data.list_predictions` and each split seed ``s``, the 10,000
test predictions are split by ``perm = np.random.default_rng(s).permutation(10000)``: the first
5,000 of ``perm`` calibrate, the last 5,000 test. Every method of :data:`METHODS` is fitted on
the calibration half and scored on the test half with :func:`calibnb.metrics.calibration_report`
(fractions). One folder per network and split, ``<out_root>/<network>/split-<s>/metrics.json``::

    {"test": {"pre": {...}, "ts": {...}, "fts": {...}, "<method>": {...}},
     "params": {"ts": {"temperature": T}, "fts": {"gamma": γ, "temperature": T}, ...},
     "network": ..., "split": s, "n_calibration": 5000, "n_test": 5000}

written atomically and last, so an interrupted study resumes where it stopped. A study file
(``configs/studies/cifar_posthoc.yaml``)::

    out_root: results/cifar_posthoc
    networks: [cifar10-wideresnet-16-4, ...]     # default: all of list_predictions()
    splits: [1, 2, 3, 4, 5]
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import torch
from scipy.special import softmax

from .._validation import check_int
from ..atomic import seal, write_json
from ..calibration import (
    PAPER_FTS_TEMPERATURES,
    PAPER_GAMMAS,
    PAPER_TEMPERATURES,
    BayesianBinningQuantiles,
    DirichletCalibration,
    EdgeOfSearchWarning,
    EnsembleTemperatureScaling,
    FocalTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    SplineCalibration,
    TemperatureScaling,
    VectorScaling,
)
from ..data import list_predictions, load_predictions
from ..data.predictions import PREDICTIONS
from ..metrics import calibration_report
from .schemas import check, posthoc_schema
from .record import remove_temporaries
from .sweep import load_config

#: Method key -> calibrator factory. ``ts`` and ``fts`` are the papers' protocols (TS: the ECE
#: grid 0.1..10 of Mukhoti et al.; FTS: Komisarenko & Kull's γ × T grid and equal-mass ECE);
#: ``ts_em`` is TS as the FTS paper fits it for its comparison (FTS's T grid 0.01..5 and
#: criterion, the equal-mass ECE); ``*_nll`` select by the validation log-loss instead, as the
#: FTS paper does for its log-loss column. The papers' grids are passed explicitly, so they stay
#: fixed (the protocol) and a best T or γ at their edge warns instead of extending them.
#: ``vector``, ``matrix_odir``, ``dirichlet_odir`` are Kull et al.'s (2019) maps. The study fixes
#: their ODIR strength at λ = μ = :data:`STUDY_ODIR`: a cross-validated choice (what
#: ``MatrixScaling()`` does by default, over :data:`~calibnb.calibration.ODIR_GRID`) costs 10 to
#: 36 fits of 10,100 parameters per CIFAR-100 split instead of one; 3-fold cross-validation over
#: (1, 10², 10⁴) on split 1's calibration half of the CIFAR-100 DenseNet chose 10⁴.
STUDY_ODIR = 1e4
METHODS = {
    "ts": lambda: TemperatureScaling("ece", PAPER_TEMPERATURES),
    "ts_em": lambda: TemperatureScaling("ece", PAPER_FTS_TEMPERATURES, binning="mass"),
    "ts_nll": lambda: TemperatureScaling("nll"),
    "fts": lambda: FocalTemperatureScaling(PAPER_GAMMAS, PAPER_FTS_TEMPERATURES),
    "fts_nll": lambda: FocalTemperatureScaling(PAPER_GAMMAS, PAPER_FTS_TEMPERATURES, criterion="nll"),
    "ets": EnsembleTemperatureScaling,
    "spline": SplineCalibration,
    "histogram": HistogramBinning,
    "isotonic": IsotonicCalibration,
    "bbq": BayesianBinningQuantiles,
    "vector": VectorScaling,
    "matrix_odir": lambda: MatrixScaling(STUDY_ODIR),
    "dirichlet_odir": lambda: DirichletCalibration(STUDY_ODIR),
}
CONFIG_KEYS = {"out_root", "networks", "splits"}
#: The fitted state a run stores per method (where the method has it), by its name in ``params``.
FITTED = {"temperature": "temperature_", "gamma": "gamma_", "weights": "weights_"}


def calibration_split(seed: int, n: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """``(calibrate, test)`` indices: the first and last halves of ``default_rng(seed).permutation(n)``."""
    perm = np.random.default_rng(seed).permutation(n)
    return perm[: n // 2], perm[n // 2 :]


def posthoc_run(network: str, split: int, out_root: str | os.PathLike) -> Path:
    """Fit and score every method on one network and split; returns the ``metrics.json`` path
    (an existing one is kept: the run is finished)."""
    path = Path(out_root) / network / f"split-{split}" / "metrics.json"
    if path.is_file():
        return path
    if path.parent.is_dir():
        remove_temporaries(path.parent)  # of a worker killed while writing
    logits, labels = load_predictions(network)
    calibrate, test = calibration_split(split, len(labels))
    results = {"pre": calibration_report(softmax(logits[test].astype(np.float64), axis=1), labels[test])}
    params = {}
    for key, make in METHODS.items():
        method = _fit(make, logits[calibrate], labels[calibrate])
        results[key] = calibration_report(method.predict_proba(logits[test]), labels[test])
        params[key] = {name: np.asarray(getattr(method, attr)).tolist()
                       for name, attr in FITTED.items() if hasattr(method, attr)}
    return write_json(path, seal({"test": results, "params": params, "network": network, "split": split,
                                  "n_calibration": len(calibrate), "n_test": len(test)}))


def replay_run(metrics: dict) -> dict:
    """The test reports of a finished run recomputed from the shipped logits: the scaling methods
    from their stored parameters (no search), the others refitted (they are deterministic and
    fast). What ``tests/test_results_posthoc.py`` compares with the committed ``metrics.json``.
    ``metrics`` is checked against :func:`calibnb.runs.schemas.posthoc_schema` first."""
    check(metrics, posthoc_schema(), "metrics")
    logits, labels = load_predictions(metrics["network"])
    calibrate, test = calibration_split(metrics["split"], len(labels))
    n_classes = PREDICTIONS[metrics["network"]][1]
    results = {"pre": calibration_report(softmax(logits[test].astype(np.float64), axis=1), labels[test])}
    for key, make in METHODS.items():
        if key in RESTORABLE:
            method = restore(key, metrics["params"][key], n_classes)
        else:
            method = _fit(make, logits[calibrate], labels[calibrate])
        results[key] = calibration_report(method.predict_proba(logits[test]), labels[test])
    return results


def _fit(make, logits: np.ndarray, labels: np.ndarray):
    """``make()`` fitted; the study's grids are the papers' fixed ones, so an optimum on a grid's
    edge is the protocol's result, not a warning (as in :func:`calibnb.train.fit_calibrators`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EdgeOfSearchWarning)
        return make().fit(logits, labels)


#: The methods a replay refits by an iterative optimiser stopped at a tolerance or an iteration
#: cap (L-BFGS-B over up to 10,100 parameters): the order of floating-point sums of another BLAS
#: build can move their fitted map by about the tolerance, and a sample near a bin edge can then
#: change bins, so their replay matches to a stated tolerance rather than to the bit.
REFITTED_ITERATIVELY = ("vector", "matrix_odir", "dirichlet_odir")
#: The methods whose whole fitted state a run stores in ``params`` (the scaling methods).
RESTORABLE = ("ts", "ts_em", "ts_nll", "fts", "fts_nll", "ets")


def restore(method: str, params: dict, n_classes: int | None = None):
    """A calibrator of ``method`` in the fitted state ``params`` that a run stored, no search.

    Only the scaling methods (:data:`RESTORABLE`) store all their fitted state. A run does not
    store the number of classes it was fitted on: ``n_classes`` gives it (the network's, see
    :data:`calibnb.data.predictions.PREDICTIONS`), and the calibrator refuses logits of another
    number of classes, as a fitted one does; without it that check is skipped.
    """
    if method not in RESTORABLE:
        raise ValueError(f"method {method!r} cannot be restored from its params; one of {RESTORABLE}")
    calibrator = METHODS[method]()
    for name, value in params.items():  # the fitted state, as fit left it
        setattr(calibrator, FITTED[name], np.asarray(value) if name == "weights" else value)
    calibrator.n_classes_ = None if n_classes is None else check_int(n_classes, "n_classes", minimum=2)
    return calibrator


def probabilities_on_test(metrics: dict, method: str) -> tuple[np.ndarray, np.ndarray]:
    """The test half's probabilities after ``method`` (``"pre"``: none) and its labels, for a
    finished run's ``metrics`` (as read from its ``metrics.json``; checked against
    :func:`calibnb.runs.schemas.posthoc_schema`)."""
    check(metrics, posthoc_schema(), "metrics")
    logits, labels = load_predictions(metrics["network"])
    _, test = calibration_split(metrics["split"], len(labels))
    if method == "pre":
        return softmax(logits[test].astype(np.float64), axis=1), labels[test]
    calibrator = restore(method, metrics["params"][method], PREDICTIONS[metrics["network"]][1])
    return calibrator.predict_proba(logits[test]), labels[test]


def _worker_start(parent: int) -> None:
    """A post-hoc worker: one torch thread, and (on Linux) a SIGTERM from the kernel when the parent
    dies, so a killed ``posthoc -j N`` leaves no worker running for minutes."""
    torch.set_num_threads(1)
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)


def load_study(config: str | os.PathLike | dict) -> dict:
    """Read a study file like a sweep file (:func:`calibnb.runs.load_config`: ``out_root``
    relative to the repository root; study files live in ``configs/studies/``, apart from the
    sweeps) and refuse unknown keys and names."""
    where = "config" if isinstance(config, dict) else str(config)
    config = load_config(config)  # the sweep files' reading and path rule
    unknown = set(config) - CONFIG_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(CONFIG_KEYS)}")
    if "out_root" not in config:
        raise ValueError(f"{where}: out_root is required")
    networks = config.get("networks", list(list_predictions()))
    splits = config.get("splits", [1, 2, 3, 4, 5])
    for key, values in (("networks", networks), ("splits", splits)):
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}: {key} must be a non-empty list (leave it out for the default), got {values!r}")
        if len(set(map(repr, values))) != len(values):
            raise ValueError(f"{where}: {key} names an entry twice: {values}")
    bad = [n for n in networks if n not in list_predictions()]
    if bad:
        raise ValueError(f"{where}: networks {bad} are not among {list(list_predictions())}")
    for split in splits:  # 1.7, true and '12' are no split seeds
        if isinstance(split, bool) or not isinstance(split, int) or split < 0:
            raise ValueError(f"{where}: splits must be seeds (integers >= 0), got {split!r}")
    return {"out_root": Path(config["out_root"]), "networks": networks, "splits": splits}


def posthoc(config: str | os.PathLike | dict, progress: bool | None = None,
            jobs: int = 1) -> list[Path]:
    """Run every unfinished (network, split) of a study file; returns the ``metrics.json`` paths.

    ``jobs`` > 1 runs that many processes at once, each with one torch thread (every run is
    independent and deterministic, so the results do not depend on ``jobs``).
    """
    from .._progress import progress_bar

    tqdm = progress_bar()

    study = load_study(config)
    jobs = check_int(jobs, "jobs", minimum=1)
    runs = [(n, s) for n in study["networks"] for s in study["splits"]]
    bar = tqdm(total=len(runs), desc="post-hoc runs", disable=None if progress is None else not progress)
    if jobs == 1:
        paths = []
        for network, split in runs:
            paths.append(posthoc_run(network, split, study["out_root"]))
            bar.update()
        bar.close()
        return paths
    context = multiprocessing.get_context("spawn")  # no fork of a process that holds torch threads
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_start,
                             initargs=(os.getpid(),)) as pool:
        futures = [pool.submit(posthoc_run, network, split, study["out_root"]) for network, split in runs]
        for future in as_completed(futures):
            future.result()
            bar.update()
    bar.close()
    return [future.result() for future in futures]
