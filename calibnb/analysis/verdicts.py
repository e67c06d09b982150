"""The paired rule by which the book judges a claim on runs, and how two regimes' verdicts relate.

Two methods run with the same seed share the data split, initialisation and batch order, so a
claim "a is lower than b" is judged on the per-seed differences (:func:`paired_verdict`), and
the verdicts of two regimes are set against each other (:func:`verdict_agreement`).
"""

from __future__ import annotations

import math

import pandas as pd

#: Verdicts of :func:`paired_verdict`.
VERDICTS = ("holds", "does not hold", "inconclusive", "inconclusive (too few runs)")


def paired_verdict(differences, inclusive: bool = False, agree: float = 0.8,
                   min_runs: int = 3) -> tuple[str, int, int]:
    """Whether paired differences ``a - b`` (one per seed) support the claim "a is lower than b".

    ``"holds"`` when the mean difference is below 0 (at most 0 with ``inclusive``, for claims of
    the form "a ≤ b") and at least a fraction ``agree`` of the pairs are (they need not all be);
    ``"does not hold"`` when the mean is above 0 and that many pairs are; otherwise
    ``"inconclusive"``, and ``"inconclusive (too few runs)"`` with fewer than ``min_runs`` pairs.
    NaN differences are dropped. Returns ``(verdict, pairs that agree with the claim, pairs)``.
    With 5 seeds and exchangeable methods, "holds" arises by chance with probability 6/32.
    """
    d = pd.Series(differences, dtype=float).dropna()
    n = len(d)
    supporting = int((d <= 0).sum() if inclusive else (d < 0).sum())
    if n < min_runs:
        return VERDICTS[3], supporting, n
    need = math.ceil(agree * n)
    mean = d.mean()
    if (mean <= 0 if inclusive else mean < 0) and supporting >= need:
        return VERDICTS[0], supporting, n
    if mean > 0 and int((d > 0).sum()) >= need:
        return VERDICTS[1], supporting, n
    return VERDICTS[2], supporting, n


def verdict_agreement(first: str, second: str) -> str:
    """How two regimes' verdicts on one claim relate (each a :data:`VERDICTS` entry or ``"n/a"``).

    ``"confirmed in both"``, ``"contradicted in both"``, ``"conflict"`` (holds in one, does not
    in the other), ``"inconclusive in both"`` (either kind of inconclusive), ``"decided in one
    regime only"``, or ``"n/a in one regime"`` when a regime cannot judge the claim.
    """
    for name, verdict in (("first", first), ("second", second)):
        if verdict not in (*VERDICTS, "n/a"):
            raise ValueError(f"{name} must be one of {[*VERDICTS, 'n/a']}, got {verdict!r}")
    pair = {first, second}
    if "n/a" in pair:
        return "n/a in one regime"
    if pair == {"holds"}:
        return "confirmed in both"
    if pair == {"does not hold"}:
        return "contradicted in both"
    if pair == {"holds", "does not hold"}:
        return "conflict"
    if first.startswith("inconclusive") and second.startswith("inconclusive"):
        return "inconclusive in both"
    return "decided in one regime only"
