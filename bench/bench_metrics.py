"""Benchmark calibnb.metrics against torchmetrics on the same arrays (run by ``make bench``).

1. ``calibration_report`` (all ten metrics) and ``ece`` on N = 1,000,000, K = 100 float32
   probabilities, against torchmetrics' ``multiclass_calibration_error`` (top-label ECE only).
2. ``classwise_ece`` with N = 10,000, K = 1,000 (vectorised over classes) against torchmetrics'
   ``binary_calibration_error`` called once per class, which is how classwise ECE is computed
   with torchmetrics.
Each timing is the best of one to three repeats, in this process; ratios > 1 mean calibnb is slower.
"""

from __future__ import annotations

import time
import warnings

import torch
from torchmetrics.functional.classification import (
    binary_calibration_error,
    multiclass_calibration_error,
)

from calibnb._validation import check_probs_labels
from calibnb.metrics import calibration_report, classwise_ece, ece


def best_time(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def softmax_data(n: int, k: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    probs = torch.softmax(3 * torch.randn(n, k, generator=gen), dim=1)
    flip = torch.rand(n, generator=gen) < 0.3
    labels = torch.where(flip, torch.randint(0, k, (n,), generator=gen), probs.argmax(1))
    return probs, labels


def main() -> None:
    torch.set_num_threads(2)
    warnings.filterwarnings("ignore", message="torch.searchsorted")  # torchmetrics' own warning
    n, k = 1_000_000, 100
    probs, labels = softmax_data(n, k)
    p_np, y_np = probs.numpy(), labels.numpy()
    t_report = best_time(lambda: calibration_report(p_np, y_np), repeats=2)
    t_ece = best_time(lambda: ece(p_np, y_np), repeats=2)
    t_tm = best_time(
        lambda: multiclass_calibration_error(probs, labels, num_classes=k, n_bins=15), repeats=2
    )
    t_check = best_time(lambda: check_probs_labels(p_np, y_np), repeats=2)
    print(f"N={n:,} K={k}: calibration_report (10 metrics) {t_report:.2f} s")
    print(f"  of which input validation + float64 copy (calibnb._validation) {t_check:.2f} s")
    print(
        f"  ece {t_ece:.3f} s vs torchmetrics multiclass ECE {t_tm:.3f} s: "
        f"ratio {t_ece / t_tm:.2f}"
    )
    print(f"  calibration_report / torchmetrics ECE: ratio {t_report / t_tm:.2f}")

    n, k = 10_000, 1_000
    probs, labels = softmax_data(n, k, seed=1)
    p_np, y_np = probs.numpy(), labels.numpy()
    t_cw = best_time(lambda: classwise_ece(p_np, y_np))

    def torchmetrics_classwise():
        hits = torch.nn.functional.one_hot(labels, k)
        return torch.stack(
            [binary_calibration_error(probs[:, c], hits[:, c], n_bins=15) for c in range(k)]
        ).mean()

    t_tm_cw = best_time(torchmetrics_classwise, repeats=1)
    print(
        f"N={n:,} K={k}: classwise_ece {t_cw:.3f} s vs torchmetrics per-class loop "
        f"{t_tm_cw:.3f} s: ratio {t_cw / t_tm_cw:.3f}"
    )


if __name__ == "__main__":
    main()
