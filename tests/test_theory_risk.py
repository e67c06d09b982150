"""calibnb.theory.risk_minimizer: conditional-risk minimisers of calibnb's losses, and the focal
calibration loss claims (FCL paper, Appendix A.3/A.8 strict properness, Theorem 4.1)."""

import numpy as np
import pytest

from calibnb.theory import binary_focal_minimizer, inverse_focal_calibration_map, risk_minimizer

ETA3 = np.array([0.55, 0.3, 0.15])


@pytest.mark.parametrize("loss", ["cross_entropy", "brier_loss"])
def test_proper_losses_recover_eta(loss):
    rng = np.random.default_rng(1)
    for k in (2, 3, 5):
        eta = rng.dirichlet(np.ones(k))
        eta = np.clip(eta, 0.02, None) / np.clip(eta, 0.02, None).sum()
        assert risk_minimizer(loss, eta) == pytest.approx(eta, abs=1e-6)


def test_focal_minimizer_agrees_with_the_inverse_focal_map():
    """Two independent routes: calibnb.losses.focal_loss + L-BFGS, and p_hat^{-1} by root finding."""
    assert risk_minimizer("focal_loss", [0.2, 0.8], gamma=2.0)[1] == pytest.approx(
        float(binary_focal_minimizer(0.8, 2.0)), abs=1e-6
    )
    assert risk_minimizer("focal_loss", ETA3, gamma=3.0) == pytest.approx(
        inverse_focal_calibration_map(ETA3[None], 3.0)[0], abs=1e-6
    )


def test_fcl_is_not_proper_for_soft_eta():
    """A.8 argues strict properness at a one-hot eta only. For eta = (0.55, 0.3, 0.15),
    gamma = 3, lambda = 1.5 (a paper setting) the minimiser is (0.480, 0.321, 0.200), not eta."""
    q = risk_minimizer("focal_calibration_loss", ETA3, gamma=3.0, lam=1.5)
    assert q == pytest.approx([0.4795, 0.3209, 0.1995], abs=2e-4)
    assert np.abs(q - ETA3).max() > 0.05
    binary = risk_minimizer("focal_calibration_loss", [0.2, 0.8], gamma=2.0, lam=0.5)
    assert binary[1] == pytest.approx(0.6744, abs=2e-4)


def test_fcl_recovers_a_one_hot_eta_and_approaches_eta_as_lambda_grows():
    """A.8's argument holds at a vertex (eta one-hot: q -> the vertex), but already at
    eta = (0.998, 0.001, 0.001) the minimiser is 0.977: under-confident, like focal loss."""
    assert risk_minimizer("focal_calibration_loss", [1.0, 0.0, 0.0], gamma=3.0, lam=1.5)[0] > 0.999
    near = risk_minimizer("focal_calibration_loss", [0.998, 0.001, 0.001], gamma=3.0, lam=1.5)
    assert near[0] == pytest.approx(0.9767, abs=2e-4)
    gaps = [np.abs(risk_minimizer("focal_calibration_loss", ETA3, gamma=3.0, lam=lam) - ETA3).max()
            for lam in (0.5, 1.5, 10.0, 1000.0)]
    assert np.all(np.diff(gaps) < 0) and gaps[-1] < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("gamma, lam", [(2.0, 0.5), (4.0, 1.5)])
def test_theorem_4_1_fcl_is_closer_to_eta_than_focal(gamma, lam):
    rng = np.random.default_rng(7)
    for _ in range(6):
        eta = rng.dirichlet(np.ones(3))
        eta = np.clip(eta, 0.02, None) / np.clip(eta, 0.02, None).sum()
        fl = risk_minimizer("focal_loss", eta, gamma=gamma)
        fcl = risk_minimizer("focal_calibration_loss", eta, gamma=gamma, lam=lam)
        assert np.linalg.norm(fcl - eta) < np.linalg.norm(fl - eta)


def test_validation():
    with pytest.raises(ValueError, match="loss"):
        risk_minimizer("no_such_loss", ETA3)
    with pytest.raises(ValueError, match="loss"):
        risk_minimizer("mmce_loss", ETA3)
    with pytest.raises(ValueError, match="eta"):
        risk_minimizer("cross_entropy", [0.5, 0.6])
