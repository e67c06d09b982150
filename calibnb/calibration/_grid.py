"""The vectorised (γ, T) grid behind :class:`FocalTemperatureScaling`.

Scoring one candidate (γ, T) the straightforward way costs a softmax, the full focal map and a
sort of the confidences. The grid reuses work instead:

* per temperature, the γ-free terms of Eq. (1) (``log q``, ``log(1 − q)``, ``d``) are computed
  once for every class (in registers, not stored, in the compiled kernel);
* the binned ECE and the NLL need only the top-class probability and the label's probability, so
  for each γ only the normaliser ``Σ_k w_k`` is summed over the classes, all γ at once;
* the equal-mass ECE of a batch of candidates needs the order statistics at the bin splits (one
  sort per candidate) and one ``bincount`` for all candidates.

The equal-mass split is :func:`calibnb.metrics.binning.mass_group_starts` (array-split groups,
midpoint edges, ``(lo, hi]`` bins, as :func:`calibnb.metrics.binning.mass_edges_sorted`), and the
per-bin sums accumulate in sample order exactly as :func:`calibnb.metrics.ece` does, so the
batched ECE equals the metric for every candidate.

:class:`FocalGrid` (the criteria's probabilities) and :func:`batched_ece` come first, then the
helpers of each, top-down.
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from .._threads import single_threaded
from ..metrics.binning import mass_group_starts
from ..metrics.streaming import is_tensor, row_blocks
from .focal_map import SERIES_BELOW

#: Grids with more (sample, class, γ, T) evaluations than this run the compiled kernel (see
#: :class:`FocalGrid`: where the compiled fit's saving exceeds the compilation's cost).
COMPILE_ABOVE = 1e10
#: Up to this many classes, the class axis of the logits leads ((K, N), see :class:`FocalGrid`).
CLASS_MAJOR_UP_TO = 32
#: :func:`power_plan`: γ that are multiples of ``POWER_STEP`` (the compiled kernel's ``u`` is
#: ``(1 − q)^(−1/4)``, two square roots), up to ``MAX_POWER`` steps.
POWER_STEP, MAX_POWER = 0.25, 20
#: :func:`fine_plan`: the finest step ``1 / MAX_FINE_STEPS`` and the most steps ``MAX_FINE_POWER``.
MAX_FINE_STEPS, MAX_FINE_POWER = 100, 64
#: :func:`grid_blocks`: the streaming passes hold about this many logits (1 MiB of float64) at a
#: time, so their temporaries stay in a core's cache whatever the size of the logits.
BLOCK_ELEMENTS = 2**17
#: :func:`batched_ece` gives each thread a block of at least this many candidates (rows).
ROWS_PER_THREAD = 32
#: :func:`batched_ece` scores at most this many (candidate, sample) entries at a time (16 MiB of
#: float64 confidences, and their sorted copy and bin indices, per thread).
ECE_BLOCK_ELEMENTS = 1 << 21


class FocalGrid:
    """Top-class and label log-probabilities of ``focal_softmax(z, γ, T)`` for many γ at once.

    Built once from validation logits and labels; :meth:`evaluate` takes one temperature and a
    vector of γ and returns ``(conf, log_p_label)``, each of shape (n_gammas, N). Computed in
    float64 with the same log-space formulas as :mod:`calibnb.calibration.focal_map` (the top
    class through the outside mass ``m``), so it is finite for any finite logits. The
    temperature-free part of the softmax is done once here: each row's logits relative to its
    largest non-top logit, ``h = z − z_(2)`` (``-inf`` at the top class), and the gap
    ``z_(2) − z_top``; a temperature then costs one ``exp`` per logit and no running maximum.
    Results agree with the per-candidate ``focal_softmax`` to about 1e-15 in the confidence; like
    any two float64 evaluations, they may round a mathematical tie between two samples (say, two
    logit rows that are translates of each other) apart by an ulp in different directions, and
    where such a tie straddles an equal-mass split the two binnings, and ECEs, then differ.

    Grids with more than ``COMPILE_ABOVE`` (sample, class, γ, T) evaluations (``n_evaluations``
    times the size of the logits) run the kernel through ``torch.compile`` in the form of
    :func:`_fused_top_kernel`, two vectorised loops over the logits per temperature, with
    PyTorch's thread setting. Smaller ones run :func:`_focal_top_kernel` eagerly: each block of
    rows on one of the caller's threads (:func:`_map_blocks`), its operations on one thread
    (:func:`calibnb._threads.single_threaded`), since a block's element-wise steps are too small
    for PyTorch's own threads to pay. The compiled kernel is about 2.5× faster than the eager
    one, but compiling it costs 10–25 s once per fresh process (torch.compile's fixed cost,
    on an empty compile cache; 5 s with a warm one), which a fit pays before its first
    candidate. The threshold is where compiling starts to repay itself within the fit:
    the paper's grid on 5000 × 100 logits (2.25e9 evaluations, the CIFAR-100 case: about 6 s
    eager on 2 cores) stays eager, so a fresh process's first fit costs what a later one does;
    on 25,000 × 1000 (1.1e11) the compiled fit takes minutes and the compilation is a few per
    cent of it. ``bench/bench_fts_grid.py --cold`` measures the first fit in fresh processes
    against a warm one. With at most ``CLASS_MAJOR_UP_TO`` classes the logits are stored
    classes first, (K, N): the per-γ sums over a few classes then vectorise across samples;
    across classes otherwise.

    The grid keeps the logits themselves (a view of them, or with ``CLASS_MAJOR_UP_TO`` classes or
    fewer a transposed copy) and a few numbers per row; each kernel call forms ``h`` for its block
    of rows (:func:`grid_blocks`, about ``BLOCK_ELEMENTS`` logits), so its temporaries are a
    block's, in cache, and the peak extra memory is a few blocks and the (n_gammas, N) results,
    whatever N and K. Torch tensors are evaluated on their device (never compiled on a GPU, where
    the eager kernel is fast), and the results are tensors there.
    """

    def __init__(self, z, y, n_evaluations: float = 0.0):
        self.tensors = is_tensor(z)  # tensors in, tensors out, computed on their device
        logits = z if self.tensors else torch.from_numpy(np.ascontiguousarray(z))
        labels = y if self.tensors else torch.from_numpy(y)
        logits = logits.to(torch.float64)
        gpu = logits.device.type != "cpu"
        self.class_dim = 0 if logits.shape[1] <= CLASS_MAJOR_UP_TO else 1
        # per block of rows, the logits themselves (a view; classes first: a transposed copy)
        # and a few numbers per row: h is formed per block inside each kernel call, so the
        # grid holds no (N, K) array besides the logits, and a block's temporaries stay in cache
        blocks = row_blocks(*logits.shape, gpu=True) if gpu else grid_blocks(*logits.shape)
        self.blocks = [self._block(logits[rows], labels[rows]) for rows in blocks]
        correct = torch.cat([b[3] == b[4] for b in self.blocks]).to(torch.float64)
        self.correct = correct if self.tensors else correct.numpy()
        # on a GPU the eager kernel is fast enough: no compilation
        self.compiled = not gpu and n_evaluations * logits.numel() > COMPILE_ABOVE
        self.kernel = _compiled_kernel() if self.compiled else _focal_top_kernel

    def _block(self, logits: torch.Tensor, y: torch.Tensor) -> tuple:
        """``(z, second, gap, top, y)`` of one block of rows: its logits in the grid's class
        layout, the largest non-top logit ``z_(2)``, the gap ``z_(2) − z_top`` (<= 0), the top
        class (the first largest) and the labels."""
        top = logits.argmax(dim=1)
        second = torch.where(_is_top(top, logits.shape[1], 1), -torch.inf, logits).amax(dim=1)
        gap = second - logits.amax(dim=1)
        z = logits.T.contiguous() if self.class_dim == 0 else logits
        return z, second, gap, top, y

    def evaluate(self, temperature: float, gammas):
        """``(conf, log_p_label)`` of shape (n_gammas, N) at one ``temperature`` and every γ:
        numpy arrays, or tensors on the device of the grid's logits."""
        g = torch.from_numpy(np.asarray(gammas, dtype=np.float64))
        t = torch.tensor(float(temperature), dtype=torch.float64)
        if self.compiled:
            # shared powers only in the compiled kernel: the eager one keeps the exact formulas
            # of focal_softmax, so a small grid rounds ties between samples as the
            # per-candidate loop does
            powers, fine = _plans(tuple(g.tolist()))
            parts = [self.kernel(*block, t, g, self.class_dim, powers=powers, fine=fine)
                     for block in self.blocks]
        elif self.blocks[0][0].device.type != "cpu":
            parts = [self.kernel(*block, t, g, self.class_dim) for block in self.blocks]
        else:
            # the blocks on the caller's threads, each block's operations on one: a block's
            # element-wise steps are too small for torch's own threads to pay
            workers = min(torch.get_num_threads(), len(self.blocks))
            with single_threaded():
                parts = _map_blocks(lambda block: self.kernel(*block, t, g, self.class_dim),
                                    self.blocks, workers)
        conf, log_p_label = (torch.cat(p).T for p in zip(*parts))
        return (conf, log_p_label) if self.tensors else (conf.numpy(), log_p_label.numpy())


