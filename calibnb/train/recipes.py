"""Training recipes: optimiser, schedule, batch, reduction, clipping and the model evaluated, as
the papers ran them.

``mukhoti2020`` is the recipe of Mukhoti et al. 2020 (§5 and their code), reused by the DFL,
AdaFocal, FCL and FTS papers: SGD lr 0.1, momentum 0.9, weight decay 5e-4, batch 128, 350
epochs with the learning rate ×0.1 at epochs 150 and 250, the loss *summed* over the batch,
gradient-norm clipping at 2, and the last epoch's model. Their code steps the scheduler at the
start of each epoch, so its decays land one epoch early (epochs 149 and 249); calibnb steps it
after each epoch, as PyTorch documents, so the decays land where the paper says.

Tiny-ImageNet, 100 epochs with the learning rate ×0.1 after epochs 40 and 60 in every paper:

* ``mukhoti2020_tiny_imagenet``: batch 128 and the last epoch's model, as the DFL paper (§6,
  "Training Setup") and the FCL paper (§5, "Experiment Setup") state.
* ``ghosh2022_tiny_imagenet``: batch 64 and the model with the lowest validation error
  (AdaFocal, App. D.2 and D.3: "For Tiny-ImageNet and BERT, we have reported the model that has
  the lowest error on the validation set"); the first epoch reaching the lowest error wins, as
  ``val_acc > best_val_acc`` in the base code's ``train.py``.
* ``komisarenko2024_tiny_imagenet``: batch 64 and the last epoch's model (FTS, §5.1), which is
  also what Mukhoti et al.'s own ``train_scripts/tinyImageNet.sh`` passes (``-b 64``).

Weight decay stays 5e-4 in all three: the papers name none for Tiny-ImageNet apart from FTS's
"the same optimizer" (5e-4), and 5e-4 is the default of the base code all of them build on.

ImageNet, ``ghosh2022_imagenet`` (AdaFocal, App. D.2): SGD with momentum 0.9 and weight decay
1e-4, batch 128, 90 epochs at lr 0.01, ×0.1 after epochs 30 and 60, and the last epoch's model
(App. D.3). The paper's ImageNet runs are not built on the CIFAR base code ("For CIFAR-10/100 and
Tiny-ImageNet, AdaFocal is implemented on top of the base code") and "the hyperparameters that
are not explicitly mentioned above are set to their default values in PyTorch": so the loss is
*averaged* over the batch (PyTorch's default reduction; an lr of 0.01 on a summed loss would be
an lr of 1.28 on the mean) and gradients are not clipped, as in PyTorch's ImageNet example,
whose recipe this is with a tenth of its learning rate and half its batch.
The text rows train the global-pooling CNN (``calibnb.models.text_cnn``) with Adam, lr 1e-3,
default betas (0.9, 0.999), no weight decay, 50 epochs, batch 128 (AdaFocal App. D: 118 batches
an epoch of 15,098 messages; FCL §5: "The batch sizes are all set to 128"), the loss averaged over
the batch and no gradient clipping (the TensorFlow code the papers adapt, ``20ng_mmce.py``,
averages and does not clip):

* ``ghosh2022_20newsgroups``: the last epoch's model (AdaFocal: "use the model at the end"), also
  for DFL, whose paper names no other recipe for its 20 Newsgroups row;
* ``liang2024_text``: the model with the lowest validation error (FCL §5: "evaluated by the best
  validated models"), for FCL's 20 Newsgroups, AG News and FinSen rows.

``ghosh2022_bert`` is AdaFocal's BERT fine-tuning (App. D): AdamW, lr 2e-5, weight decay 0.01
(on every parameter: the paper names no exclusion), batch 32, 10 epochs, the learning rate rising
linearly from 0 over the first 0.2 of an epoch's batches and falling linearly to 0 at the end
(Hugging Face's ``get_linear_schedule_with_warmup``, the schedule of BERT's fine-tuning scripts;
the paper names only the warm-up), the loss averaged, no clipping, and the model with the lowest
validation error. Documents are cut to 128 tokens for training and 512 for testing.

``cpu`` is the same recipe in miniature for the book's offline runs: 6 epochs with the decays at
the same fractions of training (3 and 5).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

#: ``Recipe.select`` values: the last epoch's model, or the epoch with the lowest validation error.
SELECTIONS = ("last", "best_val_error")
#: ``Recipe.optimizer`` values: SGD with momentum, or Adam with PyTorch's default betas.
OPTIMIZERS = ("sgd", "adam", "adamw")


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
    select: str = "last"  # the model evaluated: one of SELECTIONS
    optimizer: str = "sgd"  # one of OPTIMIZERS (momentum applies to SGD only)
    # AdamW only: warm-up over this fraction of an epoch's batches, then a linear decay to 0,
    # the learning rate updated after every batch (milestones do not apply)
    warmup: float | None = None

    def __post_init__(self) -> None:
        if self.select not in SELECTIONS:
            raise ValueError(f"select must be one of {SELECTIONS}, got {self.select!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if (self.warmup is not None) != (self.optimizer == "adamw"):
            raise ValueError("warmup is AdamW's linear schedule: give it with optimizer='adamw' only")

    def with_epochs(self, epochs: int) -> "Recipe":
        """The same recipe over ``epochs`` epochs, milestones moved to the same fractions."""
        milestones = tuple(sorted({max(1, round(m * epochs / self.epochs)) for m in self.milestones}))
        return replace(self, epochs=epochs, milestones=tuple(m for m in milestones if m < epochs))


_TINY_IMAGENET = Recipe(epochs=100, milestones=(40, 60))
_GLOBAL_POOLING_CNN = Recipe(epochs=50, batch_size=128, lr=1e-3, weight_decay=0.0, optimizer="adam",
                             reduction="mean", grad_clip=None)

#: The recipes by name (the module's docstring describes each): ``"mukhoti2020"``, the three
#: Tiny-ImageNet recipes, the ImageNet one, the three text recipes and ``"cpu"``.
RECIPES: dict[str, Recipe] = {
    "mukhoti2020": Recipe(epochs=350, milestones=(150, 250)),
    "mukhoti2020_tiny_imagenet": _TINY_IMAGENET,
    "ghosh2022_tiny_imagenet": replace(_TINY_IMAGENET, batch_size=64, select="best_val_error"),
    "komisarenko2024_tiny_imagenet": replace(_TINY_IMAGENET, batch_size=64),
    "ghosh2022_imagenet": Recipe(epochs=90, batch_size=128, lr=0.01, weight_decay=1e-4, milestones=(30, 60),
                                 reduction="mean", grad_clip=None),
    "ghosh2022_20newsgroups": _GLOBAL_POOLING_CNN,
    "liang2024_text": replace(_GLOBAL_POOLING_CNN, select="best_val_error"),
    "ghosh2022_bert": Recipe(epochs=10, batch_size=32, lr=2e-5, weight_decay=0.01, optimizer="adamw", warmup=0.2,
                             reduction="mean", grad_clip=None, select="best_val_error"),
    "cpu": Recipe(epochs=6, milestones=(3, 5)),
}
