"""The cells of the results chapter's tables: a metric over seeds, paired calibrators, the selection.

Every number the chapter prints about a method is a mean over its seeds with their standard
deviation (:func:`mean_std`); temperature scaling and focal temperature scaling are compared on
the same networks, so side by side (:func:`better_of_pair`) and seed by seed
(:func:`paired_wins`); and the tuned methods' candidates are listed with the one that validation
chose (:func:`selection_table`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .methods import method_family

#: The mark of the lower (better) mean in :func:`better_of_pair`.
BETTER = " ✓"


def mean_std(values, scale: float = 100.0, digits: int = 2) -> str:
    """``"mean ± std"`` of ``values`` times ``scale`` (100: fractions as percent), NaN dropped.

    The standard deviation is the sample one (``ddof=1``), ``nan`` for a single value; ``"–"``
    when no value is left.
    """
    values = pd.Series(values, dtype=float).dropna() * scale
    if values.empty:
        return "–"
    std = values.std(ddof=1) if len(values) > 1 else float("nan")
    return f"{values.mean():.{digits}f} ± {std:.{digits}f}"


def better_of_pair(first, second, scale: float = 100.0) -> tuple[str, str]:
    """:func:`mean_std` of two metrics of the same runs, the lower mean marked with :data:`BETTER`.

    Equal means mark neither (lower is better for every metric the chapter pairs: ECE, AdaECE,
    NLL).
    """
    first, second = pd.Series(first, dtype=float) * scale, pd.Series(second, dtype=float) * scale
    cells = [mean_std(first, 1.0), mean_std(second, 1.0)]
    if first.mean() < second.mean():
        cells[0] += BETTER
    elif second.mean() < first.mean():
        cells[1] += BETTER
    return cells[0], cells[1]


def paired_wins(runs: pd.DataFrame, metrics, first: str = "fts", second: str = "ts") -> pd.DataFrame:
    """How often ``<metric>_<first>`` is below, above or equal to ``<metric>_<second>``, run by run.

    One row per metric with the counts ``"<FIRST> lower"``, ``"<SECOND> lower"`` and ``"tie"``,
    the number of runs compared (those with both values) and the share won by ``first``.
    """
    a, b = first.upper(), second.upper()
    rows = {}
    for metric in metrics:
        x, y = runs[f"{metric}_{first}"].astype(float), runs[f"{metric}_{second}"].astype(float)
        both = x.notna() & y.notna()
        x, y = x[both], y[both]
        rows[metric] = {f"{a} lower": int((x < y).sum()), f"{b} lower": int((x > y).sum()),
                        "tie": int((x == y).sum())}
    wins = pd.DataFrame(rows).T
    wins["runs"] = wins.sum(axis=1)
    share = wins[f"{a} lower"] / wins["runs"].where(wins["runs"] > 0, np.nan)
    wins[f"{a} lower (share)"] = share.round(2)
    return wins


def selection_table(runs: pd.DataFrame, selected: pd.DataFrame, among) -> pd.DataFrame:
    """Every candidate of the tuned losses ``among`` with its mean validation ECE, the chosen marked.

    ``runs`` are the labelled runs of one sweep (a ``method`` column, as from
    :func:`calibnb.runs.label_methods`) and ``selected`` the runs that
    :func:`calibnb.runs.select_by_validation` kept. Indexed by (method family, candidate).
    """
    rows = []
    for loss in among:
        chosen = set(selected.loc[selected["loss"] == loss, "method"])
        for label, group in runs[runs["loss"] == loss].groupby("method"):
            rows.append({"method": method_family(label), "candidate": label, "seeds": len(group),
                         "val ECE (%)": mean_std(group["val_ece"]),
                         "selected": "◀ selected" if label in chosen else ""})
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).sort_values(["method", "candidate"]).set_index(["method", "candidate"])
