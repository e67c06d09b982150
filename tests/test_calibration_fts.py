"""Focal temperature scaling: the vectorised grid equals the per-candidate computation."""

import warnings

import numpy as np
import torch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from calibnb.calibration import (
    PAPER_FTS_TEMPERATURES,
    PAPER_GAMMAS,
    EdgeOfSearchWarning,
    FocalTemperatureScaling,
    TemperatureScaling,
    focal_calibration_map,
    focal_softmax,
)
from calibnb.calibration._grid import (
    CLASS_MAJOR_UP_TO,
    COMPILE_ABOVE,
    ROWS_PER_THREAD,
    FocalGrid,
    _confidence_and_label,
    _focal_top_kernel,
    _fused_top_kernel,
    _log_q_and_q,
    _row_terms,
    _shifted,
    batched_ece,
    fine_plan,
    power_plan,
)
from calibnb.calibration.focal_map import log_focal_softmax
from calibnb.metrics import ece, nll


def overconfident(seed: int, n: int = 1500, k: int = 10, scale: float = 2.0):
    """Labels drawn from softmax(z / scale): a model over-confident by a factor ``scale``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.5, size=(n, k))
    u = rng.random(n)[:, None]
    y = (u > np.cumsum(softmax(z / scale, axis=1), axis=1)).sum(axis=1)
    return z, np.minimum(y, k - 1)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_batched_ece_is_the_same_on_any_number_of_threads(threads):
    """Blocks of rows go to threads (ROWS_PER_THREAD or more each); the rows do not interact."""
    rng = np.random.default_rng(threads)
    conf = rng.uniform(0.1, 1.0, size=(5 * ROWS_PER_THREAD + 3, 500))
    correct = (rng.random(500) < 0.7).astype(float)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = batched_ece(conf, correct, 15, "mass")
        column_major = batched_ece(np.asfortranarray(conf), correct, 15, "mass")
    finally:
        torch.set_num_threads(before)
    expected = [batched_ece(conf[i : i + 1], correct, 15, "mass")[0] for i in range(len(conf))]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(column_major, expected)


def test_the_grid_leaves_the_process_thread_count_as_it_found_it():
    """The eager kernel runs on one thread inside its block only: after an evaluation, a fit,
    and an evaluation whose kernel raises, torch's thread count is the caller's again."""
    z, y = overconfident(7, n=200)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        grid = FocalGrid(z, y)
        grid.evaluate(1.0, PAPER_GAMMAS)
        assert torch.get_num_threads() == 2
        FocalTemperatureScaling(temperatures=[0.5, 1.0, 2.0]).fit(z, y)
        assert torch.get_num_threads() == 2

        def failing_kernel(*args):
            assert torch.get_num_threads() == 1
            raise RuntimeError("kernel failed")

        grid.kernel = failing_kernel
        with pytest.raises(RuntimeError, match="kernel failed"):
            grid.evaluate(1.0, PAPER_GAMMAS)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("n_bins", [15, 300])  # bin indices counted in one byte, and in int64
@pytest.mark.parametrize("binning", ["mass", "width"])
@pytest.mark.parametrize("n", [7, 15, 16, 301, 1000])
def test_batched_ece_equals_the_metric_for_every_candidate(binning, n, n_bins):
    rng = np.random.default_rng(n)
    z = rng.normal(scale=3.0, size=(n, 4))
    y = rng.integers(0, 4, n)
    probs = [softmax(z / t, axis=1) for t in (0.05, 0.3, 1.0, 4.0)]
    probs.append(np.round(probs[2], 2) / np.round(probs[2], 2).sum(axis=1, keepdims=True))  # ties
    conf = np.stack([p.max(axis=1) for p in probs])
    correct = np.stack([p.argmax(axis=1) == y for p in probs]).astype(float)
    for i, p in enumerate(probs):
        got = batched_ece(conf[i : i + 1], correct[i], n_bins, binning)[0]
        assert got == ece(p, y, n_bins, binning)
    same_correct = correct[:4].min(axis=0) == correct[:4].max(axis=0)
    if same_correct.all():  # the batch shares one correctness vector
        np.testing.assert_array_equal(batched_ece(conf[:4], correct[0], n_bins, binning),
                                      [ece(p, y, n_bins, binning) for p in probs[:4]])


@pytest.mark.parametrize("criterion", ["ece", "nll"])
def test_grid_equals_the_straightforward_per_candidate_loop(criterion):
    z, y = overconfident(0)
    temperatures = np.array([0.01, 0.05, 0.2, 0.5, 0.9, 1.0, 1.6, 2.0, 2.7, 4.0, 5.0])
    fts = FocalTemperatureScaling(PAPER_GAMMAS, temperatures, criterion=criterion).fit(z, y)
    metric = (lambda p: ece(p, y, 15, "mass")) if criterion == "ece" else (lambda p: nll(p, y))
    exact = np.array([[metric(focal_softmax(z, g, t)) for t in temperatures]
                      for g in PAPER_GAMMAS])
    np.testing.assert_allclose(fts.scores_, exact, rtol=0, atol=1e-12)
    g, t = np.unravel_index(np.argmin(exact), exact.shape)
    assert (fts.gamma_, fts.temperature_) == (PAPER_GAMMAS[g], temperatures[t])
    np.testing.assert_allclose(fts.predict_proba(z), focal_softmax(z, fts.gamma_, fts.temperature_))


def test_paper_defaults():
    assert PAPER_GAMMAS.tolist() == [-0.5, -0.25, 0.05, 0.25, 0.37, 0.5, 0.75, 1.0, 5.0]
    assert PAPER_FTS_TEMPERATURES.size == 500
    assert PAPER_FTS_TEMPERATURES[0] == 0.01 and PAPER_FTS_TEMPERATURES[-1] == 5.0
    assert np.allclose(np.diff(PAPER_FTS_TEMPERATURES), 0.01)
    fts = FocalTemperatureScaling()
    assert (fts.criterion, fts.search, fts.n_bins, fts.binning) == ("ece", "grid", 15, "mass")


@pytest.mark.parametrize("criterion", ["ece", "nll"])
def test_fts_with_gamma_zero_contains_temperature_scaling(criterion):
    z, y = overconfident(1, scale=1.7)
    temperatures = np.round(np.arange(1, 31) * 0.15, 10)
    fts = FocalTemperatureScaling([0.0, 0.5, 1.0, -0.5], temperatures, criterion=criterion)
    fts.fit(z, y)
    ts_scores = [ece(softmax(z / t, axis=1), y, 15, "mass") if criterion == "ece"
                 else nll(softmax(z / t, axis=1), y) for t in temperatures]
    np.testing.assert_allclose(fts.scores_[0], ts_scores, rtol=0, atol=1e-12)
    assert fts.best_score_ <= min(ts_scores) + 1e-12
    if criterion == "ece":
        ts = TemperatureScaling("ece", temperatures, binning="mass").fit(z, y)
        assert fts.best_score_ <= ts.best_score_ + 1e-12


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), gamma=st.floats(-1.0, 8.0), t=st.floats(0.01, 10.0))
def test_predict_proba_never_changes_the_argmax(seed, gamma, t):
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=rng.uniform(0.1, 50.0), size=(40, 6))
    fts = FocalTemperatureScaling([gamma], [t]).fit(z, rng.integers(0, 6, 40))
    p = fts.predict_proba(z)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(p.argmax(axis=1), z.argmax(axis=1))


def test_line_search_is_three_m_evaluations_along_the_line():
    z, y = overconfident(2, n=600, scale=2.5)
    temperatures = np.round(np.arange(1, 41) * 0.1, 10)
    line = FocalTemperatureScaling(temperatures=temperatures, search="line").fit(z, y)
    full = FocalTemperatureScaling(PAPER_GAMMAS[[0, -1]], temperatures).fit(z, y)
    assert line.scores_.shape == (2, temperatures.size)
    assert line.line_gammas_.size <= temperatures.size  # 2m + at most m evaluations
    np.testing.assert_allclose(line.scores_, full.scores_, atol=1e-15)
    intercept, slope = line.line_
    t_ends = temperatures[np.argmin(line.scores_, axis=1)]
    np.testing.assert_allclose(intercept + slope * line.gammas_, t_ends, atol=1e-12)
    np.testing.assert_allclose(line.line_temperatures_, intercept + slope * line.line_gammas_)
    assert line.best_score_ <= line.scores_.min() + 1e-15
    assert line.best_score_ == pytest.approx(
        ece(line.predict_proba(z), y, 15, "mass"), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 3])
def test_the_valley_of_the_surface_is_nearly_a_straight_line(seed):
    """Komisarenko & Kull (2024), Fig. 8: the best T for each γ of the paper's grid lies close to
    a straight line in γ (nbs/focal_temperature_scaling.md draws it for seed 0), rising with γ:
    a larger γ sharpens more, so less sharpening by the temperature (a larger T) is left to do."""
    from calibnb.synthetic import overconfident_logits

    z, y, _ = overconfident_logits(2000, 10, seed=seed)
    fts = FocalTemperatureScaling().fit(z, y)
    best_t = fts.temperatures_[fts.scores_.argmin(axis=1)]
    slope, intercept = np.polyfit(fts.gammas_, best_t, 1)
    residual = best_t - (intercept + slope * fts.gammas_)
    assert 1 - residual.var() / best_t.var() > 0.9
    assert 0.2 < slope < 0.5 and 1.8 < intercept < 2.5  # the generator's factor 2 at γ = 0


def test_saturated_validation_logits_stay_finite():
    z, y = overconfident(3, n=300)
    z[:100] *= 200.0  # logit gaps of hundreds: the authors' float32 map gives NaN here
    temperatures = PAPER_FTS_TEMPERATURES[::20]
    fts = FocalTemperatureScaling(temperatures=temperatures, criterion="nll").fit(z, y)
    assert np.isfinite(fts.scores_).all()
    fts = FocalTemperatureScaling(gammas=[-1.0, 0.5, 5.0], temperatures=temperatures).fit(z, y)
    assert np.isfinite(fts.scores_).all() and np.isfinite(fts.predict_proba(z)).all()


@pytest.mark.slow
@pytest.mark.parametrize("k", [3, 20, 100])  # classes-first (K <= 32) and samples-first layouts
def test_compiled_kernel_equals_eager_kernel(k):
    z, y = overconfident(4, n=400, k=k)
    eager = FocalGrid(z, y)
    compiled = FocalGrid(z, y, n_evaluations=COMPILE_ABOVE)
    assert compiled.kernel is not eager.kernel
    assert compiled.class_dim == (0 if k <= CLASS_MAJOR_UP_TO else 1)
    for t in (0.01, 0.3, 1.0, 4.0):
        for a, b in zip(eager.evaluate(t, PAPER_GAMMAS), compiled.evaluate(t, PAPER_GAMMAS)):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_bad_input():
    z, y = overconfident(5, n=60)
    with pytest.raises(ValueError, match="not fitted"):
        FocalTemperatureScaling().predict_proba(z)
    with pytest.raises(ValueError, match="logits"):
        FocalTemperatureScaling().fit(np.full_like(z, np.nan), y)
    with pytest.raises(ValueError, match="labels"):
        FocalTemperatureScaling().fit(z, y[:10])
    with pytest.raises(ValueError, match="gammas"):
        FocalTemperatureScaling(gammas=[]).fit(z, y)
    with pytest.raises(ValueError, match="gammas"):
        FocalTemperatureScaling(gammas=[0.5, -1.5]).fit(z, y)
    with pytest.raises(ValueError, match="temperatures"):
        FocalTemperatureScaling(temperatures=[]).fit(z, y)
    with pytest.raises(ValueError, match="temperatures"):
        FocalTemperatureScaling(temperatures=[0.0, 1.0]).fit(z, y)
    with pytest.raises(ValueError, match="search"):
        FocalTemperatureScaling(search="random").fit(z, y)
    with pytest.raises(ValueError, match="criterion"):
        FocalTemperatureScaling(criterion="brier").fit(z, y)


def test_mapped_top_confidence_is_not_a_function_of_the_top_probability():
    """Why the grid sorts every candidate: equal q_top, different mapped confidences."""
    q = np.array([[0.6, 0.4, 0.0], [0.6, 0.2, 0.2]])
    np.testing.assert_allclose(focal_calibration_map(q, 1.0).max(axis=1), [0.672, 0.704],
                               atol=5e-4)


@pytest.mark.parametrize("temperature", [0.01, 0.37, 1.0, 5.0])
def test_grid_kernel_equals_focal_softmax_on_adversarial_logits(temperature):
    rng = np.random.default_rng(6)
    z = rng.normal(scale=3.0, size=(12, 5))
    z[0] = [2.0, 2.0, 2.0, 2.0, 2.0]       # every class tied
    z[1] = [5.0, 5.0, -1.0, 0.0, 1.0]      # tied top pair: the second argmax is a non-top class
    z[2] = [900.0, 0.0, -5.0, 1.0, 2.0]    # gap of ~900: the softmax saturates, m underflows
    z[3] = [0.0, 1e-13, 0.0, -1e-13, 0.0]  # gaps below float64's resolution of z / T
    z[4] = [-300.0, -300.5, 400.0, -300.0, 399.0]
    y = np.arange(12) % 5
    gammas = np.array([-1.0, -0.5, 0.0, 0.05, 1.0, 5.0, 20.0])
    conf, log_p_label = FocalGrid(z, y).evaluate(temperature, gammas)
    log_p = log_focal_softmax(z, gammas, temperature)  # (n_gammas, N, K)
    np.testing.assert_allclose(conf, np.exp(log_p).max(axis=2), rtol=0, atol=1e-14)
    exact_label = np.take_along_axis(log_p, np.broadcast_to(y[None, :, None], (7, 12, 1)), 2)
    np.testing.assert_allclose(log_p_label, exact_label[..., 0], rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(3, 40), criterion=st.sampled_from(["ece", "nll"]))
def test_selection_equals_the_exact_argmin_on_near_ties(seed, n, criterion):
    """Few samples, few bins and a fine T grid: many candidates tie exactly or nearly.

    The logits are continuous, so no two confidences tie (a tie that rounding breaks differently
    in the two computations can move a sample across an equal-mass split; see ``FocalGrid``).
    """
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=(n, 3))
    y = rng.integers(0, 3, n)
    gammas = [-0.5, 0.0, 0.0, 0.5, 1.0]                   # a duplicated γ: exact ties
    temperatures = np.round(np.arange(1, 41) * 0.05, 10)
    fts = FocalTemperatureScaling(gammas, temperatures, criterion=criterion, n_bins=4).fit(z, y)
    metric = (lambda p: ece(p, y, 4, "mass")) if criterion == "ece" else (lambda p: nll(p, y))
    exact = np.array([[metric(focal_softmax(z, g, t)) for t in temperatures] for g in gammas])
    np.testing.assert_allclose(fts.scores_, exact, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(fts.scores_[1], fts.scores_[2])
    assert fts.best_score_ == pytest.approx(exact.min(), abs=1e-12)
    near = exact <= exact.min() + 1e-12  # the exact minimum up to float64 rounding
    selected = [(g, t) for g, t in zip(*np.nonzero(near))
                if (gammas[g], temperatures[t]) == (fts.gamma_, fts.temperature_)]
    assert selected, "the selected candidate is not an exact minimiser"
    assert fts.gamma_ != 0.0 or np.argmin(fts.scores_) // temperatures.size != 2  # first of a tie


def test_power_plan_marks_the_multiples_of_a_quarter():
    """Seven of the paper's nine γ are k/4 (5 = 20/4); 0.05 and 0.37 are 5/100 and 37/100."""
    powers = power_plan(PAPER_GAMMAS)
    assert powers == (-2, -1, None, 1, None, 2, 3, 4, 20)
    assert fine_plan(PAPER_GAMMAS, powers) == (100, (None, None, 5, None, 37, None, None, None, None))
    assert power_plan([0.0, 0.3, 5.25, -0.75]) == (None, None, None, -3)
    assert fine_plan([0.0, 0.3, -0.75], (None, None, -3)) == (10, (0, 3, None))
    assert fine_plan([0.3, 5.25], (None, None)) is None  # 5.25 = 105/20: past MAX_FINE_POWER
    assert fine_plan([0.123456], (None,)) is None  # no step 1/m with m <= 100
    assert fine_plan([0.25], (1,)) is None  # nothing left to plan


