"""Readers for the published file formats, one function per format.

Each reader takes the folder holding the files and returns numpy arrays in calibnb's layout:
images ``(N, C, H, W)`` uint8, labels ``(N,)`` int64. They read exactly the releases that
torchvision downloads (same file names, keys, dtypes and layouts); with ``verify=True`` each file's
content md5 is checked first (:mod:`calibnb.data.integrity`).
"""

from __future__ import annotations

import gzip
import pickle
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .integrity import verify_file

CIFAR10_FILES = {
    "train": [f"data_batch_{i}" for i in range(1, 6)],
    "test": ["test_batch"],
    "meta": "batches.meta",
}
CIFAR100_FILES = {"train": ["train"], "test": ["test"], "meta": "meta"}
SVHN_FILES = {"train": "train_32x32.mat", "test": "test_32x32.mat"}
FASHION_MNIST_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
#: The 19 corruptions of Hendrycks & Dietterich (2019) released in CIFAR-10-C.
CIFAR10C_CORRUPTIONS = (
    "brightness", "contrast", "defocus_blur", "elastic_transform", "fog", "frost",
    "gaussian_blur", "gaussian_noise", "glass_blur", "impulse_noise", "jpeg_compression",
    "motion_blur", "pixelate", "saturate", "shot_noise", "snow", "spatter", "speckle_noise",
    "zoom_blur",
)
CIFAR10_CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)
#: Images per severity level in the published CIFAR-10-C (the CIFAR-10 test set).
CIFAR10C_PER_SEVERITY = 10_000
#: MNIST-1D generation arguments of Greydanus & Kanarek (2020), ``mnist1d.data.get_dataset_args``
#: in mnist1d 0.0.2: 5 000 signals of length 40, 80 % train, seed 42 (the published data set).
MNIST1D_ARGS = {
    "num_samples": 5000, "train_split": 0.8, "template_len": 12, "padding": [36, 60],
    "scale_coeff": 0.4, "max_translation": 48, "corr_noise_scale": 0.25,
    "iid_noise_scale": 2e-2, "shear_scale": 0.75, "shuffle_seq": False,
    "final_seq_length": 40, "seed": 42,
}


