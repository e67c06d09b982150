"""The ResNets of the papers: ResNet-50 and the 4-stage "ResNet-110", for CIFAR and Tiny-ImageNet.

Architecture of ``torrvision/focal_calibration`` ``Net/resnet.py`` (Mukhoti et al. 2020), reused
by DFL, AdaFocal and FCL: He et al.'s (2016) bottleneck ResNet with a CIFAR stem (one 3×3 conv,
stride 1, 64 channels, no max-pool), four stages of widths 64/128/256/512 (×4 expansion) with
strides 1/2/2/2, global average pooling and one linear layer.

* ``resnet50``: [3, 4, 6, 3] bottlenecks.
* ``resnet110``: [3, 4, 26, 3] bottlenecks. This is *not* He et al.'s 3-stage, 110-layer CIFAR
  ResNet (basic blocks, 1.7 M parameters) but a 4-stage bottleneck net with 110 weight layers
  (36 blocks × 3 + stem + classifier) and 45.9 M parameters (CIFAR-10). The papers' numbers
  come from it, so calibnb keeps it.

Differences from the reference code, none of which changes a 32×32 forward pass: the input
channels are a parameter (``in_channels=1`` for Fashion-MNIST), the final ``avg_pool2d(4)``
is a global average pool (the same on the 4×4 map of a 32×32 input, and it also accepts 28×28
inputs, whose map is 4×4 as well, or larger images), and the unused ``temp`` logit divisor is
gone. Module names match the reference, so its ``state_dict`` checkpoints load unchanged.

**Tiny-ImageNet** (``image_size=64``, which :func:`calibnb.models.get_model` fills in from a
64×64 input): the reference's ``Net/resnet_tiny_imagenet.py``, which its ``train.py`` builds for
Tiny-ImageNet. The stem, stages and blocks are the same; the final 8×8 map is pooled to 2×2
(``AdaptiveAvgPool2d(2)``: the same 4×4 windows as the CIFAR net's ``avg_pool2d(4)``), so the
classifier reads 2048·4 = 8192 features, and every convolution is initialised from
N(0, 2 / (k²·c_out)) (He et al.'s fan-out rule), batch norms with weight 1 and bias 0. Its
projection shortcuts are called ``downsample`` there and ``shortcut`` here.

**ImageNet** (``image_size=224``): torchvision's ImageNet ResNet with the same block counts
(``calibnb.models.imagenet``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .imagenet import IMAGENET_SIZE, imagenet_resnet50, imagenet_resnet110
from .init import he_init

#: Input sides (pixels) of the reference's two nets: CIFAR's 32 (Fashion-MNIST's 28 works too),
#: and Tiny-ImageNet's 64.
CIFAR_SIZE, TINY_IMAGENET_SIZE = 32, 64


class Bottleneck(nn.Module):
    """1×1 → 3×3 (carries the stride) → 1×1 (×4 channels) convolutions with batch norm."""

    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        out_planes = self.expansion * planes
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_planes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != out_planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(out_planes),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """A 4-stage bottleneck ResNet with a CIFAR stem; ``blocks`` counts bottlenecks per stage.

    ``image_size`` picks the reference net for that input side (module docstring): None or up to
    32, the CIFAR net (global average pool); 64, the Tiny-ImageNet net (2×2 pool, He-initialised
    convolutions). Other sides are refused, since the papers define no net for them.
    """

    def __init__(
        self, blocks: tuple[int, int, int, int], num_classes: int = 10, in_channels: int = 3,
        image_size: int | None = None,
    ):
        if image_size is not None and not (image_size <= CIFAR_SIZE or image_size == TINY_IMAGENET_SIZE):
            raise ValueError(f"image_size: the papers' ResNets take images of up to {CIFAR_SIZE} pixels (CIFAR), "
                             f"of {TINY_IMAGENET_SIZE} (Tiny-ImageNet) or of {IMAGENET_SIZE} (ImageNet), got {image_size}")
        super().__init__()
        self.pool_grid = 2 if image_size == TINY_IMAGENET_SIZE else 1
        self.in_planes = 64
        self.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layer1 = self._make_stage(64, blocks[0], stride=1)
        self.layer2 = self._make_stage(128, blocks[1], stride=2)
        self.layer3 = self._make_stage(256, blocks[2], stride=2)
        self.layer4 = self._make_stage(512, blocks[3], stride=2)
        self.fc = nn.Linear(512 * Bottleneck.expansion * self.pool_grid**2, num_classes)
        if image_size == TINY_IMAGENET_SIZE:
            he_init(self)

    def _make_stage(self, planes: int, n_blocks: int, stride: int) -> nn.Sequential:
        layers = []
        for s in [stride] + [1] * (n_blocks - 1):
            layers.append(Bottleneck(self.in_planes, planes, s))
            self.in_planes = planes * Bottleneck.expansion
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = F.adaptive_avg_pool2d(out, self.pool_grid)
        return self.fc(torch.flatten(out, 1))


def resnet50(num_classes: int = 10, in_channels: int = 3, image_size: int | None = None) -> nn.Module:
    """ResNet-50: bottlenecks [3, 4, 6, 3] (He et al. 2016), for 32×32 inputs, or 64×64
    (Tiny-ImageNet) with ``image_size=64``, or torchvision's ImageNet net with ``image_size=224``
    (``calibnb.models.imagenet``)."""
    if image_size == IMAGENET_SIZE:
        return imagenet_resnet50(num_classes, in_channels)
    return ResNet((3, 4, 6, 3), num_classes, in_channels, image_size)


def resnet110(num_classes: int = 10, in_channels: int = 3, image_size: int | None = None) -> nn.Module:
    """The papers' "ResNet-110": 4-stage bottlenecks [3, 4, 26, 3] (see the module docstring);
    with ``image_size=224``, the same blocks on torchvision's ImageNet stem."""
    if image_size == IMAGENET_SIZE:
        return imagenet_resnet110(num_classes, in_channels)
    return ResNet((3, 4, 26, 3), num_classes, in_channels, image_size)
