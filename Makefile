# Two commands on a fresh machine: `make book` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST := $(BIN)/python -m pytest

MATHJAX_VERSION := 3.2.2
MATHJAX_SHA256  := 1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09
MATHJAX         := _mathjax/mathjax/es5/tex-mml-chtml.js

.PHONY: install book test test-slow test-browser test-all bench freeze clean

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

book: $(STAMP) $(MATHJAX)
	$(BIN)/jupyter-book build . -W -n --keep-going

# Fast unit and property tests (a few minutes on 2 cores).
test: $(STAMP)
	$(PYTEST) -n 2 -m "not slow and not notebooks and not browser"

# Integration tests and the notebooks, each executed in a fresh kernel.
test-slow: $(STAMP)
	$(PYTEST) -n 2 -m "slow or notebooks"

# Opens the built book in headless Chromium (Debian's `chromium`); run `make book` first.
test-browser: $(STAMP)
	$(PYTEST) -m browser

test-all: test test-slow test-browser

bench: $(STAMP)
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

# Regenerate constraints.txt from the current environment (after changing requirements*.txt).
freeze: $(STAMP)
	$(BIN)/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//' > constraints.txt

clean:
	rm -rf _build _mathjax _mathjax.tmp .pytest_cache .hypothesis
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
