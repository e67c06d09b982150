"""No silent stop at the edge of a search: the calibrators' grids and bounded searches.

A search whose best candidate lies on the boundary of its range has not found the optimum, only
the best point of the range: temperature scaling on sharp logits (a network's logits times 8)
picks the grid's largest T, 10, where the optimum is near 16 and the test ECE four times lower.

* A range the user left at its default is *extended* geometrically on the side where the best
  candidate lies (the upper T bound times :data:`EXTENSION_FACTOR`, the lower divided by it;
  γ likewise, and downwards towards γ = −1, the focal map's limit) until the best candidate is
  interior, up to a hard cap (:data:`TEMPERATURE_CAP`, :data:`GAMMA_CAP`); at the cap the
  search stops and warns.
* A range the user fixed (a grid passed explicitly, the papers' included) is kept and the
  search warns: :class:`EdgeOfSearchWarning`, naming the parameter and the range.

:func:`grid_search` runs a grid (one axis for temperature scaling, γ × T for focal temperature
scaling); :func:`bounded_log_search` a bounded scalar minimisation over ``log T``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize_scalar

#: How much each extension widens a default range: the upper bound times 4, the lower over 4.
EXTENSION_FACTOR = 4.0
#: The widest range of temperatures an extended search reaches.
TEMPERATURE_CAP = (1e-4, 1e4)
#: The largest γ an extended search reaches; downwards γ stops at the focal map's limit, −1.
GAMMA_CAP = (-1.0, 80.0)
#: Points added per extension of a temperature grid: the relative step of the grid at its edge,
#: kept within these bounds.
MIN_POINTS, MAX_POINTS = 8, 200
#: A bounded search's optimum within this distance (in log T) of a bound is on the edge.
LOG_EDGE_TOL = 1e-3


class EdgeOfSearchWarning(UserWarning):
    """The best candidate of a calibrator's search lies on the edge of its range: the optimum
    may lie beyond it. Raised when the range was fixed by the user (a grid passed explicitly)
    or when an extended default range reached its cap.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from calibnb.calibration import EdgeOfSearchWarning, TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> logits = 8 * rng.normal(size=(2000, 3))
    >>> labels = (logits / 16 + rng.gumbel(size=(2000, 3))).argmax(axis=1)  # from softmax(logits / 16)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     ts = TemperatureScaling(temperatures=[0.5, 1.0, 2.0]).fit(logits, labels)
    >>> caught[0].category is EdgeOfSearchWarning, ts.temperature_
    (True, 2.0)
    >>> ts = TemperatureScaling().fit(logits, labels)  # the default grid 0.1..10 extends to 40
    >>> round(ts.temperature_, 1), float(ts.temperatures_.max())
    (15.9, 40.0)
    """


def warn_edge(owner: str, parameter: str, value: float, low: float, high: float,
              why: str) -> None:
    """Warn that ``parameter`` = ``value`` of ``owner``'s search lies on an edge of [low, high]."""
    warnings.warn(
        f"{owner}: the best {parameter} = {value:.6g} lies on the edge of the searched range "
        f"[{low:.6g}, {high:.6g}] ({why}); the optimum may lie beyond it",
        EdgeOfSearchWarning, stacklevel=4)


def extension(axis: np.ndarray, side: str, kind: str) -> np.ndarray:
    """The values that extend a sorted ``axis`` of ``kind`` (``"temperature"``, ``"gamma"``) on
    ``side`` (``"low"``, ``"high"``), in increasing order; empty at the cap."""
    low, high = axis[0], axis[-1]
    if kind == "temperature":
        cap_low, cap_high = TEMPERATURE_CAP
        if side == "high":
            target = min(high * EXTENSION_FACTOR, cap_high)
            ratio = axis[-1] / axis[-2] if axis.size > 1 else 1.01
            return _geometric(high, target, ratio)[1:] if target > high else np.empty(0)
        target = max(low / EXTENSION_FACTOR, cap_low)
        ratio = axis[1] / axis[0] if axis.size > 1 else 1.01
        return _geometric(target, low, ratio)[:-1] if target < low else np.empty(0)
    cap_low, cap_high = GAMMA_CAP
    if side == "high":
        target = min(high * EXTENSION_FACTOR if high > 0 else high + 1.0, cap_high)
        return np.linspace(high, target, 5)[1:] if target > high else np.empty(0)
    # downwards, towards γ = −1: three points, the last at −1
    return np.linspace(cap_low, low, 4)[:-1] if low > cap_low else np.empty(0)


