"""Figures for the theory chapters: each function draws one of the papers' analytic figures from
:mod:`calibnb.theory` and returns the matplotlib ``Figure``.

Komisarenko & Kull (2024): :func:`plot_focal_map_and_proper_loss` (Fig. 1),
:func:`plot_focal_minimizer` (§3.1), :func:`plot_temperature_bounds` (Fig. 3),
:func:`plot_closest_temperature` (Fig. 2 left / Fig. 6), :func:`plot_risk_isolines` (Fig. 4).
Mukhoti et al. (2020): :func:`plot_mukhoti_gap`. Tao et al. (2023): :func:`plot_dfl_phi` (Fig. 1)
and :func:`plot_dual_focal_risk_slice` (the tie that breaks Theorem 1's strictness).
FCL paper, Appendix A.11 (Fig. 7): :func:`plot_two_moons`. Ghosh et al. (2022): :func:`plot_per_bin_gaps`
(Fig. 1b) and :func:`plot_train_val_confidence` (Fig. 2).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.tri import Triangulation

from . import theory
from .plots import COLUMN_WIDTH
from .plots_simplex import draw_simplex, simplex_points, to_plane

__all__ = [
    "plot_mukhoti_gap",
    "plot_focal_minimizer",
    "plot_focal_map_and_proper_loss",
    "plot_temperature_bounds",
    "plot_closest_temperature",
    "plot_risk_isolines",
    "plot_dfl_phi",
    "plot_dual_focal_risk_slice",
    "plot_two_moons",
    "plot_per_bin_gaps",
    "plot_train_val_confidence",
]


def plot_mukhoti_gap(gammas=(1.0, 3.0), n: int = 80):
    """The gap ``L_FL - (KL(q||p) - gamma H(p))``: binary curves and a 3-class map (target class 0)."""
    fig, axes = plt.subplots(1, 1 + len(gammas), figsize=(COLUMN_WIDTH, 2.7))
    p = np.linspace(1e-4, 1 - 1e-4, 500)
    two = np.c_[p, 1 - p]
    for g in (0.5, *gammas):
        axes[0].plot(p, theory.mukhoti_gap(two, np.c_[np.ones_like(p), np.zeros_like(p)], g), label=f"γ = {g:g}")
    axes[0].set(xlabel="p̂ of the true class (K = 2)", ylabel="gap", title="binary: gap ≥ 0")
    axes[0].legend(fontsize=8)
    axes[0].title.set_fontsize(9)
    q = simplex_points(n, margin=1e-3)
    target = np.tile([1.0, 0.0, 0.0], (q.shape[0], 1))
    tri = Triangulation(*to_plane(q).T)
    for ax, g in zip(axes[1:], gammas):
        gap = theory.mukhoti_gap(q, target, g)
        cs = ax.tricontourf(tri, gap, levels=20, cmap="viridis")
        fig.colorbar(cs, ax=ax, shrink=0.8)
        draw_simplex(ax, f"K = 3, γ = {g:g}\n(true class bottom left)", labels=False)
    fig.tight_layout()
    return fig


def plot_focal_minimizer(eta: float = 0.8, gamma_max: float = 20.0):
    """The focal-loss minimiser for true probability ``eta`` against gamma (Komisarenko & Kull §3.1)."""
    gammas = np.linspace(0, gamma_max, 201)
    values = [float(theory.binary_focal_minimizer(eta, g)) for g in gammas]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(gammas, values)
    ax.axhline(eta, ls="--", color="gray", lw=0.8)
    ax.axhline(0.5, ls=":", color="gray", lw=0.8)
    ax.scatter([2.0], [float(theory.binary_focal_minimizer(eta, 2.0))], color="C3", zorder=3, label="γ = 2")
    ax.set(xlabel="γ", ylabel="focal-loss minimiser", title=f"true probability {eta:g}")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_focal_map_and_proper_loss(gammas=(0.5, 3.0), map_gammas=(-0.5, 0.5, 1.0, 2.0, 3.0, 5.0)):
    """Komisarenko & Kull Fig. 1: left, ``L*(q, 1)``, ``FL(q, 1)`` and CE; right, the focal map."""
    q = np.linspace(1e-3, 1 - 1e-3, 400)
    s = np.log(q) - np.log1p(-q)
    fig, (left, right) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH, 2.9))
    left.plot(q, -np.log(q), color="black", label="cross-entropy")
    for k, g in enumerate(gammas):
        left.plot(q, theory.binary_focal_loss(s, 1, g), ls="--", color=f"C{k}", label=f"focal γ = {g:g}")
        left.plot(q, theory.proper_focal_loss(q, 1, g), color=f"C{k}", label=f"proper part γ = {g:g}")
    left.set(xlabel="predicted probability q (true class 1)", ylabel="loss", ylim=(0, 4))
    left.legend(fontsize=8)
    for g in map_gammas:
        right.plot(q, theory.binary_focal_calibration(q, g), label=f"γ = {g:g}")
    right.plot(q, q, color="gray", lw=0.8, ls=":")
    right.set(xlabel="q", ylabel="p̂(q)", title="binary focal calibration map")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_temperature_bounds(gamma: float = 4.0, gammas=None, s_max: float = 20.0):
    """Komisarenko & Kull Fig. 3: the focal map between temperature maps; bound widths vs gamma."""
    gammas = np.linspace(0.25, 10, 40) if gammas is None else np.asarray(gammas)
    fig, (left, right) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH, 2.9))
    s = np.linspace(0, 6, 400)
    r = theory.inverse_temperature_profile(s, gamma)
    low, high = theory.temperature_bounds(gamma)
    tlow, thigh = theory.tight_temperature_bounds(gamma, s_max=s_max)
    left.plot(s, r, color="black", label="focal map: F(s)/s")
    for t, style, name in ((low, "--", "Prop. 3"), (high, "--", None), (tlow, ":", "tight"), (thigh, ":", None)):
        left.axhline(1 / t, ls=style, color="C0" if style == "--" else "C3", label=name)
    left.set(xlabel="logit s", ylabel="local inverse temperature 1/T", title=f"γ = {gamma:g}")
    left.legend(fontsize=8)
    theo = np.array([theory.temperature_bounds(g) for g in gammas])
    tight = np.array([theory.tight_temperature_bounds(g, s_max=s_max) for g in gammas])
    right.plot(gammas, theo[:, 1] - theo[:, 0], label="Prop. 3")
    right.plot(gammas, tight[:, 1] - tight[:, 0], label=f"tight on |s| < {s_max:g}")
    right.set(xlabel="γ", ylabel="T_high − T_low", title="width of the bracket")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_closest_temperature(curves: dict, paper_lines: dict | None = None):
    """1/T of the closest temperature against gamma, and the deviation it leaves.

    ``curves`` maps a label (e.g. ``"K = 2"``) to ``(gammas, temperatures, deviations)``;
    ``paper_lines`` maps the same labels to the paper's ``(slope, intercept)``.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH, 2.9))
    for k, (name, (g, t, dev)) in enumerate(curves.items()):
        g, t = np.asarray(g), np.asarray(t)
        left.plot(g, 1 / t, "o", ms=3, color=f"C{k}", label=f"{name}: ours")
        if paper_lines and name in paper_lines:
            a, b = paper_lines[name]
            left.plot(g, a * g + b, "-", lw=0.8, color=f"C{k}", label=f"{name}: paper {a:g}γ + {b:g}")
        right.semilogy(g, dev, "o-", ms=3, color=f"C{k}", label=name)
    left.set(xlabel="γ", ylabel="1/T closest to the focal map")
    left.legend(fontsize=7)
    right.set(xlabel="γ", ylabel="largest |focal − TS| (probability)")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_risk_isolines(eta=(0.55, 0.3, 0.15), gammas=(1.0, 3.0), percentiles=(3, 12, 20), n: int = 40):
    """Komisarenko & Kull Fig. 4: conditional-risk isolines of Brier, CE and the proper part of
    focal loss over the 3-class simplex, at the loss percentiles ``percentiles`` of the grid.

    Drawn for the book's column: two panels per row, the corners named, one legend for the
    isolines and the star (the true distribution ``eta``)."""
    eta = np.asarray(eta, dtype=float)
    q = simplex_points(n, margin=2e-3)
    tri = Triangulation(*to_plane(q).T)
    panels = [("Brier", theory.conditional_risk(q, eta, "brier")), ("cross-entropy", theory.conditional_risk(q, eta, "log"))]
    panels += [(f"proper focal γ = {g:g}", theory.conditional_risk(q, eta, "proper_focal", g)) for g in gammas]
    ncols = 2
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(COLUMN_WIDTH, 3.3 * nrows + 0.5), squeeze=False)
    colours = [f"C{i}" for i in range(len(percentiles))]
    x0, y0 = to_plane(eta[None]).T
    for ax, (name, risk) in zip(axes.flat, panels):
        ax.tricontour(tri, risk, levels=np.percentile(risk, percentiles), colors=colours)
        ax.plot(x0, y0, "k*", markersize=9)
        draw_simplex(ax, name)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    handles = [Line2D([], [], color=c, label=f"risk at its {p:g} % quantile") for c, p in zip(colours, percentiles)]
    handles.append(Line2D([], [], color="black", marker="*", linestyle="", markersize=9,
                          label=f"the truth η = {tuple(float(v) for v in eta)}"))
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


