"""Atomic file writes: a reader sees either the old file or the complete new one, never half.

Every artifact of a run is written this way (ARCHITECTURE.md, "Cross-cutting rules"): the data goes to a
temporary file in the destination's folder, which is renamed over the destination only once it
is complete (``os.replace`` is atomic on POSIX within one file system). If writing fails, the
temporary file is removed and the destination is untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ._validation import check_logits_labels

__all__ = ["FLOAT16_MAX", "SEAL_KEYS", "atomic_path", "check_file", "check_seal", "file_sha256", "fits_float16",
           "load_logits", "save_logits", "save_npz", "seal", "write_json", "write_text"]


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; move it onto ``path`` when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_json(path: str | os.PathLike, obj) -> Path:
    """Write ``obj`` as indented JSON atomically (NaN and inf are refused, not written)."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")


def save_npz(path: str | os.PathLike, **arrays) -> Path:
    """Save arrays to a compressed ``.npz`` atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, **arrays)
    return Path(path)


#: The largest magnitude a stored (float16) logit can hold.
FLOAT16_MAX = float(np.finfo(np.float16).max)


def fits_float16(logits) -> bool:
    """Whether every logit is finite and within :data:`FLOAT16_MAX`: what :func:`save_logits` can
    store (a network whose logits do not fit has diverged)."""
    logits = np.asarray(logits)
    return bool(np.isfinite(logits).all()) and (logits.size == 0 or float(np.abs(logits).max()) <= FLOAT16_MAX)


def save_logits(path: str | os.PathLike, logits, labels) -> Path:
    """Save a run's logits in the shared format: ``logits`` float16 ``(N, K)``, ``labels`` int64.

    float16 keeps the artifacts small; metrics recomputed from the stored logits are the ones a
    run reports (the training code evaluates its metrics on these rounded logits).
    """
    logits = np.asarray(logits)
    labels = np.asarray(labels)
    if logits.ndim != 2 or labels.shape != (logits.shape[0],):
        raise ValueError(
            f"logits must be (N, K) and labels (N,), got {logits.shape} and {labels.shape}"
        )
    if not np.isfinite(logits).all():
        raise ValueError("logits contains NaN or inf")
    if not fits_float16(logits):
        raise ValueError(f"logits overflow float16 (|logit| > {FLOAT16_MAX:g})")
    return save_npz(path, logits=logits.astype(np.float16), labels=labels.astype(np.int64))


def load_logits(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Load ``(logits as float64, labels as int64)`` saved by :func:`save_logits`.

    Refused with a ``ValueError`` naming the file, since each would otherwise surface later as a
    wrong metric or an error that names no file: a file that is not an ``.npz`` archive (damaged,
    truncated, another format, pickled objects), no ``logits`` or ``labels`` array, logits that
    are not a finite floating ``(N, K)`` matrix, labels that are not ``N`` integers in ``[0, K)``.
    """
    try:
        data = np.load(path)  # allow_pickle=False: pickled objects are refused, never run
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("it holds one bare array, not an .npz archive")
        with data:
            missing = [key for key in ("logits", "labels") if key not in data]
            if missing:
                raise ValueError(f"it has no {' or '.join(missing)} array (a logits file holds both)")
            logits, labels = data["logits"], data["labels"]
        if not np.issubdtype(logits.dtype, np.floating):
            raise ValueError(f"logits must be floating point, got dtype {logits.dtype}")
        if labels.dtype == bool or not np.issubdtype(labels.dtype, np.integer):  # stored as written
            raise ValueError(f"labels must be integer class indices, got dtype {labels.dtype}")
        logits, labels = check_logits_labels(logits, labels)
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as error:
        raise ValueError(f"{path} is not a logits file: {error}") from None
    return logits, labels


# -- seals: a finished run's metrics.json vouches for itself and for the files beside it --------------

#: The keys a seal adds to a JSON document: the sha256 of each file beside it, and its own.
SEAL_KEYS = ("files", "sha256")


def file_sha256(path: str | os.PathLike) -> str:
    """The sha256 (hex) of the file ``path``'s bytes (a ``ValueError`` naming it if it cannot be read)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None
    return digest.hexdigest()


def seal(document: dict, folder: str | os.PathLike | None = None, files=()) -> dict:
    """``document`` with ``files`` (the sha256 of each of ``files`` in ``folder``) and ``sha256``,
    the hash of the rest of the document as canonical JSON.

    A flipped bit, a truncation or an edit of the document or of any file it lists then shows as
    a mismatch (:func:`check_seal`, :func:`check_file`) instead of a plausible wrong number: no
    range check can tell an ECE of 0.05 from one of 0.04. (A seal guards against damage, not
    against someone who recomputes it.)
    """
    if not isinstance(document, dict):
        raise TypeError(f"document must be a dict (a JSON object), got {type(document).__name__}")
    sealed = {k: v for k, v in document.items() if k not in SEAL_KEYS}
    if files:
        sealed["files"] = {name: file_sha256(Path(folder) / name) for name in sorted(files)}
    return {**sealed, "sha256": _document_sha256(sealed)}


def check_seal(document, where) -> dict:
    """``document`` if it carries no seal or a seal that matches its content, else a ``ValueError``
    naming ``where``."""
    if isinstance(document, dict) and "sha256" in document:
        content = {k: v for k, v in document.items() if k != "sha256"}
        if _document_sha256(content) != document["sha256"]:
            raise ValueError(f"{where}: its content does not match its sha256: the file was changed or damaged "
                             "after it was written")
    return document


def check_file(path: str | os.PathLike, document: dict, where) -> Path:
    """``path`` if the sealed ``document`` (read from ``where``) lists it with its present sha256, or
    does not list it (an unsealed, older run); else a ``ValueError`` naming both files."""
    path = Path(path)
    expected = (document.get("files") or {}).get(path.name) if isinstance(document, dict) else None
    if expected is not None:
        if not path.is_file():
            raise ValueError(f"{path}: missing, but {where} lists it")
        if file_sha256(path) != expected:
            raise ValueError(f"{path}: its content does not match the sha256 that {where} lists: the file was "
                             "changed or damaged after the run wrote it")
    return path


def _document_sha256(document: dict) -> str:
    text = json.dumps(document, sort_keys=True, allow_nan=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
