"""``python -m calibnb calibrate`` and ``apply`` (issue 28, item 2), run as a user runs them: in a
subprocess with this checkout's Python. Good files of every format are read; every bad file is one
``error:`` line naming it, exit status 2, and nothing in ``--out``."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from scipy.special import softmax

from calibnb.calibration.persist import load_calibrator
from calibnb.user_files import read_predictions
from conftest import REPO

N, K = 300, 4
RNG = np.random.default_rng(0)
LOGITS = RNG.normal(scale=3.0, size=(N, K)).astype(np.float32)
LABELS = (LOGITS / 2 + RNG.gumbel(size=(N, K))).argmax(axis=1).astype(np.int64)
FAST = ["--calibrators", "ts,histogram", "--folds", "3"]
REPORT = {"calibrator.json", "table.csv", "table.json", "report.html", "reliability-uncalibrated.png",
          "reliability-ts.png", "reliability-histogram.png"}


def cli(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "calibnb", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def refused(done: subprocess.CompletedProcess, *names: str) -> str:
    """The one ``error:`` line of a refused command, which names each of ``names``."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


@pytest.fixture
def files(tmp_path):
    """Good files of each format in ``tmp_path``."""
    np.savez(tmp_path / "val.npz", logits=LOGITS, labels=LABELS)
    np.savez(tmp_path / "test.npz", logits=LOGITS[::-1], labels=LABELS[::-1])
    np.save(tmp_path / "val.npy", LOGITS)
    np.save(tmp_path / "labels.npy", LABELS)
    np.savez(tmp_path / "probs.npz", probs=softmax(LOGITS.astype(np.float64), axis=1), labels=LABELS)
    torch.save({"logits": torch.tensor(LOGITS), "labels": torch.tensor(LABELS)}, tmp_path / "val.pt")
    torch.save(torch.tensor(LOGITS, dtype=torch.bfloat16), tmp_path / "tensor.pt")
    return tmp_path


def test_calibrate_reads_an_npz_and_writes_the_report(files):
    done = cli("calibrate", "val.npz", "--test", "test.npz", *FAST, "--out", "report", cwd=files)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("chosen: ") and "report.html" in done.stdout
    assert set(os.listdir(files / "report")) == REPORT
    table = json.loads((files / "report" / "table.json").read_text())
    assert table["n_test"] == N and table["folds"] == 3 and table["chosen"] in ("uncalibrated", "ts", "histogram")
    assert {row["calibrator"] for row in table["rows"]} == {"uncalibrated", "ts", "histogram"}


@pytest.mark.parametrize("args", [
    ["val.npy", "--labels", "labels.npy"],
    ["val.pt"],
    ["tensor.pt", "--labels", "labels.npy"],
    ["probs.npz", "--probs"],
    ["val.npy", "--labels", "val.npz"],  # the labels of an .npz
    ["val.npy", "--labels", "val.pt", "--test", "val.pt"],
], ids=["npy-pair", "pt-dict", "pt-tensor-bf16", "npz-probs", "labels-from-npz", "pt-test"])
def test_calibrate_reads_every_format(files, args):
    done = cli("calibrate", *args, *FAST, "--criterion", "ece", "--out", "report", cwd=files)
    assert done.returncode == 0, done.stderr
    assert set(os.listdir(files / "report")) == REPORT
    assert load_calibrator(files / "report" / "calibrator.json").n_classes_ == K


def test_every_format_reads_the_same_logits(files):
    reference, labels = read_predictions(files / "val.npz")
    for path, extra in [("val.npy", {"labels": files / "labels.npy"}), ("val.pt", {})]:
        z, y = read_predictions(files / path, **extra)
        np.testing.assert_array_equal(z, reference)
        np.testing.assert_array_equal(y, labels)
    z, _ = read_predictions(files / "probs.npz", probs=True)
    np.testing.assert_allclose(softmax(z, axis=1), softmax(reference, axis=1), atol=1e-12)
    assert read_predictions(files / "val.npy", need_labels=False)[1] is None


