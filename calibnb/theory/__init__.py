"""The papers' analytic objects, vectorised in float64 (numpy/scipy).

- Focal loss as proper loss ∘ focal calibration map (Komisarenko & Kull 2024, Prop. 2 and 4):
  :func:`binary_focal_calibration`, :func:`inverse_binary_focal_calibration`,
  :func:`binary_focal_minimizer`, :func:`inverse_focal_calibration_map`,
  :func:`proper_focal_loss`.
- Focal calibration versus temperature scaling (Prop. 3, §3.2–3.3): :func:`temperature_bounds`,
  :func:`tight_temperature_bounds`, :func:`closest_temperature`.
- Mukhoti et al. (2020)'s lower bound of focal loss: :func:`mukhoti_bound`, :func:`mukhoti_gap`.
- Conditional risks and their minimisers for any calibnb loss: :func:`conditional_risk`,
  :func:`risk_minimizer`.
- Dual focal loss' phi (Tao et al. 2023, §4): :func:`fl_phi`, :func:`dfl_phi`,
  :func:`phi_landmarks`, :func:`dual_focal_risk`.
- AdaFocal's per-bin evidence (Ghosh et al. 2022, Fig. 1–2): :func:`fixed_gamma_runs`,
  :func:`per_bin_gaps`, :func:`best_gamma_per_bin`, :func:`train_val_bin_confidence`.

The multiclass focal calibration map itself is :func:`calibnb.calibration.focal_calibration_map`.
"""

from .adafocal import best_gamma_per_bin, fixed_gamma_runs, per_bin_gaps, train_val_bin_confidence
from .dual_focal import dfl_phi, dfl_phi_slope, dual_focal_risk, fl_phi, phi_landmarks
from .focal_binary import (
    binary_focal_calibration,
    binary_focal_calibration_logit,
    binary_focal_loss,
    binary_focal_minimizer,
    inverse_binary_focal_calibration,
    inverse_binary_focal_calibration_logit,
    proper_binary_focal_loss,
)
from .focal_multiclass import (
    inverse_focal_calibration_map,
    log_focal_weight,
    proper_focal_loss,
    proper_focal_loss_all,
)
from .mukhoti_bound import focal_loss_on_simplex, mukhoti_bound, mukhoti_gap
from .risk import conditional_risk, risk_minimizer
from .temperature import (
    closest_temperature,
    focal_temperature_deviation,
    inverse_temperature_profile,
    temperature_bounds,
    tight_temperature_bounds,
)

__all__ = [
    "binary_focal_calibration",
    "binary_focal_calibration_logit",
    "binary_focal_loss",
    "binary_focal_minimizer",
    "inverse_binary_focal_calibration",
    "inverse_binary_focal_calibration_logit",
    "proper_binary_focal_loss",
    "inverse_focal_calibration_map",
    "log_focal_weight",
    "proper_focal_loss",
    "proper_focal_loss_all",
    "temperature_bounds",
    "tight_temperature_bounds",
    "inverse_temperature_profile",
    "closest_temperature",
    "focal_temperature_deviation",
    "focal_loss_on_simplex",
    "mukhoti_bound",
    "mukhoti_gap",
    "conditional_risk",
    "risk_minimizer",
    "fl_phi",
    "dfl_phi",
    "dfl_phi_slope",
    "phi_landmarks",
    "dual_focal_risk",
    "fixed_gamma_runs",
    "per_bin_gaps",
    "best_gamma_per_bin",
    "train_val_bin_confidence",
]
