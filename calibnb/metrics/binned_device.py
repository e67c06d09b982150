"""The bins of the top-label ECE on a torch device: the same ``(lo, hi]`` bins as
:mod:`calibnb.metrics.binning` (equal width, or equal mass at midpoints between the groups of
:func:`calibnb.metrics.binning.mass_group_starts`), summed where the confidences are.

Only the ``n_bins`` sums per bin come back to the host, where ``ece_from_bins`` and
``mce_from_bins`` (Guo et al. 2017, Eqs. 3 and 5) finish them as for numpy input.
"""

from __future__ import annotations

import numpy as np

from calibnb.metrics.binning import mass_group_starts


def device_bin_sums(conf, correct, n_bins: int, binning: str):
    """Per-bin ``(count, sum of conf, sum of correct)`` as float64 numpy arrays, computed on the
    device of the float64 tensors ``conf`` and ``correct``."""
    import torch

    edges = device_edges(conf, n_bins, binning)
    bins = torch.searchsorted(edges[1:-1].contiguous(), conf, right=False)  # numpy's side="left"
    sums = torch.zeros((3, n_bins), dtype=torch.float64, device=conf.device)
    sums[0].index_add_(0, bins, torch.ones_like(conf))
    sums[1].index_add_(0, bins, conf)
    sums[2].index_add_(0, bins, correct)
    count, conf_sum, acc_sum = sums.cpu().numpy()
    return count, conf_sum, acc_sum


def device_edges(conf, n_bins: int, binning: str):
    """The ``n_bins + 1`` edges as a float64 tensor on ``conf``'s device."""
    import torch

    if binning == "width":
        return torch.linspace(0.0, 1.0, n_bins + 1, dtype=torch.float64, device=conf.device)
    ordered = torch.sort(conf).values
    starts = torch.as_tensor(mass_group_starts(conf.shape[0], n_bins), device=conf.device)
    interior = torch.ones(n_bins - 1, dtype=torch.float64, device=conf.device)
    interior[: starts.shape[0]] = (ordered[starts - 1] + ordered[starts]) / 2.0
    ends = torch.tensor([0.0, 1.0], dtype=torch.float64, device=conf.device)
    return torch.cat([ends[:1], interior, ends[1:]])


__all__ = ["device_bin_sums", "device_edges", "np"]
