"""Top-label view of a classifier: confidence max_k p_k and whether argmax_k p_k is the label.

Ties in ``argmax`` go to the first maximal class, as in ``numpy.argmax`` and ``torch.max``.
"""

from __future__ import annotations

import numpy as np

from calibnb._validation import check_probs_labels


def top_label(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(probs, labels)`` and return float64 ``(confidences, correct)`` of shape (N,)."""
    p, y = check_probs_labels(probs, labels)
    return top_label_unchecked(p, y)


def top_label_unchecked(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``top_label`` on already validated float64 probabilities and int64 labels."""
    pred = p.argmax(axis=1)
    conf = p[np.arange(p.shape[0]), pred]
    return conf, (pred == y).astype(np.float64)
