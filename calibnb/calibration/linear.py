"""Softmax of an affine map: vector scaling, matrix scaling and Dirichlet calibration.

Kull et al. (2019), "Beyond temperature scaling: Obtaining well-calibrated multiclass
probabilities with Dirichlet calibration" (NeurIPS), Section 3:

* :class:`VectorScaling` — ``softmax(w ⊙ z + b)`` on the logits ``z`` (Guo et al. 2017): one
  weight and one intercept per class.
* :class:`MatrixScaling` — ``softmax(W z + b)`` on the logits, ``W`` a full K × K matrix.
* :class:`DirichletCalibration` — ``softmax(W ln q + b)`` on the log-probabilities
  ``ln q = log_softmax(z)`` of the network (the paper's Eq. (6): the Dirichlet calibration map in
  its "linear" parametrisation).

The full maps are fitted with ODIR, the paper's Off-Diagonal and Intercept Regularisation
(Section 3, "Regularisation"): the mean log-loss plus

    λ · 1/(K(K−1)) · Σ_{i≠j} w_ij²  +  μ · 1/K · Σ_j b_j²,

which shrinks the map towards a per-class rescaling without shrinking the diagonal (a
temperature is free). This is the paper's normalisation; the authors' code
(``dirichletcal``, ``MultinomialRegression``) leaves the sums unnormalised unless
``reg_norm=True`` and, with ``ref_row=True``, subtracts the last row of ``[W, b]`` from every
row before regularising; the two differ only in what a given λ, μ mean, and calibnb follows the
paper. Vector scaling has no off-diagonal weights: only μ applies.

λ and μ are chosen as the paper chooses them, by cross-validation on the calibration data: each
is a number or a grid, and a grid of more than one point is searched by ``cv``-fold
cross-validated log-loss (the unregularised NLL of the held-out fold), the first minimum winning,
then the map is refitted on all the data. ``reg_mu=None`` ties μ to λ (one grid, the diagonal of
the paper's λ × μ grid, ``cv`` × the grid's size fits instead of its square).

A grid costs ``cv`` fits per point (warm-started along the grid) and one refit: on CIFAR-100
(5,000 × 100, 10,100 parameters) each full-matrix fit is up to 500 L-BFGS-B iterations of a
5,000 × 100 × 100 product, which makes a searched map minutes, not seconds, on a busy CPU; pass
single values of λ and μ for a single fit.

Every fit starts at the identity map (``W = I``, ``b = 0``: the uncalibrated softmax) and runs
scipy's L-BFGS-B in float64 with the exact gradient (:func:`affine_nll_and_gradient`);
:func:`affine_objective_reference` is the same objective written term by term as the paper
writes it, which ``tests/test_calibration_linear.py`` holds equal to the fast one.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from .._validation import check_int, check_real
from ._base import ClassCountMixin

#: The default grid of λ (and of μ, tied to it) searched by cross-validation: powers of ten from
#: 0.1 to 1e5, the range where ODIR's normalised penalty goes from negligible to a near-diagonal
#: map on CIFAR-size calibration sets (5,000 samples, 10 or 100 classes: on CIFAR-100 matrix
#: scaling over-fits at λ = 0.1, test NLL 6.1, and matches temperature scaling at λ = 1e5).
ODIR_GRID = (1e-1, 1.0, 1e1, 1e2, 1e3, 1e4, 1e5)
#: L-BFGS-B's limits: at most this many iterations, stopping when the projected gradient's
#: largest entry or the relative decrease of the objective falls below these tolerances. Tight
#: enough that the fit reaches the minimiser, whose test metrics then agree across BLAS builds
#: and CPUs to 1e-6 (stopped at 500 iterations, as before, the study's CIFAR-10 WRN Dirichlet map
#: gave a test MCE of 0.25 on one CPU and 0.18 on another); the CIFAR maps converge in 200-2,000.
MAX_ITER, GTOL, FTOL = 10_000, 1e-7, 1e-13


# -- the objective -----------------------------------------------------------------------------


def affine_nll_and_gradient(params: np.ndarray, features: np.ndarray, labels: np.ndarray,
                            diagonal: bool, reg_lambda: float, reg_mu: float):
    """ODIR's objective and its exact gradient in ``params``, the fast path.

    ``params`` is ``[w_1..w_K, b_1..b_K]`` when ``diagonal`` (vector scaling), else
    ``[W.ravel(), b]`` with ``W`` K × K (row i: the weights of class i). ``features`` are the
    (N, K) inputs of the map (logits, or log-probabilities), ``labels`` their classes.
    The gradient of the mean log-loss is ``(softmax(s) − onehot)ᵀ x / N``, with ``s = W x + b``.
    """
    n, k = features.shape
    coef, intercept = unpack(params, k, diagonal)
    scores = features * coef + intercept if diagonal else features @ coef.T + intercept
    log_probs = log_softmax(scores, axis=1)
    rows = np.arange(n)
    loss = -log_probs[rows, labels].mean()
    residual = np.exp(log_probs)
    residual[rows, labels] -= 1.0
    residual /= n
    grad_coef = (residual * features).sum(axis=0) if diagonal else residual.T @ features
    grad_intercept = residual.sum(axis=0)
    if not diagonal and reg_lambda > 0:
        off = coef - np.diag(np.diag(coef))
        scale = reg_lambda / (k * (k - 1))
        loss += scale * np.sum(off ** 2)
        grad_coef = grad_coef + 2.0 * scale * off
    if reg_mu > 0:
        loss += reg_mu / k * np.sum(intercept ** 2)
        grad_intercept = grad_intercept + 2.0 * reg_mu / k * intercept
    return float(loss), np.concatenate([grad_coef.ravel(), grad_intercept])


def affine_objective_reference(coef, intercept, features, labels, reg_lambda: float, reg_mu: float) -> float:
    """The ODIR objective of Kull et al. (2019), Section 3, term by term (the reference):
    ``−1/N Σ_n ln softmax(W x_n + b)_{y_n} + λ/(K(K−1)) Σ_{i≠j} w_ij² + μ/K Σ_j b_j²``.

    ``coef`` is the K × K matrix ``W`` (a diagonal one for vector scaling). Slow: for tests.
    """
    features = np.asarray(features, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    n, k = features.shape
    log_loss = 0.0
    for x, y in zip(features, labels):
        s = [sum(coef[i, j] * x[j] for j in range(k)) + intercept[i] for i in range(k)]
        log_loss -= s[y] - np.log(sum(np.exp(np.array(s) - max(s)))) - max(s)
    off_diagonal = sum(coef[i, j] ** 2 for i in range(k) for j in range(k) if i != j)
    return log_loss / n + reg_lambda / (k * (k - 1)) * off_diagonal + reg_mu / k * sum(b ** 2 for b in intercept)


def unpack(params: np.ndarray, k: int, diagonal: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(coef, intercept)`` from the flat parameters of :func:`affine_nll_and_gradient`."""
    if diagonal:
        return params[:k], params[k:]
    return params[: k * k].reshape(k, k), params[k * k:]


