"""Our methods beside the papers' transcribed tables (calibnb.analysis.beside_papers)."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from calibnb.analysis.beside_papers import fts_beside_paper, ours, paper_key, rank_against_papers
from calibnb.paper_tables import paper_table
from calibnb.runs import select_runs
from conftest import REPO


@pytest.mark.parametrize("run, key", [
    ({"loss": "cross_entropy"}, ("cross_entropy", "")),
    ({"loss": "label_smoothing_loss"}, ("label_smoothing_loss", "alpha=0.05")),
    ({"loss": "focal_loss", "gamma": 3.0}, ("focal_loss", "gamma=3")),
    ({"loss": "adafocal", "loss_params": {"base": "dual"}}, ("adafocal", "base=dual")),
    ({"loss": "adafocal", "loss_params": np.nan}, ("adafocal", "")),
])
def test_paper_key_names_a_run_as_the_transcriptions_do(run, key):
    assert paper_key(run) == key


@pytest.fixture(scope="module")
def selected():
    return {"Fashion-MNIST": select_runs(REPO / "configs/fashion_mnist_cpu.yaml"),
            "MNIST-1D": select_runs(REPO / "configs/mnist1d_cpu.yaml")}


def test_rank_correlation_recomputed_by_hand(selected):
    side_by_side, ranks = rank_against_papers(selected, shown="Fashion-MNIST")
    assert set(side_by_side) == {"tao2023 (DFL) Table 1", "ghosh2022 (AdaFocal) Table 1",
                                 "fcl2024 (FCL) Table 4"}
    assert len(ranks) == 3 * 2 * 2 * 2  # tables × datasets × regimes × stages
    # DFL's Table 1 on CIFAR-100, before T, against MNIST-1D: the ρ over the shared methods
    paper = paper_table("dfl_table1")
    paper = paper[(paper["dataset"] == "cifar100") & (paper["model"] == "resnet50")
                  & (paper["metric"] == "ece") & (paper["stage"] == "pre")]
    mine = ours("ece", selected["MNIST-1D"])
    shared = [(r.method, r.method_params, r.value) for r in paper.itertuples()
              if (r.method, r.method_params) in mine]
    expected = spearmanr([v for *_, v in shared], [mine[(m, p)][1] for m, p, _ in shared]).statistic
    row = ranks[(ranks["paper table"] == "tao2023 (DFL) Table 1") & (ranks["dataset"] == "cifar100")
                & (ranks["ours"] == "MNIST-1D") & (ranks["stage"] == "pre")].iloc[0]
    assert row["methods"] == len(shared) and row["Spearman ρ"] == round(expected, 2)
    ce = side_by_side["tao2023 (DFL) Table 1"].loc["CE"]
    assert ce["cifar100 pre"] == "17.52" and ce["cifar100 post (T)"] == "3.42 (2.1)"
    with pytest.raises(ValueError, match="shown"):
        rank_against_papers(selected, shown="CIFAR")


def test_fts_beside_paper_reads_the_papers_cross_entropy_row(selected):
    table = fts_beside_paper(selected, ["CE", "FL-1", "FL-3", "DFL"])
    assert list(table.index) == ["CE", "FL-1", "FL-3"]  # the paper has no DFL row
    assert table.loc["CE", ["paper TS", "paper FTS", "paper: FTS better"]].tolist() == [
        "1.03 ± 0.17", "0.71 ± 0.16", "yes"]
    ce = selected["MNIST-1D"][selected["MNIST-1D"]["row"] == "CE"]
    better = "yes" if ce["adaece_fts"].mean() < ce["adaece_ts"].mean() else "no"
    assert table.loc["CE", "MNIST-1D: FTS better"] == better
    assert isinstance(table, pd.DataFrame)
