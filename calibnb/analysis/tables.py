"""The cells of the results chapter's tables: a metric over seeds, paired calibrators, the selection.

Every number the chapter prints about a method is a mean over its seeds with their standard
deviation (:func:`mean_std`); temperature scaling and focal temperature scaling are compared on
the same networks, so side by side (:func:`better_of_pair`) and seed by seed
(:func:`paired_wins`); and the tuned methods' candidates are listed with the one that validation
chose (:func:`selection_table`).
"""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd

from ..runs import method_family
from .ordering import method_order

#: The mark of the lower (better) mean in :func:`better_of_pair`.
BETTER = " ✓"


def mean_std(values, scale: float = 100.0, digits: int = 2) -> str:
    """``"mean ± std"`` of ``values`` times ``scale`` (100: fractions as percent), NaN dropped.

    The standard deviation is the sample one (``ddof=1``), ``nan`` for a single value; ``"–"``
    when no value is left. Both numbers go through :func:`number_text`, so a mean that rounds to
    zero prints as ``0.00``, never ``-0.00``.

    >>> mean_std([-0.00001, 0.00001, -0.00003])
    '0.00 ± 0.00'
    """
    values = pd.Series(values, dtype=float).dropna() * scale
    if values.empty:
        return "–"
    if len(values) == 1:  # one seed: no spread to report
        return f"{number_text(values.iloc[0], digits)} ± nan"
    return f"{number_text(values.mean(), digits)} ± {number_text(values.std(ddof=1), digits)}"


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


def by_row(runs: pd.DataFrame, fn, rows=None) -> pd.Series:
    """``fn`` of each method's runs, indexed by its side-by-side ``row`` name.

    ``runs`` holds the selected runs of one sweep with a ``row`` column (as from
    :func:`calibnb.runs.select_runs`); ``rows`` orders the result (default: the papers' order,
    :func:`calibnb.analysis.method_order`), and rows without runs are left out.
    """
    rows = method_order(runs["row"]) if rows is None else rows
    return pd.Series({r: fn(runs[runs["row"] == r]) for r in rows if (runs["row"] == r).any()})


def regime_check(runs: pd.DataFrame) -> dict:
    """Cross-entropy's test ECE before T, its validation-chosen T and its test error (in %).

    The results chapter needs an over-confident baseline (ECE above 3 %, T > 1) in each regime.
    """
    ce = runs[runs["method"] == "CE"]
    return {"CE runs": len(ce), "CE test ECE pre T, mean (%)": round(100 * ce["ece"].mean(), 2),
            "CE test ECE pre T, min (%)": round(100 * ce["ece"].min(), 2),
            "CE mean T": round(ce["temperature"].mean(), 2),
            "CE test error (%)": round(100 * ce["error"].mean(), 2)}


def table1(runs: pd.DataFrame, rows=None) -> pd.DataFrame:
    """The papers' Table 1 layout: test ECE before and after T (mean T in brackets), per method."""
    return pd.DataFrame({
        "ECE pre T (%)": by_row(runs, lambda g: mean_std(g["ece"]), rows),
        "ECE post T (%) (T)": by_row(
            runs, lambda g: f"{mean_std(g['ece_ts'])} ({number_text(g['temperature'].mean(), 1)})", rows),
        "seeds": by_row(runs, len, rows),
    })


def ranking(runs: pd.DataFrame, rows=None) -> str:
    """The methods ranked by mean ECE before and after T, and which side of calibrated each is.

    A method is over-confident when its mean T exceeds 1.05, under-confident below 0.95, and
    close to calibrated within half a step (0.05) of the T grid around 1.
    """
    rows = method_order(runs["row"]) if rows is None else rows
    means = runs.groupby("row")[["ece", "ece_ts"]].mean() * 100
    lines = []
    for column, name in (("ece", "before T"), ("ece_ts", "after T")):
        order = means[column].sort_values()
        lines.append(f"{name}: " + " < ".join(f"{m} {number_text(v)}" for m, v in order.items()))
        lines.append(f"   range of the method means: {number_text(order.min())} to {number_text(order.max())} %")
    t = runs.groupby("row")["temperature"].mean().reindex([r for r in rows if r in set(runs["row"])])
    for text, chosen in (("over-confident (mean T > 1.05)", t > 1.05),
                         ("under-confident (mean T < 0.95)", t < 0.95),
                         ("close to calibrated (mean T within 0.05 of 1, half a step of the T grid)",
                          (t - 1).abs() <= 0.05)):
        lines.append(f"{text}: " + (", ".join(t[chosen].index) or "none"))
    return "\n".join(lines)


