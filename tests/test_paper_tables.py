"""The papers' tables in ``book/paper_tables/``: shape, names, and every number re-read from the
paper's text at its ``source_line``.

Re-reading the papers is a maintainer's check, not a user's: the texts are not in the repository.
Those tests are marked ``transcriptions`` and run by ``make test-transcriptions PAPERS=<folder>``
(CI passes ``../shared/papers``), which hands the folder over as ``$CALIBNB_PAPERS``; ``make
test`` runs the rest, which need only the CSV files. The per-row check re-derives each row's dataset, model, column and number from the paper's line independently of
the CSV files: the numbers a row group claims must be exactly the last numbers printed on its
line, in the table's column order.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from calibnb.paper_tables import (
    COLUMNS,
    KEY,
    PAPER_FILES,
    load_paper_tables,
    paper_table,
)

TABLES_DIR = Path(__file__).resolve().parents[1] / "book" / "paper_tables"

ROW_COUNTS = {
    "dfl_table1": 140, "dfl_table2": 70, "dfl_table3": 32, "dfl_table5": 126, "dfl_table6": 126,
    "adafocal_table1": 180, "adafocal_table2": 90,
    "fcl_table2": 84, "fcl_table4": 168, "fcl_table5": 168, "fcl_table6": 168, "fcl_table7": 168,
    "fts_table1": 108,
}
TITLES = {  # file -> (paper, table, metric)
    "dfl_table1": ("tao2023", "Table 1", "ece"),
    "dfl_table2": ("tao2023", "Table 2", "error"),
    "dfl_table3": ("tao2023", "Table 3", "ece"),
    "dfl_table5": ("tao2023", "Table 5", "adaece"),
    "dfl_table6": ("tao2023", "Table 6", "classwise_ece"),
    "adafocal_table1": ("ghosh2022", "Table 1", "adaece"),
    "adafocal_table2": ("ghosh2022", "Table 2", "error"),
    "fcl_table2": ("fcl2024", "Table 2", "error"),
    "fcl_table4": ("fcl2024", "Table 4", "ece"),
    "fcl_table5": ("fcl2024", "Table 5", "smooth_ece"),
    "fcl_table6": ("fcl2024", "Table 6", "adaece"),
    "fcl_table7": ("fcl2024", "Table 7", "classwise_ece"),
    "fts_table1": ("komisarenko2024", "Table 1", None),
}

CIFAR_MODELS = {"resnet50", "resnet110", "wide_resnet26_10", "densenet121"}
LS = ("label_smoothing_loss", "alpha=0.05")
# Column order of each table, as printed in its header.
DFL_METHODS = [("cross_entropy", ""), ("brier_loss", ""), ("mmce_loss", ""), LS,
               ("inverse_focal_loss", ""), ("focal_loss_sd", ""), ("dual_focal_loss", "")]
ADAFOCAL_METHODS = [("cross_entropy", ""), ("brier_loss", ""), ("mmce_loss", ""), LS,
                    ("focal_loss_sd", ""), ("adafocal", "")]
FCL_METHODS = [("cross_entropy", ""), ("brier_loss", ""), ("mmce_loss", ""), LS,
               ("focal_loss_sd", ""), ("dual_focal_loss", ""), ("focal_calibration_loss", "")]
DFL3_METHODS = [("focal_loss_sd", ""), ("adafocal", ""), ("dual_focal_loss", ""),
                ("adafocal", "base=dual")]
FTS_METHODS = [("cross_entropy", ""), ("focal_loss", "gamma=1"), ("focal_loss", "gamma=3"),
               ("focal_loss", "gamma=7"), ("focal_loss_sd", ""), ("adafocal", "")]

SETS = {  # file -> (datasets, models, (method, method_params) pairs)
    "dfl_table1": ({"cifar100", "cifar10", "tiny_imagenet", "20newsgroups"},
                   CIFAR_MODELS | {"global_pooling_cnn"}, DFL_METHODS),
    "dfl_table2": ({"cifar100", "cifar10", "tiny_imagenet", "20newsgroups"},
                   CIFAR_MODELS | {"global_pooling_cnn"}, DFL_METHODS),
    "dfl_table3": ({"cifar10", "cifar100"}, CIFAR_MODELS, DFL3_METHODS),
    "dfl_table5": ({"cifar100", "cifar10", "tiny_imagenet"}, CIFAR_MODELS, DFL_METHODS),
    "dfl_table6": ({"cifar100", "cifar10", "tiny_imagenet"}, CIFAR_MODELS, DFL_METHODS),
    "adafocal_table1": ({"cifar10", "cifar100", "tiny_imagenet", "imagenet", "20newsgroups"},
                        CIFAR_MODELS | {"global_pooling_cnn", "bert"}, ADAFOCAL_METHODS),
    "adafocal_table2": ({"cifar10", "cifar100", "tiny_imagenet", "imagenet", "20newsgroups"},
                        CIFAR_MODELS | {"global_pooling_cnn", "bert"}, ADAFOCAL_METHODS),
    **{
        name: ({"cifar100", "cifar10", "tiny_imagenet", "20newsgroups", "ag_news", "finsen"},
               CIFAR_MODELS | {"global_pooling_cnn"}, FCL_METHODS)
        for name in ("fcl_table2", "fcl_table4", "fcl_table5", "fcl_table6", "fcl_table7")
    },
}

# How each table prints dataset and model names (the test's own reading of the texts).
DATASET_LABELS = {
    "CIFAR-100": "cifar100", "CIFAR-10": "cifar10", "Tiny-ImageNet": "tiny_imagenet",
    "TinyImageNet": "tiny_imagenet", "TINYIMAGENET": "tiny_imagenet", "ImageNet": "imagenet",
    "NLP 20 Newsgroups": "20newsgroups", "20 Newsgroups": "20newsgroups",
    "20Newsgroup": "20newsgroups", "NLP AG News": "ag_news", "AG News": "ag_news",
    "NLP FinSen": "finsen", "FinSen": "finsen",
}
MODEL_LABELS = {
    "ResNet-50": "resnet50", "ResNet50": "resnet50", "Resnet50": "resnet50",
    "ResNet-110": "resnet110", "ResNet110": "resnet110", "Resnet110": "resnet110",
    "ResNet10": "resnet110",
    "Wide-ResNet-26-10": "wide_resnet26_10", "WideResNet": "wide_resnet26_10",
    "WideResnet": "wide_resnet26_10",
    "DenseNet-121": "densenet121", "DenseNet121": "densenet121", "Densenet121": "densenet121",
    "Global Pooling CNN": "global_pooling_cnn", "CNN": "global_pooling_cnn", "BERT": "bert",
}
NUMBER = re.compile(r"\d+(?:\.\d+)?")


@pytest.fixture(scope="module")
def tables() -> pd.DataFrame:
    return load_paper_tables()


@pytest.fixture(scope="module")
def paper_lines() -> dict[str, list[str]]:
    """Each paper's text as lines, from the folder in ``$CALIBNB_PAPERS``."""
    folder = os.environ.get("CALIBNB_PAPERS")
    if not folder:
        pytest.fail("the transcription checks read the papers' texts: run them with "
                    "`make test-transcriptions PAPERS=<folder with the papers' .md files>`")
    missing = [file for file in PAPER_FILES.values() if not (Path(folder) / file).is_file()]
    if missing:
        pytest.fail(f"CALIBNB_PAPERS={folder} lacks {', '.join(missing)}")
    return {
        paper: (Path(folder) / file).read_text(encoding="utf-8").splitlines()
        for paper, file in PAPER_FILES.items()
    }


