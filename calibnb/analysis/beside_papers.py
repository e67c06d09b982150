"""Our methods beside the papers' transcribed tables: the same methods' values and rank agreement.

The papers' tables (``book/paper_tables/``, read by :func:`calibnb.paper_tables.paper_table`)
name a method by ``(method, method_params)``; :func:`paper_key` gives a run's key in that
scheme. :func:`rank_against_papers` sets our means beside a paper table's values and computes
Spearman's ρ over the methods both contain; :func:`fts_beside_paper` does the same for focal
temperature scaling against temperature scaling (the FTS paper's Table 1).
"""

from __future__ import annotations

import pandas as pd
from scipy.stats import spearmanr

from ..paper_tables import paper_table
from ..runs.methods import loss_params_of
from .ordering import method_order
from .tables import mean_std

#: The paper tables the results chapter ranks against: (title, table name, metric).
PAPER_TABLES = (("tao2023 (DFL) Table 1", "dfl_table1", "ece"),
                ("ghosh2022 (AdaFocal) Table 1", "adafocal_table1", "adaece"),
                ("fcl2024 (FCL) Table 4", "fcl_table4", "ece"))


def paper_key(run) -> tuple[str, str]:
    """The ``(method, method_params)`` under which ``book/paper_tables`` stores a run's method."""
    loss = run["loss"]
    if loss == "label_smoothing_loss":
        return loss, "alpha=0.05"
    if loss == "focal_loss":
        return loss, f"gamma={run['gamma']:g}"
    if loss == "adafocal" and loss_params_of(run["loss_params"]).get("base") == "dual":
        return loss, "base=dual"
    return loss, ""


def keys_of(runs: pd.DataFrame) -> dict:
    """Each side-by-side ``row`` of one regime's selected runs → its :func:`paper_key`."""
    return {r: paper_key(runs[runs["row"] == r].iloc[0]) for r in method_order(runs["row"])}


def ours(metric: str, runs: pd.DataFrame) -> dict:
    """Per paper key: ``(row, mean pre-T value in %, mean post-T value in %, mean T)``."""
    out = {}
    for r, key in keys_of(runs).items():
        g = runs[runs["row"] == r]
        out[key] = (r, 100 * g[metric].mean(), 100 * g[f"{metric}_ts"].mean(),
                    g["temperature"].mean())
    return out


def rank_against_papers(selected: dict, shown: str, tables=PAPER_TABLES,
                        datasets=("cifar10", "cifar100"), model: str = "resnet50"):
    """Our means beside each paper table's, and Spearman's ρ between the two orderings.

    ``selected`` maps a regime's name to its selected runs; ``shown`` names the regime whose
    values the side-by-side tables show. Returns ``(side_by_side, ranks)``: per table title, a
    frame of the paper's pre/post values (T in brackets) for each dataset beside ours, and one
    row per (table, dataset, regime, stage) with the number of common methods and ρ (NaN for
    fewer than 3).
    """
    if shown not in selected:
        raise ValueError(f"shown must be one of {list(selected)}, got {shown!r}")
    side_by_side, ranks = {}, []
    for title, name, metric in tables:
        paper = paper_table(name)
        paper = paper[(paper["model"] == model) & (paper["metric"] == metric)]
        for regime, runs in selected.items():
            mine = ours(metric, runs)
            rows = {}
            for dataset in datasets:
                p = paper[paper["dataset"] == dataset]
                common = [k for k in dict.fromkeys(zip(p["method"], p["method_params"])) if k in mine]

                def value(key, stage):
                    return p[(p["method"] == key[0]) & (p["method_params"] == key[1])
                             & (p["stage"] == stage)].iloc[0]

                for stage, index in (("pre", 1), ("post", 2)):
                    theirs = [value(k, stage)["value"] for k in common]
                    values = [mine[k][index] for k in common]
                    rho = spearmanr(theirs, values).statistic if len(common) >= 3 else float("nan")
                    ranks.append({"paper table": title, "metric": metric, "dataset": dataset,
                                  "ours": regime, "stage": stage, "methods": len(common),
                                  "Spearman ρ": round(rho, 2)})
                for k in common:
                    pre, post = value(k, "pre"), value(k, "post")
                    row = rows.setdefault(mine[k][0], {})
                    row[f"{dataset} pre"] = f"{pre['value']:.2f}"
                    row[f"{dataset} post (T)"] = f"{post['value']:.2f} ({post['temperature']:.1f})"
            for m, pre, post, t in mine.values():
                if m in rows:
                    rows[m]["ours pre"] = f"{pre:.2f}"
                    rows[m]["ours post (T)"] = f"{post:.2f} ({t:.1f})"
            if regime == shown:
                side_by_side[title] = pd.DataFrame(rows).T
    return side_by_side, pd.DataFrame(ranks)


def fts_beside_paper(selected: dict, rows, dataset: str = "cifar10",
                     model: str = "resnet50") -> pd.DataFrame:
    """The FTS paper's Table 1 (AdaECE after TS and FTS) beside ours, for the methods both have.

    The paper's key of a row is read from the first regime of ``selected`` (regime name →
    selected runs); each regime adds its TS and FTS AdaECE (mean ± std, %) and whether FTS is
    the better mean, as the paper's columns do.
    """
    paper = paper_table("fts_table1")
    paper = paper[(paper["dataset"] == dataset) & (paper["model"] == model)
                  & (paper["metric"] == "adaece")].copy()
    paper["base_params"] = paper["method_params"].str.replace(
        r";?gamma_ev=[^;]+", "", regex=True).str.strip(";")
    keys = keys_of(next(iter(selected.values())))
    table = {}
    for r in rows:
        if r not in keys:
            continue
        p = paper[(paper["method"] == keys[r][0]) & (paper["base_params"] == keys[r][1])]
        if p.empty:
            continue
        ts, fts = p[p["stage"] == "ts"].iloc[0], p[p["stage"] == "fts"].iloc[0]
        row = {"paper TS": f"{ts['value']:.2f} ± {ts['std']:.2f}",
               "paper FTS": f"{fts['value']:.2f} ± {fts['std']:.2f}",
               "paper: FTS better": "yes" if fts["value"] < ts["value"] else "no"}
        for name, runs in selected.items():
            g = runs[runs["row"] == r]
            row[f"{name} TS"] = mean_std(g["adaece_ts"])
            row[f"{name} FTS"] = mean_std(g["adaece_fts"])
            row[f"{name}: FTS better"] = "yes" if g["adaece_fts"].mean() < g["adaece_ts"].mean() else "no"
        table[r] = row
    return pd.DataFrame(table).T
