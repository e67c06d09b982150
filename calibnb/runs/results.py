"""Read finished runs back as one tidy table (ARCHITECTURE.md, "Code map")."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_table
from ..atomic import check_file, check_seal, load_logits, seal, write_json
from .execute import FINISHED_MARKER, is_pruned
from .methods import label_methods
from .naming import EXECUTION_KEYS
from .schemas import read_json, read_run_metrics
from .strict_yaml import read_yaml
from .sweep import load_config

#: The test metrics every run reports, as fractions (``calibnb.runs.schemas.run_schema()``).
METRICS = ("ece", "adaece", "classwise_ece", "mce", "nll", "brier", "error", "smooth_ece")


def load_results(root: str | os.PathLike) -> pd.DataFrame:
    """One row per finished run below ``root`` (a run is finished when it has ``metrics.json``).

    Columns: the run's parameters (``dataset``, ``model``, ``loss``, ``seed``, the loss
    parameters, ...; not the execution-only ones such as ``device``), the test metrics before
    calibration under their own names (``ece``, ``adaece``, ...), after temperature scaling as
    ``<metric>_ts`` and after focal temperature scaling as ``<metric>_fts``, ``temperature``
    (the TS temperature), ``fts_gamma`` and ``fts_temperature``, the validation metrics as
    ``val_<metric>``, the out-of-distribution AUROC of each shift as ``auroc_<shift>``,
    ``auroc_<shift>_ts`` and ``auroc_<shift>_fts`` (runs with ``ood``), and ``run_dir``.
    An empty frame (with the metric columns) is returned when none is found.

    Unfinished runs (interrupted or still running: a run folder with ``params.yaml`` or a
    checkpoint but no ``metrics.json``, which a run writes last) are not half-read: they are
    left out, reported by an ``UnfinishedRunsWarning`` naming them, and listed in the
    frame's ``attrs["unfinished"]``.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"root {str(root)!r} is not a folder")
    rows = [_row(path.parent) for path in sorted(root.rglob(FINISHED_MARKER))]
    unfinished = unfinished_runs(root)
    if unfinished:
        names = ", ".join(str(p.relative_to(root)) for p in unfinished[:5])
        more = f" and {len(unfinished) - 5} more" if len(unfinished) > 5 else ""
        warnings.warn(f"{len(unfinished)} unfinished run folder(s) below {root} left out (no metrics.json): "
                      f"{names}{more}", UnfinishedRunsWarning, stacklevel=2)
    columns = [f"{m}{suffix}" for suffix in ("", "_ts", "_fts") for m in METRICS]
    table = pd.DataFrame(rows) if rows else pd.DataFrame(columns=["dataset", "model", "loss", "seed", *columns])
    table.attrs["unfinished"] = [str(p) for p in unfinished]
    return table


class UnfinishedRunsWarning(UserWarning):
    """Run folders without ``metrics.json`` were found and left out of a results table."""


def unfinished_runs(root: str | os.PathLike) -> list[Path]:
    """The run folders below ``root`` that started but did not finish: ``params.yaml`` or a
    training checkpoint, and no ``metrics.json``."""
    starts = {p.parent for name in ("params.yaml", "checkpoint.pt") for p in Path(root).rglob(name)}
    return sorted(folder for folder in starts if not (folder / FINISHED_MARKER).exists())


def _row(run_dir: Path) -> dict:
    """The table row of a finished run: its ``params.yaml`` and its ``metrics.json``.

    ``params.yaml`` is required (without it the row has no dataset, loss or seed and would join
    no method); ``metrics.json`` is checked by :func:`calibnb.runs.schemas.read_run_metrics`'s
    rules (known keys only, finite numbers in their ranges). Errors name the file or folder.
    """
    params_file, metrics_file = run_dir / "params.yaml", run_dir / FINISHED_MARKER
    if not params_file.exists():
        raise ValueError(f"{run_dir}: has metrics.json but no params.yaml (a finished run has both)")
    metrics = read_run_metrics(metrics_file)
    params = read_yaml(check_file(params_file, metrics, metrics_file))
    row = {k: v for k, v in (params or {}).items() if k not in EXECUTION_KEYS}
    test = metrics.get("test", {})
    for stage, suffix in (("pre", ""), ("ts", "_ts"), ("fts", "_fts")):
        row.update({f"{name}{suffix}": value for name, value in test.get(stage, {}).items()})
    row.update({f"val_{name}": value for name, value in metrics["val"].items()})
    for shift, stages in metrics.get("ood", {}).items():
        row.update({f"auroc_{shift}" + ("" if stage == "pre" else f"_{stage}"): value
                    for stage, value in stages.items()})
    fts = metrics.get("fts", {})
    row.update(temperature=metrics.get("temperature"), fts_gamma=fts.get("gamma"),
               fts_temperature=fts.get("temperature"), run_dir=str(run_dir))
    return row