#: A figure drawn for a phone as well as a laptop is at most ``PHONE_WIDTH`` inches wide (450 px
#: at matplotlib's 100 dpi): the book shows it at its own size in its 688-px column and shrinks it
#: to about 342 px on a 390-px phone, where its ``TEXT_POINTS`` legends and labels still read as
#: 9 points and its ``TICK_POINTS`` tick labels as 8.
PHONE_WIDTH = 4.5
TEXT_POINTS = 12
TICK_POINTS = 11


def readable_axes(*axes):
    """Set the tick labels of ``axes`` to :data:`TICK_POINTS` and their axis labels and titles to
    :data:`TEXT_POINTS` (legends and annotations take ``fontsize=TEXT_POINTS`` where drawn).
    Sizes are set on the artists, not through ``rcParams``, so the figure shows inline in a
    notebook whatever the backend's state."""
    for ax in axes:
        ax.tick_params(labelsize=TICK_POINTS)
        for text in (ax.xaxis.label, ax.yaxis.label, ax.title):
            text.set_fontsize(TEXT_POINTS)


def plot_dfl_phi(gamma: float = 1.0, C: float = 0.3):
    """Tao et al. (2023) Fig. 1: phi of FL and DFL with the landmarks v_m, v' and v_uc.

    The landmarks are dotted vertical lines named above the axes (horizontal text), so no label
    crosses a curve; the legend sits in the lower left, below both curves. Drawn at
    :data:`PHONE_WIDTH` with :func:`readable_axes`."""
    v = np.linspace(1e-4, 1, 500)
    fl, dfl = theory.phi_landmarks(gamma, 0.0), theory.phi_landmarks(gamma, C)
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH, 3.4))
    ax.plot(v, theory.fl_phi(v, gamma), label=f"FL, γ = {gamma:g}")
    ax.plot(v, theory.dfl_phi(v, gamma, C), label=f"DFL, γ = {gamma:g}, C = {C:g}")
    ax.axhline(1.0, lw=0.6, color="gray")
    landmarks = ((r"$v^m$", dfl["v_m"], "dimgray"), (r"$v'$ (FL)", fl["v_uc"], "C0"),
                 (r"$v^{uc}$ (DFL)", dfl["v_uc"], "C1"))
    for name, x, color in landmarks:
        ax.axvline(x, ls=":", color=color)
        ax.annotate(name, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", color=color, fontsize=TEXT_POINTS)
    ax.set(xlabel=r"$v = q^*_m$, the top probability", ylabel=r"$\phi(v)$")
    ax.legend(loc="lower left", fontsize=TEXT_POINTS)
    readable_axes(ax)
    fig.tight_layout()
    return fig


def plot_dual_focal_risk_slice(eta=(0.16060191, 0.05056221, 0.78883588), gamma: float = 2.0, top: float = 0.66916508):
    """Dual focal loss' conditional risk along ``q = (a, 1 - top - a, top)``.

    With the dual defined as the largest probability *strictly* below the target's, the risk
    drops where the two small classes tie (``a = (1 - top) / 2``): the isolated point below the
    curve is the minimiser, so the two classes get equal probability although ``eta`` differs.
    The curve is drawn in two pieces, left and right of the tie, where it jumps. Drawn at
    :data:`PHONE_WIDTH` with :func:`readable_axes`.
    """
    eta = np.asarray(eta, dtype=float)
    rest = 1.0 - top
    a = np.linspace(0.02 * rest, 0.98 * rest, 801)
    a = a[np.abs(a - rest / 2) > 1e-12]
    q = np.stack([a, rest - a, np.full_like(a, top)], axis=1)
    risk = theory.dual_focal_risk(q, eta, gamma)
    tie = np.array([[rest / 2, rest / 2, top]])
    left = a < rest / 2
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH, 3.4))
    ax.plot(a[left], risk[left], color="C0", label="untied predictions")
    ax.plot([rest / 2], theory.dual_focal_risk(tie, eta, gamma), "o", color="C3", label=r"the tie $q_0 = q_1$")
    ax.plot(a[~left], risk[~left], color="C0")
    ax.set(xlabel=rf"$q_0$ (with $q_2 = {top:.3f}$)", ylabel=f"risk of DFL, γ = {gamma:g}")
    ax.legend(loc="upper right", fontsize=TEXT_POINTS)
    readable_axes(ax)
    fig.tight_layout()
    return fig


