"""Fuzzing what users hand the command line and the readers (issue 18, item 8): random argument
lists, random sweep files and corrupt result folders give exit status 2 and one ``error: …``
line (never a traceback), or a clear ``ValueError`` naming the file, or a correct answer; and a
refused run writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibnb.__main__ import main as cli
from calibnb.runs import load_results
from calibnb.runs.results import UnfinishedRunsWarning

TOY = Path(__file__).resolve().parent / "data" / "toy_run.md"
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
DEEP = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def fuzz(body, deep: bool = False, **strategies):
    """A test of ``body`` over the ``strategies``: 40 examples in ``make test``, or 400 and marked
    slow (``make test-slow``) with ``deep``."""
    test = (DEEP if deep else FAST)(given(**strategies)(body))
    return pytest.mark.slow(test) if deep else test

words = st.sampled_from(["notebook", "out_root", "grid", "params", "select", "executor", "runner", "by",
                         "among", "metric", "name", "seed", "gamma", "gama", "loss", "", "x"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
                    st.text(max_size=8), st.sampled_from(["nbs/train.md", str(TOY), "slurm", "train"]))
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(words, inner, max_size=4)),
                         max_leaves=12)

#: -p values that no declared parameter accepts (so nothing ever executes)
NOT_A_VALUE = ["abc", "[", "{", "[1, 2]", "{a: 1}", "- x", "'", ": :", "null", "x: [1"]


def refused_cleanly(code, err: str) -> bool:
    return code == 2 and "Traceback" not in err and any(line.startswith("error:") or ": error:" in line
                                                        for line in err.splitlines())


RUN_ARGS = {"pairs": st.lists(st.tuples(st.sampled_from(["gama", "seed", "gamma", "fail", "", "--", "lr", "epochs"]),
                                        st.sampled_from(NOT_A_VALUE)), min_size=1, max_size=3),
            "notebook": st.sampled_from([str(TOY), "missing.md", ""])}


def run_with_odd_parameters(tmp_path, capsys, pairs, notebook):
    out = tmp_path / "run"
    argv = ["run", notebook, "--out", str(out)] + [token for key, value in pairs for token in ("-p", key, value)]
    try:
        code = cli(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    assert refused_cleanly(code, capsys.readouterr().err)
    assert not out.exists()


FILE_ARGS = {"document": documents, "garbage": st.booleans(), "command": st.sampled_from(["sweep", "prune", "posthoc"])}


def random_sweep_and_study_files(tmp_path, capsys, monkeypatch, document, garbage, command):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "configs" / "sweep.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text("{[: not yaml" if garbage else yaml.safe_dump(document))
    argv = [command, str(path)] + (["--dry-run"] if command == "sweep" else [])
    code = cli(argv)
    err = capsys.readouterr().err
    assert code in (0, 2) and "Traceback" not in err
    if code == 2:
        assert refused_cleanly(code, err)


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=6)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.sampled_from(["test", "val", "pre", "ts", "fts",
                                                                                    "ece", "temperature", "ood"]),
                                                                   inner, max_size=4)),
                           max_leaves=10)


RESULT_ARGS = {"metrics": st.one_of(json_values.map(json.dumps), st.binary(max_size=20).map(lambda b: b.decode("latin-1"))),
               "params": st.one_of(documents.map(yaml.safe_dump), st.just("{[: :"))}


def corrupt_result_folders(tmp_path, metrics, params):
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.json").write_text(metrics)
    (run / "params.yaml").write_text(params)
    try:
        table = load_results(tmp_path / "runs")
    except ValueError as error:
        assert str(run) in str(error), f"the error does not name the file: {error}"
        return
    assert len(table) == 1 and table["run_dir"].tolist() == [str(run)]


test_run_with_odd_parameters_is_refused_in_one_line_and_writes_nothing = fuzz(run_with_odd_parameters, **RUN_ARGS)
test_random_sweep_and_study_files_are_refused_by_name = fuzz(random_sweep_and_study_files, **FILE_ARGS)
test_corrupt_result_folders_are_refused_naming_the_file = fuzz(corrupt_result_folders, **RESULT_ARGS)
test_run_with_odd_parameters_deeply = fuzz(run_with_odd_parameters, deep=True, **RUN_ARGS)
test_random_sweep_and_study_files_deeply = fuzz(random_sweep_and_study_files, deep=True, **FILE_ARGS)
test_corrupt_result_folders_deeply = fuzz(corrupt_result_folders, deep=True, **RESULT_ARGS)


def test_the_fuzzed_readers_see_unfinished_folders(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "params.yaml").write_text("seed: 1\n")
    with pytest.warns(UnfinishedRunsWarning):
        assert load_results(tmp_path).empty
