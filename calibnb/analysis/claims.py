"""The papers' qualitative claims, each judged on one regime's runs by the paired rule.

A :class:`Claim` says that method ``a`` has a lower (or, with ``lower=False``, higher) value of a
column than method ``b``, seed by seed; :data:`CLAIMS` lists the claims of the five papers that
the results chapter tests, and :func:`what_holds` judges all of them on one regime's selected
runs with :func:`calibnb.analysis.paired_verdict`. :func:`agreement` sets two regimes' verdicts
side by side (:func:`calibnb.analysis.verdict_agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .verdicts import paired_verdict, verdict_agreement

MUKHOTI = "Mukhoti et al. 2020"
GHOSH = "Ghosh et al. 2022 (AdaFocal)"
TAO = "Tao et al. 2023 (DFL)"
FCL = "FCL paper"
KOMISARENKO = "Komisarenko & Kull 2024 (FTS)"


@dataclass(frozen=True)
class Claim:
    """"``a``'s ``column`` is lower than ``b``'s" (``b=None``: than the neutral temperature 1).

    ``other_column`` compares with ``b``'s ``other_column`` instead (two calibrators of the same
    runs), and ``names`` renames the two sides in the evidence. ``inclusive`` makes it "≤";
    ``closer_to_one`` compares ``|value - 1|`` (a temperature's distance from neutral);
    ``unit="%"`` prints fractions as percent, ``unit=""`` prints values as they are.
    """

    paper: str
    text: str
    a: str
    b: str | None
    column: str
    lower: bool = True
    inclusive: bool = False
    closer_to_one: bool = False
    unit: str = "%"
    other_column: str | None = None
    names: tuple[str, str] | None = None


def _claims() -> tuple[Claim, ...]:
    c = [
        # Mukhoti et al. 2020: focal loss calibrates better than cross-entropy, before and after T.
        Claim(MUKHOTI, "FL-3 has a lower ECE than CE before T", "FL-3", "CE", "ece"),
        Claim(MUKHOTI, "FLSD-53 has a lower ECE than CE before T", "FLSD-53", "CE", "ece"),
        Claim(MUKHOTI, "FL-3's ECE after T is ≤ CE's", "FL-3", "CE", "ece_ts", inclusive=True),
        Claim(MUKHOTI, "FLSD-53's ECE after T is ≤ CE's", "FLSD-53", "CE", "ece_ts",
              inclusive=True),
        Claim(MUKHOTI, "CE is over-confident: its optimal T > 1", "CE", None, "temperature",
              lower=False, unit=""),
    ]
    for m in ("FL-3", "FLSD-53"):
        c.append(Claim(MUKHOTI, f"{m}'s T is closer to 1 than CE's (|T − 1|)", m, "CE",
                       "temperature", closer_to_one=True, unit=""))
    # Ghosh et al. 2022: AdaFocal beats FLSD-53 (and FL) in calibration, and in OOD detection.
    c.append(Claim(GHOSH, "AdaFocal has a lower ECE than FLSD-53 before T (ECE_EM, the paper's "
                          "metric)", "AdaFocal", "FLSD-53", "adaece"))
    c.append(Claim(GHOSH, "AdaFocal has a lower ECE than FL-3 before T (ECE_EM)", "AdaFocal",
                   "FL-3", "adaece"))
    for other in ("FL-3", "FLSD-53"):
        for shift, name in (("mnist", "MNIST"), ("gaussian_noise", "Gaussian noise")):
            c.append(Claim(GHOSH, f"AdaFocal detects OOD ({name}) better than {other} (entropy "
                                  "AUROC, before T)", "AdaFocal", other, f"auroc_{shift}",
                           lower=False))
    # Tao et al. 2023: DFL beats the focal family before T; AdaDualFocal beats both its parts.
    for other in ("FL-3", "FLSD-53", "AdaFocal"):
        c.append(Claim(TAO, f"DFL has a lower ECE than {other} before T", "DFL", other, "ece"))
    for other in ("AdaFocal", "DFL"):
        c.append(Claim(TAO, f"AdaDualFocal's ECE before T is ≤ {other}'s", "AdaDualFocal", other,
                       "ece", inclusive=True))
    # FCL paper: lowest pre-T calibration error, accuracy kept or improved.
    for other in ("DFL", "FLSD-53"):
        c.append(Claim(FCL, f"FCL has a lower ECE than {other} before T", "FCL", other, "ece"))
    for other in ("CE", "FL-3"):
        c.append(Claim(FCL, f"FCL keeps or improves accuracy: error ≤ {other}'s", "FCL", other,
                       "error", inclusive=True))
    # Komisarenko & Kull 2024: FTS beats TS (their ECE is equal-mass: AdaECE).
    for m in ("CE", "FL-1", "FL-3"):
        c.append(Claim(KOMISARENKO, f"FTS gives a lower ECE_EM (AdaECE) than TS for {m}", m, m,
                       "adaece_fts", other_column="adaece_ts", names=("FTS", "TS")))
    # Focal-type losses keep the accuracy of CE (Mukhoti et al.; Ghosh et al.; Tao et al.).
    for m, paper in (("FL-3", MUKHOTI), ("FLSD-53", MUKHOTI), ("AdaFocal", GHOSH), ("DFL", TAO)):
        c.append(Claim(paper, f"{m} does not hurt accuracy: error ≤ CE's", m, "CE", "error",
                       inclusive=True))
    return tuple(c)


#: The claims of the five papers that the results chapter tests, in its order.
CLAIMS = _claims()


def values_of(runs: pd.DataFrame, method: str, column: str) -> tuple[pd.Series, str]:
    """Per-seed ``column`` of a method given its label or (tuned methods) its family, and its label.

    A family that names several selected settings is refused: a claim compares one method.
    """
    g = runs[(runs["method"] == method) | (runs["family"] == method)]
    if g["method"].nunique() > 1:
        raise ValueError(f"{method!r} names several methods: {sorted(g['method'].unique())}")
    return g.set_index("seed")[column], (g["method"].iloc[0] if len(g) else method)


def judge(claim: Claim, runs: pd.DataFrame) -> dict:
    """``claim``'s verdict on one regime's selected runs, with its evidence in words.

    The verdict is ``"n/a"`` when the regime lacks the column (e.g. no OOD sets).
    """
    row = {"paper": claim.paper, "claim": claim.text}
    if claim.column not in runs.columns:
        return {**row, "evidence (means over seeds)": f"no {claim.column} in this regime",
                "verdict": "n/a"}
    va, la = values_of(runs, claim.a, claim.column)
    if claim.b is None:
        vb, lb = pd.Series(1.0, index=va.index), "the neutral T"
    else:
        vb, lb = values_of(runs, claim.b, claim.other_column or claim.column)
    if claim.names:
        la, lb = claim.names
    raw = f"{la} {va.mean():.2f} vs {lb} {vb.mean():.2f}"
    if claim.closer_to_one:
        va, vb = (va - 1).abs(), (vb - 1).abs()
    verdict, agree, n = paired_verdict(va - vb if claim.lower else vb - va, claim.inclusive)
    scale = 100.0 if claim.unit else 1.0
    unit = f" {claim.unit}" if claim.unit else ""
    evidence = f"{la} {scale * va.mean():.2f} vs {lb} {scale * vb.mean():.2f}{unit}"
    if claim.closer_to_one:  # the temperatures themselves, then what was compared
        evidence = f"{claim.column}: {raw} (compared: {evidence})"
    return {**row, "evidence (means over seeds)": f"{evidence}; {agree}/{n} seeds agree",
            "verdict": verdict}


def what_holds(runs: pd.DataFrame, claims=CLAIMS) -> pd.DataFrame:
    """Every claim's verdict and evidence on one regime's selected runs, indexed by (paper, claim)."""
    return pd.DataFrame([judge(c, runs) for c in claims]).set_index(["paper", "claim"])


def agreement(verdicts: dict) -> pd.DataFrame:
    """Two regimes' verdicts per claim and how they relate (:func:`verdict_agreement`).

    ``verdicts`` maps each of two regimes' names to its :func:`what_holds` table.
    """
    if len(verdicts) != 2:
        raise ValueError(f"verdicts must hold two regimes, got {len(verdicts)}")
    (first, a), (second, b) = verdicts.items()
    if not a.index.equals(b.index):
        raise ValueError("verdicts: the two regimes judged different claims")
    both = pd.DataFrame({first: a["verdict"], second: b["verdict"]})
    both["agreement"] = [verdict_agreement(x, y) for x, y in zip(both[first], both[second])]
    return both


def claims_in(both: pd.DataFrame, kind: str) -> set[str]:
    """The claims whose two verdicts relate as ``kind`` in an :func:`agreement` table."""
    return {text for (_, text), r in both.iterrows() if r["agreement"] == kind}


def verdict_table(verdicts: dict) -> pd.DataFrame:
    """Regimes' :func:`what_holds` tables side by side, claims numbered from 1.

    ``verdicts`` maps a regime's name to its table; all must judge the same claims.
    """
    first = next(iter(verdicts.values()))
    if not all(v.index.equals(first.index) for v in verdicts.values()):
        raise ValueError("verdicts: the regimes judged different claims")
    table = pd.concat({name: v[["verdict", "evidence (means over seeds)"]]
                       for name, v in verdicts.items()}, axis=1)
    table.index = pd.MultiIndex.from_tuples(
        [(i, paper, text) for i, (paper, text) in enumerate(table.index, start=1)],
        names=["#", "paper", "claim"])
    return table
