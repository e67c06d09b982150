# Two commands on a fresh machine: `make book` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST := $(BIN)/python -m pytest

MATHJAX_VERSION := 3.2.2
MATHJAX_SHA256  := 1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09
MATHJAX         := _mathjax/mathjax/es5/tex-mml-chtml.js

.PHONY: install data book publish test test-slow test-transcriptions test-browser test-gpu test-all bench bench-peers gpu-protocol gpu-data gpu-wheels freeze clean

install: $(STAMP)

# The virtualenv is (re)built whenever a requirements file changes.
$(STAMP): requirements.txt requirements-test.txt constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-test.txt -c constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

# MathJax 3 is served from the built site so that no page needs the internet. The tarball is
# fetched from the npm registry, checked against its pinned sha256, and unpacked atomically.
$(MATHJAX):
	rm -rf _mathjax.tmp && mkdir -p _mathjax.tmp
	cd _mathjax.tmp && npm pack --silent mathjax@$(MATHJAX_VERSION) > /dev/null
	echo "$(MATHJAX_SHA256)  _mathjax.tmp/mathjax-$(MATHJAX_VERSION).tgz" | sha256sum --check --quiet
	tar -xzf _mathjax.tmp/mathjax-$(MATHJAX_VERSION).tgz -C _mathjax.tmp package/es5
	mkdir -p _mathjax.tmp/site/mathjax && mv _mathjax.tmp/package/es5 _mathjax.tmp/site/mathjax/es5
	rm -rf _mathjax && mv _mathjax.tmp/site _mathjax && rm -rf _mathjax.tmp

# axe-core, the accessibility checker that tests/test_browser_reading.py runs in every page, is
# fetched the same way (npm tarball, pinned sha256) into _axe/ and injected by the test from there:
# the published site does not carry it.
AXE_VERSION := 4.10.3
AXE_SHA256  := 0f2b4d7dcdf7d1219df8d1959ad68e565f51d14c3f0d88bb71cd59abeb956292
AXE         := _axe/axe.min.js

$(AXE):
	rm -rf _axe.tmp && mkdir -p _axe.tmp
	cd _axe.tmp && npm pack --silent axe-core@$(AXE_VERSION) > /dev/null
	echo "$(AXE_SHA256)  _axe.tmp/axe-core-$(AXE_VERSION).tgz" | sha256sum --check --quiet
	tar -xzf _axe.tmp/axe-core-$(AXE_VERSION).tgz -C _axe.tmp package/axe.min.js package/LICENSE
	mkdir -p _axe.tmp/site && mv _axe.tmp/package/axe.min.js _axe.tmp/package/LICENSE _axe.tmp/site/
	rm -rf _axe && mv _axe.tmp/site _axe && rm -rf _axe.tmp

# The data sets the book executes on: found where calibnb.data.load_dataset looks
# (CALIBNB_DATA, Debian's /usr/share/datasets, the per-user cache), else fetched into the cache
# ($$XDG_CACHE_HOME/calibnb, else ~/.cache/calibnb): the published files, else Debian's package.
data: $(STAMP)
	$(BIN)/python -m calibnb fetch fashion-mnist

# GOMP_SPINCOUNT=1000 is the spin-wait that libgomp (PyTorch's OpenMP on Linux) itself uses when
# it knows the machine is oversubscribed. Without it, on a machine busy with other work, the
# chapters' many small parallel regions stall behind a descheduled thread: training in
# nbs/train.md took 64-83 s instead of 25-38 s beside two busy processes, and beside `make test`
# it ran past its cell time limit, after which the kernel logged a ZMQError at shutdown. Alone it
# costs about 10% (14-16 s against 16-17 s). TQDM_DISABLE=1 (tqdm's own environment default) keeps
# progress bars, and tqdm's "IProgress not found" warning with the builder's paths, out of the
# pages: a reader sees results, not the bars of the build that produced them.
book: $(STAMP) $(MATHJAX) data
	GOMP_SPINCOUNT=1000 TQDM_DISABLE=1 $(BIN)/jupyter-book build . -W -n --keep-going

# Publish the built book to the gh-pages branch of the `origin` remote (GitHub Pages); the
# workflow .github/workflows/book.yml does the same on every push to main.
publish: $(STAMP)
	test -f _build/html/index.html || { echo "error: run 'make book' first" >&2; exit 2; }
	$(BIN)/ghp-import -n -p -f _build/html

