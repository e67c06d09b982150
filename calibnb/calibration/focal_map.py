"""The multiclass focal calibration map of Komisarenko & Kull (2024), Proposition 4, Eq. (1).

Focal loss is a proper loss composed with a fixed, confidence-raising map. For a prediction
``q`` on the simplex and ``gamma >= -1`` the map is

    p̂_j(q) ∝ 1 / [(1 − q_j)^γ (γ log q_j / (1 − q_j) − 1 / q_j)],

normalised over the classes ``j``. Every bracket is negative, so the signs cancel and

    p̂_j ∝ w_j = q_j (1 − q_j)^(−γ) / (1 + γ x_j),     x_j = −q_j log q_j / (1 − q_j) ∈ [0, 1).

calibnb evaluates ``log w_j`` in float64 and normalises in log space. The top class is the
delicate one: when the softmax saturates, ``1 − q_top`` is the sum ``m`` of the other
probabilities, far below float64's resolution near 1, so it is taken from that sum (or from the
logits) instead of from ``1 − q_top``. The result is finite for any finite logits, where the
authors' float32 code (``focal_map`` in ``slavikkom/focal_temperature_scaling``) returns NaN
once a logit gap exceeds about 17.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, logsumexp, xlogy

from .._validation import check_logits, check_probs, check_real

#: Below this ``m = 1 − q_top`` the series of ``d(m)`` is used (relative truncation error ~m³/10).
SERIES_BELOW = 1e-4


def focal_calibration_map(probs, gamma) -> np.ndarray:
    """Apply the focal calibration map (Komisarenko & Kull 2024, Eq. (1)) to each row of ``probs``.

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
        Probabilities (numpy array or torch tensor); rows are renormalised in float64.
    gamma : float or 1-D array-like of floats, each >= -1
        The map's parameter γ. ``0`` is the identity; ``γ > 0`` sharpens the prediction: the
        top class gains probability (Proposition 5) whenever K <= 3 or its probability is at
        least 1/2; with four or more close classes it can lose a little (see the chapter).

    Returns
    -------
    ndarray of float64, shape (n_samples, n_classes), or (n_gammas, n_samples, n_classes) when
    ``gamma`` is a 1-D array. Rows sum to 1 and keep the order of the classes. A row whose
    other classes are exactly 0 stays one-hot (the map's limit); start from logits with
    :func:`focal_softmax` to keep their tiny probabilities.

    Examples
    --------
    >>> from calibnb.calibration import focal_calibration_map
    >>> focal_calibration_map([[0.6, 0.3, 0.1]], gamma=[0.0, 1.0]).round(4)  # identity, sharper
    array([[[0.6   , 0.3   , 0.1   ]],
           [[0.6959, 0.2316, 0.0725]]])

    The new top probability depends on the other classes, not only on the old top one:

    >>> focal_calibration_map([[0.6, 0.4, 0.0], [0.6, 0.2, 0.2]], gamma=1.0)[:, 0].round(3)
    array([0.672, 0.704])
    """
    q = check_probs(probs, "probs")
    q = q / q.sum(axis=1, keepdims=True)
    is_top = np.arange(q.shape[1]) == q.argmax(axis=1)[:, None]
    m = np.where(is_top, 0.0, q).sum(axis=1)
    with np.errstate(divide="ignore"):
        log_q = np.where(is_top, np.log1p(-m)[:, None], np.log(q))
        log_m = np.log(m)
    return np.exp(_log_focal_map(log_q, log_m, is_top, _check_gammas(gamma)))


def focal_softmax(logits, gamma, temperature: float = 1.0) -> np.ndarray:
    """Focal temperature scaling's prediction: ``focal_calibration_map(softmax(logits / T), γ)``.

    Computed from the logits in log space, so it is finite and normalised for any finite logits
    (gaps of 1000 included). ``gamma`` may be a float or a 1-D array (see
    :func:`focal_calibration_map`).

    Examples
    --------
    >>> from calibnb.calibration import focal_softmax
    >>> focal_softmax([[2.0, 0.0, -1.0]], gamma=1.0, temperature=2.0).round(4)
    array([[0.7403, 0.1631, 0.0965]])
    >>> focal_softmax([[1000.0, 0.0]], gamma=1.0)  # float32 code returns NaN here
    array([[1., 0.]])
    """
    return np.exp(log_focal_softmax(logits, gamma, temperature))


def log_focal_softmax(logits, gamma, temperature: float = 1.0) -> np.ndarray:
    """The logarithm of :func:`focal_softmax`; finite for any finite logits and γ >= -1.

    Examples
    --------
    >>> from calibnb.calibration import log_focal_softmax
    >>> log_focal_softmax([[1000.0, 0.0]], gamma=0.0).round(2)  # plain log-softmax
    array([[    0., -1000.]])
    >>> log_focal_softmax([[1000.0, 0.0]], gamma=1.0).round(2)  # where focal_softmax gives 0
    array([[    0.  , -1999.31]])
    """
    z = check_logits(logits, "logits")
    temperature = check_real(temperature, "temperature", minimum=0.0, strict_minimum=True)
    log_q, log_m, is_top = _log_softmax_with_top_mass(z / temperature)
    return _log_focal_map(log_q, log_m, is_top, _check_gammas(gamma))


def _check_gammas(gamma):
    """A float, or an ``(n_gammas, 1, 1)`` array for broadcasting over rows and classes."""
    if np.ndim(gamma) == 0:
        return check_real(gamma, "gamma", minimum=-1.0)
    gammas = np.asarray(gamma, dtype=np.float64)
    if gammas.ndim != 1 or gammas.size == 0:
        raise ValueError(
            f"gamma must be a float or a non-empty 1-D array, got shape {gammas.shape}")
    for g in gammas:
        check_real(float(g), "gamma", minimum=-1.0)
    return gammas[:, None, None]


def _log_softmax_with_top_mass(z: np.ndarray):
    """``log softmax(z)``, ``log m`` (the mass outside each row's top class) and the top mask.

    With ``s`` the sum of ``exp(z_k − max z)`` outside the top class, taken as a logsumexp so
    that ``log s`` stays finite when ``s`` underflows, ``log q_top = −log1p(s)`` and
    ``log m = log s − log1p(s)`` keep full relative precision where ``z − logsumexp(z)`` would
    round ``log q_top`` to 0 and ``1 − q_top`` to 0.
    """
    is_top = np.arange(z.shape[1]) == z.argmax(axis=1)[:, None]
    shifted = z - z.max(axis=1, keepdims=True)
    log_s = logsumexp(np.where(is_top, -np.inf, shifted), axis=1)
    log1p_s = np.log1p(np.exp(log_s))
    log_q = np.where(is_top, -log1p_s[:, None], shifted - log1p_s[:, None])
    return log_q, log_s - log1p_s, is_top


def _log_focal_map(log_q: np.ndarray, log_m: np.ndarray, is_top: np.ndarray, gamma):
    """``log p̂`` of Eq. (1) from ``log q``, ``log m = log(1 − q_top)`` and the top-class mask.

    ``log w_j = log q_j − γ log(1 − q_j) − log((1 + γ) − γ d_j)`` with ``d_j = 1 − x_j``,
    ``x_j = −q_j log q_j / (1 − q_j)``. For the top class ``log(1 − q) = log m`` and ``d`` comes
    from ``m`` (by its series when ``m`` is tiny, in log form so that it survives underflow);
    writing the denominator through ``d`` avoids the cancellation of ``1 + γ x`` at γ = −1,
    where ``d ≈ m / 2``. Rows with ``m == 0`` (possible only from probabilities) stay one-hot.
    """
    one_hot = np.isneginf(log_m)[:, None]
    log_m = np.where(one_hot[:, 0], np.log(0.5), log_m)  # a placeholder; the rows are reset below
    q_other = np.where(is_top, 0.0, np.exp(log_q))
    log_1mq = np.where(is_top, log_m[:, None], np.log1p(-q_other))
    log_d = np.where(is_top, _log_d_top(log_m)[:, None],
                     np.log1p(xlogy(q_other, q_other) / (1.0 - q_other)))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_den = np.where(
            gamma < 0,
            np.logaddexp(np.log1p(np.minimum(gamma, 0.0)), np.log(np.abs(gamma)) + log_d),
            np.log((1.0 + gamma) - gamma * np.exp(log_d)),
        )
    log_w = log_q - gamma * log_1mq - log_den
    log_w = np.where(one_hot, np.where(is_top, 0.0, -np.inf), log_w)
    return log_softmax(log_w, axis=-1)


def _log_d_top(log_m: np.ndarray) -> np.ndarray:
    """``log d`` for the top class, ``d = 1 + (1 − m) log1p(−m) / m = m/2 + m²/6 + m³/12 + …``."""
    m = np.exp(log_m)
    small = m < SERIES_BELOW
    safe = np.where(small, 0.5, m)
    direct = np.log1p((1.0 - safe) * np.log1p(-safe) / safe)
    series = log_m - np.log(2.0) + np.log1p(m / 3 + m**2 / 6)
    return np.where(small, series, direct)