def test_files_and_row_counts():
    assert sorted(p.stem for p in TABLES_DIR.glob("*.csv")) == sorted(ROW_COUNTS)
    for name, count in ROW_COUNTS.items():
        frame = paper_table(name)
        paper, table, metric = TITLES[name]
        assert len(frame) == count, name
        assert set(frame["paper"]) == {paper} and set(frame["table"]) == {table}, name
        if metric is not None:
            assert set(frame["metric"]) == {metric}, name


def test_concatenation_and_dtypes(tables):
    assert tuple(tables.columns) == COLUMNS
    assert len(tables) == sum(ROW_COUNTS.values())
    assert not tables.duplicated(list(KEY)).any()
    assert str(tables["value"].dtype) == "float64" and str(tables["std"].dtype) == "float64"
    assert str(tables["temperature"].dtype) == "float64"
    assert str(tables["source_line"].dtype) == "int64"
    assert tables["method_params"].map(type).eq(str).all()  # "" where none, never NaN


@pytest.mark.parametrize("name", sorted(SETS))
def test_names_per_table(name):
    datasets, models, methods = SETS[name]
    frame = paper_table(name)
    assert set(frame["dataset"]) == datasets
    assert set(frame["model"]) == models
    assert set(zip(frame["method"], frame["method_params"])) == set(methods)


