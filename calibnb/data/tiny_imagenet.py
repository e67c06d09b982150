"""Tiny-ImageNet (Le & Yang 2015) read from its published folder, ``tiny-imagenet-200/``.

The release (``http://cs231n.stanford.edu/tiny-imagenet-200.zip``, 248 MB, extracted 110 000
JPEGs) holds 200 ImageNet classes at 64×64 pixels:

- ``wnids.txt``: the 200 WordNet ids (``n01443537``), one a line;
- ``train/<wnid>/images/<wnid>_<i>.JPEG``, ``i`` = 0..499, and ``train/<wnid>/<wnid>_boxes.txt``;
- ``val/images/val_<j>.JPEG``, ``j`` = 0..9999, labelled by ``val/val_annotations.txt``
  (tab-separated: file, wnid, the four corners of a bounding box), 50 images a class;
- ``test/images/``: 10 000 unlabelled images, which no paper uses.

Labels are the wnids' positions in sorted order, as the papers' code (``torrvision/
focal_calibration``, ``Data/tiny_imagenet.py``) numbers them. A few images are greyscale JPEGs;
they become RGB by repeating the grey channel, as that code's ``convert('RGB')`` does.

The papers' split (AdaFocal App. D.1, FTS §5.1; the DFL authors' research code,
``data_utils/tiny_imagenet.py``): each class's training images ``<wnid>_450`` .. ``<wnid>_499``
(50 a class, 10 000 in all) are the validation set, the other 90 000 the training set, and the
published validation set is the test set. The split is fixed by the file names, not drawn:
:data:`VAL_FROM` is its first validation number.

No checksum of the extracted files is published, and none of the archive by its publisher
(torchvision has no Tiny-ImageNet class). The md5 of the archive that other libraries record
(``lvyilin/pytorch-fgvc-dataset``'s ``TinyImageNet.md5``) is :data:`ARCHIVE_MD5`: check your
download with ``calibnb.data.md5sum`` before extracting it. What is checked here is the
structure: every file the annotations name exists, every image decodes as a 64×64 JPEG, every
wnid is one of ``wnids.txt``; ``verify=True`` also requires the published counts (200 classes,
500 training images a class, 10 000 annotated validation images, 50 a class), so a partial copy
fails unless ``verify=False``. Nothing in a file is executed: JPEGs are decoded by Pillow
(restricted to the JPEG decoder) and the text files are split, never evaluated.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .readers import reading

#: The published archive and the md5 that other libraries record for it (not its publisher's).
ARCHIVE_URL = "http://cs231n.stanford.edu/tiny-imagenet-200.zip"
ARCHIVE_MD5 = "90528d7ca1a48142e341f4ef8d21d0de"
#: The published counts that ``verify=True`` requires.
N_CLASSES, TRAIN_PER_CLASS, VAL_PER_CLASS = 200, 500, 50
#: A class's training images numbered from here on are the papers' validation set.
VAL_FROM = 450
#: Side of every image, in pixels.
SIZE = 64
#: Files damaged files listed in one error, at most (the count of the others follows).
LISTED = 20

_WNID = re.compile(r"n\d{8}")
_VAL_FILE = re.compile(r"val_\d+\.JPEG")


def read_wnids(folder: Path, verify: bool) -> tuple[str, ...]:
    """The sorted wnids of ``folder/wnids.txt``; a malformed or repeated one is a ``ValueError``
    naming the file and line."""
    path = folder / "wnids.txt"
    with reading(path, "a list of WordNet ids, one a line"):
        lines = path.read_text(encoding="ascii").splitlines()
    wnids = []
    for number, line in enumerate(lines, 1):
        wnid = line.strip()
        if not wnid:
            continue
        if not _WNID.fullmatch(wnid):
            raise ValueError(f"{path}, line {number}: {wnid!r} is not a WordNet id (n followed by 8 digits)")
        if wnid in wnids:
            raise ValueError(f"{path}, line {number}: {wnid} is listed twice")
        wnids.append(wnid)
    if not wnids:
        raise ValueError(f"{path} lists no class")
    if verify and len(wnids) != N_CLASSES:
        raise ValueError(f"{path} lists {len(wnids)} classes; the published Tiny-ImageNet has {N_CLASSES} "
                         "(pass verify=False for a subset)")
    return tuple(sorted(wnids))


def train_files(folder: Path, wnids: tuple[str, ...], verify: bool) -> tuple[list[Path], np.ndarray, np.ndarray]:
    """Every training image, class by class in label order and by number within a class:
    ``(paths, labels, numbers)`` where ``numbers[k]`` is the ``i`` of ``<wnid>_<i>.JPEG``."""
    paths, labels, numbers = [], [], []
    for label, wnid in enumerate(wnids):
        images = folder / "train" / wnid / "images"
        if not images.is_dir():
            raise ValueError(f"{images} is missing: wnids.txt lists {wnid}, so the training set needs its folder")
        pattern = re.compile(rf"{wnid}_(\d+)\.JPEG")
        found = {}
        for entry in os.scandir(images):
            match = pattern.fullmatch(entry.name)
            if match is None:
                raise ValueError(f"{images / entry.name} is not a training image of {wnid} (named {wnid}_<i>.JPEG)")
            found[int(match.group(1))] = images / entry.name
        if verify and sorted(found) != list(range(TRAIN_PER_CLASS)):
            raise ValueError(f"{images} holds {len(found)} images; the published Tiny-ImageNet has {wnid}_0 .. "
                             f"{wnid}_{TRAIN_PER_CLASS - 1}.JPEG (pass verify=False for a subset)")
        for number in sorted(found):
            paths.append(found[number])
            labels.append(label)
            numbers.append(number)
    if not paths:
        raise ValueError(f"{folder / 'train'} holds no training image")
    return paths, np.asarray(labels, dtype=np.int64), np.asarray(numbers, dtype=np.int64)


def val_files(folder: Path, wnids: tuple[str, ...], verify: bool) -> tuple[list[Path], np.ndarray]:
    """The annotated validation images in the annotations' order, and their labels."""
    path = folder / "val" / "val_annotations.txt"
    with reading(path, "Tiny-ImageNet's validation annotations (tab-separated text)"):
        lines = path.read_text(encoding="ascii").splitlines()
    index = {wnid: i for i, wnid in enumerate(wnids)}
    paths, labels, seen = [], [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{path}, line {number}"
        if len(fields) != 6 or not all(f.strip().lstrip("-").isdigit() for f in fields[2:]):
            raise ValueError(f"{where}: expected 6 tab-separated fields (file, wnid, 4 box corners), got {line!r}")
        name, wnid = fields[0], fields[1]
        if not _VAL_FILE.fullmatch(name):
            raise ValueError(f"{where}: {name!r} is not a validation image name (val_<j>.JPEG)")
        if wnid not in index:
            raise ValueError(f"{where}: {name} is labelled {wnid!r}, which is not a class of "
                             f"{folder / 'wnids.txt'}")
        if name in seen:
            raise ValueError(f"{where}: {name} is annotated twice")
        seen.add(name)
        paths.append(folder / "val" / "images" / name)
        labels.append(index[wnid])
    labels = np.asarray(labels, dtype=np.int64)
    if not paths:
        raise ValueError(f"{path} annotates no image")
    if verify:
        counts = np.bincount(labels, minlength=len(wnids))
        if len(paths) != N_CLASSES * VAL_PER_CLASS or (counts != VAL_PER_CLASS).any():
            raise ValueError(f"{path} annotates {len(paths)} images, {counts.min()}..{counts.max()} a class; the "
                             f"published Tiny-ImageNet has {VAL_PER_CLASS} for each of {N_CLASSES} classes "
                             "(pass verify=False for a subset)")
    return paths, labels


def _decode(path: Path) -> np.ndarray:
    """One image as ``(3, 64, 64)`` uint8; a ``ValueError`` naming ``path`` if it is not a
    64×64 JPEG (its header is checked before its pixels are decoded)."""
    from PIL import Image

    with reading(path, f"a {SIZE}×{SIZE} JPEG image"):
        with Image.open(path, formats=["JPEG"]) as image:
            if image.size != (SIZE, SIZE):
                raise ValueError(f"{path} is {image.size[0]}×{image.size[1]} pixels, not {SIZE}×{SIZE}")
            pixels = np.asarray(image.convert("RGB"), dtype=np.uint8)
    return pixels.transpose(2, 0, 1)


def decode_images(paths: list[Path], workers: int | None = None) -> tuple[np.ndarray, list[str]]:
    """The images at ``paths`` as one ``(N, 3, 64, 64)`` uint8 array, decoded on ``workers``
    threads (Pillow releases the GIL while it decodes), and what is wrong with each damaged or
    missing file, in the order of ``paths`` (its image in the array is left undefined)."""
    out = np.empty((len(paths), 3, SIZE, SIZE), dtype=np.uint8)
    damaged = []

    def decode(k: int) -> None:
        try:
            out[k] = _decode(paths[k])
        except (ValueError, FileNotFoundError) as error:
            damaged.append((k, str(error)))

    workers = workers or min(16, os.cpu_count() or 1)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(decode, range(len(paths)), chunksize=256))
    return out, [message for _, message in sorted(damaged)]