class _CifarUnpickler(pickle.Unpickler):
    """Admits only what the published CIFAR batches hold: dicts, lists, byte strings, numbers and
    numpy arrays. Any other global (a function, a class) is refused before it is looked up, so a
    planted batch cannot run code, with or without the md5 check."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"it asks for {module}.{name}, which a CIFAR batch never holds")
        return super().find_class(module, name)


def _unpickle(path: Path) -> dict:
    """A CIFAR python batch: Python-2 pickles read with ``encoding="bytes"``, keys as str.

    Read by :class:`_CifarUnpickler`; a file that is not such a batch is refused with a
    ``ValueError`` naming it.
    """
    with reading(path, "a CIFAR python batch (refused, nothing in it was run)"), open(path, "rb") as f:
        entry = _CifarUnpickler(f, encoding="bytes").load()
    if not isinstance(entry, dict):
        raise ValueError(f"{path} is not a CIFAR python batch: it holds a {type(entry).__name__}, not a dict")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}


def _names(values) -> tuple[str, ...]:
    return tuple(v.decode("latin1") if isinstance(v, bytes) else str(v) for v in values)


def read_cifar(folder: Path, dataset: str, verify: bool = True):
    """CIFAR-10 (``cifar-10-batches-py``) or CIFAR-100 (``cifar-100-python``, fine labels).

    Each batch holds ``data``, a ``(n, 3072)`` uint8 array whose rows are the red, green and
    blue 32×32 planes in row-major order, and ``labels`` (CIFAR-10) or ``fine_labels``
    (CIFAR-100), lists of ints. Returns ``(x_train, y_train, x_test, y_test, classes)``.
    """
    files, label_key, names_key = (
        (CIFAR10_FILES, "labels", "label_names")
        if dataset == "cifar10"
        else (CIFAR100_FILES, "fine_labels", "fine_label_names")
    )
    if verify:
        for name in files["train"] + files["test"] + [files["meta"]]:
            verify_file(folder / name, dataset)
    out = []
    for split in ("train", "test"):
        xs, ys = [], []
        for name in files[split]:
            batch = _unpickle(folder / name)
            with reading(folder / name, f"a {dataset} batch (a dict with 'data' (n, 3072) uint8 and '{label_key}')"):
                x, y = np.asarray(batch["data"], dtype=np.uint8), np.asarray(batch[label_key], dtype=np.int64)
                xs.append(x.reshape(-1, 3, 32, 32))
            if y.shape != (len(xs[-1]),):
                raise ValueError(f"{folder / name} holds {len(xs[-1])} images but {y.shape} labels")
            ys.append(y)
        out += [np.concatenate(xs), np.concatenate(ys)]
    meta = folder / files["meta"]
    with reading(meta, f"the {dataset} meta file (a dict with '{names_key}')"):
        return (*out, _names(_unpickle(meta)[names_key]))


@contextmanager
def reading(path: Path, what: str) -> Iterator[None]:
    """Turn whatever a parser raises on a damaged file (``BadGzipFile``, ``MatReadError``,
    ``EOFError``, an index or offset error) into a ``ValueError`` naming ``path`` and what it
    should have been; an error that already names the file passes through."""
    try:
        yield
    except FileNotFoundError:
        raise
    except Exception as error:
        if isinstance(error, ValueError) and str(path) in str(error):
            raise
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path} is not {what}: {type(error).__name__}: {reason}") from None


def read_svhn(folder: Path, verify: bool = True):
    """SVHN cropped digits: ``X`` is ``(32, 32, 3, n)`` uint8, ``y`` is ``(n, 1)`` in 1..10.

    Label 10 stands for the digit 0 and becomes 0, as in torchvision.
    Returns ``(x_train, y_train, x_test, y_test)``.
    """
    from scipy.io import loadmat

    out = []
    for split in ("train", "test"):
        path = folder / SVHN_FILES[split]
        if verify:
            verify_file(path, "svhn")
        with reading(path, "an SVHN .mat file (X: 32x32x3xN uint8, y: N labels)"):
            mat = loadmat(path)
            y = np.asarray(mat["y"]).astype(np.int64).reshape(-1)
            y[y == 10] = 0
            x = np.ascontiguousarray(np.transpose(mat["X"], (3, 2, 0, 1)), dtype=np.uint8)
        if x.shape[1:] != (3, 32, 32) or len(x) != len(y):
            raise ValueError(f"{path} must hold X (32, 32, 3, n) and y (n, 1), got {x.shape} and {y.shape}")
        out += [x, y]
    return tuple(out)


def read_cifar10c(folder: Path, corruption: str, severity: int, verify: bool = True):
    """One corruption and severity of CIFAR-10-C: ``(x, y)`` with 10 000 images.

    ``<corruption>.npy`` stacks the severities 1..5 in blocks of 10 000 ``(32, 32, 3)`` uint8
    images (NHWC); ``labels.npy`` holds the matching labels (the CIFAR-10 test labels, repeated
    five times). The layout is always checked; ``verify=True`` also requires the published size.
    """
    with reading(folder / f"{corruption}.npy", "a CIFAR-10-C array (.npy of uint8 images)"):
        images = np.load(folder / f"{corruption}.npy", mmap_mode="r")
    with reading(folder / "labels.npy", "a CIFAR-10-C label array (.npy)"):
        labels = np.load(folder / "labels.npy")
    n = images.shape[0]
    if images.dtype != np.uint8 or images.shape[1:] != (32, 32, 3) or n % 5:
        raise ValueError(
            f"{folder / f'{corruption}.npy'} must hold (5·m, 32, 32, 3) uint8 images, "
            f"got {images.shape} {images.dtype}"
        )
    if labels.shape != (n,):
        raise ValueError(f"{folder / 'labels.npy'} must have shape ({n},), got {labels.shape}")
    if verify and n != 5 * CIFAR10C_PER_SEVERITY:
        raise ValueError(
            f"{folder / f'{corruption}.npy'} has {n} images; the published CIFAR-10-C has "
            f"{5 * CIFAR10C_PER_SEVERITY} (pass verify=False for a subset)"
        )
    block = slice((severity - 1) * n // 5, severity * n // 5)
    x = np.ascontiguousarray(np.transpose(images[block], (0, 3, 1, 2)))
    return x, labels[block].astype(np.int64)


def _read_idx(path: Path, verify: bool) -> np.ndarray:
    """An IDX file (LeCun's MNIST format) of unsigned bytes, gzip-compressed."""
    with reading(path, "a gzip-compressed IDX file"), gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        raise ValueError(f"{path} is not an IDX file: {len(data)} bytes, shorter than its header")
    if verify:
        verify_file(path, "fashion-mnist", content=data)
    zero, dtype_code, ndim = data[0] * 256 + data[1], data[2], data[3]
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    if len(data) < 4 + 4 * ndim:
        raise ValueError(f"{path} is truncated: its header announces {ndim} dimensions")
    array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if array.size != int(np.prod(shape)):
        raise ValueError(f"{path} is truncated: header says {shape}, found {array.size} bytes")
    return array.reshape(shape)


def read_fashion_mnist(folder: Path, verify: bool = True):
    """Fashion-MNIST IDX gzip files. Returns ``(x_train, y_train, x_test, y_test)``."""
    out = []
    for split in ("train", "test"):
        images, labels = (folder / name for name in FASHION_MNIST_FILES[split])
        out += [_read_idx(images, verify)[:, None], _read_idx(labels, verify).astype(np.int64)]
    return tuple(out)


def generate_mnist1d():
    """MNIST-1D generated offline by the ``mnist1d`` package with :data:`MNIST1D_ARGS`.

    Signals are ``(N, 1, 40)`` float32, already standardised by the generator. numpy's and
    ``random``'s global states are restored afterwards (the generator reseeds them).
    Returns ``(x_train, y_train, x_test, y_test)``.
    """
    from mnist1d.data import make_dataset
    from mnist1d.utils import ObjectView

    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        data = make_dataset(ObjectView(dict(MNIST1D_ARGS)))
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    return (
        data["x"].astype(np.float32)[:, None],
        data["y"].astype(np.int64),
        data["x_test"].astype(np.float32)[:, None],
        data["y_test"].astype(np.int64),
    )
