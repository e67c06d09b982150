"""Figures of the book: reliability diagrams (one or a grid), learning curves (of one run, or of many
methods as small multiples), AdaFocal's γ dynamics."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import cbook, ticker, transforms
from matplotlib.axes import Axes
from matplotlib.backend_bases import FigureCanvasBase

from calibnb._validation import check_type
from calibnb.atomic import atomic_path
from calibnb.metrics import ece, reliability_table


def _hide_unused_and_label_columns(axes, used: int, xlabel: str = "") -> None:
    """Turn off the panels of a grid past the first ``used``, and give the lowest drawn panel of
    each column its x tick labels (and ``xlabel``), so the scale sits under every column."""
    for ax in axes.flat[used:]:
        ax.axis("off")
    for column in axes.T:
        drawn = [ax for ax in column if ax.axison]
        if drawn:
            drawn[-1].tick_params(labelbottom=True)
            if xlabel:
                drawn[-1].set_xlabel(xlabel)


__all__ = [
    "COLUMN_WIDTH",
    "ece_by_seed",
    "fts_valley",
    "gamma_dynamics",
    "learning_curves",
    "method_colours",
    "method_panels",
    "reliability_diagram",
    "reliability_grid",
    "whisker_span",
]


def reliability_diagram(
    probs,
    labels,
    ax=None,
    path=None,
    n_bins: int = 15,
    binning: str = "width",
    title: str | None = None,
    show_counts: bool = True,
    legend: bool = True,
):
    """A reliability diagram with its histogram, in one call (Guo et al. 2017, Fig. 1).

    Bars show each non-empty bin's accuracy of the top-label prediction; a hatched red bar spans
    the gap between accuracy and mean confidence; the dashed diagonal is perfect calibration; the
    title gives the ECE with the same bins. The key (accuracy, gap, perfect calibration) lies
    under the diagram, outside it, so it never covers a bar: a legend inside the square would
    sit on the confident bins, where a trained network's data is. With ``show_counts`` a
    histogram of the fraction of samples per bin is drawn in its own axes under the diagram,
    carved out of the diagram's own box (``mpl_toolkits.axes_grid1``'s divider), so the
    histogram lies inside the figure and a plain ``savefig`` keeps it; its axis label is
    aligned with the diagram's. Bins come from :func:`calibnb.metrics.reliability_table`.

    Parameters
    ----------
    probs : array (N, K)
        Predicted class probabilities.
    labels : array (N,)
        Integer labels.
    ax : matplotlib Axes, optional
        Where to draw; its box holds the diagram and the histogram. Lay its figure out with
        ``fig.tight_layout()`` (constrained layout does not move a divider's axes). Without it, a
        new figure :data:`COLUMN_WIDTH` / 2 wide is made and laid out.
    path : str or os.PathLike, optional
        Save the figure here, atomically (:func:`calibnb.runs.atomic_path`), in the format its
        extension names (``.png``, ``.svg``, ``.pdf``, ... what matplotlib writes).
    n_bins, binning
        As for :func:`calibnb.metrics.ece`: the number of bins, ``"width"`` (ECE) or ``"mass"``
        (AdaECE).
    title : str, optional
        The diagram's title, above the line that gives the ECE.
    show_counts : bool
        Draw the histogram of samples per bin.
    legend : bool
        Draw the key under the diagram (a figure of many diagrams draws one key for all, as
        :func:`reliability_grid` does).

    Returns
    -------
    matplotlib Figure or Axes
        The new figure when ``ax`` is not given, else ``ax`` (the histogram's axes, when drawn, is
        the figure's axes after it).

    Examples
    --------
    >>> from calibnb.plots import reliability_diagram
    >>> probs = [[0.7, 0.3], [0.6, 0.4], [0.2, 0.8], [0.9, 0.1]]
    >>> fig = reliability_diagram(probs, [0, 1, 1, 0])  # path="reliability.png" would save it
    >>> [ax.get_ylabel() for ax in fig.axes]  # the diagram, and the histogram under it
    ['Accuracy', 'Fraction']
    >>> fig.axes[0].get_title()
    'ECE = 30.00 %'
    """
    table = reliability_table(probs, labels, n_bins=n_bins, binning=binning)
    if ax is not None:
        check_type(ax, "ax", Axes, "a matplotlib Axes")
    if title is not None:
        check_type(title, "title", str, "a str")
    check_type(show_counts, "show_counts", bool, "a bool")
    check_type(legend, "legend", bool, "a bool")
    suffix = None if path is None else _figure_format(path)
    fig = None
    if ax is None:
        height = COLUMN_WIDTH / 2 + (0.9 if show_counts else 0.0) + (0.45 if legend else 0.0)
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH / 2, height))
    full = table[table["count"] > 0]
    width = full["hi"] - full["lo"]
    ax.bar(full["lo"], full["accuracy"], width=width, align="edge", color="tab:blue",
           edgecolor="black", linewidth=0.5, label="Accuracy")
    ax.bar(full["lo"], full["confidence"] - full["accuracy"], bottom=full["accuracy"],
           width=width, align="edge", color="tab:red", alpha=0.3, hatch="//",
           edgecolor="tab:red", linewidth=0.5, label="Gap")
    ax.plot([0, 1], [0, 1], linestyle="--", color="gray", label="Perfect calibration")
    value = ece(probs, labels, n_bins=n_bins, binning=binning)
    name = "ECE" if binning == "width" else "AdaECE"
    score = f"{name} = {100 * value:.2f} %"
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="Confidence", ylabel="Accuracy")
    ax.set_title(score if title is None else f"{title}\n{score}")
    bottom = ax
    if show_counts:
        from mpl_toolkits.axes_grid1 import make_axes_locatable

        counts_ax = make_axes_locatable(ax).append_axes("bottom", size="28%", pad=0.08, sharex=ax)
        fraction = table["count"] / table["count"].sum()
        counts_ax.bar(table["lo"], fraction, width=table["hi"] - table["lo"], align="edge",
                      color="gray", edgecolor="black", linewidth=0.5)
        counts_ax.set(xlim=(0, 1), ylim=(0, max(float(np.max(fraction)), 1e-12) * 1.1),
                      xlabel="Confidence", ylabel="Fraction")
        # two ticks, so the histogram's labels stay as narrow as the diagram's
        counts_ax.yaxis.set_major_locator(ticker.MaxNLocator(2))
        ax.set_xlabel("")
        ax.tick_params(labelbottom=False)
        # "Accuracy" and "Fraction" in one column, left of the wider tick labels of the two: the
        # figure's own alignment (what Figure.align_ylabels sets up, which skips a divider's axes
        # since it has no subplot position), resolved at every draw
        ax.figure._align_label_groups["y"].join(ax, counts_ax)
        bottom = counts_ax
    if legend:
        _key_under(ax, bottom)
    if fig is not None:
        fig.tight_layout()
    if path is not None:
        _save_figure(ax.figure, path, suffix)
    return ax if fig is None else fig


def _key_under(ax, bottom) -> None:
    """The diagram's key (accuracy, gap, perfect calibration) under ``bottom``, the lowest of its
    axes, clear of its tick labels and axis label: in one row where the figure is wide enough
    for it, else in two."""
    handles, names = ax.get_legend_handles_labels()
    order = [names.index(n) for n in ("Accuracy", "Gap", "Perfect calibration")]
    # 34 points down: under the tick labels and the axis label of the axes
    offset = transforms.ScaledTranslation(0, -34 / 72, ax.figure.dpi_scale_trans)
    for ncol in (3, 2):
        key = bottom.legend([handles[i] for i in order], [names[i] for i in order], loc="upper center",
                            bbox_to_anchor=(0.5, 0.0), bbox_transform=bottom.transAxes + offset, ncol=ncol,
                            fontsize=9, handlelength=1.4, columnspacing=0.9, handletextpad=0.4,
                            borderaxespad=0.0, frameon=False)
        width = key.get_window_extent().width  # (matplotlib finds a renderer for any canvas)
        if width <= 0.8 * ax.figure.bbox.width:
            break


def _figure_format(path) -> str:
    """The format ``path``'s extension names, if matplotlib writes it; a ``ValueError`` naming
    ``path`` otherwise."""
    check_type(path, "path", (str, os.PathLike), "a str or os.PathLike")
    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in formats:
        raise ValueError(f"path must end in one of {', '.join('.' + f for f in sorted(formats))}, got {str(path)!r}")
    return suffix


def _save_figure(fig, path, suffix: str) -> None:
    """Save ``fig`` to ``path`` atomically, cropped to what is drawn (nothing drawn is cut off)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=suffix, bbox_inches="tight")


#: The width, in inches, of the book's figures: its text column (688 px) at matplotlib's 100 dpi,
#: so a figure is shown at its own size and a 10-point label reads as 10 points.
COLUMN_WIDTH = 7.0


def method_colours(names) -> dict:
    """One distinct colour per name, the book's palette for figures that compare methods:
    seaborn's ``"tab10"`` up to ten names, beyond it evenly spaced hues of seaborn's HLS palette,
    dark enough to read on white (no colour is reused, so no line needs a second style to be
    told apart)."""
    import seaborn as sns

    names = list(names)
    if len(set(names)) != len(names):
        raise ValueError(f"names must be distinct, got {names}")
    palette = sns.color_palette("tab10", len(names)) if len(names) <= 10 else sns.hls_palette(len(names), l=0.42, s=0.85)
    return dict(zip(names, palette))


def learning_curves(axes, history):
    """Training curves of a run (``history`` as returned by :func:`calibnb.train.train`).

    ``axes`` is a sequence of three axes: loss (train loss per sample, validation NLL), error
    (train and validation) and validation ECE, each against the epoch.
    """
    epoch = history["epoch"]
    loss_ax, error_ax, ece_ax = axes
    loss_ax.plot(epoch, history["train_loss"], marker="o", label="train loss")
    loss_ax.plot(epoch, history["val_nll"], marker="o", label="validation NLL")
    error_ax.plot(epoch, 100 * history["train_error"], marker="o", label="train")
    error_ax.plot(epoch, 100 * history["val_error"], marker="o", label="validation")
    ece_ax.plot(epoch, 100 * history["val_ece"], marker="o", color="tab:red")
    loss_ax.set(xlabel="epoch", ylabel="loss per sample")
    error_ax.set(xlabel="epoch", ylabel="error (%)")
    ece_ax.set(xlabel="epoch", ylabel="validation ECE (%)")
    loss_ax.legend()
    error_ax.legend()
    return axes


def method_panels(curves: dict, ylabel: str, ncols: int = 4, log: bool = False, marks=()):
    """Many methods' curves as small multiples: one panel per method (``curves``: name → a pandas
    Series indexed by epoch), its own curve drawn in its colour (:func:`method_colours`) over every
    other method's in light grey. A dozen curves in one axes can only be told apart by a dozen
    colours; here each is found by its panel's title and compared with the others at a glance.

    The panels share their axes; ``log`` puts the y axis on a log scale (labelled in plain
    numbers), ``marks`` draws a thin vertical line at each x (the learning rate's drops). The
    figure is :data:`COLUMN_WIDTH` wide. Returns it.
    """
    if not curves:
        raise ValueError("curves is empty: nothing to draw")
    check_type(ylabel, "ylabel", str, "a str")
    names = list(curves)
    nrows = -(-len(names) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(COLUMN_WIDTH, 1.7 * nrows + 0.5), sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    colour = method_colours(names)
    for ax, name in zip(axes.flat, names):
        for other in names:
            if other != name:
                ax.plot(curves[other].index, curves[other], color="0.82", linewidth=0.8)
        ax.plot(curves[name].index, curves[name], color=colour[name], linewidth=1.8)
        for x in marks:
            ax.axvline(x, color="gray", linewidth=0.5, zorder=0)
        ax.set_title(name, fontsize=9, pad=3)
        ax.tick_params(labelsize=8)
        if log:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    _hide_unused_and_label_columns(axes, len(names))
    fig.supxlabel("epoch", fontsize=10)
    fig.supylabel(ylabel, fontsize=10)
    return fig


def gamma_dynamics(ax, gammas, edges=None):
    """AdaFocal's γ per bin against the update step (the AdaFocal paper's Figure 5, bottom row).

    ``gammas`` is a list (one entry per update) of per-bin γ lists, as stored in a run's
    ``metrics.json``. The bins are coloured from the least confident (dark) to the most
    confident (yellow), with a colour bar instead of a legend of fifteen entries; ``edges``
    (optional, the last update's bin edges) put the confidence range of the lowest and highest
    bins at the ends of the colour bar. Negative γ (inverse focal loss) lies below the dotted
    zero line. Returns the colour bar.
    """
    values = np.asarray(gammas, dtype=float)
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"gammas must be a non-empty list of per-bin lists, got shape {values.shape}")
    n_bins = values.shape[1]
    if edges is not None and len(edges) != n_bins + 1:
        raise ValueError(f"edges must hold {n_bins + 1} bin edges, got {len(edges)}")
    steps = np.arange(1, values.shape[0] + 1)
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 1, n_bins))
    for b in range(n_bins):
        ax.plot(steps, values[:, b], color=colours[b], marker=".", markersize=4, linewidth=1.2)
    ax.axhline(0.0, color="gray", linestyle=":")
    ax.set(xlabel="update (epoch)", ylabel=r"$\gamma$")
    scale = matplotlib.cm.ScalarMappable(matplotlib.colors.Normalize(-0.5, n_bins - 0.5), "viridis")
    bar = ax.figure.colorbar(scale, ax=ax, pad=0.02, ticks=[0, n_bins - 1])
    bar.set_label("confidence bin", fontsize="small")
    ends = ["lowest", "highest"] if edges is None else [
        f"lowest\n({edges[0]:.2f}–{edges[1]:.2f})", f"highest\n({edges[-2]:.3f}–{edges[-1]:.2f})"]
    bar.ax.set_yticklabels(ends, fontsize="x-small")
    return bar


