"""Small CPU experiments that the chapters run in seconds.

:func:`two_moons_experiment` reproduces the FCL paper's Appendix A.11 (Fig. 7): a feed-forward
network with two hidden layers of 10 ReLU units, trained with Adam for 500 epochs on scikit-learn's
two moons with noise 0.2, once with focal loss and once with focal calibration loss, compared by
their decision boundaries and confidence maps. The paper gives neither the number of points, the
batch size, the learning rate nor the seed; here an epoch is one full-batch Adam step (lr 0.01) on
``n_samples`` points, and the seed fixes both the data and the initialisation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ._threads import single_threaded
from ._validation import check_int, check_real

__all__ = ["TwoMoonsResult", "single_threaded", "two_moons_experiment"]


@dataclass
class TwoMoonsResult:
    """A fitted two-moons network and what the figures need.

    ``x_train``/``y_train`` and ``x_val``/``y_val`` (an independent draw of the same size) are the
    data; ``train_probs``/``val_probs`` the predicted probabilities ``(N, 2)`` on them;
    ``grid_x``, ``grid_y`` the mesh and ``grid_probs`` the probability of class 1 on it
    (``grid_size × grid_size``); ``losses`` the training loss after every epoch.
    """

    model: nn.Module
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    train_probs: np.ndarray
    val_probs: np.ndarray
    grid_x: np.ndarray
    grid_y: np.ndarray
    grid_probs: np.ndarray
    losses: np.ndarray

    @property
    def grid_confidence(self) -> np.ndarray:
        """Top-label confidence ``max(p, 1 - p)`` on the grid."""
        return np.maximum(self.grid_probs, 1.0 - self.grid_probs)

    @property
    def train_accuracy(self) -> float:
        return float((self.train_probs.argmax(1) == self.y_train).mean())

    @property
    def train_confidence(self) -> float:
        """Mean top-label confidence on the training points."""
        return float(self.train_probs.max(1).mean())


def _mlp(hidden: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = 2
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 2))
    return nn.Sequential(*layers)


@torch.no_grad()
def _probs(model: nn.Module, x: np.ndarray) -> np.ndarray:
    return torch.softmax(model(torch.as_tensor(x, dtype=torch.float64)), dim=1).numpy()


def two_moons_experiment(
    loss: str = "focal_loss",
    seed: int = 0,
    *,
    n_samples: int = 500,
    noise: float = 0.2,
    hidden: tuple[int, ...] = (10, 10),
    epochs: int = 500,
    lr: float = 0.01,
    grid_size: int = 150,
    **loss_params,
) -> TwoMoonsResult:
    """Train the FCL paper's Appendix A.11 network on two moons with ``loss`` (a
    :func:`calibnb.losses.get_loss` name, e.g. ``"focal_loss"`` with ``gamma=10`` or
    ``"focal_calibration_loss"`` with ``gamma=10, lam=1.5``).

    Data: ``sklearn.datasets.make_moons(n_samples, noise=noise, random_state=seed)`` for training
    and ``random_state=seed + 1`` for validation. Model: ``hidden`` ReLU layers; PyTorch's default
    initialisation under ``torch.manual_seed(seed)``. Optimiser: Adam (``lr``), one full-batch step
    per epoch on the batch-mean loss, in float64 (with gamma = 10, float32 focal weights
``(1 - p)^10`` fall into subnormal numbers, which slow the CPU down by an order of magnitude).
Deterministic on the CPU for a given seed.
    """
    from sklearn.datasets import make_moons

    from .losses import get_loss

    seed = check_int(seed, "seed", minimum=0)
    n_samples = check_int(n_samples, "n_samples", minimum=4)
    noise = check_real(noise, "noise", minimum=0.0)
    epochs = check_int(epochs, "epochs", minimum=1)
    lr = check_real(lr, "lr", minimum=0.0, strict_minimum=True)
    grid_size = check_int(grid_size, "grid_size", minimum=2)
    hidden = tuple(check_int(h, "hidden", minimum=1) for h in hidden)
    loss_fn = get_loss(loss, **loss_params)

    x_train, y_train = make_moons(n_samples, noise=noise, random_state=seed)
    x_val, y_val = make_moons(n_samples, noise=noise, random_state=seed + 1)
    torch.manual_seed(seed)
    model = _mlp(hidden).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    x = torch.as_tensor(x_train, dtype=torch.float64)
    y = torch.as_tensor(y_train, dtype=torch.long)
    losses = np.empty(epochs)
    with single_threaded():
        for epoch in range(epochs):
            optimizer.zero_grad()
            value = loss_fn(model(x), y)
            value.backward()
            optimizer.step()
            losses[epoch] = value.item()

    lo, hi = x_train.min(axis=0) - 0.5, x_train.max(axis=0) + 0.5
    grid_x, grid_y = np.meshgrid(np.linspace(lo[0], hi[0], grid_size), np.linspace(lo[1], hi[1], grid_size))
    grid_probs = _probs(model, np.c_[grid_x.ravel(), grid_y.ravel()])[:, 1].reshape(grid_x.shape)
    return TwoMoonsResult(
        model=model, x_train=x_train, y_train=y_train, x_val=x_val, y_val=y_val,
        train_probs=_probs(model, x_train), val_probs=_probs(model, x_val),
        grid_x=grid_x, grid_y=grid_y, grid_probs=grid_probs, losses=losses,
    )
