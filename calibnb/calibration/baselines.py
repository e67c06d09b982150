"""The other post-hoc calibrators the papers compare against, as scikit-learn estimators.

* :class:`EnsembleTemperatureScaling` — Zhang et al. (2020), Mix-n-Match, Eq. (9): a convex
  combination ``w1 softmax(z / T) + w2 softmax(z) + w3 / K`` (AdaFocal's Table 3).
* :class:`SplineCalibration` — Gupta et al. (2021): a cubic spline fitted to the cumulative
  accuracy of the validation samples sorted by confidence; its derivative is the calibrated
  top-label confidence (AdaFocal's Table 4).
* :class:`HistogramBinning`, :class:`IsotonicCalibration` — Zadrozny & Elkan (2001, 2002) on the
  top-label confidence: the validation accuracy of equal-mass bins, or a monotone fit
  (scikit-learn's ``IsotonicRegression``).

The last three recalibrate the top-label confidence ``c`` to ``c'``, kept just above ``1/K``
(by the relative :data:`TOP_MARGIN`), and give the other classes ``1 − c'`` in proportion to
their probabilities, mixed with the uniform share just enough that each stays below ``c'`` by
the same margin: the predicted class (:func:`calibnb.metrics.toplabel.predicted_class`, the
first of near-tied classes) never changes, not even where ``c'`` is clipped to ``1/K``, so the
accuracy is the network's and the top-label metrics the papers report are those of the
recalibrated confidence.
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import make_lsq_spline
from scipy.optimize import minimize
from scipy.special import softmax
from sklearn.base import BaseEstimator
from sklearn.isotonic import IsotonicRegression


from .._validation import check_choice, check_int, check_n_bins
from ..metrics.binning import assign_bins, mass_edges_sorted
from ..metrics.streaming import is_tensor, on_gpu, row_blocks, true_class_entries
from ..metrics.toplabel import predicted_class
from ._base import ClassCountMixin
from ._search import TEMPERATURE_CAP, bounded_log_search

#: The top-label recalibrators keep the new top probability above ``1/K`` and every other class
#: below it by this relative margin, far above the metrics' tie tolerance (1e-12), so the
#: predicted class never changes.
TOP_MARGIN = 1e-9
#: :class:`EnsembleTemperatureScaling` on numpy logits of at most this many entries (32 MB of
#: float64: CIFAR's 10,000 x 100 and less) computes its losses as the equation reads, the bits of
#: the unstreamed code, keeping the mixture's parts (3 x the logits) between steps; above it, from
#: per-row sums, streamed (see the class).
ETS_EXACT_ELEMENTS = 1 << 22
#: The first search interval of ``log T`` of :class:`EnsembleTemperatureScaling`, widened
#: (up to the temperature cap) when the optimum lies on a bound.
ETS_LOG_T_BOUNDS = (-5.0, 5.0)


class EnsembleTemperatureScaling(ClassCountMixin, BaseEstimator):
    """Ensemble temperature scaling (Zhang et al. 2020, Mix-n-Match, Section 3.1).

    ``p = w1 softmax(z / T) + w2 softmax(z) + w3 / K`` (Eq. 9): first ``T`` minimises the
    ``loss`` of temperature scaling, then the weights, on the probability simplex, minimise the
    ``loss`` of the mixture, both on validation data. ``loss="mse"`` (the Brier score) is the
    default of the authors' code; ``"nll"`` is the alternative it offers. ``T`` is searched over
    ``log T`` in [−5, 5], widened (up to T in [1e-4, 1e4]) when the optimum lies on a bound,
    with an :class:`~calibnb.calibration.EdgeOfSearchWarning` at the cap.

    Streamed over blocks of rows (``calibnb.metrics.streaming``). Numpy logits of at most
    ``ETS_EXACT_ELEMENTS`` entries (CIFAR's) are scored as the equation reads, a block of
    rows at a time, the same bits as the whole-matrix code. Larger logits, and tensors on a GPU,
    are scored from per-row sums, holding no N x K temporary: with ``e_k = exp((z_k − max z) /
    T)`` and ``s = Σ e``, the Brier score of ``softmax(z / T)`` is ``Σ e² / s² − 2 e_y / s + 1``
    and its NLL ``log s − (z_y − max z) / T``; the weights' loss is a quadratic form in five
    per-row sums (Brier) or a function of the two true-class probabilities (NLL). The two
    agree to about 1e-6 in ``T`` and the weights (the same losses rounded differently; Brent's
    ``xatol`` and SLSQP's ``ftol`` leave that much). On a GPU each step of the search reads one
    number back to the host; a CPU tensor is fitted by the numpy code on a view of its memory.
    ``predict_proba`` of a tensor returns a float64 tensor on its device.

    Attributes: ``temperature_``, ``weights_`` (w1, w2, w3), ``n_classes_``, ``n_features_in_``,
    ``classes_``. Logits may be one binary column, as :class:`TemperatureScaling`'s.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import EnsembleTemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> ets = EnsembleTemperatureScaling().fit(logits, labels)
    >>> round(ets.temperature_, 2), ets.weights_.round(2)  # a temperature is all these logits need
    (2.13, array([1., 0., 0.]))
    >>> ets.predict_proba(logits[:1]).round(3)
    array([[0.266, 0.185, 0.549]])
    """

    def __init__(self, loss: str = "mse"):
        self.loss = loss

    def fit(self, logits, labels) -> "EnsembleTemperatureScaling":
        check_choice(self.loss, "loss", ("mse", "nll"))
        z, y = (self._fit_input_on_device if on_gpu(logits) else self._fit_input)(logits, labels)
        exact = not on_gpu(z) and z.size <= ETS_EXACT_ELEMENTS
        stats = _BlockScores(z, y, self.loss) if exact else _RowStats(z, y, self.loss)
        self.temperature_ = bounded_log_search(
            stats.tempered_loss, ETS_LOG_T_BOUNDS, tuple(np.log(TEMPERATURE_CAP)),
            type(self).__name__, xatol=1e-8)
        score = stats.mixture_loss(self.temperature_)
        mix = minimize(score, x0=np.ones(3) / 3, method="SLSQP", bounds=[(0.0, 1.0)] * 3,
                       constraints={"type": "eq", "fun": lambda w: w.sum() - 1.0})
        self.weights_ = np.clip(mix.x, 0.0, 1.0) / np.clip(mix.x, 0.0, 1.0).sum()
        return self

    def predict_proba(self, logits):
        """``w1 softmax(z / T) + w2 softmax(z) + w3 / K``, float64: a numpy array, or for a torch
        tensor a tensor on its device."""
        if on_gpu(logits):
            z = self._predict_input_on_device(logits, "weights_")
            out = _empty_like_float64(z)
        else:
            z = self._predict_input(logits, "weights_")
            out = np.empty(z.shape)
        for rows in row_blocks(*z.shape, gpu=on_gpu(z)):
            out[rows] = _mixture(self.weights_, self.temperature_, z[rows])
        if is_tensor(logits) and not is_tensor(out):  # a CPU tensor, computed on a numpy view
            import torch
            return torch.from_numpy(out)
        return out


def _mixture(weights, temperature: float, z):
    """``w1 softmax(z / T) + w2 softmax(z) + w3 / K`` of a block of rows (Eq. 9), element by
    element in that order (no BLAS product, whose rounding would depend on the block's shape and
    the CPU): for numpy with scipy's softmax, for a tensor with torch's, in float64."""
    w1, w2, w3 = (float(w) for w in weights)
    if is_tensor(z):
        z = _as_float64(z)
        return (w1 * (z / temperature).softmax(dim=1) + w2 * z.softmax(dim=1)) + w3 / z.shape[1]
    return _mix(w1, w2, w3, softmax(z / temperature, axis=1), softmax(z, axis=1))


def _mix(w1: float, w2: float, w3: float, tempered: np.ndarray, plain: np.ndarray) -> np.ndarray:
    """``(w1 tempered + w2 plain) + w3 / K``: Eq. (9)'s mixture of the two softmaxes and uniform."""
    return (w1 * tempered + w2 * plain) + w3 / tempered.shape[1]


class _BlockScores:
    """ETS's losses on numpy logits, a block of rows at a time, with the whole-matrix equations:
    each row's score is computed by the same operations as on the whole matrix (so the same
    bits) and the mean is taken over the N-vector of scores, as before streaming; the search and
    the weights are thus exactly those of the unstreamed code. For logits of at most
    ``ETS_EXACT_ELEMENTS`` entries, whose mixture parts are kept between steps."""

    def __init__(self, z: np.ndarray, y: np.ndarray, loss: str):
        self.z, self.y, self.loss = z, y, loss
        self.blocks = list(row_blocks(*z.shape))
        self.eye = np.eye(z.shape[1])

    def _mean(self, probs_of_block) -> float:
        scores = np.empty(self.z.shape[0])
        for rows in self.blocks:
            p, onehot = probs_of_block(rows), self.eye[self.y[rows]]
            if self.loss == "mse":
                scores[rows] = ((p - onehot) ** 2).sum(axis=1)
            else:
                scores[rows] = -np.log(np.maximum((p * onehot).sum(axis=1), 1e-300))
        return float(scores.mean())

    def tempered_loss(self, t: float) -> float:
        return self._mean(lambda rows: softmax(self.z[rows] / t, axis=1))

    def mixture_loss(self, t: float):
        z = self.z
        parts = {rows.start: (softmax(z[rows] / t, axis=1), softmax(z[rows], axis=1))
                 for rows in self.blocks}
        return lambda w: self._mean(lambda rows: _mix(*map(float, w), *parts[rows.start]))


class _RowStats:
    """The per-row sums of :class:`EnsembleTemperatureScaling`'s search, one pass over the
    logits each (numpy arrays, or torch tensors on their device)."""

    def __init__(self, z, y, loss: str):
        self.z, self.n, self.k, self.loss = z, z.shape[0], z.shape[1], loss
        self.blocks = list(row_blocks(self.n, self.k, gpu=on_gpu(z)))
        self.top = _empty_vector(z, self.n)
        for rows in self.blocks:
            self.top[rows] = _row_max(_as_float64(z[rows]))
        self.true_gap = _as_float64(true_class_entries(z, y)) - self.top  # z_y − max z ≤ 0

    def sums(self, t: float, square: bool):
        """Per row ``s = Σ e_k`` and (``square``) ``Σ e_k²`` of ``e = exp((z − max z) / t)``."""
        s = _empty_vector(self.z, self.n)
        sq = _empty_vector(self.z, self.n) if square else None
        for rows in self.blocks:
            e = _exp((_as_float64(self.z[rows]) - self.top[rows, None]) / t)
            s[rows] = e.sum(axis=1)
            if square:
                sq[rows] = (e * e).sum(axis=1)
        return s, sq

    def tempered_loss(self, t: float) -> float:
        """The mean Brier score (``"mse"``) or NLL of ``softmax(z / t)``."""
        loss = self.loss
        s, sq = self.sums(t, square=loss == "mse")
        if loss == "mse":
            return float((sq / (s * s) - 2.0 * _exp(self.true_gap / t) / s + 1.0).mean())
        return float(_clip_max(_log(s) - self.true_gap / t, NLL_CAP).mean())

    def mixture_loss(self, t: float):
        """The loss of ``w1 softmax(z / t) + w2 softmax(z) + w3 / K`` as a function of ``w``."""
        k, loss = self.k, self.loss
        s1 = _empty_vector(self.z, self.n)
        s2, s11, s22, s12 = (_empty_vector(self.z, self.n) for _ in range(4))
        for rows in self.blocks:
            shifted = _as_float64(self.z[rows]) - self.top[rows, None]
            e1, e2 = _exp(shifted / t), _exp(shifted)
            s1[rows], s2[rows] = e1.sum(axis=1), e2.sum(axis=1)
            s11[rows], s22[rows], s12[rows] = ((e1 * e1).sum(axis=1), (e2 * e2).sum(axis=1),
                                               (e1 * e2).sum(axis=1))
        p1y, p2y = _exp(self.true_gap / t) / s1, _exp(self.true_gap) / s2
        if loss == "nll":
            p1y, p2y = _to_host(p1y), _to_host(p2y)
            return lambda w: float(-np.log(np.maximum(w[0] * p1y + w[1] * p2y + w[2] / k,
                                                      1e-300)).mean())
        # Σ_k (w1 p1 + w2 p2 + w3 / K − 1[k = y])², each p summing to 1
        m11, m22, m12 = (float((a / b).mean()) for a, b in
                         ((s11, s1 * s1), (s22, s2 * s2), (s12, s1 * s2)))
        m1y, m2y = float(p1y.mean()), float(p2y.mean())

        def brier(w):
            w1, w2, w3 = w
            return (w1 * w1 * m11 + w2 * w2 * m22 + 2.0 * w1 * w2 * m12
                    + (w3 * w3 + 2.0 * w1 * w3 + 2.0 * w2 * w3) / k
                    - 2.0 * (w1 * m1y + w2 * m2y + w3 / k) + 1.0)
        return brier


#: ``-log(1e-300)``: the NLL of a true class whose probability underflows, as the search's cap.
NLL_CAP = float(-np.log(1e-300))


def _empty_like_float64(z):
    import torch
    return torch.empty(z.shape, dtype=torch.float64, device=z.device)


def _as_float64(x):
    if is_tensor(x):
        import torch
        return x.to(torch.float64)
    return x.astype(np.float64, copy=False)


def _empty_vector(like, n: int):
    if is_tensor(like):
        import torch
        return torch.empty(n, dtype=torch.float64, device=like.device)
    return np.empty(n)


def _row_max(x):
    if is_tensor(x):
        return x.amax(dim=1)
    return x.max(axis=1)


def _exp(x):
    if is_tensor(x):
        return x.exp()
    return np.exp(x)


def _log(x):
    if is_tensor(x):
        return x.log()
    return np.log(x)


def _clip_max(x, top: float):
    if is_tensor(x):
        return x.clamp(max=top)
    return np.minimum(x, top)


def _to_host(x) -> np.ndarray:
    return x.detach().cpu().numpy() if is_tensor(x) else x


def top_label_confidence(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(confidence, predicted class)`` of each row of logits ``z``: the softmax's top
    probability and :func:`calibnb.metrics.toplabel.predicted_class`, a block of rows at a time
    (the softmax is per row, so each row's bits are the whole matrix's)."""
    conf, top = np.empty(z.shape[0]), np.empty(z.shape[0], dtype=np.int64)
    for rows in row_blocks(*z.shape):
        p = softmax(z[rows], axis=1)
        top[rows] = predicted_class(p)
        conf[rows] = p[np.arange(p.shape[0]), top[rows]]
    return conf, top


class _TopLabelCalibrator(ClassCountMixin, BaseEstimator):
    """``fit``/``predict_proba`` shared by the top-label recalibrators (module docstring), which
    also set ``n_classes_``, ``n_features_in_`` and ``classes_`` (logits may be one binary
    column). ``_FITTED``: the attribute a subclass's ``_fit_top`` sets last.

    Both stream over blocks of rows (``calibnb.metrics.streaming.row_blocks``): the softmax
    and the recalibration are per row, so each block's rows come out bit for bit as the whole
    matrix's, and only the ``(N, K)`` output (of ``predict_proba``) and N-vectors are held
    whole. They are fitted with numpy and scikit-learn: torch tensors (any device) are copied to
    the host as float64 numpy arrays, and ``predict_proba`` returns a numpy array."""

    def fit(self, logits, labels):
        z, y = self._fit_input(logits, labels)
        conf, top = top_label_confidence(z)
        self._fit_top(conf, (top == y).astype(np.float64))
        return self

    def predict_proba(self, logits) -> np.ndarray:
        z = self._predict_input(logits, self._FITTED)
        out = np.empty(z.shape)
        for rows in row_blocks(*z.shape):
            out[rows] = self._recalibrate(softmax(z[rows], axis=1))
        return out

    def _recalibrate(self, p: np.ndarray) -> np.ndarray:
        """The recalibrated rows of the probabilities ``p`` (module docstring)."""
        n, k = p.shape
        rows, top = np.arange(n), predicted_class(p)
        conf = p[rows, top]
        # strictly above 1/K, so that the others' uniform share (1 − c') / (K − 1) stays below it
        new = np.clip(self._top(conf), (1.0 + TOP_MARGIN) / k, 1.0)[:, None]
        others = np.where(np.arange(k) == top[:, None], 0.0, p)
        rest = others.sum(axis=1, keepdims=True)
        share = np.divide(others, rest, out=np.full_like(p, 1.0 / (k - 1)), where=rest > 0)
        # Mix the other classes' shares with uniform just enough that none exceeds the top.
        biggest = share.max(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            limit = new / (1.0 - new) * (1.0 - TOP_MARGIN) if k > 2 else np.inf
            alpha = np.clip((biggest - limit) / (biggest - 1.0 / (k - 1)), 0.0, 1.0)
        alpha = np.nan_to_num(alpha)
        out = (1.0 - new) * ((1.0 - alpha) * share + alpha / (k - 1))
        out[rows, top] = new[:, 0]
        return out


class SplineCalibration(_TopLabelCalibrator):
    """Spline recalibration of the top-label confidence (Gupta et al. 2021).

    Sort the validation confidences; at the fractile ``x_i = i / N`` the cumulative accuracy is
    ``A(x_i) = (1/N) Σ_{j<=i} correct_j``. A least-squares cubic spline with ``n_knots`` equally
    spaced knots is fitted to ``A``; ``A'(x)`` is the accuracy at fractile ``x``, and a test
    confidence is calibrated to ``A'`` at its validation fractile (6 knots as in the paper).
    Attributes: ``spline_`` (the fitted ``A``), ``sorted_conf_``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import SplineCalibration
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> spline = SplineCalibration().fit(logits, labels)
    >>> spline.predict_proba(logits[:2]).round(3)  # the top class recalibrated, the others rescaled
    array([[0.323, 0.149, 0.528],
           [0.363, 0.053, 0.584]])
    """

    _FITTED = "sorted_conf_"

    def __init__(self, n_knots: int = 6):
        self.n_knots = n_knots

    def _fit_top(self, conf: np.ndarray, correct: np.ndarray) -> None:
        n_knots = check_int(self.n_knots, "n_knots", minimum=2)
        order = np.argsort(conf, kind="stable")
        n = conf.size
        if n < n_knots + 1:  # a cubic spline with n_knots - 2 inner knots has n_knots + 2 coefficients
            raise ValueError(f"logits: spline recalibration with n_knots={n_knots} needs at least "
                             f"{n_knots + 1} samples, got n_samples={n}")
        x = np.arange(1, n + 1) / n
        cumulative = np.cumsum(correct[order]) / n
        inner = np.linspace(0.0, 1.0, n_knots)[1:-1]
        knots = np.concatenate([[0.0] * 4, inner, [1.0] * 4])
        try:
            self.spline_ = make_lsq_spline(np.concatenate([[0.0], x]),
                                           np.concatenate([[0.0], cumulative]), knots, k=3)
        except (ValueError, np.linalg.LinAlgError) as error:  # Schoenberg-Whitney fails
            raise ValueError(f"logits: too few distinct samples ({n}) for a spline with "
                             f"n_knots={n_knots}: {error}") from None
        self.sorted_conf_ = conf[order]

    def _top(self, conf: np.ndarray) -> np.ndarray:
        n = self.sorted_conf_.size
        fractile = np.interp(conf, self.sorted_conf_, np.arange(1, n + 1) / n, left=0.0, right=1.0)
        return self.spline_.derivative()(fractile)


class HistogramBinning(_TopLabelCalibrator):
    """Top-label histogram binning (Zadrozny & Elkan 2001): each of ``n_bins`` equal-mass bins of
    the validation confidence predicts its validation accuracy. Attributes: ``edges_``,
    ``bin_accuracy_``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import HistogramBinning
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> histogram = HistogramBinning(n_bins=5).fit(logits, labels)
    >>> histogram.bin_accuracy_  # 100 samples a bin
    array([0.57, 0.52, 0.62, 0.78, 0.89])
    >>> histogram.predict_proba(logits[:1]).round(3)  # its confidence falls in the second bin
    array([[0.328, 0.152, 0.52 ]])
    """

    _FITTED = "bin_accuracy_"

    def __init__(self, n_bins: int = 15):
        self.n_bins = n_bins

    def _fit_top(self, conf: np.ndarray, correct: np.ndarray) -> None:
        n_bins = check_n_bins(self.n_bins)
        self.edges_ = mass_edges_sorted(np.sort(conf), n_bins)
        bins = assign_bins(conf, self.edges_)
        count = np.bincount(bins, minlength=n_bins)
        hits = np.bincount(bins, weights=correct, minlength=n_bins)
        centre = (self.edges_[:-1] + self.edges_[1:]) / 2  # an empty bin keeps its midpoint
        self.bin_accuracy_ = np.where(count > 0, hits / np.maximum(count, 1), centre)

    def _top(self, conf: np.ndarray) -> np.ndarray:
        return self.bin_accuracy_[assign_bins(conf, self.edges_)]


class IsotonicCalibration(_TopLabelCalibrator):
    """Top-label isotonic regression (Zadrozny & Elkan 2002) with scikit-learn's
    ``IsotonicRegression`` (clipped outside the validation range). Attribute: ``isotonic_``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import IsotonicCalibration
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> probs = IsotonicCalibration().fit(logits, labels).predict_proba(logits)
    >>> probs[:1].round(3)
    array([[0.314, 0.145, 0.541]])
    >>> from calibnb.metrics import ece
    >>> round(ece(probs, labels), 4)  # on the data it was fitted to, a monotone fit is perfect
    0.0
    """

    _FITTED = "isotonic_"

    def _fit_top(self, conf: np.ndarray, correct: np.ndarray) -> None:
        self.isotonic_ = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
        self.isotonic_.fit(conf, correct)

    def _top(self, conf: np.ndarray) -> np.ndarray:
        return self.isotonic_.predict(conf)
