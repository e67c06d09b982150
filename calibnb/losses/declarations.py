"""Each loss declared once: its hyper-parameters (default and admissible values), its formula and
the paper and equation it comes from.

The reference form (:mod:`calibnb.losses.reference`), the functional, the ``nn.Module`` twin and
the registry all read a loss's :class:`LossDeclaration`: the signatures take their defaults from
it, every form checks its hyper-parameters with :meth:`LossDeclaration.checked` at call time, and
:func:`calibnb.losses.get_loss` builds the losses by its ``name``. So a range changed here changes
every form at once (``tests/test_loss_declarations.py`` tampers with each range and watches the
four forms follow), as torchmetrics' one ``_arg_validation`` per metric serves its functional and
its module.

Examples
--------
>>> from calibnb.losses.declarations import FOCAL
>>> FOCAL.source, FOCAL.default("gamma")
('Mukhoti et al. 2020, Eq. 1', 3.0)
>>> FOCAL.checked(gamma=2)
(2.0,)
>>> FOCAL.checked(gamma=-1)
Traceback (most recent call last):
...
ValueError: gamma must be >= 0, got -1
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from calibnb._validation import check_choice, check_n_bins, check_real
from calibnb.losses._common import FOCAL_GAMMA_MAX, INVERSE_GAMMA_MAX, TERM_WEIGHT_MAX

#: The choices of dual focal loss's ``p_j`` (Tao et al. 2023, Table 4).
DUALS = ("largest", "second", "third", "mean_top2", "mean_top3", "mean_all")

#: FLSD-53 of Mukhoti et al. (2020, §5): γ = 5 for p_t < 0.2, 3 for 0.2 <= p_t < 0.5, 3 above.
FLSD53_GAMMAS = (5.0, 3.0, 3.0)
FLSD_THRESHOLDS = (0.2, 0.5)


@dataclass(frozen=True)
class Real:
    """A real hyper-parameter in ``[minimum, maximum]`` (``(minimum, maximum]`` when ``strict``).

    Examples
    --------
    >>> Real(0.05, 0.0, 1.0).check(0.1, "alpha")  # default 0.05, admissible [0, 1]
    0.1
    """

    default: float | None
    minimum: float | None = None
    maximum: float | None = None
    strict: bool = False

    def check(self, value, name: str) -> float:
        return check_real(value, name, minimum=self.minimum, maximum=self.maximum, strict_minimum=self.strict)


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of values.

    Examples
    --------
    >>> Choice("l2", ("l1", "l2")).check("l1", "norm")
    'l1'
    """

    default: Any
    choices: tuple

    def check(self, value, name: str):
        return check_choice(value, name, self.choices)


@dataclass(frozen=True)
class Bins:
    """A number of bins (:func:`calibnb._validation.check_n_bins`).

    Examples
    --------
    >>> Bins(15).check(10, "n_bins")
    10
    """

    default: int

    def check(self, value, name: str) -> int:
        return check_n_bins(value, name)


@dataclass(frozen=True)
class RealOrChoice:
    """A named choice, or a real number in ``[minimum, maximum]`` (dual focal loss's ``dual``:
    a named ``p_j`` or a fixed offset in its place).

    Examples
    --------
    >>> dual = RealOrChoice("largest", ("largest", "second"), 0.0, 1.0)
    >>> dual.check("second", "dual"), dual.check(0.2, "dual")
    ('second', 0.2)
    """

    default: Any
    choices: tuple
    minimum: float
    maximum: float

    def check(self, value, name: str):
        if isinstance(value, str):
            return check_choice(value, name, self.choices)
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return check_real(value, name, minimum=self.minimum, maximum=self.maximum)
        raise TypeError(f"{name} must be one of {sorted(self.choices)} or a number in "
                        f"[{self.minimum:g}, {self.maximum:g}], got {value!r}")


