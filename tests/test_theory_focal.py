"""calibnb.theory: the binary/multiclass focal calibration map, its inverse, the proper part of
focal loss (Komisarenko & Kull 2024, Prop. 2 and 4) and Mukhoti et al. (2020)'s lower bound."""

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from calibnb.calibration import focal_calibration_map
from calibnb.theory import (
    binary_focal_calibration,
    binary_focal_calibration_logit,
    binary_focal_loss,
    binary_focal_minimizer,
    conditional_risk,
    focal_loss_on_simplex,
    inverse_binary_focal_calibration,
    inverse_binary_focal_calibration_logit,
    inverse_focal_calibration_map,
    mukhoti_bound,
    mukhoti_gap,
    proper_focal_loss,
)

gammas = st.floats(0.0, 10.0)
interior_q = st.floats(1e-6, 1 - 1e-6)


def prop2_formula(q, gamma):
    """Proposition 2 exactly as printed, in plain float64 (fine away from 0 and 1)."""
    ratio = ((1 - q) - gamma * q * np.log(q)) / (q - gamma * (1 - q) * np.log(1 - q))
    return 1.0 / (1.0 + ((1 - q) / q) ** gamma * ratio)


def prop2_mp(s, gamma):
    """Proposition 2 in 450-digit arithmetic at logit s, returned as the logit of p_hat."""
    mpmath.mp.dps = 450  # enough that 1 + exp(-700) is not 1
    s, gamma = mpmath.mpf(s), mpmath.mpf(gamma)
    q, omq = 1 / (1 + mpmath.exp(-s)), 1 / (1 + mpmath.exp(s))  # q and 1 - q, each to 450 digits
    ratio = (omq - gamma * q * mpmath.log(q)) / (q - gamma * omq * mpmath.log(omq))
    return float(gamma * mpmath.log(q / omq) - mpmath.log(ratio))  # logit of 1 / (1 + (omq/q)^g ratio)


