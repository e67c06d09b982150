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
    workers on two cores do not oversubscribe them (torch slows down many-fold when they do)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)
