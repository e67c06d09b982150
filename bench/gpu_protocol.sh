#!/usr/bin/env bash
# The GPU protocol (issue 15): one command for a person with a GPU. It runs
#   1. the `gpu` tests: a training step of every loss, and of the real loop, under
#      torch.cuda.set_sync_debug_mode("error") (any read back to the host fails them);
#   2. bench/bench_train.py: img/s of a straightforward loop and of calibnb's, their ratio, the
#      host reads per step and the model-FLOPs utilisation (then again with torch.compile);
#   3. bench/gpu_run.py: ResNet-50 on Fashion-MNIST with cross-entropy, focal loss, dual focal loss
#      and AdaFocal, until over-confident;
#   4. bench/bench_calibration.py --device cuda: TS (ECE grid, NLL), FTS (paper grid) and the ECE
#      at 50k × 1000 on CUDA tensors (a calibrator that does not take them runs on the host, so
#      labelled);
# and writes everything under results/gpu/ (or --out) with the device's name and torch's version.
#
# It needs no network and no install step: Python with a CUDA build of torch (2.1 or newer),
# numpy, scipy, pandas, scikit-learn and pytest. What is missing is installed from wheels in .whl/
# when they are there (`make gpu-wheels` downloads them on a machine with network); papermill and
# jupytext are not needed. Fashion-MNIST's four files are read from $CALIBNB_DATA (default .data/,
# as .data/fashion-mnist/*.gz; `make gpu-data` puts them there).
#
# Usage: bench/gpu_protocol.sh [--out DIR] [--epochs N] [--cpu-smoke]
#   --cpu-smoke  the same steps on the CPU at a tiny size (CI runs it): the host-read tests
#                instead of the CUDA ones, one timed bench step, one epoch of a small CNN,
#                the calibration line at 500 × 10 on CPU tensors.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

out=results/gpu
epochs=20
smoke=false
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift 2 ;;
        --epochs) epochs=$2; shift 2 ;;
        --cpu-smoke) smoke=true; shift ;;
        -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

python=${PYTHON:-python3}
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export CALIBNB_DATA=${CALIBNB_DATA:-$root/.data}
say() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

say "checking what the protocol needs"
# import name -> pip name
declare -A needs=([torch]=torch [numpy]=numpy [scipy]=scipy [pandas]=pandas [sklearn]=scikit-learn
                  [pytest]=pytest)
missing() {
    for module in "${!needs[@]}"; do
        "$python" -c "import $module" 2> /dev/null || echo "${needs[$module]}"
    done
}
absent=$(missing | tr "\n" " " | sed "s/ *$//")
if [ -n "$absent" ] && [ -d .whl ]; then
    echo "installing from .whl/: $absent"
    # shellcheck disable=SC2086
    "$python" -m pip install --quiet --no-index --find-links .whl $absent
    absent=$(missing | tr "\n" " " | sed "s/ *$//")
fi
if [ -n "$absent" ]; then
    echo "error: $python lacks: $absent (put their wheels in .whl/: make gpu-wheels)" >&2
    exit 2
fi
"$python" - <<'EOF'
import sys, torch
version = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
if version < (2, 1):
    sys.exit(f"error: torch {torch.__version__} is older than 2.1")
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"CUDA {'available: ' + torch.cuda.get_device_name() if torch.cuda.is_available() else 'not available'}")
EOF
if ! "$python" -c "from calibnb.data import load_dataset; load_dataset('fashion-mnist')" 2> /dev/null; then
    echo "error: Fashion-MNIST not found (looked in CALIBNB_DATA=$CALIBNB_DATA, system folders and the per-user cache; make gpu-data puts it in .data/)" >&2
    exit 2
fi
if [ "$smoke" = false ] && ! "$python" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "error: no CUDA device; on a CPU, run the reduced protocol with --cpu-smoke" >&2
    exit 2
fi

mkdir -p "$out"
device=$([ "$smoke" = true ] && echo cpu || echo cuda)
"$python" -c "import json, sys; sys.path.insert(0, 'bench'); from gpu_run import environment
print(json.dumps(environment('$device'), indent=2))" > "$out/environment.json"
cat "$out/environment.json"

if [ "$smoke" = true ]; then
    say "1. host reads of the training step, counted on the CPU (the gpu tests need CUDA)"
    "$python" -m pytest -q -p no:cacheprovider tests/test_train_host_reads.py 2>&1 | tee "$out/tests.txt"
    say "2. training throughput (reduced size)"
    "$python" bench/bench_train.py --steps 1 2>&1 | tee "$out/bench.txt"
    say "3. the real run, shrunk: one epoch of a small CNN on 256 images"
    "$python" bench/gpu_run.py --out "$out" --device cpu --model small_cnn --epochs 1 --train-size 256
    say "4. calibration on device tensors (reduced size, CPU tensors)"
    "$python" bench/bench_calibration.py --device cpu --sizes 500x10 --repeats 1 2>&1 | tee "$out/calibration.txt"
else
    say "1. the gpu tests: no synchronisation in a training step"
    "$python" -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py 2>&1 | tee "$out/tests.txt"
    say "2. training throughput"
    "$python" bench/bench_train.py 2>&1 | tee "$out/bench.txt"
    "$python" bench/bench_train.py --compile 2>&1 | tee "$out/bench_compile.txt" \
        || echo "torch.compile failed on this machine (the eager numbers above stand)"
    say "3. the real run: ResNet-50 on Fashion-MNIST, $epochs epochs per loss"
    "$python" bench/gpu_run.py --out "$out" --device cuda --epochs "$epochs"
    say "4. calibration on the device: TS, FTS and ECE at 50k x 1000 on CUDA tensors"
    "$python" bench/bench_calibration.py --device cuda --sizes 50000x1000 2>&1 | tee "$out/calibration.txt"
fi
say "done: $out"
ls "$out"
