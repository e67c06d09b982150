"""File integrity: the md5 of each data file's extracted content.

What is verified, file by file (``EXPECTED_MD5``):

- CIFAR-10 (``cifar-10-batches-py/``) and CIFAR-100 (``cifar-100-python/``): the md5 of every
  pickle batch extracted from the published ``.tar.gz``, as torchvision lists them
  (``torchvision.datasets.CIFAR10.train_list`` / ``test_list`` / ``meta``, likewise CIFAR100).
- SVHN: ``train_32x32.mat`` and ``test_32x32.mat`` are published unarchived; their md5 is the
  one torchvision lists (``torchvision.datasets.SVHN.split_list``).
- Fashion-MNIST: the md5 of the *decompressed* IDX files. The published md5s (torchvision's
  ``FashionMNIST.resources``) are those of the ``.gz`` archives, whose gzip headers differ between
  copies (Debian's ``dataset-fashion-mnist`` recompresses them), so calibnb checks the content:
  the four values below were computed by decompressing the original archives, whose own md5s
  match torchvision's list (train-images ``8d4fb7e6c68d591d4c3dfef9ec88bf0d``, train-labels
  ``25c81989df183df01b3e8a0aad5dffbe``, t10k-images ``bef4ecab320f06d8554ea6380940ec79``,
  t10k-labels ``bb300cfdad3c16e7a12a480ee83cd310``).
- CIFAR-10-C: only the archive's md5 is published (Zenodo record 2535967, ``CIFAR-10-C.tar``,
  ``56bf5dcef84df0e2308c6dcbcbbd8499``), not the md5 of the extracted ``.npy`` files. calibnb
  checks their layout instead: ``(50000, 32, 32, 3)`` uint8 images and ``(50000,)`` labels
  (see :func:`calibnb.data.loaders.read_cifar10c`). Check the archive yourself with
  :func:`md5sum` before extracting it.
- MNIST-1D is generated, not read; its generation arguments are pinned instead.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

#: ``EXPECTED_MD5[dataset][file name]`` = md5 of the file's extracted content.
EXPECTED_MD5: dict[str, dict[str, str]] = {
    "cifar10": {
        "data_batch_1": "c99cafc152244af753f735de768cd75f",
        "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
        "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
        "data_batch_4": "634d18415352ddfa80567beed471001a",
        "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
        "test_batch": "40351d587109b95175f43aff81a1287e",
        "batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
    },
    "cifar100": {
        "train": "16019d7e3df5f24257cddd939b257f8d",
        "test": "f0ef6b0ae62326f3e7ffdfab6717acfc",
        "meta": "7973b15100ade9c7d40fb424638fde48",
    },
    "svhn": {
        "train_32x32.mat": "e26dedcc434d2e4c54c9b2d4a06d8373",
        "test_32x32.mat": "eb5a983be6a315427106f1b164d9cef3",
    },
    "fashion-mnist": {
        "train-images-idx3-ubyte.gz": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
        "train-labels-idx1-ubyte.gz": "9018921c3c673c538a1fc5bad174d6f9",
        "t10k-images-idx3-ubyte.gz": "8181f5470baa50b63fa0f6fddb340f0a",
        "t10k-labels-idx1-ubyte.gz": "15d484375f8d13e6eb1aabb0c3f46965",
    },
}

_CHUNK = 1 << 20


def md5sum(path: str | Path) -> str:
    """The md5 of a file's content, decompressed first when the name ends in ``.gz``."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    digest = hashlib.md5()
    with opener(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: str | Path, dataset: str, content: bytes | None = None) -> None:
    """Raise ``ValueError`` naming ``path`` when its content md5 is not the published one.

    ``content``, when given, is the file's (decompressed) content already in memory, hashed
    instead of reading the file again.
    """
    path = Path(path)
    expected = EXPECTED_MD5[dataset][path.name]
    actual = md5sum(path) if content is None else hashlib.md5(content).hexdigest()
    if actual != expected:
        raise ValueError(
            f"{dataset} file {path} is corrupt or not the published release: the md5 of its "
            f"content is {actual}, expected {expected}. Delete it and fetch it again "
            f"(or pass verify=False to load it anyway)."
        )
