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


@pytest.mark.parametrize("loss", ["cross_entropy", "adafocal"])
def test_a_text_training_step_reads_nothing_back(tmp_path, loss):
    """Token ids go to the global-pooling CNN as they are, with Adam: still no read per step."""
    import numpy as np
    from data_files import TEXT_WORDS, write_glove, write_newsgroups

    rng = np.random.default_rng(0)
    write_newsgroups(tmp_path, rng, per_group=40)
    write_glove(tmp_path, rng, words=TEXT_WORDS[:3])
    trainer = Trainer({"dataset": "20newsgroups", "data_root": str(tmp_path), "verify_data": False,
                       "model": "global_pooling_cnn", "recipe": "ghosh2022_20newsgroups", "val_size": 5,
                       "batch_size": 16, "epochs": 1, "loss": loss, "progress": False})
    assert isinstance(trainer.optimizer, torch.optim.Adam) and trainer.data.x_train.dtype == torch.int64
    order = torch.randperm(len(trainer.data.y_train), generator=trainer.generator).split(16)
    trainer.step(order[0])
    with count_host_reads() as reads:
        for idx in order[1:4]:
            trainer.step(idx)
    assert reads.total == 0, dict(reads.counts)


def test_a_text_model_refuses_images_and_an_image_model_refuses_token_ids(tmp_path):
    import numpy as np
    from data_files import write_ag_news

    with pytest.raises(ValueError, match="'global_pooling_cnn' takes token ids, but mnist1d holds images or signals"):
        Trainer({"dataset": "mnist1d", "model": "global_pooling_cnn", "val_size": 500, "progress": False})
    write_ag_news(tmp_path, np.random.default_rng(0))
    with pytest.raises(ValueError, match="'mlp' takes images or signals, but ag_news holds token ids"):
        Trainer({"dataset": "ag_news", "data_root": str(tmp_path), "verify_data": False, "model": "mlp",
                 "val_size": 4, "progress": False})
