"""The papers' claims judged by the paired rule (calibnb.analysis.claims)."""

import pandas as pd
import pytest

from calibnb.analysis.claims import (CLAIMS, Claim, agreement, claims_in, judge, values_of, verdict_table,
                                     what_holds)
from calibnb.runs import select_runs
from conftest import REPO


def runs(**methods) -> pd.DataFrame:
    """Made-up selected runs: method → per-seed (ece, temperature)."""
    return pd.DataFrame([{"method": m, "family": m.split(" (")[0], "seed": s, "ece": e, "temperature": t}
                         for m, values in methods.items() for s, (e, t) in enumerate(values, start=1)])


FIVE = runs(**{"A": [(0.01, 1.1)] * 5, "B": [(0.02, 1.5)] * 4 + [(0.005, 1.5)],
               "DFL (γ=2)": [(0.03, 0.9)] * 5})


def test_a_claim_holds_with_four_of_five_seeds_and_says_so():
    row = judge(Claim("P", "A below B", "A", "B", "ece"), FIVE)
    assert row["verdict"] == "holds"
    assert row["evidence (means over seeds)"] == "A 1.00 vs B 1.70 %; 4/5 seeds agree"


def test_the_reverse_claim_does_not_hold():
    assert judge(Claim("P", "B below A", "B", "A", "ece"), FIVE)["verdict"] == "does not hold"


def test_a_family_name_finds_the_tuned_method_and_a_missing_column_is_na():
    row = judge(Claim("P", "A below DFL", "A", "DFL", "ece"), FIVE)
    assert row["verdict"] == "holds" and "vs DFL (γ=2) 3.00 %" in row["evidence (means over seeds)"]
    assert judge(Claim("P", "OOD", "A", "B", "auroc_mnist"), FIVE)["verdict"] == "n/a"


def test_closer_to_one_compares_distances_and_shows_the_temperatures():
    row = judge(Claim("P", "A's T closer to 1", "A", "B", "temperature", closer_to_one=True, unit=""),
                FIVE)
    assert row["verdict"] == "holds"
    assert row["evidence (means over seeds)"] == (
        "temperature: A 1.10 vs B 1.50 (compared: A 0.10 vs B 0.50); 5/5 seeds agree")
    neutral = judge(Claim("P", "B over-confident", "B", None, "temperature", lower=False, unit=""), FIVE)
    assert neutral["verdict"] == "holds" and "the neutral T 1.00" in neutral["evidence (means over seeds)"]


def test_two_columns_of_one_method_with_renamed_sides():
    frame = FIVE.assign(ece_ts=FIVE["ece"] + 0.001)
    row = judge(Claim("P", "FTS below TS", "A", "A", "ece", other_column="ece_ts", names=("FTS", "TS")),
                frame)
    assert row["evidence (means over seeds)"] == "FTS 1.00 vs TS 1.10 %; 5/5 seeds agree"


def test_a_family_that_names_several_methods_is_refused():
    frame = runs(**{"DFL (γ=2)": [(0.01, 1.0)] * 3, "DFL (γ=5)": [(0.02, 1.0)] * 3, "A": [(0.0, 1)] * 3})
    with pytest.raises(ValueError, match="names several methods"):
        values_of(frame, "DFL", "ece")


@pytest.fixture(scope="module")
def both_regimes():
    return {name: what_holds(select_runs(REPO / f"configs/{name}_cpu.yaml"))
            for name in ("fashion_mnist", "mnist1d")}


def test_every_claim_is_judged_on_the_committed_runs(both_regimes):
    for table in both_regimes.values():
        assert len(table) == len(CLAIMS) == 29
        assert set(table["verdict"]) <= {"holds", "does not hold", "inconclusive", "n/a"}
    # MNIST-1D has no out-of-distribution sets: exactly the four OOD claims are n/a there
    assert (both_regimes["mnist1d"]["verdict"] == "n/a").sum() == 4
    assert (both_regimes["fashion_mnist"]["verdict"] == "n/a").sum() == 0


def test_agreement_and_numbered_table(both_regimes):
    both = agreement(both_regimes)
    assert claims_in(both, "confirmed in both") >= {"CE is over-confident: its optimal T > 1"}
    assert len(claims_in(both, "n/a in one regime")) == 4
    table = verdict_table(both_regimes)
    assert table.index.get_level_values("#").tolist() == list(range(1, 30))
    with pytest.raises(ValueError, match="two regimes"):
        agreement({"only": both_regimes["mnist1d"]})
    with pytest.raises(ValueError, match="different claims"):
        verdict_table({"a": both_regimes["mnist1d"], "b": both_regimes["mnist1d"].iloc[1:]})
