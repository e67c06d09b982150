"""ImageNet (ILSVRC-2012) read from disk as torchvision's ``ImageNet``/``ImageFolder`` lays it out,
image by image, with the standard 224×224 pipeline.

The layout (what ``torchvision.datasets.ImageNet`` leaves after extracting the official archives,
and what most clusters hold)::

    <root>/train/<wnid>/<wnid>_<i>.JPEG     1,281,167 images, 732 to 1,300 a class
    <root>/val/<wnid>/ILSVRC2012_val_<j>.JPEG   50,000 images, 50 a class

with 1,000 class folders named by WordNet id. Labels are the wnids' positions in sorted order,
as ``ImageFolder`` numbers them. torchvision's ``meta.bin`` (a pickle) is never read.

The data set does not fit in memory (about 140 GB of JPEGs), so it is streamed: :class:`ImageNetImages`
is a ``torch.utils.data.Dataset`` whose items are decoded by Pillow in the DataLoader's worker
processes and returned as ``(3, 224, 224)`` uint8 tensors; normalisation (ImageNet's mean and
standard deviation, :data:`calibnb.data.datasets.IMAGENET_MEAN`) happens on the training device,
as for the device-resident data sets. The pipeline is the standard one (He et al. 2016, and
torchvision's reference training script):

- training: a random crop of 8 % to 100 % of the image's area with aspect ratio in [3/4, 4/3]
  (log-uniform), resized to 224×224 (bilinear), flipped left-right with probability 1/2
  (:func:`random_resized_box`, the sampling rule of torchvision's ``RandomResizedCrop``: ten
  tries, then the central crop of the closest allowed ratio);
- evaluation: the shorter side resized to 256 (bilinear), then the central 224×224.

Checks (:func:`index_image_folder`): the split's folder exists, every class folder is a wnid
holding at least one image, nothing else lies there (a stray file is named); ``verify=True``
requires the published counts (1,000 classes; 1,281,167 training and 50,000 validation images),
since no checksum of the extracted files is published. An image that does not decode is a
``ValueError`` naming it, raised in the worker that reads it. A few published training images
are PNGs or CMYK JPEGs under a ``.JPEG`` name; both decode, to RGB.

The training loop's streaming mode, which would draw its batches from these workers, is not
written yet (issue 29).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import torch

from .readers import reading

#: The published counts that ``verify=True`` requires.
N_CLASSES = 1000
N_IMAGES = {"train": 1_281_167, "val": 50_000}
#: The standard pipeline's sizes: evaluation resizes the shorter side to RESIZE, both crop CROP.
RESIZE, CROP = 256, 224
#: ``RandomResizedCrop``'s defaults: the crop's share of the image's area, and its aspect ratio.
SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)
SPLITS = ("train", "val")

_WNID = re.compile(r"n\d{8}")
_IMAGE = re.compile(r".+\.(JPEG|jpeg|jpg|JPG)")


def index_image_folder(root: str | os.PathLike, split: str, verify: bool = True) -> tuple[list[Path], np.ndarray, tuple[str, ...]]:
    """The images of ``root/split`` in ``ImageFolder``'s order: ``(paths, labels, wnids)``, classes
    in sorted order and files sorted by name within a class.

    Raises ``FileNotFoundError`` when ``root/split`` is missing and ``ValueError`` naming the
    folder or file when a class folder is not a wnid, is empty, or holds something that is not an
    image, or (``verify=True``) when the counts are not the published ones.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    folder = Path(root).expanduser() / split
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is missing: ImageNet's {split} images go in <root>/{split}/<wnid>/ "
                                "(torchvision's ImageNet layout)")
    wnids = sorted(entry.name for entry in os.scandir(folder))
    paths, labels = [], []
    for label, wnid in enumerate(wnids):
        path = folder / wnid
        if not path.is_dir() or not _WNID.fullmatch(wnid):
            raise ValueError(f"{path} is not a class folder (named by a WordNet id, n followed by 8 digits)")
        files = sorted(entry.name for entry in os.scandir(path))
        if not files:
            raise ValueError(f"{path} holds no image")
        for name in files:
            if not _IMAGE.fullmatch(name):
                raise ValueError(f"{path / name} is not an image of {wnid} (a .JPEG file)")
            paths.append(path / name)
            labels.append(label)
    if not wnids:
        raise ValueError(f"{folder} holds no class folder")
    if verify and (len(wnids), len(paths)) != (N_CLASSES, N_IMAGES[split]):
        raise ValueError(f"{folder} holds {len(wnids)} classes and {len(paths)} images; the published ILSVRC-2012 "
                         f"{split} set has {N_CLASSES} and {N_IMAGES[split]} (pass verify=False for a subset)")
    return paths, np.asarray(labels, dtype=np.int64), tuple(wnids)


