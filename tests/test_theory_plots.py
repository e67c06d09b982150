"""calibnb.plots_theory: every theory figure draws from calibnb.theory without error, with the
panels and artists the chapters rely on."""

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from calibnb import plots_simplex, plots_theory  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_simplex_points_lie_inside_the_simplex():
    q = plots_simplex.simplex_points(10, margin=1e-3)
    assert q.shape == (66, 3) and np.allclose(q.sum(axis=1), 1) and q.min() >= 1e-3 - 1e-12


@pytest.mark.parametrize("size", [(2.0, 2.0), (4.6, 4.6)])
def test_simplex_title_stands_clear_of_the_corner_names(size):
    """The top corner's name ("class 3") sat under the title in the FTS chapter's figures."""
    fig, axes = plt.subplots(2, 2, figsize=size)
    for ax in axes.flat:
        plots_simplex.plot_simplex_arrows(ax, plots_simplex.simplex_points(4),
                                          plots_simplex.simplex_points(4), "TS, T = 0.66")
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    for ax in axes.flat:
        title = ax.title.get_window_extent(renderer)
        names = [t for t in ax.texts if t.get_text().startswith("class")]
        assert len(names) == 3 and all(t.get_fontsize() >= 9 for t in names)
        assert not any(title.overlaps(t.get_window_extent(renderer)) for t in names)


@pytest.mark.parametrize(
    "draw, n_axes",
    [
        (lambda: plots_theory.plot_mukhoti_gap(gammas=(1.0,), n=20), 3),  # one colour bar
        (lambda: plots_theory.plot_focal_minimizer(0.8, gamma_max=5.0), 1),
        (lambda: plots_theory.plot_focal_map_and_proper_loss(), 2),
        (lambda: plots_theory.plot_temperature_bounds(4.0, gammas=[1.0, 4.0]), 2),
        (lambda: plots_theory.plot_closest_temperature({"K = 2": ([1, 2], [0.56, 0.37], [1e-3, 2e-4])}, {"K = 2": (0.95, 0.85)}), 2),
        (lambda: plots_theory.plot_risk_isolines(n=12), 4),
        (lambda: plots_theory.plot_dfl_phi(1.0, 0.3), 1),
        (lambda: plots_theory.plot_dual_focal_risk_slice(), 1),
    ],
)
def test_figures_draw(draw, n_axes):
    fig = draw()
    assert len(fig.axes) == n_axes
    assert all(ax.has_data() or not ax.axison for ax in fig.axes)


def test_dfl_figure_marks_the_landmarks():
    fig = plots_theory.plot_dfl_phi(1.0, 0.3)
    xs = sorted(line.get_xdata()[0] for line in fig.axes[0].lines if line.get_linestyle() == ":")
    assert xs == pytest.approx([np.exp(-2), np.exp(-1), 0.6043512], abs=1e-6)


def test_dual_focal_slice_shows_the_tie_below_the_curve():
    fig = plots_theory.plot_dual_focal_risk_slice()
    curve, tie = fig.axes[0].lines[:2]
    assert tie.get_ydata()[0] < curve.get_ydata().min() - 0.01


def _adafocal_figures():
    """The two AdaFocal figures on a deterministic stand-in for the chapter's runs."""
    import pandas as pd

    rng = np.random.default_rng(0)
    bins = pd.RangeIndex(15)
    gaps = pd.DataFrame(rng.normal(0, 0.06, (3, 15)), index=[0.0, 1.0, 3.0], columns=bins)
    tables = {}
    for g in (0.0, 3.0, 5.0):
        val = np.sort(rng.uniform(0.5, 1.0, 15))
        tables[g] = pd.DataFrame({"train_confidence": val - 0.01, "val_confidence": val}, index=bins)
    return plots_theory.plot_per_bin_gaps(gaps), plots_theory.plot_train_val_confidence(tables)


#: The width of the book's text column on a 390-px phone, in CSS pixels (measured in Chromium).
PHONE_COLUMN_PX = 342