def fit_affine(features: np.ndarray, labels: np.ndarray, diagonal: bool, reg_lambda: float,
               reg_mu: float, start: np.ndarray | None = None):
    """The minimiser of :func:`affine_nll_and_gradient` by L-BFGS-B from ``start`` (default: the
    identity map), with the number of iterations it took.

    The BLAS runs on one thread: a multi-threaded matrix product sums in an order that depends on
    the thread count, and over hundreds of L-BFGS-B steps on 10,100 parameters those last bits
    grow into a visibly different map (the post-hoc study's MCE moved by 0.014 between a worker
    process and a test process). One thread makes the fit the same wherever it runs."""
    k = features.shape[1]
    if start is None:
        start = np.concatenate([np.ones(k) if diagonal else np.eye(k).ravel(), np.zeros(k)])
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize(affine_nll_and_gradient, start, jac=True, method="L-BFGS-B",
                          args=(features, labels, diagonal, reg_lambda, reg_mu),
                          options={"maxiter": MAX_ITER, "gtol": GTOL, "ftol": FTOL})
    if not result.success:
        warnings.warn(f"the affine map's L-BFGS-B fit stopped without converging after {result.nit} "
                      f"iterations ({result.message}); unregularised maps of separable logits "
                      "have no minimiser: a larger reg_lambda gives one", ConvergenceWarning,
                      stacklevel=3)
    return result.x, int(result.nit)


# -- the estimators ----------------------------------------------------------------------------


def check_regularisation(value, name: str, allow_none: bool = False) -> np.ndarray | None:
    """A regularisation strength or grid: a number >= 0, or a non-empty 1-D sequence of them."""
    if value is None and allow_none:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return np.array([check_real(value, name, minimum=0.0)])
    if isinstance(value, (str, bytes, dict, set)) or value is None or isinstance(value, bool):
        raise TypeError(f"{name} must be a number >= 0 or a 1-D sequence of them, got {value!r}")
    try:
        grid = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number >= 0 or a 1-D sequence of them, got {value!r}") from None
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty 1-D sequence, got shape {grid.shape}")
    for v in grid:
        check_real(float(v), name, minimum=0.0)
    return grid


