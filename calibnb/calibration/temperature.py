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

Speed and memory: the ECE grid needs only each row's top-label confidence at each ``T``,
``p_top = 1 / Σ_k exp((z_k − z_max) / T)`` (:func:`top_label_confidences`), so it never forms the
probability matrix: it streams over blocks of rows (:func:`calibnb.calibration._grid.grid_blocks`,
peak extra memory a few MiB plus the (n_T, N) confidences) with one exponential per logit and
temperature, on the logits' own device (a CUDA tensor stays on the GPU), and the binned ECE of
all temperatures at once (:func:`calibnb.calibration._grid.batched_ece`). It agrees with
``ece(softmax(z / T), y)`` to rounding (the sums run in another order), which the tests check.
The NLL search also streams (:func:`softmax_nll`). A torch tensor is fitted on its device, a
GPU included (the confidences, the batched ECE, each NLL: only scores come back to the host),
and ``predict_proba`` returns a tensor there.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
from scipy.special import log_softmax, softmax
import torch
from sklearn.base import BaseEstimator

from .._threads import single_threaded
from .._validation import check_choice, check_grid, check_n_bins
from ..metrics.streaming import is_tensor, on_gpu, row_blocks
from ..metrics.toplabel import TIE_RTOL, top_label_unchecked
from ._base import ClassCountMixin
from ._grid import batched_ece, grid_blocks
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
        # a torch tensor is scored on its device; numpy arrays in numpy
        tensors = is_tensor(logits)
        z, y = (self._fit_input_on_device if tensors else self._fit_input)(logits, labels)
        if self.criterion == "nll":
            self.temperature_ = nll_temperature(z, y)
            self.best_score_ = softmax_nll(z, y, self.temperature_)
            return self
        logits, labels = (z, y) if tensors else (torch.from_numpy(z), torch.from_numpy(y))

        def score(axes):
            conf, correct = top_label_confidences(logits, labels, axes[0])
            return batched_ece(conf if tensors else conf.numpy(),
                               correct if tensors else correct.numpy(), n_bins, self.binning)

        (self.temperatures_,), self.scores_ = grid_search(
            score, [grid], ["temperature"], [self.temperatures is None], type(self).__name__)
        best = int(np.argmin(self.scores_))  # the first minimum, as the papers' strict `<` scan
        self.temperature_ = float(self.temperatures_[best])
        # the selected score as ece(predict_proba(z), y) rounds it, to the last bit (for a
        # tensor, to rounding)
        conf, correct = (top_label_confidences(z, y, [self.temperature_]) if tensors
                         else softmax_top_label(z, y, self.temperature_))
        self.best_score_ = float(batched_ece(conf.reshape(1, -1), correct.reshape(-1), n_bins,
                                             self.binning)[0])
        return self

    def predict_proba(self, logits):
        """``softmax(logits / temperature_)`` in float64: a numpy array, or for a torch tensor a
        tensor on its device."""
        if is_tensor(logits):
            z = self._predict_input_on_device(logits, "temperature_")
            out = torch.empty(z.shape, dtype=torch.float64, device=z.device)
            for rows in row_blocks(*z.shape, gpu=on_gpu(z)):
                out[rows] = torch.softmax(z[rows].to(torch.float64) / self.temperature_, dim=1)
            return out
        return softmax(self._predict_input(logits, "temperature_") / self.temperature_, axis=1)


