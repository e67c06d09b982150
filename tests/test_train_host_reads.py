"""The training loop's step reads nothing back from the device (issue 15): counted on the CPU
with :func:`calibnb.train.count_host_reads`, in the real loop's own :meth:`Trainer.step`."""

from __future__ import annotations

import pytest
import torch

from calibnb.train import Trainer, count_host_reads

TINY = {"train_size": 256, "val_size": 300, "epochs": 1, "batch_size": 32, "progress": False,
        "model": "small_cnn", "augment": True}


@pytest.mark.parametrize("loss, params", [
    ("cross_entropy", {}), ("dual_focal_loss", {"gamma": 5}), ("focal_loss_sd", {}), ("adafocal", {}),
    ("mmce_loss", {}), ("focal_calibration_loss", {}),
])
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_a_training_step_reads_nothing_back(loss, params, precision):
    trainer = Trainer({**TINY, "loss": loss, "loss_params": params, "precision": precision,
                       "channels_last": True})
    order = torch.randperm(len(trainer.data.y_train), generator=trainer.generator).split(32)
    trainer.step(order[0])  # first call: lazy initialisation (optimiser state, cached constants)
    with count_host_reads() as reads:
        for idx in order[1:4]:
            trainer.step(idx)
    assert reads.total == 0, dict(reads.counts)
    assert torch.isfinite(trainer.running).all() and trainer.running[1] > 0


def test_adafocals_in_epoch_update_reads_nothing_back():
    trainer = Trainer({**TINY, "loss": "adafocal", "adafocal_update_every": 2})
    before = trainer.loss_fn.gammas.clone()
    with count_host_reads() as reads:
        trainer.observe_validation_on_device()
    assert reads.total == 0, dict(reads.counts)
    assert not torch.equal(trainer.loss_fn.gammas, before) and len(trainer.loss_fn.history) == 1


def test_an_epoch_reads_the_same_whatever_its_number_of_steps():
    """Reads happen per epoch (running sums, validation), never per step."""
    totals = []
    for train_size in (64, 256):
        trainer = Trainer({**TINY, "loss": "adafocal", "train_size": train_size, "adafocal_update_every": 1})
        trainer.step(torch.arange(32))
        with count_host_reads() as reads:
            trainer.epoch(0)
        totals.append(reads.total)
    assert totals[0] == totals[1] and totals[0] > 0  # 2 against 8 steps, 2 against 8 γ updates