def _geometric(low: float, high: float, ratio: float) -> np.ndarray:
    """A geometric grid from ``low`` to ``high`` (both included) with about the step ``ratio``."""
    ratio = max(ratio, 1.0 + 1e-6)
    n = int(np.clip(math.ceil(math.log(high / low) / math.log(ratio)), MIN_POINTS, MAX_POINTS))
    return np.geomspace(low, high, n + 1)


def grid_search(score: Callable, axes: list, kinds: list, extendable: list,
                owner: str, best_positions: Callable | None = None):
    """Score a grid, extending its default axes until the best candidate is interior.

    ``score(axes)`` returns the criterion on the Cartesian product of ``axes`` (an array of
    shape ``[a.size for a in axes]``). ``kinds`` names each axis's parameter (``"temperature"``,
    ``"gamma"``); ``extendable`` says whether the user left it at its default (True: extend it;
    False: keep it and warn at its edge; None: not a searched range, neither). An axis of one
    value is no search and never extended nor warned about. An extendable axis must be sorted
    (the defaults are); a fixed one may be in any order (its ends are its extremes). ``best_positions(surface)`` lists
    the index tuples that must be interior (default: the first minimum of the whole surface).
    Returns ``(axes, surface)`` after extension; warns for every edge that remains.
    """
    axes = [np.asarray(a, dtype=np.float64) for a in axes]
    best_positions = best_positions or _first_minimum
    surface = np.asarray(score(axes))
    while True:
        grown = False
        for a, (axis, kind) in enumerate(zip(axes, kinds)):
            if not extendable[a] or axis.size < 2:
                continue
            for side in _edge_sides(best_positions(surface), a, axis):
                new = extension(axis, side, kind)
                if new.size == 0:
                    continue
                block = np.asarray(score([new if b == a else axes[b] for b in range(len(axes))]))
                pieces = (block, surface) if side == "low" else (surface, block)
                surface = np.concatenate(pieces, axis=a)
                axis = axes[a] = np.concatenate((new, axis) if side == "low" else (axis, new))
                grown = True
        if not grown:
            break
    for a, (axis, kind) in enumerate(zip(axes, kinds)):
        if axis.size < 2 or extendable[a] is None:
            continue
        for side in _edge_sides(best_positions(surface), a, axis):
            value = axis.min() if side == "low" else axis.max()
            if kind == "gamma" and side == "low" and value <= GAMMA_CAP[0]:
                continue  # γ = −1 is the focal map's own limit: nothing lies beyond it
            why = "the cap of the extended search" if extendable[a] else "a range fixed by the user"
            warn_edge(owner, _NAMES[kind], value, axis.min(), axis.max(), why)
    return axes, surface


_NAMES = {"temperature": "temperature T", "gamma": "gamma"}


def _first_minimum(surface: np.ndarray) -> list:
    return [np.unravel_index(int(np.argmin(surface)), surface.shape)]


def _edge_sides(positions: list, a: int, axis: np.ndarray) -> list:
    """The sides of ``axis`` (any order) whose end value a best position has on axis ``a``."""
    sides = []
    if any(axis[p[a]] == axis.min() for p in positions):
        sides.append("low")
    if any(axis[p[a]] == axis.max() for p in positions):
        sides.append("high")
    return sides


def bounded_log_search(objective: Callable, bounds: tuple, cap: tuple, owner: str,
                       xatol: float = 1e-10) -> float:
    """``T`` minimising ``objective(T)`` by bounded Brent search over ``log T`` in ``bounds``.

    When the minimiser lies on a bound, that bound moves out by ``log`` :data:`EXTENSION_FACTOR`
    (up to ``cap``, a pair of ``log T``) and the search reruns; at the cap it warns.
    """
    low, high = bounds
    while True:
        result = minimize_scalar(lambda log_t: objective(float(np.exp(log_t))), bounds=(low, high),
                                 method="bounded", options={"xatol": xatol})
        x = float(result.x)
        at_low, at_high = x - low < LOG_EDGE_TOL, high - x < LOG_EDGE_TOL
        if at_low and low > cap[0]:
            low = max(low - math.log(EXTENSION_FACTOR), cap[0])
        elif at_high and high < cap[1]:
            high = min(high + math.log(EXTENSION_FACTOR), cap[1])
        else:
            break
    if at_low or at_high:
        warn_edge(owner, "temperature T", math.exp(x), math.exp(low), math.exp(high),
                  "the bounds of the search")
    return math.exp(x)
