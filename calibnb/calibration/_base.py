"""What every fitted calibrator does with its input: validate it, remember its shape, score.

A calibrator fitted on logits of K classes is meaningless on logits of another number of
classes, yet it would run without error (a temperature divides any matrix; a top-label
recalibrator picks a top class among however many there are). :class:`ClassCountMixin` records
at ``fit`` what scikit-learn's estimators record (``n_features_in_``, the number of columns
given; ``classes_``, ``np.arange(K)``) and ``n_classes_`` (K), and refuses other logits at
``predict_proba`` and ``score`` with scikit-learn's message. One column of logits, ``(N,)`` or
``(N, 1)``, is binary: the logit of class 1 against class 0, i.e. the logits ``(0, z)``.

``fit`` warns (:class:`ProbabilitiesAsLogitsWarning`) when its logits are rows of probabilities:
a calibrator of logits fitted on probabilities fits something, silently wrong (temperature
scaling returns T = 0.2 instead of about 1).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_device_labels, check_device_logit_columns, check_labels, check_logit_columns
from ..metrics.scores import nll_unchecked

#: ``fit`` warns when every row lies in [0, 1] and sums to 1 within this tolerance.
PROBABILITY_ROWS_ATOL = 1e-6


class ProbabilitiesAsLogitsWarning(UserWarning):
    """A calibrator was fitted on rows that look like probabilities (each in [0, 1], summing
    to 1): calibrators take logits, or log-probabilities (``np.log(probs)``), which differ from
    the logits by a constant per row and give the same softmax.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from scipy.special import softmax
    >>> from calibnb.calibration import ProbabilitiesAsLogitsWarning, TemperatureScaling
    >>> probs = softmax(np.random.default_rng(0).normal(size=(100, 3)), axis=1)
    >>> labels = probs.argmax(axis=1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = TemperatureScaling("nll").fit(probs, labels)
    >>> caught[0].category is ProbabilitiesAsLogitsWarning
    True
    >>> _ = TemperatureScaling("nll").fit(np.log(probs), labels)  # the same predictions, as logits
    """


class ClassCountMixin:
    """``_fit_input`` and ``_predict_input``: the validated logits (and labels) of a calibrator;
    ``score``: the negative mean NLL of its predictions.

    ``n_classes_`` is the number of classes seen at fit; None only for a calibrator restored
    from stored parameters without it (:func:`calibnb.runs.posthoc.restore`), which then skips
    the check. ``n_features_in_`` is the number of columns given (1 for a binary column; K
    otherwise), ``classes_`` is ``np.arange(n_classes_)``.
    """

    def _fit_input(self, logits, labels) -> tuple[np.ndarray, np.ndarray]:
        z, columns = check_logit_columns(logits, "logits")
        y = check_labels(labels, z.shape[0], z.shape[1], "labels", probs_name="logits")
        if columns > 1 and _looks_like_probabilities(z):
            warnings.warn(
                f"{type(self).__name__}.fit: every row of logits lies in [0, 1] and sums to 1: "
                "these look like probabilities; calibrators take logits, or log-probabilities "
                "(np.log(probs)), which give the same softmax", ProbabilitiesAsLogitsWarning,
                stacklevel=3)
        self.n_features_in_ = columns
        self.n_classes_ = z.shape[1]
        self.classes_ = np.arange(z.shape[1])
        return z, y

    def _predict_input(self, logits, fitted: str) -> np.ndarray:
        """``logits`` validated, once the calibrator is fitted (``fitted``: an attribute that only
        a successful fit sets; ``NotFittedError`` otherwise) and if they have its columns."""
        check_is_fitted(self, fitted)
        z, columns = check_logit_columns(logits, "logits")
        self._check_columns(columns, np.ndim(logits))
        return z

    def _fit_input_on_device(self, logits, labels):
        """:meth:`_fit_input` for a torch tensor, kept on its device (float64)."""
        z, columns = check_device_logit_columns(logits, "logits")
        y = check_device_labels(labels, z, "labels", probs_name="logits")
        self.n_features_in_ = columns
        self.n_classes_ = z.shape[1]
        self.classes_ = np.arange(z.shape[1])
        return z, y

    def _predict_input_on_device(self, logits, fitted: str):
        """:meth:`_predict_input` for a torch tensor, kept on its device (float64)."""
        check_is_fitted(self, fitted)
        z, columns = check_device_logit_columns(logits, "logits")
        self._check_columns(columns, logits.ndim)
        return z

    def _check_columns(self, columns: int, ndim: int) -> None:
        expected = getattr(self, "n_features_in_", self.n_classes_)
        if expected is not None and columns != expected:
            raise ValueError(
                f"logits have {_describe(columns)} but the calibrator was fitted on "
                f"{_describe(expected)} (X has {columns} features, but {type(self).__name__} is "
                f"expecting {expected} features as input)"
                + (". Reshape your data: a 1-D array is one binary logit column" if ndim == 1 else ""))

    def score(self, logits, labels) -> float:
        """The negative mean log-loss of ``predict_proba(logits)`` against ``labels``: higher is
        better, as scikit-learn's ``score`` (so ``cross_val_score(calibrator, z, y)`` compares
        calibrators without a scorer). Probabilities are clipped below at float64's epsilon, as
        :func:`calibnb.metrics.nll`.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.model_selection import cross_val_score
        >>> from calibnb.calibration import TemperatureScaling
        >>> rng = np.random.default_rng(0)
        >>> logits = rng.normal(scale=3.0, size=(500, 3))
        >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)
        >>> cross_val_score(TemperatureScaling("nll"), logits, labels, cv=5).round(3)
        array([-0.749, -0.761, -0.834, -0.711, -0.677])
        """
        probs = self.predict_proba(logits)
        y = check_labels(labels, probs.shape[0], probs.shape[1], "labels", probs_name="logits")
        return -nll_unchecked(probs, y)


def _looks_like_probabilities(z: np.ndarray) -> bool:
    return bool((z >= 0).all() and (z <= 1).all()
                and (np.abs(z.sum(axis=1) - 1.0) <= PROBABILITY_ROWS_ATOL).all())


def _describe(columns: int) -> str:
    return "1 column (binary logits)" if columns == 1 else f"{columns} classes"
