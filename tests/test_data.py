"""The papers' train/validation split and the batched augmentation."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibnb.data import augment, normalize, random_crop, random_hflip, train_val_split

CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)


def reference_split(n, valid_size=0.1, random_seed=1):
    """torrvision/focal_calibration, Data/cifar10.py, get_train_valid_loader: the index rule,
    literally (a list, numpy's *global* legacy seed and shuffle). The caller's global numpy
    state is restored afterwards; calibnb uses a private RandomState instead."""
    state = np.random.get_state()
    try:
        indices = list(range(n))
        split = int(np.floor(valid_size * n))
        np.random.seed(random_seed)
        np.random.shuffle(indices)
        return indices[split:], indices[:split]
    finally:
        np.random.set_state(state)


def test_split_reproduces_the_reference_rule_on_cifar():
    train_idx, val_idx = train_val_split(50_000, val_size=5000, seed=1)
    ref_train, ref_val = reference_split(50_000)
    assert val_idx.tolist() == ref_val and train_idx.tolist() == ref_train
    # the first validation indices that procedure gives (numpy's legacy MT19937, seed 1)
    first = [26247, 35067, 34590, 16668, 12196, 2600, 9047, 2206, 25607, 11606]
    assert val_idx[:10].tolist() == first
    assert train_idx[:5].tolist() == [45573, 39021, 36044, 45885, 19497]
    assert len(train_idx) == 45_000 and train_idx.dtype == np.int64


def test_split_fraction_rounds_down_like_the_reference():
    """SVHN: 73 257 training images, valid_size=0.1 → 7 325 validation images."""
    train_idx, val_idx = train_val_split(73_257, val_size=0.1, seed=1)
    ref_train, ref_val = reference_split(73_257, 0.1, 1)
    assert len(val_idx) == 7325 and val_idx.tolist() == ref_val and train_idx.tolist() == ref_train


def test_split_leaves_numpy_global_state_alone():
    np.random.seed(123)
    expected = np.random.random_sample(3)
    np.random.seed(123)
    train_val_split(1000, 100, seed=1)
    assert np.array_equal(np.random.random_sample(3), expected)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(2, 3000), frac=st.floats(0.001, 0.999), seed=st.integers(0, 2**31 - 1))
def test_split_partitions_range_n(n, frac, seed):
    n_val = max(1, min(n - 1, int(frac * n)))
    train_idx, val_idx = train_val_split(n, n_val, seed)
    assert len(val_idx) == n_val
    assert np.array_equal(np.sort(np.concatenate([train_idx, val_idx])), np.arange(n))
    again = train_val_split(n, n_val, seed)
    assert np.array_equal(again[1], val_idx)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(n=100, val_size=100), ValueError, "val_size"),
    (dict(n=100, val_size=0), ValueError, "val_size"),
    (dict(n=100, val_size=0.001), ValueError, "val_size"),  # floor(0.1) = 0
    (dict(n=100, val_size=True), TypeError, "val_size"),
    (dict(n=100, val_size=1.5), ValueError, "val_size"),
    (dict(n=1, val_size=1), ValueError, "n"),
    (dict(n=100, val_size=10, seed=-1), ValueError, "seed"),
    (dict(n=100.0, val_size=10), TypeError, "n"),
])
def test_split_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        train_val_split(**kwargs)


def coordinate_images(n, size=8):
    """Each image holds 1..size² (distinct, nonzero), so a crop reveals its offset."""
    base = torch.arange(1, size * size + 1, dtype=torch.float32).view(1, 1, size, size)
    return base.repeat(n, 1, 1, 1)


def recover_offsets(out, image, padding):
    """Reference crop: for each output, the (i, j) with out == pad(image)[i:i+H, j:j+W], found by
    comparing against all (2·padding + 1)² crops; (-1, -1) when not exactly one matches."""
    h, w = image.shape[-2:]
    padded = torch.nn.functional.pad(image, (padding,) * 4)[0, 0]
    offsets = [(i, j) for i in range(2 * padding + 1) for j in range(2 * padding + 1)]
    crops = torch.stack([padded[i:i + h, j:j + w] for i, j in offsets])  # (K, H, W)
    match = (out[:, 0, None] == crops[None]).flatten(2).all(2)  # (N, K)
    return [offsets[int(row.nonzero()[0])] if row.sum() == 1 else (-1, -1) for row in match]


def test_random_crop_is_a_uniform_crop_of_the_zero_padded_image():
    padding, n = 4, 81 * 40
    x = coordinate_images(n)
    g = torch.Generator().manual_seed(0)
    out = random_crop(x, padding, generator=g)
    assert out.shape == x.shape and out.dtype == x.dtype
    offsets = recover_offsets(out, x[:1], padding)
    assert (-1, -1) not in offsets  # every output is exactly one valid crop
    cells = np.zeros((9, 9))
    for i, j in offsets:
        cells[i, j] += 1
    assert stats.chisquare(cells.ravel()).pvalue > 1e-3  # uniform over the 81 offsets


def test_random_hflip_flips_about_half_of_the_images_exactly():
    x = coordinate_images(2000)
    out = random_hflip(x, generator=torch.Generator().manual_seed(1))
    same = (out == x).flatten(1).all(1)
    flipped = (out == x.flip(-1)).flatten(1).all(1)
    assert torch.all(same ^ flipped)
    assert stats.binomtest(int(flipped.sum()), 2000, 0.5).pvalue > 1e-3


def test_augmentation_is_reproducible_from_the_generator():
    x = torch.randint(0, 256, (64, 3, 32, 32), dtype=torch.uint8)
    a = augment(x, CIFAR_MEAN, CIFAR_STD, generator=torch.Generator().manual_seed(5))
    b = augment(x, CIFAR_MEAN, CIFAR_STD, generator=torch.Generator().manual_seed(5))
    c = augment(x, CIFAR_MEAN, CIFAR_STD, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.dtype == torch.float32 and a.shape == x.shape


def test_augment_pads_with_black_before_normalising():
    """torchvision pads the PIL image (pixel 0) and normalises afterwards, so the border of a
    white image becomes -mean/std and its inside (1 - mean)/std."""
    x = torch.full((200, 3, 32, 32), 255, dtype=torch.uint8)
    out = augment(x, CIFAR_MEAN, CIFAR_STD, generator=torch.Generator().manual_seed(0))
    mean, std = torch.tensor(CIFAR_MEAN).view(3, 1, 1), torch.tensor(CIFAR_STD).view(3, 1, 1)
    border, inside = -mean / std, (1 - mean) / std
    is_border = torch.isclose(out, border.expand_as(out[0]))
    is_inside = torch.isclose(out, inside.expand_as(out[0]))
    assert torch.all(is_border | is_inside)
    assert is_border.any() and is_inside.any()


def test_augment_without_randomness_is_normalize():
    x = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    torch.testing.assert_close(
        augment(x, CIFAR_MEAN, CIFAR_STD, padding=0, flip=False),
        normalize(x, CIFAR_MEAN, CIFAR_STD),
    )


def test_normalize_matches_to_tensor_then_normalize_in_float64():
    x = torch.randint(0, 256, (5, 3, 4, 4), dtype=torch.uint8)
    expected = (x.double().numpy() / 255 - np.array(CIFAR_MEAN)[:, None, None]) / np.array(
        CIFAR_STD
    )[:, None, None]
    out = normalize(x, CIFAR_MEAN, CIFAR_STD)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
    signals = torch.randn(3, 1, 40)  # float input: no 1/255, and (N, C, L) works
    torch.testing.assert_close(normalize(signals, (0.5,), (2.0,)), (signals - 0.5) / 2)
    assert normalize(x, CIFAR_MEAN, CIFAR_STD, dtype=torch.bfloat16).dtype == torch.bfloat16


@pytest.mark.parametrize("call, error, message", [
    (lambda: normalize(torch.zeros(2, 3, 4, 4), (0.5,), (0.5,)), ValueError, "mean and std"),
    (lambda: normalize(torch.zeros(2, 1, 4, 4), (0.5,), (0.0,)), ValueError, "std"),
    (lambda: normalize(np.zeros((2, 1, 4, 4)), (0.5,), (0.5,)), TypeError, "x"),
    (lambda: random_crop(torch.zeros(3, 32, 32)), ValueError, "x"),
    (lambda: random_crop(torch.zeros(1, 3, 32, 32), padding=-1), ValueError, "padding"),
    (lambda: random_hflip([[0.0]]), TypeError, "x"),
])
def test_augmentation_rejects_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