def _readability_defects(fig, column_px=PHONE_COLUMN_PX):
    """What a reader of ``fig`` on a phone could not read, the figure shrunk to the ``column_px``
    wide column (if wider): a label or legend below 9 points, a tick label below 8, a legend drawn
    over a data point of a curve, or labels in the axes overlapping each other."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    scale = min(1.0, column_px / (fig.get_figwidth() * fig.dpi))
    ticks = {id(t) for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()}
    defects = []
    for text in fig.findobj(matplotlib.text.Text):
        if not (text.get_visible() and text.get_text().strip()):
            continue
        smallest = 8.0 if id(text) in ticks else 9.0
        if text.get_fontsize() * scale < smallest - 1e-9:
            defects.append(f"{text.get_text()!r} at {text.get_fontsize() * scale:.1f} pt on a phone")
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        for line in ax.lines:
            points = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
            inside = (box.x0 <= points[:, 0]) & (points[:, 0] <= box.x1) & (box.y0 <= points[:, 1]) & (points[:, 1] <= box.y1)
            if len(points) > 2 and inside.any():
                defects.append(f"the legend covers {inside.sum()} points of {line.get_label()!r}")
        labels = [t.get_window_extent(renderer) for t in ax.texts if t.get_text().strip()]
        for i, a in enumerate(labels):
            defects.extend(f"labels {i} and {j} overlap" for j, b in enumerate(labels[i + 1:], i + 1) if a.overlaps(b))
    return defects


@pytest.mark.parametrize(
    "draw",
    [
        lambda: plots_theory.plot_dfl_phi(1.0, 0.3),
        lambda: plots_theory.plot_dual_focal_risk_slice(),
        lambda: _adafocal_figures()[0],
        lambda: _adafocal_figures()[1],
    ],
    ids=["dfl_phi", "dfl_risk_slice", "adafocal_gaps", "adafocal_train_val"],
)
def test_adafocal_and_dual_focal_figures_are_readable(draw):
    """Issue 27: the AdaFocal and DFL figures read on a 390-px phone as well as on a laptop:
    drawn at most plots_theory.PHONE_WIDTH wide, their legends and labels are at least 9 pt even
    shrunk to the phone's column, no legend hides a curve's data, and DFL's landmark names do
    not collide."""
    fig = draw()
    assert fig.get_figwidth() <= plots_theory.PHONE_WIDTH
    assert _readability_defects(fig) == []


def test_the_readability_rule_finds_small_text_and_a_covering_legend():
    fig, ax = plt.subplots(figsize=(3.4, 3.0))  # narrower than a phone's column: shown at its size
    ax.plot(np.linspace(0, 1, 50), np.full(50, 0.5), label="data")
    ax.legend(loc="center", fontsize=7)
    defects = _readability_defects(fig)
    assert any("7.0 pt" in d for d in defects) and any("covers" in d for d in defects)
    fig = plt.figure(figsize=(7.0, 3.0))  # 10-point text shrunk from 700 to 342 px: 4.9 pt
    fig.text(0.5, 0.5, "a label")
    assert _readability_defects(fig) == ["'a label' at 4.9 pt on a phone"]
@pytest.mark.parametrize("size", [plots_theory.LEGIBLE_SIZE, plots_theory.TEXT_POINTS])
def test_legible_raises_every_text_and_lowers_none(size):
    """The one readability helper of the book's figures: every visible text of a figure (tick
    labels of the axes and of a colour bar, axis labels, titles, legends, annotations, a figure
    legend) reaches ``size``; a text already larger keeps its size."""
    from matplotlib.text import Text

    fig, (ax, other) = plt.subplots(2, 1, figsize=(plots_theory.PHONE_WIDTH, 5.0))
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set(xlabel="x", ylabel="y", title="a title")
    ax.legend(fontsize=6)
    ax.annotate("a note", (0.5, 0.5), fontsize=7)
    image = other.imshow(np.arange(4.0).reshape(2, 2))
    fig.colorbar(image, ax=other).set_label("a colour bar", fontsize=5)
    fig.legend(handles=ax.get_lines(), loc="lower center", fontsize=8)
    big = fig.suptitle("large", fontsize=20)
    assert plots_theory.legible(fig, size) is fig
    fig.canvas.draw()
    texts = [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
    ticks = [t for a in fig.axes for t in a.get_xticklabels() + a.get_yticklabels() if t.get_text()]
    assert len(ticks) > 10 and min(t.get_fontsize() for t in ticks + texts) >= size
    assert big.get_fontsize() == 20


@pytest.mark.parametrize(
    "draw",
    [
        lambda: plots_theory.plot_mukhoti_gap(gammas=(1.0, 3.0), n=20),
        lambda: plots_theory.plot_focal_minimizer(0.8, gamma_max=5.0),
        lambda: plots_theory.plot_focal_map_and_proper_loss(),
        lambda: plots_theory.plot_temperature_bounds(4.0, gammas=[1.0, 4.0]),
        lambda: plots_theory.plot_closest_temperature({"K = 2": ([1, 2], [0.56, 0.37], [1e-3, 2e-4])}, {"K = 2": (0.95, 0.85)}),
        lambda: plots_theory.plot_risk_isolines(n=12),
    ],
)
def test_focal_analysis_figures_read_on_a_phone(draw):
    """The focal-analysis figures (issue 27, item 4): drawn NARROW_WIDTH wide, so a 390-px phone's
    column (342 px) shrinks them by at most a fifth; every text at least LEGIBLE_SIZE points, so
    at least 9 pt (12 px) there; no legend over a tick label, no figure legend over a panel, no
    legend outside the figure."""
    from matplotlib.text import Text

    fig = draw()
    assert fig.get_size_inches()[0] == pytest.approx(plots_theory.NARROW_WIDTH)
    # on the phone: the font's pixels (100 dpi, 72 pt an inch) shrunk to the column, >= 12 px (9 CSS pt)
    assert 342 / (100 * plots_theory.NARROW_WIDTH) * plots_theory.LEGIBLE_SIZE * 100 / 72 >= 12
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_text() and t.get_visible()]
    assert min(t.get_fontsize() for t in texts) >= plots_theory.LEGIBLE_SIZE
    page = fig.bbox.padded(2)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert page.contains(box.x0, box.y0) and page.contains(box.x1, box.y1), "legend outside the figure"
        if legend in fig.legends:
            assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes if ax.axison)
        for ax in fig.axes:
            # the tick labels a draw shows: those of ticks inside the axes' view
            drawn = [label for axis, labels in ((ax.xaxis, ax.get_xticklabels()), (ax.yaxis, ax.get_yticklabels()))
                     for label in labels
                     if label.get_text() and label.get_visible()
                     and min(axis.get_view_interval()) - 1e-12 <= (label.get_position()[0] if axis is ax.xaxis
                                                                   else label.get_position()[1])
                     <= max(axis.get_view_interval()) + 1e-12]
            for label in drawn:
                assert not box.overlaps(label.get_window_extent(renderer)), label.get_text()


def _loss_curves(p):
    """Cross-entropy, focal loss (γ = 3) and inverse focal loss (γ = 2) along p_t, from calibnb."""
    from calibnb import losses

    return {
        "CE": losses.loss_along_pt(lambda z, t: losses.cross_entropy(z, t, reduction="none"), p),
        "FL, γ = 3": losses.loss_along_pt(lambda z, t: losses.focal_loss(z, t, gamma=3, reduction="none"), p),
        "InvFL, γ = 2": losses.loss_along_pt(
            lambda z, t: losses.inverse_focal_loss(z, t, gamma=2, reduction="none"), p),
    }


def test_loss_and_slope_draws_each_curve_in_both_panels():
    """The four loss chapters' figure: each named curve's values above and slopes below, in one
    colour and line style in both panels, one legend entry per curve standing above the top
    panel, the limits and labels asked for, and every text readable on a phone."""
    from matplotlib.colors import to_rgba

    p = np.linspace(0.01, 0.99, 99)
    curves = _loss_curves(p)
    fig = plots_theory.plot_loss_and_slope(p, curves, {"InvFL, γ = 2": {"color": "black", "ls": "--", "lw": 1}},
                                           loss_ylim=(0, 5), slope_ylim=(-10, 0.5), legend_columns=2,
                                           xlabel="true-class probability $p_t$")
    top, bottom = fig.axes
    assert len(top.lines) == len(bottom.lines) == 3
    assert [t.get_text() for t in top.get_legend().get_texts()] == list(curves)
    assert bottom.get_legend() is None and all(line.get_label().startswith("_") for line in bottom.lines)
    for k, (upper, lower, (values, slopes)) in enumerate(zip(top.lines, bottom.lines, curves.values())):
        np.testing.assert_array_equal(upper.get_xdata(), p)
        np.testing.assert_array_equal(upper.get_ydata(), values)
        np.testing.assert_array_equal(lower.get_ydata(), slopes)
        assert to_rgba(upper.get_color()) == to_rgba(lower.get_color())
        assert upper.get_linestyle() == lower.get_linestyle()
    assert [to_rgba(line.get_color()) for line in top.lines] == [to_rgba(c) for c in ("C0", "C1", "black")]
    assert [line.get_linestyle() for line in top.lines] == ["-", "-", "--"]
    np.testing.assert_allclose(bottom.lines[0].get_ydata(), -1 / p, rtol=1e-12)  # d(-log p)/dp
    assert top.get_ylim() == (0, 5) and bottom.get_ylim() == (-10, 0.5)
    assert (top.get_ylabel(), bottom.get_ylabel()) == ("loss", r"$\partial \mathcal{L} / \partial p_t$")
    assert bottom.get_xlabel() == "true-class probability $p_t$"
    renderer = fig.canvas.get_renderer()
    legend = top.get_legend().get_window_extent(renderer)
    assert legend.y0 >= top.get_window_extent(renderer).y1 - 1  # above the curves
    assert 0 <= legend.x0 and legend.x1 <= fig.bbox.width and legend.y1 <= fig.bbox.height
    assert fig.get_figwidth() <= plots_theory.PHONE_WIDTH
    assert _readability_defects(fig) == []


def test_loss_and_slope_legend_takes_fewer_columns_than_asked_rather_than_leave_the_figure():
    p = np.linspace(0.01, 0.99, 9)
    value, slope = _loss_curves(p)["CE"]
    curves = {f"a long label, number {k}": (value + k, slope) for k in range(6)}
    fig = plots_theory.plot_loss_and_slope(p, curves, legend_columns=6)
    legend = fig.axes[0].get_legend()
    box = legend.get_window_extent(fig.canvas.get_renderer())
    assert 1 <= legend._ncols < 6
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height


@pytest.mark.parametrize(
    "change, error, name",
    [
        (lambda c, p: ({}, None), ValueError, "curves"),
        (lambda c, p: ([("CE", c["CE"])], None), TypeError, "curves"),
        (lambda c, p: ({**c, "CE": (c["CE"][0][:-1], c["CE"][1])}, None), ValueError, "curves['CE']"),
        (lambda c, p: ({**c, "CE": c["CE"][0]}, None), ValueError, "curves['CE']"),
        (lambda c, p: ({**c, "CE": (c["CE"][0], np.full_like(p, np.nan))}, None), ValueError, "curves['CE'][1]"),
        (lambda c, p: (c, {"Brier": {"ls": "--"}}), ValueError, "Brier"),
        (lambda c, p: (c, [("CE", {})]), TypeError, "styles"),
        (lambda c, p: (c, {"CE": "--"}), TypeError, "styles['CE']"),
    ],
)
def test_loss_and_slope_refuses_bad_input(change, error, name):
    p = np.linspace(0.01, 0.99, 9)
    curves, styles = change(_loss_curves(p), p)
    with pytest.raises(error, match=re.escape(name)):
        plots_theory.plot_loss_and_slope(p, curves, styles)


def test_loss_and_slope_refuses_a_legend_without_columns():
    p = np.linspace(0.01, 0.99, 9)
    with pytest.raises(ValueError, match="legend_columns"):
        plots_theory.plot_loss_and_slope(p, _loss_curves(p), legend_columns=0)