def select_by_validation(
    table: pd.DataFrame, by: str | list[str], params: list[str], metric: str = "val_ece",
    among: list | None = None,
) -> pd.DataFrame:
    """Keep, within each group ``by``, the runs of the parameter setting with the best validation score.

    How the papers tune a loss's hyper-parameters ("γ fine-tuned on the split validation set",
    Tao et al. 2023, Sec. 5.1): for each group (say ``"loss"``), the setting of ``params`` (say
    ``["gamma", "lam"]``) whose mean ``metric`` over its runs (seeds) is lowest; its runs are
    returned. ``among`` restricts the selection to the groups with these ``by`` values (say the
    losses whose γ is tuned); every other run passes through unchanged, so that focal loss with
    γ = 1 and with γ = 3 stay two methods. Ties go to the first setting in sorted order. Test
    metrics play no part.
    """
    check_table(table, "table")
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in (*by, *params, metric) if c not in table.columns]
    if missing:
        raise ValueError(f"table has no column {missing[0]!r}")
    if table.empty:
        return table
    if among is None:
        tuned = pd.Series(True, index=table.index)
    else:
        if len(by) != 1:
            raise ValueError("among needs a single 'by' column")
        tuned = table[by[0]].isin(list(among))
    keys = by + params
    candidates = table[tuned]
    means = candidates.groupby(keys, dropna=False)[metric].mean().reset_index()
    best = means.loc[means.groupby(by, dropna=False)[metric].idxmin(), keys]
    selected = candidates.merge(best, on=keys, how="inner")
    return pd.concat([table[~tuned], selected], ignore_index=True)


def select_runs(config: str | os.PathLike | dict) -> pd.DataFrame:
    """The finished runs of a sweep in its selected settings, labelled, ready to tabulate.

    :func:`load_results` of the sweep's ``out_root``, :func:`calibnb.runs.label_methods`, and
    :func:`select_by_validation` with the sweep file's own ``select`` section (every run when it
    has none), which is also what ``python -m calibnb prune`` keeps the test data of. Adds
    ``row``: a tuned method's family name (one table row whatever setting the validation chose
    in a regime), any other method's label. Raises ``ValueError`` if a selected run has no test
    metrics (its test part pruned).
    """
    config = load_config(config)
    if "out_root" not in config:
        raise ValueError("config has no out_root: the folder of the sweep's runs")
    table = label_methods(load_results(config["out_root"]))
    rule = config.get("select")
    selected = select_by_validation(table, **rule) if rule else table
    without_test = selected.loc[selected["ece"].isna(), "run_dir"].tolist()
    if without_test:
        raise ValueError(f"selected runs without test metrics: {without_test}")
    tuned = list((rule or {}).get("among") or [])
    selected = selected.reset_index(drop=True)
    selected["row"] = np.where(selected["loss"].isin(tuned), selected["family"], selected["method"])
    return selected


#: What a pruned run keeps of its ``metrics.json``: what the validation selection reads.
VALIDATION_KEYS = ("val", "gammas", "adafocal_updates")


