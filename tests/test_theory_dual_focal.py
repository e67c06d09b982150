"""calibnb.theory.dual_focal: Tao et al. (2023) §4 — phi of FL and DFL (Eq. 7–9, 12), Lemma 1,
Figure 1's landmarks, and Theorem 1 (order preservation), checked numerically."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibnb.calibration import focal_calibration_map
from calibnb.theory import risk_minimizer
from calibnb.theory import dfl_phi, dfl_phi_slope, dual_focal_risk, fl_phi, phi_landmarks

v_inner = np.linspace(1e-4, 1 - 1e-4, 2001)


def test_fl_phi_matches_eq_7_and_its_endpoints():
    for gamma in (0.5, 1.0, 3.0):
        direct = (1 - v_inner) ** gamma - gamma * (1 - v_inner) ** (gamma - 1) * v_inner * np.log(v_inner)
        assert np.allclose(fl_phi(v_inner, gamma), direct, rtol=1e-12)
        assert fl_phi(np.array([0.0, 1.0]), gamma).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("C", [0.0, 0.1, 0.3, 0.6])
def test_lemma_1_endpoints_and_single_peak(gamma, C):
    ends = dfl_phi(np.array([0.0, 1.0]), gamma, C)
    assert ends == pytest.approx([(1 + C) ** gamma, C**gamma], abs=1e-15)
    slope = dfl_phi_slope(v_inner, gamma, C)
    v_m = phi_landmarks(gamma, C)["v_m"]
    assert np.all(slope[v_inner < v_m - 1e-6] > 0) and np.all(slope[v_inner > v_m + 1e-6] < 0)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.01, 0.99), st.floats(0.1, 6.0), st.floats(0.0, 0.9))
def test_slope_eq_25_matches_finite_differences(v, gamma, C):
    h = 1e-6 * min(v, 1 - v)
    numeric = (dfl_phi(v + h, gamma, C) - dfl_phi(v - h, gamma, C)) / (2 * h)
    assert float(dfl_phi_slope(v, gamma, C)) == pytest.approx(float(numeric), rel=1e-5, abs=1e-6)


def test_figure_1_landmarks_gamma_1_c_03():
    """gamma = 1: phi' = -2 - log v, so v_m = e^-2 and v' = e^-1 for every C; v_uc solves
    C - v - v log v = 0 (0.60435 for C = 0.3). FL's under-confident region starts at v' = e^-1,
    DFL's at v_uc: the region shrinks by 0.2365 (the paper's phi^-1(1) - phi^-1((1 + C)^gamma))."""
    dfl, fl = phi_landmarks(1.0, 0.3), phi_landmarks(1.0, 0.0)
    assert dfl["v_m"] == pytest.approx(np.exp(-2), abs=1e-8) and fl["v_m"] == pytest.approx(np.exp(-2), abs=1e-8)
    assert dfl["v_prime"] == pytest.approx(np.exp(-1), rel=1e-12) and fl["v_uc"] == pytest.approx(np.exp(-1), rel=1e-12)
    assert dfl["v_uc"] == pytest.approx(0.6043512, abs=1e-7)
    assert dfl["v_uc"] - fl["v_uc"] == pytest.approx(0.2364717, abs=1e-7)
    assert float(dfl_phi(dfl["v_uc"], 1.0, 0.3)) == pytest.approx(1.0, abs=1e-14)


def test_eq_9_for_focal_loss_is_the_focal_calibration_map():
    q = np.random.default_rng(0).dirichlet(np.ones(4), size=50)
    for gamma in (0.5, 3.0):
        h = q / fl_phi(q, gamma)
        assert np.allclose(h / h.sum(axis=1, keepdims=True), focal_calibration_map(q, gamma), rtol=1e-10)


@pytest.mark.parametrize("gamma", [0.2, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("C", [0.0, 0.1, 0.3, 0.6, 0.9])
def test_theorem_1_proof_h_is_increasing(gamma, C):
    """Appendix A: h(v) = v / phi(v) strictly increasing on (0, 1) (C frozen), hence Eq. 15 maps
    a minimiser q* to an eta in the same order."""
    h = v_inner / dfl_phi(v_inner, gamma, C)
    assert np.all(np.diff(h) > 0)


def test_dual_risk_uses_the_strictly_smaller_dual():
    q = np.array([[0.5, 0.3, 0.2], [0.4, 0.4, 0.2]])
    eta = np.array([0.0, 1.0, 0.0])
    # class 1 at 0.3 has dual 0.2; at 0.4 tied with class 0 it has dual 0.2 as well (tie excluded)
    expected = [-(1 - 0.3 + 0.2) ** 2 * np.log(0.3), -(1 - 0.4 + 0.2) ** 2 * np.log(0.4)]
    assert dual_focal_risk(q, eta, 2.0) == pytest.approx(expected)


def test_theorem_1_strictness_fails_on_ties_of_the_exact_risk():
    """The risk with the authors' dual (largest probability *strictly* below the target's) jumps
    down where two probabilities tie, and its minimiser can sit on such a tie: eta_0 > eta_1 but
    q*_0 = q*_1. The minimiser is found independently here by brute force on a 1/1000 grid of
    the simplex (the tie is a set of measure zero, which local searches easily miss)."""
    eta = np.array([0.16060191, 0.05056221, 0.78883588])
    n = 1000
    a = np.arange(1, n) / n
    q0, q1 = np.meshgrid(a, a, indexing="ij")
    keep = q0 + q1 < 1 - 1e-9
    grid = np.stack([q0[keep], q1[keep], 1 - q0[keep] - q1[keep]], axis=1)
    risk = dual_focal_risk(grid, eta, 2.0)
    best = grid[risk.argmin()]
    assert best[0] == best[1] == pytest.approx(0.165, abs=2e-3)
    untied = np.abs(grid[:, 0] - grid[:, 1]) > 1e-9
    assert risk[untied].min() > risk.min() + 0.015  # 0.3613 off the tie against 0.3427 on it


def test_validation():
    with pytest.raises(ValueError, match="v"):
        fl_phi([1.5], 1.0)
    with pytest.raises(ValueError, match="C"):
        dfl_phi([0.5], 1.0, 1.5)
    with pytest.raises(ValueError, match="gamma"):
        phi_landmarks(0.0, 0.3)
    with pytest.raises(ValueError, match="eta"):
        dual_focal_risk([[0.5, 0.5]], [[0.2, 0.2]], 1.0)


def test_theorem_1_strictness_fails_off_ties_too():
    """eta = (0.022, 0.952, 0.026) normalised, gamma = 2: over predictions in eta's order
    (q_0 < q_2) the risk is at least 0.11907, while predictions in the *reversed* order
    (q_0 > q_2) reach 0.11818 (and the tie 0.10864): the best untied predictions swap the two
    small classes. Brute force on a 1601 x 1601 grid around the minimiser."""
    eta = np.array([0.022, 0.952, 0.026])
    eta = eta / eta.sum()
    q0, q2 = np.meshgrid(np.linspace(0.06, 0.14, 1601), np.linspace(0.06, 0.14, 1601), indexing="ij")
    grid = np.stack([q0.ravel(), 1 - q0.ravel() - q2.ravel(), q2.ravel()], axis=1)
    risk = dual_focal_risk(grid, eta, 2.0)
    in_order = risk[grid[:, 0] < grid[:, 2] - 1e-12].min()
    reversed_ = risk[grid[:, 0] > grid[:, 2] + 1e-12].min()
    tie = risk[np.abs(grid[:, 0] - grid[:, 2]) < 1e-12].min()
    assert in_order == pytest.approx(0.119072, abs=2e-5)
    assert reversed_ == pytest.approx(0.118176, abs=2e-5)
    assert tie == pytest.approx(0.108641, abs=2e-5)
    assert tie < reversed_ < in_order


@pytest.mark.slow
def test_dfl_keeps_the_top_class_and_is_less_under_confident_than_fl():
    """Classification calibration (the argmax) holds for the smooth-branch minimiser found by
    calibnb.theory.risk_minimizer with calibnb.losses' dual focal loss, and its top probability
    is closer to eta's than focal loss' (Tao et al.'s smaller under-confident region)."""
    from calibnb.theory import risk_minimizer

    rng = np.random.default_rng(3)
    for _ in range(6):
        eta = rng.dirichlet(np.full(3, 0.7))
        eta = np.clip(eta, 0.02, None) / np.clip(eta, 0.02, None).sum()
        fl = risk_minimizer("focal_loss", eta, gamma=2.0)
        dfl = risk_minimizer("dual_focal_loss", eta, gamma=2.0)
        assert dfl.argmax() == eta.argmax() == fl.argmax()
        assert abs(dfl.max() - eta.max()) < abs(fl.max() - eta.max())


def test_gradient_minimiser_lands_on_a_tie_for_the_chapters_first_eta():
    # nbs/dual_focal.md, first row of the random-eta table: eta = Dirichlet(0.7) draw of
    # default_rng(3), floored at 0.02. Measured: q* = (0.096820, 0.806359, 0.096820), i.e. the
    # two small classes end tied although eta_0 = 0.0224 < eta_2 = 0.0256.
    rng = np.random.default_rng(3)
    eta = rng.dirichlet(np.full(3, 0.7))
    eta = np.clip(eta, 0.02, None) / np.clip(eta, 0.02, None).sum()
    assert eta[0] < eta[2] - 0.003
    q = risk_minimizer("dual_focal_loss", eta, gamma=2.0)
    assert q.argmax() == 1
    assert abs(q[0] - q[2]) < 1e-6
    assert q[0] == pytest.approx(0.09682, abs=1e-4)
