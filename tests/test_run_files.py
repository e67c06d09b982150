"""Every file a run writes is validated for meaning when read, and every error names the file
(issue 25, item 3): a training run's and a post-hoc run's ``metrics.json``
(:mod:`calibnb.runs.schemas`), the logits files (:func:`calibnb.runs.load_logits`), and the
validation and test logits given together to :func:`calibnb.train.evaluate_logits`.

Each damaged document is first shown to be accepted by the plain reader the code used before
(``json.loads``, ``np.load``), so these tests can fail.
"""

import copy
import json
import re
import shutil
import zipfile

import numpy as np
import pytest

from calibnb.analysis.posthoc_tables import load_posthoc, load_run
from calibnb.runs import load_logits, load_results, save_logits
from calibnb.runs.posthoc import METHODS, probabilities_on_test, restore
from calibnb.runs.schemas import read_posthoc_metrics, read_run_metrics
from calibnb.train import evaluate_logits
from conftest import REPO

TRAINING = sorted(REPO.glob("results/*_cpu/*/metrics.json"))
POSTHOC = sorted(REPO.glob("results/cifar_posthoc/*/split-*/metrics.json"))
#: A committed AdaFocal run that reports test metrics: every part a run's metrics.json can have.
ADAFOCAL = next(p.parent for p in TRAINING if "adafocal" in p.parent.name and '"ood"' in p.read_text())


def test_every_committed_metrics_file_passes_its_schema():
    assert len(TRAINING) >= 200 and len(POSTHOC) == 25
    pruned = [p for p in TRAINING if "test" not in read_run_metrics(p)]
    assert 0 < len(pruned) < len(TRAINING)  # pruned runs keep only val, gammas (and adafocal_updates)
    for path in POSTHOC:
        read_posthoc_metrics(path)


def _set(path: str, value):
    def change(metrics):
        *parents, key = path.split(".")
        for part in parents:
            metrics = metrics[part]
        metrics[key] = value
    return change


def _rename(parent: str, old: str, new: str):
    def change(metrics):
        section = metrics if not parent else metrics[parent]
        section[new] = section.pop(old)
    return change


def _drop(key: str):
    return lambda metrics: metrics.pop(key)


#: (change to a real AdaFocal run's metrics, the error after "<file>: ")
BAD_METRICS = {
    "ece above 1": (_set("test.pre.ece", 7.5), "test.pre.ece = 7.5 is not in [0, 1]"),
    "negative ece": (_set("test.ts.ece", -0.5), "test.ts.ece = -0.5 is not in [0, 1]"),
    "negative nll": (_set("val.nll", -1.0), "val.nll = -1.0 is not >= 0"),
    "brier above 2": (_set("val.brier", 2.5), "val.brier = 2.5 is not in [0, 2]"),
    "auroc above 1": (_set("ood.mnist.fts", 1.5), "ood.mnist.fts = 1.5 is not in [0, 1]"),
    "negative temperature": (_set("temperature", -2), "temperature = -2 is not > 0"),
    "zero fts temperature": (_set("fts.temperature", 0), "fts.temperature = 0 is not > 0"),
    "gamma not a number": (_set("fts.gamma", "1"), 'fts.gamma = "1" is not a finite number'),
    "boolean metric": (_set("val.error", True), "val.error = true is not a finite number"),
    "misspelled metric": (_rename("val", "ece", "ecee"), "val.ecee is not a known key (did you mean 'ece'?)"),
    "misspelled section": (_rename("", "test", "tset"), "tset is not a known key (did you mean 'test'?)"),
    "unknown shift": (_rename("ood", "mnist", "mnsit"),
                      "ood.mnsit is not a known key (did you mean 'mnist'?)"),
    "missing metric": (lambda m: m["test"]["fts"].pop("nll"), "test.fts.nll is missing"),
    "test without temperature": (_drop("temperature"), "temperature is missing (it goes with 'test')"),
    "null gamma of an epoch": (lambda m: m["gammas"][0].__setitem__(3, None),
                               "gammas[0][3] = null is not a finite number"),
    "bin edge above 1": (lambda m: m["adafocal_updates"][1]["edges"].__setitem__(0, 1.5),
                         "adafocal_updates[1].edges[0] = 1.5 is not in [0, 1]"),
}


@pytest.fixture
def run(tmp_path):
    """A copy of a committed AdaFocal run (params.yaml and metrics.json) below tmp_path/runs."""
    folder = tmp_path / "runs" / "run-1"
    folder.mkdir(parents=True)
    for name in ("params.yaml", "metrics.json"):
        shutil.copy(ADAFOCAL / name, folder / name)
    return folder