@settings(max_examples=200, deadline=None)
@given(interior_q, gammas)
def test_binary_map_matches_proposition_2(q, gamma):
    assert binary_focal_calibration(q, gamma) == pytest.approx(prop2_formula(q, gamma), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("s", [-700.0, -300.0, -40.0, -17.5, -1e-8, 3e-5, 0.7, 25.0, 60.0, 500.0])
@pytest.mark.parametrize("gamma", [-0.5, 0.5, 2.0, 9.0])
def test_logit_form_is_exact_in_the_tails(s, gamma):
    # where q = sigmoid(s) saturates, 1 - q cannot be formed in float64; mpmath can.
    assert binary_focal_calibration_logit(s, gamma) == pytest.approx(prop2_mp(s, gamma), rel=1e-12, abs=1e-15)


def test_map_endpoints_symmetry_and_identity():
    q = np.array([0.0, 1e-300, 0.2, 0.5, 0.9, 1.0])
    out = binary_focal_calibration(q, 3.0)
    assert out[0] == 0.0 and out[-1] == 1.0 and out[3] == 0.5
    assert np.allclose(binary_focal_calibration(1 - q[1:-1], 3.0), 1 - out[1:-1], atol=1e-15)
    assert np.array_equal(binary_focal_calibration(q, 0.0), q)
    assert np.array_equal(binary_focal_calibration(torch.tensor(q), 3.0), out)


@settings(max_examples=100, deadline=None)
@given(st.floats(-300, 300), st.floats(-0.9, 10.0))
def test_inverse_round_trip_on_logits(s, gamma):
    t = binary_focal_calibration_logit(s, gamma)
    assert inverse_binary_focal_calibration_logit(t, gamma) == pytest.approx(s, rel=1e-12, abs=1e-12)


def test_map_raises_confidence_and_is_increasing():
    q = np.linspace(0.001, 0.999, 999)
    for gamma in (0.5, 1.0, 3.0):
        out = binary_focal_calibration(q, gamma)
        assert np.all(np.diff(out) > 0)
        above = q > 0.5
        assert np.all(out[above] > q[above]) and np.all(out[~above & (q < 0.5)] < q[q < 0.5])
    # negative gamma lowers confidence (the "inverse" shape of Fig. 1 right)
    assert np.all(binary_focal_calibration(q[q > 0.5], -0.5) < q[q > 0.5])


def test_minimizer_80_of_100_matches_direct_risk_minimisation():
    """§3.1: 80 positives in 100 -> about 0.62 at gamma = 2; we get 0.6266."""
    ours = float(binary_focal_minimizer(0.8, 2.0))
    assert ours == pytest.approx(0.62661, abs=1e-5)
    # independent check: minimise sum_{80} FL(p,1) + sum_{20} FL(1-p,0) by bounded Brent
    risk = lambda p: -80 * (1 - p) ** 2 * np.log(p) - 20 * p**2 * np.log(1 - p)  # noqa: E731
    direct = minimize_scalar(risk, bounds=(1e-9, 1 - 1e-9), method="bounded", options={"xatol": 1e-12}).x
    assert ours == pytest.approx(direct, abs=1e-8)


def test_minimizer_moves_from_eta_towards_one_half():
    gammas_ = np.array([0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1e4])
    values = np.array([float(binary_focal_minimizer(0.8, g)) for g in gammas_])
    assert values[0] == pytest.approx(0.8, abs=1e-12)
    assert np.all(np.diff(values) < 0) and np.all(values > 0.5)
    assert values[-1] - 0.5 < 1e-3


@pytest.mark.parametrize("gamma", [0.5, 3.0])
def test_proper_part_is_proper(gamma):
    """L*(q, y) = FL(p_hat^{-1}(q), y) is minimised in expectation at q = eta (Prop. 2)."""
    for eta in (0.1, 0.35, 0.5, 0.8, 0.97):
        risk = lambda q: eta * proper_focal_loss(q, 1, gamma) + (1 - eta) * proper_focal_loss(q, 0, gamma)  # noqa: E731
        best = minimize_scalar(lambda q: float(risk(q)), bounds=(1e-6, 1 - 1e-6), method="bounded",
                               options={"xatol": 1e-10}).x
        assert best == pytest.approx(eta, abs=1e-6)


def test_proper_part_composes_with_the_map():
    s = np.linspace(-5, 5, 41)  # p_hat within 1e-7 of 0 or 1 has few significant digits left
    for y in (0, 1):
        via_map = proper_focal_loss(binary_focal_calibration(1 / (1 + np.exp(-s)), 3.0), y, 3.0)
        assert np.allclose(via_map, binary_focal_loss(s, y, 3.0), rtol=1e-7)
    assert proper_focal_loss(np.array([0.0, 1.0]), np.array([1, 1]), 2.0).tolist() == [np.inf, 0.0]


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([2, 3, 5]), st.floats(0.0, 6.0))
def test_multiclass_inverse_round_trip(seed, k, gamma):
    p = np.random.default_rng(seed).dirichlet(np.ones(k), size=4)
    p = np.clip(p, 1e-9, None)
    p /= p.sum(axis=1, keepdims=True)
    q = inverse_focal_calibration_map(p, gamma)
    assert np.allclose(focal_calibration_map(q, gamma), p, rtol=1e-8, atol=1e-14)


def test_multiclass_reduces_to_binary():
    q = np.array([0.05, 0.3, 0.5, 0.77, 0.999])
    two = inverse_focal_calibration_map(np.c_[1 - q, q], 2.5)[:, 1]
    assert np.allclose(two, inverse_binary_focal_calibration(q, 2.5), rtol=1e-10)
    # and the multiclass map of the calibration helper agrees with Prop. 2 at K = 2
    assert np.allclose(focal_calibration_map(np.c_[1 - q, q], 2.5)[:, 1], binary_focal_calibration(q, 2.5))


def test_multiclass_proper_part_is_proper():
    eta = np.array([0.55, 0.3, 0.15])
    rng = np.random.default_rng(0)
    others = np.clip(eta + rng.normal(0, 0.05, size=(200, 3)), 1e-3, None)
    others /= others.sum(axis=1, keepdims=True)
    for gamma in (1.0, 3.0):
        at_eta = conditional_risk(eta[None], eta, "proper_focal", gamma)[0]
        assert np.all(conditional_risk(others, eta, "proper_focal", gamma) >= at_eta - 1e-12)
        # focal loss itself is not proper: some other q beats eta
        assert conditional_risk(others, eta, "focal", gamma).min() < conditional_risk(eta[None], eta, "focal", gamma)[0]