@pytest.mark.parametrize("k", [10, 100])
@pytest.mark.parametrize("gammas", [PAPER_GAMMAS, [-1.0, 0.25, 5.0], [0.05, 0.37], [0.0, 0.3, 0.123456]],
                         ids=["paper", "quarters-only", "steps-only", "exponentials"])
def test_fused_kernel_equals_the_exact_kernel(k, gammas):
    """The compiled path's formulas, run eagerly: the class terms recomputed in the γ pass and
    (1 - q)^(-γ) as a power of (1 - q)^(-1/4) or of (1 - q)^(-1/m) agree with one exponential per
    γ to ~1e-14."""
    rng = np.random.default_rng(k)
    z, y = rng.normal(scale=4.0, size=(300, k)), rng.integers(0, k, 300)
    z[0] = 900.0 * np.eye(k)[0]  # a saturated row: m underflows
    grid = FocalGrid(z, y)
    gammas = np.asarray(gammas, dtype=np.float64)
    for temperature in (0.05, 0.7, 3.0):
        t = torch.tensor(temperature, dtype=torch.float64)
        (block,) = grid.blocks  # 300 rows: one block of rows
        args = (*block, t, torch.from_numpy(gammas), grid.class_dim)
        powers = power_plan(gammas)
        fused = _fused_top_kernel(*args, powers=powers, fine=fine_plan(gammas, powers))
        exact = _focal_top_kernel(*args)
        for a, b in zip(fused, exact):
            torch.testing.assert_close(a, b, rtol=2e-14, atol=1e-300)


