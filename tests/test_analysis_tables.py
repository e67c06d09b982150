"""The cells of the results chapter's tables (calibnb.analysis.tables)."""

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibnb.analysis.tables import (BETTER, auroc_table, better_of_pair, by_row, fts_table, gamma_counts,
                                     mean_std, metric_columns, paired_wins, profile, ranking, regime_check,
                                     selection_table, table1)


def test_mean_std_is_the_sample_statistics_in_percent():
    # mean 0.02, sample std 0.01 of (0.01, 0.02, 0.03): in percent 2.00 ± 1.00
    assert mean_std([0.01, 0.02, 0.03]) == "2.00 ± 1.00"
    assert mean_std([0.01, np.nan, 0.03], scale=1.0, digits=3) == "0.020 ± 0.014"
    assert mean_std(pd.Series([0.5])) == "50.00 ± nan"  # one seed: no spread to report
    assert mean_std([np.nan]) == "–"
    assert mean_std([]) == "–"


#: A negative zero as a reader would see it: "-0", "-0.0", "-0.00", ... with no other digit after.
NEGATIVE_ZERO = re.compile(r"-0(?:\.0+)?(?![0-9.])")


def test_negative_zero_pattern_finds_only_negative_zeros():
    assert NEGATIVE_ZERO.search("-0.00 ± 0.01") and NEGATIVE_ZERO.search("1.00 (-0.0)")
    assert not NEGATIVE_ZERO.search("-0.01 ± 0.00") and not NEGATIVE_ZERO.search("0.00 ± 0.00")
    assert not NEGATIVE_ZERO.search("-0.005") and not NEGATIVE_ZERO.search("10-0.5")


def test_mean_std_prints_a_mean_that_rounds_to_zero_without_a_sign():
    # mean -0.0001 in percent: f"{-0.0001:.2f}" is "-0.00"
    assert mean_std([-0.000001, -0.000002, -0.000003]) == "0.00 ± 0.00"
    assert mean_std([-0.00001], digits=1) == "0.0 ± nan"
    assert mean_std([-0.0001, -0.0003]) == "-0.02 ± 0.01"  # a real negative keeps its sign


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e-3, 1e-3, allow_nan=False), min_size=1, max_size=6),
       st.sampled_from([1.0, 100.0]), st.integers(0, 4))
def test_no_mean_std_cell_shows_a_negative_zero(values, scale, digits):
    cell = mean_std(values, scale=scale, digits=digits)
    assert not NEGATIVE_ZERO.search(cell), cell
    assert not NEGATIVE_ZERO.search(" ".join(better_of_pair(values, values[::-1], scale))), values


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


def regime(seed_values: dict) -> pd.DataFrame:
    """Selected runs of a made-up regime: method → per-seed (ece, ece_ts, temperature, error)."""
    rows = []
    for method, seeds in seed_values.items():
        for seed, (e, e_ts, t, err) in enumerate(seeds, start=1):
            rows.append({"method": method, "row": method, "family": method, "seed": seed,
                         "ece": e, "ece_ts": e_ts, "temperature": t, "error": err,
                         "adaece_ts": e_ts, "adaece_fts": e_ts - 0.001 * (seed != 2),
                         "ece_fts": e_ts, "nll_ts": 0.5, "nll_fts": 0.4,
                         "fts_gamma": 0.5 * seed, "fts_temperature": t,
                         "auroc_mnist": 0.8, "auroc_mnist_ts": 0.9})
    return pd.DataFrame(rows)


RUNS = regime({
    "FL-3": [(0.02, 0.01, 0.9, 0.1), (0.04, 0.02, 0.7, 0.2)],
    "CE": [(0.05, 0.01, 1.5, 0.1), (0.07, 0.03, 1.7, 0.3)],
})


def test_by_row_follows_the_papers_order_and_skips_absent_rows():
    assert by_row(RUNS, len).to_dict() == {"CE": 2, "FL-3": 2}  # CE first, as in the papers
    assert list(by_row(RUNS, len, rows=["FL-3", "DFL", "CE"]).index) == ["FL-3", "CE"]


def test_regime_check_reads_cross_entropy():
    assert regime_check(RUNS) == {"CE runs": 2, "CE test ECE pre T, mean (%)": 6.0,
                                  "CE test ECE pre T, min (%)": 5.0, "CE mean T": 1.6,
                                  "CE test error (%)": 20.0}


def test_table1_cells_are_mean_std_with_the_mean_temperature():
    table = table1(RUNS)
    assert table.loc["CE"].tolist() == ["6.00 ± 1.41", "2.00 ± 1.41 (1.6)", 2]
    assert table.loc["FL-3", "ECE post T (%) (T)"] == "1.50 ± 0.71 (0.8)"


