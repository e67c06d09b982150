"""Synthetic predictions whose true calibration error is known in closed form.

Used by the book to show how calibration estimators behave (bias, binning) when the truth is
known, and by the tests that pin those statements.
"""

from __future__ import annotations

import numpy as np

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