def plot_two_moons(results: dict):
    """FCL paper Fig. 7: for each :class:`calibnb.toy.TwoMoonsResult` in ``results`` (label ->
    result), the top-label confidence over the plane, the decision boundary (p = 1/2, black) and
    the training points.

    The panels are stacked, one per run, in a figure 4.4 inches wide, so that on a phone (a
    column of about 360 px) the figure is shrunk by a fifth at most and its 11-point labels stay
    at 9 points or more; on a laptop it is shown at its own size.
    """
    n = len(results)
    fig, axes = plt.subplots(n, 1, figsize=(4.4, 2.9 * n + 0.2), squeeze=False)
    for ax, (name, res) in zip(axes[:, 0], results.items()):
        cs = ax.contourf(res.grid_x, res.grid_y, res.grid_confidence, levels=np.linspace(0.5, 1, 11), cmap="viridis")
        ax.contour(res.grid_x, res.grid_y, res.grid_probs, levels=[0.5], colors="black", linewidths=1.2)
        ax.scatter(*res.x_train.T, c=res.y_train, cmap="coolwarm", s=6, edgecolors="none")
        ax.set(xticks=[], yticks=[])
        ax.set_title(f"{name}\ntrain accuracy {res.train_accuracy:.3f}, mean confidence {res.train_confidence:.3f}",
                     fontsize=11)
        bar = fig.colorbar(cs, ax=ax, shrink=0.9, ticks=[0.5, 0.75, 1.0])
        bar.set_label("confidence", fontsize=11)
        bar.ax.tick_params(labelsize=11)
    fig.tight_layout()
    return fig