def reliability_grid(panels: dict, titles: dict | None = None, ncols: int = 3, n_bins: int = 15):
    """A grid of reliability diagrams, one per entry of ``panels`` (name → ``(probs, labels)``).

    Each panel is :func:`reliability_diagram` without the counts inset, titled with its name (or
    ``titles[name]``) and the ECE of its ``n_bins`` equal-width bins, which is also returned.
    One key under the grid names the bars and the diagonal for every panel. Unused axes are
    hidden. The figure is :data:`COLUMN_WIDTH` wide. Returns ``(figure,
    {name: ECE as a fraction})``.
    """
    if not panels:
        raise ValueError("panels is empty: nothing to draw")
    titles = titles or {}
    nrows = -(-len(panels) // ncols)
    side = COLUMN_WIDTH / ncols
    # Constrained layout makes room for the shared axis label (fig.supylabel) beside the tick
    # labels rather than over them, and for the key under the panels.
    fig, axes = plt.subplots(nrows, ncols, figsize=(COLUMN_WIDTH, (side + 0.35) * nrows + 0.3), sharex=True,
                             sharey=True, squeeze=False, layout="constrained")
    values = {}
    for ax, (name, (probs, labels)) in zip(axes.flat, panels.items()):
        values[name] = ece(probs, labels, n_bins=n_bins)
        reliability_diagram(probs, labels, ax=ax, n_bins=n_bins, show_counts=False, legend=False)
        ax.set_title(f"{titles.get(name, name)}\nECE = {100 * values[name]:.2f} %", fontsize=9)
        ax.set(xlabel="", ylabel="")
        ax.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])  # side by side, five ticks a panel would touch
    # the lowest panel of each column carries the confidence scale, also above an unused axes
    _hide_unused_and_label_columns(axes, len(panels), xlabel="confidence")
    fig.supylabel("accuracy")
    # one key for all the panels, under them: a key inside a panel would cover its bars
    handles, names = axes.flat[0].get_legend_handles_labels()
    order = [names.index(n) for n in ("Accuracy", "Gap", "Perfect calibration")]
    fig.legend([handles[i] for i in order], [names[i] for i in order], loc="outside lower center",
               ncol=3, fontsize=9, frameon=False)
    return fig, values


