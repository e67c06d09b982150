"""On a CUDA GPU: a training step reads nothing back to the host, checked by CUDA itself
(``torch.cuda.set_sync_debug_mode("error")`` raises on every synchronisation). Marked ``gpu``:
``make test`` and ``make test-slow`` deselect them; ``make test-gpu`` and the GPU protocol
(``bench/gpu_protocol.sh``) run them, and on a machine without CUDA they fail saying so."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch

from calibnb.losses import LOSSES, get_loss
from calibnb.train import Trainer, train_step

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda():
    if not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA device (on a CPU, tests/test_train_host_reads.py counts the reads)")
    return torch.device("cuda")


@contextmanager
def synchronisation_is_an_error():
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_steps_without_synchronising(cuda, name):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10)).to(cuda)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = get_loss(name, validate=False, reduction="sum").to(cuda)
    x, y = torch.randn(128, 3, 32, 32, device=cuda), torch.randint(0, 10, (128,), device=cuda)

    def autocast():
        return torch.autocast("cuda", dtype=torch.bfloat16)

    train_step(model, loss_fn, optimizer, x, y, autocast, True, grad_clip=2.0)  # warm-up
    with synchronisation_is_an_error():
        loss, _ = train_step(model, loss_fn, optimizer, x, y, autocast, True, grad_clip=2.0)
    assert torch.isfinite(loss).item()


@pytest.mark.parametrize("loss", ["cross_entropy", "dual_focal_loss", "adafocal", "mmce_loss"])
def test_the_training_loops_step_and_gamma_update_do_not_synchronise(cuda, loss):
    trainer = Trainer({"model": "resnet50", "loss": loss, "device": "cuda", "train_size": 1024, "val_size": 512,
                       "epochs": 1, "augment": True, "progress": False})
    order = torch.randperm(1024, device=cuda, generator=trainer.generator).split(128)
    trainer.step(order[0])  # warm-up: optimiser state, cudnn
    with synchronisation_is_an_error():
        for idx in order[1:4]:
            trainer.step(idx)
        if loss == "adafocal":
            trainer.observe_validation_on_device()
    assert torch.isfinite(trainer.running).all().item()