def test_names_fts_table():
    frame = paper_table("fts_table1")
    assert set(frame["dataset"]) == {"cifar100", "cifar10", "tiny_imagenet"}
    assert set(frame["model"]) == {"resnet50"}
    assert set(frame["metric"]) == {"accuracy", "nll", "adaece"}
    trained = frame["method_params"].str.replace(r";?gamma_ev=[^;]+", "", regex=True)
    assert set(zip(frame["method"], trained)) == set(FTS_METHODS)
    fts = frame["stage"] == "fts"
    assert frame.loc[fts, "method_params"].str.contains("gamma_ev=").all()
    assert not frame.loc[~fts, "method_params"].str.contains("gamma_ev").any()
    assert frame["std"].notna().all()  # every cell is mean ± std over 5 seeds
    assert frame.loc[frame["metric"] == "accuracy", "temperature"].isna().all()
    assert frame.loc[frame["metric"] != "accuracy", "temperature"].notna().all()


# --------------------------------------------------------------------------------------------
# Spot values: (file, dataset, model, method, method_params, metric, stage, value, temperature,
#               std, source_line, the cell as printed on that line)
SPOTS = [
    # DFL Table 1 -- the issue's number: DFL's own ECE for DFL on CIFAR-100 / ResNet-50.
    ("dfl_table1", "cifar100", "resnet50", "dual_focal_loss", "", "ece", "pre", 1.08, None, None, 162, "<b>1.08</b>"),
    ("dfl_table1", "cifar100", "resnet50", "cross_entropy", "", "ece", "post", 3.42, 2.1, None, 162, "3.42(2.1)"),
    ("dfl_table1", "cifar100", "wide_resnet26_10", "focal_loss_sd", "", "ece", "post", 1.64, 1.1, None, 164, "<b>1.64(1.1)</b>"),
    ("dfl_table1", "cifar10", "resnet110", "inverse_focal_loss", "", "ece", "post", 0.89, 2.9, None, 167, "<b>0.89(2.9)</b>"),
    ("dfl_table1", "tiny_imagenet", "resnet50", "dual_focal_loss", "", "ece", "post", 1.50, 1.0, None, 170, "<b>1.50(1.0)</b>"),
    ("dfl_table1", "20newsgroups", "global_pooling_cnn", "brier_loss", "", "ece", "post", 6.78, 2.1, None, 171, "6.78(2.1)"),
    ("dfl_table2", "cifar100", "resnet50", "dual_focal_loss", "", "error", "pre", 22.67, None, None, 196, "22.67"),
    ("dfl_table2", "cifar10", "resnet50", "inverse_focal_loss", "", "error", "pre", 4.80, None, None, 200, "4.80"),
    ("dfl_table2", "cifar10", "densenet121", "focal_loss_sd", "", "error", "pre", 5.46, None, None, 203, "5.46"),
    ("dfl_table2", "tiny_imagenet", "resnet50", "brier_loss", "", "error", "pre", 53.2, None, None, 204, "53.2"),
    ("dfl_table2", "20newsgroups", "global_pooling_cnn", "mmce_loss", "", "error", "pre", 27.06, None, None, 205, "27.06"),
    ("dfl_table3", "cifar10", "resnet50", "dual_focal_loss", "", "ece", "pre", 0.46, None, None, 233, "0.46"),
    ("dfl_table3", "cifar10", "wide_resnet26_10", "adafocal", "", "ece", "pre", 0.62, None, None, 236, "0.62"),
    ("dfl_table3", "cifar100", "resnet50", "adafocal", "base=dual", "ece", "pre", 1.07, None, None, 237, "<b>1.07</b>"),
    ("dfl_table3", "cifar100", "resnet110", "focal_loss_sd", "", "ece", "pre", 8.56, None, None, 238, "8.56"),
    ("dfl_table3", "cifar100", "densenet121", "dual_focal_loss", "", "ece", "pre", 1.79, None, None, 239, "<b>1.79</b>"),
    ("dfl_table5", "cifar100", "resnet50", "dual_focal_loss", "", "adaece", "pre", 1.23, None, None, 454, "<b>1.23</b>"),
    ("dfl_table5", "cifar100", "resnet110", "inverse_focal_loss", "", "adaece", "pre", 19.4, None, None, 455, "19.4"),
    ("dfl_table5", "cifar10", "resnet50", "cross_entropy", "", "adaece", "post", 2.14, 2.5, None, 458, "2.14(2.5)"),
    ("dfl_table5", "cifar10", "wide_resnet26_10", "focal_loss_sd", "", "adaece", "post", 1.38, 0.9, None, 460, "<b>1.38(0.9)</b>"),
    ("dfl_table5", "tiny_imagenet", "resnet50", "focal_loss_sd", "", "adaece", "pre", 1.42, None, None, 462, "<b>1.42</b>"),
    ("dfl_table6", "cifar100", "resnet50", "cross_entropy", "", "classwise_ece", "pre", 0.38, None, None, 468, "0.38"),
    ("dfl_table6", "cifar100", "wide_resnet26_10", "focal_loss_sd", "", "classwise_ece", "pre", 0.18, None, None, 470, "<b>0.18</b>"),
    ("dfl_table6", "cifar10", "resnet50", "dual_focal_loss", "", "classwise_ece", "pre", 0.35, None, None, 472, "<b>0.35</b>"),
    ("dfl_table6", "cifar10", "resnet110", "brier_loss", "", "classwise_ece", "post", 0.50, 2.1, None, 473, "0.50(2.1)"),
    ("dfl_table6", "tiny_imagenet", "resnet50", "inverse_focal_loss", "", "classwise_ece", "post", 0.14, 1.3, None, 476, "<b>0.14(1.3)</b>"),
    ("adafocal_table1", "cifar10", "resnet50", "adafocal", "", "adaece", "pre", 0.66, None, None, 192, "<b>0.66</b>"),
    ("adafocal_table1", "cifar10", "resnet50", "adafocal", "", "adaece", "post", 0.44, 1.06, None, 192, "<b>0.44(1.06)</b>"),
    ("adafocal_table1", "cifar100", "resnet110", "cross_entropy", "", "adaece", "post", 6.11, 2.28, None, 197, "6.11(2.28)"),
    ("adafocal_table1", "tiny_imagenet", "resnet50", "label_smoothing_loss", "alpha=0.05", "adaece", "post", 4.66, 0.78, None, 200, "4.66(0.78)"),
    ("adafocal_table1", "imagenet", "densenet121", "mmce_loss", "", "adaece", "pre", 1.22, None, None, 204, "<b>1.22</b>"),
    ("adafocal_table1", "20newsgroups", "bert", "focal_loss_sd", "", "adaece", "post", 3.91, 0.80, None, 206, "3.91(0.80)"),
    ("adafocal_table2", "cifar10", "resnet50", "cross_entropy", "", "error", "pre", 4.95, None, None, 228, "<b>4.95</b>"),
    ("adafocal_table2", "cifar100", "resnet50", "adafocal", "", "error", "pre", 22.60, None, None, 232, "<b>22.60</b>"),
    ("adafocal_table2", "tiny_imagenet", "resnet110", "mmce_loss", "", "error", "pre", 42.22, None, None, 237, "<b>42.22</b>"),
    ("adafocal_table2", "imagenet", "densenet121", "adafocal", "", "error", "pre", 27.74, None, None, 240, "<b>27.74</b>"),
    ("adafocal_table2", "20newsgroups", "bert", "cross_entropy", "", "error", "pre", 16.05, None, None, 242, "<b>16.05</b>"),
    # FCL Table 4 -- the issue's other number: FCL's ECE for DFL in the same setting.
    ("fcl_table4", "cifar100", "resnet50", "dual_focal_loss", "", "ece", "pre", 8.79, None, None, 100, "| 8.79 |"),
    ("fcl_table4", "cifar100", "resnet50", "focal_calibration_loss", "", "ece", "post", 2.14, 1.1, None, 100, "2.14(1.1)"),
    ("fcl_table4", "cifar10", "densenet121", "dual_focal_loss", "", "ece", "post", 1.31, 0.9, None, 107, "1.31(0.9)"),
    ("fcl_table4", "tiny_imagenet", "resnet50", "focal_calibration_loss", "", "ece", "post", 1.35, 0.8, None, 108, "1.35(0.8)"),
    ("fcl_table4", "finsen", "global_pooling_cnn", "mmce_loss", "", "ece", "post", 0.92, 0.5, None, 111, "0.92(0.5)"),
    ("fcl_table2", "cifar100", "resnet50", "focal_calibration_loss", "", "error", "pre", 21.81, None, None, 113, "| 21.81 |"),
    ("fcl_table2", "cifar10", "resnet50", "dual_focal_loss", "", "error", "pre", 5.70, None, None, 117, "| 5.70 |"),
    ("fcl_table2", "tiny_imagenet", "resnet50", "label_smoothing_loss", "alpha=0.05", "error", "pre", 47.93, None, None, 121, "| 47.93 |"),
    ("fcl_table2", "20newsgroups", "global_pooling_cnn", "focal_loss_sd", "", "error", "pre", 31.16, None, None, 122, "| 31.16 |"),
    ("fcl_table2", "ag_news", "global_pooling_cnn", "focal_calibration_loss", "", "error", "pre", 8.13, None, None, 123, "| 8.13 |"),
    ("fcl_table5", "cifar100", "resnet50", "cross_entropy", "", "smooth_ece", "pre", 14.95, None, None, 127, "| 14.95 |"),
    ("fcl_table5", "cifar10", "resnet50", "focal_calibration_loss", "", "smooth_ece", "post", 0.99, 1.0, None, 131, "0.99(1.0)"),
    ("fcl_table5", "cifar10", "densenet121", "cross_entropy", "", "smooth_ece", "pre", 15.42, None, None, 134, "| 15.42 |"),
    ("fcl_table5", "20newsgroups", "global_pooling_cnn", "label_smoothing_loss", "alpha=0.05", "smooth_ece", "post", 7.40, 0.8, None, 136, "7.40(0.8)"),
    ("fcl_table5", "finsen", "global_pooling_cnn", "dual_focal_loss", "", "smooth_ece", "pre", 0.63, None, None, 138, "| 0.63 |"),
    ("fcl_table6", "cifar100", "resnet50", "dual_focal_loss", "", "adaece", "pre", 8.79, None, None, 559, "| 8.79 |"),
    ("fcl_table6", "cifar10", "resnet50", "focal_calibration_loss", "", "adaece", "pre", 0.75, None, None, 563, "| 0.75 |"),
    ("fcl_table6", "tiny_imagenet", "resnet50", "focal_loss_sd", "", "adaece", "pre", 1.31, None, None, 567, "| 1.31 |"),
    ("fcl_table6", "20newsgroups", "global_pooling_cnn", "cross_entropy", "", "adaece", "post", 2.23, 3.4, None, 568, "2.23(3.4)"),
    ("fcl_table6", "finsen", "global_pooling_cnn", "label_smoothing_loss", "alpha=0.05", "adaece", "post", 4.5, 0.6, None, 570, "4.5(0.6)"),
    ("fcl_table7", "cifar100", "resnet50", "cross_entropy", "", "classwise_ece", "pre", 0.39, None, None, 574, "| 0.39 |"),
    ("fcl_table7", "cifar10", "wide_resnet26_10", "dual_focal_loss", "", "classwise_ece", "post", 0.33, 0.8, None, 580, "0.33(0.8)"),
    ("fcl_table7", "tiny_imagenet", "resnet50", "focal_calibration_loss", "", "classwise_ece", "post", 0.16, 0.8, None, 582, "0.16(0.8)"),
    ("fcl_table7", "20newsgroups", "global_pooling_cnn", "dual_focal_loss", "", "classwise_ece", "pre", 2.01, None, None, 583, "| 2.01 |"),
    ("fcl_table7", "ag_news", "global_pooling_cnn", "brier_loss", "", "classwise_ece", "pre", 3.46, None, None, 584, "| 3.46 |"),
    ("fts_table1", "cifar100", "resnet50", "cross_entropy", "", "nll", "ts", 0.88, 1.31, 0.02, 265, r"0.88 \pm 0.02 (1.31)"),
    ("fts_table1", "cifar100", "resnet50", "focal_loss", "gamma=7;gamma_ev=0.5", "adaece", "fts", 0.99, 0.75, 0.07, 272, r"0.99 \pm 0.07 (0.75)"),
    ("fts_table1", "cifar10", "resnet50", "focal_loss", "gamma=3", "adaece", "ts", 1.48, 0.77, 0.25, 285, r"1.48 \pm 0.25 (0.77)"),
    ("fts_table1", "cifar10", "resnet50", "adafocal", "gamma_ev=5", "adaece", "fts", 0.95, 3.70, 0.10, 292, r"0.95 \pm 0.10 (3.70)"),
    ("fts_table1", "tiny_imagenet", "resnet50", "focal_loss", "gamma=7;gamma_ev=0.05", "adaece", "fts", 0.96, 0.85, 0.00, 304, r"0.96 \pm 0.00 (0.85)"),
    ("fts_table1", "tiny_imagenet", "resnet50", "focal_loss_sd", "", "accuracy", "ts", 52.1, None, 0.1, 305, r"52.1 \pm 0.1 |"),
]


