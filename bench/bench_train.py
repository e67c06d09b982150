"""Training throughput, what a user of the papers' recipe feels: images per second of a training
step of the papers' CIFAR ResNet-50 (batch 128, 32×32×3 images, SGD with gradient clipping at
2, the loss summed over the batch), for two loops measured in the same process:

(a) a straightforward loop, as the reference code and most tutorials write it: a DataLoader over
    an in-memory data set whose ``__getitem__`` augments one image at a time on the CPU (pad-4
    random crop, flip, normalise), float32, eager, the default memory format, each batch copied
    to the device, the loss checked on every call and ``.item()`` of it read every step;
(b) calibnb's loop (:class:`calibnb.train.Trainer`): the data set resident on the device,
    augmentation batched there (``calibnb.data.augment``), the loss built with
    ``validate=False``, nothing read back in a step, and on a GPU bf16 autocast and
    channels_last (``--compile`` adds ``torch.compile``).

Prints both, their ratio, the host reads per step of each (:func:`calibnb.train.count_host_reads`),
and on a GPU the model-FLOPs utilisation of (b): the FLOPs of one step (counted by
``torch.utils.flop_counter.FlopCounterMode``) per second over the GPU's dense bf16 peak, and
the projected time of a 350-epoch CIFAR-10 run. On the CPU it runs a reduced size (batch 32,
3 steps) and says so. Usage: ``python bench/bench_train.py [--compile] [--steps N]
[--peak-tflops P]``.
"""

from __future__ import annotations

import argparse
import time
from contextlib import nullcontext

import torch
from torch.utils.flop_counter import FlopCounterMode

from calibnb.data import augment
from calibnb.losses import get_loss
from calibnb.models import get_model
from calibnb.train import count_host_reads, train_step

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)

#: Dense bf16 peak (FLOP/s, no sparsity) of GPUs by a part of their name, from the vendors' data
#: sheets; ``--peak-tflops`` gives any other.
BF16_PEAK = {"H200": 989e12, "H100 PCIe": 756e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12,
             "L4": 121e12, "A10": 125e12, "RTX 4090": 165e12}


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


def _setup(device, channels_last=False, validate=True):
    torch.manual_seed(0)
    model = get_model("resnet50", 10).to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    return model, optimizer, get_loss("cross_entropy", reduction="sum", validate=validate)


def straightforward(images, labels, device, batch, steps, workers) -> tuple[float, int]:
    """Loop (a): images/s and host reads per step."""
    model, optimizer, loss_fn = _setup(device)
    loader = torch.utils.data.DataLoader(
        PerImageDataset(images, labels), batch_size=batch, shuffle=True, num_workers=workers,
        pin_memory=device.type == "cuda", drop_last=True,
    )
    batches = iter(loader)

    def step(x, y):
        loss, _ = train_step(model, loss_fn, optimizer, x.to(device), y.to(device), grad_clip=2.0)
        return loss.item()  # the running loss, read as most loops log it

    step(*next(batches))  # warm-up (allocations, cudnn autotune)
    x, y = next(batches)  # the DataLoader's per-image reads are on the host: not counted
    with count_host_reads() as reads:
        step(x, y)
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step(*next(batches))
    _sync(device)
    return steps * batch / (time.perf_counter() - start), reads.total


def calibnb_loop(images, labels, device, batch, steps, compile_model) -> tuple[float, int, float]:
    """Loop (b): images/s, host reads per step and FLOPs per step."""
    gpu = device.type == "cuda"
    model, optimizer, loss_fn = _setup(device, channels_last=gpu, validate=False)
    step_model = torch.compile(model) if compile_model else model
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if gpu else nullcontext
    x_all, y_all = images.to(device), labels.to(device)
    generator = torch.Generator(device=device).manual_seed(0)
    order = torch.randperm(len(y_all), generator=generator, device=device).split(batch)
    running = torch.zeros((), device=device)

    def step(idx, model=step_model):
        x = augment(x_all[idx], MEAN, STD, generator=generator)
        loss, _ = train_step(model, loss_fn, optimizer, x, y_all[idx], autocast, gpu, grad_clip=2.0)
        running.add_(loss)  # summed on the device, read once at the end

    for idx in order[:3]:  # warm-up (compilation, autotune)
        step(idx)
    with count_host_reads() as reads:
        step(order[3])
    with FlopCounterMode(display=False) as flops:
        step(order[4], model)  # eager: the counter sees the operators themselves
    _sync(device)
    start = time.perf_counter()
    for idx in order[5 : 5 + steps]:
        step(idx)
    _sync(device)
    seconds = time.perf_counter() - start
    assert torch.isfinite(running), "the running loss is not finite"
    return steps * batch / seconds, reads.total, flops.get_total_flops()


def peak_flops(name: str, override: float | None) -> float | None:
    if override is not None:
        return override * 1e12
    return next((peak for key, peak in BF16_PEAK.items() if key in name), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compile", action="store_true", help="torch.compile the model in loop (b)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default 50 on a GPU, 3 on the CPU)")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the GPU's dense bf16 peak, if not known")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.type == "cuda"
    batch, steps = (128, 50) if gpu else (32, 3)
    steps = args.steps or steps
    n = batch * (steps + 7)
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8)
    labels = torch.randint(0, 10, (n,))
    name = torch.cuda.get_device_name() if gpu else f"CPU, {torch.get_num_threads()} threads"
    size = "" if gpu else " (reduced size for the CPU: the papers' batch is 128)"
    print(f"ResNet-50 (CIFAR) training step on {name}, torch {torch.__version__}, batch {batch}, "
          f"{steps} timed steps{size}")
    slow, slow_reads = straightforward(images, labels, device, batch, steps, workers=4 if gpu else 0)
    fast, fast_reads, flops = calibnb_loop(images, labels, device, batch, steps, args.compile)
    extras = ", bf16, channels_last" if gpu else ""
    extras += ", torch.compile" if args.compile else ""
    print(f"  (a) straightforward loop (per-image CPU augmentation, fp32, .item() each step): "
          f"{slow:9.1f} img/s, {slow_reads} host reads per step")
    print(f"  (b) calibnb loop (device-resident batched augmentation, validate=False{extras}): "
          f"{fast:9.1f} img/s, {fast_reads} host reads per step")
    print(f"  ratio (b) / (a): {fast / slow:.2f}")
    achieved = flops / batch * fast
    print(f"  (b) {flops / batch / 1e9:.2f} GFLOP per image per step, {achieved / 1e12:.2f} TFLOP/s achieved")
    if gpu:
        peak = peak_flops(name, args.peak_tflops)
        if peak is None:
            print("  model-FLOPs utilisation: unknown bf16 peak for this GPU (give --peak-tflops)")
        else:
            print(f"  model-FLOPs utilisation of (b): {achieved / peak:.1%} of the {peak / 1e12:.0f} TFLOP/s bf16 peak")
        hours = 350 * 45_000 / fast / 3600
        print(f"  projected 350-epoch CIFAR-10 run: {hours:.1f} h (straightforward loop {350 * 45_000 / slow / 3600:.1f} h)")


if __name__ == "__main__":
    main()
