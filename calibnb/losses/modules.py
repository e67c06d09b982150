"""``torch.nn.Module`` twins of the functional losses, generated from their signatures.

``FocalLoss(gamma=2)(logits, targets)`` is ``focal_loss(logits, targets, gamma=2)``. A twin
takes the keyword parameters of its functional (same names, same defaults), stores them as
attributes and checks them at construction by evaluating the loss once on a 1 x 2 example,
so a bad hyper-parameter fails where the loss is built, with the functional's own message.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
from torch import Tensor, nn

from calibnb.losses.baselines import brier_loss, label_smoothing_loss, mmce_loss
from calibnb.losses.dual_focal import dual_focal_loss, dual_focal_loss_sd
from calibnb.losses.fcl import focal_calibration_loss
from calibnb.losses.focal import cross_entropy, focal_loss, focal_loss_sd, inverse_focal_loss


def _twin(name: str, loss: Callable[..., Tensor]) -> type[nn.Module]:
    """Build the ``nn.Module`` class that calls ``loss`` with stored hyper-parameters."""
    hyper = list(inspect.signature(loss).parameters.values())[2:]  # after (logits, targets)
    signature = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY), *hyper])
    names = tuple(p.name for p in hyper)

    def __init__(self, *args, **kwargs) -> None:
        nn.Module.__init__(self)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for key in names:
            setattr(self, key, bound.arguments[key])
        loss(torch.zeros(1, 2), torch.zeros(1, dtype=torch.long), **self.hyperparameters())

    def hyperparameters(self) -> dict:
        return {key: getattr(self, key) for key in names}

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return loss(logits, targets, **self.hyperparameters())

    def extra_repr(self) -> str:
        return ", ".join(f"{key}={value!r}" for key, value in self.hyperparameters().items())

    __init__.__signature__ = signature
    doc = f"Module form of :func:`calibnb.losses.{loss.__name__}`.\n\n{inspect.getdoc(loss)}"
    namespace = {
        "__init__": __init__,
        "hyperparameters": hyperparameters,
        "forward": forward,
        "extra_repr": extra_repr,
        "__doc__": doc,
        "__module__": __name__,
        "__qualname__": name,
        "functional": staticmethod(loss),
    }
    return type(name, (nn.Module,), namespace)


CrossEntropyLoss = _twin("CrossEntropyLoss", cross_entropy)
FocalLoss = _twin("FocalLoss", focal_loss)
FocalLossSD = _twin("FocalLossSD", focal_loss_sd)
InverseFocalLoss = _twin("InverseFocalLoss", inverse_focal_loss)
DualFocalLoss = _twin("DualFocalLoss", dual_focal_loss)
DualFocalLossSD = _twin("DualFocalLossSD", dual_focal_loss_sd)
FocalCalibrationLoss = _twin("FocalCalibrationLoss", focal_calibration_loss)
BrierLoss = _twin("BrierLoss", brier_loss)
LabelSmoothingLoss = _twin("LabelSmoothingLoss", label_smoothing_loss)
MMCELoss = _twin("MMCELoss", mmce_loss)