def _plain_top_kernel(z, second, gap, top, y, temperature, g, dim=1):
    """The eager kernel's formulas with a new array for every step (as they read in Eq. (1))."""
    h = _shifted(z, second, top, dim)
    e, shift, log1p_s, log_m = _row_terms(h, gap, temperature, dim)
    log_q, q = _log_q_and_q(e, h, shift, temperature, dim)
    log_1mq = torch.log1p(-q)
    x = torch.where(q > 0, q * log_q, 0.0) / (q - 1.0)
    # log q − γ log(1 − q) and 1 + γ x as one fused step each (torch.add's alpha), as in the kernel
    w_sum = torch.stack([(torch.add(log_q, log_1mq, alpha=-gamma).exp()
                          / torch.add(torch.ones_like(x), x, alpha=gamma)).sum(dim=dim)
                         for gamma in g.tolist()], dim=1)
    return _confidence_and_label(w_sum, log_q, log_1mq, 1.0 - x, log1p_s, log_m, top, y, g, dim)


@pytest.mark.parametrize("k", [3, 10, 100])
def test_the_in_place_eager_kernel_is_the_plain_formulas_bit_for_bit(k):
    """The eager kernel reuses its buffers and sets the top class by index; each value is still
    the one the plain formulas give, to the last bit (saturated rows, ties and γ = −1 included)."""
    rng = np.random.default_rng(k)
    z, y = rng.normal(scale=4.0, size=(500, k)), rng.integers(0, k, 500)
    z[0] = 900.0 * np.eye(k)[0]  # saturated: q underflows to 0 beside the top class
    z[1] = 0.0  # every class tied
    z[2, :2] = 7.0  # a tie at the top
    grid = FocalGrid(z, y)
    gammas = torch.tensor([-1.0, -0.5, 0.0, 0.05, 0.37, 1.0, 5.0], dtype=torch.float64)
    for temperature in (0.01, 0.7, 3.0, 40.0):
        t = torch.tensor(temperature, dtype=torch.float64)
        for block in grid.blocks:
            args = (*block, t, gammas, grid.class_dim)
            for fast, plain in zip(_focal_top_kernel(*args), _plain_top_kernel(*args)):
                torch.testing.assert_close(fast, plain, rtol=0, atol=0, equal_nan=False)


