"""The reliability diagram draws what reliability_table and ece compute."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from calibnb.metrics import ece, reliability_table  # noqa: E402
from calibnb.plots import reliability_diagram  # noqa: E402


def data(seed=0, n=1000, k=10):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = np.where(rng.random(n) < 0.6, probs.argmax(1), rng.integers(0, k, n))
    return probs, labels


@pytest.mark.parametrize("binning, name", [("width", "ECE"), ("mass", "AdaECE")])
def test_bars_are_bin_accuracies_and_gaps(binning, name):
    probs, labels = data()
    fig, ax = plt.subplots()
    ax, counts_ax = reliability_diagram(ax, probs, labels, binning=binning, title="t")
    table = reliability_table(probs, labels, binning=binning)
    full = table[table["count"] > 0]
    accuracy_bars, gap_bars = ax.containers
    assert [r.get_height() for r in accuracy_bars] == pytest.approx(full["accuracy"].tolist())
    tops = [r.get_y() + r.get_height() for r in gap_bars]
    assert tops == pytest.approx(full["confidence"].tolist())
    assert [r.get_x() for r in accuracy_bars] == pytest.approx(full["lo"].tolist())
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"{name} = {100 * ece(probs, labels, binning=binning):.2f} %" in legend
    heights = [r.get_height() for r in counts_ax.containers[0]]
    assert heights == pytest.approx((table["count"] / len(labels)).tolist())
    assert ax.get_title() == "t"
    plt.close(fig)


def test_without_counts_and_bad_input():
    probs, labels = data(1, 50, 3)
    fig, ax = plt.subplots()
    assert reliability_diagram(ax, probs, labels, n_bins=5, show_counts=False) == (ax, None)
    assert len(ax.containers[0]) == (reliability_table(probs, labels, 5)["count"] > 0).sum()
    with pytest.raises(ValueError, match="n_bins"):
        reliability_diagram(ax, probs, labels, n_bins=0)
    with pytest.raises(ValueError, match="labels"):
        reliability_diagram(ax, probs, labels[:-1])
    plt.close(fig)
