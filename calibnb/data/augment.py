"""Batched augmentation and normalisation: whole batches as tensor ops, on the batch's device.

The papers' training transform (``torrvision/focal_calibration``, ``Data/cifar10.py``) is
``RandomCrop(32, padding=4)`` → ``RandomHorizontalFlip()`` → ``ToTensor()`` → ``Normalize``,
applied image by image in DataLoader workers. Here each step acts on a whole batch
``(N, C, H, W)`` at once, with the random draws taken from a ``torch.Generator`` on the batch's
device, so a GPU run keeps its data resident and never loops over images in Python. The
distribution is the same: every image gets an independent, uniform crop offset in
``{0, …, 2·padding}²`` of its zero-padded self and is flipped with probability 1/2.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from .._validation import check_int


def _check_batch(x: torch.Tensor, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"{name} must be a batch of images (N, C, H, W), got {tuple(x.shape)}")


def random_crop(
    x: torch.Tensor, padding: int = 4, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Crop every image of ``x`` at a random offset of its ``padding``-wide zero border.

    Equivalent to torchvision's ``RandomCrop(size=(H, W), padding=padding)`` (constant fill 0,
    i.e. black in pixel space: apply it *before* :func:`normalize`), drawn independently per image.
    """
    _check_batch(x)
    padding = check_int(padding, "padding", minimum=0)
    if padding == 0:
        return x
    n, _, h, w = x.shape
    offsets = torch.randint(0, 2 * padding + 1, (2, n), generator=generator, device=x.device)
    # every crop of every padded image, as a strided view (N, C, 2p+1, 2p+1, H, W): no copy
    crops = F.pad(x, (padding, padding, padding, padding)).unfold(2, h, 1).unfold(3, w, 1)
    return crops[torch.arange(n, device=x.device), :, offsets[0], offsets[1]]


def random_hflip(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Mirror each image of ``x`` left-right with probability 1/2 (``RandomHorizontalFlip``)."""
    _check_batch(x)
    flip = torch.rand(x.shape[0], generator=generator, device=x.device) < 0.5
    return torch.where(flip[:, None, None, None], x.flip(-1), x)


def normalize(
    x: torch.Tensor,
    mean: Sequence[float],
    std: Sequence[float],
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``(x - mean) / std`` per channel (dimension 1), as a floating tensor of ``dtype``.

    ``uint8`` inputs are first scaled to ``[0, 1]`` by 1/255, as torchvision's ``ToTensor``
    does; floating inputs are used as they are. Works for images ``(N, C, H, W)`` and signals
    ``(N, C, L)``.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"x must have a channel dimension (N, C, ...), got shape {tuple(x.shape)}")
    mean, std = tuple(float(m) for m in mean), tuple(float(s) for s in std)
    if len(mean) != x.shape[1] or len(std) != x.shape[1]:
        raise ValueError(
            f"mean and std must hold one value per channel ({x.shape[1]}), "
            f"got {len(mean)} and {len(std)}"
        )
    if not all(s > 0 for s in std):
        raise ValueError(f"std must be positive, got {std}")
    work = dtype if dtype == torch.float64 else torch.float32  # float32 at least
    shift, scale = _affine(mean, std, x.dtype == torch.uint8, x.ndim, x.device, work)
    return torch.addcmul(shift, x.to(work), scale).to(dtype)


@functools.lru_cache(maxsize=64)
def _affine(mean, std, from_uint8, ndim, device, dtype):
    """``(-mean/std, 1/(255·std))`` shaped for broadcasting, built once per device (no copies
    to the GPU, hence no host synchronisation, on later calls)."""
    shape = (1, -1) + (1,) * (ndim - 2)
    mean_t = torch.tensor(mean, dtype=torch.float64)
    std_t = torch.tensor(std, dtype=torch.float64)
    shift = (-mean_t / std_t).view(shape)
    scale = (1 / (std_t * (255 if from_uint8 else 1))).view(shape)
    return shift.to(device=device, dtype=dtype), scale.to(device=device, dtype=dtype)


def augment(
    x: torch.Tensor,
    mean: Sequence[float],
    std: Sequence[float],
    padding: int = 4,
    flip: bool = True,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The papers' training transform on a batch: random crop, horizontal flip, normalise.

    ``padding=0`` and ``flip=False`` turn the random parts off (the evaluation transform is
    :func:`normalize` alone).
    """
    x = random_crop(x, padding, generator)
    if flip:
        x = random_hflip(x, generator)
    return normalize(x, mean, std, dtype)
