"""Out-of-distribution detection from predictive uncertainty (Mukhoti et al. 2020, Sec. 6).

The papers separate in-distribution test images (CIFAR-10) from OOD ones (SVHN, CIFAR-10-C) by
an uncertainty score of the softmax output and report the AUROC. Convention: OOD is the positive
class and a *higher* score means "more likely OOD"; the scores are the predictive entropy
H(p) = -sum_k p_k log p_k (0 log 0 = 0) or the negative maximum probability -max_k p_k.
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr
from scipy.stats import mannwhitneyu

from calibnb._validation import check_choice, check_probs

SCORES = ("entropy", "max_prob")


def ood_score(probs, score: str = "entropy") -> np.ndarray:
    """Per-sample OOD score, larger = more uncertain: entropy (nats) or ``-max_k p_k``.

    Examples
    --------
    >>> from calibnb.metrics import ood_score
    >>> ood_score([[1/3, 1/3, 1/3], [0.9, 0.05, 0.05]]).round(4)  # the uniform row: log 3
    array([1.0986, 0.3944])
    >>> ood_score([[1/3, 1/3, 1/3], [0.9, 0.05, 0.05]], score="max_prob").round(4)
    array([-0.3333, -0.9   ])
    """
    check_choice(score, "score", SCORES)
    return _score(check_probs(probs, "probs"), score)


def ood_auroc(probs_in, probs_out, score: str = "entropy") -> float:
    """AUROC of separating OOD (positive) from in-distribution samples by ``score``.

    Equals P(s_out > s_in) + P(s_out = s_in) / 2 over independent pairs, computed as the
    Mann-Whitney U statistic of scipy divided by n_in * n_out (the same number as
    ``sklearn.metrics.roc_auc_score`` with OOD labelled 1).

    Examples
    --------
    >>> from calibnb.metrics import ood_auroc
    >>> probs_in = [[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.5, 0.3, 0.2]]
    >>> ood_auroc(probs_in, [[0.4, 0.3, 0.3], [0.6, 0.3, 0.1]])  # 5 of 6 pairs ordered right
    0.8333
    >>> ood_auroc(probs_in, probs_in)  # indistinguishable: chance
    0.5
    """
    check_choice(score, "score", SCORES)
    p_in, p_out = check_probs(probs_in, "probs_in"), check_probs(probs_out, "probs_out")
    if p_in.shape[1] != p_out.shape[1]:
        raise ValueError(f"probs_in has {p_in.shape[1]} classes but probs_out has {p_out.shape[1]}")
    s_in, s_out = _score(p_in, score), _score(p_out, score)
    u = mannwhitneyu(s_out, s_in, alternative="two-sided", method="asymptotic").statistic
    return float(u / (s_in.size * s_out.size))


def _score(p: np.ndarray, score: str) -> np.ndarray:
    return entr(p).sum(axis=1) if score == "entropy" else -p.max(axis=1)
