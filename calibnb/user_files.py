"""A user's prediction files: logits (or probabilities) and labels from ``.npz``, ``.npy`` or ``.pt``.

What ``python -m calibnb calibrate`` and ``apply`` read (:func:`read_predictions`). Nothing is
unpickled: numpy files are read with ``allow_pickle=False`` after their first bytes showed what they
are (a pickle, text, an archive where an array was expected: each refused by name), torch files
with ``torch.load(weights_only=True)``. Every refusal is one ``ValueError`` naming the file. The
module imports numpy only (torch for a ``.pt`` file), so that a bad file is refused before the
calibrators load.
"""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path

import numpy as np

from ._validation import check_logits_labels, check_probs

__all__ = ["SUFFIXES", "read_predictions"]

#: The file kinds :func:`read_predictions` reads, by suffix.
SUFFIXES = (".npz", ".npy", ".pt", ".pth")


def read_predictions(path: str | os.PathLike, labels: str | os.PathLike | None = None, probs: bool = False,
                     need_labels: bool = True, labels_option: str = "--labels") -> tuple[np.ndarray, np.ndarray | None]:
    """``(logits float64 (N, K), labels int64 (N,) or None)`` from a user's files, checked.

    * ``.npz``: arrays ``logits`` (or ``probs`` with ``probs=True``) and ``labels`` (or the labels
      in the file ``labels``);
    * ``.npy``: the logits (or probabilities) alone, the labels in ``labels`` (``.npy``, ``.npz``
      with a ``labels`` array, or ``.pt``);
    * ``.pt``/``.pth`` (``torch.load(weights_only=True)``): a tensor, or a dict with ``logits`` (or
      ``probs``) and ``labels``.

    Probabilities become logits by their log (a zero by float64's smallest normal number). Nothing is
    unpickled (``np.load(allow_pickle=False)``; torch's weights-only loader). Every refusal is a
    ``ValueError`` naming the file: not that kind of file, a missing array, a shape, a dtype, a NaN,
    labels out of range or of another length. ``need_labels=False`` reads the scores alone (labels in
    the file are still checked); ``labels_option`` is what the messages call ``labels``.
    """
    path = Path(path)
    key = "probs" if probs else "logits"
    arrays = _read_arrays(path, key)
    if labels is not None:
        if "labels" in arrays:
            raise ValueError(f"{path} holds labels and {labels_option} names {labels}: give the labels once")
        arrays["labels"] = _read_arrays(Path(labels), "labels", labels_file=True)["labels"]
    where = Path(labels) if labels is not None else path
    if "labels" not in arrays and need_labels:
        raise ValueError(f"{path}: no labels: an .npz or .pt file holds a 'labels' array, or {labels_option} "
                         "names a file of them")
    scores = arrays[key]
    try:
        if probs:
            p = check_probs(scores, "probs")
            scores = np.log(np.maximum(p, np.finfo(np.float64).tiny))
        elif not (np.issubdtype(scores.dtype, np.floating) or np.issubdtype(scores.dtype, np.integer)):
            raise ValueError(f"logits must be real numbers, got dtype {scores.dtype}")
        if "labels" not in arrays:
            return check_logits_labels(scores, np.zeros(len(scores), dtype=np.int64))[0], None
        z, y = check_logits_labels(scores, arrays["labels"])
    except (ValueError, TypeError) as error:
        blame = where if "labels" in str(error).split(" ")[0] else path
        raise ValueError(f"{blame}: {error}") from None
    return z, y


