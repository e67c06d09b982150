"""Wide-ResNet-26-10 for CIFAR, as in the papers' code.

Architecture of ``torrvision/focal_calibration`` ``Net/wide_resnet.py`` (``wide_resnet_cifar``,
depth 26, width 10), after Zagoruyko & Komodakis (2016): a 3×3 stem with 16 channels, three
stages of ``(depth - 2) / 6 = 4`` *post-activation* basic blocks (conv-BN-ReLU-conv-BN, add,
ReLU — the original ResNet block, not WRN's pre-activation block) of widths 160/320/640 with
strides 1/2/2, a 1×1 projection shortcut where the shape changes, no dropout, average pooling
over the final 8×8 map and one linear layer. Convolutions are initialised N(0, 2 / (k² · out
channels)) (He initialisation, fan-out), batch norms to (1, 0), as in the reference.

Differences from the reference, none of which changes a 32×32 forward pass: ``in_channels`` is
a parameter, the ``AvgPool2d(8)`` is a global average pool (also accepts 28×28 inputs, whose
final map is 7×7), the unused ``temp`` divisor is gone. Module names match the reference.
"""

from __future__ import annotations

import torch
from torch import nn

from .init import he_init


def _conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """conv3×3-BN-ReLU-conv3×3-BN, plus the (projected) input, then ReLU."""

    def __init__(
        self, in_planes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None
    ):
        super().__init__()
        self.conv1 = _conv3x3(in_planes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + residual)


class WideResNet(nn.Module):
    """Wide ResNet of depth ``6·n + 2`` and width factor ``width`` (3 stages of n blocks)."""

    def __init__(
        self, depth: int = 26, width: int = 10, num_classes: int = 10, in_channels: int = 3
    ):
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"depth must be 6·n + 2, got {depth}")
        n = (depth - 2) // 6
        self.in_planes = 16
        self.conv1 = nn.Conv2d(in_channels, 16, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_stage(16 * width, n, stride=1)
        self.layer2 = self._make_stage(32 * width, n, stride=2)
        self.layer3 = self._make_stage(64 * width, n, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64 * width, num_classes)
        he_init(self)

    def _make_stage(self, planes: int, n_blocks: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.in_planes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )
        layers = [BasicBlock(self.in_planes, planes, stride, downsample)]
        self.in_planes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, n_blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def wide_resnet26_10(num_classes: int = 10, in_channels: int = 3) -> WideResNet:
    """WRN-26-10: 4 basic blocks per stage, widths 160/320/640."""
    return WideResNet(26, 10, num_classes, in_channels)
