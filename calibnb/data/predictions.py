"""Real CIFAR network outputs: the softmax predictions netcal publishes, shipped as float16 logits.

netcal (Küppers et al., Apache-2.0) publishes the softmax outputs of five cross-entropy-trained
networks on the 10,000 CIFAR test images (``examples/classification/records``; source, commit and
checksums in ``calibnb/data/predictions/PROVENANCE.txt``). calibnb ships them as logits:
``log p`` shifted so that each row's largest entry is 0, cast to float16 and compressed. Softmax
is invariant to a per-row constant, so these are valid logits of the same predictions; the shift
before the cast keeps every argmax (without it one DenseNet prediction flips), so accuracy and
labels equal the originals' exactly, and the softmax of the shipped logits is within 2e-3 of the
published probabilities (:func:`convert_netcal` refuses a conversion that is not).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from .._validation import check_choice
from ..atomic import save_npz

FOLDER = Path(__file__).with_name("predictions")
#: Largest absolute difference allowed between the shipped softmax and the published one.
TOLERANCE = 2e-3


#: name -> (netcal file, classes, accuracy of the published predictions, SHA-256 of the shipped
#: arrays' bytes: float16 logits then int64 labels, C order; see :func:`content_sha256`)
PREDICTIONS: dict[str, tuple[str, int, float, str]] = {
    "cifar10-wideresnet-16-4": ("wideresnet-16-4-cifar-10.npz", 10, 0.9109,
        "02f57227f2fb6111b4c12219f9b105df7e9d54dfdffe0b23ca9ba09784376937"),
    "cifar10-lenet-5": ("lenet-5-cifar-10.npz", 10, 0.5308,
        "8f7e37e5349d0f7676ea39b99e84296a0eb92c72cc8e3314c835753aa3d6fd1c"),
    "cifar100-wideresnet-16-4": ("wideresnet-16-4-cifar-100.npz", 100, 0.7543,
        "322e158ab4438ff6742b03df633e8165078c82975664dacd543509eea8a7518b"),
    "cifar100-densenet-bc-100": ("densenet-bc-100-cifar-100.npz", 100, 0.7541,
        "f5b07da1c3bf2da91b322c21e9d62cdbe476c7451ee799a2f157f7295b9eae8f"),
    "cifar100-lenet-5": ("lenet-5-cifar-100.npz", 100, 0.1246,
        "a628e6b9fe258b075eeca058beaaecb16d9e33f98614a562f2066499dda3b10d"),
}


def list_predictions() -> tuple[str, ...]:
    """The names :func:`load_predictions` accepts."""
    return tuple(PREDICTIONS)


def load_predictions(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(logits, labels)`` of a published CIFAR network: float32 ``(10000, K)`` and int64 ``(10000,)``.

    The arrays are checked against their recorded SHA-256 (``ValueError`` naming the file if they
    differ). Names: :func:`list_predictions`.
    """
    check_choice(name, "name", list_predictions())
    path = FOLDER / f"{name}.npz"
    with np.load(path) as data:
        logits, labels = data["logits"], data["labels"]
    actual, expected = content_sha256(logits, labels), PREDICTIONS[name][3]
    if actual != expected:
        raise ValueError(f"{path} is not the shipped file: its arrays' sha256 is {actual}, expected {expected}")
    return logits.astype(np.float32), labels.astype(np.int64)


def convert_netcal(source: str | os.PathLike, destination: str | os.PathLike) -> dict:
    """Convert one netcal ``.npz`` (``predictions`` float32 softmax, ``ground_truth`` int) into
    the shipped format (``logits`` float16, ``labels`` int64), written atomically.

    Returns ``{"max_softmax_error", "accuracy", "sha256"}`` (:func:`content_sha256` of what was
    written); raises ``ValueError`` naming
    ``source`` when a prediction's argmax changes or the softmax moves by more than
    :data:`TOLERANCE`.
    """
    with np.load(source) as data:
        probs, labels = data["predictions"].astype(np.float64), data["ground_truth"].astype(np.int64)
    if probs.ndim != 2 or labels.shape != (probs.shape[0],) or (probs <= 0).any():
        raise ValueError(f"{source}: expected positive predictions (N, K) and ground_truth (N,)")
    log_p = np.log(probs)
    logits = (log_p - log_p.max(axis=1, keepdims=True)).astype(np.float16)
    shipped = np.exp(logits.astype(np.float64))
    shipped /= shipped.sum(axis=1, keepdims=True)
    error = float(np.abs(shipped - probs).max())
    if (logits.argmax(axis=1) != probs.argmax(axis=1)).any() or error > TOLERANCE:
        raise ValueError(f"{source}: the float16 logits change an argmax or move the softmax by {error:.1e}")
    save_npz(destination, logits=logits, labels=labels)
    return {"max_softmax_error": error, "accuracy": float((probs.argmax(1) == labels).mean()),
            "sha256": content_sha256(logits, labels)}


def content_sha256(logits: np.ndarray, labels: np.ndarray) -> str:
    """SHA-256 of the float16 logits' bytes followed by the int64 labels' bytes (C order): the
    checksum of what is shipped, independent of the zip container's timestamps."""
    digest = hashlib.sha256(np.ascontiguousarray(logits, dtype=np.float16).tobytes())
    digest.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    return digest.hexdigest()