def test_at_least_five_spot_values_per_table():
    counts = pd.Series([spot[0] for spot in SPOTS]).value_counts()
    assert set(counts.index) == set(ROW_COUNTS)
    assert (counts >= 5).all(), counts


@pytest.mark.transcriptions
@pytest.mark.parametrize("spot", SPOTS, ids=lambda s: "-".join(map(str, s[:4] + s[5:7])))
def test_spot_value(spot, paper_lines):
    name, dataset, model, method, params, metric, stage, value, temperature, std, line, printed = spot
    frame = paper_table(name)
    hit = frame[(frame["dataset"] == dataset) & (frame["model"] == model)
                & (frame["method"] == method) & (frame["method_params"] == params)
                & (frame["metric"] == metric) & (frame["stage"] == stage)]
    assert len(hit) == 1
    row = hit.iloc[0]
    assert row["value"] == value
    assert _same(row["temperature"], temperature) and _same(row["std"], std)
    assert row["source_line"] == line
    assert printed in paper_lines[row["paper"]][line - 1]


def _same(stored: float, expected: float | None) -> bool:
    return math.isnan(stored) if expected is None else stored == expected


def test_the_dfl_fcl_disagreement_of_the_issue(tables):
    """DFL on CIFAR-100 / ResNet-50 before temperature scaling: 1.08 in DFL's Table 1, 8.79 in
    FCL's Table 4 (and 1.23 vs 8.79 for AdaECE)."""
    dfl = tables[(tables["dataset"] == "cifar100") & (tables["model"] == "resnet50")
                 & (tables["method"] == "dual_focal_loss") & (tables["stage"] == "pre")]
    by_table = dfl.set_index(["paper", "table"])["value"].to_dict()
    assert by_table[("tao2023", "Table 1")] == 1.08
    assert by_table[("fcl2024", "Table 4")] == 8.79
    assert by_table[("tao2023", "Table 5")] == 1.23
    assert by_table[("fcl2024", "Table 6")] == 8.79


