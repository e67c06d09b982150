"""Benchmark: the paper's full focal-temperature-scaling grid on CIFAR-100-sized validation logits.

9 γ × 500 T = 4,500 candidates, each scored by the 15-bin equal-mass ECE on logits of shape
(5000, 100). The baseline is the straightforward numpy loop: for every (γ, T), the full
probabilities ``focal_softmax(z, γ, T)`` (softmax and focal map; Eq. (1) written out plainly
returns NaN at small T, where the softmax saturates) and the equal-mass ECE
(``calibnb.metrics.ece``), all recomputed from scratch. It is timed on a spread subset of
candidates and extrapolated to the full grid; the fast path's scores on that subset are checked
against it.

This grid (2.25e9 evaluations) runs the eager kernel: no compilation. The last lines check
``COMPILE_ABOVE``, the size from which ``FocalGrid`` compiles its kernel with ``torch.compile``
(timed on its own line, paid once per process): on the paper's grid with 100 and 1000 classes
(below and above the threshold), the compiled kernel's time, compilation included, as a ratio
of the eager kernel's (the ECE, the same for both, left out). Below 1 compiling pays; the
threshold is right where the 100-class ratio is above 1 and the 1000-class one below.

Modes (issue 30), each on its own line of output with the command that reproduces it:

* ``--cold``: FTS's first fit on real DenseNet CIFAR-100 logits (5000 × 100) in fresh
  processes, each with an empty ``torch.compile`` cache (``TORCHINDUCTOR_CACHE_DIR`` and
  ``TRITON_CACHE_DIR`` in a new temporary folder), against a second, warm fit in the same process.
* ``--line``: ``search="line"`` against the full grid on the same logits, interleaved, the
  gap between the validation criteria of their choices, and the line's first phase alone (its
  two fixed-γ rows): grid / phase 1 is the most the line can gain.
* ``--throughput``: a whole fit's nanoseconds per evaluation at 5000 × 100 and 50,000 × 1000,
  with the eager and the compiled kernel (a cost per evaluation growing with N would be
  super-linear).
* ``--large N K``: in a fresh subprocess each, TS with the ECE grid, a float32 L-BFGS NLL
  temperature fit (TorchUncertainty's ``Scaler``: ``LBFGS(lr=0.1, max_iter=100)`` on the mean
  cross-entropy of z / T) and FTS on ``--fts-temperatures`` of the paper's grid: seconds, and
  peak extra memory over the float64 logits (tracemalloc and max RSS after the logits exist).

Run: ``.venv/bin/python bench/bench_fts_grid.py [--cold | --line | --throughput | --large N K [ROUNDS]]``.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.special import softmax

from calibnb.calibration import (
    PAPER_FTS_TEMPERATURES,
    PAPER_GAMMAS,
    FocalTemperatureScaling,
    focal_softmax,
)
from calibnb.calibration._grid import COMPILE_ABOVE, FocalGrid
from calibnb.metrics import ece

N, K, SEED = 5000, 100, 0
TARGET_S, TARGET_SPEEDUP = 5.0, 20.0
BASELINE_TEMPERATURES = PAPER_FTS_TEMPERATURES[::125]  # 4 temperatures × 9 γ = 36 candidates
KERNEL_TEMPERATURES = PAPER_FTS_TEMPERATURES[::50]  # 10 temperatures: the threshold's check


def validation_logits(k: int = K):
    """Over-confident logits: labels drawn from softmax(z / 2), so TS would pick T ≈ 2."""
    rng = np.random.default_rng(SEED)
    z = rng.normal(scale=3.0, size=(N, k))
    cdf = np.cumsum(softmax(z / 2.0, axis=1), axis=1)
    y = np.minimum((rng.random(N)[:, None] > cdf).sum(axis=1), k - 1)
    return z, y


def straightforward_score(z, y, gamma, temperature) -> float:
    return ece(focal_softmax(z, gamma, temperature), y, 15, "mass")


def first_call_seconds(grid: FocalGrid) -> float:
    """Seconds of the grid's first evaluation (for a compiled grid: its compilation)."""
    start = time.perf_counter()
    grid.evaluate(1.0, PAPER_GAMMAS)
    return time.perf_counter() - start


