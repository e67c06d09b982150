"""The post-hoc study read back and tabulated (calibnb.analysis.posthoc_tables), and the fitted
calibrators restored from a run's stored parameters (calibnb.runs.posthoc.restore)."""

import json

import numpy as np
import pandas as pd
import pytest

from calibnb.analysis.posthoc_tables import (METHOD_NAMES, differences, error_reduction, fts_table1_beside,
                                             gap_to_best, load_posthoc, method_table, network_label,
                                             paired_splits)
from calibnb.analysis.tables import BETTER
from calibnb.calibration import TemperatureScaling
from calibnb.runs.posthoc import probabilities_on_test, restore
from conftest import REPO

ROOT = REPO / "results/cifar_posthoc"


@pytest.fixture(scope="module")
def study():
    return load_posthoc(ROOT)


def made_up(values: dict) -> pd.DataFrame:
    """A study of one network: method → per-split (ece, adaece, nll)."""
    return pd.DataFrame([{"network": "cifar10-lenet-5", "dataset": "cifar10", "split": s, "method": m,
                          "ece": e, "adaece": a, "nll": n, "temperature": 1.0, "gamma": np.nan}
                         for m, rows in values.items() for s, (e, a, n) in enumerate(rows, start=1)])


def test_the_committed_study_is_complete(study):
    assert study.groupby(["network", "split"]).size().eq(len(METHOD_NAMES)).all()
    assert len(study) == 5 * 5 * len(METHOD_NAMES)
    assert set(study["method"]) == set(METHOD_NAMES)
    assert study.loc[study["method"] == "fts", "gamma"].notna().all()


def test_network_labels():
    assert network_label("cifar100-densenet-bc-100") == "DenseNet-BC-100 C100"
    assert network_label("cifar10-lenet-5") == "LeNet-5 C10"
    with pytest.raises(ValueError, match="not a published network"):
        network_label("cifar10-resnet-50")


def test_method_table_marks_the_best_calibrator_not_the_uncalibrated():
    study = made_up({"pre": [(0.001, 0.1, 1)] * 2, "ts": [(0.02, 0.1, 1), (0.04, 0.1, 1)],
                     "fts": [(0.01, 0.1, 1), (0.01, 0.1, 1)]})
    table = method_table(study, "ece")
    assert table.index.tolist() == ["uncalibrated", "TS (ECE, 0.1..10)", "FTS (ECE_EM)"]
    assert table["LeNet-5 C10"].tolist() == ["0.10 ± 0.00", "3.00 ± 1.41", "1.00 ± 0.00" + BETTER]
    assert method_table(study, "nll", scale=1.0).iloc[0, 0] == "1.00 ± 0.00"


def test_paired_splits_and_differences_are_split_by_split():
    study = made_up({"ts": [(0.02, 0.02, 1.0)] * 5,
                     "fts": [(0.01, 0.01, 1.0)] * 4 + [(0.03, 0.03, 1.0)]})
    d = differences(study, "fts", "ts", "ece")
    np.testing.assert_allclose(d["cifar10-lenet-5"], [-0.01] * 4 + [0.01])
    table = paired_splits(study, "fts", "ts", ("ece", "nll"))
    assert table.loc["ece", "LeNet-5 C10"] == "4/5: holds"
    assert table.loc["nll", "LeNet-5 C10"] == "0/5: inconclusive"  # all ties


def test_error_reduction(study):
    fewer = error_reduction(study, "vector")
    n = "cifar100-lenet-5"
    runs = study[study["network"] == n].pivot_table(index="split", columns="method", values="error")
    assert fewer[n] == pytest.approx(100 * (runs["pre"] - runs["vector"]).mean())
    assert (error_reduction(study, "ts") == 0).all()  # a temperature keeps the predicted class
    with pytest.raises(ValueError, match="not in the study"):
        error_reduction(study, "vectr")


def test_gap_to_best(study):
    gap = gap_to_best(study, "ts_em", "adaece")
    means = study.groupby(["network", "method"])["adaece"].mean().unstack().drop(columns="pre")
    n = "cifar100-wideresnet-16-4"
    assert gap[n] == pytest.approx(means.loc[n, "ts_em"] - means.loc[n].min())
    assert (gap >= 0).all()
    best = means.loc[n].idxmin()
    assert gap_to_best(study, best)[n] == 0
    with pytest.raises(ValueError, match="not in the study"):
        gap_to_best(study, "pre")