def whisker_span(values) -> float:
    """The span between a box plot's whiskers, by matplotlib's own rule (1.5 IQR beyond the box)."""
    (box,) = cbook.boxplot_stats(np.asarray(values, dtype=float))
    return float(box["whishi"] - box["whislo"])


def ece_by_seed(selected: dict, rows, column: str = "ece", after: str = "ece_ts"):
    """Each run's test ECE before (red) and after (blue) T, one panel per regime, one column per
    method ``row``: the seeds behind every "mean ± std" of the results tables.

    ``selected`` maps a regime's name to its selected runs (with a ``row`` column). Returns the
    figure.
    """
    fig, axes = plt.subplots(len(selected), 1, figsize=(COLUMN_WIDTH, 3.0 * len(selected)), sharex=True,
                             squeeze=False)
    for ax, (name, runs) in zip(axes[:, 0], selected.items()):
        for i, r in enumerate(rows):
            g = runs[runs["row"] == r]
            for offset, key, colour, label in ((-0.12, column, "C3", "before T"),
                                               (0.12, after, "C0", "after T")):
                ax.scatter(np.full(len(g), i + offset), 100 * g[key], color=colour, s=14,
                           label=label if i == 0 else None)
        ax.set_title(name)
        ax.set_ylabel("test ECE (%)")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend()
    axes[-1, 0].set_xticks(np.arange(len(rows)), rows, rotation=35, ha="right")
    fig.tight_layout()
    return fig


