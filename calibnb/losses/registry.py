"""``get_loss(name, **params)``: the losses by the names that notebooks and sweep files use."""

from __future__ import annotations

from calibnb.losses import modules
from calibnb.losses.adafocal import AdaFocalLoss, CalFocalLoss
from calibnb.losses.base import TrainingLoss

#: Each loss module by its declaration's name (``calibnb.losses.declarations``): the functional
#: losses' names, and the stateful ``"adafocal"`` and ``"calfocal"``.
LOSSES: dict[str, type[TrainingLoss]] = {
    cls.declaration.name: cls
    for cls in (
        modules.CrossEntropyLoss,
        modules.FocalLoss,
        modules.FocalLossSD,
        modules.InverseFocalLoss,
        modules.DualFocalLoss,
        modules.DualFocalLossSD,
        modules.FocalCalibrationLoss,
        modules.BrierLoss,
        modules.LabelSmoothingLoss,
        modules.MMCELoss,
        AdaFocalLoss,
        CalFocalLoss,
    )
}


def get_loss(name: str, **params) -> TrainingLoss:
    """Build the loss module registered as ``name`` with hyper-parameters ``params``.

    ``get_loss("focal_loss", gamma=3)`` is ``FocalLoss(gamma=3)``; ``get_loss("adafocal")``
    is ``AdaFocalLoss()``. Raises ``ValueError`` for an unknown name and the loss's own
    ``TypeError``/``ValueError`` for unknown or invalid parameters.
    """
    if name not in LOSSES:
        raise ValueError(f"name must be one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name](**params)