def test_dfl_and_adafocal_print_the_same_cifar_baseline_errors():
    """Both papers build on Mukhoti et al.'s code and models: their CIFAR error tables agree on
    every shared baseline; they differ on Tiny-ImageNet, and on 20 Newsgroups Brier and MMCE
    are swapped (README, "Cross-paper observations")."""
    keys = ["dataset", "model", "method", "method_params"]
    both = paper_table("dfl_table2").merge(paper_table("adafocal_table2"), on=keys,
                                           suffixes=("_dfl", "_ada"))
    cifar = both["dataset"].isin(["cifar10", "cifar100"])
    assert cifar.sum() == 40
    assert (both.loc[cifar, "value_dfl"] == both.loc[cifar, "value_ada"]).all()
    assert (both.loc[both["dataset"] == "tiny_imagenet", "value_dfl"]
            != both.loc[both["dataset"] == "tiny_imagenet", "value_ada"]).all()
    news = both[both["dataset"] == "20newsgroups"].set_index("method")
    assert news.loc["brier_loss", "value_dfl"] == news.loc["mmce_loss", "value_ada"] == 27.23
    assert news.loc["mmce_loss", "value_dfl"] == news.loc["brier_loss", "value_ada"] == 27.06


def test_dfl_table3_swaps_densenet_and_wide_resnet():
    """DFL's Table 3 rows "Densenet121" and "WideResnet" hold the numbers that DFL's Table 1 and
    AdaFocal's Table 1 print for Wide-ResNet-26-10 and DenseNet-121 respectively. The CSV keeps
    the labels as printed (README, "Cross-paper observations")."""

    def pre(name, dataset, model, method):
        frame = paper_table(name)
        return frame[(frame["method"] == method) & (frame["model"] == model)
                     & (frame["dataset"] == dataset) & (frame["method_params"] == "")
                     & (frame["stage"] == "pre")]["value"].item()

    swapped = {"densenet121": "wide_resnet26_10", "wide_resnet26_10": "densenet121"}
    for dataset in ("cifar10", "cifar100"):
        for printed, meant in swapped.items():
            for method in ("focal_loss_sd", "dual_focal_loss"):
                dfl_table1 = pre("dfl_table1", dataset, meant, method)
                assert pre("dfl_table3", dataset, printed, method) == dfl_table1
            adafocal_table1 = pre("adafocal_table1", dataset, meant, "adafocal")
            assert pre("dfl_table3", dataset, printed, "adafocal") == adafocal_table1
        for model in ("resnet50", "resnet110"):  # the other rows agree as labelled
            dfl_table1 = pre("dfl_table1", dataset, model, "dual_focal_loss")
            assert pre("dfl_table3", dataset, model, "dual_focal_loss") == dfl_table1


