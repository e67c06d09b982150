"""Time and peak memory of the streamed metrics and baseline calibrators at CIFAR and ImageNet sizes.

Sizes N x K: 5k x 10, 10k x 100, 25k x 1000, 50k x 1000 (float64 logits of 0.4 MB to 0.4 GB).

* Time, as ratios calibnb ÷ peer in this process, interleaved (best of ``--repeats``):
  ETS ``fit`` against TorchUncertainty's ``TemperatureScaler`` fit (float32 LBFGS, lr 0.1,
  max_iter 100, on the NLL of z / T), and ``adaptive_ece`` against TorchUncertainty's
  ``MulticlassAdaptiveCalibrationError`` (``torch.max`` of the probabilities, a sort, equal
  ``tensor_split`` bins), both on float32 and on float64 probabilities. When
  ``torch_uncertainty`` does not import, its loops are run as copied here (``tu_*``).
* Peak extra memory ÷ the float64 logits (8 N K bytes), each operation in a fresh subprocess:
  ``ru_maxrss`` after the call minus before it, and tracemalloc's peak (numpy's allocations).
  The input (probabilities or logits) is made before the first reading; ``predict_proba``'s
  N x K output is counted.

Run: ``python bench/bench_streaming.py [--sizes 5000x10,...] [--repeats 3] [--skip-time]
[--skip-memory] [--skip-ets]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

SIZES = ((5_000, 10), (10_000, 100), (25_000, 1_000), (50_000, 1_000))
MEMORY_OPS = ("ece", "adaece", "classwise", "nll", "brier", "report",
              "ets_fit", "ets_predict", "histogram_fit", "histogram_predict",
              "isotonic_fit", "isotonic_predict", "spline_fit", "spline_predict", "tu_ts_fit")


# --- The peers' loops ------------------------------------------------------------------------

def tu_temperature_fit(logits32, labels) -> float:
    """TorchUncertainty's ``Scaler.fit`` for ``TemperatureScaler`` (torch_uncertainty 0.x,
    ``post_processing/calibration/scaler.py``): LBFGS(lr=0.1, max_iter=100) on the
    cross-entropy of ``inv_temp * logits``, float32, starting at T = 1."""
    import torch

    try:
        from torch_uncertainty.post_processing import TemperatureScaler
    except Exception:  # noqa: BLE001 - its package needs lightning; the loop, copied
        inv = torch.nn.Parameter(torch.ones(1), requires_grad=True)
        optimizer = torch.optim.LBFGS([inv], lr=0.1, max_iter=100)
        criterion = torch.nn.CrossEntropyLoss()

        def calib_eval():
            optimizer.zero_grad()
            loss = criterion(inv * logits32, labels)
            loss.backward()
            return loss.detach()

        optimizer.step(calib_eval)
        return float(1 / inv.item())
    scaler = TemperatureScaler(model=None)
    scaler.fit(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(logits32, labels),
                                           batch_size=len(labels)), progress=False)
    return float(scaler.temperature[0].item())


def tu_adaptive_ece(probs, labels, n_bins: int = 15) -> float:
    """TorchUncertainty's ``MulticlassAdaptiveCalibrationError`` update and ``_ace_compute``."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    try:
        from torch_uncertainty.metrics.classification import AdaptiveCalibrationError
    except Exception:  # noqa: BLE001 - the loop, copied
        confidences, preds = torch.max(probs, 1)
        accuracies = (preds == labels).float()
        confidences, order = torch.sort(confidences.float())
        accuracies = accuracies[order]
        acc_bin = list(accuracies.tensor_split(n_bins))
        conf_bin = list(confidences.tensor_split(n_bins))
        count = torch.as_tensor([len(c) for c in conf_bin], dtype=confidences.dtype)
        acc = pad_sequence(acc_bin, batch_first=True).sum(1) / count
        conf = pad_sequence(conf_bin, batch_first=True).sum(1) / count
        return float(torch.sum(torch.abs(acc - conf) * count / len(confidences)))
    metric = AdaptiveCalibrationError(task="multiclass", num_classes=probs.shape[1], num_bins=n_bins)
    metric.update(probs, labels)
    return float(metric.compute())


# --- Data ----------------------------------------------------------------------------------------

def make_logits(n: int, k: int, seed: int = 0):
    """Logits ``3 * normal`` (float64) and labels drawn from ``softmax(logits / 2)``, made a block
    at a time so that making them raises the memory high-water mark by no more than the logits."""
    from calibnb.metrics.streaming import row_blocks

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k))
    z *= 3.0
    y = np.empty(n, dtype=np.int64)
    for rows in row_blocks(n, k):
        y[rows] = (z[rows] / 2 + rng.gumbel(size=(rows.stop - rows.start, k))).argmax(axis=1)
    return z, y


def softmax_in_place(z):
    from calibnb.metrics.streaming import row_blocks

    for rows in row_blocks(*z.shape):
        block = z[rows]
        block -= block.max(axis=1, keepdims=True)
        np.exp(block, out=block)
        block /= block.sum(axis=1, keepdims=True)
    return z


