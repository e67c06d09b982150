"""Benchmark that keeps score: calibnb's calibrators and metrics against the field's libraries.

For synthetic over-confident logits at 5k×10, 10k×100, 25k×1000 and 50k×1000 (CIFAR-10,
CIFAR-100 and ImageNet sizes; labels seeded), each row times one calibnb operation and its peer
in the same process, interleaved, best of ``--repeats``, and prints ``ratio (calibnb s)``: the
ratio is calibnb's time ÷ the peer's (below 1: calibnb is faster). The last column is calibnb's
peak extra memory at the largest size, measured in a fresh process for each operation as the
peak resident set (VmHWM, reset after the data are made) over the resident set before the call,
÷ the size of the float64 logits array; torch's allocations are invisible to tracemalloc, so
the tracemalloc peak (Python and numpy only) is given beside it.

Peers (``requirements-bench.txt``; ``make bench-peers`` installs them into ``.venv-bench``):
netcal (histogram binning, isotonic regression, BBQ on the top-label confidence, as calibnb's
top-label recalibrators), TorchUncertainty (its ``TemperatureScaler``: float32 LBFGS on the NLL,
lr 0.1, 100 iterations; vector/matrix/Dirichlet scalers; adaptive ECE) and torchmetrics (ECE).
Where TorchUncertainty does not import, its temperature scaler's loop is run inline, written out
from its source (``tu-loop (inline)``); a peer that is missing says so in its cells.

Then two lines on CIFAR-100 DenseNet logits shipped with calibnb (the first 5000 rows;
``--quick``: 1000): FTS cold vs warm (a fresh process with an empty ``TORCHINDUCTOR_CACHE_DIR``,
its second fit, and a fresh process finding that cache), and the paper's line search against the
full grid. Progress, and each cell as it is measured, go to stderr.

Run: ``.venv/bin/python bench/bench_calibration.py [--quick] [--sizes 5000x10,...] [--markdown]``;
``--device cuda`` is the GPU protocol's line (TS, FTS and ECE on device tensors).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from scipy.special import softmax

import calibnb.calibration as cal
from calibnb.calibration import (
    PAPER_FTS_TEMPERATURES,
    PAPER_GAMMAS,
    EdgeOfSearchWarning,
    EnsembleTemperatureScaling,
    FocalTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    SplineCalibration,
    TemperatureScaling,
)
from calibnb.metrics import adaptive_ece, ece

SIZES = [(5000, 10), (10_000, 100), (25_000, 1000), (50_000, 1000)]
SEED, OVERCONFIDENCE = 0, 2.5


def fmt_size(size) -> str:
    n, k = size
    return f"{n // 1000}k×{k}" if n % 1000 == 0 else f"{n}×{k}"


def synthetic(n: int, k: int, seed: int = SEED):
    """Float64 logits ``(n, k)`` of a network about 70% accurate and over-confident (the true
    temperature is ``OVERCONFIDENCE``), and labels drawn from their calibrated softmax."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    z[np.arange(n), rng.integers(0, k, n)] += rng.normal(4.0, 1.5, n)  # a favoured class per row
    z *= OVERCONFIDENCE
    u = rng.random(n)
    y = np.empty(n, dtype=np.int64)
    for start in range(0, n, 5000):  # inverse-CDF sampling, 5000 rows at a time
        cdf = np.cumsum(softmax(z[start:start + 5000] / OVERCONFIDENCE, axis=1), axis=1)
        y[start:start + 5000] = np.minimum((u[start:start + 5000, None] > cdf).sum(axis=1), k - 1)
    return z, y


# ---------------------------------------------------------------- peers


def _import(name: str):
    """The module, or the reason it is absent (a broken install counts as absent)."""
    try:
        return __import__(name, fromlist=["_"]), None
    except Exception as error:  # noqa: BLE001 - e.g. torchvision's RuntimeError inside TU
        return None, f"{type(error).__name__}: {error}".splitlines()[0][:80]


NETCAL, NETCAL_WHY = _import("netcal.binning")
TU_POST, TU_WHY = _import("torch_uncertainty.post_processing")
TU_METRICS, _ = _import("torch_uncertainty.metrics") if TU_POST else (None, TU_WHY)
TORCHMETRICS, TM_WHY = _import("torchmetrics.functional.classification")