def test_binary_input_validation():
    with pytest.raises(ValueError, match="q"):
        binary_focal_calibration([0.2, 1.2], 2.0)
    with pytest.raises(ValueError, match="q"):
        binary_focal_calibration([np.nan], 2.0)
    with pytest.raises(ValueError, match="gamma"):
        binary_focal_calibration([0.2], -1.0)
    with pytest.raises(TypeError, match="gamma"):
        binary_focal_calibration([0.2], "2")
    with pytest.raises(ValueError, match="y"):
        proper_focal_loss([0.2], [2], 1.0)
    with pytest.raises(ValueError, match="probs"):
        inverse_focal_calibration_map([[1.0, 0.0]], 1.0)


# --- Mukhoti et al. (2020): L_FL >= KL(q || p) - gamma H(p) ---------------------------------


@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0, 3.0, 5.0])
def test_mukhoti_bound_holds_over_the_simplex(k, gamma):
    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.full(k, 0.3), size=20_000)
    p = np.clip(p, 1e-300, None)
    p /= p.sum(axis=1, keepdims=True)
    onehot = np.eye(k)[rng.integers(0, k, size=p.shape[0])]
    soft = rng.dirichlet(np.ones(k), size=p.shape[0])
    for target in (onehot, soft):
        gap = mukhoti_gap(p, target, gamma)
        assert np.all(gap >= -1e-12)
        direct = focal_loss_on_simplex(p, target, gamma) - mukhoti_bound(p, target, gamma)
        finite = np.isfinite(direct) & (np.abs(direct) < 1e6)
        assert np.allclose(gap[finite], direct[finite], rtol=1e-8, atol=1e-8)


def test_mukhoti_bound_is_tight_at_a_correct_vertex():
    p = np.array([[1 - 2e-9, 1e-9, 1e-9]])
    assert mukhoti_gap(p, np.array([[1.0, 0, 0]]), 3.0)[0] < 1e-6


# --- the authors' proper focal loss (slavikkom/focal_temperature_scaling) ---------------------


def authors_focal_link_inv(q, gamma, eps=1e-8, n_outer=30, n_inner=40):
    """Independent re-implementation of ``focal_link_inv`` in the authors' repository
    (``Losses/proper_focal_loss.py``): nested bisection, p clamped to [eps, 1 - eps], the
    normaliser log Z searched in [-25, 25] with 30 halvings, w^{-1} with 40 halvings. calibnb
    instead inverts the exact logit form with Chandrupatla's method (no clamp, full float64)."""

    def weight(p):
        p = np.clip(p, eps, 1 - eps)
        slope = gamma * (1 - p) ** (gamma - 1) * np.log(p) - (1 - p) ** gamma / p
        return -1.0 / np.minimum(slope, -1e-30)

    def w_inverse(x):
        lo, hi = np.full_like(x, eps), np.full_like(x, 1 - eps)
        for _ in range(n_inner):
            mid = (lo + hi) / 2
            up = weight(mid) < x
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        return (lo + hi) / 2

    q = np.clip(q, eps, None)
    lo, hi = np.full((q.shape[0], 1), -25.0), np.full((q.shape[0], 1), 25.0)
    for _ in range(n_outer):
        mid = (lo + hi) / 2
        up = w_inverse(q * np.exp(mid)).sum(axis=1, keepdims=True) < 1
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    p = w_inverse(q * np.exp((lo + hi) / 2))
    return p / p.sum(axis=1, keepdims=True)


def test_inverse_map_agrees_with_the_authors_bisection_where_it_is_accurate():
    q = np.random.default_rng(5).dirichlet(np.ones(3), size=50)
    q = np.clip(q, 1e-3, None)
    q /= q.sum(axis=1, keepdims=True)
    ours = inverse_focal_calibration_map(q, 2.0)
    theirs = authors_focal_link_inv(q, 2.0)
    assert np.abs(ours - theirs).max() < 1e-8  # 2.5e-9: the resolution of their bisections
    # A saturated target: their clamp of q at 1e-8 moves the preimage of (1 - 2e-12, 1e-12, 1e-12)
    # from 4.37e-5 (ours, which maps back exactly) to 9.4e-4.
    sat = np.array([[1 - 2e-12, 1e-12, 1e-12]])
    ours_sat = inverse_focal_calibration_map(sat, 2.0)
    assert np.allclose(focal_calibration_map(ours_sat, 2.0), sat, rtol=1e-9, atol=0)
    assert ours_sat[0, 1] == pytest.approx(4.36897e-5, rel=1e-5)
    assert authors_focal_link_inv(sat, 2.0)[0, 1] > 10 * ours_sat[0, 1]
