"""Post-hoc calibrators, scikit-learn style: ``fit(logits, labels)``, ``predict_proba(logits)``.

- :func:`focal_calibration_map`, :func:`focal_softmax`: the focal calibration map of
  Komisarenko & Kull (2024), Eq. (1), finite for any finite logits.
- :class:`TemperatureScaling`: Guo et al. (2017), by the papers' ECE grid or by exact NLL.
- :class:`FocalTemperatureScaling`: Komisarenko & Kull (2024), Section 4.2, exact and vectorised.
- Baselines: :class:`EnsembleTemperatureScaling`, :class:`SplineCalibration`,
  :class:`HistogramBinning`, :class:`IsotonicCalibration`.
- :class:`BayesianBinningQuantiles`: BBQ, Naeini, Cooper & Hauskrecht (2015), histogram-binning
  models averaged by their Bayesian score, on the top-label confidence.
- :class:`VectorScaling`, :class:`MatrixScaling`, :class:`DirichletCalibration`: Kull et al.
  (2019), the softmax of an affine map of the logits or log-probabilities, with ODIR, its λ and μ
  chosen by cross-validation (``calibnb.calibration.linear``).
- :class:`Uncalibrated`: the softmax as it is, the reference every calibrator is compared with.

Fitted calibrators are saved and restored as JSON, never pickled: ``calibnb.calibration.persist``
(``calibrator_to_json``, ``calibrator_from_json``, ``save_calibrator``, ``load_calibrator``).

Every calibrator is a scikit-learn estimator: ``n_features_in_`` and ``classes_`` set by
``fit``, the class count checked by ``predict_proba``, ``score`` the negative mean NLL (so
``cross_val_score`` needs no scorer), whole-number float labels accepted, and binary logits
accepted as one column ``(N,)`` or ``(N, 1)`` (the logit of class 1: logits ``(0, z)``).
Searches do not stop silently at the edge of their range (:class:`EdgeOfSearchWarning`), and
``fit`` warns when handed probabilities for logits (:class:`ProbabilitiesAsLogitsWarning`).
``tests/test_calibration_sklearn.py`` runs scikit-learn's ``check_estimator`` on each and lists
the checks that do not apply to a calibrator of logits, with the reason.
"""

from .baselines import (
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    SplineCalibration,
)
from ._base import ProbabilitiesAsLogitsWarning
from .bbq import BayesianBinningQuantiles
from ._search import EdgeOfSearchWarning
from .focal_map import focal_calibration_map, focal_softmax, log_focal_softmax
from .focal_temperature import PAPER_FTS_TEMPERATURES, PAPER_GAMMAS, FocalTemperatureScaling
from .identity import Uncalibrated
from .linear import ODIR_GRID, DirichletCalibration, MatrixScaling, VectorScaling
from .temperature import PAPER_TEMPERATURES, TemperatureScaling

__all__ = [
    "ODIR_GRID",
    "PAPER_FTS_TEMPERATURES",
    "PAPER_GAMMAS",
    "PAPER_TEMPERATURES",
    "BayesianBinningQuantiles",
    "DirichletCalibration",
    "EdgeOfSearchWarning",
    "EnsembleTemperatureScaling",
    "FocalTemperatureScaling",
    "HistogramBinning",
    "IsotonicCalibration",
    "MatrixScaling",
    "ProbabilitiesAsLogitsWarning",
    "SplineCalibration",
    "TemperatureScaling",
    "Uncalibrated",
    "VectorScaling",
    "focal_calibration_map",
    "focal_softmax",
    "log_focal_softmax",
]
