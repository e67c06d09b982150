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

import math

import numpy as np
import torch
from torch import Tensor

from calibnb._validation import check_labels, check_n_bins, check_probs, check_vector, to_numpy
from calibnb.losses._common import check_logits_targets, check_reduction, check_validate, lookup
from calibnb.losses._fused import PerSampleFocalTerm, focal_family
from calibnb.losses.base import TrainingLoss, validation_set
from calibnb.losses.declarations import ADAFOCAL, CALFOCAL
from calibnb.metrics.binning import mass_group_starts


def adafocal_update(
    gammas,
    gaps,
    lam: float = ADAFOCAL.default("lam"),
    switch: float = ADAFOCAL.default("switch"),
    gamma_min: float = ADAFOCAL.default("gamma_min"),
    gamma_max: float = ADAFOCAL.default("gamma_max"),
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

    Examples
    --------
    >>> from calibnb.losses import adafocal_update
    >>> gaps = [0.1, -0.05, float("nan")]  # over-confident, under-confident, empty
    >>> adafocal_update([1.0, 1.0, -0.5], gaps, lam=1.0).round(4).tolist()
    [1.1052, 0.9512, -0.5]
    >>> adafocal_update([0.1], [-0.5], switch=0.2).tolist()  # 0.1 exp(-0.5) = 0.06 < 0.2: inverse focal
    [-0.2]
    """
    lam, switch, gamma_min, gamma_max = ADAFOCAL.checked(lam=lam, switch=switch, gamma_min=gamma_min,
                                                         gamma_max=gamma_max)
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
    base: str = ADAFOCAL.default("base"),
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
    the smallest ``gamma_min`` and at most the largest ``gamma_max`` of
    ``ADAFOCAL``)
    and ``edges`` (finite, sorted), reading them to the host.

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import adafocal_loss, focal_loss, inverse_focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> edges = [0.0, 0.5, 1.0]
    >>> adafocal_loss(z, t, [1.0, 3.0], edges, reduction="none")  # gamma 3 above p_t = 0.5, 1 below
    tensor([0.0024, 0.7358], dtype=torch.float64)
    >>> torch.allclose(adafocal_loss(z, t, [-1.0, -1.0], edges), inverse_focal_loss(z, t, gamma=1))
    True
    """
    [base] = ADAFOCAL.checked(base=base)
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
        check_vector(gammas, "gammas", minimum=ADAFOCAL.params["gamma_min"].minimum,
                     maximum=ADAFOCAL.params["gamma_max"].maximum)
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


class ValidationBinnedLoss(TrainingLoss):
    """Shared state of AdaFocal and CalFocal: bin edges over ``[0, 1]``, the bin lookup, and an
    :meth:`update` from the validation set that a training loop calls between batches.

    The update runs where its inputs are: validation probabilities given as a tensor on a GPU
    are binned there and the buffers updated there, reading nothing back to the host; each
    update's record waits on the device until :attr:`history` is read (once per epoch, for the
    logs). Arrays (numpy) are checked as probabilities first; tensors only when the loss was
    built with ``validate=True``.
    """

    learns_from_validation = True

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

    def observe_validation(self, val_probs, val_labels) -> None:
        """The trainer's hook (:class:`~calibnb.losses.base.TrainingLoss`): :meth:`update`."""
        self.update(val_probs, val_labels)

    def get_extra_state(self) -> list[dict[str, Tensor]]:
        """:attr:`history` in the ``state_dict`` (as tensors, which ``torch.load(weights_only=True)``
        reads), so that a checkpoint resumes it."""
        return [{key: torch.from_numpy(value) for key, value in record.items()} for record in self.history]

    def set_extra_state(self, state: list[dict[str, Tensor]]) -> None:
        self._pending.clear()
        self._history[:] = [{key: value.cpu().numpy() for key, value in record.items()} for record in state]

    def validation_bins(self, val_probs, val_labels) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Equal-mass bins of validation top-label confidence: edges, counts, mean confidence,
        accuracy, as float64 tensors on the device of ``val_probs`` (on the CPU for arrays).

        The bins are those of :func:`calibnb.metrics.binning.bin_edges` (``binning="mass"``)
        with the ``(lo, hi]`` assignment of :func:`~calibnb.metrics.binning.assign_bins`,
        computed with tensor operations. Mean confidence and accuracy are NaN in an empty bin.
        """
        val_probs, val_labels = validation_set(val_probs, val_labels, self.validate)
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

    Examples
    --------
    >>> from calibnb.losses import AdaFocalLoss
    >>> loss = AdaFocalLoss(n_bins=2, lam=1.0)  # every bin starts at gamma_init = 1
    >>> val_probs = [[0.6, 0.4], [0.7, 0.3], [0.8, 0.2], [0.9, 0.1]]
    >>> val_labels = [0, 1, 0, 0]  # equal-mass bins {0.6, 0.7} (accuracy 1/2) and {0.8, 0.9} (1)
    >>> loss.update(val_probs, val_labels)  # gamma exp(lam (confidence - accuracy)): gaps 0.15, -0.15
    tensor([1.1618, 0.8607], dtype=torch.float64)
    >>> loss.edges  # a training sample with p_t >= 0.75 now takes gamma 0.86
    tensor([0.0000, 0.7500, 1.0000], dtype=torch.float64)
    """

    declaration = ADAFOCAL

    def __init__(
        self,
        n_bins: int = ADAFOCAL.default("n_bins"),
        lam: float = ADAFOCAL.default("lam"),
        gamma_init: float = ADAFOCAL.default("gamma_init"),
        gamma_max: float = ADAFOCAL.default("gamma_max"),
        gamma_min: float = ADAFOCAL.default("gamma_min"),
        switch: float = ADAFOCAL.default("switch"),
        base: str = ADAFOCAL.default("base"),
        reduction: str = "mean",
        validate: bool = True,
    ) -> None:
        n_bins, lam, gamma_init, gamma_max, gamma_min, switch, base = ADAFOCAL.checked(
            n_bins=n_bins, lam=lam, gamma_init=gamma_init, gamma_max=gamma_max, gamma_min=gamma_min, switch=switch,
            base=base)
        super().__init__(n_bins, reduction, validate)
        self.lam, self.gamma_max, self.gamma_min, self.switch, self.base = lam, gamma_max, gamma_min, switch, base
        self.register_buffer("gammas", torch.full((self.n_bins,), gamma_init, dtype=torch.float64))

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        logits, targets = check_logits_targets(logits, targets, self.validate)
        return validation_binned_focal(logits, targets, self.gammas, self.edges, self.base, self.reduction,
                                       self.validate)

    @torch.no_grad()
    def update(self, val_probs, val_labels) -> Tensor:
        """Recompute the validation bins and apply :func:`adafocal_update`; return the new gammas.

        ``val_probs`` ``(N, K)`` and ``val_labels`` ``(N,)``, arrays or tensors (a tensor on the
        GPU is binned there: ``ValidationBinnedLoss``).
        """
        edges, _, confidence, accuracy = self.validation_bins(val_probs, val_labels)
        gaps = confidence - accuracy
        gammas = update_gammas(self.gammas, gaps.to(self.gammas.device), self.lam, self.switch,
                               self.gamma_min, self.gamma_max)
        self.gammas.copy_(gammas)
        self.edges.copy_(edges)
        self._pending.append({"edges": edges, "gaps": gaps, "gammas": gammas.clone()})
        return self.gammas.clone()

    def adapted_gammas(self) -> list[float]:
        """The bins' current γ (one history row per epoch)."""
        return self.gammas.detach().cpu().tolist()

    def run_record(self) -> dict:
        """``adafocal_updates``: each update's bin ``edges``, ``gaps`` and new ``gammas`` (Fig. 5 of
        Ghosh et al. 2022), an empty bin's gap and γ as None (JSON null)."""
        def finite_or_none(values) -> list:
            return [v if math.isfinite(v) else None for v in np.asarray(values, dtype=np.float64).ravel().tolist()]

        return {"adafocal_updates": [{key: finite_or_none(value) for key, value in update.items()}
                                     for update in self.history]}

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

    Examples
    --------
    >>> import torch
    >>> from calibnb.losses import CalFocalLoss, focal_loss
    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]], dtype=torch.float64)
    >>> t = torch.tensor([0, 2])  # p_t = 0.79 (right) and 0.33 (wrong: class 1 has 0.37)
    >>> loss = CalFocalLoss(n_bins=2, lam=10.0, case=2)
    >>> torch.allclose(loss(z, t), focal_loss(z, t, gamma=1))  # before any update: gamma exp(0) = 1
    True
    >>> val_probs = [[0.6, 0.4], [0.7, 0.3], [0.8, 0.2], [0.9, 0.1]]
    >>> val_labels = [0, 1, 0, 0]  # equal-mass bins {0.6, 0.7} (accuracy 1/2) and {0.8, 0.9} (1)
    >>> loss.update(val_probs, val_labels)
    >>> loss.confidences - loss.accuracies  # C_b - A_b: gamma_b = exp(1.5) and exp(-1.5)
    tensor([ 0.1500, -0.1500], dtype=torch.float64)
    """

    declaration = CALFOCAL

    def __init__(
        self, n_bins: int = CALFOCAL.default("n_bins"), lam: float = CALFOCAL.default("lam"),
        case: int = CALFOCAL.default("case"), gamma_max: float = CALFOCAL.default("gamma_max"),
        reduction: str = "mean", validate: bool = True,
    ) -> None:
        n_bins, lam, case, gamma_max = CALFOCAL.checked(n_bins=n_bins, lam=lam, case=case, gamma_max=gamma_max)
        super().__init__(n_bins, reduction, validate)
        self.lam, self.case, self.gamma_max = lam, case, gamma_max
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
