"""Benchmark: inverting the binary focal calibration map, the core of ``calibnb.theory``.

The proper part of focal loss and the focal-loss minimiser both need ``p_hat^{-1}`` on many
points (a figure, a risk over a grid). calibnb inverts the logit form of Proposition 2 for a
whole array at once with SciPy's elementwise Chandrupatla solver and an exact bracket. The
baseline is the straightforward per-point approach: ``scipy.optimize.brentq`` on the printed
probability-space formula of Proposition 2, one call per point. Both run here on the same
20 000 probabilities in (1e-6, 1 - 1e-6); the answers are compared, and the speed-up printed.

Run: ``.venv/bin/python bench/bench_theory.py``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import brentq

from calibnb.theory import inverse_binary_focal_calibration

N, GAMMA = 20_000, 3.0


def prop2(q: float, gamma: float) -> float:
    """Proposition 2 exactly as printed (probability space)."""
    ratio = ((1 - q) - gamma * q * np.log(q)) / (q - gamma * (1 - q) * np.log1p(-q))
    return 1.0 / (1.0 + ((1 - q) / q) ** gamma * ratio)


def baseline(p: np.ndarray, gamma: float) -> np.ndarray:
    return np.array([brentq(lambda q: prop2(q, gamma) - target, 1e-12, 1 - 1e-12, xtol=1e-300, rtol=1e-15)
                     for target in p])


def main() -> None:
    p = np.linspace(1e-6, 1 - 1e-6, N)
    start = time.perf_counter()
    reference = baseline(p, GAMMA)
    t_base = time.perf_counter() - start
    start = time.perf_counter()
    ours = inverse_binary_focal_calibration(p, GAMMA)
    t_ours = time.perf_counter() - start
    err = np.max(np.abs(ours - reference) / np.minimum(reference, 1 - reference))
    print(f"inverse focal map, {N} points, gamma = {GAMMA:g}")
    print(f"  baseline (brentq per point, probability formula): {t_base:8.3f} s")
    print(f"  calibnb  (vectorised Chandrupatla on logits):      {t_ours:8.3f} s")
    print(f"  speed-up: {t_base / t_ours:.1f}x; largest relative difference (of q or 1 - q): {err:.1e}")


if __name__ == "__main__":
    main()
