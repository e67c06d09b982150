"""Vector scaling, matrix scaling and Dirichlet calibration with ODIR (Kull et al. 2019).

The fast objective equals the paper's, written term by term; its gradient equals torch's
autograd; the nested families order their fitted log-loss (matrix ≤ vector ≤ temperature); a huge
λ leaves a diagonal map; the edge cases (binary column, absent class, separable data, constant
logits) stay finite; λ and μ are chosen by cross-validation; bad hyper-parameters are refused by
name; a fitted map is saved and restored exactly, and a tampered file is refused. The comparison
with netcal and TorchUncertainty is ``bench/peer_linear_calibrators.py`` (peers are not test
dependencies).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.model_selection import KFold
from scipy.special import log_softmax, softmax

from calibnb.calibration import (
    DirichletCalibration,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
)
from calibnb.calibration.linear import (
    affine_nll_and_gradient,
    affine_objective_reference,
    fit_affine,
    unpack,
)
from calibnb.calibration.persist import calibrator_from_json, calibrator_to_json
from calibnb.metrics import nll

RNG = np.random.default_rng(0)
K = 4
LOGITS = RNG.normal(scale=3.0, size=(300, K))
#: Labels drawn from a miscalibrated map: per-class temperatures, a bias and a class coupling.
TRUE_W = np.diag([0.5, 0.3, 0.8, 0.4]) + 0.1 * RNG.normal(size=(K, K))
LABELS = (LOGITS @ TRUE_W.T + [0.3, -0.2, 0.0, 0.1] + RNG.gumbel(size=(300, K))).argmax(axis=1)


def _random_params(diagonal, rng):
    return rng.normal(size=2 * K if diagonal else K * K + K)


@pytest.mark.parametrize("diagonal", [True, False])
@pytest.mark.parametrize("reg", [(0.0, 0.0), (0.7, 0.3)])
def test_the_fast_objective_is_the_papers_equation(diagonal, reg):
    params = _random_params(diagonal, np.random.default_rng(1))
    coef, intercept = unpack(params, K, diagonal)
    matrix = np.diag(coef) if diagonal else coef
    lam = 0.0 if diagonal else reg[0]  # vector scaling has no off-diagonal weights
    fast, _ = affine_nll_and_gradient(params, LOGITS[:40], LABELS[:40], diagonal, lam, reg[1])
    assert fast == pytest.approx(affine_objective_reference(matrix, intercept, LOGITS[:40], LABELS[:40],
                                                            lam, reg[1]), rel=1e-12)


@pytest.mark.parametrize("diagonal", [True, False])
def test_the_gradient_is_torchs_autograd(diagonal):
    params = _random_params(diagonal, np.random.default_rng(2))
    _, grad = affine_nll_and_gradient(params, LOGITS, LABELS, diagonal, 0.7, 0.3)
    p = torch.tensor(params, requires_grad=True)
    x, y = torch.tensor(LOGITS), torch.tensor(LABELS)
    if diagonal:
        scores, penalty = x * p[:K] + p[K:], 0.0
    else:
        w = p[: K * K].reshape(K, K)
        scores = x @ w.T + p[K * K:]
        penalty = 0.7 / (K * (K - 1)) * ((w - torch.diag(torch.diag(w))) ** 2).sum()
    loss = torch.nn.functional.cross_entropy(scores, y) + penalty + 0.3 / K * (p[-K:] ** 2).sum()
    loss.backward()
    np.testing.assert_allclose(grad, p.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_vector_scaling_at_the_identity_is_the_softmax():
    vs = VectorScaling().fit(LOGITS, LABELS)
    vs.coef_, vs.intercept_ = np.ones(K), np.zeros(K)
    np.testing.assert_allclose(vs.predict_proba(LOGITS), softmax(LOGITS, axis=1), rtol=1e-14)


def test_the_nested_maps_order_their_fitted_log_loss():
    """Temperature ⊂ vector ⊂ matrix scaling: each exact NLL minimiser is no worse than the last."""
    temperature = nll(TemperatureScaling("nll").fit(LOGITS, LABELS).predict_proba(LOGITS), LABELS)
    vector = nll(VectorScaling().fit(LOGITS, LABELS).predict_proba(LOGITS), LABELS)
    matrix = nll(MatrixScaling(0.0, 0.0).fit(LOGITS, LABELS).predict_proba(LOGITS), LABELS)
    assert matrix <= vector + 1e-9 <= temperature + 2e-9
    assert matrix < temperature - 0.01  # the labels' class coupling is worth fitting


def test_matrix_scaling_recovers_the_map_that_drew_the_labels():
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=3.0, size=(20_000, K))
    labels = (logits @ TRUE_W.T + rng.gumbel(size=(20_000, K))).argmax(axis=1)
    coef = MatrixScaling(0.0, 0.0).fit(logits, labels).coef_
    # a softmax is unchanged by adding one row to every row of W: compare the centred columns
    centred = lambda w: w - w.mean(axis=0)
    np.testing.assert_allclose(centred(coef), centred(TRUE_W), atol=0.05)


def test_a_huge_lambda_leaves_a_diagonal_map():
    coef = MatrixScaling(reg_lambda=1e9, reg_mu=0.0).fit(LOGITS, LABELS).coef_
    assert np.abs(coef - np.diag(np.diag(coef))).max() < 1e-5
    assert np.abs(np.diag(coef) - 1.0).max() > 0.1  # the diagonal is free


def test_dirichlet_calibration_is_matrix_scaling_of_the_log_probabilities():
    dirichlet = DirichletCalibration(0.1, 0.2).fit(LOGITS, LABELS)
    matrix = MatrixScaling(0.1, 0.2).fit(log_softmax(LOGITS, axis=1), LABELS)
    np.testing.assert_allclose(dirichlet.coef_, matrix.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(dirichlet.predict_proba(LOGITS),
                               matrix.predict_proba(log_softmax(LOGITS, axis=1)), atol=1e-9)


CLASSES = [VectorScaling, MatrixScaling, DirichletCalibration]


def _fixed(cls, **reg):
    return cls(**({"reg_mu": reg.get("mu", 0.0)} if cls is VectorScaling else
                  {"reg_lambda": reg.get("lam", 0.0), "reg_mu": reg.get("mu", 0.0)}))


@pytest.mark.parametrize("cls", CLASSES)
def test_one_binary_column_is_the_two_column_logits(cls):
    z = LOGITS[:, 1] - LOGITS[:, 0]
    y = (LABELS == 1).astype(int)
    one = _fixed(cls, lam=0.1, mu=0.1).fit(z, y)
    two = _fixed(cls, lam=0.1, mu=0.1).fit(np.column_stack([np.zeros_like(z), z]), y)
    assert one.n_features_in_ == 1 and one.n_classes_ == 2
    np.testing.assert_allclose(one.predict_proba(z), two.predict_proba(np.column_stack([0 * z, z])))


@pytest.mark.parametrize("cls", CLASSES)
def test_a_class_absent_from_the_labels_gets_a_finite_small_probability(cls):
    labels = np.where(LABELS == 3, 0, LABELS)
    fitted = _fixed(cls, lam=0.01, mu=0.01).fit(LOGITS, labels)
    probs = fitted.predict_proba(LOGITS)
    assert np.isfinite(probs).all() and np.isfinite(fitted.intercept_).all()
    assert probs[:, 3].mean() < softmax(LOGITS, axis=1)[:, 3].mean() / 3


@pytest.mark.parametrize("cls", CLASSES)
def test_separable_data_stays_finite(cls):
    labels = LOGITS.argmax(axis=1)  # the logits predict every label right
    fitted = _fixed(cls, lam=1.0, mu=1.0).fit(LOGITS, labels)
    assert np.isfinite(fitted.coef_).all() and np.isfinite(fitted.intercept_).all()
    probs = fitted.predict_proba(LOGITS)
    assert np.isfinite(probs).all() and (probs.argmax(axis=1) == labels).all()


@pytest.mark.parametrize("cls", CLASSES)
def test_constant_logits_give_the_class_frequencies(cls):
    probs = _fixed(cls).fit(np.ones((300, K)), LABELS).predict_proba(np.ones((2, K)))
    np.testing.assert_allclose(probs[0], np.bincount(LABELS, minlength=K) / 300, atol=1e-4)


def test_lambda_and_mu_are_chosen_by_cross_validation():
    tied = MatrixScaling(reg_lambda=[0.0, 1.0, 1e9], reg_mu=None, cv=3).fit(LOGITS, LABELS)
    assert tied.cv_scores_.shape == (3,)
    assert tied.reg_lambda_ == tied.reg_mu_ == [0.0, 1.0, 1e9][int(np.argmin(tied.cv_scores_))]
    grid = MatrixScaling(reg_lambda=[0.0, 1e9], reg_mu=[0.0, 1.0, 10.0], cv=3).fit(LOGITS, LABELS)
    assert grid.cv_scores_.shape == (2, 3)
    best = np.unravel_index(np.argmin(grid.cv_scores_), (2, 3))
    assert (grid.reg_lambda_, grid.reg_mu_) == ([0.0, 1e9][best[0]], [0.0, 1.0, 10.0][best[1]])
    # each score is the mean held-out log-loss over the seeded folds, refitted here by hand
    manual = 0.0
    for train, held_out in KFold(3, shuffle=True, random_state=0).split(LOGITS):
        params, _ = fit_affine(LOGITS[train], LABELS[train], False, 1e9, 10.0)
        coef, intercept = unpack(params, K, False)
        manual += nll(softmax(LOGITS[held_out] @ coef.T + intercept, axis=1), LABELS[held_out]) / 3
    assert grid.cv_scores_[1, 2] == pytest.approx(manual, rel=1e-5)


@pytest.mark.parametrize("params, error, match", [
    ({"reg_lambda": -1.0}, ValueError, "reg_lambda must be >= 0"),
    ({"reg_lambda": "0.1"}, TypeError, "reg_lambda must be a number"),
    ({"reg_lambda": [[0.1]]}, ValueError, "reg_lambda must be a number or a non-empty 1-D"),
    ({"reg_lambda": []}, ValueError, "reg_lambda must be a number or a non-empty 1-D"),
    ({"reg_mu": float("nan")}, ValueError, "reg_mu must be finite"),
    ({"reg_mu": True}, TypeError, "reg_mu must be a number"),
    ({"cv": 1}, ValueError, "cv must be >= 2"),
])
def test_bad_hyper_parameters_are_refused_by_name(params, error, match):
    with pytest.raises(error, match=match):
        MatrixScaling(**params).fit(LOGITS, LABELS)


def test_a_mistyped_parameter_is_refused():
    with pytest.raises(TypeError, match="reg_lamda"):
        DirichletCalibration(reg_lamda=0.1)


def test_too_few_samples_for_the_folds_are_refused():
    with pytest.raises(ValueError, match="cv=5 folds need at least 5 samples, got n_samples=3"):
        MatrixScaling(reg_lambda=[0.1, 1.0]).fit(LOGITS[:3], LABELS[:3])


@pytest.mark.parametrize("cls", CLASSES)
def test_torch_tensors_are_taken_and_numpy_returned(cls):
    fitted = _fixed(cls, lam=0.1).fit(torch.tensor(LOGITS), torch.tensor(LABELS))
    probs = fitted.predict_proba(torch.tensor(LOGITS, dtype=torch.float32))
    assert isinstance(probs, np.ndarray)
    np.testing.assert_allclose(probs, _fixed(cls, lam=0.1).fit(LOGITS, LABELS).predict_proba(LOGITS), atol=1e-6)


@pytest.mark.parametrize("cls", CLASSES)
def test_a_fitted_map_is_saved_and_restored_exactly(cls):
    fitted = cls(cv=2).fit(LOGITS, LABELS) if cls is not VectorScaling else cls([0.0, 1.0], cv=2).fit(LOGITS, LABELS)
    restored = calibrator_from_json(calibrator_to_json(fitted))
    assert (restored.predict_proba(LOGITS) == fitted.predict_proba(LOGITS)).all()
    np.testing.assert_array_equal(restored.cv_scores_, fitted.cv_scores_)


@pytest.mark.parametrize("cls", CLASSES)
def test_a_tampered_map_is_refused(cls):
    document = calibrator_to_json(_fixed(cls, lam=0.1).fit(LOGITS, LABELS))
    document["fitted"]["intercept_"]["shape"] = [K - 1]
    document["fitted"]["intercept_"]["data"] = document["fitted"]["intercept_"]["data"][:-1]
    with pytest.raises(ValueError, match="coef_ and intercept_ must have shapes"):
        calibrator_from_json(document)
    document = calibrator_to_json(_fixed(cls, lam=0.1).fit(LOGITS, LABELS))
    document["params"]["reg_mu"] = -1.0
    with pytest.raises(ValueError, match="params.reg_mu must be >= 0"):
        calibrator_from_json(document)


def test_a_fit_stopped_by_the_iteration_cap_warns(monkeypatch):
    """An unconverged map is never returned silently."""
    from sklearn.exceptions import ConvergenceWarning
    from calibnb.calibration import linear
    monkeypatch.setattr(linear, "MAX_ITER", 2)
    with pytest.warns(ConvergenceWarning, match="without converging after 2 iterations"):
        VectorScaling().fit(LOGITS, LABELS)
