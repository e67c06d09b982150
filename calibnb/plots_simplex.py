"""Figures over the 3-class probability simplex: arrow maps and difference heat-maps.

Used by the focal temperature scaling chapter for Komisarenko & Kull (2024), Figures 5 and 7.
A point ``q = (q_1, q_2, q_3)`` is drawn at ``q_2·(1, 0) + q_3·(1/2, √3/2)`` (class 1 at the
bottom-left corner, class 2 bottom-right, class 3 on top).
"""

from __future__ import annotations

import matplotlib.tri as mtri
import numpy as np

from ._validation import check_int, check_probs


def simplex_points(n: int = 12, margin: float = 0.02) -> np.ndarray:
    """A triangular grid of ``(n + 1)(n + 2) / 2`` simplex points, kept ``margin`` inside."""
    n = check_int(n, "n", minimum=1)
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    grid = np.stack([i[keep], j[keep], n - i[keep] - j[keep]], axis=1) / n
    return grid * (1 - 3 * margin) + margin


def to_plane(probs) -> np.ndarray:
    """Planar coordinates ``(N, 2)`` of 3-class probabilities ``(N, 3)``."""
    q = check_probs(probs, "probs")
    if q.shape[1] != 3:
        raise ValueError(f"probs must have 3 classes, got {q.shape[1]}")
    return np.stack([q[:, 1] + q[:, 2] / 2, q[:, 2] * np.sqrt(3) / 2], axis=1)


def plot_simplex_arrows(ax, start, end, title: str = "", color: str = "C0") -> None:
    """Arrows from each point of ``start`` (N, 3) to the matching point of ``end`` (N, 3)."""
    a, b = to_plane(start), to_plane(end)
    ax.quiver(a[:, 0], a[:, 1], *(b - a).T, angles="xy", scale_units="xy", scale=1,
              width=0.004, color=color)
    draw_simplex(ax, title)


def plot_simplex_heatmap(ax, probs, values, title: str = "", cmap: str = "RdBu_r"):
    """A filled contour plot of ``values`` (N,) at the simplex points ``probs`` (N, 3)."""
    xy = to_plane(probs)
    limit = float(np.abs(values).max()) or 1.0
    filled = ax.tricontourf(mtri.Triangulation(xy[:, 0], xy[:, 1]), values, levels=21,
                            cmap=cmap, vmin=-limit, vmax=limit)
    draw_simplex(ax, title)
    return filled


#: The font size (points) of the corners' names: legible when a panel is shown on a phone.
CORNER_FONTSIZE = 9


def draw_simplex(ax, title: str = "", labels: bool = True, label_size: float = CORNER_FONTSIZE) -> None:
    """The triangle's outline (with its corners named, in ``label_size`` points, when ``labels``),
    equal aspect, no axes.

    The title stands clear of the top corner's name (it is raised above it), so the two never
    overlap however small the panel."""
    corners = np.array([[0, 0], [1, 0], [0.5, np.sqrt(3) / 2], [0, 0]])
    ax.plot(corners[:, 0], corners[:, 1], color="black", lw=0.8)
    for (x, y), name in zip(corners[:3] if labels else [], ("class 1", "class 2", "class 3")):
        ax.annotate(name, (x, y), textcoords="offset points", ha="center", fontsize=label_size,
                    va="top" if y == 0 else "bottom", xytext=(0, -3 if y == 0 else 3))
    ax.set_aspect("equal")
    ax.set_axis_off()
    # the top corner's name takes its font size plus 3 points above the triangle
    ax.set_title(title, fontsize=10, pad=label_size + 8 if labels else 6)


__all__ = ["draw_simplex", "plot_simplex_arrows", "plot_simplex_heatmap", "simplex_points", "to_plane"]
