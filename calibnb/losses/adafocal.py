"""AdaFocal (Ghosh et al. 2022, Algorithm 1 and Eq. 5), AdaDualFocal, and CalFocal (§5.1).

AdaFocal keeps one gamma per *validation bin*. The bins are equal-mass bins of the validation
set's top-label confidence; a training sample takes the gamma of the bin that its true-class
probability ``p_t`` falls in (half-open ``[lo, hi)``, values below the first edge go to the
first bin, above the last edge to the last). After each epoch (or every few batches) the
trainer calls :meth:`AdaFocalLoss.update` with the validation probabilities: the bins are
recomputed and every gamma moves multiplicatively with its bin's calibration gap
(:func:`adafocal_update`). A negative gamma means inverse focal loss ``-(1 + p)^|gamma| log p``.

The validation bins are calibnb's equal-mass bins (:func:`calibnb.metrics.binning.bin_edges`,
``binning="mass"``: groups of sizes differing by at most one, interior edges at midpoints
between groups, outer edges 0 and 1), so no validation sample is dropped; the authors'
``np.interp`` edges with ``(lo, hi]`` bins drop the lowest confidence. Training samples never
sit exactly on an interior edge in practice, so the ``[lo, hi)`` lookup agrees with the
metrics' ``(lo, hi]`` assignment.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from calibnb._validation import (
    check_choice, check_labels, check_n_bins, check_probs, check_real, check_vector, to_numpy,
)
from calibnb.losses._common import FOCAL_GAMMA_MAX, check_logits_targets, check_reduction, check_validate, lookup
from calibnb.losses._fused import PerSampleFocalTerm, focal_family
from calibnb.losses.focal import INVERSE_GAMMA_MAX
from calibnb.metrics.binning import mass_group_starts


def adafocal_update(
    gammas,
    gaps,
    lam: float = 1.0,
    switch: float = 0.2,
    gamma_min: float = -2.0,
    gamma_max: float = 20.0,
):
    """One gamma-update step of AdaFocal (Ghosh et al. 2022, Algorithm 1, lines 14-23).

    For each bin with calibration gap ``E = C_val - A_val`` (mean confidence minus accuracy)::

        gamma >= 0 (focal):          gamma <- gamma * exp( lam * E);  |gamma| < switch -> -switch
        gamma <  0 (inverse focal):  gamma <- gamma * exp(-lam * E);  |gamma| < switch -> +switch

    then ``gamma`` is clipped to ``[gamma_min, gamma_max]``. Over-confidence (``E > 0``) thus
    raises a focal gamma and lowers the magnitude of an inverse-focal one. A NaN gap marks an
    empty bin, whose gamma is left unchanged (the reference code gives it gap 0, with the same
    effect). Returns the new gammas as a tensor like ``gammas`` if it is one, else as a float64
    numpy array. Note that ``gamma = 0`` counts as focal, so it switches to ``-switch`` at the
    next update (Algorithm 1; the reference code sends it to ``+switch``).
    """
    lam = check_real(lam, "lam", minimum=0.0)
    switch = check_real(switch, "switch", minimum=0.0)
    gamma_min, gamma_max = check_gamma_range(gamma_min, gamma_max)
    g = to_numpy(gammas, "gammas").astype(np.float64)
    e = to_numpy(gaps, "gaps").astype(np.float64)
    if g.ndim != 1 or g.size == 0 or not np.isfinite(g).all():
        raise ValueError(f"gammas must be a non-empty 1-D array of finite numbers, got shape {g.shape}")
    if e.shape != g.shape:
        raise ValueError(f"gaps must have the shape of gammas {g.shape}, got {e.shape}")
    if np.isinf(e).any():
        raise ValueError("gaps contains inf (use NaN to mark an empty bin)")
    if (np.abs(e[~np.isnan(e)]) > 1.0).any():
        raise ValueError(f"gaps must lie in [-1, 1] (a bin's mean confidence minus its accuracy), got values "
                         f"up to {np.nanmax(np.abs(e)):g} in size")
    new = update_gammas(torch.from_numpy(g), torch.from_numpy(e), lam, switch, gamma_min, gamma_max).numpy()
    if isinstance(gammas, Tensor):
        return torch.as_tensor(new, dtype=gammas.dtype, device=gammas.device)
    return new


def check_gamma_range(gamma_min: float, gamma_max: float) -> tuple[float, float]:
    """Validate AdaFocal's clipping range: ``gamma_min <= gamma_max``, each error naming both,
    ``gamma_min >= -INVERSE_GAMMA_MAX`` (an inverse focal weight ``(1 + p_t)^|γ|`` beyond
    it leaves float32's range) and ``gamma_max <= FOCAL_GAMMA_MAX``."""
    gamma_min = check_real(gamma_min, "gamma_min", minimum=-INVERSE_GAMMA_MAX)
    gamma_max = check_real(gamma_max, "gamma_max", maximum=FOCAL_GAMMA_MAX)
    if gamma_max < gamma_min:
        raise ValueError(f"gamma_max must be >= gamma_min, got gamma_max={gamma_max:g} and gamma_min={gamma_min:g}")
    return gamma_min, gamma_max


def update_gammas(
    gammas: Tensor, gaps: Tensor, lam: float, switch: float, gamma_min: float, gamma_max: float
) -> Tensor:
    """The rule of :func:`adafocal_update` as tensor operations on validated ``gammas`` and
    ``gaps`` (NaN for an empty bin), where they are: nothing is read back to the host."""
    empty = torch.isnan(gaps)
    direction = (gammas >= 0).to(gammas.dtype).mul_(2.0).sub_(1.0)  # +1 focal, -1 inverse focal
    new = gammas * torch.exp(direction * lam * torch.where(empty, 0.0, gaps))
    new = torch.where(gammas == 0, 0.0, new)  # 0 stays 0 (not 0 * inf = NaN when exp overflows)
    new = torch.where(new.abs() < switch, direction * -switch, new)
    return torch.where(empty, gammas, new.clamp(gamma_min, gamma_max))


def adafocal_loss(
    logits: Tensor,
    targets: Tensor,
    gammas,
    edges,
    base: str = "focal",
    reduction: str = "mean",
    validate: bool = True,
) -> Tensor:
    """AdaFocal loss (Ghosh et al. 2022, Eq. 5) for per-bin ``gammas`` ``(M,)`` and ``edges`` ``(M+1,)``.

    Each sample takes the gamma of the bin ``[edges[b], edges[b+1])`` its statistic ``d`` falls
    in (values beyond the outer edges go to the first or last bin): ``gamma >= 0`` gives
    ``-(1 - d)^gamma log p_t`` and ``gamma < 0`` gives ``-(1 + d)^|gamma| log p_t``, with
    ``d = p_t`` (``base="focal"``) or ``d = p_t - p_j`` (``base="dual"``, the dual focal form of
    AdaDualFocal). No gradient flows through gamma. ``validate``: see
    :func:`calibnb.losses.focal_loss`; it also checks the values of ``gammas`` (finite, at least
    ``-INVERSE_GAMMA_MAX``, an inverse focal weight ``(1 + d)^|gamma|`` beyond it leaves float32, and at
    most ``FOCAL_GAMMA_MAX``)
    and ``edges`` (finite, sorted), reading them to the host.
    """
    base = check_choice(base, "base", ("focal", "dual"))
    reduction = check_reduction(reduction)
    logits, targets = check_logits_targets(logits, targets, check_validate(validate))
    gammas, edges = check_bins(gammas, edges, validate)
    return validation_binned_focal(logits, targets, gammas, edges, base, reduction, validate)


def check_bins(gammas, edges, validate: bool = True):
    """AdaFocal's per-bin ``gammas`` ``(M,)`` and ``edges`` ``(M+1,)``: shapes always, values when
    ``validate`` (:func:`adafocal_loss`). Returns them unchanged (arrays stay arrays)."""
    g_shape, e_shape = tuple(np.shape(gammas)), tuple(np.shape(edges))
    if len(g_shape) != 1 or g_shape[0] == 0 or e_shape != (g_shape[0] + 1,):
        raise ValueError(f"gammas must be a non-empty 1-D array and edges must have shape (len(gammas) + 1,), "
                         f"got {e_shape} for gammas {g_shape}")
    if validate:
        check_vector(gammas, "gammas", minimum=-INVERSE_GAMMA_MAX, maximum=FOCAL_GAMMA_MAX)
        check_vector(edges, "edges", non_decreasing=True)
    return gammas, edges


def validation_binned_focal(
    logits: Tensor, targets: Tensor, gammas, edges, base: str, reduction: str, validate: bool
) -> Tensor:
    """:func:`adafocal_loss` on checked inputs: the bins' ``gammas`` and ``edges`` are not read
    (:class:`AdaFocalLoss` calls it with its own buffers, valid by construction)."""
    gammas = torch.as_tensor(gammas, dtype=logits.dtype, device=logits.device)
    edges = torch.as_tensor(edges, dtype=logits.dtype, device=logits.device)
    inner = edges[1:-1]

    focal = PerSampleFocalTerm(lambda p_t, p_j: lookup(gammas, p_t - p_j, inner), signed=True)
    family = "largest" if base == "dual" else "none"
    return focal_family(logits, targets, focal, family, reduction=reduction, validate=validate)


class ValidationBinnedLoss(nn.Module):
    """Shared state of AdaFocal and CalFocal: bin edges over ``[0, 1]``, the bin lookup, and an
    :meth:`update` from the validation set that a training loop calls between batches.

    The update runs where its inputs are: validation probabilities given as a tensor on a GPU
    are binned there and the buffers updated there, reading nothing back to the host; each
    update's record waits on the device until :attr:`history` is read (once per epoch, for the
    logs). Arrays (numpy) are checked as probabilities first; tensors only when the loss was
    built with ``validate=True``.
    """

    def __init__(self, n_bins: int, reduction: str, validate: bool) -> None:
        super().__init__()
        self.n_bins = check_n_bins(n_bins)
        self.reduction = check_reduction(reduction)
        self.validate = check_validate(validate)
        self.register_buffer("edges", torch.linspace(0.0, 1.0, self.n_bins + 1, dtype=torch.float64))
        self._history: list[dict[str, np.ndarray]] = []
        self._pending: list[dict[str, Tensor]] = []

    @property
    def history(self) -> list[dict[str, np.ndarray]]:
        """One record per :meth:`update` (float64 arrays), brought to the host when read."""
        if self._pending:
            self._history += [{key: value.cpu().numpy() for key, value in record.items()} for record in self._pending]
            self._pending.clear()
        return self._history

    def validation_bins(self, val_probs, val_labels) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Equal-mass bins of validation top-label confidence: edges, counts, mean confidence,
        accuracy, as float64 tensors on the device of ``val_probs`` (on the CPU for arrays).

        The bins are those of :func:`calibnb.metrics.binning.bin_edges` (``binning="mass"``)
        with the ``(lo, hi]`` assignment of :func:`~calibnb.metrics.binning.assign_bins`,
        computed with tensor operations. Mean confidence and accuracy are NaN in an empty bin.
        """
        if not isinstance(val_probs, Tensor) or self.validate:
            probs = check_probs(val_probs, "val_probs")
            checked = probs, check_labels(val_labels, *probs.shape, name="val_labels", probs_name="val_probs")
            device = val_probs.device if isinstance(val_probs, Tensor) else torch.device("cpu")
            val_probs, val_labels = (torch.from_numpy(a).to(device) for a in checked)
        elif val_probs.ndim != 2 or val_labels.shape != val_probs.shape[:1]:
            raise ValueError(f"val_probs (N, K) and val_labels (N,) do not fit: {tuple(val_probs.shape)}, "
                             f"{tuple(val_labels.shape)}")
        confidence, predicted = val_probs.to(torch.float64).max(dim=1)
        correct = (predicted == val_labels).to(torch.float64)
        edges = _mass_edges(torch.sort(confidence).values, self.n_bins)
        bins = torch.searchsorted(edges[1:-1].contiguous(), confidence)  # (lo, hi]
        sums = torch.zeros(3, self.n_bins, dtype=torch.float64, device=confidence.device)
        sums.index_add_(1, bins, torch.stack([torch.ones_like(confidence), confidence, correct]))
        counts, conf_sum, acc_sum = sums
        means = torch.where(counts > 0, sums[1:] / counts.clamp_min(1), torch.nan)
        return edges, counts, means[0], means[1]


def _mass_edges(sorted_confidence: Tensor, n_bins: int) -> Tensor:
    """:func:`calibnb.metrics.binning.mass_edges_sorted` where the confidences are: the group
    starts (:func:`~calibnb.metrics.binning.mass_group_starts`) follow from the sample count
    alone, so only the midpoints touch the values and nothing is read back."""
    starts = mass_group_starts(sorted_confidence.shape[0], n_bins)
    inside = torch.as_tensor(starts, dtype=torch.long).to(sorted_confidence.device)
    interior = torch.ones(n_bins - 1, dtype=torch.float64, device=sorted_confidence.device)
    interior[: len(inside)] = (sorted_confidence[inside - 1] + sorted_confidence[inside]) / 2.0
    zero = interior.new_zeros(1)
    return torch.cat([zero, interior, zero + 1.0])


class AdaFocalLoss(ValidationBinnedLoss):
    """AdaFocal: focal loss with one gamma per validation bin, updated by Algorithm 1 of Ghosh et al. (2022).

    Starts from equal-width bins with ``gamma_init`` everywhere (the first epoch is focal loss
    with gamma 1). ``base="dual"`` is AdaDualFocal, the variant in Tao et al.'s research code:
    the dual focal loss with training samples looked up by ``p_t - p_j``; its code never
    switches to inverse focal loss, which is ``switch=0`` here. State: ``gammas`` (per bin) and
    ``edges`` are buffers (they follow ``.to(device)`` and ``state_dict``); ``history`` holds one
    record per :meth:`update` with the new ``edges``, the bins' ``gaps`` and the new ``gammas``.
    The forward pass is summed or averaged like any loss (``reduction``); the authors' code sums.
    """

    def __init__(
        self,
        n_bins: int = 15,
        lam: float = 1.0,
        gamma_init: float = 1.0,
        gamma_max: float = 20.0,
        gamma_min: float = -2.0,
        switch: float = 0.2,
        base: str = "focal",
        reduction: str = "mean",
        validate: bool = True,
    ) -> None:
        super().__init__(n_bins, reduction, validate)
        self.lam = check_real(lam, "lam", minimum=0.0)
        self.gamma_min, self.gamma_max = check_gamma_range(gamma_min, gamma_max)
        self.switch = check_real(switch, "switch", minimum=0.0)
        gamma_init = check_real(gamma_init, "gamma_init")
        if not self.gamma_min <= gamma_init <= self.gamma_max:
            raise ValueError(f"gamma_init must lie in [gamma_min, gamma_max] = [{self.gamma_min:g}, "
                             f"{self.gamma_max:g}], got {gamma_init:g}")
        self.base = check_choice(base, "base", ("focal", "dual"))
        self.register_buffer("gammas", torch.full((self.n_bins,), gamma_init, dtype=torch.float64))

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        logits, targets = check_logits_targets(logits, targets, self.validate)
        return validation_binned_focal(logits, targets, self.gammas, self.edges, self.base, self.reduction,
                                       self.validate)

    @torch.no_grad()
    def update(self, val_probs, val_labels) -> Tensor:
        """Recompute the validation bins and apply :func:`adafocal_update`; return the new gammas.

        ``val_probs`` ``(N, K)`` and ``val_labels`` ``(N,)``, arrays or tensors (a tensor on the
        GPU is binned there: :class:`ValidationBinnedLoss`).
        """
        edges, _, confidence, accuracy = self.validation_bins(val_probs, val_labels)
        gaps = confidence - accuracy
        gammas = update_gammas(self.gammas, gaps.to(self.gammas.device), self.lam, self.switch,
                               self.gamma_min, self.gamma_max)
        self.gammas.copy_(gammas)
        self.edges.copy_(edges)
        self._pending.append({"edges": edges, "gaps": gaps, "gammas": gammas.clone()})
        return self.gammas.clone()

    def extra_repr(self) -> str:
        return (
            f"n_bins={self.n_bins}, lam={self.lam}, gamma_max={self.gamma_max}, gamma_min={self.gamma_min}, "
            f"switch={self.switch}, base={self.base!r}, reduction={self.reduction!r}"
        )


class CalFocalLoss(ValidationBinnedLoss):
    """CalFocal, the precursor of AdaFocal (Ghosh et al. 2022, §5.1, Eqs. 2 and 3).

    ``case=1``: each sample's ``gamma_n = exp(lam (p_n - A_b))`` with ``A_b`` the validation
    accuracy of the bin ``b`` that ``p_n`` falls in (Eq. 2). ``case=2``: one gamma per bin,
    ``gamma_b = exp(lam (C_b - A_b))`` from the bin's mean confidence ``C_b`` (Eq. 3). Gammas
    carry no gradient. Until the first :meth:`update` the bins are equal-width with ``C_b = A_b``
    = the bin centre (a calibrated prior, so case 2 starts as focal loss with gamma 1); empty
    validation bins keep their previous statistics. ``gamma_max`` caps ``exp(...)``, which
    overflows float32 for the paper's ``lam = 100``; beyond it ``(1 - p)^gamma`` has underflowed
    for every ``p`` that matters.
    """

    def __init__(
        self, n_bins: int = 15, lam: float = 10.0, case: int = 2, gamma_max: float = 1e3, reduction: str = "mean",
        validate: bool = True,
    ) -> None:
        super().__init__(n_bins, reduction, validate)
        self.lam = check_real(lam, "lam", minimum=0.0)
        self.case = check_choice(case, "case", (1, 2))
        self.gamma_max = check_real(gamma_max, "gamma_max", minimum=1.0, maximum=FOCAL_GAMMA_MAX)
        centres = (self.edges[1:] + self.edges[:-1]) / 2
        self.register_buffer("accuracies", centres.clone())
        self.register_buffer("confidences", centres.clone())

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        logits, targets = check_logits_targets(logits, targets, self.validate)
        inner = self.edges[1:-1].to(logits.device, logits.dtype)
        accuracies = self.accuracies.to(logits.device, logits.dtype)
        # case 1: p_t - A_b; case 2: C_b - A_b, a table of its own
        table = accuracies if self.case == 1 else self.confidences.to(logits.device, logits.dtype) - accuracies

        def gamma_of(p_t: Tensor, p_j: float) -> Tensor:
            gap = p_t - lookup(table, p_t, inner) if self.case == 1 else lookup(table, p_t, inner)
            # lam * gap, with 0 for a gap of 0: a lam beyond the dtype's range is inf there, and inf * 0 NaN
            exponent = torch.where(gap == 0, 0.0, gap * self.lam)
            return torch.exp(exponent).clamp_max(self.gamma_max)

        return focal_family(logits, targets, PerSampleFocalTerm(gamma_of), reduction=self.reduction,
                            validate=self.validate)

    @torch.no_grad()
    def update(self, val_probs, val_labels) -> None:
        """Recompute the equal-mass validation bins and their confidence and accuracy (arrays
        or tensors, as :meth:`AdaFocalLoss.update`)."""
        edges, _, confidence, accuracy = (t.to(self.edges.device) for t in self.validation_bins(val_probs, val_labels))
        empty = torch.isnan(confidence)
        self.confidences.copy_(torch.where(empty, self.confidences, confidence))
        self.accuracies.copy_(torch.where(empty, self.accuracies, accuracy))
        self.edges.copy_(edges)
        self._pending.append({"edges": edges, "confidences": confidence, "accuracies": accuracy})
