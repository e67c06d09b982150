"""The training loop's streaming mode (ImageNet, issue 29), on a small ImageFolder tree written by
Pillow: batches from DataLoader workers, a host-free step, the papers' 25k/25k split of the
published validation images drawn by the papers' split rule, logits streamed in order."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from data_files import write_imagenet

from calibnb.data import train_val_split
from calibnb.train import Trainer, count_host_reads
from calibnb.train.streaming import StreamedData

TINY = {"dataset": "imagenet", "verify_data": False, "model": "small_cnn", "epochs": 1, "batch_size": 4,
        "val_size": 2, "progress": False, "workers": 0, "recipe": "ghosh2022_imagenet"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_imagenet(tmp_path_factory.mktemp("imagenet"), np.random.default_rng(0))


def test_imagenet_trains_in_the_streaming_mode(tree):
    trainer = Trainer({**TINY, "data_root": str(tree)})
    data = trainer.data
    assert isinstance(data, StreamedData) and data.input_shape == (3, 224, 224) and data.augment
    # the papers' validation and test halves of the published validation images: val_size of
    # them drawn with the papers' split rule, the rest the test set
    test_idx, val_idx = train_val_split(6, 2, 1)
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    assert data.y_val.tolist() == labels[val_idx].tolist() and data.y_test.tolist() == labels[test_idx].tolist()
    x, y = next(data.batches(0, 4))
    assert x.dtype == torch.float32 and x.shape == (4, 3, 224, 224) and y.dtype == torch.int64
    assert -2.2 < float(x.min()) < float(x.max()) < 2.7  # normalised with ImageNet's statistics
    result = trainer.fit()
    assert result["history"]["train_loss"].notna().all() and len(result["history"]) == 1
    assert result["logits"]["val"][0].shape == (2, 3) and result["logits"]["test"][0].shape == (4, 3)
    assert result["logits"]["test"][1].tolist() == labels[test_idx].tolist()


def test_a_streamed_training_step_reads_nothing_back(tree):
    """:meth:`Trainer.step_batch` on batches from the loader: zero reads from the device, as the
    device-resident step (``tests/test_train_host_reads.py``). AdaFocal's in-epoch γ update
    streams the validation logits: its one read is the ``DataLoader``'s draw of its workers' base
    seed from a CPU tensor (``_get_shared_seed``), once per pass, whatever the number of batches."""
    trainer = Trainer({**TINY, "data_root": str(tree), "loss": "adafocal", "channels_last": True})
    batches = list(trainer.data.batches(0, 4))
    trainer.step_batch(*batches[0])  # first call: lazy initialisation
    with count_host_reads() as reads:
        for x, y in batches[1:]:
            trainer.step_batch(x, y)
    assert reads.total == 0, dict(reads.counts)
    for batch_size in (1, 250):
        with count_host_reads() as reads:
            trainer.data.logits(trainer.model, "val", trainer.autocast, batch_size)
        assert dict(reads.counts) == {"item": 1}
    assert torch.isfinite(trainer.running).all() and trainer.running[1] >= 0


def test_streamed_batches_are_seeded_by_run_and_epoch_and_use_worker_processes(tree):
    """Each epoch's order and crops depend on (seed, epoch) only, so a resumed run draws the same
    batches; worker processes give the same batches as the main process."""
    first = Trainer({**TINY, "data_root": str(tree)}).data
    again = Trainer({**TINY, "data_root": str(tree), "workers": 2}).data
    other = Trainer({**TINY, "data_root": str(tree), "seed": 2}).data
    for epoch in (0, 1):
        a = [x for x, _ in first.batches(epoch, 4)]
        b = [x for x, _ in again.batches(epoch, 4)]
        assert all(torch.equal(u, v) for u, v in zip(a, b)) and len(a) == 3
    assert not torch.equal(next(first.batches(0, 4))[0], next(first.batches(1, 4))[0])
    assert not torch.equal(next(first.batches(0, 4))[0], next(other.batches(0, 4))[0])


def test_the_streaming_mode_refuses_ood_shifts_and_a_split_without_test_images(tree):
    from calibnb.train import TrainConfig

    with pytest.raises(ValueError, match="ood shifts are made from a test set held in memory"):
        TrainConfig.from_params(**{**TINY, "data_root": str(tree), "ood": ["gaussian_noise"]})
    with pytest.raises(ValueError, match="val_size must leave both splits non-empty"):
        Trainer({**TINY, "data_root": str(tree), "val_size": 6})
    with pytest.raises(TypeError, match=r"step\(idx\) indexes a data set held on the device; imagenet is streamed"):
        Trainer({**TINY, "data_root": str(tree)}).step(torch.arange(4))
    with pytest.raises(TypeError, match="workers"):
        TrainConfig.from_params(**{**TINY, "workers": 1.5})


def test_a_streamed_run_resumed_after_a_kill_ends_with_identical_metrics(tree, tmp_path, monkeypatch):
    """The streaming mode's batches depend on (seed, epoch) only, so a run killed after its first
    epoch and resumed from the checkpoint ends where the uninterrupted run ends (on the CPU)."""
    import json

    from calibnb.train import loop as train_loop
    from calibnb.train import train

    config = {**TINY, "data_root": str(tree), "epochs": 2, "loss": "adafocal"}
    uninterrupted = train({**config, "out_dir": str(tmp_path / "a")})
    real_save = train_loop.save_checkpoint

    def save_then_die(out_dir, state):
        real_save(out_dir, state)
        raise KeyboardInterrupt("killed after the first epoch")

    monkeypatch.setattr(train_loop, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train({**config, "out_dir": str(tmp_path / "b")})
    monkeypatch.setattr(train_loop, "save_checkpoint", real_save)
    resumed = train({**config, "out_dir": str(tmp_path / "b"), "resume": True})
    np.testing.assert_array_equal(uninterrupted["history"]["train_loss"], resumed["history"]["train_loss"])
    a, b = (json.loads((tmp_path / run / "metrics.json").read_text()) for run in "ab")
    assert a["test"] == b["test"] and a["gammas"] == b["gammas"]


def test_a_damaged_image_is_named_when_a_worker_reads_it(tree, tmp_path):
    """A JPEG that does not decode stops the run with a ValueError naming the file, raised in the
    DataLoader worker that read it and passed on by the loader."""
    import shutil

    copy = shutil.copytree(tree, tmp_path / "imagenet")
    damaged = copy / "train" / "n01443537" / "n01443537_1.JPEG"
    damaged.write_bytes(b"not a jpeg")
    data = Trainer({**TINY, "data_root": str(copy), "workers": 2}).data
    with pytest.raises(ValueError, match=str(damaged)):
        list(data.batches(0, 4))
