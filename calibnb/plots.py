"""Figures of the book: reliability diagrams, learning curves and AdaFocal's γ dynamics."""

from __future__ import annotations

import matplotlib
import numpy as np

from calibnb.metrics import ece, reliability_table


def reliability_diagram(
    ax,
    probs,
    labels,
    n_bins: int = 15,
    binning: str = "width",
    title: str | None = None,
    show_counts: bool = True,
):
    """Draw the reliability diagram of Guo et al. (2017, Fig. 1) / Mukhoti et al. (2020) on ``ax``.

    Bars show each non-empty bin's accuracy of the top-label prediction; a hatched red bar spans
    the gap between accuracy and mean confidence; the dashed diagonal is perfect calibration; the
    legend gives the ECE with the same bins. With ``show_counts`` a histogram of the fraction of
    samples per bin is drawn in an inset axis below ``ax``. Bins come from
    ``calibnb.metrics.reliability_table``. Returns ``(ax, counts_ax or None)``.
    """
    table = reliability_table(probs, labels, n_bins=n_bins, binning=binning)
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
    ax.plot([], [], " ", label=f"{name} = {100 * value:.2f} %")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="Confidence", ylabel="Accuracy")
    if title is not None:
        ax.set_title(title)
    ax.legend(loc="upper left", fontsize="small")
    if not show_counts:
        return ax, None
    counts_ax = ax.inset_axes([0.0, -0.45, 1.0, 0.22])
    fraction = table["count"] / table["count"].sum()
    counts_ax.bar(table["lo"], fraction, width=table["hi"] - table["lo"], align="edge",
                  color="gray", edgecolor="black", linewidth=0.5)
    counts_ax.set(xlim=(0, 1), ylim=(0, max(float(np.max(fraction)), 1e-12) * 1.1),
                  ylabel="Fraction")
    ax.set_xlabel("Confidence")
    return ax, counts_ax


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


def gamma_dynamics(ax, gammas, edges=None):
    """AdaFocal's γ per bin against the update step (the AdaFocal paper's Figure 5, bottom row).

    ``gammas`` is a list (one entry per update) of per-bin γ lists, as stored in a run's
    ``metrics.json``; ``edges`` (optional, the last update's bin edges) label the bins by their
    confidence range. Negative γ (inverse focal loss) lies below the dotted zero line.
    """
    values = np.asarray(gammas, dtype=float)
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"gammas must be a non-empty list of per-bin lists, got shape {values.shape}")
    steps = np.arange(1, values.shape[0] + 1)
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 1, values.shape[1]))
    for b in range(values.shape[1]):
        label = f"bin {b}" if edges is None else f"({edges[b]:.2f}, {edges[b + 1]:.2f}]"
        ax.plot(steps, values[:, b], color=colours[b], marker=".", label=label)
    ax.axhline(0.0, color="gray", linestyle=":")
    ax.set(xlabel="update (epoch)", ylabel=r"$\gamma$")
    ax.legend(fontsize="x-small", ncol=3)
    return ax