def losing_runs(
    root: str | os.PathLike, by: str | list[str], params: list[str], metric: str = "val_ece",
    among: list | None = None,
) -> list[Path]:
    """The finished runs below ``root`` that :func:`select_by_validation` does not choose (the
    arguments are a sweep file's ``select`` section), pruned ones included, in sorted order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnfinishedRunsWarning)  # the caller decides about those
        table = load_results(root)
    if table.empty:
        return []
    selected = set(select_by_validation(table, by, params, metric, among)["run_dir"])
    return [Path(d) for d in sorted(set(table["run_dir"]) - selected)]


def prune_unselected(
    root: str | os.PathLike, by: str | list[str], params: list[str], metric: str = "val_ece",
    among: list | None = None, dry_run: bool = False,
) -> list[Path]:
    """Reduce the runs that lose :func:`select_by_validation` to their validation part.

    A hyper-parameter search trains every candidate, but only the selected ones are reported on
    the test set. The others keep ``params.yaml``, ``version.json``, ``history.csv``,
    ``logits_val.npz`` and the ``VALIDATION_KEYS`` of ``metrics.json`` (so the selection can
    be recomputed and checked); their test and out-of-distribution logits and metrics are
    deleted, which keeps committed results small. A pruned run still counts as finished, so a
    sweep does not redo it. Returns the pruned run folders (those pruned before are left as they
    are); with ``dry_run``, the same list, and nothing is deleted.
    """
    losing = losing_runs(root, by, params, metric, among)
    for run_dir in [] if dry_run else [d for d in losing if not is_pruned(d)]:
        metrics = read_run_metrics(run_dir / FINISHED_MARKER)
        for path in run_dir.glob("logits_*.npz"):
            if path.name != "logits_val.npz":
                path.unlink()
        kept = [name for name in ("params.yaml", "logits_val.npz", "history.csv") if (run_dir / name).is_file()]
        write_json(run_dir / FINISHED_MARKER, seal({k: v for k, v in metrics.items() if k in VALIDATION_KEYS},
                                                  run_dir, kept))
    return losing


def run_of(selected: pd.DataFrame, method: str, seed: int) -> pd.Series:
    """The selected run of ``method`` with ``seed``, or, if that run is missing, its lowest seed.

    The fallback is announced with a warning; a method without any selected run is refused.
    """
    check_table(selected, "selected", ("method", "seed"))
    rows = selected[selected["method"] == method].sort_values("seed")
    if rows.empty:
        raise ValueError(f"method {method!r} has no selected run")
    if (rows["seed"] == seed).any():
        return rows[rows["seed"] == seed].iloc[0]
    warnings.warn(f"{method} has no finished run with seed {seed}; using seed {rows['seed'].iloc[0]}",
                  stacklevel=2)
    return rows.iloc[0]


def adafocal_updates(run_dir: str | os.PathLike) -> dict:
    """AdaFocal's per-epoch bin ``edges``, ``gaps`` (C - A) and ``gammas`` of a run, as arrays.

    Each array is (updates × bins) (``edges``: bins + 1), read from the run's ``metrics.json``;
    a bin empty at an update is NaN.
    """
    path = Path(run_dir) / FINISHED_MARKER
    document = check_seal(read_json(path, "a run's metrics"), path)
    updates = document.get("adafocal_updates") if isinstance(document, dict) else None
    if not updates:
        raise ValueError(f"{path} holds no adafocal_updates (not an AdaFocal run?)")
    return {key: np.array([[np.nan if v is None else v for v in u[key]] for u in updates], dtype=float)
            for key in ("edges", "gaps", "gammas")}


def run_file(run_dir: str | os.PathLike, name: str) -> Path:
    """The path of the artifact ``name`` of a finished run, once its ``metrics.json`` vouches for it
    (the sha256 it lists matches; :func:`calibnb.atomic.check_file`)."""
    metrics_file = Path(run_dir) / FINISHED_MARKER
    return check_file(Path(run_dir) / name, read_run_metrics(metrics_file), metrics_file)


def histories(runs: pd.DataFrame, column: str = "val_ece") -> pd.DataFrame:
    """``column`` of each run's ``history.csv`` per epoch, one column per seed (pruned runs too)."""
    check_table(runs, "runs", ("seed", "run_dir"))
    return pd.concat({int(r.seed): pd.read_csv(run_file(r.run_dir, "history.csv")).set_index("epoch")[column]
                      for r in runs.itertuples()}, axis=1).sort_index(axis=1)


def pooled_logits(runs: pd.DataFrame, split: str = "test") -> tuple[np.ndarray, np.ndarray]:
    """The ``split`` logits and labels of all ``runs``, concatenated in their order."""
    check_table(runs, "runs", ("run_dir",))
    pairs = [load_logits(run_file(d, f"logits_{split}.npz")) for d in runs["run_dir"]]
    if not pairs:
        raise ValueError("runs is empty: no logits to pool")
    return np.concatenate([z for z, _ in pairs]), np.concatenate([y for _, y in pairs])