def profile(runs: pd.DataFrame) -> dict:
    """The few numbers of one regime that the results chapter's discussion relies on."""
    t = runs.groupby("row")["temperature"].mean()
    e = runs.groupby("row")[["ece", "ece_ts", "error"]].mean() * 100

    def each(methods, cell):
        return " / ".join(cell(m) for m in methods)

    return {
        "methods over-confident (mean T > 1.05)": int((t > 1.05).sum()),
        "methods under-confident (mean T < 0.95)": int((t < 0.95).sum()),
        "mean T: CE / FL-3 / FLSD-53 / LS-0.05": each(("CE", "FL-3", "FLSD-53", "LS-0.05"),
                                                       lambda m: number_text(t[m])),
        "FL-3, FLSD-53 below CE's ECE before T": each(
            ("FL-3", "FLSD-53"), lambda m: "yes" if e.loc[m, "ece"] < e.loc["CE", "ece"] else "no"),
        "best before T / after T": f"{e['ece'].idxmin()} / {e['ece_ts'].idxmin()}",
        "error (%): CE / Brier / LS-0.05 / MMCE": each(("CE", "Brier", "LS-0.05", "MMCE"),
                                                       lambda m: number_text(e.loc[m, 'error'])),
        "MMCE's seed std of the error (points)":
            number_text(100 * runs.loc[runs['row'] == 'MMCE', 'error'].std(ddof=1)),
    }


def metric_columns(runs: pd.DataFrame, metrics, scale=None, rows=None) -> pd.DataFrame:
    """``mean ± std`` of each ``(metric, name)`` before and after T (the error only before).

    ``scale`` maps a metric to its factor (default 100, percent; e.g. ``{"nll": 1.0}``).
    """
    scale = scale or {}
    out = {}
    for metric, name in metrics:
        s = scale.get(metric, 100.0)
        out[f"{name} pre"] = by_row(runs, lambda g: mean_std(g[metric], scale=s), rows)
        if metric != "error":
            out[f"{name} post T"] = by_row(runs, lambda g: mean_std(g[f"{metric}_ts"], scale=s), rows)
    return pd.DataFrame(out)


def fts_table(runs: pd.DataFrame, rows=None) -> pd.DataFrame:
    """Temperature scaling against focal temperature scaling, per training loss.

    Accuracy, then NLL, AdaECE and ECE after each calibrator (the better mean marked by
    :func:`better_of_pair`), the seeds on which FTS has the lower AdaECE (FTS's own metric,
    :func:`paired_wins`), and the mean fitted T of TS and (γ, T) of FTS.
    """
    table = {}
    for r in (method_order(runs["row"]) if rows is None else rows):
        g = runs[runs["row"] == r]
        if g.empty:
            continue
        row = {"accuracy (%)": mean_std(1 - g["error"])}
        for metric, name, scale in (("nll", "NLL", 1.0), ("adaece", "AdaECE (%)", 100.0),
                                    ("ece", "ECE (%)", 100.0)):
            row[f"{name} TS"], row[f"{name} FTS"] = better_of_pair(
                g[f"{metric}_ts"], g[f"{metric}_fts"], scale)
        wins = paired_wins(g, ("adaece",)).loc["adaece"]
        row["FTS better (AdaECE), seeds"] = f"{int(wins['FTS lower'])}/{int(wins['runs'])}"
        row["T (TS)"] = number_text(g['temperature'].mean())
        row["(γ, T) (FTS)"] = f"({number_text(g['fts_gamma'].mean())}, {number_text(g['fts_temperature'].mean())})"
        table[r] = row
    return pd.DataFrame(table).T


