"""Focal temperature scaling (Komisarenko & Kull 2024, Section 4.2).

``p = focal_calibration_map(softmax(z / T), γ)``: temperature first, then the focal calibration
map of Eq. (1). The pair (γ, T) is chosen on a validation set. The paper's protocol (Section 5.1):
γ ∈ {−0.5, −0.25, 0.05, 0.25, 0.37, 0.5, 0.75, 1, 5}, T = 0.01, 0.02, …, 5.00, criterion the
15-bin equal-mass ECE (or the NLL when log-loss is reported). Section 5.2 proposes a cheaper
search along the near-linear relation between the optimal T and γ: fit T for two fixed γ (2m
evaluations), draw the line through the two optima, and search m points along it (3m in all).

Speed: the full paper grid is 4,500 candidates; on CIFAR-100-sized validation logits (5000, 100)
that is 2.25e9 (sample, class, γ, T) evaluations of Eq. (1)'s weight, a power of ``1 − q`` and
one division each (powers shared across γ: seven of the nine are multiples of 1/4, the other
two of 1/100),
which no further reuse removes: every class enters the normaliser of the top-label
confidence, and for K >= 3 that confidence is not a function of the pre-map top confidence
alone (q = (0.6, 0.4, 0) and (0.6, 0.2, 0.2) map to 0.672 and 0.704 at γ = 1), so each candidate
also needs its own sort for the equal-mass bins. :class:`._grid.FocalGrid` shares everything
else: the temperature-free part of the softmax once, the γ-free terms once per T (recomputed in
registers rather than stored), only the top class and the label per γ; the equal-mass ECE of
the candidates runs on PyTorch's thread count. Grids up to ``COMPILE_ABOVE`` evaluations (the
paper's grid on CIFAR-100 logits among them) run an eager kernel, so a fresh process's first fit
costs what a later one does; larger ones compile the kernel with ``torch.compile`` once per
process, a cost (10–25 s) that their fit repays. ``bench/bench_fts_grid.py --cold`` times the
first fit in fresh processes with an empty compile cache against a warm one.

Torch tensors are fitted and predicted on their device (a GPU included): the grid, the batched
ECE and the map run there, and only the criterion's scores come back to the host.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.base import BaseEstimator

from .._validation import check_choice, check_grid, check_n_bins
from ..metrics import ece, nll
from ..metrics.scores import NLL_EPS
from ._base import ClassCountMixin
from ..metrics.streaming import is_tensor
from ._grid import FocalGrid, batched_ece, focal_softmax_tensor
from ._search import grid_search
from .focal_map import focal_softmax

#: γ_ev of the paper's experiments (Section 5.1).
PAPER_GAMMAS = np.array([-0.5, -0.25, 0.05, 0.25, 0.37, 0.5, 0.75, 1.0, 5.0])
#: T of the paper's experiments: 0.01 to 5.00 in steps of 0.01 (Section 5.1).
PAPER_FTS_TEMPERATURES = np.round(np.arange(1, 501) * 0.01, 10)


class FocalTemperatureScaling(ClassCountMixin, BaseEstimator):
    """Focal temperature scaling, a scikit-learn estimator (``clone``, ``get_params``,
    ``NotFittedError``).

    Parameters
    ----------
    gammas : 1-D array-like of floats >= -1, optional
        Candidate γ_ev. None (default): :data:`PAPER_GAMMAS`, extended past an end where the
        best γ lies (upwards times 4, up to 80; downwards to −1, the map's limit). Include 0 to
        contain plain temperature scaling.
    temperatures : 1-D array-like of positive floats, optional
        Candidate T. None (default): :data:`PAPER_FTS_TEMPERATURES`, extended geometrically
        past an end where the best T lies (up to T in [1e-4, 1e4]). A grid given (the papers'
        included) stays fixed, and a best γ or T at its end warns
        (:class:`~calibnb.calibration.EdgeOfSearchWarning`).
    criterion : {"ece", "nll"}
        Validation criterion: the ECE with ``n_bins`` bins of kind ``binning`` (the default: the
        FTS paper selects (γ, T) on a grid by the 15-bin equal-mass ECE, as Mukhoti et al. select
        T), or the mean NLL (the paper's choice for its log-loss column; label probabilities
        clipped below at float64's epsilon, as :func:`calibnb.metrics.nll`).
    search : {"grid", "loop", "line"}
        ``"grid"`` scores every (γ, T) with the fast shared kernel (``FocalGrid``);
        ``"loop"`` scores the same candidates one after the other, as the paper describes it
        (``_loop_surface()``, the reference: same selection, far slower); ``"line"`` is the paper's
        3m search: the best T for the smallest and the largest γ, then m = len(temperatures)
        points on the line through them, with γ evenly spaced over [min γ, max γ] (points with
        T <= 0 are skipped). The m points are scored in one batch. Not the grid's optimum but
        close to it: on DenseNet CIFAR-100 validation logits its ECE is within 0.005 of the
        grid's (lower there, its γ being off the grid; tested), in a third of the grid's
        evaluations. A third of the evaluations is not a third of the time: the grid computes
        the γ-free terms of a temperature (two transcendental functions per logit) once for
        all its γ, and each further γ costs one ``exp`` per logit, while each of the line's m
        points has a temperature of its own. With F the per-temperature and G the per-γ cost,
        the 9-γ grid costs m(F + 9G) and the line m(2F + 3G): the line is faster, but less than
        twice as fast while F >= G, which the γ-free part's two transcendental functions per
        logit make it. Its first phase alone, m(F + 2G), is then near half the grid, so no
        choice of the last m points makes it twice as fast (``bench/bench_fts_grid.py --line``
        times the grid, the line and that first phase).
    n_bins, binning : int, {"width", "mass"}
        The ECE of the criterion; the paper uses 15 equal-mass bins.

    Attributes
    ----------
    gamma_, temperature_ : float
        The selected parameters (the first minimum in the order γ-major, T-minor).
    best_score_ : float
        The validation criterion at the selected parameters.
    scores_ : ndarray of shape (n_gammas, n_temperatures)
        The criterion surface: every candidate for ``search="grid"``; for ``"line"`` the two rows
        of the fixed γ (``gammas_`` holds which).
    gammas_, temperatures_ : ndarray
        The γ and T axes of ``scores_``.
    line_ : tuple (intercept, slope), ``line_gammas_``, ``line_temperatures_``, ``line_scores_``
        ``search="line"`` only: T = intercept + slope·γ and the scored points on it.
    n_classes_, n_features_in_, classes_ : int, int, ndarray
        As :class:`TemperatureScaling` (binary logits may be one column).

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import FocalTemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> fts = FocalTemperatureScaling(gammas=[0.0, 0.5, 1.0, 2.0], temperatures=np.linspace(0.1, 4, 40))
    >>> fts.fit(logits, labels).gamma_, round(fts.temperature_, 2)  # lowest 15-bin AdaECE
    (1.0, 3.2)
    >>> fts.predict_proba(logits[:1]).round(3)
    array([[0.269, 0.203, 0.529]])
    """

    #: The ECE of up to this many temperatures is scored at once (one batched call), with at
    #: most ``BATCH_ELEMENTS`` (candidate, sample) confidences held (32 MiB of float64).
    TEMPERATURE_BATCH, BATCH_ELEMENTS = 20, 1 << 22

    def __init__(self, gammas=None, temperatures=None, criterion: str = "ece",
                 search: str = "grid", n_bins: int = 15, binning: str = "mass"):
        self.gammas = gammas
        self.temperatures = temperatures
        self.criterion = criterion
        self.search = search
        self.n_bins = n_bins
        self.binning = binning

    def fit(self, logits, labels) -> "FocalTemperatureScaling":
        """Choose (γ, T) on validation ``logits`` (N, K) and integer ``labels`` (N,)."""
        check_choice(self.criterion, "criterion", ("ece", "nll"))
        check_choice(self.search, "search", ("grid", "loop", "line"))
        check_choice(self.binning, "binning", ("width", "mass"))
        check_n_bins(self.n_bins)
        gammas = check_grid(self.gammas, PAPER_GAMMAS, "gammas", minimum=-1.0)
        temperatures = check_grid(self.temperatures, PAPER_FTS_TEMPERATURES, "temperatures",
                                  positive=True)
        if is_tensor(logits) and self.search == "loop":  # the reference runs in numpy
            logits, labels = (_host(a) for a in (logits, labels))
        # a torch tensor is scored on its device
        z, y = (self._fit_input_on_device if is_tensor(logits) else self._fit_input)(logits, labels)
        extend = [self.gammas is None, self.temperatures is None]
        if self.search == "line":
            return self._fit_line(FocalGrid(z, y, 3 * temperatures.size), gammas, temperatures,
                                  extend[1])
        if self.search == "loop":
            def score(axes):
                return self._loop_surface(z, y, *axes)
        else:
            grid = FocalGrid(z, y, gammas.size * temperatures.size)

            def score(axes):
                return self._surface(grid, *axes)
        (self.gammas_, self.temperatures_), self.scores_ = grid_search(
            score, [gammas, temperatures], ["gamma", "temperature"], extend, type(self).__name__)
        best_g, best_t = np.unravel_index(np.argmin(self.scores_), self.scores_.shape)
        self._select(self.gammas_[best_g], self.temperatures_[best_t], self.scores_[best_g, best_t])
        return self

    def predict_proba(self, logits):
        """``focal_calibration_map(softmax(logits / temperature_), gamma_)`` in float64: a numpy
        array, or for a torch tensor a tensor on its device."""
        if is_tensor(logits):
            z = self._predict_input_on_device(logits, "gamma_")
            return focal_softmax_tensor(z, self.gamma_, self.temperature_)
        return focal_softmax(self._predict_input(logits, "gamma_"), self.gamma_, self.temperature_)

    def _loop_surface(self, z, y, gammas, temperatures) -> np.ndarray:
        """The paper's search as written (Section 5.1): map the validation
        logits with every (γ, T) in turn and score them (``fit`` keeps the
        first minimum)."""
        scores = np.empty((gammas.size, temperatures.size))
        for i, gamma in enumerate(gammas):
            for j, temperature in enumerate(temperatures):
                probs = focal_softmax(z, gamma, temperature)
                if self.criterion == "ece":
                    scores[i, j] = ece(probs, y, self.n_bins, self.binning)
                else:
                    scores[i, j] = nll(probs, y)
        return scores

    def _criterion(self, grid: FocalGrid, gammas: np.ndarray, temperature: float) -> np.ndarray:
        """The validation criterion of (γ, temperature) for every γ in ``gammas``."""
        conf, log_p_label = grid.evaluate(temperature, gammas)
        if self.criterion == "nll":
            return _mean_nll(log_p_label)
        return batched_ece(conf, grid.correct, self.n_bins, self.binning)

    def _surface(self, grid: FocalGrid, gammas: np.ndarray, temperatures: np.ndarray):
        if self.criterion == "nll":
            return np.stack([self._criterion(grid, gammas, t) for t in temperatures], axis=1)
        # the ECE of a batch of temperatures at once: one sort and one bincount call each
        size = max(1, min(self.TEMPERATURE_BATCH,
                          self.BATCH_ELEMENTS // (gammas.size * grid.correct.shape[0])))
        scores = []
        for start in range(0, temperatures.size, size):
            batch = temperatures[start : start + size]
            conf = _rows([grid.evaluate(t, gammas)[0] for t in batch])
            scores.append(batched_ece(conf, grid.correct, self.n_bins, self.binning)
                          .reshape(batch.size, gammas.size).T)
        return np.concatenate(scores, axis=1)

    def _fit_line(self, grid: FocalGrid, gammas: np.ndarray, temperatures: np.ndarray,
                  extend_temperatures: bool):
        ends = np.array([gammas.min(), gammas.max()])
        (self.gammas_, temperatures), self.scores_ = grid_search(
            lambda axes: self._surface(grid, *axes), [ends, temperatures], ["gamma", "temperature"],
            [None, extend_temperatures], type(self).__name__,
            best_positions=lambda s: [(i, int(np.argmin(s[i]))) for i in range(s.shape[0])])
        self.temperatures_ = temperatures
        t_ends = temperatures[np.argmin(self.scores_, axis=1)]
        slope = 0.0 if ends[1] == ends[0] else (t_ends[1] - t_ends[0]) / (ends[1] - ends[0])
        intercept = t_ends[0] - slope * ends[0]
        line_g = np.linspace(ends[0], ends[1], temperatures.size)
        line_t = intercept + slope * line_g
        keep = line_t > 0
        self.line_ = (float(intercept), float(slope))
        self.line_gammas_, self.line_temperatures_ = line_g[keep], line_t[keep]
        self.line_scores_ = self._points(grid, self.line_gammas_, self.line_temperatures_)
        # The two searched rows are candidates too, so the line search never loses to them.
        candidates = [(self.scores_[i, j], ends[i], temperatures[j])
                      for i, j in enumerate(np.argmin(self.scores_, axis=1))]
        if self.line_scores_.size:
            k = int(np.argmin(self.line_scores_))
            candidates.append((self.line_scores_[k], self.line_gammas_[k],
                               self.line_temperatures_[k]))
        score, gamma, temperature = min(candidates, key=lambda c: c[0])
        self._select(gamma, temperature, score)
        return self

    def _points(self, grid: FocalGrid, gammas: np.ndarray, temperatures: np.ndarray) -> np.ndarray:
        """The criterion at the points (γ_i, T_i): one kernel call each, one batched ECE for all."""
        if gammas.size == 0:
            return np.empty(0)
        conf, log_p = (_rows(a) for a in zip(*(
            grid.evaluate(t, np.array([g])) for g, t in zip(gammas, temperatures))))
        if self.criterion == "nll":
            return _mean_nll(log_p)
        return batched_ece(conf, grid.correct, self.n_bins, self.binning)

    def _select(self, gamma, temperature, score) -> None:
        self.gamma_, self.temperature_ = float(gamma), float(temperature)
        self.best_score_ = float(score)


def _host(x):
    """A tensor as a numpy array (anything else as it is)."""
    return x.detach().cpu().numpy() if is_tensor(x) else x


def _rows(parts: list):
    """The rows of ``parts`` stacked: numpy arrays, or tensors on their device."""
    return torch.cat(parts) if is_tensor(parts[0]) else np.concatenate(parts)


def _mean_nll(log_p) -> np.ndarray:
    """The mean NLL of each row of label log-probabilities (clipped as :func:`calibnb.metrics.nll`)."""
    if is_tensor(log_p):
        return (-log_p.clamp(min=math.log(NLL_EPS)).mean(dim=1)).cpu().numpy()
    return -np.maximum(log_p, np.log(NLL_EPS)).mean(axis=1)
