"""DenseNet-121 for CIFAR, as in the papers' code.

Architecture of ``torrvision/focal_calibration`` ``Net/densenet.py`` (``densenet121``), after
Huang et al. (2017): a 3×3 stem with ``2 · growth = 64`` channels (no max-pool), four dense
blocks of [6, 12, 24, 16] bottleneck layers (BN-ReLU-conv1×1 to ``4 · growth`` channels,
BN-ReLU-conv3×3 to ``growth = 32``, output concatenated *in front of* the input), transitions
(BN-ReLU-conv1×1 to ``floor(0.5 · channels)``, 2×2 average pool), a final BN-ReLU, global
average pooling and one linear layer.

Differences from the reference, none of which changes a 32×32 forward pass: ``in_channels`` is
a parameter, the final ``avg_pool2d(4)`` is a global average pool (also accepts 28×28 inputs,
whose final map is 3×3), the unused ``temp`` divisor is gone. Module names match the reference.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .imagenet import IMAGENET_SIZE, imagenet_densenet121


class Bottleneck(nn.Module):
    """BN-ReLU-conv1×1 (4·growth) → BN-ReLU-conv3×3 (growth); returns ``cat([new, x])``."""

    def __init__(self, in_planes: int, growth_rate: int):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, 4 * growth_rate, kernel_size=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth_rate)
        self.conv2 = nn.Conv2d(4 * growth_rate, growth_rate, kernel_size=3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([out, x], 1)


class Transition(nn.Module):
    """BN-ReLU-conv1×1 then 2×2 average pooling."""

    def __init__(self, in_planes: int, out_planes: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_planes)
        self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNet(nn.Module):
    """DenseNet-BC with four dense blocks of ``blocks`` layers each."""

    def __init__(
        self,
        blocks: tuple[int, int, int, int] = (6, 12, 24, 16),  # exactly four dense blocks
        growth_rate: int = 32,
        reduction: float = 0.5,
        num_classes: int = 10,
        in_channels: int = 3,
    ):
        super().__init__()
        self.growth_rate = growth_rate
        planes = 2 * growth_rate
        self.conv1 = nn.Conv2d(in_channels, planes, kernel_size=3, padding=1, bias=False)
        for i, n in enumerate(blocks, start=1):
            setattr(self, f"dense{i}", self._make_dense(planes, n))
            planes += n * growth_rate
            if i < len(blocks):
                out_planes = int(math.floor(planes * reduction))
                setattr(self, f"trans{i}", Transition(planes, out_planes))
                planes = out_planes
        self.bn = nn.BatchNorm2d(planes)
        self.linear = nn.Linear(planes, num_classes)

    def _make_dense(self, in_planes: int, n_layers: int) -> nn.Sequential:
        growth = self.growth_rate
        return nn.Sequential(*(Bottleneck(in_planes + i * growth, growth) for i in range(n_layers)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(x)
        out = self.trans1(self.dense1(out))
        out = self.trans2(self.dense2(out))
        out = self.trans3(self.dense3(out))
        out = F.relu(self.bn(self.dense4(out)))
        return self.linear(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))


def densenet121(num_classes: int = 10, in_channels: int = 3, image_size: int | None = None) -> nn.Module:
    """DenseNet-121: blocks [6, 12, 24, 16], growth 32, compression 0.5; with ``image_size=224``
    torchvision's ImageNet DenseNet-121 (``calibnb.models.imagenet``), else the CIFAR net,
    which takes any side (global average pool)."""
    if image_size == IMAGENET_SIZE:
        return imagenet_densenet121(num_classes, in_channels)
    return DenseNet((6, 12, 24, 16), 32, 0.5, num_classes, in_channels)
