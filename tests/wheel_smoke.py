"""What a user of the published wheel runs first, in an environment that holds the wheel and its
runtime dependencies alone.

Run by that environment's Python, from outside the repository, by tests/test_packaging.py (the
slow wheel test) and by the release workflow (.github/workflows/release.yml) before it publishes::

    python wheel_smoke.py <expected version>

It imports only the standard library, calibnb and calibnb's runtime dependencies, and exits
non-zero (an AssertionError or an ImportError) if anything is missing or wrong.
"""

import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import calibnb
import calibnb.calibration
import calibnb.losses
import calibnb.metrics
from calibnb.calibration import TemperatureScaling
from calibnb.data import list_predictions, load_predictions
from calibnb.losses import focal_loss
from calibnb.metrics import ece

#: Distributions of the extras (book, test) that must not come with the runtime dependencies.
NOT_RUNTIME = ("jupyter_book", "papermill", "pytest", "hypothesis", "submitit")


def main(expected_version: str) -> None:
    # The installed package, not a source tree that happens to be on the path.
    installed = Path(calibnb.__file__).resolve()
    assert Path(sys.prefix).resolve() in installed.parents, f"calibnb imported from {installed}"
    assert calibnb.__version__ == expected_version, (calibnb.__version__, expected_version)

    # End to end on random logits: a calibrator fitted, a metric computed, a loss evaluated.
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, size=400)
    logits = rng.normal(size=(400, 5)) + 4.0 * np.eye(5)[labels]  # overconfident and mostly right
    scaler = TemperatureScaling().fit(logits, labels)
    assert np.isfinite(scaler.temperature_) and scaler.temperature_ > 0, scaler.temperature_
    before = ece(torch.softmax(torch.as_tensor(logits), 1).numpy(), labels)
    after = ece(scaler.predict_proba(logits), labels)
    assert 0.0 <= after <= 1.0 and 0.0 <= before <= 1.0, (before, after)
    loss = focal_loss(torch.as_tensor(logits, dtype=torch.float32), torch.as_tensor(labels), gamma=3.0)
    assert torch.isfinite(loss), loss

    # The package data: every shipped prediction file is in the wheel and reads back whole
    # (load_predictions checks each file's arrays against their recorded SHA-256).
    for name in list_predictions():
        network_logits, network_labels = load_predictions(name)
        assert network_logits.shape[0] == network_labels.shape[0] == 10_000, name

    # The front door on a shipped network saved as a user saves theirs: `python -m calibnb calibrate`
    # on a calibration half with a test half, then `apply` of the saved calibrator.
    network_logits, network_labels = load_predictions("cifar10-wideresnet-16-4")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        np.savez(folder / "cal.npz", logits=network_logits[::2], labels=network_labels[::2])
        np.savez(folder / "test.npz", logits=network_logits[1::2], labels=network_labels[1::2])
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "calibnb", "calibrate", str(folder / "cal.npz"),
                        "--test", str(folder / "test.npz"), "--out", str(folder / "report")], check=True)
        seconds = time.perf_counter() - started
        report = json.loads((folder / "report" / "table.json").read_text())
        subprocess.run([sys.executable, "-m", "calibnb", "apply", str(folder / "report" / "calibrator.json"),
                        str(folder / "test.npz"), "--out", str(folder / "probs.npy")], check=True)
        assert np.load(folder / "probs.npy").shape == (5000, 10)
    print(f"calibrate chose {report['chosen']} in {seconds:.1f} s")

    present = [name for name in NOT_RUNTIME if importlib.util.find_spec(name) is not None]
    assert not present, f"the runtime dependencies brought in {present}"
    print(f"calibnb {calibnb.__version__} from {installed.parent}: ECE {before:.4f} -> {after:.4f} "
          f"at T = {scaler.temperature_:.3f}; {len(list_predictions())} prediction files read")


if __name__ == "__main__":
    main(sys.argv[1])
