"""Post-hoc calibrators, scikit-learn style: ``fit(logits, labels)``, ``predict_proba(logits)``.

- :func:`focal_calibration_map`, :func:`focal_softmax`: the focal calibration map of
  Komisarenko & Kull (2024), Eq. (1), finite for any finite logits.
- :class:`TemperatureScaling`: Guo et al. (2017), by the papers' ECE grid or by exact NLL.
- :class:`FocalTemperatureScaling`: Komisarenko & Kull (2024), Section 4.2, exact and vectorised.
- Baselines: :class:`EnsembleTemperatureScaling`, :class:`SplineCalibration`,
  :class:`HistogramBinning`, :class:`IsotonicCalibration`.
- :class:`Uncalibrated`: the softmax as it is, the reference every calibrator is compared with.

Fitted calibrators are saved and restored as JSON, never pickled: :mod:`.persist`
(``calibrator_to_json``, ``calibrator_from_json``, ``save_calibrator``, ``load_calibrator``).
"""

from .baselines import (
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    SplineCalibration,
)
from .focal_map import focal_calibration_map, focal_softmax, log_focal_softmax
from .focal_temperature import PAPER_FTS_TEMPERATURES, PAPER_GAMMAS, FocalTemperatureScaling
from .identity import Uncalibrated
from .temperature import PAPER_TEMPERATURES, TemperatureScaling

__all__ = [
    "PAPER_FTS_TEMPERATURES",
    "PAPER_GAMMAS",
    "PAPER_TEMPERATURES",
    "EnsembleTemperatureScaling",
    "FocalTemperatureScaling",
    "HistogramBinning",
    "IsotonicCalibration",
    "SplineCalibration",
    "TemperatureScaling",
    "Uncalibrated",
    "focal_calibration_map",
    "focal_softmax",
    "log_focal_softmax",
]
