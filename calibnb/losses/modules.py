"""``torch.nn.Module`` forms of the functional losses, as ``torch.nn`` writes its own.

``FocalLoss(gamma=2)(logits, targets)`` is ``focal_loss(logits, targets, gamma=2)``. Each class
names its functional and nothing else: it takes the functional's keyword parameters (same names,
same defaults, read from its signature), checks them in ``__init__`` against the loss's
declaration (:mod:`calibnb.losses.declarations`), so a bad hyper-parameter fails where the loss is
built, stores them as attributes, and calls the functional in ``forward``. ``validate=False``
builds a loss for a training loop that checked its data once: it reads nothing back to the host
(:func:`calibnb.losses.focal_loss`).
"""

from __future__ import annotations

import inspect
from typing import Callable

from torch import Tensor

from calibnb.losses._common import check_reduction, check_validate
from calibnb.losses.base import TrainingLoss
from calibnb.losses.baselines import brier_loss, label_smoothing_loss, mmce_loss
from calibnb.losses.declarations import DECLARATIONS
from calibnb.losses.dual_focal import dual_focal_loss, dual_focal_loss_sd
from calibnb.losses.fcl import focal_calibration_loss
from calibnb.losses.focal import cross_entropy, focal_loss, focal_loss_sd, inverse_focal_loss

