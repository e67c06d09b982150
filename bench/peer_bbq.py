"""Peer comparison: calibnb's BayesianBinningQuantiles beside netcal's BBQ on the shipped CIFAR networks.

netcal is not a dependency of calibnb; run this with an environment that has it::

    PYTHONPATH=. /work/peers/bin/python bench/peer_bbq.py [NETWORK ...] [--per-class]

Each network's 10,000 test predictions are split as the post-hoc study splits them
(:func:`calibnb.runs.posthoc.calibration_split`, seed 1): every method is fitted on the same 5,000
and scored on the other 5,000 (ECE with 15 equal-width bins, NLL). The rows:

* ``calibnb``: :class:`calibnb.calibration.BayesianBinningQuantiles` (top-label confidence; the
  paper's BDeu score with two pseudo-samples a bin, Beta-posterior bin estimates, all models of
  1 .. 10 N^{1/3} bins averaged).
* ``netcal top``: netcal's ``BBQ()`` fitted as a binary calibrator on the same top-label
  confidences and correctness, its confidence put back into the row as calibnb does. netcal
  (1.4) scores the models by BIC (not the paper's BDeu), estimates a bin by its frequency, keeps
  the models above an "elbow" of the scores (``alpha = 0.001``), and bins by equal *width*: its
  ``equal_intervals=False`` (the paper's quantiles) fits but its ``transform`` raises
  "currently not implemented". Its range of bin counts is the paper's (the authors' code's).
* ``netcal per class`` (``--per-class``, slow on 100 classes): netcal's own multiclass use, one BBQ
  per class on that class's probability (one against the rest), the rows renormalised: the
  predicted class can change.

``max |Δ conf|`` is the largest difference of the calibrated top-label confidence from calibnb's
on the test half.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
from scipy.special import softmax

from calibnb.calibration import BayesianBinningQuantiles
from calibnb.calibration.baselines import top_label_confidence
from calibnb.data import load_predictions
from calibnb.metrics import ece, nll
from calibnb.runs.posthoc import calibration_split

NETWORKS = ["cifar10-wideresnet-16-4", "cifar10-lenet-5", "cifar100-wideresnet-16-4",
            "cifar100-densenet-bc-100", "cifar100-lenet-5"]


class _PeerTop(BayesianBinningQuantiles):
    """calibnb's way of putting a recalibrated top-label confidence back into a row, with the
    confidence a peer's binary calibrator gives."""

    def __init__(self, peer=None):
        self.peer = peer

    def _top(self, conf):
        return np.clip(self.peer.transform(conf), 0.0, 1.0)


def _netcal_top(conf, correct):
    from netcal.binning import BBQ

    peer = BBQ()
    peer.fit(conf, correct.astype(int))
    wrapper = _PeerTop(peer)
    wrapper.bin_probability_ = np.zeros(1)  # marks it fitted for predict_proba
    wrapper.n_classes_ = wrapper.n_features_in_ = None
    return wrapper


def compare(network: str, per_class: bool) -> list[tuple]:
    logits, labels = load_predictions(network)
    logits = logits.astype(np.float64)
    fit_rows, test_rows = calibration_split(1, len(labels))
    z, y, zt, yt = logits[fit_rows], labels[fit_rows], logits[test_rows], labels[test_rows]
    conf, top = top_label_confidence(z)
    correct = (top == y).astype(np.float64)
    rows, probs = [], {}
    start = time.perf_counter()
    ours = BayesianBinningQuantiles().fit(z, y)
    seconds = {"calibnb": time.perf_counter() - start}
    probs["calibnb"] = ours.predict_proba(zt)
    for name in ("netcal top",):
        start = time.perf_counter()
        peer = _netcal_top(conf, correct)
        seconds[name] = time.perf_counter() - start
        probs[name] = peer._recalibrate(softmax(zt, axis=1))
    if per_class:
        from netcal.binning import BBQ

        start = time.perf_counter()
        peer = BBQ().fit(softmax(z, axis=1), y)
        seconds["netcal per class"] = time.perf_counter() - start
        p = np.clip(peer.transform(softmax(zt, axis=1)), 1e-300, 1.0)
        probs["netcal per class"] = p / p.sum(axis=1, keepdims=True)
    before = softmax(zt, axis=1)
    rows.append((network, "uncalibrated", ece(before, yt), nll(before, yt), float("nan"), float("nan"), 0.0))
    mine = probs["calibnb"].max(axis=1)
    for name, p in probs.items():
        changed = float((p.argmax(axis=1) != before.argmax(axis=1)).mean())
        rows.append((network, name, ece(p, yt), nll(p, yt), float(np.abs(p.max(axis=1) - mine).max()),
                     seconds[name], changed))
    best = ours.n_bins_[ours.model_weights_.argmax()]
    print(f"# {network}: calibnb averages {ours.n_bins_.size} models ({ours.n_bins_[0]}..{ours.n_bins_[-1]} bins), "
          f"the best {best} bins with weight {ours.model_weights_.max():.3f}; "
          f"{int((ours.model_weights_ > 1e-3).sum())} models weigh more than 0.001", flush=True)
    return rows


def main(argv: list[str]) -> None:
    per_class = "--per-class" in argv
    networks = [a for a in argv if not a.startswith("--")] or NETWORKS
    warnings.simplefilter("ignore")  # netcal's tqdm and deprecation chatter
    print(f"{'network':26s} {'method':20s} {'ECE %':>7s} {'NLL':>7s} {'max|Δconf|':>10s} {'fit s':>7s} "
          f"{'class changed':>13s}")
    for network in networks:
        for row in compare(network, per_class):
            print(f"{row[0]:26s} {row[1]:20s} {100 * row[2]:7.2f} {row[3]:7.4f} {row[4]:10.4f} {row[5]:7.2f} "
                  f"{100 * row[6]:12.2f}%", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
