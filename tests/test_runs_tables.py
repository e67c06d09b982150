"""The cells of the results chapter's tables (calibnb.runs.tables)."""

import numpy as np
import pandas as pd
import pytest

from calibnb.runs.tables import BETTER, better_of_pair, mean_std, paired_wins, selection_table


def test_mean_std_is_the_sample_statistics_in_percent():
    # mean 0.02, sample std 0.01 of (0.01, 0.02, 0.03): in percent 2.00 ± 1.00
    assert mean_std([0.01, 0.02, 0.03]) == "2.00 ± 1.00"
    assert mean_std([0.01, np.nan, 0.03], scale=1.0, digits=3) == "0.020 ± 0.014"
    assert mean_std(pd.Series([0.5])) == "50.00 ± nan"  # one seed: no spread to report
    assert mean_std([np.nan]) == "–"
    assert mean_std([]) == "–"


@pytest.mark.parametrize(
    "first, second, marked",
    [([0.01, 0.03], [0.02, 0.04], 0), ([0.05], [0.01, 0.02], 1), ([0.02, 0.02], [0.01, 0.03], None)],
)
def test_better_of_pair_marks_the_lower_mean(first, second, marked):
    cells = better_of_pair(first, second)
    assert cells == (mean_std(first) + (BETTER if marked == 0 else ""),
                     mean_std(second) + (BETTER if marked == 1 else ""))


def test_paired_wins_counts_run_by_run():
    runs = pd.DataFrame({
        "ece_fts": [0.01, 0.02, 0.03, 0.04, np.nan],
        "ece_ts": [0.02, 0.02, 0.01, 0.05, 0.01],
        "nll_fts": [0.3, 0.2, 0.1, 0.4, 0.5],
        "nll_ts": [0.3, 0.3, 0.3, 0.3, 0.3],
    })
    wins = paired_wins(runs, ("ece", "nll"))
    # ece: FTS lower in runs 0 and 3, TS lower in run 2, a tie in run 1, run 4 lacks FTS
    assert wins.loc["ece"].to_dict() == {"FTS lower": 2, "TS lower": 1, "tie": 1, "runs": 4, "FTS lower (share)": 0.5}
    assert wins.loc["nll"].to_dict() == {"FTS lower": 2, "TS lower": 2, "tie": 1, "runs": 5, "FTS lower (share)": 0.4}
    swapped = paired_wins(runs, ("ece",), first="ts", second="fts")
    assert swapped.loc["ece", "TS lower"] == 1 and swapped.loc["ece", "FTS lower"] == 2


def test_selection_table_lists_every_candidate_and_marks_the_chosen():
    runs = pd.DataFrame({
        "loss": ["dual_focal_loss"] * 4 + ["cross_entropy"],
        "method": ["DFL (γ=2)", "DFL (γ=2)", "DFL (γ=5)", "DFL (γ=5)", "CE"],
        "val_ece": [0.02, 0.04, 0.01, 0.01, 0.05],
    })
    selected = runs[runs["method"].isin(["DFL (γ=5)", "CE"])]
    table = selection_table(runs, selected, ["dual_focal_loss"])
    assert list(table.index) == [("DFL", "DFL (γ=2)"), ("DFL", "DFL (γ=5)")]
    assert table["seeds"].tolist() == [2, 2]
    assert table["val ECE (%)"].tolist() == ["3.00 ± 1.41", "1.00 ± 0.00"]
    assert table["selected"].tolist() == ["", "◀ selected"]
    assert selection_table(runs, selected, ["focal_calibration_loss"]).empty