@pytest.mark.parametrize("case", BAD_METRICS)
def test_a_metrics_file_out_of_its_schema_is_refused_naming_file_and_value(run, case):
    change, message = BAD_METRICS[case]
    metrics = json.loads((run / "metrics.json").read_text())
    assert len(load_results(run.parent)) == 1  # the unchanged run is read
    change(metrics)
    (run / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(ValueError) as info:
        load_results(run.parent)
    assert str(info.value).startswith(f"{run / 'metrics.json'}: {message}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text, message", [
    ('{"val": %s, "val": %s}', "the key 'val' appears twice in one object"),
    ('{"val": %s, "temperature": NaN}', "NaN is not a number"),
    ('{"val": %s, "temperature": Infinity}', "Infinity is not a number"),
    ('{"val": %s, "temperature": 1e999}', "1e999 overflows to inf"),
])
def test_json_that_python_reads_silently_is_refused(run, text, message):
    val = json.dumps(json.loads((run / "metrics.json").read_text())["val"])
    text = text.replace("%s", val)
    json.loads(text)  # the plain parser takes it
    (run / "metrics.json").write_text(text)
    expected = f"{run / 'metrics.json'} is not a run's metrics (JSON): {message}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_results(run.parent)


def test_an_empty_metrics_file_and_a_run_without_params_are_refused(run):
    (run / "metrics.json").write_text("{}")
    with pytest.raises(ValueError, match=re.escape(f"{run / 'metrics.json'}: val is missing")):
        load_results(run.parent)
    shutil.copy(ADAFOCAL / "metrics.json", run / "metrics.json")
    (run / "params.yaml").unlink()
    with pytest.raises(ValueError, match=re.escape(f"{run}: has metrics.json but no params.yaml")):
        load_results(run.parent)


def test_a_pruned_run_passes_but_a_pruned_run_with_test_metrics_does_not(run):
    metrics = json.loads((run / "metrics.json").read_text())
    pruned = {k: metrics[k] for k in ("val", "gammas", "adafocal_updates")}
    (run / "metrics.json").write_text(json.dumps(pruned))
    table = load_results(run.parent)
    assert "val_ece" in table and "ece" not in table and table["temperature"].isna().all()
    (run / "metrics.json").write_text(json.dumps({**pruned, "test": metrics["test"]}))
    with pytest.raises(ValueError, match="temperature is missing"):
        load_results(run.parent)


# -- the post-hoc study's metrics.json -------------------------------------------------------


@pytest.fixture
def study(tmp_path):
    """A copy of one committed post-hoc run below tmp_path."""
    path = tmp_path / "cifar10-lenet-5" / "split-2" / "metrics.json"
    path.parent.mkdir(parents=True)
    shutil.copy(REPO / "results/cifar_posthoc/cifar10-lenet-5/split-2/metrics.json", path)
    return path


@pytest.mark.parametrize("change, message", [
    (_set("test.isotonic.ece", 7.5), "test.isotonic.ece = 7.5 is not in [0, 1]"),
    (_set("params.ts.temperature", -2), "params.ts.temperature = -2 is not > 0"),
    (_set("params.fts.gamma", -3), "params.fts.gamma = -3 is not >= -1"),
    (_set("params.ets.weights", [0.5, 0.5]), "params.ets.weights = [0.5, 0.5]"),
    (_rename("params", "ts", "tss"), "params.tss is not a known key (did you mean 'ts'?)"),
    (_set("network", "cifar10-lenet-6"), 'network = "cifar10-lenet-6" is not one of'),
    (_set("split", 1.5), "split = 1.5 is not an integer"),
    (_drop("n_test"), "n_test is missing"),
])
def test_a_posthoc_file_out_of_its_schema_is_refused_where_it_is_read(study, change, message):
    metrics = json.loads(study.read_text())
    assert len(load_posthoc(study.parents[2])) == 1 + len(METHODS)  # the unchanged run is read (and 'pre')
    change(metrics)
    study.write_text(json.dumps(metrics))
    root = study.parents[2]
    for read in (lambda: load_posthoc(root), lambda: load_run(root, "cifar10-lenet-5", 2)):
        with pytest.raises(ValueError, match=re.escape(f"{study}: {message}")):
            read()
    with pytest.raises(ValueError, match=re.escape(f"metrics: {message}")):
        probabilities_on_test(metrics, "ts")


def test_a_posthoc_file_with_a_duplicate_key_is_refused(study):
    study.write_text(study.read_text().replace('"split": 2', '"split": 2, "split": 3'))
    assert json.loads(study.read_text())["split"] == 3  # the plain parser keeps the last
    with pytest.raises(ValueError, match=re.escape(f"{study} is not a post-hoc run's metrics (JSON): "
                                                   "the key 'split' appears twice")):
        load_posthoc(study.parents[2])


def test_restore_takes_the_class_count_the_stored_params_lack():
    logits = np.random.default_rng(0).normal(size=(4, 7))
    restored = restore("ts", {"temperature": 1.5}, n_classes=10)
    with pytest.raises(ValueError, match="logits have 7 classes but the calibrator was fitted on 10"):
        restored.predict_proba(logits)
    assert restore("ts", {"temperature": 1.5}).predict_proba(logits).shape == (4, 7)  # count unknown
    with pytest.raises(ValueError, match="n_classes must be >= 2"):
        restore("ts", {"temperature": 1.5}, n_classes=1)


# -- logits files ----------------------------------------------------------------------------


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


GOOD_LOGITS = np.arange(10.0).reshape(5, 2)
GOOD_LABELS = np.array([0, 1, 1, 0, 1])


@pytest.mark.parametrize("arrays, message", [
    ({"logits": GOOD_LOGITS}, "it has no labels array"),
    ({"labels": GOOD_LABELS}, "it has no logits array"),
    ({"logits": np.arange(5.0), "labels": GOOD_LABELS}, "logits must be 2-D"),
    ({"logits": GOOD_LOGITS.astype(int), "labels": GOOD_LABELS}, "logits must be floating point"),
    ({"logits": GOOD_LOGITS, "labels": GOOD_LABELS[:3]}, "labels has 3 entries but logits has 5 rows"),
    ({"logits": GOOD_LOGITS, "labels": GOOD_LABELS[:, None]}, "labels must be 1-D"),
    ({"logits": GOOD_LOGITS, "labels": GOOD_LABELS.astype(float)}, "labels must be integer"),
    ({"logits": np.where(GOOD_LOGITS == 3, np.nan, GOOD_LOGITS), "labels": GOOD_LABELS},
     "logits contains NaN"),
    ({"logits": GOOD_LOGITS, "labels": np.array([0, 1, -1, 0, 1])}, r"labels must lie in \[0, 2\)"),
    ({"logits": GOOD_LOGITS, "labels": np.array([0, 1, 7, 0, 1])}, r"labels must lie in \[0, 2\)"),
])
def test_a_logits_file_that_does_not_hold_logits_and_labels_is_refused(tmp_path, arrays, message):
    path = _npz(tmp_path / "logits_test.npz", **arrays)
    with np.load(path) as data:  # the plain reader takes it
        assert set(data.files) == set(arrays)
    with pytest.raises(ValueError, match=f"{re.escape(str(path))} is not a logits file: {message}"):
        load_logits(path)


def test_a_file_that_is_not_an_npz_is_named(tmp_path):
    good = save_logits(tmp_path / "good.npz", GOOD_LOGITS, GOOD_LABELS)
    logits, labels = load_logits(good)
    assert logits.dtype == np.float64 and labels.tolist() == GOOD_LABELS.tolist()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:60])
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    text = tmp_path / "text.npz"
    text.write_text("logits,labels\n1,2\n")
    bare = tmp_path / "bare.npz"
    np.save(open(bare, "wb"), GOOD_LOGITS)
    for path in (truncated, empty, text, bare, tmp_path / "missing.npz"):
        with pytest.raises(ValueError, match=re.escape(f"{path} is not a logits file")):
            load_logits(path)
    with pytest.raises(zipfile.BadZipFile):
        with np.load(truncated) as data:  # what np.load says of it: no file named
            data["logits"]


# -- logits given together -------------------------------------------------------------------


def test_validation_and_test_logits_of_different_class_counts_are_refused():
    rng = np.random.default_rng(0)
    val, test = rng.normal(size=(60, 3)), rng.normal(size=(60, 5))
    labels = rng.integers(0, 3, 60)
    with pytest.raises(ValueError, match="test_logits have 5 classes but val_logits have 3"):
        evaluate_logits(val, labels, test, labels)
    with pytest.raises(ValueError, match=r"ood_logits\['mnist'\] have 5 classes but val_logits have 3"):
        evaluate_logits(val, labels, val, labels, ood_logits={"mnist": test})
