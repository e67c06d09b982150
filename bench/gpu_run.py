"""The GPU protocol's real run: the papers' ResNet-50 on Fashion-MNIST until it over-fits, with
cross-entropy, focal loss γ=3, dual focal loss γ=5 and AdaFocal (issue 15, item 6).

Runs :func:`calibnb.train.train` directly (no papermill, no notebook: the GPU machine may lack
them) with the papers' recipe (``mukhoti2020``: SGD 0.1, the loss summed over batches of 128,
gradient clipping at 2) shortened to ``--epochs`` with its decays at the same fractions, on the
full 55 000/5 000 split of Fashion-MNIST's training set (28×28 grey images: the CIFAR nets take
one channel and pool whatever map the smaller input leaves, so no padding is needed). Each run
is a run folder under ``--out`` (``metrics.json``, ``history.csv``, float16 logits), and
``summary.json`` there records the device, torch, each run's test error and ECE before and
after temperature scaling and focal temperature scaling, its training time and images/s.

``python bench/gpu_run.py --out results/gpu`` on a GPU; ``--device cpu --model small_cnn
--epochs 1 --train-size 256`` is the CPU smoke run that CI executes.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

from calibnb.atomic import write_json
from calibnb.runs.naming import run_name
from calibnb.train import train

#: The losses of the protocol, with the papers' hyper-parameters for ResNet-50.
LOSSES = {
    "cross_entropy": {},
    "focal_loss": {"gamma": 3.0},
    "dual_focal_loss": {"gamma": 5.0},
    "adafocal": {},
}


def environment(device: str) -> dict:
    """Where the run ran: the device's name, torch and CUDA versions, Python."""
    cuda = torch.device(device).type == "cuda"
    return {
        "device": torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})",
        "torch": torch.__version__,
        "cuda": torch.version.cuda if cuda else None,
        "python": sys.version.split()[0],
        "date": time.strftime("%Y-%m-%d"),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the run folders and summary.json")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--train-size", type=int, default=None, help="use only this many training images")
    parser.add_argument("--losses", nargs="+", default=list(LOSSES), choices=list(LOSSES))
    args = parser.parse_args(argv)
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: CUDA is not available (the CPU smoke run is --device cpu)")

    out = Path(args.out)
    summary = {"environment": environment(args.device), "runs": []}
    for loss in args.losses:
        params = {"dataset": "fashion-mnist", "model": args.model, "loss": loss, **LOSSES[loss],
                  "recipe": "mukhoti2020", "epochs": args.epochs, "seed": 1}
        if args.train_size is not None:
            params["train_size"] = args.train_size
        run_dir = out / run_name(params)
        started = time.perf_counter()
        result = train({**params, "device": args.device, "out_dir": str(run_dir), "progress": False})
        seconds = time.perf_counter() - started
        history = result["history"]
        images = len(history) * (args.train_size or 55_000)
        row = {
            "run": run_dir.name, "loss": loss, "params": LOSSES[loss], "epochs": args.epochs,
            "test_error": result["test"]["pre"]["error"],
            "test_ece": {part: result["test"][part]["ece"] for part in ("pre", "ts", "fts")},
            "temperature": result["temperature"], "fts": result["fts"],
            "train_seconds": float(history["seconds"].sum()), "wall_seconds": seconds,
            "images_per_second": images / float(history["seconds"].sum()),  # epochs with their validation
        }
        summary["runs"].append(row)
        print(f"{loss:>16}: test error {row['test_error']:.2%}, ECE {row['test_ece']['pre']:.2%} "
              f"(TS {row['test_ece']['ts']:.2%}, FTS {row['test_ece']['fts']:.2%}), "
              f"{row['images_per_second']:.0f} img/s over {row['train_seconds']:.0f} s", flush=True)
    write_json(out / "summary.json", summary)
    return summary


if __name__ == "__main__":
    main()
