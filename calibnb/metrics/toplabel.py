"""Top-label view of a classifier: confidence max_k p_k and whether argmax_k p_k is the label.

Ties in ``argmax`` go to the first maximal class, as in ``numpy.argmax`` and ``torch.max``, and
so do classes whose probabilities differ from the largest by less than :data:`TIE_RTOL` of it:
float16 logits often tie exactly between the top two classes, and a calibration map computed in
vector code returns the two equal probabilities with a last-bit difference that depends on the
CPU, so a plain ``argmax`` made the prediction, and every top-label metric, depend on the machine
(1 example in 10,000 of a CIFAR-sized test set, seen after focal temperature scaling).
"""

from __future__ import annotations

import numpy as np



#: Probabilities within this relative distance of a row's largest count as tied with it: far above
#: the last-bit noise of float64 arithmetic (1e-16), far below any difference that means something.
TIE_RTOL = 1e-12


def predicted_class(p: np.ndarray) -> np.ndarray:
    """The first class whose probability is within :data:`TIE_RTOL` of the row's largest."""
    return (p >= p.max(axis=1, keepdims=True) * (1.0 - TIE_RTOL)).argmax(axis=1)


def top_label(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``(probs, labels)`` and return float64 ``(confidences, correct)`` of shape (N,).

    Examples
    --------
    >>> from calibnb.metrics import top_label
    >>> top_label([[0.7, 0.2, 0.1], [0.1, 0.55, 0.35]], [0, 2])
    (array([0.7 , 0.55]), array([1., 0.]))

    A tie goes to the first class, so this prediction of class 0 is wrong:

    >>> top_label([[0.5, 0.5]], [1])
    (array([0.5]), array([0.]))
    """
    from calibnb.metrics.rowpass import row_statistics  # rowpass builds on this module

    conf, correct, _, _ = row_statistics(probs, labels)
    if not isinstance(conf, np.ndarray):  # a tensor's statistics, computed on its device
        conf, correct = conf.cpu().numpy(), correct.cpu().numpy()
    return conf, correct


def top_label_unchecked(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``top_label`` on already validated float64 probabilities and int64 labels."""
    pred = predicted_class(p)
    conf = p[np.arange(p.shape[0]), pred]
    return conf, (pred == y).astype(np.float64)
