"""A run's parameters are checked against the notebook's parameters cell before anything runs
(calibnb.runs.parameters; issue 18, item 1): ``-p gama 5`` is refused, not run with γ's default."""

import subprocess
import sys

import pytest

from calibnb.runs import execute, run_training
from calibnb.runs.parameters import check_parameters, declared_parameters
from conftest import REPO

TRAIN = REPO / "nbs" / "train.md"

TINY = """---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
---

```{code-cell} ipython3
:tags: [parameters]
alpha = 0.5
steps = 3
name = "x"
anything = None
```

```{code-cell} ipython3
print(alpha * steps, name)
```
"""


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.md"
    path.write_text(TINY)
    return path


def test_the_declared_parameters_are_the_parameters_cell(tiny):
    assert declared_parameters(tiny) == {"alpha": 0.5, "steps": 3, "name": "x", "anything": None}
    train = declared_parameters(TRAIN)
    assert train["gamma"] is None and train["n_bins"] == 15 and train["progress"] is True


def test_an_unknown_name_is_refused_with_the_close_match(tiny):
    with pytest.raises(ValueError, match=r"unknown parameter 'gama' for .*train.md \(did you mean 'gamma'\?\)"):
        check_parameters(TRAIN, {"gama": 5})
    with pytest.raises(ValueError, match=r"unknown parameter 'zzz' .* it declares \['alpha', 'anything', 'name', 'steps'\]"):
        check_parameters(tiny, {"zzz": 1})


@pytest.mark.parametrize("params, message", [
    ({"steps": 2.5}, "'steps' .* must be a int like its default 3, got 2.5"),
    ({"steps": True}, "'steps' .* must be a int"),
    ({"alpha": "half"}, "'alpha' .* must be a float"),
    ({"name": 3}, "'name' .* must be a str"),
])
def test_a_value_of_the_wrong_type_is_refused(tiny, params, message):
    with pytest.raises(ValueError, match=message):
        check_parameters(tiny, params)


def test_admitted_values_and_the_full_parameters(tiny):
    full = check_parameters(tiny, {"alpha": 2, "anything": [1, 2]})  # an int for a float; None: any
    assert full == {"alpha": 2, "steps": 3, "name": "x", "anything": [1, 2]}


def test_the_training_notebook_checks_values_as_its_config_does():
    with pytest.raises(ValueError, match="epochs must be an integer"):
        check_parameters(TRAIN, {"epochs": 2.5})
    with pytest.raises(ValueError, match="loss must be one of"):
        check_parameters(TRAIN, {"loss": "focal_los"})
    assert check_parameters(TRAIN, {"loss": "focal_loss", "gamma": 3})["gamma"] == 3


def test_a_refused_run_writes_nothing(tiny, tmp_path):
    with pytest.raises(ValueError, match="unknown parameter"):
        execute(tiny, {"alpa": 1}, tmp_path / "run")
    with pytest.raises(ValueError, match="unknown training parameter"):
        run_training({"gama": 5}, tmp_path / "run2")
    assert not (tmp_path / "run").exists() and not (tmp_path / "run2").exists()


def test_the_command_line_prints_one_error_line_and_exits_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "calibnb", "run", str(TRAIN), "-p", "gama", "5",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: unknown parameter 'gama' for {TRAIN} (did you mean 'gamma'?)"]
    assert not (tmp_path / "run").exists()
    debug = subprocess.run([sys.executable, "-m", "calibnb", "--debug", "run", str(TRAIN), "-p", "gama", "5"],
                           capture_output=True, text=True)
    assert "Traceback" in debug.stderr


def test_a_sweep_file_is_schema_checked_naming_the_file(tmp_path):
    from calibnb.runs import expand_grid
    toy = REPO / "tests" / "data" / "toy_run.md"
    path = tmp_path / "sweep.yaml"
    path.write_text(f"notebook: {toy}\nout_root: {tmp_path}\ngird: {{seed: [1]}}\n")
    with pytest.raises(ValueError, match=rf"{path}: unknown key 'gird' in the sweep file \(did you mean 'grid'\?\)"):
        expand_grid(path)
    path.write_text(f"notebook: {toy}\nout_root: {tmp_path}\ngrid: {{seed: [1], gama: [1.0]}}\n")
    with pytest.raises(ValueError, match=rf"{path}: unknown parameter 'gama' .*did you mean 'gamma'"):
        expand_grid(path)
    path.write_text(f"notebook: {toy}\nout_root: {tmp_path}\nparams: {{fail: 'no'}}\ngrid: {{seed: 1}}\n")
    with pytest.raises(ValueError, match=rf"{path}: parameter 'fail' .* must be a bool"):
        expand_grid(path)