def test_ranking_orders_the_means_and_names_the_side_of_calibrated():
    lines = ranking(RUNS).splitlines()
    assert lines[0] == "before T: FL-3 3.00 < CE 6.00"
    assert lines[2] == "after T: FL-3 1.50 < CE 2.00"
    assert lines[4:] == ["over-confident (mean T > 1.05): CE", "under-confident (mean T < 0.95): FL-3",
                         "close to calibrated (mean T within 0.05 of 1, half a step of the T grid): none"]


def test_metric_columns_scale_and_leave_the_error_without_a_post_t_column():
    table = metric_columns(RUNS, [("error", "error (%)"), ("ece", "ECE (%)")], {"ece": 1.0})
    assert list(table.columns) == ["error (%) pre", "ECE (%) pre", "ECE (%) post T"]
    assert table.loc["CE", "ECE (%) pre"] == "0.06 ± 0.01"
    assert table.loc["CE", "error (%) pre"] == "20.00 ± 14.14"


def test_fts_table_pairs_the_calibrators_and_counts_paired_wins():
    table = fts_table(RUNS)
    # adaece_fts is 0.001 below adaece_ts for seed 1 only (seed 2 ties)
    assert table.loc["CE", "FTS better (AdaECE), seeds"] == "1/2"
    assert table.loc["CE", "NLL FTS"].endswith(BETTER) and not table.loc["CE", "NLL TS"].endswith(BETTER)
    assert table.loc["CE", "(γ, T) (FTS)"] == "(0.75, 1.60)"
    assert table.loc["CE", "accuracy (%)"] == "80.00 ± 14.14"


def test_gamma_counts_cross_tabulate_the_chosen_gamma_per_regime():
    counts = gamma_counts({"A": RUNS, "B": RUNS[RUNS["method"] == "CE"]}, ["CE", "FL-3"])
    assert list(counts.columns) == ["0.5", "1"] and counts.columns.name == "γ_ev"
    assert counts.loc[("A", "FL-3")].tolist() == [1, 1]
    assert counts.loc[("B", "FL-3")].tolist() == [0, 0]  # a method a regime lacks: zero counts


def test_auroc_table_has_pre_and_post_columns_per_shift():
    table = auroc_table(RUNS, {"mnist": "MNIST"})
    assert list(table.columns) == ["MNIST pre T", "MNIST post T"]
    assert table.loc["CE"].tolist() == ["80.00 ± 0.00", "90.00 ± 0.00"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-4e-5, 4e-5, allow_nan=False), min_size=4, max_size=4))
def test_no_table_cell_shows_a_negative_zero(tiny):
    """Metrics, temperatures and γ that round to zero (as a metric difference or a degenerate
    fit can) print without a sign in every table and text that the chapter shows."""
    runs = regime({"CE": [tuple(tiny), tuple(t / 2 for t in tiny)],
                   "FL-3": [tuple(-t for t in tiny), (0.0, 0.0, 0.0, 0.0)]})
    runs["fts_gamma"] = runs["fts_temperature"] = runs["temperature"]
    texts = [table1(runs).to_string(), fts_table(runs).to_string(), ranking(runs),
             metric_columns(runs, [("error", "error"), ("ece", "ECE")]).to_string(),
             auroc_table(runs, {"mnist": "MNIST"}).to_string()]
    runs["row"] = runs["row"].replace({"FL-3": "FLSD-53"})
    both = pd.concat([runs, runs.assign(row=runs["row"].replace({"CE": "FL-3", "FLSD-53": "Brier"})),
                      runs.assign(row=runs["row"].replace({"CE": "LS-0.05", "FLSD-53": "MMCE"}))])
    texts.append(" ".join(map(str, profile(both).values())))
    for text in texts:
        assert not NEGATIVE_ZERO.search(text), text


def test_profile_of_the_committed_fashion_mnist_runs_matches_the_ranking():
    from calibnb.runs import select_runs
    from conftest import REPO
    runs = select_runs(REPO / "configs/fashion_mnist_cpu.yaml")
    facts = profile(runs)
    t = runs.groupby("row")["temperature"].mean()
    assert facts["methods over-confident (mean T > 1.05)"] == int((t > 1.05).sum())
    assert ranking(runs).count("under-confident") == 1
    assert facts["best before T / after T"].split(" / ")[0] == ranking(runs).split(": ")[1].split(" ")[0]


