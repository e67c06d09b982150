"""The paired verdict rule of the results chapters (calibnb.analysis.verdicts)."""

import math

import numpy as np
import pytest

from calibnb.analysis import paired_verdict, verdict_agreement


@pytest.mark.parametrize(
    "differences, inclusive, expected",
    [
        ([-1, -2, -1, -3, -1], False, ("holds", 5, 5)),
        ([-1, -2, -1, -3, 0.5], False, ("holds", 4, 5)),        # 4 of 5 suffice
        ([-1, -2, 0.1, 0.2, -3], False, ("inconclusive", 3, 5)),  # mean agrees, 3 of 5 do not
        ([1, 2, 1, -0.5, 3], False, ("does not hold", 1, 5)),
        ([0, 0, 0, 0, 0], True, ("holds", 5, 5)),                 # "a <= b" with ties
        ([0, 0, 0, 0, 0], False, ("inconclusive", 0, 5)),         # "a < b" with ties
        ([-1, -1, np.nan], False, ("inconclusive (too few runs)", 2, 2)),
        ([-1, -1, -1, 5], False, ("inconclusive", 3, 4)),          # most agree, the mean does not
    ],
)
def test_paired_verdict_branches(differences, inclusive, expected):
    assert paired_verdict(differences, inclusive=inclusive) == expected


def test_paired_verdict_needs_the_rounded_up_fraction():
    # ceil(0.8 * 6) = 5 of 6 pairs
    assert paired_verdict([-1] * 4 + [0.1, 0.1])[0] == "inconclusive"
    assert paired_verdict([-1] * 5 + [0.1])[0] == "holds"
    assert math.ceil(0.8 * 6) == 5


def test_chance_levels_stated_in_the_results_chapter():
    """results.md: under exchangeable methods each seed sides with a claim with probability 1/2,
    so at least 4 of 5 do with probability 6/32, all 5 with 1/32, and 4 of 5 in two
    independent regimes with about 0.035."""
    at_least_4 = sum(math.comb(5, k) for k in (4, 5)) / 2**5
    assert at_least_4 == 6 / 32 and math.comb(5, 5) / 2**5 == 1 / 32
    assert round(at_least_4**2, 3) == 0.035


@pytest.mark.parametrize(
    "first, second, expected",
    [
        ("holds", "holds", "confirmed in both"),
        ("does not hold", "does not hold", "contradicted in both"),
        ("holds", "does not hold", "conflict"),
        ("does not hold", "holds", "conflict"),
        ("inconclusive", "inconclusive (too few runs)", "inconclusive in both"),
        ("inconclusive (too few runs)", "inconclusive", "inconclusive in both"),
        ("holds", "inconclusive", "decided in one regime only"),
        ("inconclusive (too few runs)", "does not hold", "decided in one regime only"),
        ("n/a", "holds", "n/a in one regime"),
        ("inconclusive", "n/a", "n/a in one regime"),
    ],
)
def test_verdict_agreement_classifies_every_pair(first, second, expected):
    assert verdict_agreement(first, second) == expected
