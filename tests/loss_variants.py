"""Every loss variant where numerics are hardest, and logits that saturate the softmax: shared
by the numerics tests and the host-free (``validate=False``) tests."""

from __future__ import annotations

import torch

from calibnb.losses import AdaFocalLoss, CalFocalLoss, get_loss


def adafocal_with_mixed_gammas(base: str, **kwargs) -> AdaFocalLoss:
    """AdaFocal whose bins hold every kind of gamma: inverse, switched, zero, small, large."""
    loss = AdaFocalLoss(n_bins=8, base=base, **kwargs)
    loss.gammas.copy_(torch.tensor([-2.0, -0.2, 0.0, 0.2, 0.5, 1.0, 5.0, 20.0], dtype=torch.float64))
    return loss


#: Every loss, with the hyper-parameters where numerics are hardest (gamma < 1, zero offsets);
#: keyword arguments such as ``validate`` pass through.
VARIANTS = {
    "cross_entropy": lambda **kw: get_loss("cross_entropy", **kw),
    "focal 3": lambda **kw: get_loss("focal_loss", **kw, gamma=3.0),
    "focal 0.5": lambda **kw: get_loss("focal_loss", **kw, gamma=0.5),
    "focal 0.2": lambda **kw: get_loss("focal_loss", **kw, gamma=0.2),
    "flsd-53": lambda **kw: get_loss("focal_loss_sd", **kw),
    "inverse 2": lambda **kw: get_loss("inverse_focal_loss", **kw, gamma=2.0),
    "dual 5": lambda **kw: get_loss("dual_focal_loss", **kw, gamma=5.0),
    "dual 0.5": lambda **kw: get_loss("dual_focal_loss", **kw, gamma=0.5),
    "dual second": lambda **kw: get_loss("dual_focal_loss", **kw, gamma=0.5, dual="second"),
    "dual mean_top3": lambda **kw: get_loss("dual_focal_loss", **kw, gamma=0.5, dual="mean_top3"),
    "dual mean_all": lambda **kw: get_loss("dual_focal_loss", **kw, gamma=0.5, dual="mean_all"),
    "dual offset 0": lambda **kw: get_loss("dual_focal_loss", **kw, gamma=0.5, dual=0.0),
    "dfl-sd": lambda **kw: get_loss("dual_focal_loss_sd", **kw),
    "fcl l2": lambda **kw: get_loss("focal_calibration_loss", **kw, gamma=0.5, lam=1.5),
    "fcl l1": lambda **kw: get_loss("focal_calibration_loss", **kw, gamma=2.0, lam=0.5, norm="l1"),
    "brier": lambda **kw: get_loss("brier_loss", **kw),
    "label smoothing": lambda **kw: get_loss("label_smoothing_loss", **kw),
    "mmce": lambda **kw: get_loss("mmce_loss", **kw),
    "adafocal": lambda **kw: adafocal_with_mixed_gammas("focal", **kw),
    "adadualfocal": lambda **kw: adafocal_with_mixed_gammas("dual", **kw),
    "calfocal 1": lambda **kw: CalFocalLoss(lam=100.0, case=1, **kw),
    "calfocal 2": lambda **kw: CalFocalLoss(lam=10.0, case=2, **kw),
}


def saturated_logits(k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 logits of size 1e4 and targets that make p_t -> 1, p_t -> 0, and ties."""
    z = torch.zeros(6, k)
    z[0, 0] = 1e4  # target 0 certain: p_t rounds to 1
    z[1, 0] = 1e4  # target 1: p_t underflows to 0
    z[2, :] = -1e4
    z[2, 1] = 1e4
    z[3, 0] = z[3, 1] = 1e4  # a tie at the top
    z[4] = torch.linspace(-1e4, 1e4, k)
    z[5, 1] = 30.0  # p_t = 1 - 1e-13: below float32's resolution of 1
    t = torch.tensor([0, 1, 1, 0, k - 1, 1])
    return z, t