def top_label(z: np.ndarray, y: np.ndarray):
    """The top-label confidence and correctness a netcal binary recalibrator is fitted on."""
    p = softmax(z, axis=1)
    return p.max(axis=1), (p.argmax(axis=1) == y).astype(np.int64)


def tu_loop_inline(z: np.ndarray, y: np.ndarray) -> float:
    """TorchUncertainty's ``Scaler.fit`` for ``TemperatureScaler`` (v0.13), written out: float32
    logits, ``inv_temp`` = 1, ``LBFGS(lr=0.1, max_iter=100)``, cross-entropy of ``inv_temp * z``."""
    logits, labels = torch.as_tensor(z, dtype=torch.float32), torch.as_tensor(y)
    inv_temp = torch.nn.Parameter(torch.ones(1))
    optimizer = torch.optim.LBFGS([inv_temp], lr=0.1, max_iter=100)

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(inv_temp * logits, labels)
        loss.backward()
        return loss.detach()

    optimizer.step(closure)
    return 1.0 / inv_temp.item()


def tu_scaler(name: str, **kwargs) -> Callable:
    """Fit TorchUncertainty's scaler ``name`` on float32 logits, as its docs do (a DataLoader)."""
    def fit(z, y):
        logits = torch.as_tensor(z, dtype=torch.float32)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(logits, torch.as_tensor(y)),
                                             batch_size=len(y))
        extra = {} if name == "TemperatureScaler" else {"num_classes": z.shape[1]}
        getattr(TU_POST, name)(**extra, **kwargs).fit(loader, progress=False)
    return fit


def netcal_top_label(name: str, **kwargs) -> Callable:
    def fit(z, y):
        conf, correct = top_label(z, y)
        with contextlib.redirect_stdout(io.StringIO()):  # ENIR prints its progress
            getattr(NETCAL, name)(**kwargs).fit(conf, correct)
    return fit


@dataclass
class Peer:
    label: str
    fit: Callable | None  # None: not installed
    why: str = ""


def tu_ts_peer() -> Peer:
    if TU_POST is not None:
        return Peer("TorchUncertainty TemperatureScaler", tu_scaler("TemperatureScaler"))
    return Peer("TU's TS loop, inline*", tu_loop_inline)


def tu_peer(name: str) -> Peer:
    return Peer(f"TorchUncertainty {name}", tu_scaler(name) if TU_POST else None, TU_WHY or "")


def netcal_peer(name: str, **kwargs) -> Peer:
    return Peer(f"netcal {name} (top label)", netcal_top_label(name, **kwargs) if NETCAL else None,
                NETCAL_WHY or "")


def ece_peer() -> Peer:
    if TORCHMETRICS is None:
        return Peer("torchmetrics MulticlassCalibrationError", None, TM_WHY)

    def run(p, y):
        TORCHMETRICS.multiclass_calibration_error(torch.from_numpy(p), torch.from_numpy(y),
                                                  num_classes=p.shape[1], n_bins=15)
    return Peer("torchmetrics multiclass_calibration_error", run)


def adaptive_peer() -> Peer:
    if TU_METRICS is None:
        return Peer("TorchUncertainty AdaptiveCalibrationError", None,
                    (TU_WHY or "") + "; torchmetrics has no adaptive ECE")

    def run(p, y):
        metric = TU_METRICS.AdaptiveCalibrationError(task="multiclass", num_classes=p.shape[1],
                                                     num_bins=15)
        metric.update(torch.from_numpy(p), torch.from_numpy(y))
        metric.compute()
    return Peer("TorchUncertainty AdaptiveCalibrationError", run)


# ---------------------------------------------------------------- operations


@dataclass
class Op:
    """A calibnb operation: ``fit(z, y)``, or on probabilities when ``on_probs``."""
    name: str
    run: Callable
    peer: Peer
    on_probs: bool = False
    max_k: int = 10**9  # larger sizes are skipped (matrix/Dirichlet: K² parameters)
    cells: dict = field(default_factory=dict)