@pytest.mark.parametrize("criterion", ["ece", "nll"])
@pytest.mark.parametrize("k", [3, 10])
def test_the_papers_loop_selects_what_the_fast_grid_selects(criterion, k):
    """``search="loop"`` is the reference (the paper's search written plainly); the default grid
    gives the same surface to rounding and so the same (γ, T) and score."""
    rng = np.random.default_rng(k)
    z = rng.normal(scale=3.0, size=(400, k))
    y = np.where(rng.random(400) < 0.6, z.argmax(1), rng.integers(0, k, 400))
    temperatures = np.round(np.arange(1, 31) * 0.1, 10)
    loop = FocalTemperatureScaling(temperatures=temperatures, criterion=criterion, search="loop").fit(z, y)
    grid = FocalTemperatureScaling(temperatures=temperatures, criterion=criterion).fit(z, y)
    np.testing.assert_allclose(loop.scores_, grid.scores_, rtol=0, atol=1e-12)
    assert (loop.gamma_, loop.temperature_) == (grid.gamma_, grid.temperature_)
    assert loop.best_score_ == pytest.approx(grid.best_score_, abs=1e-12)
    np.testing.assert_array_equal(loop.predict_proba(z), grid.predict_proba(z))


#: search="line" on real logits chooses a (γ, T) whose validation ECE is within this of the grid's
#: (on DenseNet CIFAR-100 the line's, off the grid's γ values, is even lower).
LINE_ECE_TOLERANCE = 0.005


