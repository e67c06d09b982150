"""The ImageNet networks at 224×224, as torchvision builds them: ResNet-50, the papers' "ResNet-110"
with an ImageNet stem, and DenseNet-121.

AdaFocal (Ghosh et al. 2022, §5 and App. D) trains ResNet-50, "ResNet-110" and DenseNet-121 on
ImageNet; its CIFAR/Tiny-ImageNet base code defines no ImageNet net, so these are the standard
ones of ``torchvision.models``, written here because torchvision is an optional dependency with
no CPU build for every torch (module and parameter names are torchvision's, so its
``state_dict`` checkpoints load unchanged, and the parameter counts are its: ResNet-50
25,557,032, DenseNet-121 7,978,856 at 1000 classes).

- :class:`ImageNetResNet`: He et al. (2016), Table 1: a 7×7 stride-2 stem with 64 channels,
  batch norm, ReLU and a 3×3 stride-2 max-pool, four bottleneck stages of widths 64/128/256/512
  (×4 expansion), the stride on the 3×3 convolution ("ResNet v1.5", torchvision's), global
  average pooling, one linear layer. Convolutions are initialised from He et al.'s fan-out
  normal, batch norms with weight 1 and bias 0, as torchvision does.
- ``resnet50``: bottlenecks [3, 4, 6, 3]. ``resnet110``: [3, 4, 26, 3], the block counts of the
  papers' "ResNet-110" (``calibnb.models.resnet``) on this stem: the paper's ImageNet rows
  name the same network as its CIFAR rows, and torchvision has no "ResNet-110" (its ResNet-101
  is [3, 4, 23, 3]; the choice is explained in ``nbs/reproducing.md``).
- :class:`ImageNetDenseNet`: Huang et al. (2017), DenseNet-BC-121: a 7×7 stride-2 stem of 64
  channels with batch norm, ReLU and max-pool, dense blocks of [6, 12, 24, 16] layers
  (BN-ReLU-1×1 conv to 4·32 channels, BN-ReLU-3×3 conv to 32), transitions halving the
  channels with a 2×2 average pool, a final batch norm and ReLU, global average pooling, one
  linear layer (bias 0); convolutions from He et al.'s fan-in normal.
"""

from __future__ import annotations

import torch
from torch import nn

from .init import he_init

#: The input side of the ImageNet nets (the standard pipeline's crop).
IMAGENET_SIZE = 224


class Bottleneck(nn.Module):
    """torchvision's ``Bottleneck``: 1×1 → 3×3 (carries the stride) → 1×1 (×4), batch norms,
    a projection shortcut (``downsample``) where the shape changes."""

    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        out_planes = planes * self.expansion
        self.conv1 = nn.Conv2d(in_planes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_planes, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_planes != out_planes:
            self.downsample = nn.Sequential(nn.Conv2d(in_planes, out_planes, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ImageNetResNet(nn.Module):
    """torchvision's ``ResNet`` with bottlenecks: ``blocks`` counts them per stage."""

    def __init__(self, blocks: tuple[int, int, int, int], num_classes: int = 1000, in_channels: int = 3):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_planes = 64
        for i, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks), start=1):
            stride = 1 if i == 1 else 2
            stage = []
            for s in [stride] + [1] * (n - 1):
                stage.append(Bottleneck(in_planes, planes, s))
                in_planes = planes * Bottleneck.expansion
            setattr(self, f"layer{i}", nn.Sequential(*stage))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_planes, num_classes)
        he_init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        return self.fc(torch.flatten(self.avgpool(out), 1))


class _DenseLayer(nn.Module):
    def __init__(self, in_planes: int, growth_rate: int, bn_size: int):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(in_planes)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(in_planes, bn_size * growth_rate, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        new = self.conv2(self.relu2(self.norm2(self.conv1(self.relu1(self.norm1(x))))))
        return torch.cat([x, new], 1)


class ImageNetDenseNet(nn.Module):
    """torchvision's ``DenseNet`` (``features`` then ``classifier``)."""

    def __init__(self, blocks: tuple[int, ...] = (6, 12, 24, 16), growth_rate: int = 32, num_classes: int = 1000,
                 in_channels: int = 3, bn_size: int = 4):
        super().__init__()
        planes = 2 * growth_rate
        features = {"conv0": nn.Conv2d(in_channels, planes, 7, stride=2, padding=3, bias=False),
                    "norm0": nn.BatchNorm2d(planes), "relu0": nn.ReLU(inplace=True),
                    "pool0": nn.MaxPool2d(3, stride=2, padding=1)}
        for i, n in enumerate(blocks, start=1):
            layers = {f"denselayer{j + 1}": _DenseLayer(planes + j * growth_rate, growth_rate, bn_size)
                      for j in range(n)}
            features[f"denseblock{i}"] = nn.Sequential(_ordered(layers))
            planes += n * growth_rate
            if i < len(blocks):
                features[f"transition{i}"] = nn.Sequential(_ordered({
                    "norm": nn.BatchNorm2d(planes), "relu": nn.ReLU(inplace=True),
                    "conv": nn.Conv2d(planes, planes // 2, 1, bias=False), "pool": nn.AvgPool2d(2, stride=2)}))
                planes //= 2
        features["norm5"] = nn.BatchNorm2d(planes)
        self.features = nn.Sequential(_ordered(features))
        self.classifier = nn.Linear(planes, num_classes)
        he_init(self, mode="fan_in")
        nn.init.zeros_(self.classifier.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.features(x))
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1))


def _ordered(modules: dict):
    from collections import OrderedDict

    return OrderedDict(modules)


def imagenet_resnet50(num_classes: int = 1000, in_channels: int = 3) -> ImageNetResNet:
    """torchvision's ``resnet50``: bottlenecks [3, 4, 6, 3]."""
    return ImageNetResNet((3, 4, 6, 3), num_classes, in_channels)


def imagenet_resnet110(num_classes: int = 1000, in_channels: int = 3) -> ImageNetResNet:
    """The papers' "ResNet-110" block counts [3, 4, 26, 3] on torchvision's ImageNet ResNet."""
    return ImageNetResNet((3, 4, 26, 3), num_classes, in_channels)


def imagenet_densenet121(num_classes: int = 1000, in_channels: int = 3) -> ImageNetDenseNet:
    """torchvision's ``densenet121``: blocks [6, 12, 24, 16], growth 32."""
    return ImageNetDenseNet((6, 12, 24, 16), 32, num_classes, in_channels)
