"""The post-hoc study read back: one tidy table, the methods side by side, paired wins, the FTS
paper's Table 1 beside ours.

:func:`load_posthoc` reads every ``<network>/split-<s>/metrics.json`` that
:func:`calibnb.runs.posthoc.posthoc` wrote into one row per (network, split, method).
:func:`method_table` gives a metric's mean ± std over the splits per method and network,
:func:`paired_splits` counts on how many splits one method beats another and judges it with
:func:`calibnb.analysis.paired_verdict`, and :func:`fts_table1_beside` sets Komisarenko & Kull's
(2024) Table 1 cross-entropy rows beside the same comparison on the published networks.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from ..calibration import PAPER_FTS_TEMPERATURES, PAPER_GAMMAS, EdgeOfSearchWarning, FocalTemperatureScaling
from ..data import load_predictions
from ..data.predictions import PREDICTIONS
from ..paper_tables import paper_table
from ..runs.posthoc import calibration_split
from ..runs.schemas import read_posthoc_metrics
from .tables import BETTER, mean_std
from .verdicts import paired_verdict

#: Method keys of the study in reading order, with the names the chapter prints.
METHOD_NAMES = {
    "pre": "uncalibrated",
    "ts": "TS (ECE, 0.1..10)",
    "ts_em": "TS (ECE_EM, FTS grid)",
    "ts_nll": "TS (NLL)",
    "fts": "FTS (ECE_EM)",
    "fts_nll": "FTS (NLL)",
    "ets": "ensemble TS",
    "spline": "spline",
    "histogram": "histogram binning",
    "isotonic": "isotonic",
    "bbq": "BBQ",
    "vector": "vector scaling",
    "matrix_odir": "MS-ODIR",
    "dirichlet_odir": "Dir-ODIR",
}

_ARCHITECTURES = {"wideresnet-16-4": "WRN-16-4", "lenet-5": "LeNet-5", "densenet-bc-100": "DenseNet-BC-100"}


def network_label(name: str) -> str:
    """A network's short printed name: ``"cifar100-densenet-bc-100"`` → ``"DenseNet-BC-100 C100"``."""
    if name not in PREDICTIONS:
        raise ValueError(f"name {name!r} is not a published network: {list(PREDICTIONS)}")
    dataset, architecture = name.split("-", 1)
    return f"{_ARCHITECTURES[architecture]} C{dataset.removeprefix('cifar')}"


