"""Small networks for the book's CPU runs (Fashion-MNIST, MNIST-1D).

They are sized so that an epoch of Fashion-MNIST (60 000 images) trains in seconds on two CPU
cores (``bench/bench_data.py`` prints the time) and still over-fits enough to be miscalibrated
with cross-entropy — the effect the book studies.

* :class:`MLP`: flatten, then ``Linear-ReLU`` layers of the given widths, then a linear
  classifier. The MNIST-1D paper's MLP is ``MLP(40, 10, hidden=(100, 100))``.
* :class:`SmallCNN`: blocks of stride-2 ``conv3×3-BN-ReLU`` (widths configurable), a 4×4
  adaptive average pool, a linear classifier; any image size.
* :class:`ConvNet1d`: the MNIST-1D paper's CNN (Greydanus & Kanarek 2020, ``ConvBase``): three
  1-D convolutions of 25 channels (kernel 5 then 3, stride 2, padding 1) with ReLU, flatten,
  linear.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class MLP(nn.Module):
    """A multilayer perceptron on flattened inputs of ``in_features`` values."""

    def __init__(self, in_features: int, num_classes: int = 10, hidden: Sequence[int] = (256,)):
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU(inplace=True)]
            width = h
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallCNN(nn.Module):
    """``len(widths)`` blocks of stride-2 conv3×3-BN-ReLU, a ``pool × pool`` average pool, linear.

    Striding instead of max-pooling keeps the cost low on the CPU: with the default widths
    (16, 32) a 28×28 image costs about 0.25 M multiply-adds. The adaptive pool makes the
    classifier independent of the image size (28×28 → 7×7 → 4×4, 32×32 → 8×8 → 4×4).
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 10,
        widths: Sequence[int] = (16, 32),
        pool: int = 4,
    ):
        super().__init__()
        layers: list[nn.Module] = []
        width = in_channels
        for w in widths:
            layers += [
                nn.Conv2d(width, w, kernel_size=3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(w),
                nn.ReLU(inplace=True),
            ]
            width = w
        layers += [nn.AdaptiveAvgPool2d(pool), nn.Flatten()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(width * pool * pool, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


class ConvNet1d(nn.Module):
    """The MNIST-1D CNN: three stride-2 1-D convolutions with ReLU, then a linear layer."""

    def __init__(
        self, in_channels: int = 1, num_classes: int = 10, channels: int = 25, length: int = 40
    ):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(in_channels, channels, kernel_size=5, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv1d(channels, channels, kernel_size=3, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv1d(channels, channels, kernel_size=3, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.Flatten(),
        )
        n_out = length
        for kernel in (5, 3, 3):
            n_out = (n_out + 2 - kernel) // 2 + 1
        if n_out < 1:
            raise ValueError(f"length must be at least 4, got {length}")
        self.fc = nn.Linear(channels * n_out, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))