def top_label_confidences(logits: torch.Tensor, labels: torch.Tensor, temperatures):
    """Top-label ``(conf, correct)`` of ``softmax(logits / T)`` for every ``T``: float64 tensors of
    shape (n_T, N), on the device of ``logits`` (validated (N, K), float64 or float32, and int64
    ``labels``). As :func:`calibnb.metrics.top_label`: the predicted class is the first whose
    probability is within ``TIE_RTOL`` of the row's largest, so a near-tie at a high ``T`` may
    pick another class than ``argmax z``; ``conf`` is its probability.

    ``p_k = exp((z_k − max z) / T) / Σ_j exp((z_j − max z) / T)``: per block of rows, ``z − max z``
    once, then per temperature one product, one ``exp`` (in place) and one row sum; only
    the rows whose two largest logits are close enough for a near-tie at ``T`` are looked at
    class by class, the others predict ``argmax z`` (the largest ``exp`` is exactly 1).
    """
    n, k = logits.shape
    conf = torch.empty((len(temperatures), n), dtype=torch.float64, device=logits.device)
    correct = torch.empty_like(conf)
    temperatures = np.asarray(temperatures, dtype=np.float64).tolist()
    with single_threaded() if logits.device.type == "cpu" else contextlib.nullcontext():
        for rows in grid_blocks(n, k):
            _block_top_label(logits[rows], labels[rows], temperatures, conf[:, rows],
                             correct[:, rows])
    return conf, correct


def _block_top_label(z, labels, temperatures, conf, correct) -> None:
    """:func:`top_label_confidences` of one block of rows, written into the views ``conf`` and
    ``correct`` (n_T, rows)."""
    tie = -math.log1p(-TIE_RTOL)  # p_k >= (1 − TIE_RTOL) p_max <=> x_max − x_k <= tie
    z = z.to(torch.float64, copy=True)
    top2 = z.topk(min(2, z.shape[1]), dim=1).values
    gap = top2[:, 0] - top2[:, -1]
    right = (z.argmax(dim=1) == labels).to(torch.float64)
    shifted = z.sub_(top2[:, :1])  # z − max z <= 0, in place
    e = torch.empty_like(shifted)
    for i, t in enumerate(temperatures):
        torch.mul(shifted, 1.0 / t, out=e).exp_()   # exp(x − max x), 1 at the top
        torch.reciprocal(e.sum(dim=1), out=conf[i])
        correct[i] = right
        near = torch.nonzero(gap / t <= 2 * tie).flatten()
        if near.numel():  # the metric's tie rule, on the few rows where it may apply
            pred = (e[near] >= 1.0 - TIE_RTOL).to(torch.int8).argmax(dim=1)
            conf[i, near] = e[near, pred] * conf[i, near]
            correct[i, near] = (pred == labels[near]).to(torch.float64)


def softmax_top_label(z: np.ndarray, y: np.ndarray, temperature: float):
    """``calibnb.metrics.top_label(softmax(z / T), y)`` bit for bit, computed on blocks of rows (the
    softmax of a row does not depend on the others), so it never holds the (N, K) probabilities."""
    parts = [top_label_unchecked(softmax(z[rows] / temperature, axis=1), y[rows])
             for rows in grid_blocks(*z.shape)]
    return tuple(np.concatenate(p) for p in zip(*parts))


def softmax_nll(z, y, temperature: float) -> float:
    """Mean negative log-likelihood of ``softmax(z / T)`` (validated float64 logits and int labels:
    numpy arrays, or tensors, computed on their device), one block of rows at a time."""
    if is_tensor(z):
        parts = [torch.log_softmax(z[rows].to(torch.float64) / temperature, dim=1)
                 .gather(1, y[rows, None])[:, 0] for rows in row_blocks(*z.shape, gpu=on_gpu(z))]
        return float(-torch.cat(parts).mean())
    parts = [log_softmax(z[rows] / temperature, axis=1)[np.arange(rows.stop - rows.start), y[rows]]
             for rows in row_blocks(*z.shape)]
    return float(-np.concatenate(parts).mean())


def nll_temperature(z: np.ndarray, y: np.ndarray) -> float:
    """The temperature minimising :func:`softmax_nll`, by bounded Brent search on ``log T`` in
    :data:`LOG_T_BOUNDS` (a minimiser on a bound warns: the NLL still falls beyond it, as when
    the logits carry no information about the labels, or predict every label right)."""
    return bounded_log_search(lambda t: softmax_nll(z, y, t), LOG_T_BOUNDS, LOG_T_BOUNDS,
                              "TemperatureScaling")