def _read_arrays(path: Path, key: str, labels_file: bool = False) -> dict:
    """The arrays of ``path`` by name: ``key`` (and ``labels`` where the file holds them)."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{path}: unknown kind of file {path.suffix or '(no suffix)'!r}; "
                         f"one of {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise ValueError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    _check_magic(path, suffix)
    if suffix in (".pt", ".pth"):
        return _read_torch(path, key)
    try:
        with open(path, "rb") as handle:
            data = np.load(handle, allow_pickle=False)
            if suffix == ".npy":
                if not isinstance(data, np.ndarray):
                    raise ValueError("not a .npy array (it is an .npz archive: name it .npz)")
                return {key: data}
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise ValueError("not an .npz archive (it holds one bare array: name it .npy)")
            with data:
                names = list(data.keys())
                wanted = ["labels"] if labels_file else [key]
                missing = [name for name in wanted if name not in names]
                if missing:
                    hint = " (it has 'probs': add --probs)" if "probs" in names and key == "logits" else ""
                    raise ValueError(f"no {missing[0]!r} array{hint}; it has {names}")
                return {name: data[name] for name in (key, "labels") if name in names}
    except ValueError as error:
        message = str(error)
        if "pickle" in message:
            message = "it holds pickled objects (or is not a numpy file), which are never loaded"
        raise ValueError(f"{path}: {message}") from None
    except (OSError, EOFError, Exception) as error:  # zipfile.BadZipFile, zlib.error, a truncated file
        if isinstance(error, OSError) and error.strerror:
            raise
        raise ValueError(f"{path}: not a readable {suffix} file ({type(error).__name__}: {error})") from None


#: The first bytes of each kind of file: numpy's, and torch's (a zip archive, or the legacy pickle,
#: which only torch's weights-only loader reads).
MAGIC = {".npz": (b"PK",), ".npy": (b"\x93NUMPY",), ".pt": (b"PK", b"\x80"), ".pth": (b"PK", b"\x80")}
WHAT = {".npz": "an .npz archive", ".npy": "an .npy array", ".pt": "a torch file", ".pth": "a torch file"}


def _check_magic(path: Path, suffix: str) -> None:
    """Refuse, by what it is, a file that is not the kind its suffix says (before anything reads it)."""
    with open(path, "rb") as handle:
        head = handle.read(64)
    if head.startswith(MAGIC[suffix]):
        return
    what = WHAT[suffix]
    if not head:
        raise ValueError(f"{path}: the file is empty, not {what}")
    if head.startswith(b"\x80"):
        raise ValueError(f"{path}: a Python pickle, not {what}; calibnb never unpickles a file "
                         "(save the arrays with numpy.savez)")
    other = next((s for s in (".npz", ".npy") if head.startswith(MAGIC[s])), None)
    if other is not None:
        raise ValueError(f"{path}: {WHAT[other]}, not {what}: name it *{other}")
    try:
        head.decode("utf-8")
        kind = "text"
    except UnicodeDecodeError:
        kind = "binary data"
    raise ValueError(f"{path}: {kind} (it starts with {head[:16]!r}), not {what}")


def _read_torch(path: Path, key: str) -> dict:
    import torch

    try:
        with warnings.catch_warnings():  # torch's notes on the pickle protocol; the refusal says it all
            warnings.simplefilter("ignore")
            data = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError(f"{path}: holds objects other than tensors, numbers, strings and their lists and "
                         "dicts, which calibnb never loads (torch.load(weights_only=True) refused it)") from None
    except Exception as error:  # torch raises many kinds (RuntimeError, EOFError, ...)
        if isinstance(error, OSError) and error.strerror:
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path}: not a torch tensor file ({type(error).__name__}: {first})") from None
    if isinstance(data, torch.Tensor):
        return {key: _tensor(data, path, key)}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: holds a {type(data).__name__}, not a tensor or a dict of tensors")
    if key not in data:
        hint = " (it has 'probs': add --probs)" if "probs" in data and key == "logits" else ""
        raise ValueError(f"{path}: the dict has no {key!r}{hint}; it has {sorted(map(str, data))}")
    return {name: _tensor(data[name], path, name) for name in (key, "labels") if name in data}


def _tensor(value, path: Path, name: str) -> np.ndarray:
    import torch

    if isinstance(value, np.ndarray):
        return value
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{path}: {name} is a {type(value).__name__}, not a tensor")
    value = value.detach().cpu()
    if value.dtype == torch.bfloat16:
        value = value.float()
    try:
        return value.numpy()
    except (TypeError, RuntimeError) as error:
        raise ValueError(f"{path}: {name} cannot be read as an array ({error})") from None