def kernel_seconds(grid: FocalGrid) -> float:
    """Seconds of the kernel over the paper's whole grid, extrapolated from KERNEL_TEMPERATURES."""
    start = time.perf_counter()
    for t in KERNEL_TEMPERATURES:
        grid.evaluate(t, PAPER_GAMMAS)
    return (time.perf_counter() - start) * PAPER_FTS_TEMPERATURES.size / KERNEL_TEMPERATURES.size


def compile_threshold(k: int, compile_s: float | None = None) -> str:
    """The compiled kernel's time (with ``compile_s``, else its first call) over the eager one's."""
    z, y = validation_logits(k)
    compiled = FocalGrid(z, y, math.inf)
    if compile_s is None:
        compile_s = first_call_seconds(compiled)
    ratio = (compile_s + kernel_seconds(compiled)) / kernel_seconds(FocalGrid(z, y))
    n_evaluations = PAPER_GAMMAS.size * PAPER_FTS_TEMPERATURES.size * z.size
    return (f"    {k:3d} classes ({n_evaluations:.2e} evaluations, "
            f"{'above' if n_evaluations > COMPILE_ABOVE else 'below'}): {ratio:5.2f}")


def main() -> None:
    z, y = validation_logits()
    n_candidates = PAPER_GAMMAS.size * PAPER_FTS_TEMPERATURES.size

    start = time.perf_counter()  # the paper's grid on 5000 x 100 runs the eager kernel
    fts = FocalTemperatureScaling().fit(z, y)
    fast_s = time.perf_counter() - start

    start = time.perf_counter()
    subset = np.array([[straightforward_score(z, y, g, t) for t in BASELINE_TEMPERATURES]
                       for g in PAPER_GAMMAS])
    per_candidate = (time.perf_counter() - start) / subset.size
    baseline_s = per_candidate * n_candidates
    columns = np.searchsorted(PAPER_FTS_TEMPERATURES, BASELINE_TEMPERATURES)
    max_diff = np.abs(fts.scores_[:, columns] - subset).max()

    print(f"FTS grid, {PAPER_GAMMAS.size} gammas x {PAPER_FTS_TEMPERATURES.size} temperatures "
          f"= {n_candidates} candidates, equal-mass ECE, logits {z.shape} "
          f"({n_candidates * z.size:.2e} evaluations: the eager kernel)")
    print(f"  calibnb FocalTemperatureScaling  {fast_s:8.2f} s  (target <= {TARGET_S:.0f} s) "
          f"(gamma={fts.gamma_}, T={fts.temperature_}, ECE={fts.best_score_:.5f})")
    print(f"  straightforward loop (measured on {subset.size} candidates, "
          f"{per_candidate * 1e3:.0f} ms each) {baseline_s:8.1f} s extrapolated")
    print(f"  speed-up {baseline_s / fast_s:.1f}x (target >= {TARGET_SPEEDUP:.0f}x); "
          f"max |score difference| on the subset {max_diff:.1e}")
    compile_s = first_call_seconds(FocalGrid(z, y, math.inf))  # compiles the fused kernel
    print(f"  one-off kernel compilation       {compile_s:8.2f} s (paid by a fit above the threshold)")
    print(f"  COMPILE_ABOVE = {COMPILE_ABOVE:.0e}: the paper's grid with the compiled kernel and its "
          f"compilation / with the eager kernel (below 1: compiling pays)")
    print(compile_threshold(K, compile_s))
    print(compile_threshold(1000, compile_s))


REAL = "cifar100-densenet-bc-100"


def real_validation():
    from calibnb.data import load_predictions
    z, y = load_predictions(REAL)
    return z[:N].astype(np.float64), y[:N]


