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
