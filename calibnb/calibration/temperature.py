"""Temperature scaling (Guo et al. 2017): ``p = softmax(z / T)``, one ``T > 0`` fitted on validation.

Two ways to choose ``T``:

* ``criterion="ece"`` (the default) is the protocol of the papers' code (Mukhoti et al. 2020,
  reused by the dual focal loss, AdaFocal and FCL papers): try ``T = 0.1, 0.2, …, 10.0``, keep
  the first ``T`` with the lowest 15-bin ECE on the validation set (strict ``<`` while scanning
  upwards). When the best ``T`` is an end of that default grid, the grid extends
  geometrically beyond it (:mod:`calibnb.calibration._search`); a grid passed explicitly stays
  fixed and warns (:class:`~calibnb.calibration.EdgeOfSearchWarning`).
* ``criterion="nll"`` minimises the validation negative log-likelihood exactly, by bounded scalar
  minimisation over ``log T`` (the NLL is convex in ``1 / T``), as Guo et al. do with L-BFGS.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator

from .._validation import check_choice, check_grid, check_n_bins
from ..metrics import ece
from ._base import ClassCountMixin
from ._search import bounded_log_search, grid_search

#: The papers' temperature grid 0.1, 0.2, …, 10.0 (Mukhoti et al. 2020, ``temperature_scaling.py``).
PAPER_TEMPERATURES = np.round(np.arange(1, 101) * 0.1, 10)
#: Search interval of ``log T`` for ``criterion="nll"`` (the same as scikit-learn's for log(1/T)).
LOG_T_BOUNDS = (-10.0, 10.0)


class TemperatureScaling(ClassCountMixin, BaseEstimator):
    """Temperature scaling, a scikit-learn estimator (``clone``, ``get_params``, ``NotFittedError``).

    Parameters
    ----------
    criterion : {"ece", "nll"}
        Validation criterion: the binned ECE over the grid ``temperatures`` (first minimum wins),
        the papers' protocol and the default, so that the book's temperature scaling is the
        papers'; or the exact NLL minimiser, Guo et al.'s criterion (a proper score: the choice
        when the calibrated probabilities feed anything beyond a binned ECE).
    temperatures : 1-D array-like of positive floats, optional
        The grid for ``criterion="ece"``. None (default): :data:`PAPER_TEMPERATURES`, extended
        geometrically past an end where the best ``T`` lies (up to ``T`` in [1e-4, 1e4]). A grid
        given, :data:`PAPER_TEMPERATURES` included, stays fixed: a best ``T`` at its end warns
        (:class:`~calibnb.calibration.EdgeOfSearchWarning`).
    n_bins, binning : int, {"width", "mass"}
        The ECE of the criterion (:func:`calibnb.metrics.ece`); the papers use 15 equal-width
        bins (Mukhoti et al.) or 15 equal-mass bins (AdaFocal, focal temperature scaling).

    Attributes
    ----------
    temperature_ : float
        The fitted temperature.
    scores_ : ndarray of shape (n_temperatures,)
        The validation ECE at each grid temperature (``criterion="ece"`` only).
    temperatures_ : ndarray of shape (n_temperatures,)
        The temperatures searched (the grid and its extensions; ``criterion="ece"`` only).
    best_score_ : float
        The validation criterion at ``temperature_``.
    n_classes_ : int
        The number of classes of the fitted logits; ``predict_proba`` refuses any other.
    n_features_in_, classes_ : int, ndarray
        The columns of the fitted logits (1 for a binary column), and ``np.arange(n_classes_)``.

    Logits are ``(N, K)``, or one binary column ``(N,)`` / ``(N, 1)``: the logit of class 1,
    i.e. the logits ``(0, z)``. ``score`` is the negative mean NLL of ``predict_proba``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> ts = TemperatureScaling(criterion="nll").fit(logits, labels)
    >>> round(ts.temperature_, 2)  # near the 2 the labels were drawn at
    2.06
    >>> ts.predict_proba(logits[:1]).round(3)
    array([[0.263, 0.181, 0.556]])
    """

    def __init__(self, criterion: str = "ece", temperatures=None, n_bins: int = 15,
                 binning: str = "width"):
        self.criterion = criterion
        self.temperatures = temperatures
        self.n_bins = n_bins
        self.binning = binning

    def fit(self, logits, labels) -> "TemperatureScaling":
        """Choose the temperature on validation ``logits`` (N, K) and integer ``labels`` (N,)."""
        check_choice(self.criterion, "criterion", ("ece", "nll"))
        check_choice(self.binning, "binning", ("width", "mass"))
        n_bins = check_n_bins(self.n_bins)
        grid = check_grid(self.temperatures, PAPER_TEMPERATURES, "temperatures", positive=True)
        z, y = self._fit_input(logits, labels)
        if self.criterion == "nll":
            self.temperature_ = nll_temperature(z, y)
            self.best_score_ = softmax_nll(z, y, self.temperature_)
            return self
        def score(axes):
            return np.array([ece(softmax(z / t, axis=1), y, n_bins, self.binning) for t in axes[0]])

        (self.temperatures_,), self.scores_ = grid_search(
            score, [grid], ["temperature"], [self.temperatures is None], type(self).__name__)
        best = int(np.argmin(self.scores_))  # the first minimum, as the papers' strict `<` scan
        self.temperature_ = float(self.temperatures_[best])
        self.best_score_ = float(self.scores_[best])
        return self

    def predict_proba(self, logits) -> np.ndarray:
        """``softmax(logits / temperature_)`` in float64."""
        return softmax(self._predict_input(logits, "temperature_") / self.temperature_, axis=1)


def softmax_nll(z: np.ndarray, y: np.ndarray, temperature: float) -> float:
    """Mean negative log-likelihood of ``softmax(z / T)`` (validated float64 logits, int labels)."""
    return float(-log_softmax(z / temperature, axis=1)[np.arange(z.shape[0]), y].mean())


def nll_temperature(z: np.ndarray, y: np.ndarray) -> float:
    """The temperature minimising :func:`softmax_nll`, by bounded Brent search on ``log T`` in
    :data:`LOG_T_BOUNDS` (a minimiser on a bound warns: the NLL still falls beyond it, as when
    the logits carry no information about the labels, or predict every label right)."""
    return bounded_log_search(lambda t: softmax_nll(z, y, t), LOG_T_BOUNDS, LOG_T_BOUNDS,
                              "TemperatureScaling")
