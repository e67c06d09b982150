"""calibnb's vector scaling, matrix scaling and Dirichlet calibration against TorchUncertainty's.

TorchUncertainty (``torch_uncertainty.post_processing``: ``VectorScaler``, ``MatrixScaler``,
``DirichletScaler``) fits the same maps with torch's L-BFGS; its ``DirichletScaler`` adds ODIR
with the paper's normalisation (λ/(K(K−1)) Σ_{i≠j} w_ij² + μ·mean(b²)), exactly calibnb's, so
at equal λ and μ the two minimise the same objective. Its vector and matrix scalers have no
regularisation: they are compared with calibnb's at λ = μ = 0; its ``VectorScaler`` has no
intercept either (``softmax(w ⊙ z)``, where Guo et al. and Kull et al. fit ``w ⊙ z + b``), so
there calibnb's objective must be the lower. Each map is fitted on split 1's
calibration half of a shipped network and scored on its test half; the table gives the test NLL
and ECE (15 bins) of both, the largest difference of their test probabilities, and each one's
training objective (the lower is the better minimiser). Not a test dependency: run it with the
peers' environment::

    /work/peers/bin/python bench/peer_linear_calibrators.py [network ...]
"""

from __future__ import annotations

import logging
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from calibnb.calibration import DirichletCalibration, MatrixScaling, VectorScaling
from calibnb.calibration.linear import affine_nll_and_gradient
from calibnb.data import load_predictions
from calibnb.metrics import ece, nll
from calibnb.runs.posthoc import calibration_split

NETWORKS = ["cifar10-wideresnet-16-4", "cifar10-lenet-5", "cifar100-densenet-bc-100"]


def odir(k: int) -> float:
    """The λ = μ compared: a mid-grid strength (1 for 10 classes, 1e3 for 100)."""
    return 1.0 if k <= 10 else 1e3


def peer(kind: str, k: int, logits, labels, lam):
    from torch_uncertainty.post_processing import DirichletScaler, MatrixScaler, VectorScaler

    torch.set_default_dtype(torch.float64)
    if kind == "dirichlet":
        scaler = DirichletScaler(k, lambda_reg=lam, mu_reg=lam, max_iter=5000)
    else:
        scaler = {"vector": VectorScaler, "matrix": MatrixScaler}[kind](k, max_iter=5000)
    loader = DataLoader(TensorDataset(torch.tensor(logits), torch.tensor(labels)), batch_size=len(labels))
    scaler.fit(loader, progress=False)
    if kind == "vector":  # TorchUncertainty's vector scaling has no intercept: b = 0
        weight, bias = scaler.inv_temp.detach().numpy(), np.zeros(k)
    else:
        weight, bias = scaler.inv_temperature_weight.detach().numpy(), scaler.inv_temperature_bias.detach().numpy()
    return weight, bias, lambda z: torch.softmax(scaler(torch.tensor(z)), dim=1).detach().numpy()


def objective(kind, features, labels, weight, bias, lam):
    diagonal = kind == "vector"
    params = np.concatenate([np.asarray(weight).ravel(), bias])
    return affine_nll_and_gradient(params, features, labels, diagonal, lam if kind == "dirichlet" else 0.0,
                                   lam if kind == "dirichlet" else 0.0)[0]


def main(networks) -> None:
    logging.disable(logging.WARNING)
    print(f"{'network':28} {'map':10} {'λ=μ':>6} {'NLL ours':>9} {'NLL peer':>9} {'ECE ours':>9} "
          f"{'ECE peer':>9} {'max|Δp|':>8} {'obj ours':>10} {'obj peer':>10} {'s ours':>7} {'s peer':>7}")
    for network in networks:
        logits, labels = load_predictions(network)
        logits = logits.astype(np.float64)
        calibrate, test = calibration_split(1, len(labels))
        k = logits.shape[1]
        for kind in ("vector", "matrix", "dirichlet"):
            lam = odir(k) if kind == "dirichlet" else 0.0
            ours = {"vector": VectorScaling(reg_mu=0.0), "matrix": MatrixScaling(0.0, 0.0),
                    "dirichlet": DirichletCalibration(lam, lam)}[kind]
            start = time.perf_counter()
            ours.fit(logits[calibrate], labels[calibrate])
            ours_s = time.perf_counter() - start
            start = time.perf_counter()
            weight, bias, predict = peer(kind, k, logits[calibrate], labels[calibrate], lam)
            peer_s = time.perf_counter() - start
            p_ours, p_peer = ours.predict_proba(logits[test]), predict(logits[test])
            features = ours._features(logits[calibrate])
            print(f"{network:28} {kind:10} {lam:6g} {nll(p_ours, labels[test]):9.4f} {nll(p_peer, labels[test]):9.4f} "
                  f"{ece(p_ours, labels[test]):9.4f} {ece(p_peer, labels[test]):9.4f} "
                  f"{np.abs(p_ours - p_peer).max():8.4f} "
                  f"{objective(kind, features, labels[calibrate], ours.coef_, ours.intercept_, lam):10.5f} "
                  f"{objective(kind, features, labels[calibrate], weight, bias, lam):10.5f} "
                  f"{ours_s:7.1f} {peer_s:7.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or NETWORKS)
