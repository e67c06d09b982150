"""The FLOP counts the chapter "Reproducing the experiments" states for its GPU hours: a training
step's forward and backward, per example, counted by ``torch.utils.flop_counter`` on the meta
device (no arithmetic runs)."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from calibnb.models import get_model


def training_gflop(name: str, num_classes: int, input_shape: tuple, example) -> float:
    with torch.device("meta"):
        model = get_model(name, num_classes, input_shape=input_shape)
        batch = example(2)
    with FlopCounterMode(display=False) as flops:
        model(batch).float().sum().backward()
    return flops.get_total_flops() / 2 / 1e9


@pytest.mark.parametrize("name, num_classes, side, stated", [
    ("resnet50", 200, 64, 31.1), ("resnet110", 200, 64, 65.4),  # Tiny-ImageNet rows
    ("resnet50", 1000, 224, 24.3), ("resnet110", 1000, 224, 50.5), ("densenet121", 1000, 224, 16.8),  # ImageNet
])
def test_the_chapters_image_flop_counts(name, num_classes, side, stated):
    gflop = training_gflop(name, num_classes, (3, side, side), lambda n: torch.randn(n, 3, side, side))
    assert round(gflop, 1) == stated


def test_the_chapters_text_cnn_flop_count():
    gflop = training_gflop("global_pooling_cnn", 20, (1000,),
                           lambda n: torch.zeros(n, 1000, dtype=torch.int64))
    assert round(gflop, 2) == 1.22
