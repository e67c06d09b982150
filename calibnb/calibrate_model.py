"""Calibrate your own model: one call from a classifier's saved logits to a chosen calibrator.

:func:`calibrate` (also ``calibnb.calibrate``) fits every post-hoc calibrator of
:mod:`calibnb.calibration` on the user's calibration logits, scores each by stratified K-fold
cross-validation on them (ECE, equal-mass ECE, NLL and Brier score of :mod:`calibnb.metrics`,
mean ± std over the folds), chooses the one with the lowest mean of the criterion, refits it on all
the calibration data and returns a :class:`CalibrationResult`: the table, the fitted calibrators,
reliability diagrams and :meth:`CalibrationResult.save`, which writes a report folder (an HTML page,
the table as CSV and JSON, the figures as PNG files and the chosen calibrator as JSON, never a
pickle). ``python -m calibnb calibrate`` and ``python -m calibnb apply`` are the same from the
command line; :func:`calibnb.user_files.read_predictions` reads their files.

The module is ``calibnb.calibrate_model`` rather than ``calibnb.calibrate``: a submodule of that
name would replace the function ``calibnb.calibrate`` on the package as soon as it was imported.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

from ._validation import check_choice, check_int, check_logits_labels, check_n_bins, did_you_mean
from .atomic import atomic_path, write_json, write_text
from .calibration import (
    EnsembleTemperatureScaling,
    FocalTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    SplineCalibration,
    TemperatureScaling,
    Uncalibrated,
)
from .calibration.persist import CALIBRATORS, save_calibrator
from .metrics import adaptive_ece, brier, ece, nll
from .user_files import read_predictions

__all__ = ["CRITERIA", "NAMES", "CalibrationResult", "calibrate", "default_calibrators", "read_predictions"]

#: The metrics of the table, by their column name (all fractions; lower is better).
METRICS = {"ece": ece, "adaece": adaptive_ece, "nll": nll, "brier": brier}
METRIC_TITLES = {"ece": "ECE", "adaece": "AdaECE (equal mass)", "nll": "NLL", "brier": "Brier"}
#: The criteria a calibrator can be chosen by: any metric of the table.
CRITERIA = tuple(METRICS)
#: The calibrators by short name, in the order of the table (the reference row first; on an exact
#: tie of the criterion the first, the simpler, is chosen).
NAMES = ("uncalibrated", "ts", "ets", "fts", "histogram", "isotonic", "spline")
SHORT_NAMES = {Uncalibrated: "uncalibrated", TemperatureScaling: "ts", EnsembleTemperatureScaling: "ets",
               FocalTemperatureScaling: "fts", HistogramBinning: "histogram",
               IsotonicCalibration: "isotonic", SplineCalibration: "spline"}
#: What the files of :meth:`CalibrationResult.save` are called (one PNG per calibrator besides).
REPORT, TABLE_CSV, TABLE_JSON, CALIBRATOR = "report.html", "table.csv", "table.json", "calibrator.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


def default_calibrators(criterion: str = "nll", n_bins: int = 15) -> dict:
    """Every calibrator of :data:`NAMES`, unfitted, set to fit by ``criterion`` where it has a
    choice, so that each competes at what it is chosen by.

    Temperature scaling and focal temperature scaling minimise the NLL for ``"nll"`` and
    ``"brier"``, else the ECE with ``n_bins`` bins (equal-width for ``"ece"``, equal-mass for
    ``"adaece"``; the FTS grid is the paper's, 9 γ × 500 T, scored by the fast shared kernel);
    ensemble temperature scaling minimises the NLL for ``"nll"``, else the Brier score (its
    authors' default). Histogram binning has ``n_bins`` equal-mass bins; isotonic regression and
    the spline (6 knots) have no criterion.

    Examples
    --------
    >>> from calibnb.calibrate_model import default_calibrators
    >>> default_calibrators("adaece")["ts"]
    TemperatureScaling(binning='mass')
    """
    check_choice(criterion, "criterion", CRITERIA)
    n_bins = check_n_bins(n_bins)
    by_nll = criterion in ("nll", "brier")
    binning = "mass" if criterion == "adaece" else "width"
    return {
        "uncalibrated": Uncalibrated(),
        "ts": TemperatureScaling("nll") if by_nll else TemperatureScaling("ece", n_bins=n_bins, binning=binning),
        "ets": EnsembleTemperatureScaling("nll" if criterion == "nll" else "mse"),
        "fts": FocalTemperatureScaling(criterion="nll") if by_nll
        else FocalTemperatureScaling(criterion="ece", n_bins=n_bins, binning=binning),
        "histogram": HistogramBinning(n_bins=n_bins),
        "isotonic": IsotonicCalibration(),
        "spline": SplineCalibration(),
    }


def _calibrators(calibrators, criterion: str, n_bins: int) -> dict:
    """The user's ``calibrators`` as {name: unfitted calibrator}, the reference row first."""
    defaults = default_calibrators(criterion, n_bins)
    if calibrators is None:
        return defaults
    if isinstance(calibrators, str):
        calibrators = [c.strip() for c in calibrators.split(",")]
    if isinstance(calibrators, Mapping):
        entries = list(calibrators.items())
    else:
        try:
            entries = [(None, c) for c in calibrators]
        except TypeError:
            raise TypeError("calibrators must be names, calibrators or a dict {name: calibrator}, "
                            f"got {type(calibrators).__name__}") from None
    chosen: dict = {}
    for name, entry in entries:
        if isinstance(entry, str):
            if entry not in defaults:
                raise ValueError(f"calibrators: unknown calibrator {entry!r}{did_you_mean(entry, NAMES)}; "
                                 f"known: {', '.join(NAMES)}")
            name, estimator = (entry if name is None else name), defaults[entry]
        else:
            cls = type(entry)
            if CALIBRATORS.get(cls.__name__) is not cls:
                raise TypeError(f"calibrators: {cls.__qualname__} is not a calibrator of calibnb.calibration "
                                f"(one of {', '.join(CALIBRATORS)}, or their names {', '.join(NAMES)})")
            name, estimator = (SHORT_NAMES[cls] if name is None else name), clone(entry)
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"calibrators: the name {name!r} is not 1 to 64 letters, digits or _.+- "
                             "(it names the calibrator's figure file)")
        if name in chosen:
            raise ValueError(f"calibrators: two entries are named {name!r}; pass a dict {{name: calibrator}} "
                             "to name them apart")
        chosen[name] = estimator
    if not chosen:
        raise ValueError("calibrators is empty: name at least one")
    if "uncalibrated" not in chosen:
        chosen = {"uncalibrated": Uncalibrated(), **chosen}
    return chosen


@dataclasses.dataclass(frozen=True, eq=False)
class CalibrationResult:
    """What :func:`calibrate` found: read it, plot it, :meth:`save` it.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (calibrator, metric), tidy: ``calibrator``, ``metric``, ``cv_mean``, ``cv_std``
        (over the folds, ``ddof=1``) and, when test data were given, ``test`` (the calibrator refitted
        on all calibration data, scored on the test data). Metrics are fractions, lower is better.
    fold_scores : pandas.DataFrame
        Each fold's score: ``calibrator``, ``fold``, ``metric``, ``value``.
    chosen : str
        The name of the calibrator with the lowest mean cross-validated ``criterion``.
    best : calibrator
        That calibrator, refitted on all calibration data.
    calibrators : mapping
        Every calibrator by name, each refitted on all calibration data.
    reason : str
        Why ``chosen`` was chosen, in one sentence.
    criterion, folds, seed, n_bins, n_classes, n_calibration, n_test
        The settings of the call and the sizes of the data (``n_test`` None without test data).
    fit_seconds : mapping
        The time each calibrator took, its fold fits and its refit together (wall-clock seconds).
    """

    table: pd.DataFrame
    fold_scores: pd.DataFrame
    chosen: str
    best: object
    calibrators: Mapping
    reason: str
    criterion: str
    folds: int
    seed: int
    n_bins: int
    n_classes: int
    n_calibration: int
    n_test: int | None
    fit_seconds: Mapping
    diagram_data: Mapping = dataclasses.field(repr=False)

    def summary(self) -> pd.DataFrame:
        """The table wide: one row per calibrator, columns ``(metric, "cv_mean" | "cv_std" | "test")``."""
        values = [c for c in ("cv_mean", "cv_std", "test") if c in self.table]
        wide = self.table.pivot(index="calibrator", columns="metric", values=values)
        wide = wide.swaplevel(axis=1).reindex(columns=pd.MultiIndex.from_product([CRITERIA, values]))
        return wide.reindex(list(self.calibrators))

    @functools.cached_property
    def figures(self) -> dict:
        """A reliability diagram per calibrator (matplotlib figures, :func:`calibnb.plots.reliability_diagram`
        with ``n_bins`` equal-width bins): on the test data when given, else on the out-of-fold
        predictions of the cross-validation (each sample predicted by the fit that did not see it)."""
        from matplotlib.figure import Figure

        from .plots import reliability_diagram

        where = "test data" if self.n_test is not None else "out-of-fold calibration data"
        figures = {}
        for name, (probs, labels) in self.diagram_data.items():
            figure = Figure(figsize=(4.0, 5.0))
            ax = figure.add_subplot()
            figure.subplots_adjust(left=0.2, bottom=0.32, top=0.88)  # room for the labels and the key
            reliability_diagram(probs, labels, ax=ax, n_bins=self.n_bins, title=f"{name} ({where})")
            figures[name] = figure
        return figures

    def files(self) -> list[str]:
        """The names of the files :meth:`save` writes, in the order it writes them."""
        return [CALIBRATOR, TABLE_CSV, TABLE_JSON, *[f"reliability-{name}.png" for name in self.calibrators],
                REPORT]

    def save(self, folder: str | os.PathLike) -> Path:
        """Write the report folder: ``report.html`` (the table, the choice and why, the figures),
        ``table.csv`` and ``table.json``, ``reliability-<name>.png`` per calibrator and
        ``calibrator.json`` (the chosen calibrator, :func:`calibnb.calibration.persist.save_calibrator`;
        ``python -m calibnb apply`` reads it). Returns the folder.

        Every file is written into a temporary folder beside ``folder`` first; a new ``folder`` is
        then that folder renamed, an existing one receives each file by an atomic rename, the
        report last. A failure leaves ``folder`` as it was. Other files in ``folder`` are kept.
        """
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{folder} exists and is not a folder")
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
        try:
            save_calibrator(self.best, staging / CALIBRATOR)
            write_text(staging / TABLE_CSV, self.table.to_csv(index=False))
            write_json(staging / TABLE_JSON, self._document())
            for name, figure in self.figures.items():
                with atomic_path(staging / f"reliability-{name}.png") as tmp:
                    figure.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
            write_text(staging / REPORT, self._html())
            if not folder.exists():
                umask = os.umask(0)
                os.umask(umask)
                staging.chmod(0o777 & ~umask)  # mkdtemp's folder is private to its owner
                os.replace(staging, folder)
            else:
                for name in self.files():
                    os.replace(staging / name, folder / name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return folder

    def _document(self) -> dict:
        import calibnb

        rows = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
                for row in self.table.to_dict(orient="records")]
        return {"chosen": self.chosen, "reason": self.reason, "criterion": self.criterion, "folds": self.folds,
                "seed": self.seed, "n_bins": self.n_bins, "n_classes": self.n_classes,
                "n_calibration": self.n_calibration, "n_test": self.n_test, "calibnb": calibnb.__version__,
                "calibrators": {name: repr(c) for name, c in self.calibrators.items()}, "rows": rows}

    def _table_html(self) -> str:
        wide = self.summary()
        has_test = self.n_test is not None
        head = "".join(f"<th>{METRIC_TITLES[m]}<br>cv mean ± std</th>" + (f"<th>{METRIC_TITLES[m]}<br>test</th>"
                                                                         if has_test else "") for m in CRITERIA)
        rows = []
        for name in wide.index:
            cells = []
            for m in CRITERIA:
                mark = ' class="criterion"' if m == self.criterion else ""
                cells.append(f"<td{mark}>{wide.loc[name, (m, 'cv_mean')]:.4f} ± {wide.loc[name, (m, 'cv_std')]:.4f}</td>")
                if has_test:
                    cells.append(f"<td>{wide.loc[name, (m, 'test')]:.4f}</td>")
            chosen = ' class="chosen"' if name == self.chosen else ""
            rows.append(f"<tr{chosen}><th>{html.escape(name)}</th>{''.join(cells)}</tr>")
        return (f"<table><thead><tr><th>calibrator</th>{head}</tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table>")

    def _html(self) -> str:
        import calibnb

        e = html.escape
        test = f", {self.n_test:,} test samples" if self.n_test is not None else " (no test data)"
        figures = "".join(f'<figure><img src="reliability-{e(name)}.png" alt="reliability diagram of {e(name)}">'
                          f"<figcaption>{e(name)}</figcaption></figure>" for name in self.calibrators)
        settings = "".join(f"<li><b>{e(name)}</b>: <code>{e(repr(c))}</code>{e(_fitted_summary(c))} "
                           f"({self.fit_seconds[name]:.1f} s for {self.folds + 1} fits)</li>"
                           for name, c in self.calibrators.items())
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Calibration report</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.9rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.3rem 0.5rem; text-align: right; }}
thead th {{ background: #f3f3f3; text-align: center; }}
tbody th {{ text-align: left; }}
tr.chosen {{ background: #e6f4ea; font-weight: bold; }}
td.criterion {{ outline: 2px solid #8ab; }}
figure {{ display: inline-block; margin: 0.5rem; }} img {{ width: 20rem; }}
.decision {{ font-size: 1.1rem; padding: 0.6rem 1rem; background: #e6f4ea; border-left: 4px solid #2a7; }}
</style></head><body>
<h1>Calibration report</h1>
<p>{self.n_calibration:,} calibration samples of {self.n_classes} classes{test}.
Every calibrator was scored by {self.folds}-fold stratified cross-validation on the calibration data
(seed {self.seed}; {self.n_bins} bins for the ECEs); lower is better.</p>
<p class="decision">Chosen: <b>{e(self.chosen)}</b>. {e(self.reason)}</p>
<p>The chosen calibrator, refitted on all calibration data, is saved in <a href="{CALIBRATOR}">{CALIBRATOR}</a>
(JSON; restore it with <code>calibnb.calibration.persist.load_calibrator</code>, or apply it with
<code>python -m calibnb apply {CALIBRATOR} LOGITS --out probs.npy</code>).
The table is also in <a href="{TABLE_CSV}">{TABLE_CSV}</a> and <a href="{TABLE_JSON}">{TABLE_JSON}</a>.</p>
<h2>Scores</h2>
{self._table_html()}
<h2>Reliability diagrams</h2>
<p>On the {"test data" if self.n_test is not None else "out-of-fold predictions of the cross-validation"},
{self.n_bins} equal-width bins.</p>
{figures}
<h2>Settings</h2>
<ul>{settings}</ul>
<p><small>calibnb {e(calibnb.__version__)}</small></p>
</body></html>
"""

    def _repr_html_(self) -> str:
        return f"<p>Chosen: <b>{html.escape(self.chosen)}</b>. {html.escape(self.reason)}</p>{self._table_html()}"


def calibrate(logits, labels, test_logits=None, test_labels=None, *, calibrators=None,
              criterion: str = "nll", folds: int = 5, seed: int = 0, n_bins: int = 15,
              progress: bool | None = None) -> CalibrationResult:
    """Fit every calibrator on ``(logits, labels)``, cross-validate them, choose and refit one.

    Parameters
    ----------
    logits, labels : array-like (N, K) and (N,)
        The calibration set: a held-out set of the network's logits and the true classes.
    test_logits, test_labels : array-like, optional
        A test set (both or neither): each refitted calibrator is scored on it too; the choice
        does not look at it.
    calibrators : None, names, calibrators or a dict {name: calibrator}, optional
        Which to compare: names of :data:`NAMES` (a list, or one comma-separated string),
        calibrator instances of :mod:`calibnb.calibration` with their own settings (named by
        their class's short name), or a dict naming each. Default: all of
        :func:`default_calibrators`. ``"uncalibrated"`` (the softmax as it is) is always added as
        the reference row.
    criterion : {"nll", "ece", "adaece", "brier"}
        The metric whose mean over the folds chooses (the lowest wins; the first on a tie).
    folds : int
        The number of stratified folds (shuffled with ``seed``).
    n_bins : int
        The bins of the ECEs (and of the ECE-fitted calibrators).
    progress : bool, optional
        Show a progress bar (default: when the output is a terminal).

    Notes
    -----
    Focal temperature scaling takes nearly all the time (its paper grid, searched once per fold
    and once more for the refit): 8–12 s in all for 5,000 logits of 10 or 100 classes on 2 cores
    (``bench/bench_calibrate.py``). On a machine busy with other work,
    start Python with ``GOMP_SPINCOUNT=1000`` in the environment, as ``python -m calibnb
    calibrate`` does: with OpenMP's default spin-wait the same call took up to ten times longer.

    Examples
    --------
    >>> import numpy as np
    >>> import calibnb
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(600, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(600, 3))).argmax(axis=1)  # over-confident by 2
    >>> result = calibnb.calibrate(logits, labels, calibrators=["ts", "histogram"])
    >>> result.chosen, round(result.best.temperature_, 2)  # refitted on all 600 samples
    ('ts', 2.2)
    >>> result.summary()["nll"]["cv_mean"].round(3).to_dict()  # the mean over the 5 folds
    {'uncalibrated': 0.932, 'ts': 0.765, 'histogram': 0.876}
    """
    z, y = check_logits_labels(logits, labels)
    n, k = z.shape
    check_choice(criterion, "criterion", CRITERIA)
    folds = check_int(folds, "folds", minimum=2)
    seed = check_int(seed, "seed", minimum=0)
    n_bins = check_n_bins(n_bins)
    if (test_logits is None) != (test_labels is None):
        raise ValueError("test_logits and test_labels go together: give both or neither")
    if test_logits is not None:
        zt, yt = check_logits_labels(test_logits, test_labels)
        if zt.shape[1] != k:
            raise ValueError(f"test_logits have {zt.shape[1]} classes but logits have {k}")
    if folds > n:
        raise ValueError(f"folds ({folds}) must be at most the number of calibration samples ({n})")
    candidates = _calibrators(calibrators, criterion, n_bins)
    splits = _splits(z, y, folds, seed)

    from ._progress import progress_bar

    bar = progress_bar()(total=len(candidates) * (folds + 1), desc="calibrate", unit="fit",
                         disable=None if progress is None else not progress)
    scores, out_of_fold, fitted, seconds = [], {}, {}, {}
    try:
        for name, estimator in candidates.items():
            bar.set_postfix_str(name)
            start = time.perf_counter()
            out_of_fold[name] = np.empty((n, k))
            for fold, (train, held) in enumerate(splits):
                probs = _fit(estimator, z[train], y[train], f"{name!r} on fold {fold + 1} of {folds}") \
                    .predict_proba(z[held])
                out_of_fold[name][held] = probs
                scores += [(name, fold, metric, f(probs, y[held], **_bins(metric, n_bins)))
                           for metric, f in METRICS.items()]
                bar.update()
            fitted[name] = _fit(estimator, z, y, f"{name!r} on all calibration data")
            seconds[name] = time.perf_counter() - start
            bar.update()
    finally:
        bar.close()
    fold_scores = pd.DataFrame(scores, columns=["calibrator", "fold", "metric", "value"])
    table = (fold_scores.groupby(["calibrator", "metric"], sort=False)["value"]
             .agg(cv_mean="mean", cv_std=lambda v: v.std(ddof=1)).reset_index())
    diagram_data = {name: (p, y) for name, p in out_of_fold.items()}
    if test_logits is not None:
        tests = {name: c.predict_proba(zt) for name, c in fitted.items()}
        table["test"] = [METRICS[m](tests[c], yt, **_bins(m, n_bins)) for c, m in zip(table["calibrator"],
                                                                                       table["metric"])]
        diagram_data = {name: (p, yt) for name, p in tests.items()}
    chosen, reason = _choose(table, criterion, folds)
    return CalibrationResult(
        table=table, fold_scores=fold_scores, chosen=chosen, best=fitted[chosen],
        calibrators=MappingProxyType(fitted), reason=reason, criterion=criterion, folds=folds, seed=seed,
        n_bins=n_bins, n_classes=k, n_calibration=n, n_test=None if test_logits is None else len(yt),
        fit_seconds=MappingProxyType(seconds),
        diagram_data=MappingProxyType(diagram_data))


def _fitted_summary(calibrator) -> str:
    """The few numbers a scaling calibrator learned (its temperature, γ, weights), for the report."""
    parts = [f"{label} = {np.round(getattr(calibrator, attr), 4).tolist()}"
             for attr, label in (("gamma_", "γ"), ("temperature_", "T"), ("weights_", "weights"))
             if hasattr(calibrator, attr)]
    return f", fitted {', '.join(parts)}" if parts else ""


def _bins(metric: str, n_bins: int) -> dict:
    return {"n_bins": n_bins} if metric in ("ece", "adaece") else {}


def _splits(z: np.ndarray, y: np.ndarray, folds: int, seed: int) -> list:
    """The (train, held-out) indices of each stratified fold."""
    counts = np.bincount(y)
    if counts.max() < folds:
        raise ValueError(f"folds ({folds}) must be at most the number of samples of the most common class "
                         f"({counts.max()}): stratified folds need that many")
    with warnings.catch_warnings():  # a class rarer than the folds is spread as far as it goes
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        return list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(z, y))


def _fit(estimator, z, y, what: str):
    try:
        return clone(estimator).fit(z, y)
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as error:
        raise ValueError(f"calibrator {what}: {error}") from error


def _choose(table: pd.DataFrame, criterion: str, folds: int) -> tuple[str, str]:
    rows = table[table["metric"] == criterion].reset_index(drop=True)
    order = rows["cv_mean"].to_numpy().argsort(kind="stable")
    best, title = rows.iloc[order[0]], METRIC_TITLES[criterion]
    reason = (f"{best.calibrator} has the lowest mean cross-validated {title} over {folds} folds, "
              f"{best.cv_mean:.4f} ± {best.cv_std:.4f}")
    if len(order) > 1:
        second = rows.iloc[order[1]]
        margin = second.cv_mean - best.cv_mean
        reason += (f"; the next best, {second.calibrator}, has {second.cv_mean:.4f} ± {second.cv_std:.4f}"
                   f" ({margin:.4f} more{', within one standard deviation' if margin < best.cv_std else ''})")
    if best.calibrator == "uncalibrated":
        reason += ": no calibrator improves on the network's own softmax"
    return str(best.calibrator), reason + "."
