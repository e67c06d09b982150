"""Training recipes: optimiser, schedule, batch, reduction and clipping, as the papers ran them.

``mukhoti2020`` is the recipe of Mukhoti et al. 2020 (§5 and their code), reused by the DFL,
AdaFocal, FCL and FTS papers: SGD lr 0.1, momentum 0.9, weight decay 5e-4, batch 128, 350
epochs with the learning rate ×0.1 at epochs 150 and 250, the loss *summed* over the batch,
gradient-norm clipping at 2, and the last epoch's model. Their code steps the scheduler at the
start of each epoch, so its decays land one epoch early (epochs 149 and 249); calibnb steps it
after each epoch, as PyTorch documents, so the decays land where the paper says.

``mukhoti2020_tiny_imagenet`` is their 100-epoch Tiny-ImageNet schedule (×0.1 at 40 and 60).

``cpu`` is the same recipe in miniature for the book's offline runs: 6 epochs with the decays at
the same fractions of training (3 and 5).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Recipe:
    """How to optimise: everything that is not the data, the model or the loss."""

    epochs: int
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 5e-4
    milestones: tuple[int, ...] = ()  # epochs after which lr is multiplied by lr_decay
    lr_decay: float = 0.1
    reduction: str = "sum"  # how the loss is reduced over a batch
    grad_clip: float | None = 2.0  # max gradient norm; None disables clipping

    def with_epochs(self, epochs: int) -> "Recipe":
        """The same recipe over ``epochs`` epochs, milestones moved to the same fractions."""
        milestones = tuple(sorted({max(1, round(m * epochs / self.epochs)) for m in self.milestones}))
        return replace(self, epochs=epochs, milestones=tuple(m for m in milestones if m < epochs))


#: The recipes by name (the module's docstring describes each): ``"mukhoti2020"``,
#: ``"mukhoti2020_tiny_imagenet"`` and ``"cpu"``.
RECIPES: dict[str, Recipe] = {
    "mukhoti2020": Recipe(epochs=350, milestones=(150, 250)),
    "mukhoti2020_tiny_imagenet": Recipe(epochs=100, milestones=(40, 60)),
    "cpu": Recipe(epochs=6, milestones=(3, 5)),
}
