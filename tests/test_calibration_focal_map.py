"""The focal calibration map (Komisarenko & Kull 2024, Eq. (1), Propositions 2, 4 and 5)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import softmax

from calibnb.calibration import focal_calibration_map, focal_softmax, log_focal_softmax
from calibnb.theory import binary_focal_calibration


def authors_focal_map(q: torch.Tensor, gamma: float) -> torch.Tensor:
    """Independent re-implementation of ``focal_map`` in ``slavikkom/focal_temperature_scaling``,
    ``temperature_scaling.py`` (``focal_derivative`` then ``focal_map``): clamp q to
    [1e-12, 1 - 1e-12], take 1 / [(1-q)^γ (γ log q / (1-q) - 1/q)], normalise the row. It runs in
    the dtype it is given (float32 in their evaluation). calibnb works in log space instead."""
    q = q.clamp(min=1e-12, max=1.0 - 1e-12)
    derivative = (1.0 - q) ** gamma * (gamma * torch.log(q) / (1.0 - q) - 1.0 / q)
    inverse = derivative.reciprocal()
    return inverse / inverse.sum(dim=-1, keepdim=True)


GAMMAS = [-1.0, -0.5, -0.25, 0.05, 0.25, 0.37, 0.5, 0.75, 1.0, 2.0, 3.0, 5.0]


@pytest.mark.parametrize("gamma", GAMMAS)
def test_matches_authors_focal_map_on_unsaturated_inputs(gamma):
    rng = np.random.default_rng(0)
    z = rng.normal(scale=3.0, size=(500, 10))
    q = softmax(z, axis=1)
    theirs = authors_focal_map(torch.from_numpy(q), gamma).numpy()
    np.testing.assert_allclose(focal_calibration_map(q, gamma), theirs, rtol=0, atol=1e-9)
    np.testing.assert_allclose(focal_softmax(z, gamma), theirs, rtol=0, atol=1e-9)


@pytest.mark.parametrize("gap", [30.0, 100.0, 1000.0])
@pytest.mark.parametrize("gamma", [-1.0, -0.5, 0.5, 1.0, 5.0])
def test_finite_normalised_order_preserving_where_authors_give_nan(gap, gamma):
    z = np.array([[0.0, gap, 1.0, -2.0], [3.0, -gap, 2.0, 0.0], [gap, gap / 2, 0.0, -gap]])
    theirs = authors_focal_map(torch.softmax(torch.tensor(z, dtype=torch.float32), 1), gamma)
    assert torch.isnan(theirs).any()  # the reference breaks down on a saturated softmax
    for p in (focal_softmax(z, gamma), focal_calibration_map(softmax(z, axis=1), gamma)):
        assert np.isfinite(p).all() and (p >= 0).all()
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_array_equal(p.argmax(axis=1), z.argmax(axis=1))
    log_p = log_focal_softmax(z, gamma)
    assert np.isfinite(log_p).all()  # log space keeps even the 1e-400-sized probabilities
    order = np.argsort(z, axis=1)
    assert (np.diff(np.take_along_axis(log_p, order, axis=1), axis=1) > 0).all()


def test_saturated_top_class_is_exact_against_high_precision():
    # Gap 40: 1 - q_top ~ 4e-18 is invisible in float64 as 1 - q_top; calibnb keeps it exactly.
    # The reference value comes from Eq. (1) in 50-digit arithmetic (mpmath ships with sympy).
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    z, gamma = [0.0, 40.0, 1.0], 2.0
    e = [mpmath.exp(mpmath.mpf(v) - 40) for v in z]
    q = [v / sum(e) for v in e]
    w = [v * (1 - v) ** (-gamma) / (1 - gamma * v * mpmath.log(v) / (1 - v)) for v in q]
    exact = [float(v / sum(w)) for v in w]
    np.testing.assert_allclose(focal_softmax(np.array([z]), gamma)[0], exact, rtol=1e-12)


def test_gamma_zero_is_identity():
    rng = np.random.default_rng(1)
    q = softmax(rng.normal(scale=4.0, size=(200, 7)), axis=1)
    np.testing.assert_allclose(focal_calibration_map(q, 0.0), q, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("gamma", [-0.99, -0.5, 0.5, 1.0, 3.0, 7.0])  # theory needs γ > -1
def test_two_classes_equal_the_binary_map_of_proposition_2(gamma):
    q = np.concatenate([np.linspace(1e-6, 1 - 1e-6, 999), [1e-12, 0.5, 1 - 1e-12]])
    p = focal_calibration_map(np.stack([1 - q, q], axis=1), gamma)[:, 1]
    np.testing.assert_allclose(p, binary_focal_calibration(q, gamma), rtol=1e-10, atol=1e-14)


def test_vector_of_gammas_stacks_the_scalar_results():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(20, 5))
    stacked = focal_softmax(z, [0.5, 2.0], temperature=0.7)
    assert stacked.shape == (2, 20, 5)
    np.testing.assert_allclose(stacked[1], focal_softmax(z, 2.0, temperature=0.7), atol=1e-15)
    np.testing.assert_allclose(
        focal_calibration_map(softmax(z, axis=1), [0.0, 1.0])[1],
        focal_calibration_map(softmax(z, axis=1), 1.0), atol=1e-15)


logit_rows = arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(2, 6)),
                    elements=st.floats(-60, 60, allow_nan=False))


@settings(max_examples=150, deadline=None)
@given(z=logit_rows, gamma=st.floats(1e-3, 10.0))
def test_proposition_5_top_probability_never_decreases(z, gamma):
    # Proposition 5 as stated holds for K <= 3 and, for any K, when the top class has q >= 1/2:
    # then w_top / q_top = (1 - q)^-γ / (1 + γ x) >= 1 >= the other classes' ratios.
    q = softmax(z, axis=1)
    p = focal_calibration_map(q, gamma)
    top = q.argmax(axis=1)
    rows = np.arange(q.shape[0])
    covered = (q.shape[1] <= 3) | (q[rows, top] >= 0.5)
    assert (p[rows, top] >= q[rows, top] * (1 - 1e-12))[covered].all()


def test_proposition_5_fails_for_four_or_more_close_classes():
    # A counterexample to Proposition 5 for K >= 4: the ratio w(q) / q = (1 - q)^-γ / (1 + γ x)
    # dips below 1 around q = 0.2, so a top class near 0.3 beside a nearly equal rival and a
    # small class (whose ratio is close to 1) loses mass. The authors' own map agrees.
    q = np.array([[0.0653, 0.3116, 0.3109, 0.3122]])
    for p in (focal_calibration_map(q, 0.05), authors_focal_map(torch.from_numpy(q), 0.05).numpy()):
        assert p[0, 3] < q[0, 3] - 1e-5


@settings(max_examples=150, deadline=None)
@given(z=logit_rows, gamma=st.floats(-1.0, 10.0))
def test_map_keeps_the_order_of_the_classes(z, gamma):
    log_p = log_focal_softmax(z, gamma)
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0, atol=1e-12)
    clear = z[:, :, None] > z[:, None, :] + 1e-6  # a margin above rounding; ties map to ties
    above = log_p[:, :, None] > log_p[:, None, :]
    assert above[clear].all()


def test_bad_input():
    q = np.full((3, 4), 0.25)
    with pytest.raises(ValueError, match="gamma"):
        focal_calibration_map(q, -1.5)
    with pytest.raises(ValueError, match="gamma"):
        focal_calibration_map(q, [0.5, -2.0])
    with pytest.raises(ValueError, match="gamma"):
        focal_calibration_map(q, np.nan)
    with pytest.raises(ValueError, match="gamma"):
        focal_calibration_map(q, [])
    with pytest.raises(ValueError, match="probs"):
        focal_calibration_map(np.full((3, 4), 0.3), 1.0)
    with pytest.raises(ValueError, match="logits"):
        focal_softmax(np.array([[0.0, np.nan]]), 1.0)
    with pytest.raises(ValueError, match="temperature"):
        focal_softmax(np.zeros((2, 3)), 1.0, temperature=0.0)