def grid_blocks(n: int, k: int) -> list:
    """Slices of the ``n`` rows of (n, k) logits, about :data:`BLOCK_ELEMENTS` logits each.

    No block has exactly ``k`` rows or a single row when ``n`` has a choice: the compiled kernel
    (``torch.compile(dynamic=True)``) gives two equal sizes one symbol ("duck sizing") and
    specialises sizes 0 and 1, so such a block would recompile it (torch.compile's whole fixed
    cost) in the middle of a fit. The block height goes down by one row until neither it nor the
    last block's is one of those sizes.
    """
    rows = max(2, BLOCK_ELEMENTS // max(k, 1))
    while rows > 2 and (rows == k or (n > rows and n % rows in (1, k))):
        rows -= 1
    return [slice(start, min(start + rows, n)) for start in range(0, n, rows)]


def batched_ece(conf, correct, n_bins: int, binning: str) -> np.ndarray:
    """Top-label ECE of each row of ``conf`` (M, N) against ``correct``: shared (N,), or one row
    per row of ``conf`` (M, N).

    Row ``i`` equals ``calibnb.metrics.ece(P_i, labels, n_bins, binning)`` for any probabilities
    ``P_i`` whose top-class probabilities are ``conf[i]`` and whose correctness is ``correct``.
    Rows are independent: they are scored in chunks of at most ``ECE_BLOCK_ELEMENTS`` entries
    (so the sort and the bin indices never hold more, whatever M and N), on up to
    ``torch.get_num_threads()`` threads (numpy's sort, comparisons and ``bincount`` release the
    GIL, so the chunks run in parallel); the result does not depend on the split. Torch tensors
    are scored on their device (:func:`_batched_ece_tensor`); only the M scores come back.
    """
    if is_tensor(conf):
        return _batched_ece_tensor(conf, correct, n_bins, binning).cpu().numpy()
    conf = np.ascontiguousarray(conf)  # numpy sorts the rows of a column-major array far slower
    m, n = conf.shape
    workers = max(1, min(torch.get_num_threads(), m // ROWS_PER_THREAD))
    rows = max(1, min(ECE_BLOCK_ELEMENTS // max(n, 1), -(-m // workers)))
    chunks = [slice(start, start + rows) for start in range(0, m, rows)]

    def score(chunk: slice) -> np.ndarray:
        right = correct[chunk] if correct.ndim == 2 else correct
        return _batched_ece(conf[chunk], right, n_bins, binning)

    return np.concatenate(_map_blocks(score, chunks, min(workers, len(chunks))))


# FocalGrid's helpers: the γ plans, the compiled and eager kernels, then the terms they share.


@functools.lru_cache(maxsize=64)
def _plans(gammas: tuple) -> tuple:
    """:func:`power_plan` and :func:`fine_plan` of a γ grid, worked out once per grid (a fit
    evaluates the same grid at hundreds of temperatures)."""
    powers = power_plan(gammas)
    return powers, fine_plan(gammas, powers)


def power_plan(gammas) -> tuple:
    """For each γ, ``k`` if ``γ = k · POWER_STEP`` with ``0 < |k| <= MAX_POWER``, else None.

    ``(1 − q)^(−γ)`` of such a γ is ``u^k`` with ``u = (1 − q)^(−POWER_STEP)``: a few
    multiplications (repeated squaring, shared across the γ) instead of an exponential per γ.
    Seven of the paper's nine γ are multiples of 1/4 (the largest, 5, is ``u^20``); the
    relative rounding error of ``u^k`` is at most about ``2 |k|`` ulp (``u``'s own error
    amplified ``|k|`` times), 1e-14 at ``k = 20``, against one ulp for the exponential.
    """
    ks = _multiples(np.asarray(gammas, dtype=np.float64).tolist(), round(1 / POWER_STEP), MAX_POWER)
    return tuple(None if k == 0 else k for k in ks)


def fine_plan(gammas, powers: tuple):
    """For the γ without a :func:`power_plan` power: ``(m, ks)`` with ``γ = ks[i] / m``.

    ``m`` is the smallest integer up to ``MAX_FINE_STEPS`` for which every such γ is the float
    nearest ``k / m`` with ``|k| <= MAX_FINE_POWER`` (``ks`` is None at the γ that have a
    power); None when there is no such γ or no such ``m``. ``(1 − q)^(−γ)`` is then ``v^k``
    with ``v = exp(−log(1 − q) / m)``: one exponential for all of them instead of one each. The
    paper's 0.05 and 0.37 are ``v^5`` and ``v^37`` with ``m = 100``; the relative rounding error
    of ``v^37`` is about 1e-14.
    """
    rest = [float(g) for g, k in zip(np.asarray(gammas, dtype=np.float64), powers) if k is None]
    if not rest:
        return None
    for m in range(1, MAX_FINE_STEPS + 1):
        ks = _multiples(rest, m, MAX_FINE_POWER)
        if None not in ks:
            found = iter(ks)
            return m, tuple(next(found) if k is None else None for k in powers)
    return None


def _multiples(gammas: list, m: int, max_power: int) -> list:
    """For each γ, ``k`` if γ is the float nearest ``k / m`` with ``|k| <= max_power``, else None."""
    ks = [round(g * m) for g in gammas]
    return [k if abs(k) <= max_power and k / m == g else None for k, g in zip(ks, gammas)]


@functools.cache
def _compiled_kernel():
    """:func:`_fused_top_kernel` through ``torch.compile``, compiled once per process.

    Symbolic shapes: one compilation serves every N and K of a class layout (static shapes were
    barely faster); it specialises on the γ grid's powers (the paper's grid, and the two and one
    γ of the line search), each compiled once per process.
    """
    return torch.compile(_fused_top_kernel, dynamic=True)


def _focal_top_kernel(z, second, gap, top, y, temperature, g, dim=1):
    """``(conf, log_p_label)`` of shape (N, n_gammas) for one temperature (see ``FocalGrid``).

    The formulas of :func:`calibnb.calibration.focal_map._log_focal_map`, restricted to what the
    criteria need: the top class's weight and the normaliser summed over the other classes, one
    exponential per γ and class. The γ-free terms are computed once, then summed over the
    classes once per γ (:func:`_eager_weight_sums`). ``dim`` is the class axis of ``z``
    (1: ``z`` is (N, K); 0: (K, N)).

    Eagerly each step is a pass over the block and each new array an allocation, so the γ-free
    part works in place in five buffers: ``h / T`` becomes ``log q``, ``e`` becomes ``q``, and the
    top class (``q = 0``) is set by index rather than by a mask over every class. Every value is
    the one the plain formulas give, bit for bit (tested): only the buffers differ.
    """
    top_index = top.unsqueeze(dim)
    a = torch.sub(z, second.unsqueeze(dim)).scatter_(dim, top_index, -math.inf).div_(temperature)
    e = torch.exp(a)                                      # exp(h / T), 0 at the top class
    log_s = gap / temperature + torch.log(e.sum(dim=dim))
    log1p_s = torch.log1p(torch.exp(log_s))
    shift, log_m = gap / temperature - log1p_s, log_s - log1p_s
    log_q = a.add_(shift.unsqueeze(dim))
    q = e.mul_(torch.exp(shift).unsqueeze(dim))
    log_1mq = torch.neg(q).log1p_()
    buffer = torch.sub(q, 1.0)
    x = torch.mul(q, log_q).scatter_(dim, top_index, 0.0).div_(buffer)  # −q log q / (1 − q) = 1 − d
    w_sum = _eager_weight_sums(q, log_q, log_1mq, x, g.tolist(), dim, buffer)  # g: on the host
    log_q_y, log_1mq_y, x_y = (torch.gather(t, dim, y.unsqueeze(dim)).reshape(-1, 1)
                               for t in (log_q, log_1mq, x))
    return _confidence_and_label(w_sum, log_q_y, log_1mq_y, 1.0 - x_y, log1p_s, log_m, top, y,
                                 g.to(z.device), dim=None)


def _eager_weight_sums(q, log_q, log_1mq, x, gammas: list, dim, weight):
    """``Σ_{k≠top} w_k`` (N, n_gammas) with ``w = exp(log q − γ log(1 − q)) / (1 + γ x)``, each γ
    in four passes over two buffers (``weight``, the caller's, and one more: no allocation per γ;
    eagerly, the passes and the allocator are the cost). ``1 + γ x`` equals Eq. (1)'s
    ``(1 + γ) − γ d``; at every class but the top, ``x <= log 2`` and it is at least
    ``1 − log 2`` for γ >= −1."""
    denominator = torch.empty_like(q)
    one = torch.ones((), dtype=q.dtype, device=q.device)
    sums = []
    for gamma in gammas:
        torch.add(log_q, log_1mq, alpha=-gamma, out=weight).exp_()
        torch.add(one, x, alpha=gamma, out=denominator)
        sums.append(weight.div_(denominator).sum(dim=dim))
    return torch.stack(sums, dim=1)


def _fused_top_kernel(z, second, gap, top, y, temperature, g, dim=1, powers=(), fine=None):
    """:func:`_focal_top_kernel` in two passes over the logits, for a compiler to fuse.

    The first pass writes ``e = exp(h / T)`` and sums it for the row terms; the second computes
    every class's other γ-free terms in registers and accumulates all the γ sums, so ``e`` is
    the only (N, K) array written per temperature (writing the four γ-free terms costs more
    than computing them). The γ with a :func:`power_plan` power ``k`` take ``(1 − q)^(−γ)`` as
    ``u^k`` with ``u = (1 − q)^(−1/4) = 1 / sqrt(sqrt(1 − q))`` (two square roots, cheaper than
    ``exp`` and ``log1p``); ``log(1 − q)`` is computed only if some γ has no power.
    The other γ take ``v^k`` (:func:`fine_plan`) when they share a step ``1/m``, else an
    ``exp`` each. Transcendental functions are most of the cost: per class, ``exp`` for ``e``,
    and, if some γ has no quarter power, ``log(1 − q)`` and one ``exp`` (per such γ without
    a step). :func:`_compiled_kernel` compiles the whole function as one graph (a little faster
    than compiling the two passes apart).
    """
    h = _shifted(z, second, top, dim)
    e, shift, log1p_s, log_m = _row_terms(h, gap, temperature, dim)
    return _fused_gamma_sums(e, h, shift, log1p_s, log_m, top, y, temperature, g, dim, powers, fine)


def _shifted(z, second, top, dim):
    """``h = z − z_(2)``, ``-inf`` at the top class: a row's logits relative to its largest
    non-top logit (``dim``: the class axis of ``z``)."""
    return torch.where(_is_top(top, z.shape[dim], dim), -torch.inf, z) - second.unsqueeze(dim)


def _is_top(top, k: int, dim: int):
    """The mask of each row's top class, with the class axis ``dim`` of a (N, K) or (K, N) array."""
    classes = torch.arange(k, device=top.device)
    return classes[None, :] == top[:, None] if dim == 1 else classes[:, None] == top[None, :]


def _row_terms(h, gap, temperature, dim=1):
    """``e = exp(h / T)``, ``shift`` (the log-probability of the second-largest class),
    ``log1p(s)`` and ``log m = log(1 − q_top)``.

    With ``s = Σ_{k≠top} exp((z_k − z_top) / T)``: ``log q_top = −log1p(s)`` and
    ``log m = log s − log1p(s)``, where ``log s = gap / T + log Σ e`` stays finite when ``s``
    underflows (the sum is at least 1: ``h`` is 0 at the second-largest logit).
    """
    e = torch.exp(h / temperature)               # 0 at the top class
    log_s = gap / temperature + torch.log(e.sum(dim=dim))
    log1p_s = torch.log1p(torch.exp(log_s))
    return e, gap / temperature - log1p_s, log1p_s, log_s - log1p_s


def _fused_gamma_sums(e, h, shift, log1p_s, log_m, top, y, temperature, g, dim=1, powers=(),
                      fine=None):
    """The second pass of :func:`_fused_top_kernel`: the class terms, then all γ sums."""
    log_q, q = _log_q_and_q(e, h, shift, temperature, dim)
    # log(1 − q) for the γ without a power: 1 − q is exact to 2^-54 for q <= 1/2 (every class
    # but the top), so log is as accurate here as log1p, and cheaper
    log_1mq = torch.log(1.0 - q) if None in powers else None
    u = torch.rsqrt(torch.sqrt(1.0 - q)) if any(k is not None for k in powers) else None
    w_sum = _weight_sums(q, log_q, log_1mq, _d_of(q, log_q), u, g, powers, dim, fine)
    log_q_y = torch.gather(h, dim, y.unsqueeze(dim)).reshape(-1, 1) / temperature + shift[:, None]
    q_y = torch.exp(log_q_y)
    return _confidence_and_label(w_sum, log_q_y, torch.log1p(-q_y), _d_of(q_y, log_q_y),
                                 log1p_s, log_m, top, y, g, dim=None)


def _log_q_and_q(e, h, shift, temperature, dim):
    """``log q`` and ``q`` of the non-top classes (``-inf`` and 0 at the top class)."""
    return h / temperature + shift.unsqueeze(dim), e * torch.exp(shift).unsqueeze(dim)


def _d_of(q, log_q):
    """``d = 1 − x = 1 + q log q / (1 − q)`` of Eq. (1) (1 at ``q = 0``, where ``log q = −inf``)."""
    return 1.0 + torch.where(q > 0, q * log_q, 0.0) / (1.0 - q)


def _weight_sums(q, log_q, log_1mq, d, u, g, powers, dim, fine=None):
    """``Σ_{k≠top} w_k`` (N, n_gammas), ``w = q (1 − q)^(−γ) / ((1 + γ) − γ d)``.

    γ with a power ``k`` (:func:`power_plan`) take ``(1 − q)^(−γ) = u^k``; with ``fine``
    (:func:`fine_plan`) the others take ``v^k``, else ``exp(log q − γ log(1 − q))``. One
    reduction over the classes per γ, which a compiler fuses into a single pass (faster than
    one (N, n_gammas, K) reduction); eagerly, it keeps the temporaries the size of the logits.
    """
    quarter = _powers_of(u) if u is not None else None
    step = _powers_of(torch.exp(log_1mq * (-1.0 / fine[0]))) if fine else None
    sums = []
    for i, k in enumerate(powers):
        power = quarter
        if k is None and fine:
            k, power = fine[1][i], step
        denominator = (1.0 + g[i]) - g[i] * d
        if k is None:
            weight = torch.exp(log_q - g[i] * log_1mq) / denominator
        elif k == 0:
            weight = q / denominator
        elif k > 0:
            weight = q * power(k) / denominator
        else:
            weight = q / (denominator * power(-k))
        sums.append(weight.sum(dim=dim))
    return torch.stack(sums, dim=1)


def _powers_of(u):
    """``k -> u^k`` by repeated squaring, each power computed once (negative ``k``: ``1 / u^|k|``)."""
    memo = {1: u}

    def power(k: int):
        if k not in memo:
            if k < 0:
                memo[k] = 1.0 / power(-k)
            else:
                half = power(k // 2)
                memo[k] = half * half if k % 2 == 0 else half * half * u
        return memo[k]

    return power


def _confidence_and_label(w_sum, log_q, log_1mq, d, log1p_s, log_m, top, y, g, dim):
    """Top-class confidence and label log-probability (N, n_gammas) from the sums ``w_sum``.

    ``log_q``, ``log_1mq`` and ``d`` are the γ-free terms of every class (``dim`` their class
    axis), from which the label's are picked, or already the label's, (N, 1), with ``dim=None``.
    """
    g_row = g[None, :]
    log_w_top = (-log1p_s[:, None] - g_row * log_m[:, None]
                 - _log_denominator(g_row, _log_d_top(log_m)[:, None]))
    ratio = torch.exp(torch.log(w_sum) - log_w_top)            # Σ_{k≠top} w_k / w_top
    conf = 1.0 / (1.0 + ratio)
    if dim is not None:
        pick = y.unsqueeze(dim)
        log_q, log_1mq, d = (torch.gather(a, dim, pick).reshape(-1, 1) for a in (log_q, log_1mq, d))
    log_w_y = log_q - g_row * log_1mq - torch.log((1.0 + g_row) - g_row * d)
    log_z = log_w_top + torch.log1p(ratio)      # log of the normaliser Σ_k w_k
    log_p_label = torch.where((y == top)[:, None], -torch.log1p(ratio), log_w_y - log_z)
    return conf, log_p_label


def _log_denominator(g, log_d):
    """``log((1 + γ) − γ d)``, as a log-sum for γ < 0 so that γ = −1 with tiny ``d`` is exact."""
    negative = torch.logaddexp(torch.log1p(torch.clamp(g, max=0.0)), torch.log(g.abs()) + log_d)
    return torch.where(g < 0, negative, torch.log((1.0 + g) - g * torch.exp(log_d)))


def _log_d_top(log_m: torch.Tensor) -> torch.Tensor:
    """``log d`` of the top class, ``d = 1 + (1 − m) log1p(−m) / m = m/2 + m²/6 + m³/12 + …``."""
    m = torch.exp(log_m)
    small = m < SERIES_BELOW
    safe = torch.where(small, 0.5, m)
    direct = torch.log1p((1.0 - safe) * torch.log1p(-safe) / safe)
    return torch.where(small, log_m - math.log(2.0) + torch.log1p(m / 3 + m**2 / 6), direct)


# batched_ece's helpers.


@functools.cache
def _thread_pool(workers: int) -> ThreadPoolExecutor:
    """One pool per worker count, kept for the process (a fit evaluates the kernel and
    ``batched_ece`` many times)."""
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="calibnb-grid")


def _map_blocks(function, blocks: list, workers: int) -> list:
    """``[function(b) for b in blocks]``, on ``workers`` threads when there are several (torch's
    operations release the GIL, so the blocks run in parallel)."""
    if workers > 1:
        return list(_thread_pool(workers).map(function, blocks))
    return [function(block) for block in blocks]


def _batched_ece(conf: np.ndarray, correct: np.ndarray, n_bins: int, binning: str) -> np.ndarray:
    """:func:`batched_ece` on one block of rows, in the calling thread."""
    m, n = conf.shape
    if binning == "mass":
        interior = _mass_interior_edges(conf, n_bins)
    else:
        interior = np.broadcast_to(np.linspace(0.0, 1.0, n_bins + 1)[1:-1], (m, n_bins - 1))
    # searchsorted(edges, side="left"): the number of edges below, counted in one byte per
    # sample (far less memory traffic than an int64 count)
    bins = np.zeros((m, n), dtype=np.uint8 if n_bins <= 256 else np.int64)
    above = np.empty((m, n), dtype=bool)
    for b in range(n_bins - 1):
        bins += np.greater(conf, interior[:, b : b + 1], out=above)
    cells = (bins + np.arange(0, m * n_bins, n_bins)[:, None]).ravel()
    conf_sum = np.bincount(cells, weights=conf.ravel(), minlength=m * n_bins)
    acc_sum = np.bincount(cells, weights=np.broadcast_to(correct, (m, n)).ravel(),
                          minlength=m * n_bins)
    return np.abs(conf_sum - acc_sum).reshape(m, n_bins).sum(axis=1) / n


def _mass_interior_edges(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """The interior equal-mass edges of each row: ``mass_edges_sorted(sorted row)[1:-1]``.

    Midpoints between the groups of :func:`calibnb.metrics.binning.mass_group_starts`, which
    depend on N alone, so one set of split points serves every row; groups left empty when
    N < n_bins start at the top edge, 1.
    """
    starts = mass_group_starts(conf.shape[1], n_bins)
    interior = np.ones((conf.shape[0], n_bins - 1))
    if starts.size:  # a full sort: faster than np.partition at the ~2 (n_bins - 1) split points
        # (and numpy's sort of float64 rows is faster than torch.sort on the CPU)
        ordered = np.sort(conf, axis=1)
        interior[:, : starts.size] = (ordered[:, starts - 1] + ordered[:, starts]) / 2.0
    return interior


def _batched_ece_tensor(conf, correct, n_bins: int, binning: str):
    """:func:`batched_ece` of float64 tensors, on their device: the same ``(lo, hi]`` bins (the
    equal-mass edges at the midpoints of the same split points), one batched ``searchsorted``
    and one ``index_add_`` per sum, in chunks of rows like the numpy form. Returns an (M,) tensor.

    The bins are the numpy form's; the sums agree with it to rounding (a few ulp: the bins' gaps
    are added in another order, and on a GPU each bin's sum is atomic additions in any order)."""
    m, n = conf.shape
    rows = max(1, ECE_BLOCK_ELEMENTS // max(n, 1))
    if correct.ndim == 1:
        correct = correct.expand(m, n)
    return torch.cat([_batched_ece_tensor_chunk(conf[s : s + rows], correct[s : s + rows],
                                                n_bins, binning) for s in range(0, m, rows)])


def _batched_ece_tensor_chunk(conf, correct, n_bins: int, binning: str):
    m, n = conf.shape
    options = {"dtype": torch.float64, "device": conf.device}
    interior = torch.ones((m, n_bins - 1), **options)
    if binning == "mass":
        starts = torch.as_tensor(mass_group_starts(n, n_bins), device=conf.device)
        if starts.numel():
            ordered = torch.sort(conf, dim=1).values
            interior[:, : starts.numel()] = (ordered[:, starts - 1] + ordered[:, starts]) / 2.0
    else:
        interior[:] = torch.linspace(0.0, 1.0, n_bins + 1, **options)[1:-1]
    # the number of interior edges below each confidence (numpy's searchsorted side="left")
    cells = torch.searchsorted(interior, conf.contiguous(), right=False)
    cells += torch.arange(0, m * n_bins, n_bins, device=conf.device)[:, None]
    sums = torch.zeros((2, m * n_bins), **options)
    sums[0].index_add_(0, cells.ravel(), conf.reshape(-1))
    sums[1].index_add_(0, cells.ravel(), correct.reshape(-1).to(torch.float64))
    return (sums[0] - sums[1]).abs_().reshape(m, n_bins).sum(dim=1) / n


def focal_softmax_tensor(z, gamma: float, temperature: float):
    """:func:`calibnb.calibration.focal_softmax` of a torch tensor of logits, in float64 on its
    device: the same log-space formulas (:func:`calibnb.calibration.focal_map._log_focal_map`),
    one block of rows at a time (equal to the numpy form to rounding; tested)."""
    out = torch.empty(z.shape, dtype=torch.float64, device=z.device)
    for rows in row_blocks(*z.shape, gpu=z.device.type != "cpu"):
        out[rows] = _log_focal_softmax_block(z[rows].to(torch.float64) / temperature, gamma).exp_()
    return out


def _log_focal_softmax_block(z, gamma: float):
    """``log focal_softmax`` of the rows ``z`` (already divided by the temperature)."""
    is_top = _is_top(z.argmax(dim=1), z.shape[1], 1)
    shifted = z - z.amax(dim=1, keepdim=True)
    log_s = torch.logsumexp(shifted.masked_fill(is_top, -torch.inf), dim=1)
    log1p_s = torch.log1p(torch.exp(log_s))
    log_q = torch.where(is_top, -log1p_s[:, None], shifted - log1p_s[:, None])
    log_m = log_s - log1p_s
    one_hot = torch.isneginf(log_m)[:, None]  # only from probabilities: kept one-hot
    log_m = torch.where(one_hot[:, 0], math.log(0.5), log_m)
    q_other = torch.where(is_top, 0.0, torch.exp(log_q))
    log_1mq = torch.where(is_top, log_m[:, None], torch.log1p(-q_other))
    log_d = torch.where(is_top, _log_d_top(log_m)[:, None],
                        torch.log1p(torch.xlogy(q_other, q_other) / (1.0 - q_other)))
    g = torch.tensor(float(gamma), dtype=torch.float64, device=z.device)
    log_w = log_q - g * log_1mq - _log_denominator(g, log_d)
    log_w = torch.where(one_hot, torch.where(is_top, 0.0, -torch.inf), log_w)
    return torch.log_softmax(log_w, dim=1)
