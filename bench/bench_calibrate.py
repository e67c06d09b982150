"""Benchmark: ``calibnb.calibrate`` on a real CIFAR network's 5,000 calibration logits, 5 folds.

The network is one of the published CIFAR outputs the package ships
(:func:`calibnb.data.load_predictions`), split as the post-hoc study splits it
(:func:`calibnb.runs.posthoc.calibration_split`, seed 1): 5,000 calibration and 5,000 test
predictions. ``calibrate`` (criterion NLL, every calibrator) fits each calibrator 6 times (5 folds
and the refit on all data) and scores each fold. The baseline is one plain ``TemperatureScaling()``
fit on the same 5,000 logits in the same process, timed before each call, so that the ratio does
not depend on how busy the machine is. The first call pays the one-off ``torch.compile`` of focal
temperature scaling's kernel on 100 classes (as every ``python -m calibnb calibrate`` does); the
later calls reuse it. The time of each calibrator (its 6 fits) shows which dominates: focal
temperature scaling, whose paper grid (9 γ × 500 T) is searched 6 times.

Like ``python -m calibnb calibrate`` (``calibnb/__main__.py``), the benchmark sets
``GOMP_SPINCOUNT=1000`` unless it is set: with libgomp's default spin-wait, on a machine busy with
other work, the kernel's parallel regions wait for descheduled threads, and the same call took
from 8 s to 80 s (the command line, whole: 55 s and 186 s against 22-25 s with 1000).

Run: ``.venv/bin/python bench/bench_calibrate.py [NETWORK] [REPEATS]`` (default
cifar100-wideresnet-16-4, 3 calls; the target is under a minute on the 2-core machine).
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("GOMP_SPINCOUNT", "1000")  # before torch and scikit-learn load libgomp

import calibnb  # noqa: E402
from calibnb.calibration import TemperatureScaling  # noqa: E402
from calibnb.data import load_predictions  # noqa: E402
from calibnb.runs.posthoc import calibration_split  # noqa: E402

TARGET_S = 60.0


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main(network: str = "cifar100-wideresnet-16-4", repeats: str = "3") -> None:
    logits, labels = load_predictions(network)
    calibration, test = calibration_split(1, len(labels))
    z, y, zt, yt = logits[calibration], labels[calibration], logits[test], labels[test]
    print(f"calibnb.calibrate on {network}: {z.shape[0]} calibration logits of {z.shape[1]} classes, "
          f"5 folds, criterion nll, every calibrator; {len(os.sched_getaffinity(0))} cores, "
          f"GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}")
    TemperatureScaling().fit(z, y)  # the baseline's own one-off costs, outside its timing
    for call in range(int(repeats)):
        ts_s = timed(lambda: TemperatureScaling().fit(z, y))
        load = os.getloadavg()[0]
        results = []
        total = timed(lambda: results.append(calibnb.calibrate(z, y, zt, yt, progress=False)))
        result = results[0]
        what = "first call, compiles FTS's kernel" if call == 0 else "kernel compiled"
        print(f"  call {call + 1} ({what}; load {load:.1f}): {total:6.1f} s = {total / ts_s:5.1f} x one "
              f"TemperatureScaling() fit ({ts_s:.2f} s); target < {TARGET_S:.0f} s")
        print("    per calibrator (6 fits): " + ", ".join(f"{n} {s:.1f} s" for n, s in result.fit_seconds.items()))
    chosen = result.table.set_index(["calibrator", "metric"])["test"]
    print(f"  chosen: {result.chosen} (test ECE {chosen[result.chosen, 'ece']:.4f}, "
          f"uncalibrated {chosen['uncalibrated', 'ece']:.4f})")


if __name__ == "__main__":
    main(*sys.argv[1:])
