"""The reference calibrator: the network's own softmax, fitted to nothing.

:func:`calibnb.calibrate` scores every calibrator against this one, and chooses it when no
calibrator beats the softmax the network already gives; as a calibrator of its own it can be
saved, restored and applied like the others (:mod:`calibnb.calibration.persist`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator

from ._base import ClassCountMixin


class Uncalibrated(ClassCountMixin, BaseEstimator):
    """``softmax(logits)``: no calibration, as a scikit-learn estimator.

    ``fit`` learns nothing but the number of classes (``n_classes_``), so that ``predict_proba``
    refuses logits of another class count, as every calibrator does.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import Uncalibrated
    >>> logits = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    >>> Uncalibrated().fit(logits, [0, 1]).predict_proba(logits).round(3)
    array([[0.844, 0.114, 0.042],
           [0.212, 0.576, 0.212]])
    """

    def fit(self, logits, labels) -> "Uncalibrated":
        """Validate ``logits`` (N, K) and integer ``labels`` (N,) and remember K."""
        self._fit_input(logits, labels)
        return self

    def predict_proba(self, logits) -> np.ndarray:
        """``softmax(logits)`` in float64."""
        return softmax(self._predict_input(logits, "n_classes_"), axis=1)