def test_line_search_criterion_is_within_tolerance_of_the_grid_on_real_logits():
    from calibnb.data import load_predictions
    z, y = load_predictions("cifar100-densenet-bc-100")
    z, y = z[:1500].astype(np.float64), y[:1500]
    temperatures = np.round(np.arange(1, 101) * 0.05, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EdgeOfSearchWarning)
        grid = FocalTemperatureScaling(PAPER_GAMMAS, temperatures).fit(z, y)
        line = FocalTemperatureScaling(PAPER_GAMMAS, temperatures, search="line").fit(z, y)
    assert line.best_score_ <= grid.best_score_ + LINE_ECE_TOLERANCE
    assert line.best_score_ == pytest.approx(ece(line.predict_proba(z), y, 15, "mass"), abs=1e-12)
    # the m line points, scored in one batch, as each alone
    i = np.linspace(0, line.line_gammas_.size - 1, 4).astype(int)
    alone = [ece(focal_softmax(z, g, t), y, 15, "mass")
             for g, t in zip(line.line_gammas_[i], line.line_temperatures_[i])]
    np.testing.assert_allclose(line.line_scores_[i], alone, rtol=0, atol=1e-12)


def _device(name):
    if name == "cuda" and not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA device")
    return torch.device(name)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n_bins", [15, 300])