_SELF = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _Loss(TrainingLoss):
    """A functional loss as a module: a subclass sets ``functional`` and gets its ``__init__``
    (the functional's keyword parameters), ``forward``, ``hyperparameters`` and ``repr``."""

    functional: Callable
    _names: tuple[str, ...]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        params = list(inspect.signature(cls.functional).parameters.values())[2:]  # after logits, targets
        cls._names = tuple(p.name for p in params)
        cls.declaration = DECLARATIONS[cls.functional.__name__]

        def __init__(self, *args, **kwargs) -> None:
            _Loss.__init__(self, *args, **kwargs)

        __init__.__signature__ = inspect.Signature([_SELF, *params])
        cls.__init__ = __init__

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        try:
            bound = inspect.signature(type(self).__init__).bind(self, *args, **kwargs)
        except TypeError as exc:  # an unknown or repeated keyword: name the loss
            raise TypeError(f"{type(self).__name__}: {exc}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        self.reduction = check_reduction(values.pop("reduction"))
        self.validate = check_validate(values.pop("validate"))
        for name, value in zip(values, self.declaration.checked(**values)):
            setattr(self, name, value)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return self.functional(logits, targets, *(getattr(self, name) for name in self._names))

    def hyperparameters(self) -> dict:
        """The functional's keyword arguments, as stored (``reduction`` and ``validate`` included)."""
        return {name: getattr(self, name) for name in self._names}

    def extra_repr(self) -> str:
        return ", ".join(f"{key}={value!r}" for key, value in self.hyperparameters().items())


class CrossEntropyLoss(_Loss):
    """Module form of :func:`calibnb.losses.cross_entropy`: ``-log p_t``.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import CrossEntropyLoss, cross_entropy
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = CrossEntropyLoss(reduction="sum")
    >>> loss
    CrossEntropyLoss(reduction='sum', validate=True)
    >>> torch.equal(loss(z, t), cross_entropy(z, t, reduction="sum"))
    True
    """

    functional = staticmethod(cross_entropy)


class FocalLoss(_Loss):
    """Module form of :func:`calibnb.losses.focal_loss`: ``-(1 - p_t)^γ log p_t`` (Mukhoti et al.
    2020, Eq. 1).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import FocalLoss, focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = FocalLoss(gamma=2)
    >>> loss
    FocalLoss(gamma=2.0, reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), focal_loss(z, t, gamma=2))
    True
    >>> FocalLoss(gamma=-1)  # a bad hyper-parameter fails where the loss is built
    Traceback (most recent call last):
    ...
    ValueError: gamma must be >= 0, got -1
    """

    functional = staticmethod(focal_loss)


class FocalLossSD(_Loss):
    """Module form of :func:`calibnb.losses.focal_loss_sd` (FLSD, Mukhoti et al. 2020, §5).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import FocalLossSD, focal_loss_sd
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = FocalLossSD(gammas=(5, 3, 2), thresholds=(0.2, 0.5))  # the authors' "FLSD-52"
    >>> loss
    FocalLossSD(gammas=(5.0, 3.0, 2.0), thresholds=(0.2, 0.5), reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), focal_loss_sd(z, t, gammas=(5, 3, 2), thresholds=(0.2, 0.5)))
    True
    """

    functional = staticmethod(focal_loss_sd)


class InverseFocalLoss(_Loss):
    """Module form of :func:`calibnb.losses.inverse_focal_loss`: ``-(1 + p_t)^γ log p_t`` (Ghosh
    et al. 2022, Eq. 1).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import InverseFocalLoss, inverse_focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = InverseFocalLoss(gamma=2)
    >>> loss
    InverseFocalLoss(gamma=2.0, reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), inverse_focal_loss(z, t, gamma=2))
    True
    """

    functional = staticmethod(inverse_focal_loss)


class DualFocalLoss(_Loss):
    """Module form of :func:`calibnb.losses.dual_focal_loss`: ``-(1 - p_t + p_j)^γ log p_t`` (Tao
    et al. 2023, Eq. 3).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import DualFocalLoss, dual_focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = DualFocalLoss(gamma=5, dual="mean_top2")
    >>> loss
    DualFocalLoss(gamma=5.0, dual='mean_top2', reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), dual_focal_loss(z, t, gamma=5, dual="mean_top2"))
    True
    """

    functional = staticmethod(dual_focal_loss)


class DualFocalLossSD(_Loss):
    """Module form of :func:`calibnb.losses.dual_focal_loss_sd` (DFL with FLSD's γ schedule).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import DualFocalLossSD, dual_focal_loss_sd
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = DualFocalLossSD()
    >>> loss
    DualFocalLossSD(gammas=(5.0, 3.0, 3.0), thresholds=(0.2, 0.5), reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), dual_focal_loss_sd(z, t))
    True
    """

    functional = staticmethod(dual_focal_loss_sd)


class FocalCalibrationLoss(_Loss):
    """Module form of :func:`calibnb.losses.focal_calibration_loss`: ``L_FL + λ ||p - y||^2``.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import FocalCalibrationLoss, focal_calibration_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = FocalCalibrationLoss(gamma=2, lam=0.5)
    >>> loss
    FocalCalibrationLoss(gamma=2.0, lam=0.5, norm='l2', reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), focal_calibration_loss(z, t, gamma=2, lam=0.5))
    True
    """

    functional = staticmethod(focal_calibration_loss)


class BrierLoss(_Loss):
    """Module form of :func:`calibnb.losses.brier_loss`: ``sum_k (p_k - y_k)^2``.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import BrierLoss, brier_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = BrierLoss()
    >>> loss
    BrierLoss(reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), brier_loss(z, t))
    True
    """

    functional = staticmethod(brier_loss)


class LabelSmoothingLoss(_Loss):
    """Module form of :func:`calibnb.losses.label_smoothing_loss` (Müller et al. 2019).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import LabelSmoothingLoss, label_smoothing_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = LabelSmoothingLoss(alpha=0.1)
    >>> loss
    LabelSmoothingLoss(alpha=0.1, reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), label_smoothing_loss(z, t, alpha=0.1))
    True
    """

    functional = staticmethod(label_smoothing_loss)


class MMCELoss(_Loss):
    """Module form of :func:`calibnb.losses.mmce_loss`: cross-entropy plus ``λ MMCE_w`` (Kumar et
    al. 2018).

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import MMCELoss, mmce_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])
    >>> loss = MMCELoss(lam=2.0)
    >>> loss
    MMCELoss(lam=2.0, width=0.4, reduction='mean', validate=True)
    >>> torch.equal(loss(z, t), mmce_loss(z, t, lam=2.0))
    True
    """

    functional = staticmethod(mmce_loss)