def write_bad(folder, name: str):
    """Write the bad file ``name`` into ``folder``; return ``(path, extra arguments)``."""
    path = folder / name
    extra = []
    if name == "text.npz":
        path.write_text("logits,labels\n0.1,0\n")
    elif name == "pickle.npz":
        path.write_bytes(pickle.dumps({"logits": LOGITS, "labels": LABELS}))
    elif name == "empty.npz":
        path.write_bytes(b"")
    elif name == "truncated.npz":
        np.savez(path, logits=LOGITS, labels=LABELS)
        path.write_bytes(path.read_bytes()[:200])
    elif name == "no-labels.npz":
        np.savez(path, logits=LOGITS)
    elif name == "no-logits.npz":
        np.savez(path, scores=LOGITS, labels=LABELS)
    elif name == "probs-without-flag.npz":
        np.savez(path, probs=softmax(LOGITS, axis=1), labels=LABELS)
    elif name == "object.npz":
        np.savez(path, logits=np.array([LOGITS, "x"], dtype=object), labels=LABELS)
    elif name == "one-d.npz":
        np.savez(path, logits=LOGITS[:, 0], labels=LABELS)
    elif name == "short-labels.npz":
        np.savez(path, logits=LOGITS, labels=LABELS[:-1])
    elif name == "labels-out-of-range.npz":
        np.savez(path, logits=LOGITS, labels=LABELS + K)
    elif name == "float-labels.npz":
        np.savez(path, logits=LOGITS, labels=LABELS + 0.5)  # whole-number floats are labels; these are not
    elif name == "nan.npz":
        np.savez(path, logits=np.where(LOGITS > 5, np.nan, LOGITS), labels=LABELS)
    elif name == "string-logits.npz":
        np.savez(path, logits=LOGITS.astype(str), labels=LABELS)
    elif name == "not-probs.npz":
        np.savez(path, probs=np.abs(LOGITS), labels=LABELS)
        extra = ["--probs"]
    elif name == "archive.npy":
        np.savez(path.with_suffix(".npz"), logits=LOGITS, labels=LABELS)
        path.with_suffix(".npz").rename(path)
        extra = ["--labels", "labels.npy"]
    elif name == "pickle.npy":
        path.write_bytes(pickle.dumps(LOGITS))
        extra = ["--labels", "labels.npy"]
    elif name == "pickle.pt":
        path.write_bytes(pickle.dumps({"logits": LOGITS}))
    elif name == "code.pt":
        torch.save({"logits": torch.tensor(LOGITS), "labels": torch.tensor(LABELS), "hook": print}, path)
    elif name == "text.pt":
        path.write_text("not a tensor")
    elif name == "list.pt":
        torch.save([torch.tensor(LOGITS)], path)
    elif name == "logits.csv":
        path.write_text("0.1,0.2\n")
    elif name == "missing.npz":
        pass
    return path, extra


BAD = ["text.npz", "pickle.npz", "empty.npz", "truncated.npz", "no-labels.npz", "no-logits.npz",
       "probs-without-flag.npz", "object.npz", "one-d.npz", "short-labels.npz", "labels-out-of-range.npz",
       "float-labels.npz", "nan.npz", "string-logits.npz", "not-probs.npz", "archive.npy", "pickle.npy",
       "pickle.pt", "code.pt", "text.pt", "list.pt", "logits.csv", "missing.npz"]


@pytest.mark.parametrize("name", BAD)
def test_a_bad_logits_file_is_one_error_line_naming_it_and_nothing_is_written(files, name):
    path, extra = write_bad(files, name)
    done = cli("calibrate", name, *extra, *FAST, "--out", "report", cwd=files)
    refused(done, name)
    assert not (files / "report").exists()
    assert not [p for p in os.listdir(files) if p.startswith(".report")]


@pytest.mark.parametrize("name", ["text.npz", "labels-out-of-range.npz", "pickle.pt", "short-labels.npz"])
def test_a_bad_test_file_is_refused_before_any_fit(files, name):
    write_bad(files, name)
    done = cli("calibrate", "val.npz", "--test", name, *FAST, "--out", "report", cwd=files)
    refused(done, name)
    assert not (files / "report").exists()


