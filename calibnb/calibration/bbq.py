"""Bayesian Binning into Quantiles (BBQ): Naeini, Cooper & Hauskrecht (2015), AAAI.

BBQ averages histogram-binning models instead of choosing one. Model ``M`` splits the sorted
validation confidences into ``B`` equal-frequency (quantile) bins; bin ``b`` holds ``N_b``
samples of which ``m_b`` are correct (``n_b = N_b − m_b`` wrong), and its calibrated probability
is the mean of a Beta posterior. The models are weighted by their Bayesian score
``Score(M) = P(M) · P(D | M)``, ``P(M)`` uniform and ``P(D | M)`` the marginal likelihood in
closed form (the paper's Eq. 2, Heckerman's BDeu score)::

    P(D | M) = Π_b  Γ(N'/B) / Γ(N_b + N'/B) · Γ(m_b + α_b) / Γ(α_b) · Γ(n_b + β_b) / Γ(β_b),
    α_b = N'/B · p_b,   β_b = N'/B · (1 − p_b),

``p_b`` the midpoint of the bin's interval and ``N'`` the equivalent sample size; the prediction
is the paper's Eq. 1::

    P(z = 1 | y) = Σ_i  Score(M_i) / Σ_j Score(M_j) · P(z = 1 | y, M_i),
    P(z = 1 | y, M) = (m_b + α_b) / (N_b + N'/B)   for the bin b of M that holds y.

The models are all bin counts ``B`` from ``N^{1/3} / C`` to ``C · N^{1/3}`` (``C = 10``), at most
``N / 5`` so that a bin holds five samples on average; these are the authors' code's bounds
(``floor`` and ``ceil``, at least one bin), which netcal copies. ``N'/B`` is 2 by default: the
authors' code scores with ``N' = 2B`` ("BDeu2", two pseudo-samples a bin), which it names the
setting of the paper; ``prior_strength`` sets it. As in that code, a bin's midpoint is kept in
[0.005, 0.995] for its prior (a bin reaching 1.0 in float64 has midpoint 1 and ``β_b = 0``).

Everything is in logs: ``gammaln`` for Eq. 2 and a softmax (log-sum-exp) of the log scores for
the weights, so thousands of samples do not underflow the marginal likelihoods. The fit sorts the
confidences once and reads every bin of every model from one ``searchsorted`` of all their
edges into the sorted values and a cumulative sum of the correct ones; the averaged map is
piecewise constant on the union of the models' edges, which is what is stored
(``edges_``, ``bin_probability_``), so predicting is one ``searchsorted``.
:func:`bbq_reference` is the plain form (a loop over models and bins, Eq. 1 and 2 as written),
held equal to the estimator by ``tests/test_calibration_bbq.py``.

The paper calibrates a binary classifier's score. calibnb applies BBQ, as its other top-label
recalibrators (:mod:`calibnb.calibration.baselines`), to the top-label confidence against
whether the predicted class is right, and keeps the predicted class. The authors' code and netcal
also prune the models by an "elbow" of their scores before averaging (``alpha = 0.001``); the
paper's Eq. 1 averages all of them, as here: on the five shipped CIFAR networks the models the
elbow drops hold less than 1e-5 of the weight. netcal's ``BBQ`` (1.4) differs more: it scores by
BIC rather than the marginal likelihood, estimates a bin by its frequency, bins by equal width
(its quantile binning raises at ``transform``) and, for several classes, fits one BBQ per class
and renormalises the rows, which changes predicted classes; ``bench/peer_bbq.py`` sets the two
side by side.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, softmax

from .._validation import check_real, check_vector
from ..metrics.binning import assign_bins_unchecked, mass_edges_sorted
from .baselines import _TopLabelCalibrator

__all__ = ["BayesianBinningQuantiles", "bbq_bin_counts", "bbq_reference"]

#: ``C`` of the paper's range of bin counts, ``N^{1/3} / C`` to ``C · N^{1/3}``.
PAPER_RANGE_FACTOR = 10.0
#: ``N'/B``, the pseudo-samples of each bin's Beta prior: 2 in the authors' code ("BDeu2").
PAPER_PRIOR_STRENGTH = 2.0
#: A bin count is at most ``N / MIN_MEAN_BIN_SIZE`` (rounded up): five samples a bin on average.
MIN_MEAN_BIN_SIZE = 5
#: A bin's midpoint is kept in ``[MIDPOINT_CLIP, 1 − MIDPOINT_CLIP]`` for its prior, as the
#: authors' code does, so that ``α_b`` and ``β_b`` stay positive.
MIDPOINT_CLIP = 5e-3


def bbq_bin_counts(n_samples: int, range_factor: float = PAPER_RANGE_FACTOR) -> np.ndarray:
    """The bin counts ``B`` of BBQ's models for ``n_samples`` validation samples: every integer
    from ``max(1, floor(N^{1/3} / C))`` to ``min(ceil(N / 5), ceil(C · N^{1/3}))``, ``C =
    range_factor``.

    Examples
    --------
    >>> from calibnb.calibration.bbq import bbq_bin_counts
    >>> counts = bbq_bin_counts(5000)  # the post-hoc study's calibration half
    >>> counts[0], counts[-1], counts.size
    (np.int64(1), np.int64(171), 171)
    >>> bbq_bin_counts(12)  # at most N / 5 bins
    array([1, 2, 3])
    """
    root = float(np.cbrt(n_samples))
    low = max(1, math.floor(root / range_factor))
    high = min(math.ceil(n_samples / MIN_MEAN_BIN_SIZE), math.ceil(root * range_factor))
    return np.arange(low, max(low, high) + 1, dtype=np.int64)


class BayesianBinningQuantiles(_TopLabelCalibrator):
    """Bayesian Binning into Quantiles (Naeini, Cooper & Hauskrecht 2015) on the top-label
    confidence: the score-weighted average of equal-frequency histogram-binning models with
    Beta-posterior bin estimates (module docstring, Eq. 1 and 2).

    Parameters
    ----------
    prior_strength : float, default 2.0
        ``N'/B``, the pseudo-samples ``α_b + β_b`` of each bin's Beta prior, centred on the bin's
        midpoint (the authors' code: ``N' = 2B``). Greater than 0.
    range_factor : float, default 10.0
        ``C`` of the range of bin counts ``N^{1/3} / C .. C · N^{1/3}`` (``calibnb.calibration.bbq.bbq_bin_counts``).
        At least 1.

    Attributes: ``n_bins_`` (the models' bin counts), ``log_marginal_likelihood_``
    (``log P(D | M)`` of each), ``model_weights_`` (their normalised scores, summing to 1),
    ``edges_`` and ``bin_probability_`` (the averaged map: ``bin_probability_[i]`` on
    ``(edges_[i], edges_[i + 1]]``), ``n_classes_``, ``n_features_in_``, ``classes_``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration import BayesianBinningQuantiles
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(scale=3.0, size=(500, 3))
    >>> labels = (logits / 2 + rng.gumbel(size=(500, 3))).argmax(axis=1)  # from softmax(logits / 2)
    >>> bbq = BayesianBinningQuantiles().fit(logits, labels)
    >>> bbq.n_bins_[[0, -1]]  # 500 samples: models of 1 to 80 bins
    array([ 1, 80])
    >>> int(bbq.n_bins_[bbq.model_weights_.argmax()]), bbq.model_weights_.max().round(3)  # the best model
    (4, np.float64(0.849))
    >>> bbq.predict_proba(logits[:1]).round(3)  # the top class recalibrated, the others rescaled
    array([[0.315, 0.145, 0.54 ]])
    """

    _FITTED = "bin_probability_"

    def __init__(self, prior_strength: float = PAPER_PRIOR_STRENGTH,
                 range_factor: float = PAPER_RANGE_FACTOR):
        self.prior_strength = prior_strength
        self.range_factor = range_factor

    def _fit_top(self, conf: np.ndarray, correct: np.ndarray) -> None:
        strength = check_real(self.prior_strength, "prior_strength", minimum=0.0, strict_minimum=True)
        factor = check_real(self.range_factor, "range_factor", minimum=1.0)
        order = np.argsort(conf, kind="stable")
        sorted_conf = conf[order]
        correct_before = np.concatenate(([0.0], np.cumsum(correct[order])))
        n_bins = bbq_bin_counts(conf.size, factor)
        # every model's edges end to end; bin j of the whole runs from edges[j] to edges[j + 1]
        edges = np.concatenate([mass_edges_sorted(sorted_conf, int(b)) for b in n_bins])
        last = np.cumsum(n_bins + 1) - 1  # the index of each model's upper edge 1.0
        low = np.delete(np.arange(edges.size), last)
        model = np.repeat(np.arange(n_bins.size), n_bins)
        # samples at or below each edge: the (lo, hi] bins of assign_bins, the first bin from 0
        below = np.searchsorted(sorted_conf, edges, side="right")
        below[low[np.r_[0, np.cumsum(n_bins)[:-1]]]] = 0
        below[last] = conf.size
        count = (below[low + 1] - below[low]).astype(np.float64)
        hits = correct_before[below[low + 1]] - correct_before[below[low]]
        midpoint = np.clip((edges[low] + edges[low + 1]) / 2, MIDPOINT_CLIP, 1.0 - MIDPOINT_CLIP)
        alpha, beta = strength * midpoint, strength * (1.0 - midpoint)
        log_bin = (gammaln(strength) - gammaln(count + strength) + gammaln(hits + alpha) - gammaln(alpha)
                   + gammaln(count - hits + beta) - gammaln(beta))
        self.n_bins_ = n_bins
        self.log_marginal_likelihood_ = np.bincount(model, weights=log_bin, minlength=n_bins.size)
        self.model_weights_ = softmax(self.log_marginal_likelihood_)  # uniform P(M), log-sum-exp
        posterior_mean = (hits + alpha) / (count + strength)
        # the average is constant between consecutive edges of any model: evaluate each model
        # at the upper end of every cell of the union of the edges
        self.edges_ = np.unique(edges)
        average = np.zeros(self.edges_.size - 1)
        starts = np.r_[0, np.cumsum(n_bins)[:-1]]
        for t, (b, first) in enumerate(zip(n_bins, starts)):
            bins = assign_bins_unchecked(self.edges_[1:], edges[first + t: first + t + b + 1])
            average += self.model_weights_[t] * posterior_mean[first + bins]
        self.bin_probability_ = np.clip(average, 0.0, 1.0)

    def _top(self, conf: np.ndarray) -> np.ndarray:
        return self.bin_probability_[assign_bins_unchecked(conf, self.edges_)]


def bbq_reference(confidences, correct, test_confidences, prior_strength: float = PAPER_PRIOR_STRENGTH,
                  range_factor: float = PAPER_RANGE_FACTOR) -> np.ndarray:
    """BBQ written as the paper's Eq. 1 and 2, one loop over the models and their bins: the
    calibrated probabilities of ``test_confidences`` after fitting on ``confidences`` (values in
    [0, 1]) and ``correct`` (0 or 1). The reference that :class:`BayesianBinningQuantiles` (its
    top-label confidences) is held equal to; slow, for tests and the book.

    Examples
    --------
    >>> import numpy as np
    >>> from calibnb.calibration.bbq import bbq_reference
    >>> conf = np.array([0.6, 0.7, 0.8, 0.9, 0.95])
    >>> bbq_reference(conf, [1, 0, 1, 1, 1], [0.65, 0.99]).round(4)  # one model of one bin: (4 + 2 · 0.5) / (5 + 2)
    array([0.7143, 0.7143])
    """
    conf = check_vector(confidences, "confidences", minimum=0.0, maximum=1.0)
    hit = check_vector(correct, "correct", minimum=0.0, maximum=1.0)
    test = check_vector(test_confidences, "test_confidences", minimum=0.0, maximum=1.0, min_size=0)
    if hit.shape != conf.shape:
        raise ValueError(f"correct has {hit.size} entries but confidences has {conf.size}")
    scores, predictions = [], []
    for n_bins in bbq_bin_counts(conf.size, range_factor):
        edges = mass_edges_sorted(np.sort(conf), int(n_bins))
        equivalent_sample_size = prior_strength * n_bins  # N' = 2B in the authors' code
        log_likelihood, bin_estimate = 0.0, []
        for b in range(n_bins):
            in_bin = (conf > edges[b]) & (conf <= edges[b + 1]) if b > 0 else conf <= edges[1]
            n_b, m_b = int(in_bin.sum()), float(hit[in_bin].sum())
            p_b = min(max((edges[b] + edges[b + 1]) / 2, MIDPOINT_CLIP), 1.0 - MIDPOINT_CLIP)
            prior = equivalent_sample_size / n_bins  # N'/B
            a_b, b_b = prior * p_b, prior * (1.0 - p_b)
            log_likelihood += (math.lgamma(prior) - math.lgamma(n_b + prior)
                               + math.lgamma(m_b + a_b) - math.lgamma(a_b)
                               + math.lgamma(n_b - m_b + b_b) - math.lgamma(b_b))
            bin_estimate.append((m_b + a_b) / (n_b + prior))
        scores.append(log_likelihood)
        test_bin = [next((b for b in range(n_bins - 1) if y <= edges[b + 1]), n_bins - 1) for y in test]
        predictions.append(np.array([bin_estimate[b] for b in test_bin]))
    score = np.exp(np.array(scores) - max(scores))  # Score(M_i) up to a common factor
    return sum(s / score.sum() * p for s, p in zip(score, predictions))
