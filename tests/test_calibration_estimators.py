"""Every calibrator keeps scikit-learn's estimator contract.

``clone`` works, ``get_params``/``set_params`` round-trip, ``__init__`` only stores its
parameters, fitted state ends in ``_``, and ``predict_proba`` before ``fit`` raises
``NotFittedError``. scikit-learn's own checks that take only the estimator (parameters,
``__init__``) run here; ``tests/test_calibration_sklearn.py`` runs the whole ``check_estimator``
and lists the few data-driven checks that do not apply to a calibrator of logits (whose labels
index the columns of its input), each with the reason.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
)

from calibnb.calibration import (
    BayesianBinningQuantiles,
    DirichletCalibration,
    EnsembleTemperatureScaling,
    FocalTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    SplineCalibration,
    TemperatureScaling,
    Uncalibrated,
    VectorScaling,
)

ESTIMATORS = [
    TemperatureScaling(criterion="nll"),
    TemperatureScaling(temperatures=[0.5, 1.0, 2.0], n_bins=10, binning="mass"),
    FocalTemperatureScaling(gammas=[0.0, 0.5, 1.0], temperatures=[0.5, 1.0, 2.0]),
    FocalTemperatureScaling(gammas=[0.0, 1.0], temperatures=[0.5, 1.0, 2.0], search="loop"),
    EnsembleTemperatureScaling(),
    SplineCalibration(n_knots=5),
    HistogramBinning(n_bins=5),
    IsotonicCalibration(),
    BayesianBinningQuantiles(),
    Uncalibrated(),
    VectorScaling(),
    MatrixScaling(reg_lambda=1.0),
    DirichletCalibration(reg_lambda=[0.1, 1.0], cv=2),
]
IDS = [type(e).__name__ + str(i) for i, e in enumerate(ESTIMATORS)]


def validation_set(seed=0, n=300, k=4):
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=3.0, size=(n, k))
    y = np.where(rng.random(n) < 0.7, z.argmax(1), rng.integers(0, k, n))
    return z, y


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_scikit_learn_checks_that_apply(estimator):
    name = type(estimator).__name__
    check_no_attributes_set_in_init(name, clone(estimator))
    check_parameters_default_constructible(name, clone(estimator))
    check_get_params_invariance(name, clone(estimator))
    check_set_params(name, clone(estimator))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_clone_gives_an_unfitted_copy_with_the_same_parameters(estimator):
    z, y = validation_set()
    fitted = clone(estimator).fit(z, y)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params() and copy is not fitted
    with pytest.raises(NotFittedError):
        copy.predict_proba(z)
    np.testing.assert_array_equal(copy.fit(z, y).predict_proba(z), fitted.predict_proba(z))
    learned = [key for key in vars(fitted) if key not in fitted.get_params()]
    assert learned and all(key.endswith("_") for key in learned), learned


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_unfitted_use_raises_not_fitted_error(estimator):
    with pytest.raises(NotFittedError, match="not fitted"):
        clone(estimator).predict_proba(np.zeros((2, 3)))


def test_set_params_round_trips_and_refuses_unknown_names():
    ts = TemperatureScaling()
    assert ts.set_params(criterion="nll", n_bins=20).get_params()["criterion"] == "nll"
    assert clone(ts).n_bins == 20
    with pytest.raises(ValueError, match="gamma"):
        ts.set_params(gamma=1.0)


def test_every_fitted_calibrator_of_the_package_is_checked_here():
    import calibnb.calibration as calibration
    fitted = {name for name in calibration.__all__ if hasattr(getattr(calibration, name), "fit")}
    assert fitted == {type(e).__name__ for e in ESTIMATORS}


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_logits_of_another_class_count_than_at_fit_are_refused(estimator):
    z, y = validation_set(k=5)
    fitted = clone(estimator).fit(z, y)
    assert fitted.n_classes_ == 5 and fitted.predict_proba(z).shape == z.shape
    other = np.random.default_rng(1).normal(size=(10, 7))
    with pytest.raises(ValueError, match="logits have 7 classes but the calibrator was fitted on 5"):
        fitted.predict_proba(other)
    assert clone(estimator).fit(other, y[:10] % 7).predict_proba(other).shape == (10, 7)  # refitted: fine