class _AffineCalibration(ClassCountMixin, BaseEstimator):
    """``softmax(W x + b)`` on features ``x`` of the logits, W diagonal or full, ODIR-regularised,
    λ and μ chosen by cross-validation when given as grids (the module docstring)."""

    _diagonal = False

    def _features(self, z: np.ndarray) -> np.ndarray:
        return z

    def _check_params(self):
        lambdas = check_regularisation(self.reg_lambda, "reg_lambda")
        mus = check_regularisation(self.reg_mu, "reg_mu", allow_none=True)
        check_int(self.cv, "cv", minimum=2)
        pairs = [(lam, lam) for lam in lambdas] if mus is None else \
            [(lam, mu) for lam in lambdas for mu in mus]
        return lambdas, mus, pairs

    def fit(self, logits, labels):
        """Fit the map on calibration ``logits`` (N, K) and integer ``labels`` (N,), choosing λ
        and μ by ``cv``-fold cross-validated log-loss when either is a grid."""
        lambdas, mus, pairs = self._check_params()
        z, y = self._fit_input(logits, labels)
        x = self._features(z)
        if len(pairs) > 1:
            scores = self._cross_validate(x, y, pairs)
            best = int(np.argmin(scores))
            self.cv_scores_ = scores.reshape(len(lambdas), -1) if mus is not None else scores
        else:
            best = 0
        self.reg_lambda_, self.reg_mu_ = (float(v) for v in pairs[best])
        params, self.n_iter_ = fit_affine(x, y, self._diagonal, self.reg_lambda_, self.reg_mu_)
        self.coef_, self.intercept_ = (a.copy() for a in unpack(params, z.shape[1], self._diagonal))
        return self

    def _cross_validate(self, x, y, pairs) -> np.ndarray:
        """The mean held-out log-loss of each ``(λ, μ)`` over ``cv`` shuffled, seeded folds, each
        fold's fits warm-started from the solution of the next stronger regularisation (the
        strongest starts at the identity)."""
        folds = KFold(self.cv, shuffle=True, random_state=0).split(x) if x.shape[0] >= self.cv else None
        if folds is None:
            raise ValueError(f"cv={self.cv} folds need at least {self.cv} samples, got n_samples={x.shape[0]}")
        scores = np.zeros(len(pairs))
        strongest_first = np.argsort([-(lam + mu) for lam, mu in pairs], kind="stable")
        for train, held_out in folds:
            start = None
            for i in strongest_first:
                lam, mu = pairs[i]
                start, _ = fit_affine(x[train], y[train], self._diagonal, lam, mu, start)
                coef, intercept = unpack(start, x.shape[1], self._diagonal)
                s = self._scores(x[held_out], coef, intercept)
                scores[i] += -log_softmax(s, axis=1)[np.arange(held_out.size), y[held_out]].mean() / self.cv
        return scores

    def _scores(self, x, coef, intercept):
        return x * coef + intercept if self._diagonal else x @ coef.T + intercept

    def predict_proba(self, logits) -> np.ndarray:
        """``softmax(W x + b)`` of the logits' features ``x``, in float64."""
        z = self._predict_input(logits, "coef_")
        return softmax(self._scores(self._features(z), self.coef_, self.intercept_), axis=1)


_SHARED_DOC = """
    Parameters
    ----------
    reg_lambda : float or 1-D array-like of floats >= 0
        ODIR's off-diagonal strength λ, or a grid of them searched by cross-validation.
    reg_mu : float, 1-D array-like of floats >= 0, or None
        ODIR's intercept strength μ, or a grid (searched jointly with λ's: their product); None:
        μ = λ, searched along λ's grid.
    cv : int >= 2
        The folds of the search (shuffled, seeded: ``KFold(cv, shuffle=True, random_state=0)``);
        unused when λ and μ are single values.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        The fitted ``W`` (row i: the weights of class i).
    intercept_ : ndarray of shape (K,)
        The fitted ``b``.
    reg_lambda_, reg_mu_ : float
        The λ and μ used (the search's choice).
    cv_scores_ : ndarray
        The cross-validated log-loss of each λ (μ tied), or of each (λ, μ) as a
        (n_lambda, n_mu) array; set only when a grid was searched.
    n_iter_ : int
        L-BFGS-B's iterations for the final fit.
    n_classes_, n_features_in_, classes_ : int, int, ndarray
        As every calibrator's (:class:`~calibnb.calibration.TemperatureScaling`).
"""


