"""The papers' train/validation split of a training set.

Mukhoti et al. (2020) hold out 5 000 of CIFAR's 50 000 training images for validation, and
DFL, AdaFocal, FCL and FTS reuse their code. The rule (``torrvision/focal_calibration``,
``Data/cifar10.py``, ``get_train_valid_loader``): the indices ``0 .. n-1`` are shuffled with
``np.random.seed(seed); np.random.shuffle(indices)`` (seed 1 in ``train.py``), the first
``floor(valid_size * n)`` shuffled indices are the validation set and the rest the training set.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._validation import check_int, check_real


def train_val_split(
    n: int, val_size: int | float = 5000, seed: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(train_idx, val_idx)``, int64 index arrays that partition ``range(n)``.

    Parameters
    ----------
    n : number of training examples (50 000 for CIFAR).
    val_size : an int is the number of validation examples; a float in ``(0, 1)`` is a fraction,
        rounded down as in the reference code (``int(np.floor(valid_size * n))``).
    seed : the legacy numpy seed of the shuffle (the papers use 1).

    The permutation is the one ``np.random.seed(seed); np.random.shuffle(list(range(n)))``
    produces, drawn from a private ``RandomState`` so numpy's global state is left alone.
    ``val_idx`` keeps the shuffled order (the reference samples batches at random from it).
    """
    n = check_int(n, "n", minimum=2)
    seed = check_int(seed, "seed", minimum=0)
    if isinstance(val_size, numbers.Integral) and not isinstance(val_size, bool):
        n_val = check_int(val_size, "val_size", minimum=1)
    else:
        fraction = check_real(val_size, "val_size", minimum=0.0, maximum=1.0, strict_minimum=True)
        n_val = math.floor(fraction * n)
    if not 1 <= n_val < n:
        raise ValueError(f"val_size must leave both splits non-empty; got {n_val} of n={n}")
    indices = np.arange(n, dtype=np.int64)
    np.random.RandomState(seed).shuffle(indices)
    return indices[n_val:], indices[:n_val]
