"""calibnb.runs: atomic artifacts, run names, sweeps that skip finished runs, results tables."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from calibnb import runs
from calibnb.runs.results import UnfinishedRunsWarning
from calibnb.__main__ import main as cli

TOY = Path(__file__).parent / "data" / "toy_run.md"


# -- atomic writes -------------------------------------------------------------------------


def test_atomic_write_leaves_old_file_and_no_temp_on_failure(tmp_path):
    target = tmp_path / "metrics.json"
    runs.write_json(target, {"ece": 0.1})
    with pytest.raises(RuntimeError):
        with runs.atomic_path(target) as tmp:
            tmp.write_text("{half")
            raise RuntimeError("killed mid-write")
    assert json.loads(target.read_text()) == {"ece": 0.1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_write_json_refuses_nan(tmp_path):
    with pytest.raises(ValueError):
        runs.write_json(tmp_path / "m.json", {"ece": float("nan")})
    assert list(tmp_path.iterdir()) == []


def test_logits_round_trip_as_float16(tmp_path):
    logits = np.array([[1.0, -2.5, 3.25], [0.1, 0.2, 0.3]])
    runs.save_logits(tmp_path / "l.npz", logits, [2, 0])
    with np.load(tmp_path / "l.npz") as data:
        assert data["logits"].dtype == np.float16 and data["labels"].dtype == np.int64
    back, labels = runs.load_logits(tmp_path / "l.npz")
    np.testing.assert_allclose(back, logits.astype(np.float16).astype(np.float64))
    assert labels.tolist() == [2, 0]
    with pytest.raises(ValueError, match="overflow float16"):
        runs.save_logits(tmp_path / "big.npz", [[1e6, 0.0]], [0])
    with pytest.raises(ValueError, match="labels"):
        runs.save_logits(tmp_path / "bad.npz", [[1.0, 0.0]], [0, 1])


# -- names and grids -----------------------------------------------------------------------


def test_run_name_is_readable_stable_and_ignores_execution_keys():
    params = {"dataset": "cifar10", "model": "resnet50", "loss": "focal_loss", "gamma": 3, "seed": 2}
    name = runs.run_name(params)
    assert name.startswith("cifar10-resnet50-focal_loss-") and name.endswith("-seed2")
    assert runs.run_name({**params, "device": "cuda", "out_dir": "/x"}) == name
    assert runs.run_name(dict(reversed(params.items()))) == name
    assert runs.run_name({**params, "gamma": 5}) != name
    assert runs.run_name({"seed": 1}).startswith("run-")
    assert runs.run_name({**params, "gamma": 3.0}) == name  # numbers compare by value


def test_equal_runs_get_equal_names_however_they_are_spelled():
    """Issue 25: the same run landed in run-44136fa3, run-a4bbadc1-seed1 or cross_entropy-ca1ba14e
    depending on which defaults were spelled out; gamma and loss_params.gamma hashed differently."""
    notebook = Path(__file__).parents[1] / "nbs" / "train.md"

    def name(params):
        return runs.run_name(*runs.canonical_parameters(notebook, params))

    default = name({})
    assert default == name({"seed": 1}) == name({"loss": "cross_entropy", "dataset": "fashion-mnist", "device": "cuda"})
    assert default.startswith("fashion_mnist-mlp-cross_entropy-") and default.endswith("-seed1")
    focal = name({"loss": "focal_loss", "gamma": 3})
    assert focal == name({"loss": "focal_loss", "loss_params": {"gamma": 3.0}}) == name(
        {"loss": "focal_loss", "gamma": 3, "loss_params": {"gamma": 3}})
    assert len({default, focal, name({"loss": "focal_loss", "gamma": 5}), name({"seed": 2})}) == 4
    with pytest.raises(ValueError, match=r"gamma is given twice with two values: gamma = 3 and loss_params.gamma = 5"):
        name({"loss": "focal_loss", "gamma": 3, "loss_params": {"gamma": 5}})


def test_expand_grid_pools_products_and_drops_duplicates(tmp_path):
    config = {
        "notebook": str(TOY),
        "out_root": str(tmp_path),
        "params": {"epochs": 2},
        "grid": [
            {"loss": ["cross_entropy", "focal_loss"], "seed": [1, 2]},
            {"loss": "cross_entropy", "seed": 1},  # already in the first grid
            {"loss": "dual_focal_loss", "gamma": 5, "seed": [1]},
        ],
    }
    expanded = runs.expand_grid(config)
    assert len(expanded) == 5
    assert all(p["epochs"] == 2 for p in expanded)
    # canonical: the notebook's declared defaults filled in
    assert expanded[-1] == {"dataset": "toy", "model": "none", "fail": False, "epochs": 2,
                            "loss": "dual_focal_loss", "gamma": 5, "seed": 1}


@pytest.mark.parametrize(
    "grid, message",
    [({}, "non-empty mapping"), ({"seed": []}, "empty list"), ([1], "non-empty mapping")],
)
def test_bad_grids_are_rejected(tmp_path, grid, message):
    config = {"notebook": str(TOY), "out_root": str(tmp_path), "grid": grid}
    with pytest.raises(ValueError, match=message):
        runs.expand_grid(config)


def test_config_paths_resolve_against_the_repository_root(tmp_path):
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "s.yaml"
    path.write_text(yaml.safe_dump({"notebook": "nbs/train.md", "out_root": "runs/s", "grid": {"seed": 1}}))
    config = runs.load_config(path)
    assert config["notebook"] == str(tmp_path / "nbs" / "train.md")
    assert config["out_root"] == str(tmp_path / "runs" / "s")
    with pytest.raises(ValueError, match="missing the key 'grid'"):
        runs.expand_grid({"notebook": "x", "out_root": "y"})
    with pytest.raises(ValueError, match="executor name must be one of"):
        runs.sweep({"notebook": str(TOY), "out_root": str(tmp_path), "grid": {"seed": 1}}, executor="cloud")


# -- results -------------------------------------------------------------------------------


def _fake_run(folder: Path, params: dict, ece: float, finished: bool = True):
    folder.mkdir(parents=True)
    (folder / "params.yaml").write_text(yaml.safe_dump({**params, "device": "cpu"}))
    if finished:
        stage = {m: ece for m in runs.METRICS}
        runs.write_json(folder / "metrics.json", {
            "val": stage, "test": {"pre": stage, "ts": {**stage, "ece": ece / 2}, "fts": stage},
            "temperature": 1.7, "fts": {"gamma": 0.5, "temperature": 1.1}, "gammas": []})


def test_load_results_has_one_row_per_finished_run(tmp_path):
    _fake_run(tmp_path / "a", {"dataset": "d", "model": "m", "loss": "focal_loss", "gamma": 3, "seed": 1}, 0.04)
    _fake_run(tmp_path / "b", {"dataset": "d", "model": "m", "loss": "cross_entropy", "seed": 1}, 0.08)
    _fake_run(tmp_path / "c", {"dataset": "d", "model": "m", "loss": "cross_entropy", "seed": 2}, 0.1, finished=False)
    with pytest.warns(UnfinishedRunsWarning, match=r"1 unfinished run folder\(s\) below .* left out .*: c"):
        table = runs.load_results(tmp_path)
    assert table.attrs["unfinished"] == [str(tmp_path / "c")]  # reported, not half-read
    table = table.sort_values("loss")
    assert table["loss"].tolist() == ["cross_entropy", "focal_loss"]
    assert table["ece"].tolist() == [0.08, 0.04]
    assert table["ece_ts"].tolist() == [0.04, 0.02]
    assert table["temperature"].tolist() == [1.7, 1.7]
    assert table["fts_gamma"].tolist() == [0.5, 0.5]
    assert "device" not in table.columns and "gamma" in table.columns
    assert runs.load_results(tmp_path / "a").shape[0] == 1
    with pytest.raises(ValueError, match="not a folder"):
        runs.load_results(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    assert runs.load_results(tmp_path / "empty").empty


# -- executing notebooks -------------------------------------------------------------------


@pytest.mark.slow
def test_execute_writes_a_complete_run_folder(tmp_path):
    folder = runs.execute(TOY, {"seed": 3, "gamma": 2.0}, tmp_path / "run")
    assert sorted(p.name for p in folder.iterdir()) == [
        "logits_test.npz", "metrics.json", "params.yaml", "toy_run.ipynb", "version.json"]
    params = yaml.safe_load((folder / "params.yaml").read_text())
    # the canonical parameters; the folder's location is not a parameter
    assert params == {"dataset": "toy", "model": "none", "loss": "cross_entropy", "gamma": 2.0, "seed": 3,
                      "fail": False, "epochs": 1}
    assert json.loads((folder / "metrics.json").read_text())["test"]["pre"]["ece"] == 0.05
    assert "calibnb" in json.loads((folder / "version.json").read_text())


@pytest.mark.slow
def test_a_failing_run_keeps_its_notebook_and_is_unfinished(tmp_path):
    with pytest.raises(Exception, match="asked to fail"):
        runs.execute(TOY, {"fail": True}, tmp_path / "run")
    assert (tmp_path / "run" / "failed.ipynb").exists()
    assert not runs.is_finished(tmp_path / "run")
    assert not [p for p in (tmp_path / "run").iterdir() if ".tmp" in p.name]


@pytest.mark.slow
def test_sweep_skips_finished_runs_and_survives_a_failure(tmp_path):
    config = {"notebook": str(TOY), "out_root": str(tmp_path), "grid": {"seed": [1, 2], "fail": [False, True]}}
    with pytest.raises(RuntimeError, match="2 of 4 runs failed"):
        runs.sweep(config)
    finished = [folder for _, folder, done in runs.plan(config) if done]
    assert len(finished) == 2
    stamps = {f: (f / "metrics.json").stat().st_mtime_ns for f in finished}
    config["grid"]["fail"] = [False]  # the same finished runs, nothing left to do
    runs.sweep(config)
    assert {f: (f / "metrics.json").stat().st_mtime_ns for f in finished} == stamps
    assert len(runs.load_results(tmp_path)) == 2


@pytest.mark.slow
def test_sweep_through_submitit_local_processes(tmp_path):
    config = {"notebook": str(TOY), "out_root": str(tmp_path / "runs"), "grid": {"seed": [4, 5]}}
    folders = runs.sweep(config, executor="local", timeout_min=5)
    assert all(runs.is_finished(f) for f in folders)
    assert sorted(runs.load_results(tmp_path / "runs")["seed"]) == [4, 5]


@pytest.mark.slow
def test_cli_run_and_sweep(tmp_path, capsys):
    assert cli(["run", str(TOY), "-p", "seed", "7", "-p", "gamma", "0.5", "--root", str(tmp_path)]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder.parent == tmp_path.resolve() and folder.name.endswith("-seed7")
    assert yaml.safe_load((folder / "params.yaml").read_text())["gamma"] == 0.5
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({"notebook": str(TOY), "out_root": str(tmp_path / "s"), "grid": {"seed": [1]}}))
    assert cli(["sweep", str(config), "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("todo")
    assert cli(["sweep", str(config)]) == 0
    assert runs.is_finished(runs.plan(runs.load_config(config))[0][1])


def _candidates(root: Path) -> None:
    """DFL with gamma 1 (better on validation on average) and 2, two seeds; CE once."""
    for gamma, seed, val in ((1, 1, 0.02), (1, 2, 0.04), (2, 1, 0.01), (2, 2, 0.06)):
        _fake_run(root / f"dfl{gamma}-{seed}", {"dataset": "d", "model": "m", "loss": "dual_focal_loss",
                                                "gamma": gamma, "seed": seed}, val)
    _fake_run(root / "ce", {"dataset": "d", "model": "m", "loss": "cross_entropy", "seed": 1}, 0.09)


def test_select_by_validation_keeps_the_setting_with_the_best_mean(tmp_path):
    _candidates(tmp_path)
    table = runs.load_results(tmp_path)
    assert table["val_ece"].notna().all()
    chosen = runs.select_by_validation(table, "loss", ["gamma"])
    # gamma 1: mean 0.03 < gamma 2: mean 0.035, although gamma 2 has the single best run
    assert sorted(chosen.loc[chosen["loss"] == "dual_focal_loss", "gamma"]) == [1, 1]
    assert chosen["loss"].tolist().count("cross_entropy") == 1  # a lone setting passes through
    untouched = runs.select_by_validation(table, "loss", ["gamma"], among=["focal_loss"])
    assert len(untouched) == len(table)  # dual focal loss is not among the tuned losses
    with pytest.raises(ValueError, match="no column 'lam'"):
        runs.select_by_validation(table, "loss", ["lam"])


def test_prune_unselected_keeps_only_the_validation_part(tmp_path):
    _candidates(tmp_path)
    for folder in tmp_path.iterdir():
        for part in ("val", "test", "ood_mnist"):
            runs.save_logits(folder / f"logits_{part}.npz", np.zeros((3, 2)), np.zeros(3))
    pruned = runs.prune_unselected(tmp_path, "loss", ["gamma"])
    assert sorted(p.name for p in pruned) == ["dfl2-1", "dfl2-2"]
    assert sorted(p.name for p in (tmp_path / "dfl2-1").iterdir()) == ["logits_val.npz", "metrics.json", "params.yaml"]
    assert sorted(json.loads((tmp_path / "dfl2-1" / "metrics.json").read_text())) == ["files", "gammas", "sha256", "val"]  # sealed again
    assert (tmp_path / "dfl1-1" / "logits_test.npz").exists()
    table = runs.load_results(tmp_path)  # pruned runs are still finished, with validation metrics only
    assert len(table) == 5 and table.loc[table["gamma"] == 2, "ece"].isna().all()
    assert runs.prune_unselected(tmp_path, "loss", ["gamma"]) == pruned  # the selection is unchanged


def test_load_results_reads_ood_auroc(tmp_path):
    _fake_run(tmp_path / "a", {"loss": "cross_entropy", "seed": 1}, 0.05)
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    metrics["ood"] = {"mnist": {"pre": 0.9, "ts": 0.92, "fts": 0.93}}
    runs.write_json(tmp_path / "a" / "metrics.json", metrics)
    row = runs.load_results(tmp_path).iloc[0]
    assert (row["auroc_mnist"], row["auroc_mnist_ts"], row["auroc_mnist_fts"]) == (0.9, 0.92, 0.93)
