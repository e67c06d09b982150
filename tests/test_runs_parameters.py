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
