"""``load_dataset``: the papers' data sets, and the offline ones the book trains on.

Layout of what it returns (:class:`Dataset`): images are ``(N, C, H, W)`` uint8 tensors
(pixels 0..255, *not* normalised), MNIST-1D signals ``(N, 1, 40)`` float32; labels are ``(N,)``
int64. ``mean`` and ``std`` are the per-channel statistics that :func:`calibnb.data.normalize`
uses (on the 0..1 pixel scale).

Where files are looked for, first hit wins: ``root/<folder>``, ``root``,
``$CALIBNB_DATA/<folder>``, the system location of a distribution package (Debian's
``dataset-fashion-mnist`` installs to ``/usr/share/datasets/fashion-mnist``), then the per-user
cache that :func:`fetch_dataset` (``make data``) fills (``calibnb.data.fetch``). ``<folder>``
is the folder name of the published archive, or the one torchvision creates.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .._validation import check_choice, check_int
from . import fetch, glove, imagenet, readers, text, tiny_imagenet

#: Normalisation of Mukhoti et al.'s code (``Data/cifar10.py``), which DFL, AdaFocal, FCL and
#: FTS reuse for CIFAR-10, CIFAR-100 (train and validation) and SVHN alike.
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2023, 0.1994, 0.2010)
#: Fashion-MNIST training-set pixel mean and standard deviation (0..1 scale), to 4 decimals.
FASHION_MNIST_MEAN = (0.2860,)
FASHION_MNIST_STD = (0.3530,)
#: ImageNet's per-channel statistics, with which the papers' code (``Data/tiny_imagenet.py``)
#: normalises Tiny-ImageNet.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)
DIGITS = tuple(str(d) for d in range(10))


@dataclass(frozen=True, eq=False)
class Dataset:
    """A data set's train and test parts as tensors, with what is needed to normalise them.

    Attributes
    ----------
    name : str
        The ``load_dataset`` name (``"cifar10c"`` records its corruption and severity in
        ``info``).
    x_train, x_test : torch.Tensor
        Images ``(N, C, H, W)`` uint8, or MNIST-1D signals ``(N, 1, 40)`` float32.
    y_train, y_test : torch.Tensor
        Labels ``(N,)`` int64 in ``[0, num_classes)``.
    num_classes : int
        The number of classes.
    mean, std : tuple of float
        Per-channel normalisation statistics (pixels scaled to 0..1).
    classes : tuple of str
        The class names, index = label.
    info : dict
        Dataset-specific details (``corruption``, ``severity``, ``folder``).
    val_idx : numpy.ndarray or None
        The positions in ``x_train`` of the papers' validation set where the data set fixes it
        (Tiny-ImageNet: each class's images numbered 450 to 499; 20 Newsgroups: the papers'
        900 messages); None where the papers draw it (:func:`calibnb.data.train_val_split`).
    vocabulary : tuple of str or None
        Text data sets: the word of each token id (``vocabulary[0]`` = ``""``, the padding); their
        ``x_train``/``x_test`` are ``(N, L)`` int64 ids (``calibnb.data.text``).

    CIFAR-10-C is a test set only: its ``x_train``/``y_train`` are empty (train on ``cifar10``).
    """

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    classes: tuple[str, ...]
    info: dict
    val_idx: np.ndarray | None = None
    vocabulary: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, train {tuple(self.x_train.shape)} {self.x_train.dtype}, "
            f"test {tuple(self.x_test.shape)}, num_classes={self.num_classes})"
        )


@dataclass(frozen=True, eq=False)
class StreamedDataset:
    """A data set too large for memory (ImageNet), read image by image from disk: what
    :func:`load_dataset` returns for it instead of :class:`Dataset`.

    Attributes
    ----------
    name : str
        The ``load_dataset`` name.
    train : torch.utils.data.Dataset
        The training images with the training transform (random crops and flips), items
        ``(image, label)``, images ``(3, 224, 224)`` uint8 (``calibnb.data.imagenet.ImageNetImages``).
    test : torch.utils.data.Dataset
        The held-out images with the evaluation transform (ImageNet's published validation set,
        which the papers divide into their validation and test sets).
    num_classes, mean, std, classes, info
        As :class:`Dataset`'s.

    The labels are in memory (``train.labels``, ``test.labels``); the pixels are decoded where
    an item is read, in a ``DataLoader``'s worker processes.
    """

    name: str
    train: torch.utils.data.Dataset
    test: torch.utils.data.Dataset
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    classes: tuple[str, ...]
    info: dict

    def __repr__(self) -> str:
        return (f"StreamedDataset({self.name!r}, train {len(self.train)} images, test {len(self.test)}, "
                f"num_classes={self.num_classes})")


@dataclass(frozen=True)
class _Spec:
    folders: tuple[str, ...]  # searched below root and $CALIBNB_DATA, in this order
    files: tuple[str, ...]  # what must be present
    source: str  # where a reader gets the files by hand
    system: tuple[str, ...] = ()  # install locations of distribution packages
    dirs: tuple[str, ...] = ()  # folders that must be present


_SPECS = {
    "cifar10": _Spec(
        ("cifar-10-batches-py",),
        (*readers.CIFAR10_FILES["train"], *readers.CIFAR10_FILES["test"], "batches.meta"),
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz (extract it)",
    ),
    "cifar100": _Spec(
        ("cifar-100-python",),
        ("train", "test", "meta"),
        "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz (extract it)",
    ),
    "svhn": _Spec(
        ("svhn", "SVHN"),
        ("train_32x32.mat", "test_32x32.mat"),
        "http://ufldl.stanford.edu/housenumbers/ (train_32x32.mat, test_32x32.mat)",
    ),
    "cifar10c": _Spec(
        ("CIFAR-10-C",),
        ("labels.npy",),
        "https://zenodo.org/records/2535967 (CIFAR-10-C.tar, md5 "
        "56bf5dcef84df0e2308c6dcbcbbd8499; extract it)",
    ),
    "tiny_imagenet": _Spec(
        ("tiny-imagenet-200",),
        ("wnids.txt", "val/val_annotations.txt"),
        f"{tiny_imagenet.ARCHIVE_URL} (248 MB; md5 {tiny_imagenet.ARCHIVE_MD5} as other libraries "
        "record it; extract it)",
    ),
    "imagenet": _Spec(
        ("imagenet", "ILSVRC2012", "ImageNet"),
        (),
        "https://image-net.org/download.php (ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar, "
        "about 150 GB, after registering; extract them into train/<wnid>/ and val/<wnid>/ as "
        "torchvision's ImageNet class or its extraction scripts do)",
        dirs=("train", "val"),
    ),
    "20newsgroups": _Spec(
        ("20_newsgroups", "20news_home", "20newsgroups"),
        (),
        "http://qwone.com/~jason/20Newsgroups/20news-19997.tar.gz (the papers' release, 19,997 "
        "messages; extract it), or scikit-learn's 20news-bydate.tar.gz (fetch_20newsgroups caches it "
        "in ~/scikit_learn_data/20news_home)",
    ),
    "ag_news": _Spec(
        ("ag_news_csv", "ag_news"),
        ("train.csv", "test.csv"),
        "https://github.com/mhjabreel/CharCnn_Keras/raw/master/data/ag_news_csv (train.csv, "
        "test.csv: the CSVs of Zhang et al. 2015's ag_news_csv.tar.gz)",
    ),
    "finsen": _Spec(
        ("finsen",),
        ("train.csv", "test.csv"),
        "the FinSen release of Liang et al. 2024, written as train.csv and test.csv with a "
        "label,text header (calibnb.data.text's documented schema)",
    ),
    "fashion-mnist": _Spec(
        ("fashion-mnist", "FashionMNIST/raw"),
        (*readers.FASHION_MNIST_FILES["train"], *readers.FASHION_MNIST_FILES["test"]),
        "https://github.com/zalandoresearch/fashion-mnist (data/fashion/*.gz), or "
        "`apt-get install dataset-fashion-mnist`",
        ("/usr/share/datasets/fashion-mnist",),
    ),
}
#: The names :func:`load_dataset` loads.
DATASETS = (*_SPECS, "mnist1d")
#: The text data sets: token ids (``calibnb.data.text``).
TEXT_DATASETS = ("20newsgroups", "ag_news", "finsen")


def _candidates(spec: _Spec, root: str | os.PathLike | None) -> list[Path]:
    bases = [Path(root).expanduser()] if root is not None else []
    env = os.environ.get("CALIBNB_DATA")
    dirs = []
    for base in bases:
        dirs += [base / folder for folder in spec.folders] + [base]
    if env:
        dirs += [Path(env).expanduser() / folder for folder in spec.folders]
    dirs += [Path(p) for p in spec.system]
    return dirs + [fetch.cache_dir() / folder for folder in spec.folders]


def _locate(name: str, root, required: tuple[str, ...]) -> Path | None:
    for folder in _candidates(_SPECS[name], root):
        spec = _SPECS[name]
        if name == "20newsgroups" and not required:
            if _is_newsgroups(folder):
                return folder
        elif all((folder / f).is_file() for f in required) and all((folder / d).is_dir() for d in spec.dirs):
            return folder
    return None


def _is_newsgroups(folder: Path) -> bool:
    """A folder holding 20 Newsgroups in one of its published forms (``calibnb.data.text``)."""
    if (folder / text.BYDATE_ARCHIVE).is_file() or (folder / "20news-bydate-train").is_dir():
        return True
    return folder.is_dir() and any(p.is_dir() and text._GROUP.fullmatch(p.name) for p in folder.iterdir())


def _missing(name: str, root, required: tuple[str, ...], why: str = "") -> FileNotFoundError:
    spec = _SPECS[name]
    searched = "\n  ".join(str(p) for p in _candidates(spec, root)) or "(nothing: pass root=)"
    return FileNotFoundError(
        f"{name}: could not find {', '.join(required + tuple(d + '/' for d in spec.dirs))}.{why}\nSearched:\n  {searched}\n"
        f"Get the files from {spec.source} and put them in <dir>/{spec.folders[0]}/, then pass "
        f"root=<dir> or set CALIBNB_DATA=<dir>."
    )


def find_glove(root: str | os.PathLike | None = None, name: str = glove.DEFAULT) -> Path:
    """The GloVe file ``<name>.txt`` (the papers': ``glove.6B.100d.txt``), looked for where data
    sets are (module docstring), in a ``glove.6B/`` folder (as ``glove.6B.zip`` extracts) or
    beside the data sets; a ``FileNotFoundError`` says where to get it."""
    collection, _ = glove.dimension_of(Path(f"{name}.txt"))
    spec = _Spec((f"glove.{collection}", "glove"), (f"{name}.txt",), glove.SOURCE)
    for folder in _candidates(spec, root):
        if (folder / f"{name}.txt").is_file():
            return folder / f"{name}.txt"
    searched = "\n  ".join(str(p) for p in _candidates(spec, root))
    raise FileNotFoundError(f"could not find the GloVe vectors {name}.txt, which the global-pooling CNN embeds "
                            f"words with.\nSearched:\n  {searched}\nGet them from {glove.SOURCE} and put "
                            f"{name}.txt in <dir>/glove.{collection}/, then pass root=<dir> (data_root) or set "
                            "CALIBNB_DATA=<dir>.")


def fetch_dataset(name: str, root: str | os.PathLike | None = None) -> Path:
    """The folder holding ``name``'s files: found where :func:`load_dataset` looks (module
    docstring), else fetched into the per-user cache by ``calibnb.data.fetch.fetch()``.

    This is what ``make data`` runs (``python -m calibnb fetch fashion-mnist``). Only data sets
    with a published release in ``calibnb.data.fetch.RELEASES`` can be fetched; for the
    others a ``FileNotFoundError`` says where to put which files.
    """
    check_choice(name, "name", DATASETS)
    if name == "mnist1d":
        raise ValueError("name: mnist1d is generated by the mnist1d package, not fetched")
    folder = _locate(name, root, _SPECS[name].files)
    if folder is not None:
        return folder
    if name not in fetch.RELEASES:
        raise _missing(name, root, _SPECS[name].files, " It has no fetch step (no offline source).")
    return fetch.fetch(name)


def _download(name: str, root) -> None:
    """Fetch ``name`` into ``root`` (or ``$CALIBNB_DATA``): a data set with a release in
    ``calibnb.data.fetch.RELEASES`` by ``calibnb.data.fetch.fetch()`` (into the per-user
    cache when neither is set), the others with torchvision's downloaders."""
    target = root if root is not None else os.environ.get("CALIBNB_DATA")
    required = _SPECS[name].files
    if name in fetch.RELEASES:
        fetch.fetch(name, None if target is None else Path(target).expanduser())
        return
    if name in ("cifar10c", "tiny_imagenet", "imagenet", *TEXT_DATASETS):
        published = {"cifar10c": "CIFAR-10-C", "tiny_imagenet": "Tiny-ImageNet",
                     "imagenet": "ImageNet (registration needed)", "20newsgroups": "20 Newsgroups",
                     "ag_news": "AG News", "finsen": "FinSen"}[name]
        raise _missing(name, root, required, f" torchvision has no {published} downloader.")
    try:
        from torchvision import datasets as tv
    except ImportError as exc:
        raise _missing(
            name, root, required,
            f" download=True uses torchvision's downloaders, but torchvision does not import "
            f"({exc}).",
        ) from exc
    if target is None:
        raise ValueError("download=True needs a target folder: pass root= or set CALIBNB_DATA")

    target = str(Path(target).expanduser())
    if name == "cifar10":
        tv.CIFAR10(target, train=True, download=True)
    elif name == "cifar100":
        tv.CIFAR100(target, train=True, download=True)
    elif name == "svhn":
        for split in ("train", "test"):
            tv.SVHN(str(Path(target) / "svhn"), split=split, download=True)
    elif name == "fashion-mnist":
        tv.FashionMNIST(target, train=True, download=True)