# Fast unit and property tests (a few minutes on 2 cores; the training tests read Fashion-MNIST,
# so `data` finds or fetches it first, as for the book), and the Examples sections of the
# docstrings of DOCTEST_PACKAGES run as doctests (options in pyproject.toml's pytest section;
# tests/test_docstring_examples.py requires one for every public function and class).
DOCTEST_PACKAGES := calibnb/metrics calibnb/calibration calibnb/losses calibnb/calibrate_model.py
test: $(STAMP) data
	$(PYTEST) -n 2 -m "not slow and not notebooks and not browser and not transcriptions and not gpu" \
	    tests --doctest-modules $(DOCTEST_PACKAGES)

# A maintainer's check: every number of book/paper_tables/ re-read from the papers' texts, which
# are not in the repository. PAPERS is the folder holding them (CI: ../shared/papers).
test-transcriptions: $(STAMP)
	@test -n "$(PAPERS)" || { echo "error: give the folder of the papers' texts: make test-transcriptions PAPERS=<folder>" >&2; exit 2; }
	@test -d "$(PAPERS)" || { echo "error: PAPERS=$(PAPERS) is not a folder" >&2; exit 2; }
	CALIBNB_PAPERS="$(abspath $(PAPERS))" $(PYTEST) -m transcriptions tests/test_paper_tables.py

# Integration tests and the notebooks, each executed in a fresh kernel.
test-slow: $(STAMP)
	$(PYTEST) -n 2 -m "(slow or notebooks) and not gpu"

# Opens the built book in headless Chromium (Debian's `chromium`); run `make book` first.
test-browser: $(STAMP) $(AXE)
	$(PYTEST) -m browser

# On a machine with a CUDA GPU: a training step must not synchronise (tests/test_gpu.py).
test-gpu: $(STAMP)
	$(PYTEST) -m gpu

test-all: test test-slow test-browser

# Every benchmark; bench_calibration.py (the score against netcal, TorchUncertainty and
# torchmetrics) in its --quick mode, with .venv-bench's Python when `make bench-peers` made it
# (else its peers' columns say "not installed"). The full table: `$(BENCH_PY) bench/bench_calibration.py`.
BENCH_VENV := .venv-bench
BENCH_PY = $(if $(wildcard $(BENCH_VENV)/bin/python),$(BENCH_VENV)/bin/python,$(BIN)/python)
bench: $(STAMP)
	@for script in bench/bench_*.py; do echo "== $$script"; \
	    if [ $$script = bench/bench_calibration.py ]; then PYTHONPATH=$(CURDIR) $(BENCH_PY) $$script --quick || exit 1; \
	    else $(BIN)/python $$script || exit 1; fi; done

# The benchmark's peers (requirements-bench.txt) in their own venv, .venv-bench, which sees the
# project's .venv (its packages and editable calibnb, after its own) through a .pth file: nothing is added to .venv, runtime or test requirements.
bench-peers: $(STAMP) requirements-bench.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BIN)/python -c 'import sysconfig; print("import site; site.addsitedir(%r)" % sysconfig.get_paths()["purelib"])' > \
	    "$$($(BENCH_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/calibnb-venv.pth"
	$(BENCH_VENV)/bin/python -m pip install --quiet -r requirements-bench.txt

# The GPU protocol (bench/gpu_protocol.sh): tests, benchmark and a real run on a CUDA GPU, results
# under results/gpu/. For a GPU machine without network, first run `make gpu-data gpu-wheels` here
# and carry .data/ and .whl/ there (GPU_PYTHON: the Python version of that machine).
gpu-protocol:
	bench/gpu_protocol.sh

gpu-data: $(STAMP)
	$(BIN)/python -m calibnb fetch fashion-mnist
	$(BIN)/python -c 'import shutil; from pathlib import Path; from calibnb.data import load_dataset; \
	    found = Path(load_dataset("fashion-mnist").info["folder"]); shutil.copytree(found, ".data/fashion-mnist", dirs_exist_ok=True)'

GPU_PYTHON ?= $(shell $(PYTHON) -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
gpu-wheels:
	$(PYTHON) -m pip download --quiet --dest .whl --only-binary=:all: --python-version $(GPU_PYTHON) \
	    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
	    -c constraints.txt numpy scipy pandas scikit-learn pytest

# Regenerate constraints.txt from the current environment (after changing requirements*.txt).
freeze: $(STAMP)
	$(BIN)/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//' > constraints.txt

clean:
	rm -rf _build _mathjax _mathjax.tmp _axe _axe.tmp .pytest_cache .hypothesis
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
