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


def test_reliability_grid_draws_one_panel_per_entry_with_its_ece():
    from calibnb.plots import reliability_grid
    panels = {f"m{i}": data(seed=i) for i in range(5)}
    fig, values = reliability_grid(panels, titles={"m0": "first"}, ncols=4)
    axes = fig.axes
    assert len(axes) == 8 and sum(ax.axison for ax in axes) == 5  # 3 unused axes hidden
    assert values == {name: ece(*panel) for name, panel in panels.items()}
    assert axes[0].get_title() == f"first\nECE = {100 * values['m0']:.2f} %"
    with pytest.raises(ValueError, match="panels is empty"):
        reliability_grid({})
    plt.close("all")


def test_whisker_span_is_matplotlibs_whisker_rule():
    from calibnb.plots import whisker_span
    values = np.r_[np.arange(1.0, 11.0), 100.0]  # 100 lies beyond 1.5 IQR: an outlier
    q1, q3 = np.percentile(values, [25, 75])
    inside = values[(values >= q1 - 1.5 * (q3 - q1)) & (values <= q3 + 1.5 * (q3 - q1))]
    assert whisker_span(values) == inside.max() - inside.min() == 9.0


def test_ece_by_seed_scatters_every_run_twice():
    import pandas as pd
    from calibnb.plots import ece_by_seed
    runs = pd.DataFrame({"row": ["CE"] * 3 + ["FL-3"] * 2, "ece": [0.1] * 5, "ece_ts": [0.05] * 5})
    fig = ece_by_seed({"A": runs, "B": runs[runs["row"] == "CE"]}, ["CE", "FL-3"])
    points = [len(c.get_offsets()) for ax in fig.axes for c in ax.collections]
    assert points == [3, 3, 2, 2, 3, 3, 0, 0]
    plt.close("all")


def test_fts_valley_draws_the_valley_the_choices_and_the_band():
    from calibnb.plots import fts_valley
    from calibnb.theory import temperature_bounds
    fig, ax = plt.subplots()
    fts_valley(ax, [-0.5, 0.0, 1.0], [1.0, 1.2, 1.5], chosen=[(0.0, 1.2), (1.0, 1.5)], ts_temperature=2.0)
    valley, chosen = ax.lines
    np.testing.assert_array_equal(valley.get_xydata(), [[-0.5, 1.0], [0.0, 1.2], [1.0, 1.5]])
    assert chosen.get_xydata().tolist() == [[0.0, 1.2], [1.0, 1.5]]
    band = ax.collections[0].get_paths()[0].vertices
    low, high = temperature_bounds(1.0)
    # at γ = 1 the band spans T_TS / T_high .. T_TS / T_low
    at_one = band[np.isclose(band[:, 0], 1.0), 1]
    assert at_one.min() == pytest.approx(2.0 / high) and at_one.max() == pytest.approx(2.0 / low)
    with pytest.raises(ValueError, match="one length"):
        fts_valley(ax, [0.0, 1.0], [1.0])
    plt.close("all")


def test_gamma_dynamics_draws_every_bin_with_a_colour_bar_not_a_legend():
    import matplotlib.pyplot as plt

    from calibnb.plots import gamma_dynamics

    fig, ax = plt.subplots()
    gammas = [[1.0] * 15, [1.1] * 14 + [-0.2]]
    bar = gamma_dynamics(ax, gammas, edges=np.linspace(0, 1, 16))
    assert len(ax.lines) == 15 + 1 and ax.get_legend() is None  # 15 bins and the zero line
    assert [t.get_text() for t in bar.ax.get_yticklabels()] == ["lowest\n(0.00–0.07)", "highest\n(0.933–1.00)"]
    with pytest.raises(ValueError, match="edges must hold 16"):
        gamma_dynamics(ax, gammas, edges=[0.0, 1.0])
    plt.close(fig)


def test_method_colours_never_repeat():
    from calibnb.plots import method_colours

    for n in (3, 10, 12, 20):
        colours = method_colours([f"m{i}" for i in range(n)])
        assert len({tuple(np.round(c, 6)) for c in colours.values()}) == n
    with pytest.raises(ValueError, match="distinct"):
        method_colours(["CE", "CE"])