def _stamp_newsgroups(folder: Path) -> tuple:
    """Size and modification time of the files 20 Newsgroups is read from in ``folder`` (the
    form :func:`calibnb.data.text.read_20newsgroups` picks), and of nothing else there: a data
    folder may hold other data sets' millions of files."""
    bydate = [folder / "20news-bydate-train", folder / "20news-bydate-test"]
    if all(p.is_dir() for p in bydate):
        tops = bydate
    elif (folder / text.BYDATE_ARCHIVE).is_file():
        return _stamp(folder, (text.BYDATE_ARCHIVE,))
    else:
        tops = [folder]
    groups = [g for top in tops for g in top.iterdir() if g.is_dir() and text._GROUP.fullmatch(g.name)]
    return tuple(sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
                        for group in groups for p in group.iterdir() if p.is_file()))


def _stamp(folder: Path | None, files: tuple[str, ...]) -> tuple:
    """Size and modification time of each file, so that the cache sees replaced files."""
    if folder is None:
        return ()
    return tuple((f, (folder / f).stat().st_size, (folder / f).stat().st_mtime_ns) for f in files)


@functools.lru_cache(maxsize=4)
def _read(name, folder, stamp, verify, corruption, severity):
    """The arrays of one data set, cached per process (``stamp`` invalidates the entry)."""
    if name in ("cifar10", "cifar100"):
        return readers.read_cifar(folder, name, verify)
    if name == "svhn":
        return (*readers.read_svhn(folder, verify), DIGITS)
    if name == "fashion-mnist":
        return (*readers.read_fashion_mnist(folder, verify), FASHION_MNIST_CLASSES)
    if name == "mnist1d":
        return (*readers.generate_mnist1d(), DIGITS)
    if name == "tiny_imagenet":
        return tiny_imagenet.read_tiny_imagenet(folder, verify)
    if name in TEXT_DATASETS:
        reader = {"20newsgroups": text.read_20newsgroups, "ag_news": text.read_ag_news,
                  "finsen": text.read_finsen}[name]
        return reader(folder, verify)
    x_test, y_test = readers.read_cifar10c(folder, corruption, severity, verify)
    x_train = np.zeros((0, 3, 32, 32), dtype=np.uint8)
    return x_train, np.zeros(0, dtype=np.int64), x_test, y_test, readers.CIFAR10_CLASSES