class MatrixScaling(_AffineCalibration):
    __doc__ = """Matrix scaling with ODIR (Kull et al. 2019, Section 3): ``softmax(W z + b)``.

    ``W`` is a full K × K matrix on the logits ``z``, fitted from the identity by L-BFGS-B on the
    mean log-loss plus ODIR (``calibnb.calibration.linear``). Unregularised (λ = μ = 0) it is
    Guo et al.'s (2017) matrix scaling, which over-fits with many classes; the paper's
    ODIR keeps it competitive on CIFAR-100.
    """ + _SHARED_DOC + """
    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import MatrixScaling
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> ms = MatrixScaling(reg_lambda=0.01, reg_mu=0.01).fit(logits, labels)
    >>> np.diag(ms.coef_).round(2)  # about I / 2: the temperature the labels were drawn at
    array([0.53, 0.47, 0.47])
    >>> ms.predict_proba(logits[:1]).round(3)
    array([[0.237, 0.208, 0.555]])
    """

    def __init__(self, reg_lambda=ODIR_GRID, reg_mu=None, cv: int = 5):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.cv = cv


class DirichletCalibration(_AffineCalibration):
    __doc__ = """Dirichlet calibration with ODIR (Kull et al. 2019, Eq. (6)): ``softmax(W ln q + b)``.

    ``q = softmax(z)`` are the network's probabilities; the map is linear in their logarithms,
    ``ln q = log_softmax(z)`` (computed from the logits, finite where ``q`` underflows), so the
    calibrated probabilities are ``∝ exp(b) · Π_j q_j^{w_ij}``, the Dirichlet calibration map.
    Fitted as :class:`MatrixScaling` on ``ln q`` instead of ``z``; the two differ unless every row
    of ``W`` sums to the same value.
    """ + _SHARED_DOC + """
    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import DirichletCalibration
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)
    >>> dirichlet = DirichletCalibration(reg_lambda=[0.01, 1.0], reg_mu=None, cv=3).fit(logits, labels)
    >>> dirichlet.reg_lambda_, dirichlet.cv_scores_.round(3)
    (1.0, array([0.758, 0.756]))
    >>> dirichlet.predict_proba(logits[:1]).round(3)
    array([[0.248, 0.206, 0.546]])
    """

    def __init__(self, reg_lambda=ODIR_GRID, reg_mu=None, cv: int = 5):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.cv = cv

    def _features(self, z):
        return log_softmax(z, axis=1)


class VectorScaling(_AffineCalibration):
    """Vector scaling (Guo et al. 2017; Kull et al. 2019, Section 3): ``softmax(w ⊙ z + b)``.

    One weight and one intercept per class on the logits ``z``, fitted from ``w = 1, b = 0`` by
    L-BFGS-B on the mean log-loss plus ``μ/K Σ_j b_j²`` (ODIR has no off-diagonal weights to
    shrink here; the paper fits vector scaling unregularised, ``reg_mu=0``, the default).

    Parameters
    ----------
    reg_mu : float or 1-D array-like of floats >= 0
        The intercept strength μ, or a grid searched by ``cv``-fold cross-validation.
    cv : int >= 2
        The folds of that search.

    Attributes
    ----------
    coef_ : ndarray of shape (K,)
        The fitted per-class weights ``w`` (the diagonal of ``W``).
    intercept_ : ndarray of shape (K,)
        The fitted ``b``.
    reg_lambda_, reg_mu_, cv_scores_, n_iter_, n_classes_, n_features_in_, classes_
        As :class:`MatrixScaling`'s (``reg_lambda_`` is 0).

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import VectorScaling
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)
    >>> vs = VectorScaling().fit(logits, labels)
    >>> vs.coef_.round(2), vs.intercept_.round(2)
    (array([0.53, 0.46, 0.48]), array([-0.11,  0.13, -0.02]))
    """

    _diagonal = True

    def __init__(self, reg_mu=0.0, cv: int = 5):
        self.reg_mu = reg_mu
        self.cv = cv

    def _check_params(self):
        mus = check_regularisation(self.reg_mu, "reg_mu")
        check_int(self.cv, "cv", minimum=2)
        return mus, None, [(0.0, mu) for mu in mus]