def _refuse(damaged: list[str]) -> None:
    """One ``ValueError`` naming every damaged file (the first :data:`LISTED`, then a count)."""
    if damaged:
        listed = "\n  ".join(damaged[:LISTED])
        more = f"\n  ... and {len(damaged) - LISTED} more" if len(damaged) > LISTED else ""
        raise ValueError(f"Tiny-ImageNet: {len(damaged)} damaged or missing image(s):\n  {listed}{more}")


def read_tiny_imagenet(folder: Path, verify: bool = True):
    """The published Tiny-ImageNet folder as arrays.

    Returns ``(x_train, y_train, x_test, y_test, classes, val_idx)``: the 100 000 training images
    ``(N, 3, 64, 64)`` uint8 class by class, the 10 000 published validation images (the
    papers' test set), the sorted wnids, and the positions in ``x_train`` of the papers'
    validation set (each class's images numbered :data:`VAL_FROM` and up).
    """
    folder = Path(folder)
    wnids = read_wnids(folder, verify)
    train_paths, y_train, numbers = train_files(folder, wnids, verify)
    test_paths, y_test = val_files(folder, wnids, verify)
    x_train, damaged_train = decode_images(train_paths)
    x_test, damaged_test = decode_images(test_paths)
    _refuse(damaged_train + damaged_test)
    val_idx = np.flatnonzero(numbers >= VAL_FROM).astype(np.int64)
    return x_train, y_train, x_test, y_test, wnids, val_idx
