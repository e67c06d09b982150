"""Running PyTorch on one intra-op thread for a block of work, then giving the setting back.

``torch.set_num_threads`` is a process-wide setting: :func:`single_threaded` changes it only
inside its block and restores the previous count on the way out, also when the block raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def single_threaded() -> Iterator[None]:
    """Run torch on one intra-op thread inside the block (the previous count restored afterwards).

    For work made of many small operations (the toy models' tiny matrices, the eager kernel of
    the focal-temperature grid): on a small CPU shared with other work, extra threads only wait
    for each other. The setting is the process's, so other Python threads see it too while the
    block runs.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