def fts_valley(ax, gammas, valley, chosen=None, ts_temperature=None, color=None, label=None):
    """Optimal T against γ_ev for focal temperature scaling (Komisarenko & Kull 2024, Fig. 8).

    ``valley`` is the best T of the criterion surface for each γ of ``gammas`` (a line);
    ``chosen`` (optional) the fitted ``(γ, T)`` pairs (points). With ``ts_temperature`` the
    band ``T_TS / T_high(γ) … T_TS / T_low(γ)`` is shaded for γ ≥ 0: the T at which FTS equals
    temperature scaling at ``T_TS`` if focal calibration were exactly a temperature within
    Proposition 3's bounds (``calibnb.theory.temperature_bounds()``). Returns ``ax``.
    """
    from calibnb.theory import temperature_bounds

    gammas, valley = np.asarray(gammas, dtype=float), np.asarray(valley, dtype=float)
    if gammas.shape != valley.shape or gammas.ndim != 1:
        raise ValueError(f"gammas and valley must be 1-D of one length, got {gammas.shape} and {valley.shape}")
    (line,) = ax.plot(gammas, valley, ".-", color=color, label=label)
    if chosen is not None and len(chosen):
        chosen = np.asarray(chosen, dtype=float).reshape(-1, 2)
        ax.plot(chosen[:, 0], chosen[:, 1], "o", color=line.get_color(), mfc="none", ms=8)
    if ts_temperature is not None:
        g = np.linspace(0.0, gammas.max(), 100)
        low, high = np.array([temperature_bounds(x) for x in g]).T
        ax.fill_between(g, ts_temperature / high, ts_temperature / low, color=line.get_color(), alpha=0.15)
    ax.set(xlabel=r"$\gamma_{ev}$", ylabel="T")
    return ax