def timed_fit(**params):
    z, y = real_validation()
    start = time.perf_counter()
    fts = FocalTemperatureScaling(**params).fit(z, y)
    return time.perf_counter() - start, fts


def cold_child() -> None:
    first, _ = timed_fit()
    second, _ = timed_fit()
    print(f"{first} {second}")


def cold(processes: int = 3) -> None:
    import os
    import subprocess
    import sys
    import tempfile
    print(f"FTS first fit, fresh process, empty compile cache, real {REAL} logits ({N} x 100)")
    print("  command: .venv/bin/python bench/bench_fts_grid.py --cold")
    for _ in range(processes):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TRITON_CACHE_DIR=cache)
            out = subprocess.run([sys.executable, __file__, "--cold-child"], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
        first, warm = float(out[-2]), float(out[-1])
        print(f"  cold {first:7.2f} s  warm {warm:7.2f} s  cold/warm {first / warm:5.2f}")


def line(repeats: int = 3) -> None:
    """``search="line"`` against the grid, and the line's first phase alone: the two fixed-γ rows
    over the m temperatures (its 2m evaluations, the same kernel calls), timed as a grid fit of
    those two γ. grid / phase 1 bounds what any line search of this shape can gain, whatever its
    last m points cost: with F the per-temperature and G the per-γ cost of the kernel, the grid
    is m(F + 9G) and phase 1 alone m(F + 2G)."""
    import warnings
    print(f"FTS search='line' vs the full grid, real {REAL} logits ({N} x 100), equal-mass ECE")
    print("  command: .venv/bin/python bench/bench_fts_grid.py --line")
    ends = [float(PAPER_GAMMAS.min()), float(PAPER_GAMMAS.max())]
    runs = {"grid": {}, "line": {"search": "line"}, "phase 1": {"gammas": ends}}
    best = dict.fromkeys(runs, math.inf)
    chosen = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # phase 1's two γ are the grid's ends
        for params in runs.values():
            timed_fit(**params)  # first calls outside the timings
        for _ in range(repeats):
            for name, params in runs.items():
                seconds, fts = timed_fit(**params)
                best[name] = min(best[name], seconds)
                chosen[name] = (fts.gamma_, fts.temperature_, fts.best_score_)
                print(f"  {name:8s} {seconds:6.2f} s  gamma={fts.gamma_:.4g} "
                      f"T={fts.temperature_:.4g} ECE={fts.best_score_:.5f}")
    print(f"  best of {repeats}: grid {best['grid']:.2f} s, line {best['line']:.2f} s, "
          f"grid/line {best['grid'] / best['line']:.2f}; criterion line - grid "
          f"{chosen['line'][2] - chosen['grid'][2]:+.5f}")
    print(f"  phase 1 alone (2m of the line's 3m evaluations) {best['phase 1']:.2f} s: "
          f"grid/phase 1 {best['grid'] / best['phase 1']:.2f}, the most any such line search "
          f"can gain, were its last m points free")


def large_child(what: str, n: int, k: int, fts_temperatures: int) -> None:
    import resource
    import tracemalloc

    import torch
    from calibnb.calibration import TemperatureScaling
    rng = np.random.default_rng(SEED)
    z = rng.normal(scale=3.0, size=(n, k))
    y = np.where(rng.random(n) < 0.7, z.argmax(axis=1), rng.integers(0, k, n))
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    start = time.perf_counter()
    if what == "ts-ece":
        TemperatureScaling().fit(z, y)
    elif what == "lbfgs":
        logits, labels = torch.from_numpy(z).float(), torch.from_numpy(y)
        t = torch.nn.Parameter(torch.ones(1))
        optimiser = torch.optim.LBFGS([t], lr=0.1, max_iter=100)

        def closure():
            optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(logits / t, labels)
            loss.backward()
            return loss
        optimiser.step(closure)
    else:
        temps = PAPER_FTS_TEMPERATURES[:: PAPER_FTS_TEMPERATURES.size // fts_temperatures]
        FocalTemperatureScaling(gammas=PAPER_GAMMAS, temperatures=temps).fit(z, y)
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base_rss
    print(f"{seconds} {traced / z.nbytes} {rss / z.nbytes}")


def large(n: int, k: int, rounds: int = 2, fts_temperatures: int = 10) -> None:
    import subprocess
    import sys
    print(f"Synthetic logits {n} x {k} (float64 {n * k * 8 / 2**20:.0f} MiB), fresh process each")
    print(f"  command: .venv/bin/python bench/bench_fts_grid.py --large {n} {k}")
    for what in ("lbfgs", "ts-ece") * rounds + ("fts",):
        out = subprocess.run([sys.executable, __file__, "--large-child", what, str(n), str(k),
                              str(fts_temperatures)], check=True, capture_output=True,
                             text=True).stdout.split()
        seconds, traced, rss = map(float, out[-3:])
        extra = ""
        if what == "fts":
            per = seconds / (fts_temperatures * PAPER_GAMMAS.size * n * k)
            extra = (f" ({fts_temperatures} T x 9 gamma: {per * 1e9:.2f} ns per (sample, class, "
                     f"gamma, T), whole paper grid ~{per * 4500 * n * k:.0f} s)")
        print(f"  {what:7s} {seconds:7.2f} s  peak extra / logits: tracemalloc {traced:4.2f}, "
              f"max RSS {rss:4.2f}{extra}")


def throughput(sizes=((5000, 100), (50000, 1000)), n_temperatures: int = 10) -> None:
    """Nanoseconds per (sample, class, γ, T) of a whole fit (kernel and batched ECE) on
    ``n_temperatures`` of the paper's temperatures and its nine γ, with each kernel forced, at
    each size: a cost per evaluation that grows with the size would be super-linear."""
    from calibnb.calibration import _grid
    temperatures = PAPER_FTS_TEMPERATURES[:: PAPER_FTS_TEMPERATURES.size // n_temperatures]
    print(f"FTS fit per (sample, class, gamma, T), {n_temperatures} T x 9 gamma, synthetic logits")
    print("  command: .venv/bin/python bench/bench_fts_grid.py --throughput")
    rng = np.random.default_rng(SEED)
    for n, k in sizes:
        z = rng.normal(scale=3.0, size=(n, k))
        y = np.where(rng.random(n) < 0.7, z.argmax(axis=1), rng.integers(0, k, n))
        evaluations = temperatures.size * PAPER_GAMMAS.size * z.size
        cells = []
        for kernel, threshold in (("eager", math.inf), ("compiled", 0.0)):
            _grid.COMPILE_ABOVE = threshold
            fit = FocalTemperatureScaling(gammas=PAPER_GAMMAS, temperatures=temperatures)
            if kernel == "compiled":  # the compilation, outside the timing (rows != classes:
                fit.fit(z[:150], y[:150])  # equal sizes would share a symbol, then recompile)
            start = time.perf_counter()
            fit.fit(z, y)
            cells.append(f"{kernel} {(time.perf_counter() - start) / evaluations * 1e9:5.2f} ns")
        print(f"  {n} x {k}: " + ", ".join(cells))
    _grid.COMPILE_ABOVE = COMPILE_ABOVE


if __name__ == "__main__":
    import sys
    args = sys.argv[1:]
    if args[:1] == ["--cold"]:
        cold()
    elif args[:1] == ["--cold-child"]:
        cold_child()
    elif args[:1] == ["--line"]:
        line()
    elif args[:1] == ["--throughput"]:
        throughput()
    elif args[:1] == ["--large"]:
        large(int(args[1]), int(args[2]), *map(int, args[3:4]))
    elif args[:1] == ["--large-child"]:
        large_child(args[1], int(args[2]), int(args[3]), int(args[4]))
    else:
        main()
