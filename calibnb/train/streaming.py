"""The training loop's streaming mode: a data set too large for memory (ImageNet) read from disk
by ``DataLoader`` worker processes, a batch at a time.

The device-resident data sets (:class:`calibnb.train.loop.DeviceData`) hold every image on the
training device; ImageNet's 1.28 M JPEGs (about 140 GB) do not fit, so :class:`StreamedData`
gives the loop the same interface over a :class:`calibnb.data.StreamedDataset`:

- training batches come from a ``DataLoader`` over the training images, decoded, cropped and
  flipped in ``workers`` processes (``calibnb.data.imagenet``), shuffled by a generator
  seeded by the run's seed and the epoch (so a resumed run draws the same batches), collated
  into pinned memory on CUDA and copied to the device with ``non_blocking=True``; the uint8
  pixels are normalised there. Nothing is read back from the device: a step stays host-free
  (``tests/test_train_streaming.py`` counts its reads), and the copy of the next batch overlaps
  the current step.
- the papers' validation and test sets are the two halves of ImageNet's published 50,000
  validation images (AdaFocal, App. D: "We divide the 50,000 validation images into validation
  and test set of 25,000 images each"); the paper does not say how, so calibnb draws the halves
  with the papers' split rule (:func:`calibnb.data.train_val_split` of the 50,000 images, seed
  ``split_seed``, ``val_size`` of them for validation, the rest for test).
- their logits stream the same way (the evaluation transform, in order) and are gathered on the
  device; labels are known from the file index and never leave the host for the device and back.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from ..data import StreamedDataset, imagenet, normalize, train_val_split


def _epoch_seed(seed: int, epoch: int) -> int:
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1, np.uint64)[0]) >> 1


class StreamedData:
    """A streamed data set split for training, on the device a batch at a time.

    ``config`` is the run's :class:`calibnb.train.TrainConfig` (``dataset``, ``data_root``,
    ``verify_data``, ``val_size``, ``split_seed``, ``train_size``, ``augment``, ``seed``,
    ``workers``); ``ds`` the loaded :class:`calibnb.data.StreamedDataset`. ``train_size`` keeps
    a random subset of the training images (drawn with ``split_seed``).
    """

    def __init__(self, config, ds: StreamedDataset, device: torch.device):
        self.device, self.seed = device, config.seed
        self.workers = min(8, os.cpu_count() or 1) if config.workers is None else config.workers
        self.pin = device.type == "cuda"
        self.mean, self.std, self.num_classes = ds.mean, ds.std, ds.num_classes
        self.dataset = ds.train
        self.dataset.seed = config.seed
        # augment=False trains on the evaluation crops (the centre 224×224), for a fixed-input run
        self.dataset.train = config.augment is not False
        self.augment = self.dataset.train
        train_idx = np.arange(len(self.dataset), dtype=np.int64)
        if config.train_size is not None:
            train_idx = np.random.RandomState(config.split_seed).permutation(train_idx)[: config.train_size]
        self.train_set = torch.utils.data.Subset(self.dataset, train_idx.tolist())
        test_idx, val_idx = train_val_split(len(ds.test), config.val_size, config.split_seed)
        self.eval_sets = {"val": torch.utils.data.Subset(ds.test, val_idx.tolist()),
                          "test": torch.utils.data.Subset(ds.test, test_idx.tolist())}
        self.y_train = ds.train.labels[torch.as_tensor(train_idx)]
        self.y_val = ds.test.labels[torch.as_tensor(val_idx)].to(device)
        self.y_test = ds.test.labels[torch.as_tensor(test_idx)].to(device)
        self.input_shape = (3, imagenet.CROP, imagenet.CROP)

    def _loader(self, dataset, batch_size: int, sampler=None) -> torch.utils.data.DataLoader:
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=self.workers,
                                           pin_memory=self.pin, persistent_workers=False)

    def to_device(self, x: torch.Tensor) -> torch.Tensor:
        """A uint8 batch from the loader on the device, normalised (the copy does not wait)."""
        return normalize(x.to(self.device, non_blocking=True), self.mean, self.std)

    def batches(self, epoch: int, batch_size: int, generator=None):
        """Epoch ``epoch``'s training batches ``(x, y)`` on the device, in a shuffled order seeded
        by the run's seed and the epoch; ``generator`` (the device-resident path's) is unused."""
        self.dataset.set_epoch(epoch)
        order = torch.Generator().manual_seed(_epoch_seed(self.seed, epoch))
        sampler = torch.utils.data.RandomSampler(self.train_set, generator=order)
        for x, y in self._loader(self.train_set, batch_size, sampler):
            yield self.to_device(x), y.to(self.device, non_blocking=True)

    @torch.inference_mode()
    def logits(self, model, split: str, autocast, batch_size: int = 250) -> torch.Tensor:
        """Float32 logits of ``model`` (evaluation mode) on the ``"val"`` or ``"test"`` images,
        streamed in order and gathered on the device."""
        model.eval()
        out = []
        for x, _ in self._loader(self.eval_sets[split], batch_size):
            with autocast():
                out.append(model(self.to_device(x)).float())
        return torch.cat(out)
