"""calibnb.plots_theory: every theory figure draws from calibnb.theory without error, with the
panels and artists the chapters rely on."""

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