def _fit(make) -> Callable:
    return lambda z, y: make().fit(z, y)


def operations() -> list[Op]:
    ts = tu_ts_peer()
    ops = [
        Op("TS, ECE grid", _fit(TemperatureScaling), ts),
        Op("TS, NLL", _fit(lambda: TemperatureScaling("nll")), ts),
        Op("FTS, paper grid", _fit(lambda: FocalTemperatureScaling(PAPER_GAMMAS, PAPER_FTS_TEMPERATURES)), ts),
        Op("ETS", _fit(EnsembleTemperatureScaling), ts),
        Op("adaptive ECE", lambda p, y: adaptive_ece(p, y, 15), adaptive_peer(), on_probs=True),
        Op("ECE (15 bins)", lambda p, y: ece(p, y, 15), ece_peer(), on_probs=True),
        Op("histogram binning", _fit(HistogramBinning), netcal_peer("HistogramBinning", bins=15)),
        Op("isotonic", _fit(IsotonicCalibration), netcal_peer("IsotonicRegression")),
        Op("spline", _fit(SplineCalibration), netcal_peer("ENIR")),
    ]
    affine = [(cal.VectorScaling, "VectorScaler", 10**9), (cal.MatrixScaling, "MatrixScaler", 100),
              (cal.DirichletCalibration, "DirichletScaler", 100)]  # K x K maps: up to K = 100
    ops += [Op(ours.__name__, _fit(ours), tu_peer(theirs), max_k=max_k) for ours, theirs, max_k in affine]
    ops.append(Op("BBQ", _fit(cal.BayesianBinningQuantiles), netcal_peer("BBQ")))
    return ops