@pytest.mark.parametrize("binning", ["mass", "width"])
def test_batched_ece_of_tensors_equals_numpy_in_any_chunks(device, binning, n_bins, monkeypatch):
    """The batched ECE of tensors (on their device) and of numpy arrays, in chunks of a few rows
    and whole: the same bins, sums equal to rounding; numpy's chunks change no bit."""
    from calibnb.calibration import _grid
    rng = np.random.default_rng(n_bins)
    conf = rng.uniform(0.2, 1.0, size=(40, 301))
    conf[5] = np.round(conf[5], 2)  # ties across the equal-mass splits
    shared = (rng.random(301) < 0.7).astype(float)
    per_row = (rng.random((40, 301)) < 0.7).astype(float)
    for correct in (shared, per_row):
        whole = batched_ece(conf, correct, n_bins, binning)
        monkeypatch.setattr(_grid, "ECE_BLOCK_ELEMENTS", 3 * 301)  # chunks of 3 rows
        np.testing.assert_array_equal(batched_ece(conf, correct, n_bins, binning), whole)
        on = _device(device)
        tensor = batched_ece(torch.from_numpy(conf).to(on), torch.from_numpy(correct).to(on),
                             n_bins, binning)
        monkeypatch.undo()
        assert isinstance(tensor, np.ndarray)
        np.testing.assert_allclose(tensor, whole, rtol=0, atol=1e-15)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("criterion", ["ece", "nll"])
