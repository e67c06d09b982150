"""The training notebook run as a user runs it: ``python -m calibnb run nbs/train.md -p ...``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_train_notebook(params: dict, out: Path, cwd: Path, timeout: int = 900,
                       notebook: Path = ROOT / "nbs" / "train.md") -> Path:
    """Run ``nbs/train.md`` (or a copy of it, ``notebook``) with ``params`` (each ``-p KEY JSON``)
    into ``out`` from ``cwd``; fail the test with the run's stderr unless it exits 0. Returns ``out``."""
    command = [sys.executable, "-m", "calibnb", "run", str(notebook), "--out", str(out)]
    for key, value in params.items():
        command += ["-p", key, json.dumps(value)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return out
