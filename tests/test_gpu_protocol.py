"""The GPU protocol (``bench/gpu_protocol.sh``) runs as one command, here at its reduced CPU size
(``--cpu-smoke``), so that on a GPU machine it has already run once, line for line (issue 15)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def protocol(*args, env=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, **(env or {})}
    return subprocess.run(["bash", str(ROOT / "bench" / "gpu_protocol.sh"), *args], capture_output=True,
                          text=True, env=env, timeout=900)


@pytest.mark.slow
def test_the_protocol_runs_on_the_cpu_at_a_reduced_size(tmp_path):
    done = protocol("--cpu-smoke", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    environment = json.loads((tmp_path / "environment.json").read_text())
    assert environment["torch"] and environment["device"].startswith("CPU")
    assert "passed" in (tmp_path / "tests.txt").read_text()
    bench = (tmp_path / "bench.txt").read_text()
    assert "ratio (b) / (a)" in bench and "0 host reads per step" in bench
    calibration = (tmp_path / "calibration.txt").read_text()
    assert all(f"  {line}: " in calibration for line in ("TS, ECE grid", "TS, NLL", "FTS, paper grid", "ECE (15 bins)"))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [run["loss"] for run in summary["runs"]] == ["cross_entropy", "focal_loss", "dual_focal_loss", "adafocal"]
    for run in summary["runs"]:
        assert (tmp_path / run["run"] / "metrics.json").is_file() and run["images_per_second"] > 0


@pytest.mark.slow
def test_the_protocol_says_what_is_missing(tmp_path):
    done = protocol("--out", str(tmp_path))  # the full protocol on a machine without CUDA
    assert done.returncode == 2 and "error: no CUDA device" in done.stderr and "--cpu-smoke" in done.stderr
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    done = protocol("--cpu-smoke", env={"PYTHON": str(tmp_path / "bare" / "bin" / "python")})
    if not (ROOT / ".whl").is_dir():  # with wheels at hand it would install them instead
        assert done.returncode == 2 and "lacks:" in done.stderr and "torch" in done.stderr, done.stderr
    done = protocol("--frobnicate")
    assert done.returncode == 2 and "error: unknown argument '--frobnicate'" in done.stderr