def test_fcl_reprints_dfl_20newsgroups_baselines():
    """FCL's Table 4 repeats DFL's Table 1 for the 20 Newsgroups baselines, except MMCE before
    temperature scaling (13.58 in DFL, 15.38 in FCL: the digits swapped) and DFL itself."""
    keys = ["dataset", "model", "method", "method_params", "stage"]
    both = paper_table("dfl_table1").merge(paper_table("fcl_table4"), on=keys,
                                           suffixes=("_dfl", "_fcl"))
    news = both[both["dataset"] == "20newsgroups"]
    differ = news[(news["value_dfl"] != news["value_fcl"])
                  | (news["temperature_dfl"].fillna(0) != news["temperature_fcl"].fillna(0))]
    assert len(news) == 12
    assert sorted(zip(differ["method"], differ["stage"])) == [
        ("dual_focal_loss", "post"), ("dual_focal_loss", "pre"), ("mmce_loss", "pre")]
    mmce = differ[differ["method"] == "mmce_loss"].iloc[0]
    assert (mmce["value_dfl"], mmce["value_fcl"]) == (13.58, 15.38)


# --------------------------------------------------------------------------------------------
# Every row, re-read from its line.

def _layout(name: str) -> list[tuple[str, str, str]]:
    """(method, method_params, stage) of the printed cells of one line, left to right."""
    if name == "adafocal_table1":
        return [(m, p, s) for s in ("pre", "post") for m, p in ADAFOCAL_METHODS]
    methods = DFL3_METHODS if name == "dfl_table3" else SETS[name][2]
    stages = ("pre",) if TITLES[name][2] == "error" or name == "dfl_table3" else ("pre", "post")
    return [(m, p, s) for m, p in methods for s in stages]


