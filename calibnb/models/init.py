"""He initialisation, as the papers' convolutional networks (and torchvision's) start.

Every convolution's weights are drawn from He et al. (2015)'s normal distribution for ReLU
networks, ``N(0, 2 / fan)`` with ``fan`` the fan-out (the ResNets and Wide-ResNets) or the
fan-in (torchvision's DenseNet); every BatchNorm starts as the identity (scale 1, shift 0).
"""

from __future__ import annotations

from torch import nn


def he_init(model: nn.Module, mode: str = "fan_out") -> nn.Module:
    """Initialise ``model``'s convolutions (He normal, ``mode`` "fan_out" or "fan_in") and
    BatchNorms (scale 1, shift 0) in place, in module order; returns ``model``.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> _ = torch.manual_seed(0)
    >>> conv = he_init(nn.Sequential(nn.Conv2d(64, 64, 3), nn.BatchNorm2d(64)))[0]
    >>> round(conv.weight.std().item() / (2 / (64 * 9)) ** 0.5, 1)  # std sqrt(2 / fan_out)
    1.0
    """
    if mode not in ("fan_out", "fan_in"):
        raise ValueError(f"mode must be 'fan_out' or 'fan_in', got {mode!r}")
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode=mode, nonlinearity="relu")
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
    return model
