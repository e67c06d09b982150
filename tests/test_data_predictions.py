"""The published CIFAR network outputs shipped with calibnb (``calibnb.data.load_predictions``).

The conversion was checked against netcal's originals when it was made (softmax within 2e-3,
every argmax kept: ``convert_netcal`` refuses otherwise); here the shipped arrays must carry their
recorded checksum, and give exactly the originals' accuracy and class counts.
"""

import numpy as np
import pytest
from scipy.special import softmax

from calibnb.data import list_predictions, load_predictions
from calibnb.data.predictions import FOLDER, PREDICTIONS, content_sha256, convert_netcal


@pytest.mark.parametrize("name", list_predictions())
def test_shipped_predictions_are_the_published_ones(name):
    _, k, accuracy, _ = PREDICTIONS[name]
    logits, labels = load_predictions(name)
    assert logits.shape == (10_000, k) and logits.dtype == np.float32 and labels.dtype == np.int64
    assert np.isfinite(logits).all() and (logits.max(axis=1) == 0).all()  # rows shifted by their max
    assert np.bincount(labels, minlength=k).tolist() == [10_000 // k] * k
    assert (logits.argmax(axis=1) == labels).mean() == accuracy
    assert (FOLDER / f"{name}.npz").stat().st_size < 2 * 1024 * 1024


def test_the_names_and_an_unknown_one():
    assert list_predictions() == ("cifar10-wideresnet-16-4", "cifar10-lenet-5", "cifar100-wideresnet-16-4",
                                  "cifar100-densenet-bc-100", "cifar100-lenet-5")
    with pytest.raises(ValueError, match="name must be one of .*cifar100-densenet-bc-100"):
        load_predictions("cifar100-resnet-50")


def test_a_changed_file_is_refused(tmp_path, monkeypatch):
    logits, labels = load_predictions("cifar10-lenet-5")
    labels = labels.copy()
    labels[0] = (labels[0] + 1) % 10
    np.savez_compressed(tmp_path / "cifar10-lenet-5.npz", logits=logits.astype(np.float16), labels=labels)
    monkeypatch.setattr("calibnb.data.predictions.FOLDER", tmp_path)
    with pytest.raises(ValueError, match="cifar10-lenet-5.npz is not the shipped file"):
        load_predictions("cifar10-lenet-5")


def test_conversion_keeps_argmax_and_softmax_and_refuses_zero_probabilities(tmp_path):
    rng = np.random.default_rng(0)
    probs = softmax(rng.normal(scale=4.0, size=(500, 7)), axis=1).astype(np.float32)
    labels = rng.integers(0, 7, 500)
    np.savez(tmp_path / "net.npz", predictions=probs, ground_truth=labels)
    report = convert_netcal(tmp_path / "net.npz", tmp_path / "shipped.npz")
    with np.load(tmp_path / "shipped.npz") as data:
        logits, shipped_labels = data["logits"], data["labels"]
    assert logits.dtype == np.float16 and np.array_equal(shipped_labels, labels)
    assert (logits.argmax(1) == probs.argmax(1)).all()
    assert report["max_softmax_error"] == pytest.approx(
        np.abs(softmax(logits.astype(np.float64), axis=1) - probs).max(), rel=1e-6)
    assert report["max_softmax_error"] < 2e-3 and report["sha256"] == content_sha256(logits, labels)
    assert report["accuracy"] == (probs.argmax(1) == labels).mean()
    zero = np.array([[0.6, 0.4, 0.0]], dtype=np.float32)  # a zero probability has no logit
    np.savez(tmp_path / "bad.npz", predictions=zero, ground_truth=np.array([0]))
    with pytest.raises(ValueError, match="bad.npz: expected positive predictions"):
        convert_netcal(tmp_path / "bad.npz", tmp_path / "bad-shipped.npz")
    assert not (tmp_path / "bad-shipped.npz").exists()
