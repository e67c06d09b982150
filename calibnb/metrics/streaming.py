"""Blocks of rows: the N x K work of a metric or a calibrator, a bounded slice at a time.

A metric or a top-label recalibrator needs per-row quantities of an ``(N, K)`` matrix (its
maximum, its log-sum-exp, the predicted class, the true class's entry); computed on the whole
matrix at once, each elementwise step (``z / T``, ``exp``, the normalisation, a one-hot) is a
fresh N x K temporary, several times the input at ImageNet size (50,000 x 1,000 float64 logits
are 0.4 GB). :func:`row_blocks` cuts the rows into blocks of about :data:`BLOCK_ELEMENTS`
entries (:data:`DEVICE_BLOCK_ELEMENTS` on a GPU, where a kernel launch costs more than a block's
memory), so the temporaries stay the size of a block whatever N, and each block's result is the
whole-matrix result of its rows: softmax and every reduction here are per row.

Arrays may be numpy arrays or torch tensors: :func:`is_tensor` tells them apart without
importing torch, and the helpers below take either, computing on the tensor's device.
"""

from __future__ import annotations

import numpy as np

#: Entries per block of rows on the CPU: 2 MB of float64, within a core's cache.
BLOCK_ELEMENTS = 1 << 18
#: Entries per block on a CUDA device: 128 MB of float64, enough to keep the GPU busy.
DEVICE_BLOCK_ELEMENTS = 1 << 24


def is_tensor(x) -> bool:
    """Whether ``x`` is a torch tensor (without importing torch)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "device")


def on_gpu(x) -> bool:
    """Whether ``x`` is a tensor on a non-CPU device."""
    return is_tensor(x) and x.device.type != "cpu"


def row_blocks(n: int, k: int, elements: int | None = None, gpu: bool = False):
    """Slices of consecutive rows covering ``range(n)``, each of about ``elements`` entries of a
    ``(n, k)`` matrix (at least one row)."""
    if elements is None:
        elements = DEVICE_BLOCK_ELEMENTS if gpu else BLOCK_ELEMENTS
    rows = max(1, elements // max(k, 1))
    for start in range(0, n, rows):
        yield slice(start, min(start + rows, n))


def true_class_entries(x, y):
    """``x[i, y_i]`` for each row (numpy fancy indexing, or ``gather`` for a tensor)."""
    if is_tensor(x):
        return x.gather(1, y[:, None])[:, 0]
    return x[np.arange(x.shape[0]), y]
