"""Focal calibration versus temperature scaling (Komisarenko & Kull 2024, §3.2–3.3).

On the logit scale the binary focal calibration map is an odd, increasing function ``F(s)``
and temperature scaling is the line ``s / T``. Their ratio ``r(s) = F(s) / s`` is therefore the
"local inverse temperature" of the focal map:

* Proposition 3 brackets it, ``gamma + 1 - log(gamma + 1)/2 <= r(s) <= gamma + 1``
  (:func:`temperature_bounds`);
* the tightest bracket over logits in ``(-s_max, s_max)`` is ``[min r, max r]``
  (:func:`tight_temperature_bounds`, the paper's Fig. 3);
* the single temperature closest to the map in the largest absolute probability difference is
  :func:`closest_temperature` (Fig. 2 binary, Fig. 6 three classes, §3.3 four classes).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, softmax

from .._validation import check_int, check_real
from .focal_binary import binary_focal_calibration_logit
from ..calibration import focal_softmax

__all__ = [
    "temperature_bounds",
    "tight_temperature_bounds",
    "inverse_temperature_profile",
    "closest_temperature",
    "focal_temperature_deviation",
]


def temperature_bounds(gamma: float) -> tuple[float, float]:
    """Proposition 3 of Komisarenko & Kull (2024): ``(T_low, T_high)``.

    ``T_low = 1 / (gamma + 1)`` and ``T_high = 1 / (gamma + 1 - log(gamma + 1) / 2)``: for every
    logit ``s >= 0``, ``sigmoid(s / T_high) <= p_hat(sigmoid(s)) <= sigmoid(s / T_low)`` (the
    reverse for ``s < 0``). The printed statement writes ``exp(-s / (gamma + 1))``, i.e. ``s * T``;
    with ``T = 1 / (gamma + 1)`` as the text says, temperature scaling divides by ``T``, and only
    that reading is a non-trivial bound, so it is the one implemented (and tested).
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    return 1.0 / (gamma + 1.0), 1.0 / (gamma + 1.0 - np.log1p(gamma) / 2.0)


def inverse_temperature_profile(s, gamma: float) -> np.ndarray:
    """``r(s) = F(s) / s``, the inverse temperature that matches the focal map at logit ``s``.

    At ``s = 0`` the limit ``F'(0) = gamma + 1 - 2 gamma (log 2 - 1/2) / (1 + gamma log 2)`` is
    returned (differentiate the logit form of Proposition 2 at 0).
    """
    gamma = check_real(gamma, "gamma", minimum=-1.0, strict_minimum=True)
    s = np.asarray(s, dtype=np.float64)
    slope0 = gamma + 1.0 - 2.0 * gamma * (np.log(2.0) - 0.5) / (1.0 + gamma * np.log(2.0))
    safe = np.where(s == 0, 1.0, s)
    return np.where(s == 0, slope0, binary_focal_calibration_logit(safe, gamma) / safe)


