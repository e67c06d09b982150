"""Count the reads from device to host that a piece of code makes: what stalls a GPU.

A training step on a GPU only queues work; the host runs ahead until something needs a value:
``.item()``, ``bool(t)`` in an ``if``, ``.tolist()``, ``.cpu()``/``.numpy()``, ``float(t)``,
``int(t)``, and the operations whose output shape depends on the values (``nonzero``, boolean-mask
indexing, ``unique``, ``masked_select``). Each is a synchronisation: the queue drains, data,
compute and logging stop overlapping, the step cannot be captured as a CUDA graph and
``torch.compile`` breaks the graph there. :func:`count_host_reads` records every such call made
from Python through PyTorch's ``__torch_function__`` protocol (a ``TorchFunctionMode``), so it
counts them on the CPU as well, where they cost nothing, and a test can demand zero before the
code ever meets a GPU. On a GPU, ``torch.cuda.set_sync_debug_mode("error")`` is the exact check.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

#: Calls that read tensor values back to the host, or whose output shape depends on them.
HOST_READS = {
    Tensor.item: "item", Tensor.tolist: "tolist", Tensor.cpu: "cpu", Tensor.numpy: "numpy",
    Tensor.__bool__: "bool", Tensor.__float__: "float", Tensor.__int__: "int",
    Tensor.__index__: "index", Tensor.__format__: "format", Tensor.__repr__: "repr",
    Tensor.nonzero: "nonzero", torch.nonzero: "nonzero", torch.argwhere: "nonzero",
    Tensor.masked_select: "masked_select", torch.masked_select: "masked_select",
    Tensor.unique: "unique", torch.unique: "unique", torch.unique_consecutive: "unique",
    torch.repeat_interleave: "repeat_interleave", Tensor.repeat_interleave: "repeat_interleave",
}


def _boolean_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(part, Tensor) and part.dtype == torch.bool for part in parts)


def _to_host(args, kwargs) -> bool:
    """Whether a ``Tensor.to`` call moves its tensor to the CPU from another device."""
    tensor, rest = args[0], list(args[1:]) + list(kwargs.values())
    targets = [torch.device(a) for a in rest if isinstance(a, (str, torch.device))]
    return tensor.device.type != "cpu" and any(t.type == "cpu" for t in targets)


#: The same reads as the ATen operators they reach: what a custom ``backward`` (run by the
#: autograd engine, outside Python's function modes) is seen to call.
ATEN_READS = {
    "_local_scalar_dense": "item", "nonzero": "nonzero", "masked_select": "masked_select",
    "_unique2": "unique", "unique_dim": "unique", "unique_consecutive": "unique",
    "repeat_interleave": "repeat_interleave",
}


class HostReadCounter(TorchFunctionMode):
    """A ``TorchFunctionMode`` that tallies host reads by kind (``HOST_READS``, boolean-mask
    indexing as ``"mask_index"``, ``.to("cpu")`` from a device as ``"cpu"``), with a
    ``TorchDispatchMode`` beside it (``_AtenReads``) for the reads of custom backward
    functions, which the autograd engine runs outside function modes."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()
        self.inside_read = 0  # > 0 while a read seen here runs (its ATen calls are not counted again)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        kind = HOST_READS.get(func)
        if kind is None and func in (Tensor.__getitem__, Tensor.__setitem__) and _boolean_index(args[1]):
            kind = "mask_index"
        if kind is None and func is Tensor.to and _to_host(args, kwargs):
            kind = "cpu"
        if kind is None:
            return func(*args, **kwargs)
        self.counts[kind] += 1
        self.inside_read += 1
        try:
            return func(*args, **kwargs)
        finally:
            self.inside_read -= 1


class _AtenReads(TorchDispatchMode):
    """Counts the ATen operators of :data:`ATEN_READS` (and indexing by a boolean mask) into
    ``counter`` unless a read already counted by the function mode is running."""

    def __init__(self, counter: HostReadCounter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__.rstrip("_")
        kind = ATEN_READS.get(name)
        if kind == "repeat_interleave" and kwargs.get("output_size") is not None:
            kind = None
        if kind is None and name in ("index", "index_put") and _boolean_index(tuple(args[1])):
            kind = "mask_index"
        if kind is not None and not self.counter.inside_read:
            self.counter.counts[kind] += 1
        return func(*args, **kwargs)


@contextmanager
def count_host_reads() -> Iterator[HostReadCounter]:
    """``with count_host_reads() as reads: ...`` then ``reads.total`` and ``reads.counts``.

    Counts the reads made from Python, and those of custom backward functions at the level of
    the ATen operators they reach (there, ``.numpy()`` of a CPU tensor reaches none and is not
    seen).
    """
    counter = HostReadCounter()
    with counter, _AtenReads(counter):
        yield counter
