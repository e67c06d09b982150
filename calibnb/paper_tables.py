"""The papers' own result tables, transcribed into ``book/paper_tables/*.csv``.

The result chapters set calibnb's runs beside these numbers. Every CSV is one table of one paper
in long form, one printed number per row, with the line of the paper's text it was read from
(``source_line``, 1-based, in the paper's text named by :data:`PAPER_FILES`; the texts are not
in the repository, and ``make test-transcriptions PAPERS=<folder>`` re-reads every number there):

===================  ==========================================================================
file                 table
===================  ==========================================================================
``dfl_table1``       Tao et al. 2023 (DFL), Table 1: ECE (%) pre/post temperature scaling, T
``dfl_table2``       Tao et al. 2023, Table 2: test error (%)
``dfl_table3``       Tao et al. 2023, Table 3: ECE (%) of FLSD-53, AdaFocal, DFL, AdaDualFocal
``dfl_table5``       Tao et al. 2023, Table 5 (appendix E): AdaECE (%) pre/post T
``dfl_table6``       Tao et al. 2023, Table 6 (appendix E): classwise ECE (%) pre/post T
``adafocal_table1``  Ghosh et al. 2022 (AdaFocal), Table 1: ECE_EM (%) pre/post T, mean of 5 runs
``adafocal_table2``  Ghosh et al. 2022, Table 2: test error (%)
``fcl_table2``       FCL paper, Table 2: test error (%)
``fcl_table4``       FCL paper, Table 4: ECE (%) pre/post T
``fcl_table5``       FCL paper, Table 5: smooth ECE (%) pre/post T
``fcl_table6``       FCL paper, Table 6 (appendix A.12): AdaECE (%) pre/post T
``fcl_table7``       FCL paper, Table 7 (appendix A.13): classwise ECE (%) pre/post T
``fts_table1``       Komisarenko & Kull 2024 (FTS), Table 1: accuracy (%), log-loss, ECE_EM (%),
                     mean ± std over 5 seeds, temperature scaling vs focal temperature scaling
===================  ==========================================================================

Units are the papers' (see :data:`PERCENT_METRICS`); ``book/paper_tables/README.md`` lists the
columns and every judgement call made while transcribing.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

#: The columns of every CSV, in this order.
COLUMNS = (
    "paper", "table", "dataset", "model", "method", "method_params",
    "metric", "stage", "value", "std", "temperature", "source_line",
)
#: One printed number is identified by these columns; no two rows may share them.
KEY = ("paper", "table", "dataset", "model", "method", "method_params", "metric", "stage")
#: Paper key -> the file name of its full text (what ``source_line`` points into).
PAPER_FILES = {
    "ghosh2022": "adafocal_ghosh2022.md",
    "tao2023": "dual_focal_loss_tao2023.md",
    "fcl2024": "focal_calibration_loss_fcl.md",
    "komisarenko2024": "focal_temperature_scaling_komisarenko2024.md",
}
#: Paper keys a table may name (Mukhoti et al. 2020 has no transcribed table yet).
PAPERS = frozenset({"mukhoti2020", *PAPER_FILES})
METRICS = frozenset({"ece", "adaece", "classwise_ece", "smooth_ece", "error", "accuracy", "nll"})
#: Metrics the papers print in percent (calibnb returns them as fractions: divide by 100).
#: ``nll`` is the mean log-loss in nats, as Komisarenko & Kull print it.
PERCENT_METRICS = frozenset(METRICS - {"nll"})
#: Stages per paper: before/after temperature scaling, or Komisarenko & Kull's two calibrators.
STAGES = {paper: frozenset({"pre", "post"}) for paper in PAPERS} | {
    "komisarenko2024": frozenset({"ts", "fts"})
}
DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "book" / "paper_tables"

_NUMBERS = {"value": "float64", "std": "float64", "temperature": "float64", "source_line": "int64"}
_PARAMS = re.compile(r"^([a-z_]+=[^;=]+)(;[a-z_]+=[^;=]+)*$")
_NAME = re.compile(r"^[a-z0-9_]+$")


def load_paper_tables(root: str | Path | None = None) -> pd.DataFrame:
    """All transcribed tables, concatenated (files in name order) and validated.

    ``root`` is the folder of CSVs (default: ``book/paper_tables`` of this checkout). Text
    columns are ``str`` (an empty ``method_params`` is ``""``), ``value``, ``std`` and
    ``temperature`` are float64 with NaN where the paper prints no std or temperature, and
    ``source_line`` is int64. Raises ``ValueError`` when a file breaks the format (unknown
    columns or names, non-finite or negative numbers, a malformed ``method_params``) or when two
    rows share a :data:`KEY`.
    """
    folder = _root(root)
    paths = sorted(folder.glob("*.csv"))
    if not paths:
        raise ValueError(f"root {str(folder)!r} holds no paper-table CSV files")
    frame = pd.concat([_read(path) for path in paths], ignore_index=True)
    _check_unique(frame, str(folder))
    return frame


def paper_table(name: str, root: str | Path | None = None) -> pd.DataFrame:
    """One transcribed table by file name without ``.csv``, e.g. ``paper_table("dfl_table1")``.

    Validated as in :func:`load_paper_tables`; ``ValueError`` names the available tables when
    ``name`` is not one of them.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    folder = _root(root)
    available = sorted(path.stem for path in folder.glob("*.csv"))
    if name not in available:
        raise ValueError(f"name must be one of {available}, got {name!r}")
    frame = _read(folder / f"{name}.csv")
    _check_unique(frame, name)
    return frame