def best_of(fns: list[Callable], repeats: int) -> list[float]:
    """Best time of each function, the functions interleaved within every repeat."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def time_row(op: Op, z, y, p, repeats: int, peer_cache: dict) -> str:
    """One cell: ``ratio (calibnb s)``, the peer timed beside it (once per size and peer)."""
    if z.shape[1] > op.max_k:
        return "skipped (K² params)"
    args = (p, y) if op.on_probs else (z, y)
    ours = lambda: op.run(*args)  # noqa: E731
    key = (op.peer.label, z.shape)
    if op.peer.fit is None:
        (t_ours,) = best_of([ours], repeats)
        return f"not installed ({t_ours:.3g} s)"
    if key in peer_cache:
        t_ours, t_peer = best_of([ours], repeats)[0], peer_cache[key]
    else:
        t_ours, t_peer = best_of([ours, lambda: op.peer.fit(*args)], repeats)
        peer_cache[key] = t_peer
    return f"{t_ours / t_peer:.2g} ({t_ours:.3g} s)"


# ---------------------------------------------------------------- memory, in a fresh process


def _status(field_name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def peak_child(name: str, n: int, k: int) -> dict:
    """In this (fresh) process: the operation's peak resident set over the one before it (VmHWM
    reset through /proc/self/clear_refs), then its tracemalloc peak on a second call."""
    op = next(op for op in operations() if op.name == name)
    z, y = synthetic(n, k)
    p = softmax(z, axis=1).astype(np.float32) if op.on_probs else None
    args = (p, y) if op.on_probs else (z, y)
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # resets the peak resident set (VmHWM) to the current one
    before = _status("VmRSS:")
    op.run(*args)
    rss = _status("VmHWM:") - before
    tracemalloc.start()
    op.run(*args)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"rss": rss, "traced": traced, "logits": z.nbytes}


def peak_cell(name: str, size) -> str:
    done = subprocess.run([sys.executable, __file__, "--peak-child", name, "--sizes", "x".join(map(str, size))],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:60]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return f"{got['rss'] / got['logits']:.2f}× RSS, {got['traced'] / got['logits']:.2f}× traced"


# ---------------------------------------------------------------- FTS cold/warm, line vs grid


def cifar100_head(rows: int = 5000):
    from calibnb.data import load_predictions
    z, y = load_predictions("cifar100-densenet-bc-100")
    return z[:rows].astype(np.float64), y[:rows]


def paper_fts(search: str = "grid") -> FocalTemperatureScaling:
    return FocalTemperatureScaling(PAPER_GAMMAS, PAPER_FTS_TEMPERATURES, search=search)


def cold_child(rows: int) -> dict:
    """In this fresh process: the first FTS fit (compilation included), then a second one."""
    z, y = cifar100_head(rows)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        paper_fts().fit(z, y)
        times.append(time.perf_counter() - start)
    return {"first": times[0], "second": times[1]}


def cold_warm(processes: int, rows: int) -> list[str]:
    """FTS on the CIFAR-100 head: empty compile cache, the same process again, the disk cache warm."""
    runs = []
    for _ in range(processes):
        with tempfile.TemporaryDirectory(prefix="calibnb-inductor-") as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
            cold, disk = [json.loads(subprocess.run([sys.executable, __file__, "--cold-child", str(rows)], env=env,
                                                    capture_output=True, text=True, check=True)
                                     .stdout.strip().splitlines()[-1]) for _ in range(2)]
        runs.append((cold["first"], cold["second"], disk["first"]))
    first, warm, disk = (np.median(column) for column in zip(*runs))
    return [f"FTS cold vs warm, CIFAR-100 DenseNet {rows}×100, paper grid, median of {processes} fresh processes:",
            f"  first fit, empty compile cache {first:.2f} s; second fit, same process {warm:.2f} s "
            f"(cold ÷ warm {first / warm:.1f}); first fit of a fresh process, disk cache warm {disk:.2f} s"]


def line_vs_grid(repeats: int, rows: int) -> list[str]:
    z, y = cifar100_head(rows)
    grid, line = paper_fts("grid"), paper_fts("line")
    t_grid, t_line = best_of([lambda: grid.fit(z, y), lambda: line.fit(z, y)], repeats)
    gap = line.best_score_ - grid.best_score_
    return [f"FTS line vs grid, CIFAR-100 DenseNet {rows}×100, paper grid (9 γ × 500 T), best of {repeats}:",
            f"  line {t_line:.2f} s, grid {t_grid:.2f} s: ratio line ÷ grid {t_line / t_grid:.2f}; "
            f"validation ECE line {line.best_score_:.5f} vs grid {grid.best_score_:.5f} (gap {gap:+.5f})"]


# ---------------------------------------------------------------- device line (GPU protocol)


def device_line(device: str, size, repeats: int) -> list[str]:
    """TS (ECE grid, NLL), FTS (paper grid), ETS, ECE and adaptive ECE on ``device`` tensors; a
    calibrator that does not take them gets ``.cpu()`` and its line says "host"."""
    z, y = synthetic(*size)
    zt, yt = torch.as_tensor(z, device=device), torch.as_tensor(y, device=device)
    pt = torch.softmax(zt, dim=1).float()
    lines = [f"calibnb on {device} tensors at {fmt_size(size)} (best of {repeats}):"]
    jobs = [("TS, ECE grid", lambda a, b: TemperatureScaling().fit(a, b), zt),
            ("TS, NLL", lambda a, b: TemperatureScaling("nll").fit(a, b), zt),
            ("FTS, paper grid", lambda a, b: paper_fts().fit(a, b), zt),
            ("ETS", lambda a, b: EnsembleTemperatureScaling().fit(a, b), zt),
            ("ECE (15 bins)", lambda a, b: ece(a, b, 15), pt),
            ("adaptive ECE", lambda a, b: adaptive_ece(a, b, 15), pt)]
    for name, run, data in jobs:
        where = device
        try:
            run(data, yt)
        except (TypeError, ValueError, RuntimeError):
            where, data, labels = "host", data.cpu(), yt.cpu()
        else:
            labels = yt
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        (t,) = best_of([lambda: (run(data, labels), sync())], repeats)
        lines.append(f"  {name}: {t:.3g} s ({where})")
    return lines


# ---------------------------------------------------------------- command line


def versions() -> str:
    """The versions the numbers were measured with (peers' torch may differ from the project's)."""
    from importlib.metadata import PackageNotFoundError, version
    found = []
    for name in ("calibnb", "torch", "numpy", "netcal", "torch-uncertainty", "torchmetrics"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} -")
    return f"{', '.join(found)}; {torch.get_num_threads()} threads"


def parse_sizes(text: str) -> list:
    try:
        sizes = [tuple(int(part) for part in item.lower().split("x")) for item in text.split(",")]
    except ValueError:
        sizes = [()]
    if not all(len(s) == 2 and s[0] > 0 and s[1] > 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes are N×K like 5000x10,50000x1000, got {text!r}")
    return sizes


def table(ops: list[Op], sizes: list, memory_label: str, markdown: bool) -> str:
    header = ["operation (vs peer)"] + [fmt_size(s) for s in sizes] + [memory_label]
    rows = [[f"{op.name} vs {op.peer.label}"] + [op.cells.get(s, "") for s in sizes] + [op.cells.get("memory", "")]
            for op in ops]
    if markdown:
        return "\n".join("| " + " | ".join(row) + " |" for row in [header, ["---"] * len(header)] + rows)
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header] + rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=parse_sizes, help="N×K sizes, e.g. 5000x10,50000x1000")
    parser.add_argument("--quick", action="store_true", help="smallest size, 1 repeat (make bench, CI)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="rows whose operation matches this regular expression")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--device", help="the GPU protocol's line: TS, FTS and ECE on this device's tensors")
    parser.add_argument("--peak-child", help=argparse.SUPPRESS)
    parser.add_argument("--cold-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", EdgeOfSearchWarning)  # a fixed grid's edge is the protocol's
    warnings.filterwarnings("ignore", message="torch.searchsorted")  # torchmetrics' own warning
    sizes = args.sizes or (SIZES[:1] if args.quick else SIZES)
    repeats = 1 if args.quick else args.repeats
    if repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.peak_child:
        print(json.dumps(peak_child(args.peak_child, *sizes[-1])))
        return 0
    if args.cold_child:
        print(json.dumps(cold_child(args.cold_child)))
        return 0
    if args.device:
        try:
            torch.empty(0, device=args.device)
        except (RuntimeError, AssertionError) as error:
            print(f"error: device {args.device!r} is not usable: {error}", file=sys.stderr)
            return 2
        print("\n".join(device_line(args.device, sizes[-1], repeats)))
        return 0

    started = time.perf_counter()
    logging.disable(logging.WARNING)  # TorchUncertainty's "model is None" on every fit
    ops, peer_cache = operations(), {}
    if args.only:
        try:
            ops = [op for op in ops if re.search(args.only, op.name)]
        except re.error as error:
            parser.error(f"--only: {error}")
        if not ops:
            parser.error(f"--only {args.only!r} matches no operation")
    print(versions())
    for size in sizes:
        z, y = synthetic(*size)
        p = softmax(z, axis=1).astype(np.float32)
        for op in ops:
            op.cells[size] = time_row(op, z, y, p, repeats, peer_cache)
            print(f"... {fmt_size(size)} {op.name}: {op.cells[size]} (at {time.perf_counter() - started:.0f} s)",
                  file=sys.stderr, flush=True)
        del z, y, p
    for op in ops:
        op.cells["memory"] = peak_cell(op.name, sizes[-1]) if sizes[-1][1] <= op.max_k else "skipped"
        print(f"... peak memory {op.name}: {op.cells['memory']} (at {time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
    print(f"calibnb ÷ peer time, best of {repeats}, interleaved; cells: ratio (calibnb seconds); "
          f"memory: peak extra ÷ float64 logits, fresh process")
    print(table(ops, sizes, f"peak memory at {fmt_size(sizes[-1])}", args.markdown))
    for label, why in sorted({(op.peer.label, op.peer.why) for op in ops if op.peer.fit is None}):
        print(f"not installed: {label}: {why}")
    if any(op.peer.fit is tu_loop_inline for op in ops):
        print(f"* TorchUncertainty does not import ({TU_WHY}): its TemperatureScaler's fit loop run inline")
    print()
    if args.only and not re.search(args.only, "FTS cold warm line grid"):
        return 0
    rows = 1000 if args.quick else 5000  # --quick: the first 1000 rows, to stay a smoke test
    print("\n".join(cold_warm(1 if args.quick else 3, rows)))
    print("\n".join(line_vs_grid(repeats, rows)))
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
