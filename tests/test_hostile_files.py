"""A file never runs code (issue 18, item 7): a planted checkpoint or CIFAR batch whose unpickling
would create a file is refused with an error naming it, and the file is not created.

Each payload is first shown to be hostile: the unrestricted loader (``torch.load`` with
``weights_only=False``, ``pickle.load``) does create the marker file, so these tests can fail.
"""

import pickle

import numpy as np
import pytest
import torch

from calibnb.data import load_dataset
from calibnb.train.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from test_data_formats import trust, write_cifar10


class Planted:
    """Unpickling this calls ``open(marker, "w")``: it creates a file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def test_a_planted_checkpoint_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"epoch": 0, "model": Planted(marker)}, tmp_path / CHECKPOINT)
    torch.load(tmp_path / CHECKPOINT, weights_only=False)  # the unrestricted loader runs it...
    assert marker.exists()
    marker.unlink()
    with pytest.raises(ValueError, match=f"{CHECKPOINT}.*refused, nothing in it was run"):
        load_checkpoint(tmp_path, "cpu")  # ...calibnb's does not
    assert not marker.exists()


def test_a_real_checkpoint_round_trips_as_tensors_and_plain_data(tmp_path):
    state = {"epoch": 2, "weights": torch.arange(3.0), "history": [{"val_nll": np.float64(0.5)}],
             "loss_history": [{"gammas": np.array([1.0, 2.0])}], "milestones": (1, 2)}
    save_checkpoint(tmp_path, state)
    loaded = load_checkpoint(tmp_path, "cpu")
    assert loaded["history"] == [{"val_nll": 0.5}] and type(loaded["history"][0]["val_nll"]) is float
    assert torch.equal(loaded["loss_history"][0]["gammas"], torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert loaded["milestones"] == (1, 2) and torch.equal(loaded["weights"], state["weights"])


def test_a_truncated_checkpoint_is_named(tmp_path):
    save_checkpoint(tmp_path, {"epoch": 0})
    path = tmp_path / CHECKPOINT
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(ValueError, match=CHECKPOINT):
        load_checkpoint(tmp_path, "cpu")


@pytest.mark.parametrize("verify", [False, True])
def test_a_planted_cifar_batch_is_refused_and_runs_nothing(tmp_path, verify, monkeypatch):
    folder, _, _ = write_cifar10(tmp_path, np.random.default_rng(0))
    marker = tmp_path / "pwned"
    payload = pickle.dumps(Planted(marker), protocol=2)
    pickle.loads(payload)  # the unrestricted loader runs it
    assert marker.exists()
    marker.unlink()
    (folder / "data_batch_1").write_bytes(payload)
    if verify:  # a checksum list that trusts the planted file: the reader still refuses it
        trust(monkeypatch, "cifar10", folder, [p.name for p in folder.iterdir()])
    with pytest.raises(ValueError, match="data_batch_1 is not a CIFAR python batch.*CIFAR batch never holds"):
        load_dataset("cifar10", root=tmp_path, verify=verify)
    assert not marker.exists()