def random_resized_box(width: int, height: int, generator: torch.Generator) -> tuple[int, int, int, int]:
    """``(left, top, crop_width, crop_height)`` of a random crop covering a share of the image's
    area drawn uniformly from :data:`SCALE`, with an aspect ratio drawn log-uniformly from
    :data:`RATIO`; after ten tries that do not fit, the central crop of the ratio closest to the
    image's own (torchvision's ``RandomResizedCrop.get_params``)."""
    area = width * height
    log_ratio = (math.log(RATIO[0]), math.log(RATIO[1]))
    for _ in range(10):
        draws = torch.rand(4, generator=generator, dtype=torch.float64).tolist()
        target = area * (SCALE[0] + (SCALE[1] - SCALE[0]) * draws[0])
        ratio = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * draws[1])
        w, h = round(math.sqrt(target * ratio)), round(math.sqrt(target / ratio))
        if 0 < w <= width and 0 < h <= height:
            return int(draws[2] * (width - w + 1)), int(draws[3] * (height - h + 1)), w, h
    own = width / height
    if own < RATIO[0]:
        w, h = width, round(width / RATIO[0])
    elif own > RATIO[1]:
        w, h = round(height * RATIO[1]), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def _open_rgb(path: Path):
    from PIL import Image

    with reading(path, "an ImageNet image (JPEG, or one of the published PNGs)"):
        with Image.open(path, formats=["JPEG", "PNG"]) as image:
            return image.convert("RGB")


def train_image(path: Path, generator: torch.Generator) -> torch.Tensor:
    """The training transform of one image: a random resized 224×224 crop, flipped with
    probability 1/2, as a ``(3, 224, 224)`` uint8 tensor."""
    from PIL import Image

    image = _open_rgb(path)
    left, top, w, h = random_resized_box(image.width, image.height, generator)
    crop = image.resize((CROP, CROP), Image.BILINEAR, box=(left, top, left + w, top + h))
    pixels = torch.from_numpy(np.asarray(crop, dtype=np.uint8).copy()).permute(2, 0, 1)
    return pixels.flip(-1) if torch.rand((), generator=generator) < 0.5 else pixels


def eval_image(path: Path) -> torch.Tensor:
    """The evaluation transform of one image: the shorter side resized to 256, the central
    224×224, as a ``(3, 224, 224)`` uint8 tensor."""
    from PIL import Image

    image = _open_rgb(path)
    scale = RESIZE / min(image.width, image.height)
    size = (RESIZE, int(image.height * scale)) if image.width <= image.height else (int(image.width * scale), RESIZE)
    resized = image.resize(size, Image.BILINEAR)
    left, top = round((size[0] - CROP) / 2), round((size[1] - CROP) / 2)
    crop = resized.crop((left, top, left + CROP, top + CROP))
    return torch.from_numpy(np.asarray(crop, dtype=np.uint8).copy()).permute(2, 0, 1)


class ImageNetImages(torch.utils.data.Dataset):
    """One split of an ImageNet folder as a streamed data set of ``(image, label)``: images
    ``(3, 224, 224)`` uint8, decoded where the item is read (a DataLoader's worker).

    ``train=True`` applies the random training transform, drawn from a generator seeded by
    ``seed``, the item's index and ``epoch`` (:meth:`set_epoch`), so an item's crop does not
    depend on which worker reads it; ``train=False`` the evaluation transform.
    """

    def __init__(self, root: str | os.PathLike, split: str, *, train: bool, verify: bool = True, seed: int = 0):
        self.paths, labels, self.classes = index_image_folder(root, split, verify)
        self.labels = torch.from_numpy(labels)
        self.train, self.seed, self.epoch = train, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Draw the next epoch's crops and flips."""
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        path = self.paths[index]
        if self.train:
            state = np.random.SeedSequence([self.seed, self.epoch, index]).generate_state(1, np.uint64)[0]
            generator = torch.Generator().manual_seed(int(state) >> 1)
            return train_image(path, generator), self.labels[index]
        return eval_image(path), self.labels[index]