@pytest.mark.parametrize("search", ["grid", "line"])
@pytest.mark.parametrize("k", [4, 50])  # classes-first and samples-first layouts
def test_a_tensor_is_fitted_on_its_device_as_numpy_is(device, criterion, search, k, monkeypatch):
    """Logits on a device: the grid's kernel and criterion run there (several blocks of rows),
    the surface equals numpy's to rounding and the selection is numpy's; predict_proba returns a
    float64 tensor on the device, equal to focal_softmax."""
    from calibnb.calibration import _grid
    from calibnb.metrics import streaming
    monkeypatch.setattr(_grid, "BLOCK_ELEMENTS", 40 * k)
    monkeypatch.setattr(streaming, "DEVICE_BLOCK_ELEMENTS", 40 * k)
    z, y = overconfident(k, n=400, k=k)
    on = _device(device)
    params = dict(gammas=[-0.5, 0.0, 0.37, 1.0, 5.0], temperatures=np.linspace(0.2, 4.0, 20),
                  criterion=criterion, search=search)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EdgeOfSearchWarning)
        numpy_fit = FocalTemperatureScaling(**params).fit(z, y)
        tensor_fit = FocalTemperatureScaling(**params).fit(torch.from_numpy(z).to(on),
                                                           torch.from_numpy(y).to(on))
    np.testing.assert_allclose(tensor_fit.scores_, numpy_fit.scores_, rtol=0, atol=1e-12)
    assert (tensor_fit.gamma_, tensor_fit.temperature_) == (numpy_fit.gamma_, numpy_fit.temperature_)
    probs = tensor_fit.predict_proba(torch.from_numpy(z).to(on))
    assert probs.device.type == device and probs.dtype == torch.float64
    np.testing.assert_allclose(probs.cpu().numpy(), numpy_fit.predict_proba(z), rtol=0, atol=1e-14)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("gamma", [-1.0, -0.5, 0.0, 0.37, 5.0, 20.0])
def test_focal_softmax_of_a_tensor_equals_numpy_on_adversarial_logits(device, gamma):
    """The device form of focal_softmax: saturated rows, ties, gaps of 900, tiny gaps."""
    from calibnb.calibration._grid import focal_softmax_tensor
    rng = np.random.default_rng(9)
    z = rng.normal(scale=3.0, size=(12, 5))
    z[0] = 2.0
    z[1] = [5.0, 5.0, -1.0, 0.0, 1.0]
    z[2] = [900.0, 0.0, -5.0, 1.0, 2.0]
    z[3] = [0.0, 1e-13, 0.0, -1e-13, 0.0]
    z[4] = [-300.0, -300.5, 400.0, -300.0, 399.0]
    for temperature in (0.01, 0.37, 1.0, 5.0):
        got = focal_softmax_tensor(torch.from_numpy(z).to(_device(device)), gamma, temperature)
        assert got.device.type == device
        np.testing.assert_allclose(got.cpu().numpy(), focal_softmax(z, gamma, temperature),
                                   rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("n, k", [(50_000, 1000), (50_000, 362), (131_072 // 362 * 7 + 362, 362), (10_000, 100),
                                  (1311 * 5 + 1, 100), (5000, 3), (4, 1000), (1, 10), (65_537 * 3 + 1, 2)])
def test_grid_blocks_never_tie_rows_to_classes(n, k):
    """The compiled kernel's dynamic shapes would recompile on a block of exactly K rows (duck
    sizing) or of one row; the blocks avoid both whenever there is more than one block, and
    cover the rows in order, each about BLOCK_ELEMENTS logits."""
    from calibnb.calibration._grid import BLOCK_ELEMENTS, grid_blocks

    blocks = grid_blocks(n, k)
    assert blocks[0].start == 0 and blocks[-1].stop == n
    assert all(a.stop == b.start for a, b in zip(blocks, blocks[1:]))
    sizes = [b.stop - b.start for b in blocks]
    assert max(sizes) <= max(2, BLOCK_ELEMENTS // k)
    if len(blocks) > 1:
        assert k not in sizes and 1 not in sizes, sizes
        assert max(sizes) >= BLOCK_ELEMENTS // k - 8  # still about a cache's worth of logits
