"""What every fitted calibrator does with its input: validate it, and remember the class count.

A calibrator fitted on logits of K classes is meaningless on logits of another number of
classes, yet it would run without error (a temperature divides any matrix; a top-label
recalibrator picks a top class among however many there are). :class:`ClassCountMixin` records
K at ``fit`` (``n_classes_``, as scikit-learn's ``n_features_in_``) and refuses other logits at
``predict_proba``.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_logits, check_logits_labels, check_n_classes


class ClassCountMixin:
    """``_fit_input`` and ``_predict_input``: the validated logits (and labels) of a calibrator.

    ``n_classes_`` is the number of classes seen at fit; None only for a calibrator restored
    from stored parameters without it (:func:`calibnb.runs.posthoc.restore`), which then skips
    the check.
    """

    def _fit_input(self, logits, labels) -> tuple[np.ndarray, np.ndarray]:
        z, y = check_logits_labels(logits, labels)
        self.n_classes_ = z.shape[1]
        return z, y

    def _predict_input(self, logits, fitted: str) -> np.ndarray:
        """``logits`` validated, once the calibrator is fitted (``fitted``: an attribute that only
        a successful fit sets; ``NotFittedError`` otherwise) and if they have its classes."""
        check_is_fitted(self, fitted)
        z = check_logits(logits, "logits")
        if self.n_classes_ is not None:
            check_n_classes(z, self.n_classes_, "logits", "the calibrator was fitted on")
        return z
