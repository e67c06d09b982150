"""Data sets, the papers' train/validation split, and batched augmentation.

::

    from calibnb.data import load_dataset, train_val_split, augment, normalize

    fetch_dataset("fashion-mnist")                # once: into the per-user cache (make data)
    ds = load_dataset("fashion-mnist")            # Dataset: uint8 (N, 1, 28, 28) tensors
    logits, labels = load_predictions("cifar100-densenet-bc-100")  # a real network's outputs
    train_idx, val_idx = train_val_split(len(ds.y_train), val_size=5000, seed=1)
    g = torch.Generator().manual_seed(0)
    batch = augment(ds.x_train[train_idx[:128]], ds.mean, ds.std, generator=g)

Shape convention: images ``(N, C, H, W)``, signals ``(N, C, L)``, labels ``(N,)`` int64.
"""

from .augment import augment, normalize, random_crop, random_hflip
from .datasets import (DATASETS, TEXT_DATASETS, Dataset, StreamedDataset, fetch_dataset, find_glove,
                       load_dataset)
from .fetch import FetchError, cache_dir
from .predictions import list_predictions, load_predictions
from .integrity import EXPECTED_MD5, md5sum, verify_file
from .shifts import SHIFTS, gaussian_noise, load_shift, mnist_digits
from .splits import train_val_split

__all__ = [
    "DATASETS",
    "Dataset",
    "EXPECTED_MD5",
    "FetchError",
    "SHIFTS",
    "StreamedDataset",
    "TEXT_DATASETS",
    "augment",
    "cache_dir",
    "fetch_dataset",
    "find_glove",
    "gaussian_noise",
    "list_predictions",
    "load_dataset",
    "load_predictions",
    "load_shift",
    "md5sum",
    "mnist_digits",
    "normalize",
    "random_crop",
    "random_hflip",
    "train_val_split",
    "verify_file",
]
