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
    assert reliability_diagram(probs, labels, ax=ax, binning=binning, title="t") is ax
    table = reliability_table(probs, labels, binning=binning)
    full = table[table["count"] > 0]
    accuracy_bars, gap_bars = ax.containers
    assert [r.get_height() for r in accuracy_bars] == pytest.approx(full["accuracy"].tolist())
    tops = [r.get_y() + r.get_height() for r in gap_bars]
    assert tops == pytest.approx(full["confidence"].tolist())
    assert [r.get_x() for r in accuracy_bars] == pytest.approx(full["lo"].tolist())
    counts_ax = fig.axes[1]
    heights = [r.get_height() for r in counts_ax.containers[0]]
    assert heights == pytest.approx((table["count"] / len(labels)).tolist())
    assert ax.get_title() == f"t\n{name} = {100 * ece(probs, labels, binning=binning):.2f} %"
    # the key names the bars and the diagonal, and sits under the histogram
    key = counts_ax.get_legend()
    assert [t.get_text() for t in key.get_texts()] == ["Accuracy", "Gap", "Perfect calibration"]
    plt.close(fig)


def test_the_key_covers_no_bar_and_the_labels_line_up():
    """Issue 27: the key used to sit inside the diagram's upper left corner, on the confident
    bins of a small panel; it now lies under the axes, clear of every axes, tick label and axis
    label, and the diagram's "Accuracy" lines up with the histogram's "Fraction"."""
    probs, labels = data()
    for figsize in ((7, 4.4), (7, 3.4)):  # two diagrams side by side, as the chapters draw them
        fig, axes = plt.subplots(1, 2, figsize=figsize)
        reliability_diagram(probs, labels, ax=axes[0], title="before")
        reliability_diagram(probs, labels, ax=axes[1], binning="mass", title="after")
        fig.tight_layout()
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        keys = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        assert len(keys) == 2
        drawn = [ax.get_window_extent(renderer) for ax in fig.axes]
        for ax in fig.axes:
            drawn += [t.get_window_extent(renderer) for t in ax.get_xticklabels() + ax.get_yticklabels()
                      if t.get_visible() and t.get_text()]
            drawn += [a.label.get_window_extent(renderer) for a in (ax.xaxis, ax.yaxis) if a.label.get_text()]
        for key in keys:
            box = key.get_window_extent(renderer)
            assert not any(box.overlaps(other) for other in drawn)
            assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0
        for diagram, histogram in ((fig.axes[0], fig.axes[2]), (fig.axes[1], fig.axes[3])):
            assert diagram.yaxis.label.get_window_extent(renderer).x0 == pytest.approx(
                histogram.yaxis.label.get_window_extent(renderer).x0, abs=1)
        plt.close(fig)
    fig, ax = plt.subplots()
    reliability_diagram(probs, labels, ax=ax, show_counts=False, legend=False)
    assert ax.get_legend() is None and ax.get_title().startswith("ECE = ")
    with pytest.raises(TypeError, match="legend must be a bool"):
        reliability_diagram(probs, labels, ax=ax, legend="no")
    plt.close(fig)