def _root(root: str | Path | None) -> Path:
    folder = DEFAULT_ROOT if root is None else Path(root)
    if not folder.is_dir():
        raise ValueError(f"root {str(folder)!r} is not a directory")
    return folder


def _read(path: Path) -> pd.DataFrame:
    with open(path, encoding="utf-8") as handle:
        header = tuple(handle.readline().rstrip("\r\n").split(","))
    if header != COLUMNS:
        raise ValueError(f"{path.name}: columns must be {list(COLUMNS)}, got {list(header)}")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for column, dtype in _NUMBERS.items():
        text = frame[column]
        numbers = pd.to_numeric(text.where(text != ""), errors="coerce")
        required = column in ("value", "source_line")
        bad = numbers.isna() & ((text != "") | required)
        if dtype == "int64":
            bad |= ~text.str.fullmatch(r"\d+")
        _fail_on(bad, column, path.name)
        frame[column] = numbers.astype(dtype)
    for column, bad in _problems(frame):
        _fail_on(bad, column, path.name)
    return frame


def _problems(frame: pd.DataFrame):
    """Yield ``(column, rows that break its rule)`` for every rule of the format, in order."""
    yield "paper", ~frame["paper"].isin(PAPERS)
    yield "table", ~frame["table"].str.fullmatch(r"Table \d+")
    for column in ("dataset", "model", "method"):
        yield column, ~frame[column].str.fullmatch(_NAME)
    yield "metric", ~frame["metric"].isin(METRICS)
    known = [stage in STAGES.get(paper, ()) for paper, stage in zip(frame["paper"], frame["stage"])]
    yield "stage", ~pd.Series(known, index=frame.index, dtype=bool)
    params = frame["method_params"]
    yield "method_params", (params != "") & ~params.str.fullmatch(_PARAMS)
    yield "value", ~np.isfinite(frame["value"]) | (frame["value"] < 0)
    std, temperature = frame["std"], frame["temperature"]
    yield "std", std.notna() & (~np.isfinite(std) | (std < 0))
    yield "temperature", temperature.notna() & (~np.isfinite(temperature) | (temperature <= 0))
    yield "source_line", frame["source_line"] < 1


def _fail_on(bad: pd.Series, column: str, name: str) -> None:
    if bad.any():
        rows = (bad[bad].index[:5] + 2).tolist()  # +2: the header, and 1-based lines
        raise ValueError(f"{name}: column {column!r} is invalid on CSV lines {rows}")


def _check_unique(frame: pd.DataFrame, where: str) -> None:
    duplicated = frame.duplicated(list(KEY), keep=False)
    if duplicated.any():
        first = frame.loc[duplicated, list(KEY)].iloc[0].to_dict()
        raise ValueError(f"{where}: {int(duplicated.sum())} rows share a key, e.g. {first}")