def _cells(line: str) -> list[str]:
    sep = "|" if "|" in line else "\t"
    return [cell.strip() for cell in line.split(sep)]


def _grid_labels(lines: list[str], line_no: int) -> tuple[str, str]:
    """(dataset, model) of a grid row: the model is the first label cell of the line, the
    dataset the nearest dataset label at the start of this or an earlier line."""
    model = next(MODEL_LABELS[c] for c in _cells(lines[line_no - 1]) if c in MODEL_LABELS)
    for n in range(line_no, 0, -1):
        first = _cells(lines[n - 1])[0]
        if first in DATASET_LABELS:
            return DATASET_LABELS[first], model
    raise AssertionError(f"no dataset label above line {line_no}")


def _numbers(row: pd.Series) -> list[float]:
    return [row["value"]] + [row[c] for c in ("std", "temperature") if not math.isnan(row[c])]


@pytest.mark.transcriptions
@pytest.mark.parametrize("name", sorted(SETS))
def test_every_grid_row_is_its_cell(name, paper_lines):
    frame = paper_table(name)
    lines = paper_lines[TITLES[name][0]]
    layout = _layout(name)
    for line_no, group in frame.groupby("source_line", sort=False):
        line = lines[line_no - 1]
        assert list(zip(group["method"], group["method_params"], group["stage"])) == layout, line_no
        assert {_grid_labels(lines, line_no)} == set(zip(group["dataset"], group["model"])), line_no
        claimed = [x for _, row in group.iterrows() for x in _numbers(row)]
        printed = [float(x) for x in NUMBER.findall(line)]
        assert printed[-len(claimed):] == claimed, line_no
        # no printed cell is left out: every non-label cell of the line is one row
        data = [c for c in _cells(line) if c and c not in DATASET_LABELS and c not in MODEL_LABELS]
        assert len(data) == len(layout), line_no
    assert len(frame) == frame["source_line"].nunique() * len(layout)


