"""Training throughput: calibnb's loop against a loop written like the reference code.

ResNet-50 (the papers' CIFAR variant) on CIFAR-shaped random uint8 images, batch 128 on a GPU
(32 on the CPU, to keep the bench short), the papers' SGD step with gradient clipping at 2.

- baseline, as in ``torrvision/focal_calibration``: a DataLoader over an in-memory data set
  whose ``__getitem__`` augments one image at a time on the CPU (pad-4 random crop, flip,
  normalise), float32, default memory format, each batch copied to the device;
- calibnb: the data resident on the device, augmentation as batched tensor ops there
  (``calibnb.data.augment``), and ``calibnb.train.train_step`` with bf16 autocast and
  channels_last on a GPU.

Prints images/s of both and their ratio, and on a GPU the projected time of a 350-epoch
CIFAR-10 run (45 000 training images per epoch).
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import torch

from calibnb.data import augment
from calibnb.losses import get_loss
from calibnb.models import get_model
from calibnb.train import train_step

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)


class PerImageDataset(torch.utils.data.Dataset):
    """The reference's transform pipeline, one image per ``__getitem__`` call."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor):
        self.images, self.labels = images, labels
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i):
        padded = torch.nn.functional.pad(self.images[i].float() / 255, (4, 4, 4, 4))
        top, left = torch.randint(0, 9, (2,)).tolist()
        image = padded[:, top : top + 32, left : left + 32]
        if torch.rand(()) < 0.5:
            image = image.flip(-1)
        return (image - self.mean) / self.std, self.labels[i]


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def _setup(device, channels_last=False):
    torch.manual_seed(0)
    model = get_model("resnet50", 10).to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    return model, optimizer, get_loss("cross_entropy", reduction="sum")


def baseline(images, labels, device, batch, steps, workers) -> float:
    model, optimizer, loss_fn = _setup(device)
    loader = torch.utils.data.DataLoader(
        PerImageDataset(images, labels), batch_size=batch, shuffle=True, num_workers=workers,
        pin_memory=device.type == "cuda", drop_last=True,
    )
    batches = iter(loader)
    x, y = next(batches)  # warm-up step (allocations, cudnn autotune)
    train_step(model, loss_fn, optimizer, x.to(device), y.to(device), grad_clip=2.0)
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        x, y = next(batches)
        train_step(model, loss_fn, optimizer, x.to(device), y.to(device), grad_clip=2.0)
    _sync(device)
    return steps * batch / (time.perf_counter() - start)


def calibnb_loop(images, labels, device, batch, steps) -> float:
    gpu = device.type == "cuda"
    model, optimizer, loss_fn = _setup(device, channels_last=gpu)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if gpu else nullcontext
    x_all, y_all = images.to(device), labels.to(device)
    generator = torch.Generator(device=device).manual_seed(0)
    order = torch.randperm(len(y_all), generator=generator, device=device).split(batch)

    def step(idx):
        x = augment(x_all[idx], MEAN, STD, generator=generator)
        train_step(model, loss_fn, optimizer, x, y_all[idx], autocast, gpu, grad_clip=2.0)

    step(order[0])
    _sync(device)
    start = time.perf_counter()
    for idx in order[1 : steps + 1]:
        step(idx)
    _sync(device)
    return steps * batch / (time.perf_counter() - start)


def main() -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batch, steps = (128, 50) if device.type == "cuda" else (32, 3)
    n = batch * (steps + 2)
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8)
    labels = torch.randint(0, 10, (n,))
    workers = 4 if device.type == "cuda" else 0
    name = torch.cuda.get_device_name() if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"ResNet-50 training throughput on {name}, batch {batch}, {steps} timed steps")
    slow = baseline(images, labels, device, batch, steps, workers)
    fast = calibnb_loop(images, labels, device, batch, steps)
    print(f"  reference-style loop (per-image CPU augmentation, float32): {slow:9.1f} img/s")
    print(f"  calibnb loop (device-resident batched augmentation{', bf16, channels_last' if device.type == 'cuda' else ''}): {fast:9.1f} img/s")
    print(f"  ratio calibnb / reference-style: {fast / slow:.2f}")
    if device.type == "cuda":
        hours = 350 * 45_000 / fast / 3600
        print(f"  projected 350-epoch CIFAR-10 run: {hours:.1f} h (reference-style {350 * 45_000 / slow / 3600:.1f} h)")


if __name__ == "__main__":
    main()