@dataclass(frozen=True)
class Reals:
    """A 1-D sequence of reals, each checked as ``element`` (``name[i]`` in the messages).

    Examples
    --------
    >>> Reals((5.0, 3.0), Real(None, 0.0)).check([5, 2], "gammas")
    (5.0, 2.0)
    """

    default: tuple
    element: Real

    def check(self, values, name: str) -> tuple:
        if np.ndim(values) != 1:
            raise ValueError(f"{name} must be a 1-D sequence of numbers, got {np.ndim(values)} dimensions")
        return tuple(self.element.check(v, f"{name}[{i}]") for i, v in enumerate(values))


Kind = Real | Choice | Bins | RealOrChoice | Reals


@dataclass(frozen=True)
class LossDeclaration:
    """A loss's name (its registry and functional name), formula, source and hyper-parameters.

    ``params`` maps each hyper-parameter, in signature order, to its kind (:class:`Real`,
    :class:`Choice`, ...), which holds its default and admissible values; ``together`` checks
    relations between checked values (FLSD's schedule lengths, AdaFocal's γ range) and returns
    them.

    Examples
    --------
    >>> from calibnb.losses.declarations import FCL
    >>> FCL.name, FCL.default("lam"), FCL.checked(gamma=2, lam=0)
    ('focal_calibration_loss', 0.5, (2.0, 0.0))
    """

    name: str
    formula: str
    source: str
    params: dict[str, Kind] = field(default_factory=dict)
    together: Callable[[dict], dict] | None = None

    def default(self, name: str):
        """The declared default of hyper-parameter ``name``."""
        return self.params[name].default

    def checked(self, **values) -> tuple:
        """The given hyper-parameters checked, in the order given: ``ValueError``/``TypeError``
        naming the argument for a bad value, ``TypeError`` for a name the loss does not have."""
        unknown = sorted(set(values) - set(self.params))
        if unknown:
            raise TypeError(f"{self.name} has no hyper-parameter {', '.join(map(repr, unknown))}; "
                            f"it has {sorted(self.params) or 'none'}")
        checked = {name: self.params[name].check(value, name) for name, value in values.items()}
        if self.together is not None:
            checked = self.together(checked)
        return tuple(checked.values())


def _schedule(values: dict) -> dict:
    """FLSD's schedule: one γ more than thresholds, the thresholds strictly increasing."""
    gammas, thresholds = values.get("gammas"), values.get("thresholds")
    if gammas is not None and thresholds is not None and len(gammas) != len(thresholds) + 1:
        raise ValueError(f"gammas needs one entry more than thresholds, got {len(gammas)} and {len(thresholds)}")
    if thresholds is not None and any(b <= a for a, b in zip(thresholds, thresholds[1:])):
        raise ValueError(f"thresholds must be strictly increasing, got {list(thresholds)}")
    return values


def _gamma_range(values: dict) -> dict:
    """AdaFocal's clipping range ``gamma_min <= gamma_max``, and ``gamma_init`` inside it."""
    low, high, init = values.get("gamma_min"), values.get("gamma_max"), values.get("gamma_init")
    if low is not None and high is not None:
        if high < low:
            raise ValueError(f"gamma_max must be >= gamma_min, got gamma_max={high:g} and gamma_min={low:g}")
        if init is not None and not low <= init <= high:
            raise ValueError(f"gamma_init must lie in [gamma_min, gamma_max] = [{low:g}, {high:g}], got {init:g}")
    return values


def focal_gamma(default: float | None) -> Real:
    """A focal γ in ``[0, FOCAL_GAMMA_MAX]``."""
    return Real(default, 0.0, FOCAL_GAMMA_MAX)


def term_weight(default: float) -> Real:
    """The weight of an added loss term, in ``[0, TERM_WEIGHT_MAX]``."""
    return Real(default, 0.0, TERM_WEIGHT_MAX)


SCHEDULE = {"gammas": Reals(FLSD53_GAMMAS, focal_gamma(None)),
            "thresholds": Reals(FLSD_THRESHOLDS, Real(None, 0.0, 1.0, strict=True))}