def tight_temperature_bounds(
    gamma: float, s_max: float = 20.0, step: float = 1e-3
) -> tuple[float, float]:
    """The tightest temperatures bracketing the binary focal map over logits in ``(-s_max, s_max)``.

    Returns ``(T_low, T_high)`` with ``T_low = 1 / max r`` and ``T_high = 1 / min r`` over the
    grid ``0, step, 2 step, ... < s_max`` (``r`` is even, so the negative logits add nothing),
    each extremum then polished with a bounded scalar search between its grid neighbours. This is
    the experiment behind Komisarenko & Kull's Fig. 3 (they scan T in steps of 0.001 and logits in
    steps of 0.001), without the T grid: the exact bracket, not its rounding.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    s_max = check_real(s_max, "s_max", minimum=0.0, strict_minimum=True)
    step = check_real(step, "step", minimum=0.0, strict_minimum=True)
    grid = np.arange(0.0, s_max, step)
    if grid.size < 2:
        raise ValueError(f"step ({step:g}) must be smaller than s_max ({s_max:g})")
    r = inverse_temperature_profile(grid, gamma)
    extremes = []
    for sign, idx in ((-1.0, int(np.argmax(r))), (1.0, int(np.argmin(r)))):
        lo, hi = grid[max(idx - 1, 0)], grid[min(idx + 1, grid.size - 1)]
        best = sign * r[idx]
        if hi > lo:
            res = minimize_scalar(
                lambda x: sign * inverse_temperature_profile(x, gamma),
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": 1e-12},
            )
            best = min(best, float(res.fun))
        extremes.append(sign * best)
    r_max, r_min = extremes
    return 1.0 / r_max, 1.0 / r_min


def focal_temperature_deviation(
    temperature: float, gamma: float, n_classes: int = 2, s_max: float | None = None, step: float | None = None
) -> float:
    """Largest absolute difference between focal calibration and temperature scaling.

    Binary (``n_classes = 2``): ``max_s |p_hat(sigmoid(s)) - sigmoid(s / T)|`` over logits
    ``s`` in ``[0, s_max)`` (default 20, step 1e-3; the difference is odd in ``s``).
    Multiclass: ``max_{z, j} |p_hat(softmax(z))_j - softmax(z / T)_j|`` over the logit grid with
    ``z_K = 0`` and the other ``K - 1`` logits on ``[-s_max, s_max]`` (default 5) in steps of
    ``step`` (default 0.05 for three classes, 0.25 for four): Komisarenko & Kull's grid for §3.3
    (logits in (-5, 5), step 0.01), made coarser so it runs on a laptop.
    """
    temperature = check_real(temperature, "temperature", minimum=0.0, strict_minimum=True)
    gamma = check_real(gamma, "gamma", minimum=0.0)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    logits, binary = _logit_grid(n_classes, s_max, step)
    return _deviation(1.0 / temperature, gamma, logits, binary)


def closest_temperature(
    gamma: float, n_classes: int = 2, s_max: float | None = None, step: float | None = None
) -> tuple[float, float]:
    """The temperature closest to the focal calibration map, and the deviation it leaves.

    Minimises :func:`focal_temperature_deviation` (the largest absolute probability difference)
    over the inverse temperature with a bounded scalar search; returns ``(T, max deviation)``.
    The paper fits ``1/T ~ 0.95 gamma + 0.85`` (binary, deviation < 1e-3), ``0.64 gamma + 0.91``
    (three classes) and ``0.47 gamma + 0.85`` (four classes), Komisarenko & Kull (2024) §3.2–3.3.
    """
    gamma = check_real(gamma, "gamma", minimum=0.0)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    if gamma == 0:
        return 1.0, 0.0
    logits, binary = _logit_grid(n_classes, s_max, step)
    # The focal map sharpens at most like 1/T = gamma + 1 (Prop. 3 in the binary case); the best
    # inverse temperature lies between 1 (identity) and gamma + 1.
    res = minimize_scalar(
        lambda a: _deviation(a, gamma, logits, binary),
        bounds=(1.0, gamma + 1.0),
        method="bounded",
        options={"xatol": 1e-7},
    )
    return 1.0 / float(res.x), float(res.fun)


def _logit_grid(n_classes: int, s_max, step):
    if n_classes == 2:
        s_max = 20.0 if s_max is None else check_real(s_max, "s_max", 0.0, strict_minimum=True)
        step = 1e-3 if step is None else check_real(step, "step", 0.0, strict_minimum=True)
        return np.arange(0.0, s_max, step), True
    s_max = 5.0 if s_max is None else check_real(s_max, "s_max", 0.0, strict_minimum=True)
    if step is None:
        step = 0.05 if n_classes == 3 else 0.25
    step = check_real(step, "step", 0.0, strict_minimum=True)
    axis = np.arange(-s_max, s_max + step / 2, step)
    if axis.size ** (n_classes - 1) > 5_000_000:
        raise ValueError(
            f"the logit grid has {axis.size}^{n_classes - 1} points; increase step or lower s_max"
        )
    free = np.array(list(itertools.product(axis, repeat=n_classes - 1)))
    return np.hstack([free, np.zeros((free.shape[0], 1))]), False


def _deviation(inv_temperature: float, gamma: float, logits: np.ndarray, binary: bool) -> float:
    if binary:
        focal = expit(binary_focal_calibration_logit(logits, gamma))
        return float(np.abs(focal - expit(inv_temperature * logits)).max())
    focal = focal_softmax(logits, gamma)
    return float(np.abs(focal - softmax(inv_temperature * logits, axis=1)).max())