@pytest.mark.parametrize("args, names", [
    (["val.npy", "--labels", "missing.npy"], ["missing.npy"]),
    (["val.npy", "--labels", "val.npy"], ["val.npy", "integer"]),
    (["val.npz", "--labels", "labels.npy"], ["val.npz", "--labels", "labels.npy"]),
    (["val.npz", "--test", "val.npy"], ["val.npy", "--test-labels"]),
    (["val.npz", "--test-labels", "labels.npy"], ["--test-labels needs --test"]),
    (["val.npz", "--test", "tensor.pt", "--test-labels", "labels.npy", "--calibrators", "ts,platt"],
     ["unknown calibrator 'platt'"]),
    (["val.npz", "--folds", "1"], ["folds must be >= 2"]),
    (["val.npz", "--out", "val.npy"], ["val.npy", "not a folder"]),
])
def test_other_mistakes_are_one_error_line(files, args, names):
    out = [] if "--out" in args else ["--out", "report"]
    refused(cli("calibrate", *args, *out, cwd=files), *names)
    assert not (files / "report").exists()


def test_test_logits_of_another_class_count_are_refused(files):
    np.savez(files / "three.npz", logits=LOGITS[:, :3], labels=LABELS % 3)
    refused(cli("calibrate", "val.npz", "--test", "three.npz", "--out", "report", cwd=files), "three.npz", "classes")
    assert not (files / "report").exists()


def test_a_calibrator_that_fails_is_named_and_nothing_is_written(files):
    np.savez(files / "tiny.npz", logits=LOGITS[:9], labels=np.array([0, 1] * 4 + [0]))
    done = cli("calibrate", "tiny.npz", "--calibrators", "spline", "--folds", "2", "--out", "report", cwd=files)
    refused(done, "'spline'", "fold 1 of 2")
    assert not (files / "report").exists()


# -- apply ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def calibrator(tmp_path_factory):
    """A calibrator file written by ``calibrate`` (once for the module; the tests only read it)."""
    folder = tmp_path_factory.mktemp("calibrator")
    np.savez(folder / "val.npz", logits=LOGITS, labels=LABELS)
    done = cli("calibrate", "val.npz", *FAST, "--out", "report", cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder / "report" / "calibrator.json"


def test_apply_writes_the_calibrated_probabilities(files, calibrator):
    for source in ("test.npz", "tensor.pt", "val.npy"):
        done = cli("apply", calibrator, source, "--out", "probs.npy", cwd=files)
        assert done.returncode == 0, done.stderr
        probs = np.load(files / "probs.npy", allow_pickle=False)
        logits, _ = read_predictions(files / source, need_labels=False)
        np.testing.assert_array_equal(probs, load_calibrator(calibrator).predict_proba(logits))
        assert probs.dtype == np.float64 and probs.shape == (N, K)


@pytest.mark.parametrize("case", ["not-json", "pickle", "foreign-class", "other-classes", "bad-logits",
                                  "wrong-suffix", "damaged"])
def test_apply_refuses_with_one_error_line(files, calibrator, case):
    args, names = [calibrator, "test.npz", "--out", "probs.npy"], []
    if case == "not-json":
        args[0] = files / "val.npz"
        names = ["val.npz", "not a calibrator file"]
    elif case == "pickle":
        (files / "c.json").write_bytes(pickle.dumps(load_calibrator(calibrator)))
        args[0], names = files / "c.json", ["c.json"]
    elif case == "foreign-class":
        document = json.loads(calibrator.read_text())
        document["class"] = "sklearn.linear_model.LogisticRegression"
        (files / "c.json").write_text(json.dumps(document))
        args[0], names = files / "c.json", ["c.json", "LogisticRegression", "not a calibrator"]
    elif case == "other-classes":
        np.savez(files / "three.npz", logits=LOGITS[:, :3])
        args[1], names = "three.npz", ["three.npz", "3 classes", "fitted on 4"]
    elif case == "bad-logits":
        write_bad(files, "text.npz")
        args[1], names = "text.npz", ["text.npz"]
    elif case == "wrong-suffix":
        args[3], names = "probs.csv", ["probs.csv", ".npy"]
    elif case == "damaged":
        document = json.loads(calibrator.read_text())
        document["fitted"]["n_classes_"] = 0
        (files / "c.json").write_text(json.dumps(document))
        args[0], names = files / "c.json", ["c.json", "n_classes_"]
    refused(cli("apply", *args, cwd=files), *names)
    assert not (files / "probs.npy").exists() and not (files / "probs.csv").exists()


def test_help_lists_the_new_commands(tmp_path):
    done = cli("--help", cwd=tmp_path)
    assert done.returncode == 0 and "calibrate" in done.stdout and "apply" in done.stdout
    done = cli("calibrate", "--help", cwd=tmp_path)
    assert "--test-labels" in done.stdout and "--criterion" in done.stdout