CROSS_ENTROPY = LossDeclaration("cross_entropy", "-log p_t", "the negative log-likelihood")
FOCAL = LossDeclaration("focal_loss", "-(1 - p_t)^γ log p_t", "Mukhoti et al. 2020, Eq. 1",
                        {"gamma": focal_gamma(3.0)})
FOCAL_SD = LossDeclaration("focal_loss_sd", "-(1 - p_t)^γ(p_t) log p_t", "Mukhoti et al. 2020, §5",
                           dict(SCHEDULE), _schedule)
INVERSE_FOCAL = LossDeclaration("inverse_focal_loss", "-(1 + p_t)^γ log p_t", "Ghosh et al. 2022, Eq. 1",
                                {"gamma": Real(1.0, 0.0, INVERSE_GAMMA_MAX)})
DUAL_FOCAL = LossDeclaration("dual_focal_loss", "-(1 - p_t + p_j)^γ log p_t", "Tao et al. 2023, Eq. 3",
                             {"gamma": focal_gamma(5.0), "dual": RealOrChoice("largest", DUALS, 0.0, 1.0)})
DUAL_FOCAL_SD = LossDeclaration("dual_focal_loss_sd", "-(1 - p_t + p_j)^γ(p_t - p_j) log p_t",
                                "Tao et al. 2023, the authors' dual_focal_loss_sd.py", dict(SCHEDULE), _schedule)
FCL = LossDeclaration("focal_calibration_loss", "-(1 - p_t)^γ log p_t + λ ||p - y||²",
                      "Focal Calibration Loss, §3 (L1: Appendix A.15)",
                      {"gamma": focal_gamma(2.0), "lam": term_weight(0.5), "norm": Choice("l2", ("l1", "l2"))})
BRIER = LossDeclaration("brier_loss", "Σ_k (p_k - y_k)²", "Brier 1950")
LABEL_SMOOTHING = LossDeclaration("label_smoothing_loss", "-Σ_k ((1 - α) y_k + α / K) log p_k",
                                  "Müller et al. 2019", {"alpha": Real(0.05, 0.0, 1.0)})
# width >= 0.01 keeps the exponents of MMCE's prefix sums within ±50 (calibnb.losses.mmce_weighted)
MMCE = LossDeclaration("mmce_loss", "-log p_t + λ MMCE_w", "Kumar et al. 2018",
                       {"lam": term_weight(2.0), "width": Real(0.4, 0.01)})
ADAFOCAL = LossDeclaration(
    "adafocal", "-(1 ∓ p_t)^|γ_b| log p_t, γ_b updated per validation bin", "Ghosh et al. 2022, Eq. 5, Algorithm 1",
    {"n_bins": Bins(15), "lam": Real(1.0, 0.0), "gamma_init": Real(1.0), "gamma_max": Real(20.0, None, FOCAL_GAMMA_MAX),
     "gamma_min": Real(-2.0, -INVERSE_GAMMA_MAX), "switch": Real(0.2, 0.0), "base": Choice("focal", ("focal", "dual"))},
    _gamma_range)
CALFOCAL = LossDeclaration(
    "calfocal", "-(1 - p_t)^γ log p_t, γ = exp(λ (C_b - A_b))", "Ghosh et al. 2022, §5.1, Eqs. 2 and 3",
    {"n_bins": Bins(15), "lam": Real(10.0, 0.0), "case": Choice(2, (1, 2)),
     "gamma_max": Real(1e3, 1.0, FOCAL_GAMMA_MAX)})

#: Every declaration by name (the registry's names).
DECLARATIONS = {d.name: d for d in (CROSS_ENTROPY, FOCAL, FOCAL_SD, INVERSE_FOCAL, DUAL_FOCAL, DUAL_FOCAL_SD, FCL,
                                    BRIER, LABEL_SMOOTHING, MMCE, ADAFOCAL, CALFOCAL)}