def test_styled_keeps_cells_on_one_line_and_bolds_the_marked_ones():
    from calibnb.analysis.tables import styled
    table = pd.DataFrame({"A": ["1.00 ± 0.10" + BETTER, "2.00 ± 0.20"], "B": [0.123456, 1.0]})
    html = styled(table, caption="ECE (%)").to_html()
    assert "white-space: nowrap" in html and "<caption>ECE (%)</caption>" in html
    assert html.count("font-weight: bold") == 1 and "0.12<" in html
    assert table.loc[0, "B"] == 0.123456  # the data are not changed


def test_number_text_never_shows_negative_zero_or_machine_epsilon():
    from calibnb.analysis.tables import number_text
    assert number_text(-0.0004, 3) == "0.000" and number_text(-0.0) == "0.00"
    assert number_text(1.3877787807814457e-17) == "0.00" and number_text(-1e-17, 4) == "0.0000"
    assert number_text(-0.006, 2) == "-0.01" and number_text(0.125, 2) == "0.12"
    assert number_text(float("nan")) == "–"


def test_power_of_ten_text_writes_what_a_reader_writes():
    from calibnb.analysis.tables import power_of_ten_text
    assert power_of_ten_text(3.552713678800501e-15) == "4 × 10⁻¹⁵"
    assert power_of_ten_text(7.9e-4, 1) == "7.9 × 10⁻⁴" and power_of_ten_text(-2e-5) == "-2 × 10⁻⁵"
    assert power_of_ten_text(6.6e12) == "7 × 10¹²" and power_of_ten_text(0.0) == "0"
    with pytest.raises(ValueError, match="value"):
        power_of_ten_text(float("nan"))


def test_styled_lets_only_sentences_wrap_and_can_hide_the_index():
    from calibnb.analysis.tables import is_prose, styled
    table = pd.DataFrame({"claim": ["focal loss bounds a divergence minus an entropy", "short label"],
                          "ours": ["0.35 ± 0.02 (1.50 ± 0.10)", "12"], "value": [-1e-5, 2.0]})
    assert [is_prose(v) for v in table["claim"]] == [True, False]
    assert not is_prose(table.loc[0, "ours"])  # numbers with a few symbols are not prose
    assert is_prose("η = (0.55, 0.3, 0.15) → q* = (0.5, 0.3, 0.2)")  # a statement with numbers
    html = styled(table, digits=3, wrap=True, index=False).to_html()
    assert html.count("prose") == 2  # the rule and the one sentence cell
    assert "white-space: nowrap" in html and "min-width: 14em" in html
    assert "-0.000" not in html and ">0.000<" in html
    assert 'class="row_heading' not in html  # no index column
    assert 'class="row_heading' in styled(table).to_html()


def test_verified_table_escapes_text_and_puts_the_test_behind_a_toggle():
    from calibnb.analysis.tables import verified_table
    rows = [("Prop. 3: T_low < T < T_high for every logit", "yes", "0 < 1", "holds",
             "test_theory_focal.py::test_proposition_3_brackets_the_focal_map")]
    html = verified_table(rows).to_html()
    assert "0 &lt; 1" in html and "<details><summary><code>test_theory_focal.py</code></summary>" in html
    assert "<code>test_proposition_3_brackets_the_focal_map</code></details>" in html
    assert 'class="row_heading' not in html
    with pytest.raises(ValueError, match="rows"):
        verified_table([])
    with pytest.raises(ValueError, match="test"):
        verified_table([("a claim of several words", "yes", "1", "holds", "")])


def test_a_verified_record_collects_claims_and_refuses_an_unnamed_test():
    from calibnb.analysis.tables import VerifiedRecord

    record = VerifiedRecord()
    record.add("Prop. 3: bounds for γ = 4", "T = 0.2 and 0.238", "0.200 and 0.238", "holds",
               "tests/test_theory_focal.py::test_bounds")
    record.add("Fig. 2: binary line", "0.95γ + 0.85", "0.951γ + 0.850", "holds", "tests/test_theory_focal.py")
    assert len(record) == 2
    html = record.table().to_html()
    assert "Prop. 3: bounds for γ = 4" in html and "0.951γ + 0.850" in html
    with pytest.raises(ValueError, match="test"):
        record.add("a claim", "1", "1", "holds", "")
    with pytest.raises(ValueError, match="status"):
        record.add("a claim", "1", "1", None, "tests/x.py")
    assert len(record) == 2


def test_power_of_ten_bound_is_the_smallest_power_above_and_refuses_zero():
    from calibnb.analysis.tables import power_of_ten_bound_text

    assert power_of_ten_bound_text(3.6e-15) == "10⁻¹⁴"
    assert power_of_ten_bound_text(9.99e-7) == "10⁻⁶"
    assert power_of_ten_bound_text(0.5) == "10⁰"
    for bad in (0.0, -1e-9, float("nan")):
        with pytest.raises(ValueError, match="value"):
            power_of_ten_bound_text(bad)
