"""The papers' order of methods: the rows of every results table.

The papers' tables list the methods by family in one order (DFL's Table 1, Tao et al. 2023,
extended with the methods of the other papers); :func:`method_order` sorts the labels of
:func:`calibnb.runs.label_methods` into it.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._validation import check_type
from ..runs import method_family

#: Method families in the papers' column order.
FAMILIES = ("CE", "Brier", "MMCE", "LS-0.05", "FL", "Inverse FL", "FLSD-53", "AdaFocal", "DFL",
            "AdaDualFocal", "FCL")


def method_order(labels) -> list[str]:
    """Distinct labels in the papers' order (families as :data:`FAMILIES`, then by name)."""
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise TypeError(f"labels must be an iterable of method labels, got {type(labels).__name__}")
    labels = [check_type(m, "labels", str, "method labels (str)") for m in labels]
    rank = {family: i for i, family in enumerate(FAMILIES)}
    return sorted(set(labels), key=lambda m: (rank.get(method_family(m), len(rank)), m))