def test_every_committed_sweep_file_passes_its_schema():
    from calibnb.runs import expand_grid
    counts = {p.name: len(expand_grid(p)) for p in sorted((REPO / "configs").glob("*.yaml"))}
    assert counts["fashion_mnist_cpu.yaml"] == counts["mnist1d_cpu.yaml"] == 115
    assert counts["dfl_table1.yaml"] == 64 + 7 + 7  # CIFAR + Tiny-ImageNet + 20 Newsgroups; a GPU sweep is checked on a machine without one


def test_a_folder_holding_another_run_is_refused_before_anything_is_written(tmp_path):
    import yaml

    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"loss": "focal_loss", "gamma": 3.0, "seed": 1,
                                                          "device": "cuda"}))
    before = (tmp_path / "params.yaml").read_text()
    with pytest.raises(ValueError, match=r"holds another run .*epochs: None -> 3; gamma: 3.0 -> 5.0"):
        run_training({"epochs": 3, "loss": "focal_loss", "gamma": 5.0, "seed": 1}, tmp_path)
    assert (tmp_path / "params.yaml").read_text() == before and sorted(tmp_path.iterdir()) == [tmp_path / "params.yaml"]


def test_a_corrupt_result_file_is_named(tmp_path):
    import json

    from calibnb.runs import METRICS, load_results
    run = tmp_path / "run-1"
    run.mkdir()
    (run / "metrics.json").write_text('{"test": ')
    with pytest.raises(ValueError, match=r"run-1: has metrics.json but no params.yaml"):
        load_results(tmp_path)
    (run / "params.yaml").write_text("loss: cross_entropy\n")
    with pytest.raises(ValueError, match=r"run-1/metrics.json is not a run's metrics \(JSON\)"):
        load_results(tmp_path)
    (run / "metrics.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"run-1/metrics.json: the top level = \[1, 2\] is not a mapping"):
        load_results(tmp_path)
    (run / "metrics.json").write_text("{}")
    with pytest.raises(ValueError, match=r"run-1/metrics.json: .*'val' is a required property|val is missing"):
        load_results(tmp_path)
    (run / "metrics.json").write_text(json.dumps({"val": dict.fromkeys(METRICS, 0.1)}))
    (run / "params.yaml").write_text("a: [1,\n")
    with pytest.raises(ValueError, match=r"run-1/params.yaml: line 2"):
        load_results(tmp_path)


@pytest.mark.parametrize("section, message", [
    ("select: {by: loss, param: [gamma]}", r"unknown key 'param' in select \(did you mean 'params'\?\)"),
    ("select: {by: loss}", "select is missing the key 'params'"),
    ("select: {by: loss, params: gamma}", "select.params must be a list of parameter names"),
    ("select: {by: loss, params: [gamma], among: focal_loss}", "select.among must be a list"),
    ("select: [loss]", "select must be a mapping"),
    ("executor: {name: slrum}", "executor name must be one of"),
    ("executor: slurm", "executor must be a mapping"),
    ("runner: papermill", "runner must be one of"),
    ("params: [1, 2]", "params must be a mapping"),
    ("notebook2: x", r"unknown key 'notebook2' in the sweep file \(did you mean 'notebook'\?\)"),
])
def test_every_section_of_a_sweep_file_is_checked_key_by_key(tmp_path, section, message):
    from calibnb.runs import expand_grid
    toy = REPO / "tests" / "data" / "toy_run.md"
    path = tmp_path / "sweep.yaml"
    path.write_text(f"notebook: {toy}\nout_root: {tmp_path}\ngrid: {{seed: [1]}}\n{section}\n")
    with pytest.raises(ValueError, match=rf"{path}: {message}"):
        expand_grid(path)
    assert not list(tmp_path.glob("*/"))  # nothing ran, nothing was written


def test_the_training_notebook_declares_exactly_the_training_knobs():
    """The knobs are declared once (TrainConfig): the notebook's parameters cell holds the same
    names and defaults, and the notebook builds its config from them with from_namespace."""
    from calibnb.runs.parameters import training_defaults

    assert declared_parameters(TRAIN) == training_defaults()
    assert "TrainConfig.from_namespace(globals())" in TRAIN.read_text()
