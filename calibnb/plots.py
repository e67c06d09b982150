"""Figures of the book: the papers' reliability diagram (more plots are added by other chapters)."""

from __future__ import annotations

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