def test_fts_table1_beside_sets_the_papers_rows_beside_ours(study):
    table = fts_table1_beside(study)
    paper10 = table.loc[("cifar10", "paper: ResNet-50, 95.0 %")]
    assert paper10["ECE_EM TS (T)"] == "1.03 (1.72)" and paper10["ECE_EM FTS (γ, T)"] == "0.71 (1, 2.36)"
    assert paper10["NLL FTS (γ, T)"] == "0.17 (1, 2.20)"
    ours = table.loc[("cifar100", "ours: WRN-16-4, 75.3 %")]
    runs = study[study["network"] == "cifar100-wideresnet-16-4"]
    ts_em = runs.loc[runs["method"] == "ts_em", "adaece"].mean()
    assert ours["ECE_EM TS (T)"].startswith(f"{100 * ts_em:.2f} (")
    assert ours["verdict, splits"].startswith("holds: 5/5")
    assert len(table) == 2 + 5


def test_restored_calibrators_reproduce_the_stored_test_metrics():
    metrics = json.loads((ROOT / "cifar10-lenet-5/split-2/metrics.json").read_text())
    from calibnb.metrics import ece
    for method in ("pre", "ts", "ts_em", "fts", "ets"):
        probs, labels = probabilities_on_test(metrics, method)
        assert ece(probs, labels) == pytest.approx(metrics["test"][method]["ece"], abs=1e-12)
    ts = restore("ts", {"temperature": 1.5})
    assert isinstance(ts, TemperatureScaling) and ts.temperature_ == 1.5
    with pytest.raises(ValueError, match="cannot be restored"):
        restore("isotonic", {})


def test_a_corrupt_study_file_is_named(tmp_path):
    bad = tmp_path / "cifar10-lenet-5" / "split-1" / "metrics.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="split-1/metrics.json"):
        load_posthoc(tmp_path)
    with pytest.raises(ValueError, match="holds no"):
        load_posthoc(tmp_path / "cifar10-lenet-5")
    with pytest.raises(ValueError, match="is not a folder"):
        load_posthoc(tmp_path / "missing")


def test_estimator_agreement_ranks_the_calibrators_by_two_estimators():
    from calibnb.analysis.posthoc_tables import estimator_agreement
    study = made_up({"pre": [(0.5, 0.5, 1)], "ts": [(0.01, 0.03, 1)], "fts": [(0.02, 0.02, 1)],
                     "ets": [(0.03, 0.01, 1)]})
    row = estimator_agreement(study).loc["LeNet-5 C10"]
    assert row.to_dict() == {"Spearman ρ": -1.0, "best by ece": "TS (ECE, 0.1..10)",
                             "best by adaece": "ensemble TS"}


def test_paired_verdicts_network_summary_and_run_reading(study):
    from calibnb.analysis.posthoc_tables import load_run, network_summary, paired_verdicts
    v = paired_verdicts(study, "fts", "ts_em", "adaece")
    d = differences(study, "fts", "ts_em", "adaece")
    assert list(v.index) == list(d.columns)
    n = "cifar100-wideresnet-16-4"
    assert v.loc[n, "difference"] == pytest.approx(d[n].mean())
    assert (v.loc[n, "verdict"], v.loc[n, "agree"], v.loc[n, "splits"]) == ("holds", 5, 5)
    summary = network_summary(study)
    pre = study[(study["network"] == n) & (study["method"] == "pre")]
    assert summary.loc["WRN-16-4 C100", "ECE (%)"] == pytest.approx(100 * pre["ece"].mean())
    assert summary["classes"].tolist() == [10, 10, 100, 100, 100]
    run = load_run(ROOT, n, 3)
    assert (run["network"], run["split"]) == (n, 3)
    with pytest.raises(ValueError, match="split-9/metrics.json"):
        load_run(ROOT, n, 9)


def test_the_fts_valley_is_the_best_temperature_per_gamma_and_its_slope():
    from calibnb.calibration import FocalTemperatureScaling
    from calibnb.data import load_predictions
    from calibnb.runs.posthoc import calibration_split
    from calibnb.analysis.posthoc_tables import fts_valley, valley_slope
    valley = fts_valley("cifar10-lenet-5", split=2)
    z, y = load_predictions("cifar10-lenet-5")
    calibrate, _ = calibration_split(2)
    fts = FocalTemperatureScaling().fit(z[calibrate], y[calibrate])
    for i, gamma in enumerate(fts.gammas_):  # the first minimum over T, per γ
        assert valley[gamma] == fts.temperatures_[np.argmin(fts.scores_[i])]
    assert valley[fts.gamma_] == fts.temperature_
    line = pd.Series([1.0, 2.0, 4.0], index=[0.0, 1.0, 3.0])
    assert valley_slope(line) == pytest.approx(1.0)