def _fts_method(label: str) -> tuple[str, str]:
    """(method, method_params) of a baseline row label of Komisarenko & Kull's Table 1."""
    focal = re.fullmatch(r"FOCAL \$\\gamma_\{tr\} = (\d+)\$", label)
    if focal:
        return "focal_loss", f"gamma={focal.group(1)}"
    return {"CROSS-ENTROPY": ("cross_entropy", ""), "FLSD-53": ("focal_loss_sd", ""),
            "ADAFOCAL": ("adafocal", "")}[label]


@pytest.mark.transcriptions
def test_every_fts_row_is_its_cell(paper_lines):
    frame = paper_table("fts_table1")
    lines = paper_lines["komisarenko2024"]
    for line_no, group in frame.groupby("source_line", sort=False):
        line = lines[line_no - 1]
        label = _cells(line)[1]
        if label.startswith("+"):  # focal temperature scaling of the baseline printed above
            method, params = _fts_method(_cells(lines[line_no - 2])[1])
            gamma_ev = re.fullmatch(r"\+ \$\\gamma_\{ev\} = (-?[\d.]+)\$", label).group(1)
            params, stage = ";".join(filter(None, [params, f"gamma_ev={gamma_ev}"])), "fts"
        else:
            (method, params), stage = _fts_method(label), "ts"
        dataset = next(
            DATASET_LABELS[m.group(1)]
            for n in range(line_no, 0, -1)
            if (m := re.match(r"\| (\S+) DATASET", lines[n - 1]))
        )
        assert list(group["metric"]) == ["accuracy", "nll", "adaece"], line_no
        assert set(group["method"]) == {method} and set(group["method_params"]) == {params}
        assert set(group["stage"]) == {stage} and set(group["dataset"]) == {dataset}, line_no
        claimed = [x for _, row in group.iterrows() for x in _numbers(row)]
        printed = [float(x) for x in NUMBER.findall(line)]
        assert len(claimed) == 8 and printed[-8:] == claimed, line_no


# --------------------------------------------------------------------------------------------
# The loader's validation.

@pytest.fixture
def copy_of_tables(tmp_path: Path) -> Path:
    for path in TABLES_DIR.glob("*.csv"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_loader_reads_a_copy(copy_of_tables):
    assert len(load_paper_tables(copy_of_tables)) == sum(ROW_COUNTS.values())


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("source_line\n", "line\n", "columns"),
        (",ece,pre,17.52,", ",ECE,pre,17.52,", "metric"),
        (",ece,pre,17.52,", ",ece,before,17.52,", "stage"),
        (",ece,pre,17.52,", ",ece,pre,,", "dfl_table1"),
        (",ece,pre,17.52,", ",ece,pre,-1,", "value"),
        (",ece,pre,17.52,", ",ece,pre,nan,", "value"),
        ("tao2023,Table 1,cifar100", "tao2024,Table 1,cifar100", "paper"),
        ("cross_entropy,,ece,pre,17.52", "cross_entropy,gamma,ece,pre,17.52", "method_params"),
        ("cross_entropy,,ece,post,3.42,,2.1", "cross_entropy,,ece,post,3.42,,0", "temperature"),
        ("brier_loss,,ece,pre,6.52", "cross_entropy,,ece,pre,6.52", "share a key"),
    ],
)
def test_loader_rejects_a_broken_file(copy_of_tables, old, new, message):
    _edit(copy_of_tables / "dfl_table1.csv", old, new)
    with pytest.raises(ValueError, match=message):
        load_paper_tables(copy_of_tables)
    with pytest.raises(ValueError, match=message):
        paper_table("dfl_table1", root=copy_of_tables)


def test_loader_rejects_duplicates_across_files(copy_of_tables):
    shutil.copy(copy_of_tables / "dfl_table1.csv", copy_of_tables / "dfl_table1_copy.csv")
    paper_table("dfl_table1_copy", root=copy_of_tables)  # each file alone is fine
    with pytest.raises(ValueError, match="share a key"):
        load_paper_tables(copy_of_tables)


def test_loader_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="name must be one of"):
        paper_table("dfl_table4")
    with pytest.raises(TypeError, match="name"):
        paper_table(1)
    with pytest.raises(ValueError, match="root"):
        load_paper_tables(tmp_path / "missing")
    with pytest.raises(ValueError, match="no paper-table CSV"):
        load_paper_tables(tmp_path)
