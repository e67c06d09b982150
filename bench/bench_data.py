"""Data-side speed: batched tensor augmentation vs a per-image DataLoader pipeline (CPU).

The baseline is written like the reference code's input pipeline (``torrvision/focal_calibration``
``Data/cifar10.py``): a ``Dataset`` whose ``__getitem__`` applies RandomCrop(32, padding=4),
RandomHorizontalFlip, ToTensor and Normalize to one HWC uint8 image, batched by a ``DataLoader``
(batch 128, shuffled, collated). torchvision is not installed here, so its transforms are
mimicked with numpy/torch per image. calibnb's path indexes the uint8 ``(N, C, H, W)`` tensor with
a shuffled batch of indices and calls :func:`calibnb.data.augment` on the whole batch.

Also prints the projected seconds per Fashion-MNIST epoch (60 000 images, batch 128) of the
small CPU nets, trained with SGD on random tensors of the right shape.
"""

from __future__ import annotations

import random
import time

import numpy as np
import torch
import torch.nn.functional as F

from calibnb.data import augment
from calibnb.models import get_model

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
BATCH = 128


class PerImageCifar(torch.utils.data.Dataset):
    """One image at a time, as torchvision's transforms.Compose would process it."""

    def __init__(self, images_hwc: np.ndarray, labels: np.ndarray):
        self.images, self.labels = images_hwc, labels
        self.mean = np.array(MEAN, dtype=np.float32)[:, None, None]
        self.std = np.array(STD, dtype=np.float32)[:, None, None]

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i):
        img = np.pad(self.images[i], ((4, 4), (4, 4), (0, 0)))  # RandomCrop(32, padding=4)
        top, left = random.randint(0, 8), random.randint(0, 8)
        img = img[top:top + 32, left:left + 32]
        if random.random() < 0.5:  # RandomHorizontalFlip
            img = img[:, ::-1]
        chw = img.transpose(2, 0, 1).astype(np.float32) / 255  # ToTensor
        return torch.from_numpy((chw - self.mean) / self.std), int(self.labels[i])  # Normalize


def images_per_second(run, n_images: int) -> float:
    run()  # warm-up
    start = time.perf_counter()
    run()
    return n_images / (time.perf_counter() - start)


def augmentation_speed(n: int = 5_000) -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, n)
    loader = torch.utils.data.DataLoader(
        PerImageCifar(images, labels), batch_size=BATCH, shuffle=True, num_workers=0
    )

    def baseline():
        for x, y in loader:
            pass

    x_all = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
    y_all = torch.from_numpy(labels)
    g = torch.Generator().manual_seed(0)

    def batched():
        order = torch.randperm(n, generator=g)
        for i in range(0, n, BATCH):
            idx = order[i:i + BATCH]
            x, y = augment(x_all[idx], MEAN, STD, generator=g), y_all[idx]

    base, ours = images_per_second(baseline, n), images_per_second(batched, n)
    print(f"augmentation, CIFAR-shaped uint8, batch {BATCH}, {torch.get_num_threads()} threads")
    print(f"  per-image DataLoader baseline : {base:10.0f} img/s")
    print(f"  calibnb batched augment       : {ours:10.0f} img/s")
    print(f"  ratio                         : {ours / base:10.1f}x")


def small_net_epoch_time(steps: int = 20) -> None:
    print(
        f"small CPU nets, Fashion-MNIST-shaped batches of {BATCH}, projected to 60 000 images, "
        f"{torch.get_num_threads()} threads"
    )
    torch.manual_seed(0)
    x, y = torch.randn(steps * BATCH, 1, 28, 28), torch.randint(0, 10, (steps * BATCH,))
    for name, kwargs in [("mlp", {"in_features": 784}), ("small_cnn", {})]:
        model = get_model(name, 10, **kwargs)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def epoch_slice():
            for i in range(0, len(y), BATCH):
                loss = F.cross_entropy(model(x[i:i + BATCH]), y[i:i + BATCH], reduction="sum")
                opt.zero_grad()
                loss.backward()
                opt.step()

        rate = images_per_second(epoch_slice, len(y))
        print(f"  {name:10s}: {rate:8.0f} img/s, {60_000 / rate:6.1f} s per epoch")


def main() -> None:
    # Both settings are printed: on a machine whose cores are busy with other work, intra-op
    # threads wait on each other and a single thread is the faster (and steadier) setting.
    for threads in sorted({1, torch.get_num_threads()}):
        torch.set_num_threads(threads)
        augmentation_speed()
        small_net_epoch_time()


if __name__ == "__main__":
    main()
