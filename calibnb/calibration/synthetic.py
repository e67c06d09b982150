"""Synthetic validation/test logits with a known, not-quite-temperature calibration.

Stand-ins for a trained network's logits until the book's own runs exist: logits ``z`` are
Gaussian, and the label of each sample is drawn from

    P(y = k | z) = (1 − ε) softmax(z / T)_k + ε / K,

a model over-confident by the factor ``T`` (as cross-entropy networks are, Guo et al. 2017) whose
true confidence also never exceeds ``1 − ε + ε / K`` (label noise). No temperature alone fits
this map, which leaves room between temperature scaling and richer post-hoc maps.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from .._validation import check_int, check_real


def overconfident_logits(n_samples: int = 5000, n_classes: int = 10, temperature: float = 2.0,
                         label_noise: float = 0.05, logit_scale: float = 3.0, seed: int = 0):
    """Return ``(logits, labels, true_probs)``: (N, K) float64, (N,) int64 and (N, K) float64.

    ``logits`` are i.i.d. normal with standard deviation ``logit_scale``; ``true_probs`` is
    ``(1 − label_noise) softmax(logits / temperature) + label_noise / K``, and each label is
    drawn from its row.
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
