"""The committed results are what their logits say: every ``metrics.json`` is recomputed.

``results/`` holds the finished runs of the sweep files in ``configs/`` whose ``out_root`` lies
there. Each run's ``metrics.json`` is recomputed from its committed float16 logits with
:func:`calibnb.train.evaluate_logits` (temperature scaling and focal temperature scaling refitted
on the validation logits, every metric, out-of-distribution AUROC) and must agree; runs pruned by
the validation selection must be exactly the ones the selection rejects, with their validation
metrics intact. The fast suite checks one run per loss; the slow suite checks every run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy.special import softmax

from calibnb.atomic import SEAL_KEYS
from calibnb.metrics import calibration_report
from calibnb.runs import load_config, load_logits, load_results, plan, select_by_validation
from calibnb.runs.results import run_file
from calibnb.runs.schemas import read_run_metrics
from calibnb.train import evaluate_logits

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [p for p in sorted((ROOT / "configs").glob("*.yaml"))
           if Path(load_config(p)["out_root"]).resolve().is_relative_to(ROOT / "results")]
# training runs (the post-hoc study's runs have no logits of their own: tests/test_runs_posthoc.py)
RUNS = sorted(p.parent for p in (ROOT / "results").rglob("metrics.json") if (p.parent / "logits_val.npz").exists())


def _close(stored, recomputed, where: str = "", n: int = 0) -> None:
    """Nested dicts/lists equal up to float rounding (a CPU with other SIMD paths may differ by ulps).

    A plain ``argmax`` used to turn last-bit noise into a changed prediction (float16 logits tie
    between the top two classes, and focal temperature scaling returns the two equal probabilities
    with a CPU-dependent last bit): :func:`calibnb.metrics.toplabel.predicted_class` now gives
    near-ties to the first class, and the results were recomputed with it. Three estimators can
    still order ulps differently: the adaptive and the debiased ECE sort the confidences into
    equal-mass bins and the smooth ECE searches a bandwidth, so two test examples with equal
    confidences but different labels on either side of a bin edge may swap on another CPU. One
    example of ``n`` moves the adaptive ECE by 1/``n`` (allowed: two), the debiased ECE, a
    difference of squares, by a few 1e-4, the smooth ECE by a relative 1e-4 (seen on an AMD EPYC
    against the machine that first wrote the results, before the tie rule). Every other number
    must agree to 1e-7.
    """
    if isinstance(stored, dict):
        assert isinstance(recomputed, dict) and sorted(stored) == sorted(recomputed), where
        for key in stored:
            _close(stored[key], recomputed[key], f"{where}/{key}", n)
    elif isinstance(stored, float) or isinstance(recomputed, float):
        estimator = "/".join(where.split("/")[-2:])  # e.g. "fts/adaece"
        rel_tol = 2e-4 if estimator == "fts/smooth_ece" else 1e-7
        abs_tol = {"fts/adaece": 2.0 / max(n, 1), "fts/debiased_ece": 5e-4}.get(estimator, 1e-12)
        assert math.isclose(stored, recomputed, rel_tol=rel_tol, abs_tol=abs_tol), f"{where}: {stored} != {recomputed}"
    else:
        assert stored == recomputed, where


def _check_run(run_dir: Path) -> None:
    stored = read_run_metrics(run_dir / "metrics.json")  # its seal checked
    for artifact in run_dir.iterdir():  # and every file it vouches for
        run_file(run_dir, artifact.name)
    assert sorted(stored["files"]) == sorted(p.name for p in run_dir.iterdir() if p.name not in ("metrics.json", "version.json"))
    val_logits, val_labels = load_logits(run_dir / "logits_val.npz")
    if "test" not in stored:  # pruned by the validation selection: only its validation part is kept
        assert sorted(p.name for p in run_dir.glob("logits_*.npz")) == ["logits_val.npz"]
        _close(stored["val"], json.loads(json.dumps(calibration_report(softmax(val_logits, axis=1), val_labels))))
        return
    test_logits, test_labels = load_logits(run_dir / "logits_test.npz")
    shifted = {p.stem.removeprefix("logits_ood_"): load_logits(p)[0] for p in run_dir.glob("logits_ood_*.npz")}
    assert sorted(shifted) == sorted(stored.get("ood", {}))
    recomputed = evaluate_logits(val_logits, val_labels, test_logits, test_labels, ood_logits=shifted)
    _close({k: v for k, v in stored.items() if k not in ("gammas", "adafocal_updates", *SEAL_KEYS)},
           json.loads(json.dumps(recomputed)), run_dir.name, n=len(test_labels))


def _one_per_loss() -> list[Path]:
    """One complete run per (results folder, loss), smallest folders first, at most one run
    per loss overall plus the first run of every other folder: every loss and every artifact
    kind (out-of-distribution logits included) is covered, at the cost of the cheapest fits."""
    folders = sorted({run.parent for run in RUNS},
                     key=lambda f: sum(p.stat().st_size for p in f.glob("*/logits_val.npz")))
    seen, chosen = set(), []
    for folder in folders:
        complete = [r for r in RUNS if r.parent == folder and (r / "logits_test.npz").exists()]
        for run_dir in complete:
            loss = run_dir.name.split("-")[2]
            if loss not in seen or run_dir == complete[0]:
                seen.add(loss)
                chosen.append(run_dir)
    return chosen


def test_results_exist_for_every_config():
    assert CONFIGS, "no sweep file writes into results/"
    for config in CONFIGS:
        unfinished = [folder.name for _, folder, done in plan(config) if not done]
        assert not unfinished, f"{config.name}: unfinished runs {unfinished[:3]}"


@pytest.mark.parametrize("run_dir", _one_per_loss(), ids=lambda p: p.name)
def test_one_run_per_loss_reproduces_its_metrics(run_dir):
    _check_run(run_dir)


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", RUNS, ids=lambda p: p.name)
def test_every_run_reproduces_its_metrics(run_dir):
    _check_run(run_dir)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_pruned_runs_are_exactly_those_the_selection_rejects(config):
    spec = load_config(config)
    table = load_results(spec["out_root"])
    pruned = set(table.loc[table["ece"].isna(), "run_dir"])
    if "select" not in spec:
        assert not pruned
        return
    selected = set(select_by_validation(table, **spec["select"])["run_dir"])
    assert pruned == set(table["run_dir"]) - selected
    assert table.loc[table["run_dir"].isin(selected), "ece"].notna().all()
