"""Figures for the theory chapters: each function draws one of the papers' analytic figures from
:mod:`calibnb.theory` and returns the matplotlib ``Figure``.

Komisarenko & Kull (2024): :func:`plot_focal_map_and_proper_loss` (Fig. 1),
:func:`plot_focal_minimizer` (§3.1), :func:`plot_temperature_bounds` (Fig. 3),
:func:`plot_closest_temperature` (Fig. 2 left / Fig. 6), :func:`plot_risk_isolines` (Fig. 4).
Mukhoti et al. (2020): :func:`plot_mukhoti_gap`. Tao et al. (2023): :func:`plot_dfl_phi` (Fig. 1)
and :func:`plot_dual_focal_risk_slice` (the tie that breaks Theorem 1's strictness).
FCL paper, Appendix A.11 (Fig. 7): :func:`plot_two_moons`. Ghosh et al. (2022): :func:`plot_per_bin_gaps`
(Fig. 1b) and :func:`plot_train_val_confidence` (Fig. 2). The loss chapters' losses along the true
class's probability and their slopes (Ghosh et al. Fig. 3(a) and its kin): :func:`plot_loss_and_slope`.

Every figure here reads on a laptop and on a 390-px phone alike (issue 27): the focal-analysis
chapter's are drawn :data:`NARROW_WIDTH` wide, their panels stacked, with every text at least
:data:`LEGIBLE_SIZE` points; those of the AdaFocal and DFL chapters :data:`PHONE_WIDTH` wide, with
every text at least :data:`TEXT_POINTS` points. One helper, :func:`legible`, raises the texts of
a finished figure, the book's and a chapter's own alike.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator
from matplotlib.tri import Triangulation

from . import theory
from ._validation import check_int, check_type, check_vector
from .plots import COLUMN_WIDTH
from .plots_simplex import draw_simplex, simplex_points, to_plane

__all__ = [
    "NARROW_WIDTH",
    "LEGIBLE_SIZE",
    "PHONE_WIDTH",
    "TEXT_POINTS",
    "legible",
    "plot_loss_and_slope",
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


#: The width, in inches, of the theory chapters' figures (440 px at matplotlib's 100 dpi, under two
#: thirds of the book's column): shown at its own size on a laptop, and shrunk by at most a fifth
#: to a 390-px phone's column, so that :data:`LEGIBLE_SIZE` text still reads at 9 pt or more
#: there. Panels that a wide figure would set side by side are stacked instead.
NARROW_WIDTH = 4.4

#: The smallest font size, in points, of any text in those figures (ticks, labels, legends, titles).
LEGIBLE_SIZE = 11.5

#: A figure drawn for a phone as well as a laptop is at most ``PHONE_WIDTH`` inches wide (450 px
#: at matplotlib's 100 dpi): the book shows it at its own size in its 688-px column and shrinks it
#: to about 342 px on a 390-px phone, where its ``TEXT_POINTS`` texts (:func:`legible`) still
#: read as 9 points.
PHONE_WIDTH = 4.5
TEXT_POINTS = 12


def legible(fig, size: float = LEGIBLE_SIZE):
    """Raise every text of ``fig`` (tick labels, axis labels, titles, legends, annotations, colour
    bars) to at least ``size`` points, and return ``fig``: :data:`LEGIBLE_SIZE` for a figure
    :data:`NARROW_WIDTH` wide, :data:`TEXT_POINTS` for one :data:`PHONE_WIDTH` wide.

    Call it once the figure is drawn and before its layout (``tight_layout`` then makes room for
    the larger texts). Sizes are set on the artists, not through ``rcParams``, so the figure
    shows inline in a notebook whatever the backend's state.
    """
    fig.canvas.draw()  # creates the tick labels that a draw would show
    for ax in fig.axes:
        ax.tick_params(labelsize=size)
    for text in fig.findobj(Text):
        if text.get_text() and text.get_fontsize() < size:
            text.set_fontsize(size)
    return fig


def plot_mukhoti_gap(gammas=(1.0, 3.0), n: int = 80):
    """The gap ``L_FL - (KL(q||p) - gamma H(p))``: above, binary curves against the true class's
    probability; below, the gap over the 3-class simplex (true class at the bottom-left corner),
    one panel and colour bar per gamma of ``gammas``."""
    fig = plt.figure(figsize=(NARROW_WIDTH, 6.2))
    grid = fig.add_gridspec(2, len(gammas), height_ratios=(1.1, 1))
    binary = fig.add_subplot(grid[0, :])
    p = np.linspace(1e-4, 1 - 1e-4, 500)
    two = np.c_[p, 1 - p]
    for g in (0.5, *gammas):
        binary.plot(p, theory.mukhoti_gap(two, np.c_[np.ones_like(p), np.zeros_like(p)], g), label=f"γ = {g:g}")
    binary.set(xlabel="p̂ of the true class (two classes)", ylabel="gap", title="two classes: gap ≥ 0")
    binary.legend(loc="upper left")
    q = simplex_points(n, margin=1e-3)
    target = np.tile([1.0, 0.0, 0.0], (q.shape[0], 1))
    tri = Triangulation(*to_plane(q).T)
    for k, g in enumerate(gammas):
        ax = fig.add_subplot(grid[1, k])
        gap = theory.mukhoti_gap(q, target, g)
        cs = ax.tricontourf(tri, gap, levels=20, cmap="viridis")
        bar = fig.colorbar(cs, ax=ax, orientation="horizontal", shrink=0.9, pad=0.02)
        bar.locator = MaxNLocator(3)
        bar.update_ticks()
        draw_simplex(ax, f"three classes, γ = {g:g}", labels=False)
    legible(fig)
    fig.tight_layout()
    return fig


def plot_focal_minimizer(eta: float = 0.8, gamma_max: float = 20.0):
    """The focal-loss minimiser for true probability ``eta`` against gamma (Komisarenko & Kull §3.1)."""
    gammas = np.linspace(0, gamma_max, 201)
    values = [float(theory.binary_focal_minimizer(eta, g)) for g in gammas]
    fig, ax = plt.subplots(figsize=(NARROW_WIDTH, 3.3))
    ax.plot(gammas, values)
    ax.axhline(eta, ls="--", color="gray", lw=0.8)
    ax.axhline(0.5, ls=":", color="gray", lw=0.8)
    ax.scatter([2.0], [float(theory.binary_focal_minimizer(eta, 2.0))], color="C3", zorder=3, label="γ = 2")
    ax.set(xlabel="γ", ylabel="focal-loss minimiser", title=f"true probability {eta:g}")
    ax.legend(loc="center right")  # between the lines at eta and 1/2, clear of the curve
    legible(fig)
    fig.tight_layout()
    return fig


def plot_focal_map_and_proper_loss(gammas=(0.5, 3.0), map_gammas=(-0.5, 0.5, 1.0, 2.0, 3.0, 5.0)):
    """Komisarenko & Kull Fig. 1: above, ``L*(q, 1)``, ``FL(q, 1)`` and CE; below, the focal map."""
    q = np.linspace(1e-3, 1 - 1e-3, 400)
    s = np.log(q) - np.log1p(-q)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(NARROW_WIDTH, 7.4), height_ratios=(1, 1.25))
    top.plot(q, -np.log(q), color="black", label="cross-entropy")
    for k, g in enumerate(gammas):
        top.plot(q, theory.binary_focal_loss(s, 1, g), ls="--", color=f"C{k}", label=f"focal, γ = {g:g}")
        top.plot(q, theory.proper_focal_loss(q, 1, g), color=f"C{k}", label=f"proper part, γ = {g:g}")
    top.set(xlabel="predicted probability q (true class 1)", ylabel="loss", ylim=(0, 4))
    top.legend(loc="upper right")
    for k, g in enumerate(map_gammas):
        bottom.plot(q, theory.binary_focal_calibration(q, g), color=f"C{k}", label=f"γ = {g:g}")
    bottom.plot(q, q, color="gray", lw=0.8, ls=":")
    bottom.set(xlabel="q", ylabel="p̂(q)", title="binary focal calibration map")
    bottom.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    legible(fig)
    fig.tight_layout()
    return fig


def plot_temperature_bounds(gamma: float = 4.0, gammas=None, s_max: float = 20.0):
    """Komisarenko & Kull Fig. 3: above, the focal map's local inverse temperature between the
    temperature maps' (Proposition 3's and the tight ones on ``|s| < s_max``); below, the widths
    of the two brackets against gamma."""
    gammas = np.linspace(0.25, 10, 40) if gammas is None else np.asarray(gammas)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(NARROW_WIDTH, 7.0), height_ratios=(1.3, 1))
    s = np.linspace(0, 6, 400)
    r = theory.inverse_temperature_profile(s, gamma)
    low, high = theory.temperature_bounds(gamma)
    tlow, thigh = theory.tight_temperature_bounds(gamma, s_max=s_max)
    top.plot(s, r, color="black", label="focal map: F(s)/s")
    for t, style, name in ((low, "--", "Prop. 3"), (high, "--", None), (tlow, ":", f"tight on |s| < {s_max:g}"),
                           (thigh, ":", None)):
        top.axhline(1 / t, ls=style, color="C0" if style == "--" else "C3", label=name)
    top.set(xlabel="logit s", ylabel="local inverse temperature", title=f"γ = {gamma:g}")
    top.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    theo = np.array([theory.temperature_bounds(g) for g in gammas])
    tight = np.array([theory.tight_temperature_bounds(g, s_max=s_max) for g in gammas])
    bottom.plot(gammas, theo[:, 1] - theo[:, 0], color="C0", ls="--", label="Prop. 3")
    bottom.plot(gammas, tight[:, 1] - tight[:, 0], color="C3", ls=":", label=f"tight on |s| < {s_max:g}")
    bottom.set(xlabel="γ", ylabel="T_high − T_low", title="width of the bracket")
    bottom.legend(loc="upper right")
    legible(fig)
    fig.tight_layout()
    return fig


def plot_closest_temperature(curves: dict, paper_lines: dict | None = None):
    """1/T of the closest temperature against gamma (above), and the deviation it leaves (below).

    ``curves`` maps a label (e.g. ``"K = 2"``) to ``(gammas, temperatures, deviations)``;
    ``paper_lines`` maps the same labels to the paper's ``(slope, intercept)``. One legend names
    the colours (the labels) and the marks (ours: dots; the paper's line: a line) of both panels.
    """
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(NARROW_WIDTH, 7.0), sharex=True)
    handles = []
    for k, (name, (g, t, dev)) in enumerate(curves.items()):
        g, t = np.asarray(g), np.asarray(t)
        top.plot(g, 1 / t, "o", ms=4, color=f"C{k}")
        if paper_lines and name in paper_lines:
            a, b = paper_lines[name]
            top.plot(g, a * g + b, "-", lw=1, color=f"C{k}")
        bottom.semilogy(g, dev, "o-", ms=4, color=f"C{k}")
        handles.append(Line2D([], [], color=f"C{k}", lw=6, label=name))
    handles.append(Line2D([], [], color="gray", marker="o", ls="", label="ours"))
    if paper_lines:
        handles.append(Line2D([], [], color="gray", ls="-", label="paper's line"))
    top.set(ylabel="1/T closest to the focal map")
    bottom.set(xlabel="γ", ylabel="largest |focal − TS|")
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False)  # below both panels
    legible(fig)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def plot_risk_isolines(eta=(0.55, 0.3, 0.15), gammas=(1.0, 3.0), percentiles=(3, 12, 20), n: int = 40):
    """Komisarenko & Kull Fig. 4: conditional-risk isolines of Brier, CE and the proper part of
    focal loss over the 3-class simplex, at the loss percentiles ``percentiles`` of the grid.

    Drawn narrow enough for a phone: two panels per row, the corners named, one legend for the
    isolines and the star (the true distribution ``eta``)."""
    eta = np.asarray(eta, dtype=float)
    q = simplex_points(n, margin=2e-3)
    tri = Triangulation(*to_plane(q).T)
    panels = [("Brier", theory.conditional_risk(q, eta, "brier")), ("cross-entropy", theory.conditional_risk(q, eta, "log"))]
    panels += [(f"proper focal γ = {g:g}", theory.conditional_risk(q, eta, "proper_focal", g)) for g in gammas]
    ncols = 2
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(NARROW_WIDTH, 2.45 * nrows + 1.0), squeeze=False)
    colours = [f"C{i}" for i in range(len(percentiles))]
    x0, y0 = to_plane(eta[None]).T
    for ax, (name, risk) in zip(axes.flat, panels):
        ax.tricontour(tri, risk, levels=np.percentile(risk, percentiles), colors=colours)
        ax.plot(x0, y0, "k*", markersize=9)
        draw_simplex(ax, name, label_size=LEGIBLE_SIZE)  # its title stands above the top corner's name
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    handles = [Line2D([], [], color=c, label=f"{p:g} % quantile") for c, p in zip(colours, percentiles)]
    handles.append(Line2D([], [], color="black", marker="*", linestyle="", markersize=9, label="the truth η"))
    fig.legend(handles=handles, loc="lower center", ncol=2, frameon=False, title="isoline of the risk at its")
    legible(fig)
    fig.tight_layout(rect=(0, 0.13, 1, 1), w_pad=2.0)  # the corners of neighbouring panels apart
    return fig


def plot_loss_and_slope(p_t, curves: dict, styles: dict | None = None, *, loss_ylim=None, slope_ylim=None,
                        xlabel: str = "$p_t$", slope_label: str = r"$\partial \mathcal{L} / \partial p_t$",
                        legend_columns: int = 2):
    """Losses along the true class's probability ``p_t`` (top) and their slopes ``dL/dp_t``
    (bottom), one named curve per loss, as in Ghosh et al. (2022) Fig. 3(a) (CE, focal, inverse
    focal and CalFocal losses against ``p_n``) and the book's focal-loss, AdaFocal, dual focal and
    FCL chapters.

    Parameters
    ----------
    p_t : array of shape (n,)
        The points along the path, as given to :func:`calibnb.losses.loss_along_pt`.
    curves : dict
        Label -> ``(values, slopes)``, each of shape ``(n,)`` and finite: what
        :func:`calibnb.losses.loss_along_pt` returns for one loss. The labels name the top
        panel's lines in the legend; the bottom panel repeats the lines without labels.
    styles : dict, optional
        Label (of ``curves``) -> keyword arguments of ``Axes.plot`` (``ls``, ``color``, ``lw``, ...)
        for that curve in both panels. A curve's colour is otherwise ``C0``, ``C1``, ... in the
        order of ``curves``, its line solid.
    loss_ylim, slope_ylim : (low, high), optional
        The y-limits of the loss and of the slope panel (matplotlib's own when None).
    xlabel, slope_label : str
        The x-axis label (under the bottom panel) and the slope panel's y-label.
    legend_columns : int
        The most columns of the legend, which stands above the top panel, clear of the curves;
        fewer where that many would be wider than the figure.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing the ``p_t`` axis, drawn :data:`PHONE_WIDTH` wide with every text at
        least :data:`TEXT_POINTS` points (:func:`legible`), so that it reads on a phone.

    Raises
    ------
    TypeError
        If ``curves``, ``styles`` or a curve's style is not a dict.
    ValueError
        If ``curves`` is empty, a curve is not a ``(values, slopes)`` pair of ``p_t``'s length or
        holds NaN or inf, ``styles`` names a curve that ``curves`` lacks, or ``legend_columns`` < 1.
    """
    p_t = check_vector(p_t, "p_t", min_size=2)
    check_type(curves, "curves", dict, "a dict of label -> (values, slopes)")
    if not curves:
        raise ValueError("curves must name at least one (values, slopes) pair")
    styles = {} if styles is None else check_type(styles, "styles", dict, "a dict of label -> plot keywords")
    unknown = sorted(map(str, set(styles) - set(curves)))
    if unknown:
        raise ValueError(f"styles names curves that curves lacks: {', '.join(unknown)}")
    for name, style in styles.items():
        check_type(style, f"styles[{name!r}]", dict, "a dict of Axes.plot keywords")
    legend_columns = check_int(legend_columns, "legend_columns", minimum=1)
    lines = {}
    for name, pair in curves.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"curves[{name!r}] must be a (values, slopes) pair")
        values, slopes = (check_vector(a, f"curves[{name!r}][{i}]") for i, a in enumerate(pair))
        if values.shape != p_t.shape or slopes.shape != p_t.shape:
            raise ValueError(f"curves[{name!r}] must hold {p_t.size} values and slopes, one per p_t; "
                             f"got {values.size} and {slopes.size}")
        lines[name] = values, slopes
    fig, (ax_loss, ax_slope) = plt.subplots(2, 1, figsize=(PHONE_WIDTH, 4.8), sharex=True)
    for k, (name, (values, slopes)) in enumerate(lines.items()):
        style = {"color": f"C{k}", **styles.get(name, {})}
        ax_loss.plot(p_t, values, label=str(name), **style)
        ax_slope.plot(p_t, slopes, **style)
    ax_loss.set(ylabel="loss", ylim=loss_ylim)
    ax_slope.set(xlabel=xlabel, ylabel=slope_label, ylim=slope_ylim)
    legible(fig, TEXT_POINTS)
    renderer = fig.canvas.get_renderer()
    for columns in range(min(legend_columns, len(lines)), 0, -1):  # as many as fit in the figure
        legend = ax_loss.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=columns, frameon=False,
                                handlelength=1.5, columnspacing=0.8, fontsize=TEXT_POINTS)
        fig.set_figheight(4.8 + 0.3 * -(-len(lines) // columns))  # room for the legend's rows
        if columns > 1 and legend.get_window_extent(renderer).width > fig.bbox.width:
            continue  # wider than the figure wherever it stands
        fig.tight_layout()
        box = legend.get_window_extent(renderer)
        if columns == 1 or (box.x0 >= 0 and box.x1 <= fig.bbox.width):
            break
    return fig


def plot_dfl_phi(gamma: float = 1.0, C: float = 0.3):
    """Tao et al. (2023) Fig. 1: phi of FL and DFL with the landmarks v_m, v' and v_uc.

    The landmarks are dotted vertical lines named above the axes (horizontal text), so no label
    crosses a curve; the legend sits in the lower left, below both curves. Drawn at
    :data:`PHONE_WIDTH`, its texts :data:`TEXT_POINTS` points or more."""
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
                    textcoords="offset points", ha="center", va="bottom", color=color)
    ax.set(xlabel=r"$v = q^*_m$, the top probability", ylabel=r"$\phi(v)$")
    ax.legend(loc="lower left")
    legible(fig, TEXT_POINTS)
    fig.tight_layout()
    return fig


def plot_dual_focal_risk_slice(eta=(0.16060191, 0.05056221, 0.78883588), gamma: float = 2.0, top: float = 0.66916508):
    """Dual focal loss' conditional risk along ``q = (a, 1 - top - a, top)``.

    With the dual defined as the largest probability *strictly* below the target's, the risk
    drops where the two small classes tie (``a = (1 - top) / 2``): the isolated point below the
    curve is the minimiser, so the two classes get equal probability although ``eta`` differs.
    The curve is drawn in two pieces, left and right of the tie, where it jumps. Drawn at
    :data:`PHONE_WIDTH`, its texts :data:`TEXT_POINTS` points or more.
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
    ax.legend(loc="upper right")
    legible(fig, TEXT_POINTS)
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
    marker; the legend stands above the axes, clear of the data. Drawn at :data:`PHONE_WIDTH`,
    its texts :data:`TEXT_POINTS` points or more."""
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH, 3.4))
    for k, (name, row) in enumerate(gaps.iterrows()):
        ax.plot(row.index, row.to_numpy(), marker="osD^v"[k % 5], ms=5, color=f"C{k}",
                label=f"γ = {name:g}" if not isinstance(name, str) else name)
    ax.axhline(0, color="black", lw=0.8)
    ax.set(xlabel="validation bin (low → high confidence)",
           ylabel=r"$C_{\mathrm{val}} - A_{\mathrm{val}}$", xticks=list(gaps.columns)[::2])
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(gaps), frameon=False,
              columnspacing=1.2)
    legible(fig, TEXT_POINTS)
    fig.tight_layout()
    return fig


def plot_train_val_confidence(tables: dict):
    """Ghosh et al. Fig. 2: per validation bin, the training samples' mean true-class probability
    ``C_train`` (solid) and the validation confidence ``C_val`` (stars), one colour per run
    (``tables``: label -> :func:`calibnb.theory.train_val_bin_confidence`). One legend above
    the axes names the colours and the two line styles, clear of the data. Drawn at
    :data:`PHONE_WIDTH`, its texts :data:`TEXT_POINTS` points or more."""
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
              handlelength=1.8, columnspacing=1.2)
    legible(fig, TEXT_POINTS)
    fig.tight_layout()
    return fig
