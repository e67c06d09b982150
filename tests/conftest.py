"""Shared pytest fixtures and paths."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return REPO


def pytest_configure(config):
    """Under pytest-xdist each worker is its own process: one torch thread each, so two
    workers on two cores do not oversubscribe them (torch slows down many-fold when they do).
    The environment variables carry the same limit into the processes a worker starts, such as
    the Jupyter kernels of the notebook tests: without them a kernel took all the cores beside
    the other worker, and a 20-second training cell ran past its 300-second limit in CI."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[variable] = "1"
        import torch

        torch.set_num_threads(1)