def drawn_boxes(fig):
    """The window extent of every axes and everything drawn in it (tick labels, axis labels,
    legend, bars), in display pixels, after a draw."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for ax in fig.axes:
        boxes.append(ax.get_tightbbox(renderer))
        boxes.extend(a.get_window_extent(renderer) for a in ax.get_children() if a.get_visible())
    return [b for b in boxes if b is not None and b.width > 0 and b.height > 0]


def test_the_histogram_lies_inside_the_figure():
    """Issue 28: the histogram used to hang below the axes, so a plain savefig cut it off. Now
    every artist, the histogram's included, lies inside the figure box, alone and beside another
    diagram in a figure laid out by tight_layout."""
    probs, labels = data()
    alone = reliability_diagram(probs, labels)
    fig, axes = plt.subplots(1, 2, figsize=(7, 4.4))
    reliability_diagram(probs, labels, ax=axes[0])
    reliability_diagram(probs, labels, ax=axes[1], binning="mass")
    fig.tight_layout()
    for figure, n_axes in ((alone, 2), (fig, 4)):
        assert len(figure.axes) == n_axes  # a histogram under each diagram
        box = figure.bbox
        for drawn in drawn_boxes(figure):
            assert box.x0 - 0.5 <= drawn.x0 and drawn.x1 <= box.x1 + 0.5, drawn
            assert box.y0 - 0.5 <= drawn.y0 and drawn.y1 <= box.y1 + 0.5, drawn
    plt.close("all")


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_path_saves_the_whole_figure_atomically(tmp_path, suffix):
    probs, labels = data()
    target = tmp_path / f"reliability.{suffix}"
    fig = reliability_diagram(probs, labels, path=target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temporary file left
    if suffix == "svg":
        svg = target.read_text()
        # the histogram's axis label and the diagram's are both in the file
        assert "Fraction" in svg and "Accuracy" in svg
    else:
        import matplotlib.image

        image = matplotlib.image.imread(target)
        # the saved image is the figure (cropped to what is drawn, nothing cut): the histogram's
        # grey bars (0.5, 0.5, 0.5) appear in its lowest third
        height, width = image.shape[:2]
        assert abs(width - fig.get_figwidth() * fig.dpi) < 0.1 * width
        grey = np.all(np.abs(image[..., :3] - 0.5) < 0.02, axis=-1)
        assert grey[2 * height // 3:].sum() > 100
    plt.close("all")


def test_path_on_given_axes_saves_its_figure(tmp_path):
    probs, labels = data(1, 50, 3)
    fig, ax = plt.subplots()
    assert reliability_diagram(probs, labels, ax=ax, path=tmp_path / "d.pdf", show_counts=False) is ax
    assert (tmp_path / "d.pdf").read_bytes().startswith(b"%PDF")
    plt.close(fig)


def test_without_counts_and_bad_input(tmp_path):
    probs, labels = data(1, 50, 3)
    fig, ax = plt.subplots()
    assert reliability_diagram(probs, labels, ax=ax, n_bins=5, show_counts=False) is ax
    assert fig.axes == [ax]
    assert len(ax.containers[0]) == (reliability_table(probs, labels, 5)["count"] > 0).sum()
    with pytest.raises(ValueError, match="n_bins"):
        reliability_diagram(probs, labels, ax=ax, n_bins=0)
    with pytest.raises(ValueError, match="labels"):
        reliability_diagram(probs, labels[:-1], ax=ax)
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        reliability_diagram(probs, labels, ax=fig)
    with pytest.raises(TypeError, match="show_counts must be a bool"):
        reliability_diagram(probs, labels, ax=ax, show_counts="yes")
    with pytest.raises(TypeError, match="title must be a str"):
        reliability_diagram(probs, labels, ax=ax, title=3)
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        reliability_diagram(probs, labels, ax=ax, path=3)
    for bad in ("diagram.bmpx", "diagram"):
        with pytest.raises(ValueError, match=f"path must end in one of .*{bad}'"):
            reliability_diagram(probs, labels, ax=ax, path=tmp_path / bad)
    assert not list(tmp_path.iterdir())  # nothing written for a refused path
    plt.close(fig)


def test_reliability_grid_keeps_its_shared_labels_off_the_tick_labels():
    """The shared "accuracy", the key under the panels and each column's "confidence" overlap no
    tick label; the lowest panel of each column carries the scale, also above an unused axes."""
    from calibnb.plots import reliability_grid

    for n in (3, 5):  # one row (little room), and two rows with an unused axes
        fig, _ = reliability_grid({f"m{i}": data(seed=i) for i in range(n)}, ncols=3)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ticks = [t.get_window_extent(renderer) for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()
                 if t.get_visible() and t.get_text()]
        labels = [fig._supylabel.get_window_extent(renderer), fig.legends[0].get_window_extent(renderer)]
        labels += [ax.xaxis.label.get_window_extent(renderer) for ax in fig.axes if ax.get_xlabel()]
        assert len(labels) == 2 + 3  # a "confidence" under each column
        for label in labels:
            assert not any(label.overlaps(tick) for tick in ticks)
        assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Accuracy", "Gap", "Perfect calibration"]
        assert all(ax.get_legend() is None for ax in fig.axes)  # no key inside a panel
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


def test_method_panels_draw_each_method_over_the_others_in_grey():
    import pandas as pd

    from calibnb.plots import method_colours, method_panels

    names = [f"m{i}" for i in range(6)]
    curves = {n: pd.Series(np.linspace(1.0, 0.1 * (i + 1), 5), index=np.arange(1, 6)) for i, n in enumerate(names)}
    fig = method_panels(curves, "validation ECE (%)", ncols=4, log=True, marks=[2.5])
    drawn = [ax for ax in fig.axes if ax.axison]
    assert len(fig.axes) == 8 and len(drawn) == 6
    colour = method_colours(names)
    for ax, name in zip(drawn, names):
        assert ax.get_title() == name and ax.get_yscale() == "log"
        *others, own = ax.lines[:len(names)]
        assert np.allclose(own.get_color(), colour[name]) and own.get_linewidth() > others[0].get_linewidth()
        np.testing.assert_array_equal(own.get_ydata(), curves[name].to_numpy())
        assert all(line.get_color() == "0.82" for line in others)
        assert len(ax.lines) == len(names) + 1  # and the mark
    with pytest.raises(ValueError, match="curves is empty"):
        method_panels({}, "y")
    plt.close(fig)
