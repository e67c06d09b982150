"""Issue 25: a run folder, a checkpoint, a configuration or a sweep never gives a wrong answer
silently, and no command loses a finished run. Each test is one case seen on the earlier main."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from calibnb import runs
from calibnb.__main__ import main as cli
from calibnb.atomic import seal
from calibnb.runs.record import folder_lock, run_folder
from calibnb.runs.strict_yaml import load_yaml, read_yaml
from calibnb.train import TrainConfig, train
from calibnb.train import loop as train_loop

REPO = Path(__file__).resolve().parents[1]
TOY = Path(__file__).parent / "data" / "toy_run.md"
TRAIN = REPO / "nbs" / "train.md"
TINY = dict(train_size=300, val_size=200, epochs=2, model_params={"hidden": [16]}, progress=False)


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


# -- the strict configuration reader ----------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("010", 10), ("2:30", "2:30"), ("yes", "yes"), ("on", "on"), ("0o17", 15), ("0x1f", 31), ("1e3", 1000.0),
    ("1_000", "1_000"), ("2024-01-01", "2024-01-01"), ("true", True), ("~", None), (".inf", float("inf")),
])
def test_scalars_follow_yaml_1_2_not_1_1(text, value):
    """YAML 1.1 read -p seed 010 as 8 and -p epochs 2:30 as 150."""
    assert load_yaml(text, "-p x") == value


def test_duplicate_keys_and_aliases_are_refused_naming_the_source(tmp_path):
    with pytest.raises(ValueError, match=r"-y: line 1, column \d+: the key 'gamma' is given twice"):
        load_yaml("{gamma: 3, gamma: 5}", "-y")
    sweep = tmp_path / "s.yaml"
    sweep.write_text("notebook: x.md\nout_root: r\ngrid:\n  seed: [1]\n  seed: [2]\n")
    with pytest.raises(ValueError, match=rf"{sweep}: line 5, column 3: the key 'seed' is given twice \(first on line 4\)"):
        runs.load_config(sweep)


def test_a_billion_laughs_file_is_refused_in_milliseconds(tmp_path, capsys):
    """It took 64 s and 6 GB before: run naming serialised the expanded aliases."""
    bomb = tmp_path / "bomb.yaml"
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    assert cli(["run", str(TRAIN), "-f", str(bomb)]) == 2
    assert time.perf_counter() - started < 5  # the notebook's inspection included; the YAML itself < 1 ms
    assert "anchors and aliases" in error_line(capsys) and not (Path("runs").exists() and any(Path("runs").iterdir()))


def test_read_yaml_names_the_file_for_a_folder_or_a_list(tmp_path):
    with pytest.raises(ValueError, match=rf"{tmp_path}: not a file"):
        read_yaml(tmp_path)
    (tmp_path / "l.yaml").write_text("- 1\n")
    with pytest.raises(ValueError, match=r"l.yaml: must hold a mapping"):
        read_yaml(tmp_path / "l.yaml")


# -- a run folder is a record -----------------------------------------------------------------


def params_of(**given) -> tuple[dict, dict]:
    return runs.canonical_parameters(TRAIN, given)


def test_a_folder_holding_another_run_is_refused_and_left_as_it_was(tmp_path):
    """A rerun with γ = 3 into the γ = 5 folder used to rewrite params.yaml before failing."""
    folder = tmp_path / "X"
    with run_folder(folder, *params_of(loss="focal_loss", gamma=5)):
        (folder / "metrics.json").write_text("{}")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(ValueError, match=r"holds another run .*gamma: 5 -> 3\); use another folder, or --force"):
        with run_folder(folder, *params_of(loss="focal_loss", gamma=3)):
            pass
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    with run_folder(folder, *params_of(loss="focal_loss", loss_params={"gamma": 5.0}, device="cuda")):
        pass  # the same run, spelled otherwise and on another device: a rerun or a resume


def test_force_replaces_only_after_success_and_leaves_no_staging(tmp_path):
    folder = tmp_path / "X"
    with run_folder(folder, *params_of(seed=1)):
        (folder / "metrics.json").write_text('"old"')
    with pytest.raises(RuntimeError, match="the new run failed"):
        with run_folder(folder, *params_of(seed=2), force=True) as staging:
            assert staging != folder and staging.parent == folder.parent
            raise RuntimeError("the new run failed")
    assert (folder / "metrics.json").read_text() == '"old"' and yaml.safe_load((folder / "params.yaml").read_text())["seed"] == 1
    with run_folder(folder, *params_of(seed=2), force=True) as staging:
        (staging / "metrics.json").write_text('"new"')
    assert (folder / "metrics.json").read_text() == '"new"' and yaml.safe_load((folder / "params.yaml").read_text())["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X"]


def test_files_of_no_run_a_file_and_a_busy_folder_are_refused(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds files but no params.yaml: it is not a run folder"):
        with run_folder(tmp_path / "notes", *params_of()):
            pass
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        with run_folder(tmp_path / "file", *params_of()):
            pass
    with run_folder(tmp_path / "busy", *params_of()):
        with pytest.raises(ValueError, match="is in use by another process"):
            with folder_lock(tmp_path / "busy"):
                pass


def test_a_killed_runs_leftovers_are_removed_on_the_next_start(tmp_path):
    folder = tmp_path / "X"
    with run_folder(folder, *params_of()):
        pass
    (folder / ".train.abc123.tmp.ipynb").write_text("half")  # what SIGKILL leaves
    (folder / ".checkpoint.x1.tmp.pt").write_bytes(b"half")
    (tmp_path / ".X.staging-zz").mkdir()  # a --force run killed before its swap
    with run_folder(folder, *params_of()):
        assert sorted(p.name for p in folder.iterdir()) == ["params.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X"]


def test_a_replacement_killed_between_its_two_renames_gives_the_old_record_back(tmp_path):
    folder = tmp_path / "X"
    with run_folder(folder, *params_of()):
        (folder / "metrics.json").write_text('"old"')
    os.replace(folder, tmp_path / ".X.staging-replaced-q")
    with run_folder(folder, *params_of()):
        pass
    assert (folder / "metrics.json").read_text() == '"old"'


# -- checkpoints are tied to their run ----------------------------------------------------------


def test_a_checkpoint_of_another_run_or_past_the_last_epoch_is_refused(tmp_path, monkeypatch):
    """A cross-entropy lr-5.0 checkpoint resumed under focal loss gave exit 0 and test ECE 0.40."""
    real_save = train_loop.save_checkpoint

    def save_then_die(out_dir, state):
        real_save(out_dir, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(train_loop, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train({**TINY, "lr": 5.0, "out_dir": str(tmp_path)})
    monkeypatch.setattr(train_loop, "save_checkpoint", real_save)
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(ValueError, match=rf"cannot resume from {checkpoint}: it belongs to another run"):
        train({**TINY, "loss": "focal_loss", "gamma": 3, "out_dir": str(tmp_path), "resume": True})

    import torch

    state = torch.load(checkpoint, weights_only=True)
    config = TrainConfig(**{**TINY, "lr": 5.0, "out_dir": str(tmp_path)})
    for planted, message in (({"epoch": 99}, "after epoch 99"), ({"run": None}, "belongs to another run"),
                             ({"calibnb": "0.0.1"}, "written by calibnb 0.0.1"),
                             ({"history": []}, "its history has 0 rows for 1 epochs")):
        with pytest.raises(ValueError, match=message):
            train_loop.check_checkpoint_belongs({**state, **planted}, config, 2, checkpoint)
    train({**TINY, "lr": 5.0, "out_dir": str(tmp_path), "resume": True})  # its own run resumes


def test_a_diverging_run_stops_in_the_epoch_it_diverged_before_a_checkpoint(tmp_path):
    with pytest.raises(FloatingPointError, match=r"diverged in epoch 1: its validation logits reach"):
        train({**TINY, "lr": 1e6, "out_dir": str(tmp_path)})
    assert not (tmp_path / "checkpoint.pt").exists()


# -- plans refuse at planning what the run would refuse ----------------------------------------


def sweep_file(tmp_path, **sections) -> Path:
    config = {"notebook": str(TRAIN), "out_root": str(tmp_path / "runs"), "grid": {"seed": [1]}, **sections}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("sections, message", [
    ({"params": {"model_params": {"hiden": [8]}}}, r"model_params: 'mlp' takes no 'hiden' \(did you mean 'hidden'\?\)"),
    ({"params": {"gamma": 3, "loss": "focal_loss", "loss_params": {"gamma": 5}}}, "gamma is given twice"),
    ({"grid": {"loss": ["focal_loss"]}, "select": {"by": "loss", "params": ["gamma"], "among": ["focal_los"]}},
     r"select.among names 'focal_los', but no run of the sweep has loss = 'focal_los' \(did you mean 'focal_loss'\?\)"),
    ({"select": {"by": "los", "params": ["gamma"]}}, r"select.by names 'los', which is no parameter"),
    ({"executor": {"name": "slurm", "slurm_partiton": "gpu"}}, r"unknown executor option 'slurm_partiton' \(did you mean 'slurm_partition'\?\)"),
    ({"grid": {"seed": [99999999999999999999999]}}, "seed must be <= 9223372036854775807"),
])
def test_dry_run_refuses_what_the_run_would_refuse(tmp_path, capsys, sections, message):
    path = sweep_file(tmp_path, **sections)
    assert cli(["sweep", str(path), "--dry-run"]) == 2
    line = error_line(capsys)
    assert str(path) in line or "seed" in line
    import re

    assert re.search(message, line), line


def test_slurm_where_there_is_none_is_one_error_line(tmp_path, capsys):
    path = sweep_file(tmp_path, executor={"name": "slurm", "timeout_min": 5})
    assert cli(["sweep", str(path)]) == 2
    assert "executor 'slurm' cannot run here" in error_line(capsys)


# -- prune deletes nothing a later step may need ------------------------------------------------


def fake_sweep(tmp_path, gammas_done: dict) -> Path:
    """A sweep of dual focal loss over γ ∈ {1, 2} x seeds {1, 2}; ``gammas_done`` maps (γ, seed) to the
    validation ECE of the finished runs (the others are missing)."""
    path = sweep_file(tmp_path, grid={"loss": "dual_focal_loss", "gamma": [1, 2], "seed": [1, 2]},
                      select={"by": "loss", "params": ["gamma"], "among": ["dual_focal_loss"]})
    for params, folder, _ in runs.plan(path):
        val = gammas_done.get((params["gamma"], params["seed"]))
        if val is None:
            continue
        with run_folder(folder, params, runs.canonical_parameters(TRAIN, {})[1]):
            stage = {m: val for m in runs.METRICS}
            (folder / "logits_test.npz").write_bytes(b"test data")
            runs.write_json(folder / "metrics.json", {"val": stage, "test": {"pre": stage, "ts": stage, "fts": stage},
                                                      "temperature": 1.5, "fts": {"gamma": 0.5, "temperature": 1.2},
                                                      "gammas": []})
    return path


def test_prune_refuses_an_unfinished_sweep_naming_its_runs(tmp_path, capsys):
    """prune used to delete the test logits of a run that a later result selected; sweep then said done."""
    path = fake_sweep(tmp_path, {(1, 1): 0.02, (2, 1): 0.01, (2, 2): 0.06})
    assert cli(["prune", str(path)]) == 2
    assert "1 run(s) of the sweep are not finished (fashion_mnist-mlp-dual_focal_loss-" in error_line(capsys)
    assert len(list((tmp_path / "runs").rglob("logits_test.npz"))) == 3


def test_prune_dry_run_lists_exactly_what_goes_and_a_pruned_run_chosen_later_is_redone(tmp_path, capsys):
    path = fake_sweep(tmp_path, {(1, 1): 0.02, (1, 2): 0.04, (2, 1): 0.01, (2, 2): 0.06})
    assert cli(["prune", str(path), "--dry-run"]) == 0
    listed = sorted(Path(line.split()[-1]).name for line in capsys.readouterr().out.splitlines())
    assert len(listed) == 2 and len(list((tmp_path / "runs").rglob("logits_test.npz"))) == 4
    assert cli(["prune", str(path)]) == 0
    pruned = sorted(Path(line.split()[-1]).name for line in capsys.readouterr().out.splitlines())
    assert pruned == listed and all(runs.is_pruned(tmp_path / "runs" / name) for name in pruned)
    assert all(done for _, _, done in runs.plan(path))
    # γ = 2 seed 2 turns out better (a rerun gave another value): the pruned γ = 2 runs win now
    winner = next(f for p, f, _ in runs.plan(path) if p["gamma"] == 2 and p["seed"] == 2)
    metrics = json.loads((winner / "metrics.json").read_text())
    runs.write_json(winner / "metrics.json", seal({**metrics, "val": {m: 0.001 for m in runs.METRICS}},
                                                  winner, metrics["files"]))
    todo = [f.name for _, f, done in runs.plan(path) if not done]
    assert todo and all(runs.is_pruned(tmp_path / "runs" / name) for name in todo)


# -- the command line never prints a traceback --------------------------------------------------


def test_os_errors_and_interrupts_are_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "file").write_text("x")
    assert cli(["run", str(TRAIN), "--out", str(tmp_path / "file" / "run")]) == 2
    assert "File exists" in error_line(capsys)  # a file where the run's parent folder belongs
    assert cli(["run", str(TRAIN), "-f", str(tmp_path)]) == 2
    assert f"{tmp_path}: not a file" in error_line(capsys)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "execute", interrupted)
    assert cli(["run", str(TRAIN), "--out", str(tmp_path / "r")]) == 130
    assert error_line(capsys) == "error: interrupted"


def test_a_failed_run_of_a_sweep_names_the_run_and_its_log(tmp_path, capsys, monkeypatch):
    def fail_seed_2(notebook, params, folder, **kwargs):
        if params["seed"] == 2:
            raise RuntimeError("boom\nsecond line")
        return folder

    import importlib

    monkeypatch.setattr(importlib.import_module("calibnb.runs.sweep"), "execute", fail_seed_2)
    path = sweep_file(tmp_path, grid={"seed": [1, 2]})
    assert cli(["sweep", str(path)]) == 2
    line = error_line(capsys)
    assert "1 of 2 runs failed: fashion_mnist-mlp-cross_entropy-" in line and "-seed2: boom (log: " in line


def test_a_study_file_refuses_what_it_used_to_coerce(tmp_path):
    from calibnb.runs.posthoc import load_study

    for bad, message in (([1.7], "got 1.7"), ([True], "got True"), ("12", "must be a non-empty list"),
                         ([], "must be a non-empty list"), ([1, 1], "names an entry twice")):
        with pytest.raises(ValueError, match=message):
            load_study({"out_root": str(tmp_path), "splits": bad})
    with pytest.raises(ValueError, match="networks must be a non-empty list"):
        load_study({"out_root": str(tmp_path), "networks": []})


# -- the notebook itself refuses a misspelled parameter under plain papermill -------------------


def test_from_namespace_refuses_a_name_the_notebook_does_not_declare():
    import math

    namespace = {"math": math, "In": [], "_": 1, "loss": "focal_loss", "gamma": 3, "print": print}
    assert TrainConfig.from_namespace(namespace).loss_params == {"gamma": 3}
    with pytest.raises(ValueError, match=r"unknown training parameter\(s\) \['gama'\] \(did you mean 'gamma'\?\)"):
        TrainConfig.from_namespace({**namespace, "gama": 3})


@pytest.mark.slow
def test_plain_papermill_with_a_misspelled_parameter_fails_in_the_first_cell(tmp_path):
    import jupytext
    import papermill

    source = tmp_path / "train.ipynb"
    jupytext.write(jupytext.read(TRAIN), source, fmt="ipynb")
    with pytest.raises(papermill.PapermillExecutionError, match=r"did you mean 'gamma'"):
        papermill.execute_notebook(str(source), str(tmp_path / "out.ipynb"), parameters={"gama": 3},
                                   progress_bar=False, cwd=str(TRAIN.parent))