def load_dataset(
    name: str,
    root: str | os.PathLike | None = None,
    download: bool = False,
    *,
    verify: bool = True,
    corruption: str | None = None,
    severity: int | None = None,
) -> Dataset | StreamedDataset:
    """Load a data set as :class:`Dataset` tensors (images ``(N, C, H, W)`` uint8), or ImageNet
    as a :class:`StreamedDataset` read from disk.

    Parameters
    ----------
    name : ``"cifar10"``, ``"cifar100"``, ``"svhn"``, ``"cifar10c"``, ``"tiny_imagenet"``,
        ``"imagenet"``,
        ``"20newsgroups"``, ``"ag_news"``, ``"finsen"`` (text: ``(N, L)`` int64 token ids and
        ``Dataset.vocabulary``, ``calibnb.data.text``), ``"fashion-mnist"`` or ``"mnist1d"``.

    root : a folder holding the data set's folder (e.g. ``root/cifar-10-batches-py``) or its
        files; searched before ``$CALIBNB_DATA`` and system locations (module docstring).
    download : when the files are missing, fetch them into ``root`` (or ``$CALIBNB_DATA``, else
        the per-user cache): Fashion-MNIST from its published files or Debian's package
        (``calibnb.data.fetch``), the others with torchvision's downloaders. Without
        torchvision, or for CIFAR-10-C and Tiny-ImageNet, which torchvision does not provide, a
        ``FileNotFoundError`` says where to put which files.
    verify : check each file's content md5 against the published release
        (``calibnb.data.integrity``); a mismatch raises ``ValueError`` naming the file.
        Tiny-ImageNet has no published checksums: its structure and counts are checked
        instead (``calibnb.data.tiny_imagenet``), and ``verify=False`` admits a subset. ImageNet
        likewise (``calibnb.data.imagenet``): the layout always, the published counts (1,000
        classes, 1,281,167 training and 50,000 validation images) with ``verify=True``; an image
        that does not decode is named when a worker reads it.
    corruption, severity : CIFAR-10-C only; default ``"gaussian_noise"`` at severity 5, the
        setting of the papers' shift experiments.

    MNIST-1D (Greydanus & Kanarek 2020) is generated offline with the paper's default arguments
    (4 000 train, 1 000 test signals, seed 42) and kept in memory. Loaded arrays are cached per
    process, so a second call is free.
    """
    check_choice(name, "name", DATASETS)
    if not isinstance(download, bool):
        raise TypeError(f"download must be a bool, got {download!r}")
    if not isinstance(verify, bool):
        raise TypeError(f"verify must be a bool, got {verify!r}")
    if name == "cifar10c":
        corruption = "gaussian_noise" if corruption is None else corruption
        check_choice(corruption, "corruption", readers.CIFAR10C_CORRUPTIONS)
        severity = check_int(5 if severity is None else severity, "severity", minimum=1)
        if severity > 5:
            raise ValueError(f"severity must be in 1..5, got {severity}")
    elif corruption is not None or severity is not None:
        raise ValueError(f"corruption and severity apply to cifar10c only, not {name!r}")

    folder, required = None, ()
    if name != "mnist1d":
        required = _SPECS[name].files + ((f"{corruption}.npy",) if corruption else ())
        folder = _locate(name, root, required)
        if folder is None and download:
            _download(name, root)
            folder = _locate(name, root, required)
        if folder is None:
            raise _missing(name, root, required)
    if name == "imagenet":
        return _load_imagenet(folder, verify)
    stamp = _stamp(folder, required) if name != "20newsgroups" else _stamp_newsgroups(folder)
    # (x_train, y_train, x_test, y_test, classes[, val_idx[, vocabulary, texts]])
    x_train, y_train, x_test, y_test, classes, *extra = _read(
        name, folder, stamp, verify, corruption, severity
    )
    fixed_val, vocabulary, texts = (*extra, None, None, None)[:3]
    num_classes = len(classes)
    stats = {
        "fashion-mnist": (FASHION_MNIST_MEAN, FASHION_MNIST_STD),
        "mnist1d": ((0.0,), (1.0,)),
        "tiny_imagenet": (IMAGENET_MEAN, IMAGENET_STD),
        **{t: ((), ()) for t in TEXT_DATASETS},  # token ids are not normalised
    }.get(name, (CIFAR_MEAN, CIFAR_STD))
    info = {"folder": None if folder is None else str(folder)}
    if texts is not None:
        info["texts"] = texts  # (train, test) documents, in the order of x_train and x_test
    if name == "cifar10c":
        info.update(corruption=corruption, severity=severity)
    for split, y in (("train", y_train), ("test", y_test)):
        if y.size and (y.min() < 0 or y.max() >= num_classes):
            raise ValueError(f"{name}: {split} labels outside [0, {num_classes})")
    return Dataset(
        name=name,
        # copies, so that editing a returned tensor cannot alter the cached arrays
        x_train=torch.tensor(x_train),
        y_train=torch.tensor(y_train),
        x_test=torch.tensor(x_test),
        y_test=torch.tensor(y_test),
        num_classes=num_classes,
        mean=stats[0],
        std=stats[1],
        classes=tuple(classes),
        info=info,
        val_idx=None if fixed_val is None else fixed_val.copy(),
        vocabulary=vocabulary,
    )


def _load_imagenet(folder: Path, verify: bool) -> StreamedDataset:
    """ImageNet's ``train/`` and ``val/`` folders as streamed data sets, with the same classes
    (the training crops are drawn with seed 0; set ``train.seed`` for another)."""
    train = imagenet.ImageNetImages(folder, "train", train=True, verify=verify)
    test = imagenet.ImageNetImages(folder, "val", train=False, verify=verify)
    if test.classes != train.classes:
        missing = sorted(set(train.classes) ^ set(test.classes))
        raise ValueError(f"imagenet: {folder / 'train'} and {folder / 'val'} hold different class folders "
                         f"({', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} in one only)")
    return StreamedDataset(name="imagenet", train=train, test=test, num_classes=len(train.classes),
                           mean=IMAGENET_MEAN, std=IMAGENET_STD, classes=train.classes,
                           info={"folder": str(folder)})