def load_posthoc(root: str | os.PathLike) -> pd.DataFrame:
    """One row per (network, split, method) of a post-hoc study below ``root``.

    Columns: ``network``, ``dataset`` (``cifar10``/``cifar100``), ``split``, ``method`` (a key of
    :data:`METHOD_NAMES`), every test metric (fractions), and the fitted ``temperature`` and
    ``gamma`` where the method has them (NaN otherwise). Each file is checked by
    :func:`calibnb.runs.schemas.read_posthoc_metrics`; one that fails is reported with its path.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"root {str(root)!r} is not a folder")
    rows = []
    for path in sorted(root.glob("*/split-*/metrics.json")):
        run = read_posthoc_metrics(path)
        for method, metrics in run["test"].items():
            params = run["params"].get(method, {})
            rows.append({"network": run["network"], "dataset": run["network"].split("-")[0],
                         "split": int(run["split"]), "method": method, **metrics,
                         "temperature": params.get("temperature", float("nan")),
                         "gamma": params.get("gamma", float("nan"))})
    if not rows:
        raise ValueError(f"root {str(root)!r} holds no <network>/split-<s>/metrics.json")
    return pd.DataFrame(rows)


def _networks(study: pd.DataFrame) -> list[str]:
    return [n for n in PREDICTIONS if n in set(study["network"])]


def method_table(study: pd.DataFrame, metric: str = "ece", scale: float = 100.0,
                 methods=None) -> pd.DataFrame:
    """``metric``'s mean ± std over the splits, one row per method, one column per network.

    The lowest mean of each network among the calibrators (``"pre"`` excluded) is marked with
    :data:`calibnb.analysis.tables.BETTER`.
    """
    methods = [m for m in (methods or METHOD_NAMES) if m in set(study["method"])]
    table = {}
    for network in _networks(study):
        runs = study[study["network"] == network]
        means = runs.groupby("method")[metric].mean()
        best = means.drop("pre", errors="ignore").loc[[m for m in methods if m != "pre"]].idxmin()
        table[network_label(network)] = {
            METHOD_NAMES[m]: mean_std(runs.loc[runs["method"] == m, metric], scale)
            + (BETTER if m == best else "") for m in methods}
    return pd.DataFrame(table)


def differences(study: pd.DataFrame, first: str, second: str, metric: str) -> pd.DataFrame:
    """``metric`` of ``first`` minus that of ``second``, per split (rows) and network (columns)."""
    wide = study.pivot_table(index=["network", "split"], columns="method", values=metric)
    d = (wide[first] - wide[second]).unstack("network")
    return d[_networks(study)]


def paired_verdicts(study: pd.DataFrame, first: str, second: str, metric: str) -> pd.DataFrame:
    """Per network: :func:`calibnb.analysis.paired_verdict` on the claim "``first`` has the lower
    ``metric``" over the splits, the splits that agree, their number, and the mean difference
    ``first − second`` (in the metric's units)."""
    d = differences(study, first, second, metric)
    rows = {}
    for network in d.columns:
        verdict, agree, n = paired_verdict(d[network])
        rows[network] = {"verdict": verdict, "agree": agree, "splits": n, "difference": d[network].mean()}
    return pd.DataFrame(rows).T


def paired_splits(study: pd.DataFrame, first: str, second: str, metrics=("adaece", "ece", "nll")):
    """On how many splits ``first`` has the lower metric than ``second``, per network and metric.

    Each cell reads ``"k/n: verdict"`` from :func:`paired_verdicts` (n = 5 splits: "holds"
    needs 4 of 5 and a lower mean).
    """
    table = {}
    for metric in metrics:
        v = paired_verdicts(study, first, second, metric)
        table[metric] = {network_label(n): f"{r.agree}/{r.splits}: {r.verdict}" for n, r in v.iterrows()}
    return pd.DataFrame(table).T


def fts_table1_beside(study: pd.DataFrame, model: str = "resnet50") -> pd.DataFrame:
    """The FTS paper's Table 1 cross-entropy rows (CIFAR-10 and CIFAR-100) beside our networks.

    Per row: the log-loss (NLL) after TS and after FTS, each selected by the validation log-loss
    (ours: ``ts_nll`` and ``fts_nll``), and the equal-mass ECE (%) after TS and after FTS, each
    selected by the equal-mass ECE on FTS's grid (ours: ``ts_em`` and ``fts``), with the fitted
    T (and γ) in brackets — the paper's layout; ours are means over the splits. The last two
    columns say whether FTS has the lower ECE_EM and, for our networks, the paired verdict over
    the splits (:func:`calibnb.analysis.paired_verdict`), the splits that favour FTS, and the mean
    difference FTS − TS in points.
    """
    paper = paper_table("fts_table1")
    paper = paper[(paper["method"] == "cross_entropy") & (paper["model"] == model)]
    verdicts = paired_verdicts(study, "fts", "ts_em", "adaece")
    rows = {}
    for dataset in ("cifar10", "cifar100"):
        p = paper[paper["dataset"] == dataset].set_index(["metric", "stage"])
        gamma = p.loc[("adaece", "fts"), "method_params"].removeprefix("gamma_ev=")
        nll_gamma = p.loc[("nll", "fts"), "method_params"].removeprefix("gamma_ev=")
        ece_ts, ece_fts = p.loc[("adaece", "ts"), "value"], p.loc[("adaece", "fts"), "value"]
        rows[(dataset, f"paper: ResNet-50, {p.loc[('accuracy', 'ts'), 'value']:.1f} %")] = {
            "NLL TS (T)": f"{p.loc[('nll', 'ts'), 'value']:.2f} ({p.loc[('nll', 'ts'), 'temperature']:.2f})",
            "NLL FTS (γ, T)": f"{p.loc[('nll', 'fts'), 'value']:.2f} "
                                   f"({nll_gamma}, {p.loc[('nll', 'fts'), 'temperature']:.2f})",
            "ECE_EM TS (T)": f"{ece_ts:.2f} ({p.loc[('adaece', 'ts'), 'temperature']:.2f})",
            "ECE_EM FTS (γ, T)": f"{ece_fts:.2f} ({gamma}, {p.loc[('adaece', 'fts'), 'temperature']:.2f})",
            "FTS lower": "yes" if ece_fts < ece_ts else "no",
            "verdict, splits": "–"}
        for network in [n for n in _networks(study) if n.startswith(f"{dataset}-")]:
            runs = study[study["network"] == network].groupby("method")
            mean = runs[["nll", "adaece", "temperature", "gamma", "error"]].mean()
            v = verdicts.loc[network]
            label = f"ours: {network_label(network).split(' ')[0]}, {100 * (1 - mean.loc['pre', 'error']):.1f} %"
            rows[(dataset, label)] = {
                "NLL TS (T)": f"{mean.loc['ts_nll', 'nll']:.2f} ({mean.loc['ts_nll', 'temperature']:.2f})",
                "NLL FTS (γ, T)": f"{mean.loc['fts_nll', 'nll']:.2f} ({mean.loc['fts_nll', 'gamma']:.2f}, "
                                       f"{mean.loc['fts_nll', 'temperature']:.2f})",
                "ECE_EM TS (T)": f"{100 * mean.loc['ts_em', 'adaece']:.2f} ({mean.loc['ts_em', 'temperature']:.2f})",
                "ECE_EM FTS (γ, T)": f"{100 * mean.loc['fts', 'adaece']:.2f} ({mean.loc['fts', 'gamma']:.2f}, "
                                       f"{mean.loc['fts', 'temperature']:.2f})",
                "FTS lower": "yes" if mean.loc["fts", "adaece"] < mean.loc["ts_em", "adaece"] else "no",
                "verdict, splits": f"{v.verdict}: {v.agree}/{v.splits}, {100 * v.difference:+.2f}"}
    table = pd.DataFrame(rows).T
    table.index.names = ["data", "network, accuracy"]
    return table


def error_reduction(study: pd.DataFrame, method: str) -> pd.Series:
    """How many points of test error ``method`` removes from the uncalibrated network, per
    network: the mean over the splits of ``error(pre) − error(method)``, in percentage points.
    0 for every calibrator that keeps the predicted class; the affine maps of Kull et al. (2019)
    move the decision boundaries and can lower (or raise) it."""
    table = study.pivot_table(index=["network", "split"], columns="method", values="error")
    if method not in table.columns:
        raise ValueError(f"method {method!r} is not in the study: {sorted(table.columns)}")
    return (100 * (table["pre"] - table[method])).groupby("network").mean()[_networks(study)]


def gap_to_best(study: pd.DataFrame, method: str, metric: str = "adaece") -> pd.Series:
    """How far ``method``'s mean ``metric`` lies above the best calibrator's, per network.

    The best is the lowest mean over the splits among all calibrators (``"pre"`` excluded); 0
    when ``method`` is the best. In the metric's own units (fractions for the ECEs).
    """
    means = study[study["method"] != "pre"].groupby(["network", "method"])[metric].mean().unstack()
    if method not in means.columns:
        raise ValueError(f"method {method!r} is not in the study: {sorted(means.columns)}")
    return (means[method] - means.min(axis=1))[_networks(study)]


def estimator_agreement(study: pd.DataFrame, first: str = "ece", second: str = "adaece") -> pd.DataFrame:
    """Do two calibration-error estimators rank the calibrators alike, per network?

    Spearman's ρ between the calibrators' mean ``first`` and mean ``second`` over the splits
    (``"pre"`` excluded), and the calibrator each estimator calls best.
    """
    rows = {}
    for network in _networks(study):
        means = (study[(study["network"] == network) & (study["method"] != "pre")]
                 .groupby("method")[[first, second]].mean())
        rows[network_label(network)] = {
            "Spearman ρ": round(float(spearmanr(means[first], means[second]).statistic), 2),
            f"best by {first}": METHOD_NAMES[means[first].idxmin()],
            f"best by {second}": METHOD_NAMES[means[second].idxmin()]}
    return pd.DataFrame(rows).T


def load_run(root: str | os.PathLike, network: str, split: int) -> dict:
    """One run's ``metrics.json`` (for :func:`calibnb.runs.posthoc.probabilities_on_test`),
    checked by :func:`calibnb.runs.schemas.read_posthoc_metrics`."""
    return read_posthoc_metrics(Path(root) / network / f"split-{split}" / "metrics.json")


def network_summary(study: pd.DataFrame) -> pd.DataFrame:
    """Each network before calibration: classes, and accuracy, ECE, ECE_EM (%) and NLL, means
    over the test halves."""
    pre = study[study["method"] == "pre"].groupby("network")
    networks = _networks(study)
    table = pd.DataFrame({
        "classes": {n: PREDICTIONS[n][1] for n in networks},
        "accuracy (%)": 100 * (1 - pre["error"].mean()),
        "ECE (%)": 100 * pre["ece"].mean(),
        "ECE_EM (%)": 100 * pre["adaece"].mean(),
        "NLL": pre["nll"].mean(),
    }).loc[networks]
    return table.rename(index=network_label)


def fts_valley(network: str, split: int = 1) -> pd.Series:
    """The best temperature for each γ of FTS's grid (the valley of its criterion surface, the FTS
    paper's Fig. 8), refitted on ``network``'s calibration half of ``split``; indexed by γ."""
    logits, labels = load_predictions(network)
    calibrate, _ = calibration_split(split, len(labels))
    with warnings.catch_warnings():  # the paper's fixed grid: its edge is part of the valley drawn
        warnings.simplefilter("ignore", EdgeOfSearchWarning)
        fts = FocalTemperatureScaling(PAPER_GAMMAS, PAPER_FTS_TEMPERATURES).fit(logits[calibrate],
                                                                              labels[calibrate])
    return pd.Series(fts.temperatures_[fts.scores_.argmin(axis=1)], index=fts.gammas_, name=network)


def valley_slope(valley: pd.Series) -> float:
    """The least-squares slope of a :func:`fts_valley` (T per unit of γ)."""
    return float(np.polyfit(valley.index.to_numpy(float), valley.to_numpy(float), 1)[0])
