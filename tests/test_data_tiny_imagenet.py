"""Tiny-ImageNet read from small trees in the published layout (``tests/data_files.py``
writes them with Pillow): labels, order, the papers' fixed split, and each damaged file refused
by name."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from data_files import write_tiny_imagenet
from PIL import Image

from calibnb.data import DATASETS, load_dataset
from calibnb.data.datasets import IMAGENET_MEAN, IMAGENET_STD
from calibnb.data.tiny_imagenet import VAL_FROM
from calibnb.train.loop import split_of

NUMBERS = (0, 1, 2, 450, 451)


@pytest.fixture
def tree(tmp_path):
    folder, wnids = write_tiny_imagenet(tmp_path, np.random.default_rng(0), train_numbers=NUMBERS)
    return tmp_path, folder, wnids


def decoded(path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB")).transpose(2, 0, 1)


def test_a_published_layout_loads_class_by_class_with_the_papers_split(tree):
    root, folder, wnids = tree
    ds = load_dataset("tiny_imagenet", root=root, verify=False)
    assert "tiny_imagenet" in DATASETS and ds.classes == tuple(wnids) and ds.num_classes == 3
    assert ds.x_train.shape == (15, 3, 64, 64) and ds.x_train.dtype == torch.uint8
    assert ds.y_train.tolist() == [c for c in range(3) for _ in NUMBERS]  # sorted wnids, then numbers
    first = folder / "train" / wnids[1] / "images" / f"{wnids[1]}_450.JPEG"
    np.testing.assert_array_equal(ds.x_train[5 + 3].numpy(), decoded(first))
    grey = ds.x_train[5].numpy()  # each class's image 0 is a greyscale JPEG: its channel repeated
    np.testing.assert_array_equal(grey[0], grey[1]) and np.testing.assert_array_equal(grey[0], grey[2])
    assert ds.val_idx.tolist() == [c * 5 + k for c in range(3) for k in (3, 4)]  # numbers >= VAL_FROM
    assert VAL_FROM == 450
    # the published validation set is the test set, in the annotations' order
    lines = (folder / "val" / "val_annotations.txt").read_text().splitlines()
    assert ds.y_test.tolist() == [wnids.index(line.split("\t")[1]) for line in lines]
    np.testing.assert_array_equal(ds.x_test[4].numpy(), decoded(folder / "val" / "images" / "val_4.JPEG"))
    assert (ds.mean, ds.std) == (IMAGENET_MEAN, IMAGENET_STD) and ds.info["folder"] == str(folder)


def test_the_training_split_is_the_fixed_one_and_val_size_must_match_it(tree):
    root, _, _ = tree
    ds = load_dataset("tiny_imagenet", root=root, verify=False)
    train_idx, val_idx = split_of(ds, 6, split_seed=7)
    assert sorted(train_idx.tolist() + val_idx.tolist()) == list(range(15))
    assert val_idx.tolist() == ds.val_idx.tolist()  # fixed by the file names, whatever the seed
    other_train, other_val = split_of(ds, 6, split_seed=1)
    assert other_val.tolist() == val_idx.tolist() and sorted(other_train) == sorted(train_idx)
    assert other_train.tolist() != train_idx.tolist()  # the seed shuffles the training order (train_size)
    with pytest.raises(ValueError, match="val_size must be 6, not 5000"):
        split_of(ds, 5000, split_seed=1)


def test_verify_requires_the_published_counts(tree):
    root, folder, _ = tree
    with pytest.raises(ValueError, match=f"{folder / 'wnids.txt'} lists 3 classes; the published Tiny-ImageNet has 200"):
        load_dataset("tiny_imagenet", root=root)


def test_a_missing_class_folder_is_named(tree):
    root, folder, wnids = tree
    images = folder / "train" / wnids[2] / "images"
    for path in images.iterdir():
        path.unlink()
    images.rmdir()
    with pytest.raises(ValueError, match=f"{images} is missing: wnids.txt lists {wnids[2]}"):
        load_dataset("tiny_imagenet", root=root, verify=False)


def test_every_corrupt_jpeg_is_named_in_one_error(tree):
    root, folder, wnids = tree
    truncated = folder / "train" / wnids[0] / "images" / f"{wnids[0]}_1.JPEG"
    truncated.write_bytes(truncated.read_bytes()[:200])
    garbage = folder / "val" / "images" / "val_3.JPEG"
    garbage.write_bytes(b"\xff\xd8\xff not an image at all")
    with pytest.raises(ValueError) as error:
        load_dataset("tiny_imagenet", root=root, verify=False)
    message = str(error.value)
    assert "2 damaged or missing image(s)" in message
    assert f"{truncated} is not a 64×64 JPEG image" in message and f"{garbage} is not a 64×64 JPEG image" in message


def test_a_png_or_a_wrong_size_is_refused_by_name(tree):
    root, folder, wnids = tree
    png = folder / "train" / wnids[0] / "images" / f"{wnids[0]}_0.JPEG"
    Image.new("RGB", (64, 64)).save(png, "PNG")
    with pytest.raises(ValueError, match=f"{png} is not a 64×64 JPEG image"):
        load_dataset("tiny_imagenet", root=root, verify=False)
    Image.new("RGB", (32, 64)).save(png, "JPEG")
    with pytest.raises(ValueError, match=f"{png} is 32×64 pixels, not 64×64"):
        load_dataset("tiny_imagenet", root=root, verify=False)


def test_a_validation_annotation_naming_an_unknown_wnid_is_refused(tree):
    root, folder, _ = tree
    annotations = folder / "val" / "val_annotations.txt"
    lines = annotations.read_text().splitlines()
    lines[2] = "val_2.JPEG\tn99999999\t0\t0\t10\t10"
    annotations.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=f"{annotations}, line 3: val_2.JPEG is labelled 'n99999999', which is not a class"):
        load_dataset("tiny_imagenet", root=root, verify=False)


@pytest.mark.parametrize("line, message", [
    ("val_0.JPEG\tn00000001", "expected 6 tab-separated fields"),
    ("../../etc/passwd\tWNID\t0\t0\t1\t1", "'../../etc/passwd' is not a validation image name"),
    ("val_0.JPEG\tWNID\t0\tzero\t1\t1", "expected 6 tab-separated fields"),
])
def test_malformed_annotations_are_refused_by_file_and_line(tree, line, message):
    root, folder, wnids = tree
    annotations = folder / "val" / "val_annotations.txt"
    annotations.write_text(annotations.read_text() + line.replace("WNID", wnids[0]) + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{annotations}, line 7: {message}")):
        load_dataset("tiny_imagenet", root=root, verify=False)


def test_a_missing_validation_image_a_stray_file_and_a_bad_wnid_are_named(tree):
    root, folder, wnids = tree
    missing = folder / "val" / "images" / "val_5.JPEG"
    missing.unlink()
    with pytest.raises(ValueError, match=f"No such file or directory: '{missing}'"):
        load_dataset("tiny_imagenet", root=root, verify=False)
    stray = folder / "train" / wnids[0] / "images" / "notes.txt"
    stray.write_text("hello")
    with pytest.raises(ValueError, match=f"{stray} is not a training image of {wnids[0]}"):
        load_dataset("tiny_imagenet", root=root, verify=False)
    (folder / "wnids.txt").write_text(f"{wnids[0]}\nimport os\n")
    with pytest.raises(ValueError, match=f"{folder / 'wnids.txt'}, line 2: 'import os' is not a WordNet id"):
        load_dataset("tiny_imagenet", root=root, verify=False)


def test_a_missing_folder_says_where_to_get_the_archive(tmp_path):
    with pytest.raises(FileNotFoundError, match="cs231n.stanford.edu/tiny-imagenet-200.zip"):
        load_dataset("tiny_imagenet", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="torchvision has no Tiny-ImageNet downloader"):
        load_dataset("tiny_imagenet", root=tmp_path, download=True)