def plot_per_bin_gaps(gaps):
    """Ghosh et al. Fig. 1(b) at the end of training: ``C_val,b - A_val,b`` per equal-mass bin,
    one line per run (a row of :func:`calibnb.theory.per_bin_gaps`), told apart by colour and
    marker; the legend stands above the axes, clear of the data. Drawn at :data:`PHONE_WIDTH`
    with :func:`readable_axes`."""
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH, 3.4))
    for k, (name, row) in enumerate(gaps.iterrows()):
        ax.plot(row.index, row.to_numpy(), marker="osD^v"[k % 5], ms=5, color=f"C{k}",
                label=f"γ = {name:g}" if not isinstance(name, str) else name)
    ax.axhline(0, color="black", lw=0.8)
    ax.set(xlabel="validation bin (low → high confidence)",
           ylabel=r"$C_{\mathrm{val}} - A_{\mathrm{val}}$", xticks=list(gaps.columns)[::2])
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(gaps), frameon=False,
              columnspacing=1.2, fontsize=TEXT_POINTS)
    readable_axes(ax)
    fig.tight_layout()
    return fig


def plot_train_val_confidence(tables: dict):
    """Ghosh et al. Fig. 2: per validation bin, the training samples' mean true-class probability
    ``C_train`` (solid) and the validation confidence ``C_val`` (stars), one colour per run
    (``tables``: label -> :func:`calibnb.theory.train_val_bin_confidence`). One legend above
    the axes names the colours and the two line styles, clear of the data. Drawn at
    :data:`PHONE_WIDTH` with :func:`readable_axes`."""
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH, 3.6))
    handles = []
    for k, (name, tab) in enumerate(tables.items()):
        label = f"γ = {name:g}" if not isinstance(name, str) else name
        ax.plot(tab.index, tab["train_confidence"], "-", color=f"C{k}", lw=1.8)
        ax.plot(tab.index, tab["val_confidence"], "*--", color=f"C{k}", ms=8, lw=0.7)
        handles.append(Line2D([], [], color=f"C{k}", lw=4, label=label))
    styles = [Line2D([], [], color="black", lw=1.8, label=r"$C_{\mathrm{train}}$"),
              Line2D([], [], color="black", ls="--", lw=0.7, marker="*", ms=8, label=r"$C_{\mathrm{val}}$")]
    # the legend fills its columns first: the runs make its first row, the two styles the second
    ncol = max(len(handles), len(styles))
    rows = [handles + [None] * (ncol - len(handles)), styles + [None] * (ncol - len(styles))]
    handles = [h for column in zip(*rows) for h in column if h is not None]
    ax.set(xlabel="validation bin (low → high confidence)", ylabel="mean confidence",
           xticks=list(next(iter(tables.values())).index)[::2])
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=ncol, frameon=False,
              handlelength=1.8, columnspacing=1.2, fontsize=TEXT_POINTS)
    readable_axes(ax)
    fig.tight_layout()
    return fig
