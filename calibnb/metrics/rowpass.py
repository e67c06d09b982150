"""One streamed pass over a probability matrix: its validation and the per-row statistics.

Every metric of a top-label view, the NLL and the Brier score read a probability matrix
``(N, K)`` once for a few numbers per row: the top-label confidence ``max_k p_k`` and whether
the predicted class (:func:`calibnb.metrics.toplabel.predicted_class`) is the label (Guo et al.
2017, Eq. 3), the true class's probability ``p_y`` (the NLL) and ``Σ_k p_k²`` (the Brier score,
``Σ_k p_k² − 2 p_y + 1``). :func:`row_statistics` computes them a block of rows at a time
(:func:`calibnb.metrics.streaming.row_blocks`), checking each block as
:func:`calibnb._validation.check_probs` does (finite, non-negative, rows summing to 1), so no
float64 copy or N x K temporary of the whole matrix is made; a block that fails is handed to
``check_probs_labels``, which raises its usual message. Each row's numbers are those of the
whole-matrix computation, bit for bit (the same float64 operations on the same row).

Torch tensors are validated and reduced on their device
(:func:`calibnb._validation.check_device_probs_labels`), in float64, and the statistics come
back as float64 tensors there.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from calibnb._validation import (SIMPLEX_ATOL, _HALF_EPS, check_device_probs_labels, check_labels,
                                 check_probs_labels, to_numpy)
from calibnb.metrics.streaming import is_tensor, on_gpu, row_blocks
from calibnb.metrics.toplabel import TIE_RTOL, predicted_class


#: Threads that reduce blocks of rows at once (numpy releases the GIL inside each reduction).
WORKERS = 2


def row_statistics(probs, labels, true_class: bool = False, squares: bool = False,
                   names=("probs", "labels")):
    """Validate ``(probs, labels)``; return ``(conf, correct, p_true, sum_sq)``, float64 vectors
    of length N (``p_true`` only with ``true_class``, ``sum_sq`` only with ``squares``; None
    otherwise). numpy arrays for array input, tensors on the device of a tensor ``probs``."""
    if is_tensor(probs) and on_gpu(probs):
        return device_row_statistics(*check_device_probs_labels(probs, labels, names=names),
                                  true_class, squares)
    arr = to_numpy(probs, names[0])
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] < 2 or arr.dtype == bool or not (
            np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        p, y = check_probs_labels(probs, labels, names=names)  # a binary column, or refused
        return _host_statistics(p, y, true_class, squares, SIMPLEX_ATOL, probs, labels, names)
    y = _labels(arr, probs, labels, names)
    atol = max(SIMPLEX_ATOL, 2 * _HALF_EPS.get(str(getattr(probs, "dtype", "")), 0.0))
    return _host_statistics(arr, y, true_class, squares, atol, probs, labels, names)


def _labels(arr, probs, labels, names):
    try:
        return check_labels(labels, arr.shape[0], arr.shape[1], names[1], probs_name=names[0])
    except ValueError:
        check_probs_labels(probs, labels, names=names)  # the probabilities' error comes first
        raise


def _host_statistics(arr, y, true_class, squares, atol, probs, labels, names):
    n, k = arr.shape
    conf, correct = np.empty(n), np.empty(n)
    p_true = np.empty(n) if true_class else None
    sum_sq = np.empty(n) if squares else None
    # Below float64, two values within TIE_RTOL (1e-12) of each other are equal, so the predicted
    # class is the first maximal one, numpy's argmax, and the block needs no float64 copy. In
    # float64 the first class within TIE_RTOL of the maximum is looked for only in the rows whose
    # second largest entry is that close (a broadcast comparison costs three passes of argmax).
    exact_ties = np.issubdtype(arr.dtype, np.floating) and arr.dtype.itemsize < 8
    local = threading.local()

    def block(rows: slice) -> bool:
        p = arr[rows] if exact_ties else arr[rows].astype(np.float64, copy=False)
        index = np.arange(p.shape[0])
        pred = p.argmax(axis=1)  # a NaN is its row's argmax, and fails the check below
        top = p[index, pred].astype(np.float64)
        if not (p.min() >= 0 and np.isfinite(top).all()
                and (np.abs(p.sum(axis=1, dtype=np.float64) - 1.0) <= atol).all()):
            return False
        if not exact_ties:
            rest = getattr(local, "rest", None)
            if rest is None or rest.shape != p.shape:
                rest = local.rest = np.empty_like(p)
            np.copyto(rest, p)
            rest[index, pred] = -1.0
            tie = top * (1.0 - TIE_RTOL)
            near = rest.max(axis=1) >= tie
            if near.any():
                pred[near] = (p[near] >= tie[near, None]).argmax(axis=1)
        conf[rows] = p[index, pred]
        correct[rows] = pred == y[rows]
        if true_class:
            p_true[rows] = p[index, y[rows]]
        if squares:
            sum_sq[rows] = np.einsum("ij,ij->i", p, p, dtype=np.float64)
        return True

    blocks = list(row_blocks(n, k))
    if len(blocks) > 1:  # numpy's reductions release the GIL: two blocks at a time
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            passed = all(pool.map(block, blocks))
    else:
        passed = block(blocks[0])
    if not passed:
        check_probs_labels(probs, labels, names=names)  # raises the whole matrix's message
        raise AssertionError("a block failed the checks the whole matrix passed")  # pragma: no cover
    return conf, correct, p_true, sum_sq


def device_row_statistics(p, y, true_class: bool = False, squares: bool = False):
    """:func:`row_statistics` of validated tensors ``(p, y)`` on their device (CUDA tensors; a
    CPU tensor takes the numpy path on a view of its memory, and the tests run this on one)."""
    import torch

    n, k = p.shape
    out = [torch.empty(n, dtype=torch.float64, device=p.device) if wanted else None
           for wanted in (True, True, true_class, squares)]
    conf, correct, p_true, sum_sq = out
    for rows in row_blocks(n, k, gpu=on_gpu(p)):
        block = p[rows].to(torch.float64)
        top = block.amax(dim=1, keepdim=True)
        pred = (block >= top * (1.0 - TIE_RTOL)).to(torch.uint8).argmax(dim=1)
        conf[rows] = block.gather(1, pred[:, None])[:, 0]
        correct[rows] = (pred == y[rows]).to(torch.float64)
        if true_class:
            p_true[rows] = block.gather(1, y[rows, None])[:, 0]
        if squares:
            sum_sq[rows] = (block * block).sum(dim=1)
    return conf, correct, p_true, sum_sq


__all__ = ["row_statistics", "predicted_class"]