# --- Memory, one operation in a fresh process -----------------------------------------------

def child(op: str, n: int, k: int) -> dict:
    import torch

    from calibnb import calibration, metrics

    torch.set_num_threads(2)
    z, y = make_logits(n, k)
    fitted = None
    if op.endswith("_predict"):
        cls = {"ets": calibration.EnsembleTemperatureScaling, "histogram": calibration.HistogramBinning,
               "isotonic": calibration.IsotonicCalibration, "spline": calibration.SplineCalibration}
        fitted = cls[op.split("_")[0]]().fit(z[: min(n, 5000)], y[: min(n, 5000)])
    metric = {"ece": metrics.ece, "adaece": metrics.adaptive_ece, "classwise": metrics.classwise_ece,
              "nll": metrics.nll, "brier": metrics.brier, "report": metrics.calibration_report}
    if op in metric:
        softmax_in_place(z)
    if op == "tu_ts_fit":
        z32, yt = torch.from_numpy(z).float(), torch.from_numpy(y)
        del z
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    if op in metric:
        metric[op](z, y)
    elif op == "tu_ts_fit":
        tu_temperature_fit(z32, yt)
    elif fitted is not None:
        out = fitted.predict_proba(z)  # noqa: F841 - held while measuring: it is part of the cost
    else:
        cls = {"ets": calibration.EnsembleTemperatureScaling, "histogram": calibration.HistogramBinning,
               "isotonic": calibration.IsotonicCalibration, "spline": calibration.SplineCalibration}
        cls[op.split("_")[0]]().fit(z, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    logits_bytes = 8 * n * k
    return {"op": op, "n": n, "k": k, "rss_ratio": (after - before) * 1024 / logits_bytes,
            "tracemalloc_ratio": peak / logits_bytes}


def memory_table(sizes) -> None:
    print("\nPeak extra memory / float64 logits (8 N K bytes), fresh process each: RSS | tracemalloc")
    print("op".ljust(18) + "".join(f"{n // 1000}k x {k}".rjust(16) for n, k in sizes))
    for op in MEMORY_OPS:
        cells = []
        for n, k in sizes:
            result = subprocess.run([sys.executable, __file__, "--child", op, str(n), str(k)],
                                    capture_output=True, text=True, check=True)
            r = json.loads(result.stdout.strip().splitlines()[-1])
            cells.append(f"{r['rss_ratio']:.2f} | {r['tracemalloc_ratio']:.2f}")
        print(op.ljust(18) + "".join(c.rjust(16) for c in cells), flush=True)


# --- Time, interleaved in this process ------------------------------------------------------------

def interleaved(first, second, repeats: int) -> tuple[float, float]:
    """Best times of ``first`` and ``second``, run alternately."""
    a, b = [], []
    for _ in range(repeats):
        for fn, times in ((first, a), (second, b)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return min(a), min(b)


def time_table(sizes, repeats: int, ets: bool = True) -> None:
    import torch

    from calibnb.calibration import EnsembleTemperatureScaling
    from calibnb.metrics import adaptive_ece

    torch.set_num_threads(2)
    print("Time, calibnb / TorchUncertainty, best of interleaved repeats (2 torch threads)")
    for n, k in sizes:
        z, y = make_logits(n, k)
        z32, yt = torch.from_numpy(z).float(), torch.from_numpy(y)
        reps = repeats if n * k <= 10**6 else 1
        if ets:
            ours, tu = interleaved(lambda: EnsembleTemperatureScaling().fit(z, y),
                                   lambda: tu_temperature_fit(z32, yt), reps)
            print(f"{n // 1000}k x {k}: ETS fit {ours:.3f} s vs TU TemperatureScaler {tu:.3f} s: "
                  f"ratio {ours / tu:.2f}", flush=True)
        else:
            print(f"{n // 1000}k x {k}:", flush=True)
        p64 = softmax_in_place(z)
        p32 = p64.astype(np.float32)
        for name, p in (("float32", p32), ("float64", p64)):
            pt = torch.from_numpy(p)
            ours, peer = interleaved(lambda: adaptive_ece(p, y), lambda: tu_adaptive_ece(pt, yt),
                                     max(repeats, 5))
            ours_t, _ = interleaved(lambda: adaptive_ece(pt, yt), lambda: None, max(repeats, 5))
            print(f"  adaptive_ece {name}: numpy {ours * 1e3:.1f} ms, CPU tensor {ours_t * 1e3:.1f} ms "
                  f"vs TU {peer * 1e3:.1f} ms: ratios {ours / peer:.2f}, {ours_t / peer:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("OP", "N", "K"))
    parser.add_argument("--sizes", default=",".join(f"{n}x{k}" for n, k in SIZES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-time", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-ets", action="store_true", help="time the adaptive ECE only")
    args = parser.parse_args()
    if args.child:
        op, n, k = args.child
        print(json.dumps(child(op, int(n), int(k))))
        return
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
    if not args.skip_time:
        time_table(sizes, args.repeats, ets=not args.skip_ets)
    if not args.skip_memory:
        memory_table(sizes)


if __name__ == "__main__":
    main()
