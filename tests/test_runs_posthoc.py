"""The post-hoc study engine (calibnb.runs.posthoc) and the committed study it produced."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from calibnb.data import list_predictions
from calibnb.runs.posthoc import METHODS, REFITTED_ITERATIVELY, calibration_split, load_study, posthoc, posthoc_run, replay_run
from conftest import REPO

STUDY = REPO / "configs" / "studies" / "cifar_posthoc.yaml"
COMMITTED = sorted((REPO / "results" / "cifar_posthoc").glob("*/split-*/metrics.json"))
REPORT_KEYS = {"ece", "adaece", "classwise_ece", "mce", "nll", "brier", "error", "smooth_ece",
               "debiased_ece", "ece_sweep"}


def test_the_split_is_the_issue_rule_and_halves_the_test_set():
    calibrate, test = calibration_split(3)
    perm = np.random.default_rng(3).permutation(10_000)
    assert np.array_equal(calibrate, perm[:5000]) and np.array_equal(test, perm[5000:])
    assert np.array_equal(np.sort(np.concatenate([calibrate, test])), np.arange(10_000))
    assert not np.array_equal(calibration_split(1)[0], calibration_split(2)[0])


def test_the_study_file_resolves_against_the_repository_and_refuses_mistakes(tmp_path):
    study = load_study(STUDY)
    assert study["out_root"] == REPO / "results" / "cifar_posthoc"
    assert study["networks"] == list(list_predictions()) and study["splits"] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match=r"unknown keys \['split'\]"):
        load_study({"out_root": str(tmp_path), "split": [1]})
    with pytest.raises(ValueError, match=r"networks \['cifar10-resnet'\]"):
        load_study({"out_root": str(tmp_path), "networks": ["cifar10-resnet"]})
    with pytest.raises(ValueError, match="out_root is required"):
        load_study({"splits": [1]})


def test_the_command_line_prints_an_error_for_a_bad_study(tmp_path):
    bad = tmp_path / "study.yaml"
    bad.write_text("out_root: x\nsplit: [1]\n")
    done = subprocess.run([sys.executable, "-m", "calibnb", "posthoc", str(bad)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr


@pytest.mark.slow
def test_one_run_writes_every_method_and_resumes(tmp_path):
    [path] = posthoc({"out_root": str(tmp_path), "networks": ["cifar10-lenet-5"], "splits": [2]}, progress=False)
    metrics = json.loads(path.read_text())
    assert path == tmp_path / "cifar10-lenet-5" / "split-2" / "metrics.json"
    assert set(metrics["test"]) == {"pre", *METHODS}
    assert all(set(report) == REPORT_KEYS for report in metrics["test"].values())
    assert metrics["params"]["fts"].keys() == {"gamma", "temperature"}
    assert (metrics["n_calibration"], metrics["n_test"]) == (5000, 5000)
    assert metrics["test"]["ts"]["ece"] < metrics["test"]["pre"]["ece"]
    mtime = path.stat().st_mtime_ns
    assert posthoc({"out_root": str(tmp_path), "networks": ["cifar10-lenet-5"], "splits": [2]},
                   progress=False) == [path]
    assert path.stat().st_mtime_ns == mtime  # finished: not recomputed


def test_the_committed_study_is_complete():
    names = {(p.parent.parent.name, p.parent.name) for p in COMMITTED}
    assert names == {(n, f"split-{s}") for n in list_predictions() for s in range(1, 6)}


@pytest.mark.slow
@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name}")
def test_committed_metrics_are_recomputed_from_the_shipped_logits(path):
    metrics = json.loads(path.read_text())
    replayed = replay_run(metrics)
    assert replayed.keys() == metrics["test"].keys()
    for method, report in metrics["test"].items():
        # an L-BFGS-B refit agrees to its tolerance: 1e-4 relative on the smooth scores, and up to
        # ten of 5,000 samples changing bin or (at a near-tie) predicted class
        rel, abs_ = (1e-4, 2e-3) if method in REFITTED_ITERATIVELY else (1e-9, 1e-12)
        for key, value in report.items():
            assert replayed[method][key] == pytest.approx(value, rel=rel, abs=abs_), (method, key)


@pytest.mark.slow
def test_parallel_runs_write_exactly_what_sequential_runs_write(tmp_path):
    """``jobs=2`` (two spawned processes) gives byte for byte what one process writes, and both agree
    with the committed study up to the last bits (another CPU's SIMD paths round differently: on
    an AMD EPYC against the machine that committed them, ulps in a third of the numbers)."""
    study = {"networks": ["cifar10-lenet-5", "cifar100-lenet-5"], "splits": [3]}
    paths = posthoc({**study, "out_root": str(tmp_path / "two")}, progress=False, jobs=2)
    assert [p.relative_to(tmp_path / "two").parts[0] for p in paths] == study["networks"]  # in study order
    for path in paths:
        relative = path.relative_to(tmp_path / "two")
        torch.set_num_threads(1)  # as each worker runs
        sequential = posthoc_run(relative.parts[0], 3, tmp_path / "one")
        assert path.read_bytes() == sequential.read_bytes()
        committed = json.loads((REPO / "results/cifar_posthoc" / relative).read_text())
        written = json.loads(path.read_text())
        for method, report in committed["test"].items():
            assert written["test"][method] == pytest.approx(report, rel=1e-9, abs=1e-12), method
    with pytest.raises(ValueError, match="jobs"):
        posthoc({**study, "out_root": str(tmp_path)}, jobs=0)
