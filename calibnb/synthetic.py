"""Synthetic predictions whose true calibration is known.

Used by the book to show how calibration estimators and calibrators behave when the truth is
known, and by the tests that pin those statements:

- :func:`linear_overconfidence`: binary predictions with closed-form CE_1 and CE_2;
- :func:`overconfident_logits`: multiclass logits whose labels follow a tempered softmax with
  label noise, a stand-in for a trained network's logits (see its docstring).
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from ._validation import check_int, check_real


def linear_overconfidence(n_samples: int, slope: float = 0.8, seed=None):
    """Binary predictions with confidence ``c ~ U(0.5, 1)`` and accuracy ``0.5 + slope (c - 0.5)``.

    Class 0 is always predicted with probability ``c``; the label is 0 with probability
    ``0.5 + slope (c - 0.5)``. For ``slope < 1`` the model is over-confident everywhere, with
    the calibration errors of :func:`linear_overconfidence_errors`. ``seed`` is an int or a
    ``numpy.random.Generator``. Returns ``(probs (N, 2), labels (N,))``.
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    slope = check_real(slope, "slope", minimum=0.0, maximum=1.0)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, n_samples)
    right = rng.random(n_samples) < 0.5 + slope * (conf - 0.5)
    return np.stack([conf, 1 - conf], axis=1), np.where(right, 0, 1).astype(np.int64)


def linear_overconfidence_errors(slope: float = 0.8) -> tuple[float, float]:
    """True ``(CE_1, CE_2)`` of :func:`linear_overconfidence`.

    The gap is ``c - a(c) = (1 - slope)(c - 0.5)`` with ``c ~ U(0.5, 1)``, so
    ``CE_1 = (1 - slope) E[c - 0.5] = (1 - slope) / 4`` and
    ``CE_2 = (1 - slope) E[(c - 0.5)^2]^{1/2} = (1 - slope) / sqrt(12)``.
    """
    slope = check_real(slope, "slope", minimum=0.0, maximum=1.0)
    return (1 - slope) / 4, (1 - slope) / np.sqrt(12)


def overconfident_logits(n_samples: int = 5000, n_classes: int = 10, temperature: float = 2.0,
                         label_noise: float = 0.05, logit_scale: float = 3.0, seed: int = 0):
    """Logits with a known, not-quite-temperature calibration: ``(logits, labels, true_probs)``.

    ``logits`` (N, K) are i.i.d. normal with standard deviation ``logit_scale``; each label is
    drawn from ``true_probs = (1 − label_noise) softmax(logits / temperature) + label_noise / K``,
    a model over-confident by the factor ``temperature`` (as cross-entropy networks are, Guo et
    al. 2017) whose true confidence never exceeds ``1 − ε + ε / K``. No temperature alone fits
    this map, which leaves room between temperature scaling and richer post-hoc maps. Returns
    float64 logits, int64 labels and float64 true probabilities.
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    temperature = check_real(temperature, "temperature", minimum=0.0, strict_minimum=True)
    label_noise = check_real(label_noise, "label_noise", minimum=0.0, maximum=1.0)
    logit_scale = check_real(logit_scale, "logit_scale", minimum=0.0, strict_minimum=True)
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=logit_scale, size=(n_samples, n_classes))
    true_probs = (1 - label_noise) * softmax(logits / temperature, axis=1) + label_noise / n_classes
    cdf = np.cumsum(true_probs, axis=1)
    labels = np.minimum((rng.random(n_samples)[:, None] > cdf).sum(axis=1), n_classes - 1)
    return logits, labels.astype(np.int64), true_probs


def adafocal_stream(offsets, slope: float = 0.04, noise: float = 0.01, epochs: int = 150,
                    gamma_init: float = 1.0, seed=0, **update_params):
    """AdaFocal's Algorithm 1 driven by a synthetic stream of validation gaps.

    Each bin's validation gap responds linearly to its gamma, as a network's roughly does:
    ``gap_b = offsets[b] - slope * gamma_b + noise * N(0, 1)`` (``offsets`` is the gap under
    cross-entropy; inverse focal loss, gamma < 0, adds confidence). Starting from ``gamma_init``
    in every bin, :func:`calibnb.losses.adafocal_update` (with ``update_params``: ``lam``,
    ``switch``, ``gamma_min``, ``gamma_max``) runs for ``epochs`` steps. Without noise, a bin
    settles at the gamma that zeroes its gap, ``offsets[b] / slope`` (inside the clip range).
    Returns ``(gammas (epochs + 1, B), gaps (epochs, B))``.
    """
    from .losses import adafocal_update

    offsets = np.asarray(offsets, dtype=np.float64)
    if offsets.ndim != 1 or offsets.size == 0 or not np.isfinite(offsets).all():
        raise ValueError(f"offsets must be a non-empty 1-D array of finite gaps, got {offsets!r}")
    slope = check_real(slope, "slope", minimum=0.0, strict_minimum=True)
    noise = check_real(noise, "noise", minimum=0.0)
    epochs = check_int(epochs, "epochs", minimum=1)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    gammas = np.full(offsets.shape, check_real(gamma_init, "gamma_init"))
    trace, gaps_seen = [gammas], []
    for _ in range(epochs):
        gaps = offsets - slope * gammas + noise * rng.standard_normal(offsets.size)
        gammas = adafocal_update(gammas, gaps, **update_params)
        trace.append(gammas)
        gaps_seen.append(gaps)
    return np.array(trace), np.array(gaps_seen)