def gamma_counts(selected: dict, rows) -> pd.DataFrame:
    """How often validation chose each γ_ev of focal temperature scaling, per regime and method.

    ``selected`` maps a regime's name to its selected runs.
    """
    runs = pd.concat(selected, names=["data set", None]).reset_index(level=0)
    counts = pd.crosstab([runs["data set"], runs["row"]], runs["fts_gamma"])
    counts = counts.reindex(pd.MultiIndex.from_product([list(selected), rows]), fill_value=0)
    counts = counts[sorted(counts.columns)]
    counts.columns = pd.Index([f"{c:g}" for c in counts.columns], name="γ_ev")
    counts.index.names = ["data set", "method"]
    return counts


def auroc_table(runs: pd.DataFrame, shifts: dict, rows=None) -> pd.DataFrame:
    """Entropy AUROC (%, mean ± std) per method for each shift (column name → display name),
    before and after temperature scaling."""
    table = {}
    for shift, name in shifts.items():
        for suffix, stage in (("", "pre T"), ("_ts", "post T")):
            table[f"{name} {stage}"] = by_row(runs, lambda g: mean_std(g[f"auroc_{shift}{suffix}"]), rows)
    table = pd.DataFrame(table)
    table.index.name = "AUROC (%)"
    return table


def number_text(value, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals as a reader should see it: a value that rounds to zero
    prints as ``0`` with its decimals, never ``-0.00`` nor ``1.4e-17``; NaN prints as ``–``.

    >>> number_text(-0.0004, 3), number_text(1.3877787807814457e-17), number_text(0.125, 2)
    ('0.000', '0.00', '0.12')
    """
    value = float(value)
    if np.isnan(value):
        return "–"
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten_text(value, digits: int = 0) -> str:
    """``value`` in scientific notation as a reader writes it, ``digits`` decimals in the
    mantissa: ``3.6e-15`` is ``4 × 10⁻¹⁵``, not a float's ``e-15``; 0 prints as ``0``.

    >>> power_of_ten_text(3.552713678800501e-15), power_of_ten_text(7.9e-4, 1), power_of_ten_text(0.0)
    ('4 × 10⁻¹⁵', '7.9 × 10⁻⁴', '0')
    """
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"value: expected a finite number, got {value!r}")
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    return f"{mantissa} × 10" + str(int(exponent)).translate(_SUPERSCRIPTS)


def power_of_ten_bound_text(value) -> str:
    """The smallest power of ten above a positive ``value``, as a reader writes it: a rounding
    difference of ``3.6e-15`` is "below ``10⁻¹⁴``".

    >>> power_of_ten_bound_text(3.552713678800501e-15), power_of_ten_bound_text(2e-7)
    ('10⁻¹⁴', '10⁻⁶')
    """
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"value: expected a finite positive number, got {value!r}")
    return "10" + str(int(np.floor(np.log10(value))) + 1).translate(_SUPERSCRIPTS)


#: A cell made of numbers only (digits, signs, brackets, ±, %): it never wraps.
_NUMBERS_ONLY = re.compile(r"[\s\d.,±%()+\-−–×eE/:;\[\]✓◀≤≥<>=≈|·…*~^]+")


def is_prose(value) -> bool:
    """Whether a table cell holds text of several words (more than 24 characters, three tokens or
    more, not numbers only) rather than a number or a short label: such a cell may wrap between
    its words; every other cell stays on one line."""
    if not isinstance(value, str) or len(value) <= 24 or len(value.split()) < 3:
        return False
    return not _NUMBERS_ONLY.fullmatch(value)


def styled(table: pd.DataFrame, caption: str | None = None, digits: int = 2, wrap: bool = False,
           index: bool = True):
    """The book's rendering of a table: numbers and short labels on one line, in compact type,
    numbers with ``digits`` decimals (a value that rounds to zero as ``0``, never ``-0.00``:
    :func:`number_text`), the cells marked with :data:`BETTER` in bold; ``caption`` above it.

    ``wrap=True`` (tables of sentences) lets the cells that hold a sentence (:func:`is_prose`) wrap
    between words, at least 14 characters wide; numbers and labels still never wrap. A table wider
    than the page's column scrolls inside its box (the book's CSS). ``index=False`` hides the
    row labels (for a table whose index is only 0, 1, 2, ...).

    Returns a pandas ``Styler`` (the notebook shows it as HTML); the table itself is unchanged.
    """
    cell = "white-space: nowrap; font-size: 0.85em; padding: 0.15em 0.6em"
    styles = [{"selector": "th, td", "props": cell},
              {"selector": "caption", "props": "caption-side: top; text-align: left"}]
    style = table.style
    if wrap:
        styles.append({"selector": "td.prose", "props": "white-space: normal; min-width: 14em"})
        style = style.set_td_classes(table.map(lambda v: "prose" if is_prose(v) else ""))
    style = (style.set_table_styles(styles)
             .format(lambda v: number_text(v, digits) if isinstance(v, (float, np.floating)) else v)
             .map(lambda v: "font-weight: bold" if isinstance(v, str) and v.endswith(BETTER) else ""))
    if not index:
        style = style.hide(axis="index")
    return style.set_caption(caption) if caption else style


#: The columns of a chapter's "What we verified" table: the paper's claim, what the paper says,
#: what the chapter computed, whether the claim holds, and the test that pins it.
VERIFIED_COLUMNS = ("claim", "paper", "ours", "status", "test")


def verified_table(rows):
    """A chapter's "What we verified" table from its rows (tuples in :data:`VERIFIED_COLUMNS` order).

    The text is escaped (a claim may contain ``<``); sentences wrap between words and numbers
    stay on one line (:func:`styled` with ``wrap=True``); no index column. The test, a long
    ``tests/<file>.py::<function>`` name, shows only its file: the function's name is one click
    away in the cell's toggle, so it never widens the table.
    """
    table = pd.DataFrame(list(rows), columns=list(VERIFIED_COLUMNS))
    if table.empty:
        raise ValueError("rows: a 'What we verified' table needs at least one row")
    text = table.drop(columns="test").map(lambda v: html.escape(str(v), quote=False))
    text["test"] = table["test"].map(_test_toggle)
    return styled(text, wrap=True, index=False)


def _test_toggle(test) -> str:
    if not isinstance(test, str) or not test.strip():
        raise ValueError(f"rows: every claim names its test, got {test!r}")
    path, _, function = test.partition("::")
    if not function:
        return f"<code>{html.escape(path)}</code>"
    return (f"<details><summary><code>{html.escape(path)}</code></summary>"
            f"<code>{html.escape(function)}</code></details>")


class VerifiedRecord:
    """One chapter's record of what it verified, built as the chapter computes.

    A chapter's hidden cells call :meth:`add` once per claim (the paper's statement, the paper's
    value, ours, the status and the test that pins it); its "What we verified" section shows
    :meth:`table`. The reader sees the mathematics and the results, and the bookkeeping stays one
    click away.

    Examples
    --------
    >>> record = VerifiedRecord()
    >>> record.add("§3.1: minimiser at γ = 2", "around 0.62", "0.6250", "holds",
    ...            "tests/test_theory_focal.py::test_minimiser")
    >>> len(record)
    1
    """

    def __init__(self):
        self.rows: list[tuple] = []

    def add(self, claim, paper, ours, status, test) -> None:
        """Record one claim: the columns of :data:`VERIFIED_COLUMNS`, in order."""
        for name, value in (("claim", claim), ("status", status), ("test", test)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name}: expected a non-empty string, got {value!r}")
        self.rows.append((claim, paper, ours, status, test))

    def __len__(self) -> int:
        return len(self.rows)

    def table(self):
        """The chapter's "What we verified" table (:func:`verified_table`)."""
        return verified_table(self.rows)
