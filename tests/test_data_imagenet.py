"""ImageNet streamed from a small tree in torchvision's ImageFolder layout (written by Pillow):
the index and its checks, the standard 224 pipeline against Pillow's own crop and resize, and
batches from DataLoader worker processes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from calibnb.data.imagenet import (CROP, RATIO, SCALE, ImageNetImages, eval_image, index_image_folder,
                                   random_resized_box, train_image)

WNIDS = ("n01440764", "n01443537", "n15075141")


def write_image(path, size, mode="RGB", fmt="JPEG", seed=0):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 4 if mode == "CMYK" else 3), dtype=np.uint8)
    image = Image.fromarray(pixels[..., 0], "L") if mode == "L" else Image.fromarray(pixels, mode)
    image.save(path, fmt)


@pytest.fixture
def tree(tmp_path):
    """Three classes (unsorted on disk) of a few images each in train/ and val/: sizes vary, one
    greyscale, one CMYK JPEG and one PNG under a .JPEG name, as in the published training set."""
    for split, per_class in (("train", 3), ("val", 2)):
        for c, wnid in enumerate(reversed(WNIDS)):
            folder = tmp_path / split / wnid
            folder.mkdir(parents=True)
            for i in range(per_class):
                name = f"{wnid}_{i}.JPEG" if split == "train" else f"ILSVRC2012_val_{c}{i:07d}.JPEG"
                write_image(folder / name, (300 + 20 * i, 240 + 10 * c), seed=10 * c + i)
    write_image(tmp_path / "train" / WNIDS[0] / f"{WNIDS[0]}_1.JPEG", (200, 150), mode="L")
    write_image(tmp_path / "train" / WNIDS[1] / f"{WNIDS[1]}_2.JPEG", (260, 260), mode="CMYK")
    write_image(tmp_path / "train" / WNIDS[2] / f"{WNIDS[2]}_0.JPEG", (250, 300), fmt="PNG")
    return tmp_path


def test_the_index_follows_image_folder_order(tree):
    paths, labels, wnids = index_image_folder(tree, "train", verify=False)
    assert wnids == WNIDS and labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [p.name for p in paths[:3]] == [f"{WNIDS[0]}_{i}.JPEG" for i in range(3)]
    paths, labels, _ = index_image_folder(tree, "val", verify=False)
    assert len(paths) == 6 and labels.tolist() == [0, 0, 1, 1, 2, 2]


def test_the_index_refuses_by_name(tree):
    with pytest.raises(ValueError, match=f"{tree / 'train'} holds 3 classes and 9 images; the published"):
        index_image_folder(tree, "train")
    with pytest.raises(FileNotFoundError, match="ImageNet's train images go in"):
        index_image_folder(tree / "nowhere", "train", verify=False)
    with pytest.raises(ValueError, match="split must be one of"):
        index_image_folder(tree, "test", verify=False)
    stray = tree / "train" / WNIDS[1] / "labels.txt"
    stray.write_text("cat")
    with pytest.raises(ValueError, match=f"{stray} is not an image of {WNIDS[1]}"):
        index_image_folder(tree, "train", verify=False)
    stray.unlink()
    (tree / "train" / "cats").mkdir()
    with pytest.raises(ValueError, match=f"{tree / 'train' / 'cats'} is not a class folder"):
        index_image_folder(tree, "train", verify=False)
    (tree / "train" / "cats").rmdir()
    (tree / "train" / "n00000001").mkdir()
    with pytest.raises(ValueError, match=f"{tree / 'train' / 'n00000001'} holds no image"):
        index_image_folder(tree, "train", verify=False)


@pytest.mark.parametrize("size", [(300, 240), (500, 100), (100, 500), (10, 1000), (224, 224)])
def test_random_resized_boxes_follow_random_resized_crop(size):
    width, height = size
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        left, top, w, h = random_resized_box(width, height, generator)
        assert 0 <= left and left + w <= width and 0 <= top and top + h <= height and w > 0 and h > 0
        fallback = w == width or h == height
        if not fallback:  # a drawn box: area share and ratio within the ranges (up to rounding)
            assert SCALE[0] * 0.95 <= w * h / (width * height) <= SCALE[1]
            assert RATIO[0] * 0.9 <= w / h <= RATIO[1] * 1.1
    if size == (10, 1000):  # nothing fits ten times: the central crop of the closest ratio, 3/4
        assert random_resized_box(width, height, torch.Generator().manual_seed(1)) == (0, 493, 10, 13)


def test_the_training_transform_is_a_resized_crop_then_a_flip(tree):
    path = tree / "train" / WNIDS[0] / f"{WNIDS[0]}_0.JPEG"
    image = Image.open(path).convert("RGB")
    flipped = 0
    for seed in range(8):
        out = train_image(path, torch.Generator().manual_seed(seed))
        generator = torch.Generator().manual_seed(seed)
        left, top, w, h = random_resized_box(image.width, image.height, generator)
        expected = np.asarray(image.resize((CROP, CROP), Image.BILINEAR, box=(left, top, left + w, top + h)))
        expected = torch.from_numpy(expected.copy()).permute(2, 0, 1)
        flip = bool(torch.rand((), generator=generator) < 0.5)
        assert out.shape == (3, 224, 224) and out.dtype == torch.uint8
        torch.testing.assert_close(out, expected.flip(-1) if flip else expected, rtol=0, atol=0)
        flipped += flip
    assert 0 < flipped < 8


def test_the_evaluation_transform_resizes_the_shorter_side_then_crops_the_centre(tree):
    path = tree / "val" / WNIDS[2] / "ILSVRC2012_val_00000001.JPEG"  # 320×240
    image = Image.open(path).convert("RGB")
    resized = image.resize((int(320 * 256 / 240), 256), Image.BILINEAR)  # 341×256
    left = round((resized.width - 224) / 2)
    expected = np.asarray(resized.crop((left, 16, left + 224, 240))).transpose(2, 0, 1)
    np.testing.assert_array_equal(eval_image(path).numpy(), expected)


def test_worker_processes_stream_batches_and_every_published_oddity_decodes(tree):
    train = ImageNetImages(tree, "train", train=True, verify=False, seed=3)
    loader = torch.utils.data.DataLoader(train, batch_size=9, num_workers=2)
    (x, y), = list(loader)
    assert x.shape == (9, 3, 224, 224) and x.dtype == torch.uint8 and y.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    torch.testing.assert_close(x[4], train[4][0], rtol=0, atol=0)  # the same crop in any process
    train.set_epoch(1)
    assert not torch.equal(train[4][0], x[4])  # a new epoch draws new crops
    grey = x[1]  # the greyscale JPEG: its channel repeated
    assert torch.equal(grey[0], grey[1]) and torch.equal(grey[1], grey[2])
    val = ImageNetImages(tree, "val", train=False, verify=False)
    assert torch.equal(val[3][0], eval_image(val.paths[3])) and val[3][1].item() == 1 and len(val) == 6


def test_an_image_that_does_not_decode_is_named(tree):
    bad = tree / "val" / WNIDS[1] / "ILSVRC2012_val_10000000.JPEG"
    bad.write_bytes(b"\xff\xd8\xff truncated")
    val = ImageNetImages(tree, "val", train=False, verify=False)
    with pytest.raises(ValueError, match=f"{bad} is not an ImageNet image"):
        val[2]


def test_load_dataset_streams_imagenet_from_root_or_its_folder(tree, tmp_path_factory):
    """``load_dataset("imagenet")``: the tree at ``root`` (or ``root/imagenet``) as a
    :class:`StreamedDataset`, training crops and evaluation crops, the published counts refused
    unless ``verify=False``, nothing decoded until an item is read."""
    from calibnb.data import StreamedDataset, load_dataset

    with pytest.raises(ValueError, match="holds 3 classes and 9 images; the published ILSVRC-2012 train"):
        load_dataset("imagenet", root=tree)
    ds = load_dataset("imagenet", root=tree, verify=False)
    assert isinstance(ds, StreamedDataset) and ds.classes == WNIDS and ds.num_classes == 3
    assert (len(ds.train), len(ds.test)) == (9, 6) and ds.train.train and not ds.test.train
    assert ds.mean == (0.485, 0.456, 0.406) and ds.info["folder"] == str(tree)
    x, y = ds.test[5]
    assert x.shape == (3, CROP, CROP) and x.dtype == torch.uint8 and int(y) == 2
    assert ds.test.labels.tolist() == [0, 0, 1, 1, 2, 2]
    nested = tmp_path_factory.mktemp("data")
    (nested / "imagenet").symlink_to(tree)
    assert load_dataset("imagenet", root=nested, verify=False).info["folder"] == str(nested / "imagenet")


def test_load_dataset_imagenet_refuses_a_missing_split_or_mismatched_classes(tree, tmp_path, monkeypatch):
    from calibnb.data import load_dataset

    monkeypatch.delenv("CALIBNB_DATA", raising=False)
    monkeypatch.setattr("calibnb.data.fetch.cache_dir", lambda: tmp_path / "no-cache")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=r"(?s)could not find train/, val/.*image-net.org"):
        load_dataset("imagenet", root=empty)
    with pytest.raises(FileNotFoundError, match="torchvision has no ImageNet"):
        load_dataset("imagenet", root=empty, download=True)
    extra = tree / "val" / "n09999999"
    extra.mkdir()
    write_image(extra / "ILSVRC2012_val_99999999.JPEG", (240, 240))
    with pytest.raises(ValueError, match=r"hold different class folders \(n09999999 in one only\)"):
        load_dataset("imagenet", root=tree, verify=False)
